/* gpt3d eval and gpt3d generate: the checkpoint, the layout, the model and the tokenizer
 * files they share (see cmd_infer.h).  Glossary: B micro-batch, T sequence length,
 * P positions, TP, PP, DP the layout's sizes. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "ckpt/ckpt.h"
#include "cli/cmd_infer.h"
#include "data/tokid.h"
#include "core/log.h"
#include "core/status.h"
#include "data/dataset.h"
#include "train/flags.h"

const char *g3_cli_infer_ckpt_value(const g3_cli_infer_t *s, const char *key, char *buf,
                                    size_t size)
{
    return g3_ckpt_config_get(s->info->config, key, buf, size);
}

/* A tokenizer file: the flag's value (given; NULL: not given), else the checkpoint run's
 * flag, else the built-in corpus's file.  RET: 1 when it exists (out set), else 0 (logged,
 * saying where the name came from). */
static int g3_cli_infer_file(const char *given, const g3_cli_infer_t *s, const char *flag,
                             const char *builtin, char *out, size_t size)
{
    char buf[PATH_MAX + 32], dir[PATH_MAX];
    const char *v = given, *from = "";
    struct stat sb;

    if (!v) {
        v = g3_cli_infer_ckpt_value(s, flag, buf, sizeof(buf));
        from = " (from the checkpoint's configuration)";
    }
    if (!v) {
        if (g3_data_corpus_dir(dir, sizeof(dir)) != G3_OK) {
            g3_error(
                "the checkpoint's run used the built-in corpus, whose directory is unknown (neither GPT3D_DATA_DIR nor HOME is set): pass --%s",
                flag);
            return 0;
        }
        snprintf(buf, sizeof(buf), "%s/%s", dir, builtin);
        v = buf;
        from = " (the built-in corpus's, which the checkpoint's run used)";
    }
    if (stat(v, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        g3_error("--%s %s%s: %s; pass --%s FILE, the file the model was trained with", flag, v,
                 from, stat(v, &sb) != 0 ? strerror(errno) : "not a file", flag);
        return 0;
    }
    snprintf(out, size, "%s", v);
    return 1;
}

/* The model flags given must equal the checkpoint's.  RET: the number that differ (logged). */
static int g3_cli_infer_model_flags(const g3_opts_t *o, const g3_cli_infer_t *s)
{
    const g3_gpt_config_t *m = &s->info->model;
    struct { const char *flag; int value; } keys[] = {
        { "num-layers", m->num_layers },
        { "hidden-size", m->hidden_size },
        { "num-attention-heads", m->num_attention_heads },
        { "ffn-hidden-size", g3_gpt_config_ffn(m) },
        { "max-position-embeddings", g3_gpt_config_positions(m) },
    };
    int bad = 0;

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int64_t v;
        if (!g3_opts_is_set(o, keys[i].flag))
            continue;
        v = g3_opts_int(o, keys[i].flag);
        if (v == keys[i].value)
            continue;
        g3_error(
            "model configuration mismatch: checkpoint %s has --%s %d but this command has --%s %lld",
            s->info->path, keys[i].flag, keys[i].value, keys[i].flag, (long long)v);
        bad++;
    }
    if (bad)
        g3_error(
            "%d model setting%s differ from checkpoint %s: the architecture comes from the checkpoint; drop the flag%s or load the checkpoint you meant",
            bad, bad > 1 ? "s" : "", s->info->path, bad > 1 ? "s" : "");
    return bad;
}

/* The checkpoint's recorded tokenizer files (state/tokenizer, data/tokid.h) against the ones
 * given, as gpt3d train checks them: a permuted vocabulary of the same size would turn the
 * model's ids into other text.  RET: the exit code. */
static int g3_cli_infer_check_tokenizer(const g3_cli_infer_t *s)
{
    char what[PATH_MAX + 32];
    g3_tokid_t made, run;
    g3_status_t st;

    if (!s->info->tokenizer) {
        if (s->info->version >= 2) {
            g3_error("checkpoint %s (format version %d) lacks state/tokenizer, which every gpt3d writing that version records: the index was altered; load another checkpoint",
                     s->info->path, s->info->version);
            return G3_EXIT_FAILURE;
        }
        g3_info("checkpoint %s records no tokenizer (format version 1): its tokenizer cannot be checked against --vocab-file/--merge-file",
                s->info->path);
        return G3_EXIT_OK;
    }
    snprintf(what, sizeof(what), "checkpoint %s", s->info->path);
    st = g3_tokid_from_json_fix(s->info->tokenizer, strlen(s->info->tokenizer), what,
                                "the index was altered; load another checkpoint", &made);
    if (st == G3_OK)
        st = g3_tokid_of_files(s->vocab_file, s->merge_file, &run);
    if (st == G3_OK)
        st = g3_tokid_check(&made, &run, what, s->tok.allow_tokenizer_mismatch);
    return st == G3_OK ? G3_EXIT_OK : G3_EXIT_FAILURE;
}

/* The checkpoint, the model flags, --seq-length, the tokenizer files.  RET: the exit code. */
static int g3_cli_infer_check_ckpt(const g3_opts_t *o, const char *what, g3_cli_infer_t *s)
{
    const char *load = g3_opts_str(o, "load"), *step_s = g3_opts_str(o, "ckpt-step");
    g3_gpt_config_t *m;
    int64_t step = -1, vocab = 0, eod = 0;
    int P;
    g3_status_t st;

    if (!load) {
        g3_error(
            "gpt3d %s needs --load DIR: the --save directory of a gpt3d train run (or one iter_NNNNNNN directory in it)",
            what);
        return G3_EXIT_USAGE;
    }
    if (strcmp(step_s, "latest") != 0) {
        char *end;
        errno = 0;
        step = strtoll(step_s, &end, 10);
        if (errno || *end || end == step_s || step < 0) {
            g3_error("--ckpt-step '%s' is neither an iteration (a number >= 0) nor 'latest'",
                     step_s);
            return G3_EXIT_USAGE;
        }
    }
    if (step >= 0 && g3_opts_bool(o, "load-fallback")) {
        g3_error(
            "--load-fallback goes back from the latest checkpoint; with --ckpt-step %s you picked one: drop one of the two",
            step_s);
        return G3_EXIT_USAGE;
    }
    if (g3_opts_bool(o, "load-fallback")) {
        /* one iter_ directory: falling back from it would go up to its save directory's
         * `latest`, which is not the checkpoint named */
        char index[PATH_MAX + 16];
        struct stat sb;
        snprintf(index, sizeof(index), "%s/index.h5", load);
        if (stat(index, &sb) == 0) {
            g3_error(
                "--load-fallback goes back from the latest checkpoint of a --save directory; --load %s is one checkpoint (an iter_ directory): drop --load-fallback, or pass the directory above it",
                load);
            return G3_EXIT_USAGE;
        }
    }
    st = g3_infer_ckpt_open(load, step, &s->info);
    if (st != G3_OK)
        return st == G3_ERR_INVALID_ARG ? G3_EXIT_USAGE : g3_status_exit_code(st);
    if (g3_cli_infer_model_flags(o, s))
        return G3_EXIT_USAGE;
    m = &s->info->model;
    P = g3_gpt_config_positions(m);
    if (g3_opts_is_set(o, "seq-length")) {
        int64_t T = g3_opts_int(o, "seq-length");
        if (T < 1 || T > P) {
            g3_error(
                "--seq-length %lld is outside what checkpoint %s can run: 1 .. %d (its --max-position-embeddings)",
                (long long)T, s->info->path, P);
            return G3_EXIT_USAGE;
        }
        if (T > m->seq_length)
            g3_warn(
                "--seq-length %lld is longer than the %d tokens checkpoint %s was trained on: positions from %d on were never trained",
                (long long)T, m->seq_length, s->info->path, m->seq_length);
        m->max_position_embeddings = P;
        m->seq_length = (int)T;
    }
    s->T = m->seq_length;
    g3_train_flags_tokenizer(o, &s->tok);   /* the trainer's reader */
    if (!g3_cli_infer_file(s->tok.vocab_file, s, "vocab-file", "encoder.json", s->vocab_file,
                           sizeof(s->vocab_file)) ||
        !g3_cli_infer_file(s->tok.merge_file, s, "merge-file", "vocab.bpe", s->merge_file,
                           sizeof(s->merge_file)))
        return G3_EXIT_FAILURE;
    st = g3_data_vocab_info(s->vocab_file, &vocab, &eod);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    if (vocab != m->vocab_size) {
        g3_error(
            "--vocab-file %s has %lld entries but checkpoint %s was trained with a vocabulary of %d: pass the vocabulary file it was trained with",
            s->vocab_file, (long long)vocab, s->info->path, m->vocab_size);
        return G3_EXIT_USAGE;
    }
    return g3_cli_infer_check_tokenizer(s);
}

/* The layout flags against the job's ranks and the model, with the trainer's messages.
 * RET: the exit code. */
static int g3_cli_infer_check_layout(int max_dp, g3_cli_infer_t *s)
{
    g3_gpt_config_t *m = &s->info->model;
    g3_par_layout_t job;
    int world = s->w.me->size;

    s->tp = s->lf.tp;
    s->pp = s->lf.pp;
    /* the model as the layout places world rank 0 (the layout sets its TP/PP fields) */
    if (!g3_train_flags_job_layout(world, &s->lf, m, &job))
        return G3_EXIT_USAGE;
    s->dp = job.dp;
    if (s->dp > max_dp) {
        g3_error(
            "impossible layout: gpt3d %s runs one model replica, but the job's %d ranks are %d replicas of --tensor-model-parallel-size %d x --pipeline-model-parallel-size %d = %d ranks; start %d ranks",
            s->what, world, s->dp, s->tp, s->pp, s->tp * s->pp, s->tp * s->pp);
        return G3_EXIT_USAGE;
    }
    /* the model on this layout: the stored padded vocabulary shared by TP, heads, hidden
     * and FFN sizes divisible by TP, the layers split over PP (g3_gpt_config_check) */
    if (g3_infer_ckpt_set_tp(s->info, s->tp) != G3_OK)
        return G3_EXIT_USAGE;
    return g3_gpt_config_check(m) == G3_OK ? G3_EXIT_OK : G3_EXIT_USAGE;
}

/* The model's sizes against what the --device kernels run (g3_be_check_sizes, as gpt3d train
 * checks them: the padded vocabulary rows of one tensor-parallel rank).  RET: the exit code. */
static int g3_cli_infer_check_sizes(const g3_cli_infer_t *s)
{
    const g3_gpt_config_t *m = &s->info->model;
    char why[1024];

    if (g3_be_check_sizes(s->kind, &s->be_opts, m->hidden_size, m->num_attention_heads,
                          m->hidden_size / m->num_attention_heads, g3_gpt_config_ffn(m),
                          s->info->padded_vocab / s->tp, why, sizeof(why)) != G3_OK) {
        g3_error("%s", why);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

int g3_cli_infer_parse(const g3_opt_cmd_t *cmd, int argc, char **argv, g3_opts_t **o_p)
{
    return g3_status_exit_code(g3_cli_world_parse(cmd, argc, argv, o_p));
}

int g3_cli_infer_check(const g3_opts_t *o, const char *what, int max_dp, g3_cli_infer_t *s)
{
    int rc;

    memset(s, 0, sizeof(*s));
    s->what = what;
    s->tp = s->pp = s->dp = 1;
    /* the world: which rank this is (alone: a singleton), quiet but rank 0 */
    rc = g3_cli_world_init(g3_train_flags_timeout_s(o), &s->w);
    if (rc != G3_EXIT_OK)
        return rc;
    s->rank = s->w.me->rank;
    if (!g3_train_flags_layout(o, &s->lf))   /* the trainer's reader */
        return G3_EXIT_USAGE;
    /* the compute backend as gpt3d train chooses and checks it */
    g3_be_opts_default(&s->be_opts);
    if (!g3_train_flags_backend(o, &s->kind, &s->be_opts))
        return G3_EXIT_USAGE;
    rc = g3_train_flags_probe(s->kind, &s->be_opts, 0);
    if (rc == G3_EXIT_OK)
        rc = g3_cli_infer_check_ckpt(o, what, s);
    if (rc == G3_EXIT_OK)
        rc = g3_cli_infer_check_layout(max_dp, s);
    if (rc == G3_EXIT_OK)
        rc = g3_cli_infer_check_sizes(s);
    return rc;
}

int g3_cli_infer_agree(g3_cli_infer_t *s, int rc)
{
    if (!s->w.world)
        return rc;
    return g3_cli_world_agree(&s->w, rc, strcmp(s->what, "eval") == 0 ? "evaluation"
                                                                       : "generation");
}

int g3_cli_infer_fail(g3_cli_infer_t *s, g3_status_t st)
{
    int rc = g3_status_exit_code(st);
    g3_cli_world_fail(&s->w, rc, st);
    return rc;
}

g3_infer_lm_t g3_cli_infer_lm(const g3_cli_infer_t *s)
{
    g3_infer_lm_t lm = { s->model, s->eng };
    return lm;
}

int g3_cli_infer_load(const g3_opts_t *o, int B, g3_cli_infer_t *s)
{
    g3_gpt_config_t *m = &s->info->model;
    const g3_par_layout_t *l = NULL;
    g3_status_t st;
    int rc;

    /* the trainer's layout: place the ranks, make the groups; rank 0 alone prints */
    rc = g3_cli_world_layout(&s->w, s->tp, s->pp, s->lf.topology_file);
    if (rc != G3_EXIT_OK)
        return rc;
    l = g3_par_layout(s->w.par);   /* alone: 1 x 1 x 1 */
    g3_par_shard(s->w.par, m);     /* this rank's part of the model */
    s->B = B;
    s->be_opts.nthreads = s->w.threads;   /* as the trainer sets them */
    st = g3_be_open(s->kind, &s->be_opts, &s->be);
    if (st == G3_OK)
        st = g3_gpt_init(m, s->be, &s->model);
    if (st == G3_OK) {
        /* the trainer's engine (one activation set: forward passes only) */
        g3_par_engine_config_t ecfg;
        g3_gpt_tp_comm_t tpc;
        memset(&ecfg, 0, sizeof(ecfg));
        ecfg.max_micro = 1;
        ecfg.forward_only = 1;   /* no Adam moments */
        g3_par_tp_comm(s->w.par, &tpc);
        g3_gpt_set_tp_comm(s->model, &tpc);
        st = g3_par_engine_init(s->w.par, s->model, B, s->T, &ecfg, &s->eng);
    }
    /* the weights by global offsets: any saved layout into this one */
    if (st == G3_OK)
        st = g3_infer_ckpt_load(s->info, s->model, s->w.par, s->dp, l->dp_rank, s->eng,
                                g3_opts_bool(o, "load-fallback"));
    return st == G3_OK ? G3_EXIT_OK : g3_cli_infer_fail(s, st);
}

void g3_cli_infer_describe(const g3_cli_infer_t *s, FILE *out)
{
    const g3_infer_ckpt_info_t *i = s->info;
    const g3_gpt_config_t *m = &i->model;

    fprintf(
        out,
        "gpt3d %s: checkpoint %s (iteration %" PRId64
        ", saved by TP %d x PP %d x DP %d): GPT %d layers, hidden %d, %d heads, ffn %d, sequence %d, vocabulary %d (padded %d): %.2fM parameters\n",
        s->what, i->path, i->iteration, i->saved_tp, i->saved_pp, i->saved_dp, m->num_layers,
        m->hidden_size, m->num_attention_heads, g3_gpt_config_ffn(m), s->T, m->vocab_size,
        i->padded_vocab, (double)g3_gpt_num_parameters(m) / 1e6);
    if (s->w.par && g3_par_layout(s->w.par)->world_size > 1)
        g3_par_print_layout(s->w.par, m, out);
    fflush(out);
}

void g3_cli_infer_free(g3_cli_infer_t *s)
{
    g3_par_engine_free(s->eng);
    g3_gpt_free(s->model);
    g3_par_drop_backend(s->w.par);   /* its groups use the backend: before closing it */
    g3_be_close(s->be);
    g3_infer_ckpt_info_free(s->info);
    g3_cli_world_free(&s->w);
    memset(s, 0, sizeof(*s));
}
