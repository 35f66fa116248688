/* gpt3d infer: building the tasks' rows from their items (tasks_read.c reads the files, the
 * kind's row in tasks_kinds.c says which builder): the harness's request encoding, Megatron's
 * LAMBADA split and WikiText windows, the few-shot prompts (see tasks.h).
 * Glossary: T sequence length, K few-shot examples. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/rng.h"
#include "data/json.h"
#include "infer/tasks_internal.h"

/* ---- rows -------------------------------------------------------------------------------- */

/* Append a row of tokens ctx ++ cont (the continuation's targets scored), cut on the left
 * to T + 1 tokens.  RET: G3_ERR_INVALID_ARG when the continuation alone does not fit
 * (logged), G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_add_row(g3_task_t *t, int64_t item, int choice, const int32_t *ctx,
                                   size_t nctx, const int32_t *cont, size_t ncont, int line)
{
    g3_task_row_t *r;
    size_t total = nctx + ncont, cut = total > (size_t)t->T + 1 ? total - t->T - 1 : 0;

    if (ncont == 0) {
        g3_error("%s:%d: choice %d adds no token after the context: its text merges into the context's last token under this vocabulary; end the context or start the choice at a token boundary",
                 t->spec.data, line, choice);
        return G3_ERR_INVALID_ARG;
    }
    if (ncont > (size_t)t->T) {
        g3_error("%s:%d: choice %d's continuation is %zu tokens, longer than --seq-length %d: it cannot be scored; shorten it or pass a longer --seq-length",
                 t->spec.data, line, choice, ncont, t->T);
        return G3_ERR_INVALID_ARG;
    }
    if (t->nrows == t->cap_rows) {
        int64_t cap = t->cap_rows ? 2 * t->cap_rows : 1024;
        g3_task_row_t *g = realloc(t->rows, sizeof(*g) * (size_t)cap);
        if (!g)
            return G3_ERR_NO_MEMORY;
        t->rows = g;
        t->cap_rows = cap;
    }
    r = &t->rows[t->nrows];
    r->item = item;
    r->choice = choice;
    r->off = (int64_t)t->ids.len;
    r->len = (int)(total - cut);
    r->from = (int)(nctx - cut) - 1;   /* the position that predicts cont[0] */
    r->truncated = cut > 0;
    for (size_t i = cut; i < total; i++)
        if (g3_bpe_ids_push(&t->ids, i < nctx ? ctx[i] : cont[i - nctx]) != G3_OK)
            return G3_ERR_NO_MEMORY;
    if (cut > 0) {
        if (t->truncated == 0)
            t->first_truncated_line = line;
        t->truncated++;
    }
    t->nrows++;
    return G3_OK;
}

/* Encode text[0..n) into out (cleared first).  RET: G3_ERR_NO_MEMORY, G3_ERR_FORMAT. */
static g3_status_t g3_task_encode(g3_task_t *t, const char *text, size_t n, g3_bpe_ids_t *out)
{
    out->len = 0;
    return n ? g3_bpe_encode(t->bpe, t->cache, text, n, out, NULL) : G3_OK;
}

/* The harness's request encoding: the context's trailing whitespace moves to the
 * continuation; the continuation's tokens are those of enc(context + continuation) after
 * enc(context); an empty context is the end-of-document token. */
static g3_status_t g3_task_request(g3_task_t *t, int64_t item, int choice, const char *ctx,
                                   const char *cont, int line)
{
    size_t nctx = strlen(ctx), ncont = strlen(cont), e = 0, sp;
    char *whole = malloc(nctx + ncont + 1);
    g3_status_t st;

    if (!whole)
        return G3_ERR_NO_MEMORY;
    for (size_t p = 0; p < nctx;) {   /* e: the end of the last non-space character */
        sp = g3_task_space_len(ctx + p, nctx - p);
        p += sp ? sp : 1;
        if (!sp)
            e = p;
    }
    memcpy(whole, ctx, nctx);
    memcpy(whole + nctx, cont, ncont);
    whole[nctx + ncont] = '\0';
    st = g3_task_encode(t, whole, e, &t->enc_ctx);
    if (st == G3_OK)
        st = g3_task_encode(t, whole, nctx + ncont, &t->enc_all);
    free(whole);
    if (st != G3_OK)
        return st;
    if (e == 0) {   /* no context: the document starts */
        t->enc_ctx.len = 0;
        st = g3_bpe_ids_push(&t->enc_ctx, t->eod);
        if (st != G3_OK)
            return st;
        return g3_task_add_row(t, item, choice, t->enc_ctx.ids, 1, t->enc_all.ids,
                               t->enc_all.len, line);
    }
    if (t->enc_all.len <= t->enc_ctx.len)
        return g3_task_add_row(t, item, choice, t->enc_ctx.ids, t->enc_ctx.len, NULL, 0, line);
    return g3_task_add_row(t, item, choice, t->enc_ctx.ids, t->enc_ctx.len,
                           t->enc_all.ids + t->enc_ctx.len, t->enc_all.len - t->enc_ctx.len,
                           line);
}

/* The few-shot prefix of item i into t->prefix: K solved examples drawn from the pool
 * (never item i when the pool is the task file), each followed by the separator. */
static g3_status_t g3_task_prefix(g3_task_t *t, int64_t i)
{
    const g3_task_item_t *pool = t->shots ? t->shots : t->items;
    int64_t np = t->shots ? t->nshots : t->nitems, picked[64];
    uint64_t stream = g3_rng_stream_from_name("fewshot"), a = 0;
    int K = t->spec.num_fewshot;
    g3_status_t st = G3_OK;

    t->prefix.len = 0;
    if (t->prefix.data)
        t->prefix.data[0] = '\0';
    for (int k = 0; k < K && st == G3_OK; k++) {
        const g3_task_item_t *ex;
        int64_t r;
        int again;
        do {   /* distinct, and not the item itself */
            r = (int64_t)(g3_rng_u64(t->spec.seed, stream, ((uint64_t)i << 24) + a++) %
                          (uint64_t)np);
            again = !t->shots && r == i;
            for (int q = 0; q < k; q++)
                again |= picked[q] == r;
        } while (again);
        picked[k] = r;
        ex = &pool[r];
        /* the solved example: its right context, then (a text scored at its end has none)
         * the delimiter and its right continuation */
        st = g3_buf_append(&t->prefix, ex->ctx[ex->label], strlen(ex->ctx[ex->label]));
        if (st == G3_OK && ex->cont[ex->label]) {
            const char *d = ex->delim ? ex->delim : G3_TASK_TARGET_SEP;
            st = g3_buf_append(&t->prefix, d, strlen(d));
            if (st == G3_OK)
                st = g3_buf_append(&t->prefix, ex->cont[ex->label], strlen(ex->cont[ex->label]));
        }
        if (st == G3_OK)
            st = g3_buf_append(&t->prefix, G3_TASK_FEWSHOT_SEP, strlen(G3_TASK_FEWSHOT_SEP));
    }
    return st;
}

/* A string: the prefix then s (malloc'd). */
static char *g3_task_prefixed(const g3_task_t *t, const char *s, size_t n)
{
    size_t np = t->prefix.len;
    char *o = malloc(np + n + 1);
    if (!o)
        return NULL;
    if (np)
        memcpy(o, t->prefix.data, np);
    memcpy(o + np, s, n);
    o[np + n] = '\0';
    return o;
}

/* LAMBADA, Megatron's get_tokens: strict, the text up to the last whitespace-delimited word
 * (stripped) and ' ' + that word, each encoded alone; non-strict, the text encoded and its
 * last token the target.  Rows 2i (strict) and 2i + 1 (non-strict). */
g3_status_t g3_task_rows_lambada(g3_task_t *t, int64_t i)
{
    const g3_task_item_t *it = &t->items[i];
    const char *text = it->ctx[0];
    size_t n = strlen(text), wb = 0, we = 0, sp, start;
    char *beg, *word, *full;
    g3_status_t st;

    for (size_t p = 0; p < n;) {   /* text.split()[-1]: [wb, we) */
        sp = g3_task_space_len(text + p, n - p);
        if (sp) {
            p += sp;
            continue;
        }
        wb = p;
        while (p < n && !g3_task_space_len(text + p, n - p))
            p++;
        we = p;
    }
    /* text.rfind(last_word) is wb: only whitespace follows the last word */
    start = wb;
    beg = strndup(text, start);
    word = malloc(we - wb + 2);
    if (!beg || !word) {
        free(beg);
        free(word);
        return G3_ERR_NO_MEMORY;
    }
    g3_task_strip(beg);
    word[0] = ' ';
    memcpy(word + 1, text + wb, we - wb);
    word[we - wb + 1] = '\0';
    full = g3_task_prefixed(t, beg, strlen(beg));
    free(beg);
    st = full ? g3_task_encode(t, full, strlen(full), &t->enc_ctx) : G3_ERR_NO_MEMORY;
    free(full);
    if (st == G3_OK && t->enc_ctx.len == 0)
        st = g3_bpe_ids_push(&t->enc_ctx, t->eod);   /* a one-word text: after a document */
    if (st == G3_OK)
        st = g3_task_encode(t, word, strlen(word), &t->enc_all);
    free(word);
    if (st == G3_OK)
        st = g3_task_add_row(t, i, 0, t->enc_ctx.ids, t->enc_ctx.len, t->enc_all.ids,
                             t->enc_all.len, it->line);
    if (st != G3_OK)
        return st;
    full = g3_task_prefixed(t, text, n);
    st = full ? g3_task_encode(t, full, strlen(full), &t->enc_all) : G3_ERR_NO_MEMORY;
    free(full);
    if (st == G3_OK && t->enc_all.len == 1) {   /* one token: predicted after a document */
        t->enc_ctx.len = 0;
        st = g3_bpe_ids_push(&t->enc_ctx, t->eod);
        if (st == G3_OK)
            st = g3_task_add_row(t, i, 1, t->enc_ctx.ids, 1, t->enc_all.ids, 1, it->line);
        return st;
    }
    if (st == G3_OK)
        st = g3_task_add_row(t, i, 1, t->enc_all.ids, t->enc_all.len - 1,
                             t->enc_all.ids + t->enc_all.len - 1, 1, it->line);
    return st;
}

/* WikiText: the file detokenized and encoded whole; the windows of Megatron's _LMDataset
 * (start idx * stride, T + 1 tokens; the first window scores all its targets, the others
 * their last `stride`), the windows that score nothing left out. */
g3_status_t g3_task_rows_wikitext(g3_task_t *t)
{
    char *data = NULL, *detok = NULL;
    size_t len = 0, dlen = 0, bad, b = 0, e = 0, sp;
    int64_t N, targets, nwin, S = t->spec.stride > 0 ? t->spec.stride : t->T;
    g3_status_t st;

    if (S > t->T) {
        g3_error("--overlapping-eval %lld is longer than --seq-length %d: windows of %d tokens cannot advance by more than their length",
                 (long long)S, t->T, t->T);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_read_file(t->spec.data, "task file", &data, &len);
    if (st != G3_OK)
        return st == G3_ERR_NO_MEMORY ? st : G3_ERR_INVALID_ARG;
    bad = g3_utf8_validate(data, len);
    if (bad != len) {
        int line = 1;
        for (size_t p = 0; p < bad; p++)
            line += data[p] == '\n';
        g3_error("%s:%d: invalid UTF-8 (byte %zu of the file): wikitext103 reads the raw wiki.test.tokens, UTF-8",
                 t->spec.data, line, bad);
        free(data);
        return G3_ERR_INVALID_ARG;
    }
    /* len(text.strip().split(" ")): the spaces between the stripped ends, plus one */
    while (b < len && (sp = g3_task_space_len(data + b, len - b)) > 0)
        b += sp;
    for (size_t p = b; p < len;) {
        sp = g3_task_space_len(data + p, len - p);
        p += sp ? sp : 1;
        if (!sp)
            e = p;
    }
    t->orig_tokens = 1;
    for (size_t p = b; p < e; p++)
        t->orig_tokens += data[p] == ' ';
    st = g3_task_wikitext_detok(data, len, &detok, &dlen);
    free(data);
    if (st == G3_OK)
        st = g3_task_encode(t, detok, dlen, &t->enc_all);
    t->detok = detok;
    t->detok_len = dlen;
    if (st != G3_OK)
        return st;
    N = (int64_t)t->enc_all.len;
    t->bpe_tokens = N;
    if (N < 2) {
        g3_error("%s: %lld token%s after detokenization: nothing to score", t->spec.data,
                 (long long)N, N == 1 ? "" : "s");
        return G3_ERR_INVALID_ARG;
    }
    targets = N - 1 - S > 0 ? N - 1 - S : 0;
    nwin = (targets + S - 1) / S + 1;
    for (int64_t w = 0; w < nwin && st == G3_OK; w++) {
        int64_t start = w * S, len_w = N - start < t->T + 1 ? N - start : t->T + 1;
        int64_t from = w == 0 ? 0 : t->T - S;
        if (len_w - 1 <= from)
            continue;   /* nothing left to score (Megatron's window is all masked) */
        st = g3_task_add_row(t, 0, (int)w, t->enc_all.ids + start, (size_t)from + 1,
                             t->enc_all.ids + start + from + 1, (size_t)(len_w - from - 1), 1);
    }
    return st;
}

g3_status_t g3_task_rows_choices(g3_task_t *t, int64_t i)
{
    const g3_task_item_t *it = &t->items[i];
    g3_status_t st = G3_OK;

    for (int c = 0; c < it->nchoices && st == G3_OK; c++) {
        char *ctx = g3_task_prefixed(t, it->ctx[c], strlen(it->ctx[c]));
        char *cont = g3_task_concat(it->delim ? it->delim : G3_TASK_TARGET_SEP, it->cont[c],
                                    NULL);
        st = ctx && cont ? g3_task_request(t, i, c, ctx, cont, it->line) : G3_ERR_NO_MEMORY;
        free(ctx);
        free(cont);
    }
    return st;
}

/* A kind without items (rows_all): its rows from the whole file; no few-shot examples. */
static g3_status_t g3_task_build_all(g3_task_t *t)
{
    if (t->spec.num_fewshot > 0) {
        g3_error("%s is a perplexity task: it takes no few-shot examples; drop --num-fewshot for it",
                 t->kind->name);
        return G3_ERR_INVALID_ARG;
    }
    t->nitems = 1;
    return t->kind->rows_all(t);
}

/* A kind of items: the items (and --fewshot-data's), then each item's rows after its
 * few-shot examples. */
static g3_status_t g3_task_build_items(g3_task_t *t)
{
    const g3_task_spec_t *spec = &t->spec;
    g3_status_t st = g3_task_read_items(t->kind, spec->data, &t->items, &t->nitems);

    if (st == G3_OK && spec->fewshot_data && spec->num_fewshot > 0)
        st = g3_task_read_items(t->kind, spec->fewshot_data, &t->shots, &t->nshots);
    if (st != G3_OK)
        return st;
    if (spec->num_fewshot < 0 || spec->num_fewshot > 64 ||
        spec->num_fewshot > (t->shots ? t->nshots : t->nitems - 1)) {
        g3_error("--num-fewshot %d: the examples come from %s, which has %lld to draw from (at most 64)",
                 spec->num_fewshot, t->shots ? spec->fewshot_data : spec->data,
                 (long long)(t->shots ? t->nshots : t->nitems - 1));
        return G3_ERR_INVALID_ARG;
    }
    for (int64_t i = 0; i < t->nitems && st == G3_OK; i++) {
        st = g3_task_prefix(t, i);
        if (st == G3_OK)
            st = t->kind->rows(t, i);
    }
    if (st == G3_OK && t->truncated > 0)
        g3_warn("%s: %lld row%s longer than --seq-length %d + 1 tokens, cut on the left (the first at line %d); counted as \"truncated\" in the report",
                spec->data, (long long)t->truncated, t->truncated == 1 ? " is" : "s are", t->T,
                t->first_truncated_line);
    return st;
}

g3_status_t g3_task_build(const g3_task_kind_info_t *kind, const g3_task_spec_t *spec,
                          const g3_bpe_t *bpe, int T, g3_task_t **task_p)
{
    g3_task_t *t = calloc(1, sizeof(*t));
    const char *base;
    size_t nb;
    g3_status_t st;

    if (!t)
        return G3_ERR_NO_MEMORY;
    t->spec = *spec;
    t->kind = kind;
    t->bpe = bpe;
    t->T = T;
    t->eod = g3_bpe_eod_id(bpe) >= 0 ? g3_bpe_eod_id(bpe) : 0;
    base = strrchr(spec->data, '/') ? strrchr(spec->data, '/') + 1 : spec->data;
    nb = strcspn(base, ".");
    if (kind->named_by_file)
        snprintf(t->name, sizeof(t->name), "%s:%.*s", kind->name, (int)(nb < 100 ? nb : 100),
                 base);
    else
        snprintf(t->name, sizeof(t->name), "%s", kind->name);
    st = g3_bpe_cache_init(&t->cache);
    if (st == G3_OK)
        st = kind->fields ? g3_task_build_items(t) : g3_task_build_all(t);
    if (st != G3_OK)
        goto err_free_task;
    *task_p = t;
    return G3_OK;

err_free_task:
    if (st == G3_ERR_NO_MEMORY)
        g3_error("%s: out of memory building the task's rows", spec->data);
    if (st == G3_ERR_FORMAT)
        st = G3_ERR_INVALID_ARG;
    g3_task_free(t);
    return st;
}

void g3_task_free(g3_task_t *t)
{
    if (!t)
        return;
    g3_task_items_free(t->items, t->nitems);
    g3_task_items_free(t->shots, t->nshots);
    g3_bpe_cache_free(t->cache);
    g3_bpe_ids_free(&t->ids);
    g3_bpe_ids_free(&t->enc_ctx);
    g3_bpe_ids_free(&t->enc_all);
    g3_buf_free(&t->prefix);
    free(t->rows);
    free(t->res);
    free(t->detok);
    free(t);
}

const char *g3_task_name(const g3_task_t *t)
{
    return t->name;
}

int64_t g3_task_items(const g3_task_t *t)
{
    return t->nitems;
}

int64_t g3_task_rows(const g3_task_t *t)
{
    return t->nrows;
}

int64_t g3_task_tokens(const g3_task_t *t)
{
    int64_t n = 0;
    for (int64_t r = 0; r < t->nrows; r++)
        n += t->rows[r].len - 1;
    return n;
}

void g3_task_show_prompt(const g3_task_t *t, const g3_bpe_t *bpe, FILE *out)
{
    const g3_task_row_t *r = &t->rows[0];
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;

    if (g3_bpe_decode(bpe, t->ids.ids + r->off, (size_t)r->from + 1, &a, &na) == G3_OK &&
        g3_bpe_decode(bpe, t->ids.ids + r->off + r->from + 1, (size_t)(r->len - r->from - 1),
                      &b, &nb) == G3_OK) {
        fprintf(out, "%s: the prompt of item 0 (%d tokens%s), then [the scored continuation]:\n",
                t->name, r->len, r->truncated ? ", cut on the left" : "");
        fwrite(a, 1, na, out);
        fputs("[", out);
        fwrite(b, 1, nb, out);
        fputs("]\n", out);
        fflush(out);
    }
    free(a);
    free(b);
}

void g3_task_set_free(g3_task_set_t *set)
{
    for (int i = 0; i < set->n; i++)
        g3_task_free(set->tasks[i]);
    free(set->tasks);
    g3_bpe_free(set->bpe);
    free(set->spec_copy);
    memset(set, 0, sizeof(*set));
}
