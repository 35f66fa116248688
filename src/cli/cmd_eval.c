/* gpt3d eval: the loss and perplexity of a checkpoint's model on splits of the data.
 *
 * The model comes from the checkpoint (its saved configuration and shapes), the data
 * settings default to the checkpoint's run's, and the loss is computed by the trainer's own
 * validation code (src/infer), so `gpt3d eval --load DIR` reports the validation loss the
 * trainer reported at that iteration.  The --device backend (cpu by default; chosen, checked
 * and opened as gpt3d train does); alone or under mpirun / srun with the trainer's layout:
 * each data-parallel replica evaluates its part of every global batch (Megatron's order)
 * through its pipeline and the loss sums are added over the world (docs/inference.md).  With
 * --task it scores zero- and few-shot tasks instead (LAMBADA, WikiText-103, multiple choice:
 * eval_tasks.h, docs/evaluation.md). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "cli/cmd_infer.h"
#include "cli/commands.h"
#include "cli/eval_tasks.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/status.h"
#include "data/dataset.h"
#include "infer/infer.h"
#include "train/schedule.h"

/* --task's help lists the task kinds: g3_eval_tasks_specs writes it at the start */
static g3_opt_spec_t g3_eval_specs[] = {
    G3_CLI_INFER_SPECS,
    { "eval-split", G3_OPT_STRING, "valid", "Splits to evaluate, comma-separated: valid, test, train.", NULL, 0, 0, "LIST" },
    { "eval-iters", G3_OPT_INT, NULL, "Global batches per split (default: the checkpoint's run's --eval-iters).", NULL, 0, 0, NULL },
    { "micro-batch-size", G3_OPT_INT, NULL, "Sequences per forward pass (default: the checkpoint's run's).", NULL, 0, 0, NULL },
    { "global-batch-size", G3_OPT_INT, NULL, "Sequences per evaluation batch (default: the checkpoint's run's global batch).", NULL, 0, 0, NULL },
    { "data-path", G3_OPT_LIST, NULL, "Dataset prefix(es) PREFIX or W1 PREFIX1 W2 PREFIX2... (default: the checkpoint's run's).", NULL, 1, 0, "[W] PREFIX..." },
    { "split", G3_OPT_STRING, NULL, "Train,valid,test proportions of the documents (default: the checkpoint's run's).", NULL, 0, 0, NULL },
    { "data-cache-path", G3_OPT_STRING, NULL, "Where sample indices are cached (default: the checkpoint's run's, else beside the data).", NULL, 0, 0, "DIR" },
    { "seed", G3_OPT_INT, NULL, "Seed of the data order (default: the checkpoint's run's, which makes the samples its validation used).", NULL, 0, 0, NULL },
    { "debug-batch-dump", G3_OPT_STRING, NULL, "Tests: write the samples each split is evaluated on to FILE (int32, (samples, seq-length + 1) per split, in --eval-split order).", NULL, 0, 0, "FILE" },
    { "metrics-file", G3_OPT_STRING, NULL, "Append one JSON line per split ({\"event\":\"eval\",\"split\":...,\"loss\":...,\"ppl\":...}) or per --task ({\"event\":\"task\",...}) to FILE.", NULL, 0, 0, "FILE" },
    G3_EVAL_TASK_SPECS,
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_eval_cmd = {
    "eval", "Evaluate a checkpoint: loss and perplexity on the validation (or test) split, or zero- and few-shot tasks (--task).",
    NULL, 0, 0, g3_eval_specs
};

/* The run's data settings: each flag, else the checkpoint's value. */
typedef struct {
    int64_t     eval_iters, B, gbs;
    uint64_t    seed;
    int         nsplits;
    g3_split_t  splits[G3_SPLIT_COUNT];
    /* --data-path words: the flag's, or the checkpoint's line cut at spaces */
    int         npath;
    char      **path;
    char       *path_buf;
    char        split[256], cache[PATH_MAX], builtin[PATH_MAX + 32];
    const char *split_p, *cache_p;
} g3_eval_data_t;

/* An integer setting: the flag, else the checkpoint's key, else def (< 0: required).
 * RET: 1 with *out set, else 0 (logged). */
static int g3_cmd_eval_int(const g3_opts_t *o, const g3_cli_infer_t *s, const char *flag,
                       int64_t def, int64_t *out)
{
    char buf[64], *end;
    const char *v;

    if (g3_opts_is_set(o, flag)) {
        *out = g3_opts_int(o, flag);
        return 1;
    }
    v = g3_cli_infer_ckpt_value(s, flag, buf, sizeof(buf));
    if (!v) {
        *out = def;
        return 1;
    }
    errno = 0;
    *out = strtoll(v, &end, 10);
    if (errno || *end || end == v) {
        g3_error("checkpoint %s records --%s '%s', which is not a number; pass --%s", 
                 s->info->path, flag, v, flag);
        return 0;
    }
    return 1;
}

/* --eval-split: a comma-separated list of split names.  RET: 1, or 0 (logged). */
static int g3_cmd_eval_splits(const char *list, g3_eval_data_t *d)
{
    const char *p = list;

    d->nsplits = 0;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int s = 0; s < G3_SPLIT_COUNT; s++)
            if (n == strlen(g3_split_name((g3_split_t)s)) &&
                strncmp(p, g3_split_name((g3_split_t)s), n) == 0)
                found = s;
        if (found < 0) {
            g3_error(
                "--eval-split '%s': '%.*s' is not a split; use valid, test or train, comma-separated",
                list, (int)n, p);
            return 0;
        }
        for (int i = 0; i < d->nsplits; i++)
            if (d->splits[i] == (g3_split_t)found)
                found = -1;
        if (found >= 0)
            d->splits[d->nsplits++] = (g3_split_t)found;
        p += n;
        if (*p == ',')
            p++;
    }
    if (d->nsplits == 0) {
        g3_error("--eval-split is empty; use valid, test or train, comma-separated");
        return 0;
    }
    return 1;
}

/* --data-path: the flag's words, else the checkpoint's (space-separated), else the built-in
 * corpus; each prefix's .bin and .idx must exist.  RET: the exit code (2: a malformed
 * list; 1: a file missing), logged. */
static int g3_cmd_eval_data_path(const g3_train_data_flags_t *given, const g3_cli_infer_t *s,
                             g3_eval_data_t *d)
{
    const char *from = "", *flag = "--data-path";
    int builtin = 0;
    char line[8192];

    if (given->data_path_count > 0) {
        d->npath = given->data_path_count;
        d->path = calloc((size_t)d->npath, sizeof(char *));
        if (!d->path)
            goto err_no_memory;
        for (int i = 0; i < d->npath; i++)
            d->path[i] = given->data_path[i];
    } else if (g3_cli_infer_ckpt_value(s, "data-path", line, sizeof(line))) {
        char *save = NULL, *w;
        from = " (from the checkpoint's configuration)";
        flag = "--data-path (from the checkpoint's configuration)";
        d->path_buf = strdup(line);
        d->path = calloc(strlen(line) / 2 + 2, sizeof(char *));
        if (!d->path_buf || !d->path)
            goto err_no_memory;
        for (w = strtok_r(d->path_buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
            d->path[d->npath++] = w;
    } else {
        char dir[PATH_MAX];
        from = " (the built-in corpus, which the checkpoint's run used)";
        builtin = 1;
        if (g3_data_corpus_dir(dir, sizeof(dir)) != G3_OK) {
            g3_error(
                "the checkpoint's run used the built-in corpus, whose directory is unknown (neither GPT3D_DATA_DIR nor HOME is set): pass --data-path");
            return G3_EXIT_FAILURE;
        }
        snprintf(d->builtin, sizeof(d->builtin), "%s/kjv_text_document", dir);
        d->path = calloc(1, sizeof(char *));
        if (!d->path)
            goto err_no_memory;
        d->path[0] = d->builtin;
        d->npath = 1;
    }
    if (d->npath < 1 || (d->npath > 1 && d->npath % 2 != 0)) {
        g3_error("--data-path%s has %d words: give PREFIX, or weight and prefix pairs", from,
                 d->npath);
        return G3_EXIT_USAGE;
    }
    if (!g3_cli_need_data(d->path, d->npath, flag, builtin))
        return G3_EXIT_FAILURE;
    return G3_EXIT_OK;

err_no_memory:
    g3_error("out of memory reading --data-path");
    return G3_EXIT_FAILURE;
}

/* --debug-batch-dump: the samples g3_infer_evaluate reads (one rank: samples 0 .. n-1 of
 * each split, modulo the split's size), for the reference tests.  RET: the exit code. */
static int g3_cmd_eval_dump(const char *path, const g3_data_t *data, const g3_eval_data_t *d,
                        uint64_t n, int T, int32_t *sample)
{
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;

    for (int i = 0; ok && i < d->nsplits; i++) {
        uint64_t avail = g3_data_num_samples(data, d->splits[i]);
        for (uint64_t k = 0; ok && k < n; k++)
            ok = g3_data_get(data, d->splits[i], k % avail, sample) == G3_OK &&
                 fwrite(sample, sizeof(int32_t), (size_t)T + 1, f) == (size_t)T + 1;
    }
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok) {
        g3_error("could not write --debug-batch-dump %s: %s", path, strerror(errno));
        return G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

/* Every data setting; RET: the exit code. */
static int g3_cmd_eval_settings(const g3_opts_t *o, const g3_cli_infer_t *s, g3_eval_data_t *d)
{
    g3_train_data_flags_t given;
    int64_t seed = 0, ckpt_mb = 1;
    char buf[64];
    int ok = 1;

    ok &= g3_cmd_eval_splits(g3_opts_str(o, "eval-split"), d);
    ok &= g3_cmd_eval_int(o, s, "eval-iters", 100, &d->eval_iters);
    ok &= g3_cmd_eval_int(o, s, "micro-batch-size", 1, &d->B);
    ok &= g3_cmd_eval_int(o, s, "seed", (int64_t)s->info->model.seed, &seed);
    if (ok && !g3_train_flags_seed(seed))   /* the trainer's range */
        ok = 0;
    if (!ok)
        return G3_EXIT_USAGE;
    if (g3_opts_is_set(o, "global-batch-size")) {
        d->gbs = g3_opts_int(o, "global-batch-size");
    } else if (g3_cli_infer_ckpt_value(s, "global-batch-size", buf, sizeof(buf))) {
        if (!g3_cmd_eval_int(o, s, "global-batch-size", 0, &d->gbs))
            return G3_EXIT_USAGE;
    } else {   /* the run's default: its micro-batch times its data-parallel size */
        char mb[64];
        if (g3_cli_infer_ckpt_value(s, "micro-batch-size", mb, sizeof(mb)))
            ckpt_mb = strtoll(mb, NULL, 10);
        d->gbs = ckpt_mb * s->info->saved_dp;
    }
    d->seed = (uint64_t)seed;
    if (d->eval_iters < 1) {
        if (g3_opts_is_set(o, "eval-iters"))
            g3_error("--eval-iters must be at least 1 (got %lld)", (long long)d->eval_iters);
        else
            g3_error(
                "--eval-iters must be at least 1 (got %lld from the checkpoint's run); pass --eval-iters N",
                (long long)d->eval_iters);
        return G3_EXIT_USAGE;
    }
    if (d->B < 1 || d->B > INT32_MAX || d->gbs < 1) {
        g3_error(
            "--micro-batch-size and --global-batch-size must be at least 1 (got %lld and %lld)",
            (long long)d->B, (long long)d->gbs);
        return G3_EXIT_USAGE;
    }
    if (d->gbs > G3_TRAIN_MAX_SAMPLES) {
        g3_error("--global-batch-size %lld is out of range (1 .. %d)", (long long)d->gbs,
                 G3_TRAIN_MAX_SAMPLES);
        return G3_EXIT_USAGE;
    }
    if (!g3_train_samples_fit("eval-iters", d->eval_iters, d->gbs))
        return G3_EXIT_USAGE;
    if (d->gbs % d->B != 0) {
        g3_error(
            "--global-batch-size %lld is not a multiple of --micro-batch-size %lld; pass a micro-batch size that divides it",
            (long long)d->gbs, (long long)d->B);
        return G3_EXIT_USAGE;
    }
    if (d->gbs % (d->B * s->dp) != 0) {
        g3_error(
            "--global-batch-size %lld is not a multiple of --micro-batch-size %lld x data-parallel size %d: each replica evaluates whole micro-batches of each global batch; pass a micro-batch size or a global batch that fits",
            (long long)d->gbs, (long long)d->B, s->dp);
        return G3_EXIT_USAGE;
    }
    g3_train_flags_data(o, &given);   /* the trainer's reader */
    d->split_p = given.split;
    if (!d->split_p && g3_cli_infer_ckpt_value(s, "split", d->split, sizeof(d->split)))
        d->split_p = d->split;
    d->cache_p = given.data_cache_path;
    if (!d->cache_p && g3_cli_infer_ckpt_value(s, "data-cache-path", d->cache, sizeof(d->cache)))
        d->cache_p = d->cache;
    return g3_cmd_eval_data_path(&given, s, d);
}

/* The data and the batch buffers, checked before the model is loaded (every rank); rank 0
 * opens the metrics file and writes --debug-batch-dump.  RET: the exit code. */
static int g3_cmd_eval_prepare(const g3_opts_t *o, const g3_cli_infer_t *s, g3_eval_data_t *d,
                           g3_data_t **data_p, FILE **metrics_p, int32_t **sample_p,
                           int32_t **inputs_p, int32_t **targets_p)
{
    g3_data_config_t dcfg;
    const char *metrics_file = g3_opts_str(o, "metrics-file");
    uint64_t n = (uint64_t)d->eval_iters * (uint64_t)d->gbs;
    int64_t bound, rows;
    g3_status_t st;

    memset(&dcfg, 0, sizeof(dcfg));
    dcfg.data_path_count = d->npath;
    dcfg.data_path = d->path;
    dcfg.split = d->split_p;
    dcfg.seq_length = s->T;
    dcfg.seed = d->seed;
    for (int i = 0; i < d->nsplits; i++)
        dcfg.num_samples[d->splits[i]] = n;   /* as the trainer asks for validation */
    dcfg.cache_dir = d->cache_p;
    /* every id of the splits read must lie in the checkpoint's vocabulary (checked at open) */
    dcfg.vocab_size = s->info->model.vocab_size;
    st = g3_data_open(&dcfg, data_p);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    bound = g3_data_max_token_bound(*data_p);
    if (bound > s->info->model.vocab_size) {
        g3_error(
            "the data holds token ids up to %lld but checkpoint %s has a vocabulary of %d: the data was tokenized with another vocabulary; pass data made with the model's",
            (long long)bound - 1, s->info->path, s->info->model.vocab_size);
        return G3_EXIT_USAGE;
    }
    for (int i = 0; i < d->nsplits; i++)
        if (g3_data_num_samples(*data_p, d->splits[i]) == 0) {
            g3_error(
                "the %s split is empty under --split %s: no document falls into it; evaluate another split (--eval-split) or change --split",
                g3_split_name(d->splits[i]), d->split_p ? d->split_p : "969,30,1");
            return G3_EXIT_USAGE;
        }
    if (metrics_file && s->rank == 0) {
        *metrics_p = fopen(metrics_file, "a");
        if (!*metrics_p) {
            g3_error("cannot open the metrics file %s: %s; pass a writable --metrics-file",
                     metrics_file, strerror(errno));
            return G3_EXIT_FAILURE;
        }
    }
    /* alone: one micro-batch at a time; with a layout (g3_cli_infer_load makes one when the
     * job has more than one rank): this replica's part of a global batch */
    rows = s->tp * s->pp * s->dp > 1 ? d->gbs / s->dp : d->B;
    *sample_p = malloc(sizeof(int32_t) * (size_t)(s->T + 1));
    *inputs_p = malloc(sizeof(int32_t) * (size_t)rows * (size_t)s->T);
    *targets_p = malloc(sizeof(int32_t) * (size_t)rows * (size_t)s->T);
    if (!*sample_p || !*inputs_p || !*targets_p) {
        g3_error("out of memory for a batch of %lld x %d tokens", (long long)rows, s->T);
        return G3_EXIT_FAILURE;
    }
    if (g3_opts_str(o, "debug-batch-dump") && s->rank == 0)
        return g3_cmd_eval_dump(g3_opts_str(o, "debug-batch-dump"), *data_p, d, n, s->T,
                            *sample_p);
    return G3_EXIT_OK;
}

/* --task: the tasks' files read, the model loaded, every task scored and reported (of the
 * splits' settings only --micro-batch-size, into d->B).  RET: the exit code. */
static int g3_cmd_eval_run_tasks(const g3_opts_t *o, g3_cli_infer_t *s, g3_eval_data_t *d,
                             g3_eval_tasks_t *et)
{
    int rc = g3_cmd_eval_int(o, s, "micro-batch-size", 1, &d->B) ? G3_EXIT_OK : G3_EXIT_USAGE;

    if (rc == G3_EXIT_OK && (d->B < 1 || d->B > INT32_MAX)) {
        g3_error("--micro-batch-size must be at least 1 (got %lld)", (long long)d->B);
        rc = G3_EXIT_USAGE;
    }
    if (rc == G3_EXIT_OK)
        rc = g3_eval_tasks_prepare(o, s, d->B, et);
    rc = g3_cli_infer_agree(s, rc);
    if (rc == G3_EXIT_OK)
        rc = g3_cli_infer_load(o, (int)d->B, s);
    if (rc == G3_EXIT_OK && s->rank == 0)
        g3_cli_infer_describe(s, stdout);
    if (rc == G3_EXIT_OK)
        rc = g3_eval_tasks_run(o, s, et);
    return rc;
}

int g3_cmd_eval(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_cli_infer_t s;
    g3_eval_data_t d;
    g3_eval_tasks_t et;
    g3_data_t *data = NULL;
    FILE *metrics = NULL;
    int32_t *sample = NULL, *inputs = NULL, *targets = NULL;
    const char *metrics_file;
    uint64_t n;
    int rc;
    g3_status_t st;

    memset(&s, 0, sizeof(s));
    memset(&d, 0, sizeof(d));
    memset(&et, 0, sizeof(et));
    g3_eval_tasks_specs(g3_eval_specs);
    rc = g3_cli_infer_parse(&g3_eval_cmd, argc, argv, &o);
    if (rc != G3_EXIT_OK)
        return rc;
    if (g3_opts_help_shown(o))
        goto out;
    rc = g3_eval_tasks_convert(o);   /* --convert-to: a file conversion, nothing else */
    if (rc >= 0)
        goto out;
    /* every check before any work, on every rank; rank 0 speaks for the job */
    rc = g3_cli_infer_check(o, "eval", INT32_MAX, &s);
    if (rc == G3_EXIT_OK && g3_eval_tasks_wanted(o)) {   /* the tasks, not the splits */
        rc = g3_cmd_eval_run_tasks(o, &s, &d, &et);
        goto out;
    }
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_eval_settings(o, &s, &d);
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_eval_prepare(o, &s, &d, &data, &metrics, &sample, &inputs, &targets);
    rc = g3_cli_infer_agree(&s, rc);
    if (rc != G3_EXIT_OK)
        goto out;
    n = (uint64_t)d.eval_iters * (uint64_t)d.gbs;
    rc = g3_cli_infer_load(o, (int)d.B, &s);
    if (rc != G3_EXIT_OK)
        goto out;
    if (s.rank == 0) {
        g3_cli_infer_describe(&s, stdout);
        printf(
            "  data: %d global batch%s of %lld sequences (micro-batch %lld) per split, seed %llu, --split %s\n",
            (int)d.eval_iters, d.eval_iters == 1 ? "" : "es", (long long)d.gbs, (long long)d.B,
            (unsigned long long)d.seed, d.split_p ? d.split_p : "969,30,1");
        fflush(stdout);
    }
    for (int i = 0; i < d.nsplits; i++) {
        g3_infer_lm_t lm = g3_cli_infer_lm(&s);
        g3_infer_batch_t bt = { data, (int)d.B, s.T, s.dp,
                                g3_par_layout(s.w.par)->dp_rank,
                                sample, inputs, targets };
        double loss = 0.0;
        st = g3_infer_evaluate(&lm, &bt, d.splits[i], n, d.gbs, &loss);
        if (st != G3_OK) {
            rc = g3_cli_infer_fail(&s, st);
            goto out;
        }
        if (s.rank == 0)
            g3_infer_report_eval(metrics, d.splits[i], s.info->iteration, loss, 0, n,
                                 s.info->path);
    }
    metrics_file = g3_opts_str(o, "metrics-file");
    if (metrics && fclose(metrics) != 0) {
        g3_error("could not finish writing the metrics file %s: %s", metrics_file,
                 strerror(errno));
        rc = G3_EXIT_FAILURE;
    }
    metrics = NULL;
out:
    if (metrics)
        fclose(metrics);
    free(sample);
    free(inputs);
    free(targets);
    g3_data_close(data);
    g3_eval_tasks_free(&et);
    g3_cli_infer_free(&s);
    free(d.path);
    free(d.path_buf);
    g3_opts_free(o);
    return rc;
}
