/* gpt3d infer: what the task files share: the table of task kinds (tasks_kinds.c), reading
 * the files (tasks_read.c), building the rows (tasks.c) and scoring them (tasks_run.c).
 *
 * A kind of task is one row of g3_task_kinds[] (g3_task_kind_info_t): its names, the fields
 * of a line of its published file (a schema), the item builder that turns those fields into
 * a prompt and its choices, the row builder, and the metrics it reports with their scorer.
 * Nothing else looks at which kind it is; --task, --eval-tasks, their help and their
 * messages list the rows.  The files depend one way: tasks_kinds.c on the other three, which
 * reach a kind only through the row a task carries (docs/evaluation.md, "Adding a task kind").
 *
 * Glossary: T sequence length. */
#ifndef G3_INFER_TASKS_INTERNAL_H
#define G3_INFER_TASKS_INTERNAL_H

#include "data/json.h"
#include "infer/tasks.h"

/* One row: ids[off .. off + len) (len <= T + 1); the model reads ids[off .. off + len - 1)
 * and the targets at positions [from, len - 1) (the continuation) are scored. */
typedef struct {
    int64_t item;
    int     choice;      /* the choice; lambada 0 strict, 1 non-strict; wikitext the window */
    int64_t off;
    int     len;
    int     from;
    int     truncated;   /* cut on the left */
} g3_task_row_t;

/* Per row after a run: the scored targets' summed log-probability, the sum of their
 * squares, 1 when every one was the argmax, their count. */
enum { G3_TASK_R_LP = 0, G3_TASK_R_LP2, G3_TASK_R_GREEDY, G3_TASK_R_COUNT, G3_TASK_R_N };

/* ---- a line's fields ------------------------------------------------------------------------ */

/* The most fields a kind's line has. */
#define G3_TASK_MAX_FIELDS 8

/* Whether a line must carry a field. */
enum {
    G3_TASK_FIELD_NEEDED = 0,
    G3_TASK_FIELD_OPTIONAL,        /* the item builder looks at .found                  */
    G3_TASK_FIELD_UNLESS_LABELS    /* needed unless a labels file lies beside the data  */
};

/* One field of a kind's line, in the order its item builder reads them (f[0], f[1], ...). */
typedef struct {
    const char *name;
    int         type;      /* 's' string, 'a' array of strings, 'i' integer or "digits" */
    int         need;      /* G3_TASK_FIELD_*                                           */
} g3_task_schema_t;

/* A field's value on one line. */
typedef struct {
    const char *name;
    int         type;      /* as g3_task_schema_t's                                     */
    int         found;
    g3_buf_t    str;       /* 's', and 'i' given as a string                            */
    char      **arr;       /* 'a': (narr,) malloc'd strings                             */
    int         narr;
    long long   num;       /* 'i'                                                       */
} g3_task_field_t;

typedef struct g3_task_kind_info g3_task_kind_info_t;

/* Where a line is and what its file brought besides (an item builder's context). */
typedef struct {
    const g3_task_kind_info_t *kind;
    const char                *path;
    int                        line;
    int64_t                    index;     /* the item's index in the file                 */
    const int                 *labels;    /* (nlabels,) the labels file's, or NULL        */
    int64_t                    nlabels;
} g3_task_line_t;

/* ---- the table of kinds ---------------------------------------------------------------------- */

#define G3_TASK_MAX_ALIASES 2

struct g3_task_kind_info {
    const char *name;                   /* the --task word and the name in reports          */
    const char *aliases[G3_TASK_MAX_ALIASES];   /* other words --task takes (NULL: none)     */
    const char *what;                   /* in messages ("a WHAT item"); NULL: the name        */
    /* how a line looks, after a problem with one; NULL: "a WHAT task file holds one JSON
     * object a line (docs/evaluation.md)" */
    const char *format;
    int         named_by_file;          /* reports say "NAME:STEM" (the file's stem)         */
    int         choices;                /* items of choices: --convert-to writes them         */
    int         greedy;                 /* the scorer asks whether each target is the argmax  */
    /* the fields of a line (name NULL ends them); NULL: the file is read whole by rows_all */
    const g3_task_schema_t *fields;
    /* The labels file beside the data at path (whose text is data), when the data has no
     * labels; NULL: never.  OUT: *labels_p (malloc'd; NULL: none needed), *n_p.
     * RET: G3_ERR_INVALID_ARG (logged), G3_ERR_NO_MEMORY. */
    g3_status_t (*labels)(const char *path, const char *data, int **labels_p, int64_t *n_p);
    /* The item of a line's fields f (strings taken over where they become the item's): the
     * prompt(s), the choices, the label.  RET: G3_OK, G3_ERR_INVALID_ARG (logged, naming the
     * file and line), G3_ERR_NO_MEMORY (not logged). */
    g3_status_t (*item)(g3_task_field_t *f, const g3_task_line_t *l, g3_task_item_t *it);
    /* The rows of item i (after t->prefix, its few-shot examples).  RET: as g3_task_load. */
    g3_status_t (*rows)(g3_task_t *t, int64_t i);
    /* A kind without items (fields NULL): every row from t->spec.data.  RET: as g3_task_load. */
    g3_status_t (*rows_all)(g3_task_t *t);
    const char *metrics[G3_TASK_MAX_METRICS];   /* the names it reports (NULL ends them) */
    /* The metrics from t->res, in metrics' order, with g3_task_metric; scratch: (3 n + 3)
     * doubles for n items.  May set res->n (what was counted). */
    void (*score)(const g3_task_t *t, double *scratch, g3_task_result_t *res);
};

/* ---- a task ---------------------------------------------------------------------------------- */

struct g3_task {
    g3_task_spec_t  spec;
    const g3_task_kind_info_t *kind;   /* spec.kind's row                               */
    char            name[128];
    int             T;
    const g3_bpe_t *bpe;
    g3_bpe_cache_t *cache;
    int32_t         eod;            /* an empty context: this token (0 without one)     */
    g3_task_item_t *items;          /* (nitems,); wikitext: none                       */
    int64_t         nitems;
    g3_task_item_t *shots;          /* (nshots,) --fewshot-data's items, or NULL        */
    int64_t         nshots;
    g3_bpe_ids_t    ids;            /* every row's tokens                              */
    g3_task_row_t  *rows;           /* (nrows,)                                        */
    int64_t         nrows, cap_rows;
    int64_t         truncated;
    int             first_truncated_line;
    double         *res;            /* (nrows, G3_TASK_R_N) after g3_task_run          */
    /* wikitext */
    int64_t         orig_tokens;    /* len(text.strip().split(" "))                    */
    int64_t         bpe_tokens;     /* BPE tokens of the detokenized text              */
    char           *detok;          /* the detokenized text                            */
    size_t          detok_len;
    /* scratch */
    g3_bpe_ids_t    enc_ctx, enc_all;
    g3_buf_t        prefix;         /* the few-shot examples of the current item       */
};

/* ---- tasks_text.c ---------------------------------------------------------------------------- */

/* Python's str.strip() on s, in place. */
void g3_task_strip(char *s);
/* RET: a + b + c (c may be NULL), malloc'd, or NULL. */
char *g3_task_concat(const char *a, const char *b, const char *c);

/* ---- tasks_read.c ---------------------------------------------------------------------------- */

void g3_task_items_free(g3_task_item_t *items, int64_t n);
/* An item of n choices: one shared context (partial 0) or one per choice, the continuations
 * one per choice (partial 0) or shared.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_task_item_make(g3_task_item_t *it, int n, int partial, int line);
/* Log "PATH:LINE: WHY; " and how a line of l's kind looks. */
void g3_task_line_error(const g3_task_line_t *l, const char *why);

/* The items of a file of kind (one with fields).  RET: G3_ERR_INVALID_ARG (logged, naming
 * the file and line), G3_ERR_NO_MEMORY.  OUT: *items_p (malloc'd), *n_p. */
g3_status_t g3_task_read_items(const g3_task_kind_info_t *kind, const char *path,
                               g3_task_item_t **items_p, int64_t *n_p);
/* The items of in (a kind of choices) written to out as gpt3d's multiple-choice JSONL.
 * RET: as g3_task_read_items, G3_ERR_IO (logged). */
g3_status_t g3_task_write_choices(const g3_task_kind_info_t *kind, const char *in,
                                  const char *out);

/* ---- tasks.c: building the rows ------------------------------------------------------------ */

/* g3_task_load with spec->kind's row kind. */
g3_status_t g3_task_build(const g3_task_kind_info_t *kind, const g3_task_spec_t *spec,
                          const g3_bpe_t *bpe, int T, g3_task_t **task_p);
/* The row builders: an item's choices as the harness's requests (context + delimiter +
 * choice); LAMBADA's strict and non-strict rows; WikiText's windows (rows_all). */
g3_status_t g3_task_rows_choices(g3_task_t *t, int64_t i);
g3_status_t g3_task_rows_lambada(g3_task_t *t, int64_t i);
g3_status_t g3_task_rows_wikitext(g3_task_t *t);

/* ---- tasks_run.c: the scorers -------------------------------------------------------------- */

/* acc_strict, acc_nonstrict, ppl (rows 2i strict, 2i + 1 non-strict). */
void g3_task_score_lambada(const g3_task_t *t, double *scratch, g3_task_result_t *res);
/* loss, ppl, adjusted_ppl, token_ratio (Megatron's). */
void g3_task_score_wikitext(const g3_task_t *t, double *scratch, g3_task_result_t *res);
/* acc, acc_norm (rows in item, choice order). */
void g3_task_score_choices(const g3_task_t *t, double *scratch, g3_task_result_t *res);

#endif
