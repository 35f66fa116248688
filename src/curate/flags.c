/* gpt3d curate: the flags of 'gpt3d curate STAGE' and their reading into the stage parameters
 * (flags.h). */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "curate/flags.h"

static const g3_opt_spec_t g3_curate_specs[] = {
    { "shard-list",    G3_OPT_STRING, NULL, "File of input shards (JSON lines), one path a line; shard i's outputs are OUT/shard-i.*.", NULL, 0, 0, "FILE" },
    { "output-dir",    G3_OPT_STRING, NULL, "Directory of this stage's outputs and reports (created).", NULL, 0, 0, "DIR" },
    { "task-id",       G3_OPT_INT,    "-1", "This task's number (-1: SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, else 0); task t takes shards t, t+T, ...", NULL, 0, 0, "N" },
    { "num-tasks",     G3_OPT_INT,    "0", "Tasks sharing the shards (0: SLURM_ARRAY_TASK_COUNT, else 1).", NULL, 0, 0, "T" },
    { "text-key",      G3_OPT_STRING, "text", "JSON key of the document text (other keys are kept).", NULL, 0, 0, "KEY" },
    { "max-line-bytes", G3_OPT_INT,   "67108864", "Longest input line accepted (bytes); a longer one is an error.", NULL, 0, 0, "N" },
    { "allow-empty",   G3_OPT_BOOL,   NULL, "Accept 0-byte shards (else an error).", NULL, 0, 0, NULL },
    { "force",         G3_OPT_BOOL,   NULL, "Redo shards whose outputs exist and verify.", NULL, 0, 0, NULL },
    { "ngram",         G3_OPT_INT,    "5", "minhash: words per shingle.", NULL, 0, 0, "N" },
    { "num-perm",      G3_OPT_INT,    "128", "minhash, lsh: MinHash permutations (= bands x rows).", NULL, 0, 0, "K" },
    { "bands",         G3_OPT_INT,    "16", "lsh: LSH bands.", NULL, 0, 0, "B" },
    { "rows",          G3_OPT_INT,    "8", "lsh: rows per band (threshold ~ (1/B)^(1/R)).", NULL, 0, 0, "R" },
    { "seed",          G3_OPT_INT,    "1", "minhash, lsh: seed of the permutations.", NULL, 0, 0, "S" },
    { "lower",         G3_OPT_BOOL,   NULL, "minhash: the exact-duplicate hash is of the lower-cased text.", NULL, 0, 0, NULL },
    { "minhash-dir",   G3_OPT_STRING, NULL, "lsh: the minhash stage's output directory.", NULL, 0, 0, "DIR" },
    { "threshold",     G3_OPT_FLOAT,  "0.8", "lsh: Jaccard a candidate pair must reach (estimated or exact: --verify).", NULL, 0, 0, "J" },
    { "verify",        G3_OPT_CHOICE, "estimate", "lsh: a candidate pair's Jaccard: estimate (from the signatures) or exact (of the two shingle sets; re-reads the pair's documents from the shards).", "estimate|exact", 0, 0, NULL },
    { "keep",          G3_OPT_CHOICE, "longest", "lsh: the document kept of a fuzzy component.", "longest|first", 0, 0, NULL },
    { "anchors",       G3_OPT_INT,    "256", "lsh: bucket members are compared with the bucket's first N members.", NULL, 0, 0, "N" },
    { "exact-only",    G3_OPT_BOOL,   NULL, "lsh: exact duplicates only, no LSH.", NULL, 0, 0, NULL },
    { "lsh-dir",       G3_OPT_STRING, NULL, "dedup: the lsh stage's output directory.", NULL, 0, 0, "DIR" },
    { "task-files",    G3_OPT_LIST,   NULL, "contam-count, decontaminate: evaluation task files (JSON lines or text), one item a line.", NULL, 1, 0, "FILE" },
    { "task-key",      G3_OPT_STRING, "text", "JSON key of a task item's text.", NULL, 0, 0, "KEY" },
    { "decon-ngram",   G3_OPT_INT,    "13", "Words per contamination n-gram.", NULL, 0, 0, "N" },
    { "margin",        G3_OPT_INT,    "200", "decontaminate: characters removed on each side of a match.", NULL, 0, 0, "C" },
    { "min-piece",     G3_OPT_INT,    "200", "decontaminate: pieces shorter than this (characters) are dropped.", NULL, 0, 0, "C" },
    { "max-splits",    G3_OPT_INT,    "10", "decontaminate: a document split more often is dropped.", NULL, 0, 0, "N" },
    { "frequent",      G3_OPT_INT,    "10", "decontaminate: n-grams in this many training documents or more are not contamination.", NULL, 0, 0, "N" },
    { "counts-dir",    G3_OPT_STRING, NULL, "decontaminate: the contam-count stage's output directory.", NULL, 0, 0, "DIR" },
    { "min-words",     G3_OPT_INT,    "50", "filter: fewest words.", NULL, 0, 0, "N" },
    { "max-words",     G3_OPT_INT,    "100000", "filter: most words.", NULL, 0, 0, "N" },
    { "min-mean-word", G3_OPT_FLOAT,  "3", "filter: shortest mean word length.", NULL, 0, 0, "X" },
    { "max-mean-word", G3_OPT_FLOAT,  "10", "filter: longest mean word length.", NULL, 0, 0, "X" },
    { "max-symbol-ratio", G3_OPT_FLOAT, "0.1", "filter: most ('#' + ellipses) per word.", NULL, 0, 0, "X" },
    { "max-bullet-lines", G3_OPT_FLOAT, "0.9", "filter: largest share of lines starting with a bullet.", NULL, 0, 0, "X" },
    { "max-ellipsis-lines", G3_OPT_FLOAT, "0.3", "filter: largest share of lines ending in an ellipsis.", NULL, 0, 0, "X" },
    { "max-dup-lines", G3_OPT_FLOAT,  "0.3", "filter: largest share of repeated lines.", NULL, 0, 0, "X" },
    { "max-dup-line-chars", G3_OPT_FLOAT, "0.2", "filter: largest share of characters in repeated lines.", NULL, 0, 0, "X" },
    { "max-top-ngram", G3_OPT_LIST,   "0.2 0.18 0.16", "filter: n = 2, 3, 4: largest character share of the most frequent n-gram.", NULL, 3, 3, "X" },
    { "max-dup-ngram", G3_OPT_LIST,   "0.15 0.14 0.13 0.12 0.11 0.10", "filter: n = 5..10: largest character share of repeated n-grams.", NULL, 6, 6, "X" },
    { "min-stop-words", G3_OPT_INT,   "2", "filter: fewest distinct English stop words (the be to of and that have with).", NULL, 0, 0, "N" },
    { "min-alpha-words", G3_OPT_FLOAT, "0.8", "filter: smallest share of words with a letter.", NULL, 0, 0, "X" },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

const g3_opt_cmd_t g3_curate_cmd = {
    "curate",
    "Curate training data: minhash | lsh | dedup | contam-count | decontaminate | filter (docs/curation.md).",
    "STAGE", 1, 1, g3_curate_specs
};

static int g3_curate_env_int(const char *name, long *v)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return 0;
    *v = strtol(s, &end, 10);
    return *end == '\0';
}

static int g3_curate_floats(const g3_opts_t *o, const char *name, double *out, int n)
{
    char *const *v;
    int got = g3_opts_list(o, name, &v);
    for (int i = 0; i < n && i < got; i++) {
        char *end;
        out[i] = strtod(v[i], &end);
        if (*end || end == v[i] || !(out[i] >= 0)) {
            g3_error("gpt3d curate: --%s: '%s' is not a number >= 0", name, v[i]);
            return 0;
        }
    }
    return 1;
}

/* The stage (f->stage, f->stage_id) and the input and output flags every stage reads
 * (f->io): shards, output, this task's place in the array, line limits.
 * RET: G3_OK, or G3_ERR_USAGE (logged). */
static g3_status_t g3_curate_flags_io(const g3_opts_t *o, g3_curate_flags_t *f)
{
    const char *stages[] = { "minhash", "lsh", "dedup", "contam-count", "decontaminate", "filter" };
    long env;
    int64_t tid = g3_opts_int(o, "task-id"), nt = g3_opts_int(o, "num-tasks");

    f->stage = g3_opts_pos(o, 0);
    f->stage_id = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(f->stage, stages[i]))
            f->stage_id = i;
    if (f->stage_id < 0) {
        const char *hint = g3_opts_suggest(f->stage, stages, 6);
        g3_error("gpt3d curate: '%s' is not a stage (minhash, lsh, dedup, contam-count, decontaminate, filter)%s%s%s",
                 f->stage, hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
        return G3_ERR_USAGE;
    }
    f->io.shard_list = g3_opts_str(o, "shard-list");
    f->io.output_dir = g3_opts_str(o, "output-dir");
    if (!f->io.shard_list || !f->io.output_dir) {
        g3_error("gpt3d curate %s: --shard-list and --output-dir are required (see 'gpt3d curate --help')",
                 f->stage);
        return G3_ERR_USAGE;
    }
    if (nt == 0)
        nt = g3_curate_env_int("SLURM_ARRAY_TASK_COUNT", &env) ? env : 1;
    if (tid < 0) {
        long min = 0;
        g3_curate_env_int("SLURM_ARRAY_TASK_MIN", &min);
        tid = g3_curate_env_int("SLURM_ARRAY_TASK_ID", &env) ? env - min : 0;
    }
    if (nt < 1 || nt > 1000000 || tid < 0 || tid >= nt) {
        g3_error("gpt3d curate %s: task %lld of %lld tasks is out of range (0 <= --task-id < --num-tasks, or the SLURM_ARRAY_TASK_* variables)",
                 f->stage, (long long)tid, (long long)nt);
        return G3_ERR_USAGE;
    }
    f->io.task_id = (int)tid;
    f->io.num_tasks = (int)nt;
    f->io.text_key = g3_opts_str(o, "text-key");
    f->io.max_line_bytes = (size_t)g3_opts_int(o, "max-line-bytes");
    f->io.allow_empty = g3_opts_bool(o, "allow-empty");
    f->io.force = g3_opts_bool(o, "force");
    if (g3_opts_int(o, "max-line-bytes") < 1) {
        g3_error("gpt3d curate: --max-line-bytes must be at least 1");
        return G3_ERR_USAGE;
    }
    return G3_OK;
}

/* The stages' own flags: MinHash, LSH, decontamination and quality filters.
 * RET: G3_OK, or G3_ERR_USAGE (logged: a bad float list). */
static g3_status_t g3_curate_flags_stages(const g3_opts_t *o, g3_curate_flags_t *f)
{
    f->mh.ngram = (int)g3_opts_int(o, "ngram");
    f->mh.num_perm = (int)g3_opts_int(o, "num-perm");
    f->mh.bands = (int)g3_opts_int(o, "bands");
    f->mh.rows = (int)g3_opts_int(o, "rows");
    f->mh.seed = (uint64_t)g3_opts_int(o, "seed");
    f->mh.lower = g3_opts_bool(o, "lower");
    f->lsh.threshold = g3_opts_float(o, "threshold");
    f->lsh.keep = !strcmp(g3_opts_str(o, "keep"), "first") ? G3_CURATE_KEEP_FIRST
                                                            : G3_CURATE_KEEP_LONGEST;
    f->lsh.anchors = (int)g3_opts_int(o, "anchors");
    f->lsh.exact_only = g3_opts_bool(o, "exact-only");
    f->lsh.verify_exact = !strcmp(g3_opts_str(o, "verify"), "exact");
    f->minhash_dir = g3_opts_str(o, "minhash-dir");
    f->lsh_dir = g3_opts_str(o, "lsh-dir");

    char *const *tasks = NULL;
    f->decon.num_task_files = g3_opts_list(o, "task-files", &tasks);
    f->decon.task_files = (const char *const *)tasks;
    f->decon.task_key = g3_opts_str(o, "task-key");
    f->decon.ngram = (int)g3_opts_int(o, "decon-ngram");
    f->decon.margin = (int)g3_opts_int(o, "margin");
    f->decon.min_piece = (int)g3_opts_int(o, "min-piece");
    f->decon.max_splits = (int)g3_opts_int(o, "max-splits");
    f->decon.frequent = (int)g3_opts_int(o, "frequent");
    f->decon.counts_dir = g3_opts_str(o, "counts-dir");

    f->filter.min_words = g3_opts_int(o, "min-words");
    f->filter.max_words = g3_opts_int(o, "max-words");
    f->filter.min_mean_word = g3_opts_float(o, "min-mean-word");
    f->filter.max_mean_word = g3_opts_float(o, "max-mean-word");
    f->filter.max_symbol_ratio = g3_opts_float(o, "max-symbol-ratio");
    f->filter.max_bullet_lines = g3_opts_float(o, "max-bullet-lines");
    f->filter.max_ellipsis_lines = g3_opts_float(o, "max-ellipsis-lines");
    f->filter.max_dup_lines = g3_opts_float(o, "max-dup-lines");
    f->filter.max_dup_line_chars = g3_opts_float(o, "max-dup-line-chars");
    f->filter.min_stop_words = (int)g3_opts_int(o, "min-stop-words");
    f->filter.min_alpha_words = g3_opts_float(o, "min-alpha-words");
    if (!g3_curate_floats(o, "max-top-ngram", f->filter.max_top_ngram, 3)
        || !g3_curate_floats(o, "max-dup-ngram", f->filter.max_dup_ngram, 6))
        return G3_ERR_USAGE;
    return G3_OK;
}

g3_status_t g3_curate_flags_read(const g3_opts_t *o, g3_curate_flags_t *f)
{
    g3_status_t st;

    memset(f, 0, sizeof(*f));
    if ((st = g3_curate_flags_io(o, f)) != G3_OK)
        return st;
    if ((st = g3_curate_flags_stages(o, f)) != G3_OK)
        return st;
    if (f->stage_id == G3_CURATE_STAGE_LSH && !f->minhash_dir) {
        g3_error("gpt3d curate lsh: --minhash-dir is required (the minhash stage's --output-dir)");
        return G3_ERR_USAGE;
    }
    if (f->stage_id == G3_CURATE_STAGE_DEDUP && !f->lsh_dir) {
        g3_error("gpt3d curate dedup: --lsh-dir is required (the lsh stage's --output-dir)");
        return G3_ERR_USAGE;
    }
    if ((f->stage_id == G3_CURATE_STAGE_COUNT || f->stage_id == G3_CURATE_STAGE_DECON)
        && f->decon.num_task_files < 1) {
        g3_error("gpt3d curate %s: --task-files is required (the evaluation task files)", f->stage);
        return G3_ERR_USAGE;
    }
    return G3_OK;
}

g3_status_t g3_curate_flags_run(g3_curate_flags_t *f, g3_comm_t *comm, g3_curate_counts_t *c)
{
    switch (f->stage_id) {
    case G3_CURATE_STAGE_MINHASH: return g3_curate_minhash(&f->io, &f->mh, c);
    case G3_CURATE_STAGE_LSH:
        return g3_curate_lsh(&f->io, f->minhash_dir, &f->lsh, &f->mh, comm, c);
    case G3_CURATE_STAGE_DEDUP:   return g3_curate_dedup(&f->io, f->lsh_dir, c);
    case G3_CURATE_STAGE_COUNT:   return g3_curate_contam_count(&f->io, &f->decon, c);
    case G3_CURATE_STAGE_DECON:   return g3_curate_decontaminate(&f->io, &f->decon, c);
    default:                      return g3_curate_filter(&f->io, &f->filter, c);
    }
}
