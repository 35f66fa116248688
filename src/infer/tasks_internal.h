/* gpt3d infer: what tasks.c (the files and the rows) and tasks_run.c (scoring and metrics)
 * share.  Glossary: T sequence length. */
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

struct g3_task {
    g3_task_spec_t  spec;
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

/* tasks_read.c's helpers: free n items; Python's str.strip() in place; a + b + c (c may be
 * NULL) malloc'd, or NULL. */
void g3_task_items_free(g3_task_item_t *items, int64_t n);
void g3_task_strip(char *s);
char *g3_task_concat(const char *a, const char *b, const char *c);

/* The items of a file of kind (not wikitext).  RET: G3_ERR_INVALID_ARG (logged, naming the
 * file and line), G3_ERR_NO_MEMORY.  OUT: *items_p (malloc'd), *n_p. */
g3_status_t g3_task_read_items(g3_task_kind_t kind, const char *path, g3_task_item_t **items_p,
                               int64_t *n_p);

#endif
