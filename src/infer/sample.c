/* gpt3d infer: picking tokens, the generation loop, prompts and UTF-8-safe text (infer.h).
 * Glossary: T the context (positions the model sees), V vocabulary, Vp padded vocabulary. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/rng.h"
#include "infer/infer.h"

static int g3_infer_cand_desc(const void *a, const void *b)
{
    float x = ((const g3_infer_cand_t *)a)->v, y = ((const g3_infer_cand_t *)b)->v;
    return x > y ? -1 : x < y;
}

int32_t g3_infer_pick(const float *logits, int V, const g3_infer_sampling_t *s, uint64_t step,
                      g3_infer_cand_t *cand)
{
    int32_t best = 0;
    int k = s->top_k > 0 && s->top_k < V ? s->top_k : V;
    double z = 0.0, u, acc = 0.0;

    if (s->greedy || s->top_k == 1) {
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best])
                best = i;
        return best;
    }
    for (int i = 0; i < V; i++) {
        cand[i].v = logits[i];
        cand[i].id = i;
    }
    qsort(cand, (size_t)V, sizeof(*cand), g3_infer_cand_desc);
    for (int i = 0; i < k; i++)
        z += exp(((double)cand[i].v - cand[0].v) / s->temperature);
    if (s->top_p > 0.0 && s->top_p < 1.0) {
        /* the nucleus: the fewest candidates whose probability reaches top_p */
        double keep = 0.0;
        int n = 0;
        while (n < k) {
            keep += exp(((double)cand[n].v - cand[0].v) / s->temperature);
            n++;
            if (keep >= s->top_p * z)
                break;
        }
        k = n;
        z = keep;
    }
    u = g3_rng_uniform(s->seed, g3_rng_stream_from_name("generate"), step) * z;
    for (int i = 0; i < k; i++) {
        acc += exp(((double)cand[i].v - cand[0].v) / s->temperature);
        if (u <= acc)
            return cand[i].id;
    }
    return cand[k - 1].id;
}

/* Room for one more id.  RET: G3_ERR_NO_MEMORY (logged). */
static g3_status_t g3_infer_ids_reserve(g3_bpe_ids_t *ids)
{
    size_t cap;
    int32_t *grown;

    if (ids->len < ids->cap)
        return G3_OK;
    cap = ids->cap ? 2 * ids->cap : 64;
    grown = realloc(ids->ids, sizeof(int32_t) * cap);
    if (!grown) {
        g3_error("generate: out of memory for %zu token ids", cap);
        return G3_ERR_NO_MEMORY;
    }
    ids->ids = grown;
    ids->cap = cap;
    return G3_OK;
}

g3_status_t g3_infer_generate(const g3_infer_lm_t *lm, const g3_infer_generate_opts_t *o,
                              g3_bpe_ids_t *ids, int *new_p, int *stopped_p)
{
    float *logits = NULL;              /* (Vp,) the whole padded row */
    g3_infer_cand_t *cand = NULL;      /* (V,) */
    int made = 0, stopped = 0;
    g3_status_t st = G3_OK;

    if (ids->len == 0 || o->context < 1 || o->vocab_size < 1) {
        g3_error(
            "generate: nothing to continue (an empty prompt must be the end-of-document token; see g3_infer_encode_prompt)");
        return G3_ERR_INTERNAL;
    }
    logits = malloc(sizeof(float) * (size_t)lm->model->Vp);
    cand = malloc(sizeof(g3_infer_cand_t) * (size_t)o->vocab_size);
    if (!logits || !cand) {
        g3_error("generate: out of memory for the logits (%d floats)", lm->model->Vp);
        st = G3_ERR_NO_MEMORY;
        goto out_free;
    }
    for (int step = 0; step < o->max_new_tokens; step++) {
        size_t ctx = ids->len < (size_t)o->context ? ids->len : (size_t)o->context;
        int32_t next;
        st = g3_par_logits_last(lm->eng, ids->ids + ids->len - ctx, (int)ctx, logits);
        if (st != G3_OK)
            goto out_free;
        for (int v = 0; v < o->vocab_size; v++)
            if (!isfinite(logits[v])) {   /* no token can be picked from NaN */
                g3_error("generate: the model's logits hold NaN or infinity (token id %d, new token %d): the checkpoint's weights are not usable (saved from a diverged run?); load an earlier checkpoint",
                         v, step + 1);
                st = G3_ERR_FORMAT;
                goto out_free;
            }
        next = g3_infer_pick(logits, o->vocab_size, &o->sampling, (uint64_t)step, cand);
        if (next == o->stop_id) {
            stopped = 1;
            break;
        }
        st = g3_infer_ids_reserve(ids);
        if (st != G3_OK)
            goto out_free;
        ids->ids[ids->len++] = next;
        made++;
        if (o->on_token) {
            st = o->on_token(o->on_token_ctx, ids->ids, ids->len);
            if (st != G3_OK)
                goto out_free;
        }
    }
out_free:
    free(cand);
    free(logits);
    *new_p = made;
    if (stopped_p)
        *stopped_p = stopped;
    return st;
}

g3_status_t g3_infer_encode_prompt(const g3_bpe_t *bpe, const char *text, size_t len,
                                   const char *what, g3_bpe_ids_t *ids)
{
    g3_bpe_cache_t *cache = NULL;
    g3_status_t st;

    if (len > 0) {
        size_t bad = 0;
        st = g3_bpe_cache_init(&cache);
        if (st != G3_OK)
            return st;
        st = g3_bpe_encode(bpe, cache, text, len, ids, &bad);
        g3_bpe_cache_free(cache);
        if (st == G3_ERR_FORMAT) {
            g3_error("%s is not valid UTF-8 (byte %zu); pass UTF-8 text", what, bad);
            return st;
        }
        if (st != G3_OK)
            return st;
    }
    if (ids->len == 0) {   /* an empty prompt starts from end-of-document */
        int32_t eod = g3_bpe_eod_id(bpe);
        st = g3_infer_ids_reserve(ids);
        if (st != G3_OK)
            return st;
        ids->ids[ids->len++] = eod >= 0 ? eod : 0;
    }
    return G3_OK;
}

g3_status_t g3_infer_decode_text(const g3_bpe_t *bpe, const int32_t *ids, size_t n,
                                 char **text_p, size_t *len_p)
{
    char *text = NULL, *clean = NULL;
    size_t len = 0, clean_len = 0, replaced = 0;
    g3_status_t st;

    st = g3_bpe_decode(bpe, ids, n, &text, &len);
    if (st != G3_OK)
        return st;
    st = g3_utf8_sanitize(text, len, &clean, &clean_len, &replaced);
    if (st != G3_OK) {
        free(text);
        return st;
    }
    if (clean) {
        free(text);
        text = clean;
        len = clean_len;
    } else {   /* valid as it is: make sure it is NUL-terminated */
        char *t = realloc(text, len + 1);
        if (!t) {
            free(text);
            g3_error("generate: out of memory for the text (%zu bytes)", len);
            return G3_ERR_NO_MEMORY;
        }
        text = t;
        text[len] = '\0';
    }
    *text_p = text;
    *len_p = len;
    return G3_OK;
}

/* ---- streaming ------------------------------------------------------------------------------ */

void g3_infer_stream_init(g3_infer_stream_t *s, const g3_bpe_t *bpe, FILE *out)
{
    memset(s, 0, sizeof(*s));
    s->bpe = bpe;
    s->out = out;
}

void g3_infer_stream_free(g3_infer_stream_t *s)
{
    free(s->pending);
    s->pending = NULL;
    s->len = s->cap = 0;
}

/* RET: how many bytes at the end of p (len,) start a UTF-8 character that is not complete
 * yet but may be completed (a lead byte and fewer continuation bytes than it announces, all
 * of them allowed there); 0 when the text ends on a character boundary or on bytes no
 * continuation can make valid (those are written as U+FFFD now). */
static size_t g3_infer_utf8_tail(const unsigned char *p, size_t len)
{
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = p[len - back];
        size_t need;
        if ((c & 0xC0) == 0x80)
            continue;   /* a continuation byte: look further back */
        need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (need <= back)
            return 0;   /* complete, or not a lead byte at all */
        /* the second byte's narrower ranges (no overlongs, surrogates, > U+10FFFF) */
        if (back >= 2) {
            unsigned char c1 = p[len - back + 1];
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) ||
                (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
                return 0;
        }
        return back;
    }
    return 0;
}

/* Write p (len,) to out with invalid UTF-8 replaced.  RET: G3_ERR_IO when the write fails. */
static g3_status_t g3_infer_stream_write(g3_infer_stream_t *s, const char *p, size_t len)
{
    char *clean = NULL;
    size_t clean_len = 0, replaced = 0;
    g3_status_t st;

    if (len == 0)
        return G3_OK;
    st = g3_utf8_sanitize(p, len, &clean, &clean_len, &replaced);
    if (st != G3_OK)
        return st;
    if (fwrite(clean ? clean : p, 1, clean ? clean_len : len, s->out) !=
            (clean ? clean_len : len) || fflush(s->out) != 0) {
        int err = errno;
        free(clean);
        g3_error("generate: cannot write the text to the output: %s", strerror(err));
        return G3_ERR_IO;
    }
    free(clean);
    return G3_OK;
}

g3_status_t g3_infer_stream_update(g3_infer_stream_t *s, const int32_t *ids, size_t len)
{
    for (; s->done_ids < len; s->done_ids++) {
        size_t n = 0;
        const char *b = g3_bpe_token_bytes(s->bpe, ids[s->done_ids], &n);
        if (!b) {
            g3_error("generate: token id %d at position %zu is outside the vocabulary",
                     ids[s->done_ids], s->done_ids);
            return G3_ERR_INVALID_ARG;
        }
        if (s->len + n > s->cap) {
            size_t cap = s->cap ? s->cap : 256;
            char *grown;
            while (cap < s->len + n)
                cap *= 2;
            grown = realloc(s->pending, cap);
            if (!grown) {
                g3_error("generate: out of memory for the text (%zu bytes)", cap);
                return G3_ERR_NO_MEMORY;
            }
            s->pending = grown;
            s->cap = cap;
        }
        memcpy(s->pending + s->len, b, n);
        s->len += n;
    }
    {
        size_t hold = g3_infer_utf8_tail((const unsigned char *)s->pending, s->len);
        g3_status_t st = g3_infer_stream_write(s, s->pending, s->len - hold);
        if (st != G3_OK)
            return st;
        memmove(s->pending, s->pending + s->len - hold, hold);
        s->len = hold;
    }
    return G3_OK;
}

g3_status_t g3_infer_stream_finish(g3_infer_stream_t *s)
{
    g3_status_t st = g3_infer_stream_write(s, s->pending, s->len);
    s->len = 0;
    return st;
}
