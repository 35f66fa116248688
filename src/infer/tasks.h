/* gpt3d infer: zero- and few-shot downstream tasks (`gpt3d eval --task`, `gpt3d train
 * --eval-tasks`), as Megatron-LM's tasks/zeroshot_gpt and the lm-evaluation-harness score
 * them (docs/evaluation.md):
 *   lambada      OpenAI's lambada_test.jsonl ({"text": ...} a line): the last word predicted
 *                under teacher forcing; strict (every BPE token of the last whitespace-
 *                delimited word is the argmax, Megatron's --strict-lambada) and non-strict
 *                (the last BPE token of the text); the perplexity of the strict targets;
 *   wikitext103  the raw wiki.test.tokens: Megatron's WikiText detokenizer, then windows of T
 *                tokens every --overlapping-eval STRIDE, each token scored once; per-BPE-token
 *                and adjusted (over the original word-level count) perplexity;
 *   mc           multiple choice in gpt3d's JSONL ({"context", "choices", "label"}, or the
 *                partial form {"contexts", "continuation", "label"}), and the published
 *                formats of hellaswag, piqa and winogrande read directly: acc and acc_norm.
 * Each kind is one row of the table of kinds (tasks_kinds.c, tasks_internal.h): its names, the
 * fields of its file's lines, its item and row builders, its metrics and their scorer; adding
 * a kind is adding a row (docs/evaluation.md).
 * Few-shot: K solved examples, drawn per item with --seed from --fewshot-data or the task
 * file (never the item itself), joined by G3_TASK_FEWSHOT_SEP before the item.
 *
 * Every rank reads and tokenizes the files (the same rows everywhere); the rows are sorted
 * by length and cut into micro-batches of B rows of the longest row's length (at most T);
 * data-parallel replica d scores micro-batch d of each group of DP; the per-row sums are
 * added over the world, so every rank ends with every item's scores.
 *
 * Glossary: B micro-batch, T sequence length (the context), DP data-parallel size. */
#ifndef G3_INFER_TASKS_H
#define G3_INFER_TASKS_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "data/bpe.h"
#include "infer/infer.h"

/* Between the few-shot examples and before the item (the harness's fewshot_delimiter). */
#define G3_TASK_FEWSHOT_SEP "\n\n"
/* Between a multiple-choice context and its choice (the harness's default target_delimiter;
 * an mc item may give its own "target_delimiter"). */
#define G3_TASK_TARGET_SEP " "

/* A kind of task: a row of the table of kinds (tasks_kinds.c; tasks_internal.h says what a
 * row holds), by its index; g3_task_kind gives it from a --task word. */
typedef int g3_task_kind_t;
/* What to run: one --task with its file and the shared settings. */
typedef struct {
    g3_task_kind_t kind;
    const char    *data;          /* --task-data FILE                                        */
    const char    *fewshot_data;  /* --fewshot-data FILE, or NULL: the task file            */
    int            num_fewshot;   /* K                                                       */
    uint64_t       seed;          /* the draws of the examples                               */
    int            stride;        /* wikitext103: --overlapping-eval (0: T)                  */
} g3_task_spec_t;

/* One item: a context (or one per choice: WinoGrande's partial scoring) and continuations. */
typedef struct {
    int    nchoices;    /* 1 for lambada                                              */
    char **ctx;         /* (nchoices,) contexts; all the same pointer but partial items */
    char **cont;        /* (nchoices,) continuations (the choices)                      */
    int    partial;     /* the contexts differ, the continuation is shared              */
    char  *delim;       /* between context and continuation: "target_delimiter", or NULL
                         * for G3_TASK_TARGET_SEP                                        */
    int    label;       /* the right choice                                            */
    int    line;        /* in the file                                                 */
} g3_task_item_t;

typedef struct g3_task g3_task_t;

/* RET: the kind named name (its --task word or an alias: "wikitext" is wikitext103), or -1. */
int g3_task_kind(const char *name);

/* Which kinds g3_task_kinds_list lists. */
typedef enum {
    G3_TASK_KINDS_ALL = 0,
    G3_TASK_KINDS_CHOICES     /* the multiple-choice kinds: --convert-to writes them */
} g3_task_kinds_t;

/* The --task words of the kinds which, in the table's order, joined by ", " and the last by
 * last (" or ", ", "), into buf (size; cut short when too small), for help and messages:
 * "lambada, wikitext103, hellaswag, piqa, winogrande or mc".  RET: buf. */
const char *g3_task_kinds_list(g3_task_kinds_t which, const char *last, char *buf, size_t size);

/* Convert a multiple-choice file of kind (hellaswag, piqa, winogrande, mc: a kind of choices)
 * into gpt3d's multiple-choice JSONL at out, the items as scoring sees them.  RET: as
 * g3_task_load, G3_ERR_IO (logged). */
g3_status_t g3_task_convert(g3_task_kind_t kind, const char *in, const char *out);

/* Read the task's file(s) and build its rows for sequences of T tokens with bpe: every
 * problem logged once naming the file and line and the fix (when quiet is 0).
 * RET: G3_ERR_FORMAT or G3_ERR_INVALID_ARG for a bad file or setting (exit 2),
 * G3_ERR_NOT_FOUND / G3_ERR_IO, G3_ERR_NO_MEMORY.  OUT: *task_p. */
g3_status_t g3_task_load(const g3_task_spec_t *spec, const g3_bpe_t *bpe, int T,
                         g3_task_t **task_p);
void g3_task_free(g3_task_t *task);

/* The task's name in reports ("lambada", "mc:NAME" with the file's stem for mc). */
const char *g3_task_name(const g3_task_t *task);
/* Items, rows to score and their tokens (inputs, padding aside). */
int64_t g3_task_items(const g3_task_t *task);
int64_t g3_task_rows(const g3_task_t *task);
int64_t g3_task_tokens(const g3_task_t *task);
/* Write the prompt of the first item (its first choice's context and continuation, with
 * the few-shot examples) to out. */
void g3_task_show_prompt(const g3_task_t *task, const g3_bpe_t *bpe, FILE *out);

/* The scores of a run. */
#define G3_TASK_MAX_METRICS 8
typedef struct {
    int64_t     n;                              /* items                                  */
    int64_t     truncated;                      /* rows whose context was cut on the left */
    int         nmetrics;
    const char *names[G3_TASK_MAX_METRICS];
    double      values[G3_TASK_MAX_METRICS];
    double      stderrs[G3_TASK_MAX_METRICS];   /* NAN where none is defined              */
    double      tokens_per_s;                   /* rows' tokens scored per second         */
    double      seconds;
} g3_task_result_t;

/* Score the task on lm (every rank of the world, collective): micro-batches of up to B
 * rows through g3_par_score, this replica's share (dp_size, dp_rank), the sums added over
 * the world.  progress: where rank 0 prints progress lines with an ETA (NULL: none).
 * OUT: *res (the same on every rank).  RET: model and comm errors, G3_ERR_NO_MEMORY. */
g3_status_t g3_task_run(g3_task_t *task, const g3_infer_lm_t *lm, int B, int dp_size,
                        int dp_rank, FILE *progress, g3_task_result_t *res);

/* Print the result (Megatron-style line) to stdout and, when metrics is not NULL, append
 * {"event":"task","task":...,"iteration":N,"n":...,"num_fewshot":K,"truncated":...,
 *  "metrics":{NAME:V,...},"stderr":{NAME:E,...}} (plus "checkpoint" when not NULL). */
void g3_task_report(const g3_task_t *task, const g3_task_result_t *res, int64_t iteration,
                    const char *checkpoint, FILE *metrics);

/* Tests: write one JSON line per row ({"item","choice","ids","from","logprob","greedy"})
 * of the last run to path (the reference recomputes them).  RET: G3_ERR_IO (logged). */
g3_status_t g3_task_dump_rows(const g3_task_t *task, const char *path);

/* ---- a list of tasks: gpt3d train --eval-tasks ------------------------------------------- */

typedef struct {
    int         n;
    g3_task_t **tasks;       /* (n,)                                   */
    g3_bpe_t   *bpe;
    char       *spec_copy;   /* the SPEC the tasks' file names point in */
} g3_task_set_t;

/* SPEC "NAME:FILE[:K][,NAME:FILE[:K]...]" (K: few-shot examples, default 0; file names
 * without ',' or ':'): every task read for sequences of T tokens with the tokenizer files,
 * the few-shot draws keyed by seed.  RET: G3_ERR_INVALID_ARG for a bad SPEC or file
 * (logged, exit 2), G3_ERR_NO_MEMORY, the tokenizer's errors.  OUT: *set (free it with
 * g3_task_set_free, also after an error). */
g3_status_t g3_task_set_load(const char *spec, const char *vocab_file, const char *merge_file,
                             int T, uint64_t seed, g3_task_set_t *set);

/* Run every task (collective, as g3_task_run); when speak, print progress and each report
 * (g3_task_report, no checkpoint) at iteration.  RET: as g3_task_run. */
g3_status_t g3_task_set_run(g3_task_set_t *set, const g3_infer_lm_t *lm, int B, int dp_size,
                            int dp_rank, int64_t iteration, int speak, FILE *metrics);
void g3_task_set_free(g3_task_set_t *set);

/* ---- text helpers (tasks_text.c) ---------------------------------------------------------- */

/* Megatron's wikitext_detokenizer (tasks/zeroshot_gpt/detokenizer.py) on text[0..len).
 * OUT: *out_p (malloc'd, NUL-terminated), *out_len_p.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_task_wikitext_detok(const char *text, size_t len, char **out_p, size_t *out_len_p);

/* RET: the bytes of the whitespace character at s[0..n) as Python's str.isspace sees it
 * (ASCII \t\n\v\f\r and space, \x1c-\x1f, and the Unicode White_Space characters in
 * UTF-8), else 0. */
size_t g3_task_space_len(const char *s, size_t n);

#endif
