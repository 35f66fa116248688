/* src/infer: the token picker (greedy, temperature, top-k, top-p, seeded draws) against the
 * distributions it must sample from, and the generation loop on a small random GPT (stop
 * token, sliding context window, the per-token callback).  Glossary: V vocabulary, T
 * context. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "infer/infer.h"
#include "gpt_small.h"
#include "par_alone.h"
#include "tap.h"

#define NV 8

/* Frequencies of pick over n steps of seed.  OUT: freq (V,) */
static void frequencies(const float *logits, int V, const g3_infer_sampling_t *s, int n,
                        double *freq)
{
    g3_infer_cand_t cand[NV];
    memset(freq, 0, sizeof(double) * (size_t)V);
    for (int i = 0; i < n; i++)
        freq[g3_infer_pick(logits, V, s, (uint64_t)i, cand)] += 1.0 / n;
}

/* RET: 1 when the frequencies f of n draws hold only ids 1 and 0, as 0.5 : 0.3 (the others
 * never, id 1 within 5 sigma of 0.625) */
static int only_1_and_0(const double *f, int n)
{
    return f[2] == 0 && f[3] == 0 && fabs(f[1] - 0.625) < 5 * sqrt(0.625 * 0.375 / n);
}

static void test_pick(void)
{
    /* probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1, then four very unlikely */
    float logits[NV] = { logf(0.3f), logf(0.5f), logf(0.05f), logf(0.15f), -30, -30, -30, -30 };
    g3_infer_sampling_t s = { 0, 1.0, 0, 0.0, 7 };
    g3_infer_cand_t cand[NV];
    double f[NV], p_all[4] = { 0.3, 0.5, 0.05, 0.15 };
    int n = 20000, bad = 0;

    s.greedy = 1;
    tap_ok(g3_infer_pick(logits, NV, &s, 0, cand) == 1, "greedy picks the largest logit");
    s.greedy = 0;
    s.top_k = 1;
    tap_ok(g3_infer_pick(logits, NV, &s, 0, cand) == 1, "--top-k 1 is greedy");
    {
        float tie[4] = { 1, 3, 3, 0 };
        g3_infer_sampling_t g = { 1, 1.0, 0, 0.0, 7 };
        tap_ok(g3_infer_pick(tie, 4, &g, 0, cand) == 1, "greedy takes the first of equal logits");
    }
    {
        float pad[NV] = { 0, 1, 2, 0, 0, 0, 50, 50 };   /* ids 6, 7: padding, never picked */
        g3_infer_sampling_t g = { 1, 1.0, 0, 0.0, 7 };
        int hit = 0;
        tap_ok(g3_infer_pick(pad, 6, &g, 0, cand) == 2, "greedy ignores the padded ids >= V");
        g.greedy = 0;
        for (int i = 0; i < 2000; i++)
            hit += g3_infer_pick(pad, 6, &g, (uint64_t)i, cand) >= 6;
        tap_ok(hit == 0, "sampling never picks a padded id (%d of 2000)", hit);
    }

    /* the whole distribution: frequencies within 5 standard deviations */
    s.top_k = 0;
    frequencies(logits, NV, &s, n, f);
    for (int i = 0; i < 4; i++)
        if (fabs(f[i] - p_all[i]) > 5 * sqrt(p_all[i] * (1 - p_all[i]) / n))
            bad++;
    tap_ok(bad == 0, "temperature 1: frequencies %.3f %.3f %.3f %.3f match 0.3 0.5 0.05 0.15",
           f[0], f[1], f[2], f[3]);

    /* temperature 2: p ~ sqrt(p) renormalised */
    s.temperature = 2.0;
    frequencies(logits, NV, &s, n, f);
    {
        double z = 0, q[4];
        for (int i = 0; i < 4; i++)
            z += sqrt(p_all[i]);
        z += 4 * exp(-15.0);
        bad = 0;
        for (int i = 0; i < 4; i++) {
            q[i] = sqrt(p_all[i]) / z;
            if (fabs(f[i] - q[i]) > 5 * sqrt(q[i] * (1 - q[i]) / n))
                bad++;
        }
        tap_ok(bad == 0, "temperature 2 flattens: %.3f %.3f %.3f %.3f vs %.3f %.3f %.3f %.3f",
               f[0], f[1], f[2], f[3], q[0], q[1], q[2], q[3]);
    }
    s.temperature = 0.01;
    frequencies(logits, NV, &s, 2000, f);
    tap_ok(f[1] > 1.0 - 1e-9, "temperature 0.01 is (almost) greedy: %.4f", f[1]);

    /* top-k 2: only ids 1 and 0, as 0.5 : 0.3 */
    s.temperature = 1.0;
    s.top_k = 2;
    frequencies(logits, NV, &s, n, f);
    tap_ok(only_1_and_0(f, n), "--top-k 2 samples among the two likeliest (%.3f %.3f, others %.3f)",
           f[1], f[0], f[2] + f[3]);

    /* top-p 0.7: 0.5 alone is short of it, 0.5 + 0.3 reaches it: ids 1 and 0 */
    s.top_k = 0;
    s.top_p = 0.7;
    frequencies(logits, NV, &s, n, f);
    tap_ok(only_1_and_0(f, n), "--top-p 0.7 samples from the nucleus {1, 0} (%.3f %.3f, others %.3f)",
           f[1], f[0], f[2] + f[3]);
    s.top_p = 0.4;
    frequencies(logits, NV, &s, 1000, f);
    tap_ok(f[1] > 1.0 - 1e-9, "--top-p 0.4: the likeliest token alone reaches it");
    s.top_p = 0.9;
    s.top_k = 3;
    frequencies(logits, NV, &s, n, f);
    tap_ok(f[2] == 0 && f[3] > 0, "--top-k 3 then --top-p 0.9: the three likeliest");

    /* the draws: a function of (seed, step) */
    {
        g3_infer_sampling_t a = { 0, 1.0, 0, 0.0, 11 }, b = a;
        int same = 1, differ = 0;
        b.seed = 12;
        for (int i = 0; i < 200; i++) {
            int x = g3_infer_pick(logits, NV, &a, (uint64_t)i, cand);
            same &= x == g3_infer_pick(logits, NV, &a, (uint64_t)i, cand);
            differ += x != g3_infer_pick(logits, NV, &b, (uint64_t)i, cand);
        }
        tap_ok(same, "the same seed and step give the same token");
        tap_ok(differ > 20, "another seed gives other tokens (%d of 200 differ)", differ);
    }
}

typedef struct {
    size_t calls, last_len;
    size_t fail_at;   /* return an error at this call (0: never) */
} cb_t;

static g3_status_t on_token(void *ctx, const int32_t *ids, size_t len)
{
    cb_t *c = ctx;
    (void)ids;
    c->calls++;
    c->last_len = len;
    return c->fail_at && c->calls == c->fail_at ? G3_ERR_IO : G3_OK;
}

static int push(g3_bpe_ids_t *ids, const int32_t *src, size_t n)
{
    ids->ids = malloc(sizeof(int32_t) * (n + 64));
    if (!ids->ids)
        return 0;
    memcpy(ids->ids, src, sizeof(int32_t) * n);
    ids->len = n;
    ids->cap = n + 64;
    return 1;
}

static void test_generate(void)
{
    enum { T = 8, V = 50 };
    g3_backend_t *be = NULL;
    g3_gpt_config_t c;
    g3_gpt_t *m = NULL;
    g3_alone_t one = { NULL, NULL };
    g3_par_engine_t *eng = NULL;
    g3_infer_generate_opts_t o;
    g3_bpe_ids_t a = { 0 }, b = { 0 }, w = { 0 };
    int32_t prompt[2 * T];
    int made = 0, stopped = 0, k;
    cb_t cb = { 0, 0, 0 };
    g3_be_opts_t one_thread;
    g3_status_t st;

    g3_be_opts_default(&one_thread);
    one_thread.nthreads = 1;
    g3t_gpt_small(&c, 2, 16, 2, T, V);
    c.make_vocab_size_divisible_by = 8;
    c.init_method_std = 0.5f;   /* large weights: the greedy tokens vary */
    c.seed = 3;
    if (!tap_ok(g3_be_open(G3_BE_KIND_CPU, &one_thread, &be) == G3_OK &&
                g3_gpt_init(&c, be, &m) == G3_OK &&
                g3_alone_init(&one) == G3_OK &&
                g3_alone_engine(&one, m, 1, T, 1, NULL, &eng) == G3_OK,
                "a small random GPT on the one-rank layout"))
        goto out;
    {
        g3_infer_lm_t lm = { m, eng };
        for (int i = 0; i < 2 * T; i++)
            prompt[i] = (int32_t)((i * 7 + 3) % V);
        memset(&o, 0, sizeof(o));
        o.max_new_tokens = 12;
        o.context = T;
        o.vocab_size = V;
        o.stop_id = -1;
        o.sampling.greedy = 1;
        o.on_token = on_token;
        o.on_token_ctx = &cb;
        push(&a, prompt, 3);
        st = g3_infer_generate(&lm, &o, &a, &made, &stopped);
        tap_ok(st == G3_OK && made == 12 && !stopped && a.len == 15,
               "12 tokens after a 3-token prompt, past the context of %d (sliding window)", T);
        tap_ok(cb.calls == 12 && cb.last_len == 15, "the callback saw every token (%zu calls)",
               cb.calls);
        /* stop at the token generated at step k (its first occurrence) */
        for (k = 0; k < 12; k++) {
            int seen = 0;
            for (int j = 0; j < k; j++)
                seen |= a.ids[3 + j] == a.ids[3 + k];
            if (!seen && k > 0)
                break;
        }
        if (k < 12) {
            o.stop_id = a.ids[3 + k];
            o.on_token = NULL;
            push(&b, prompt, 3);
            st = g3_infer_generate(&lm, &o, &b, &made, &stopped);
            tap_ok(st == G3_OK && stopped && made == k && b.len == (size_t)(3 + k) &&
                   memcmp(a.ids, b.ids, sizeof(int32_t) * b.len) == 0,
                   "the stop token ends generation before it is appended (after %d tokens)", k);
        } else {
            tap_skip("every greedy token of this model is the same");
        }
        /* the window: a 2T-token prompt continues as its last T tokens alone would */
        g3_bpe_ids_free(&b);
        o.stop_id = -1;
        o.max_new_tokens = 1;
        push(&w, prompt, 2 * T);
        push(&b, prompt + T, T);
        st = g3_infer_generate(&lm, &o, &w, &made, NULL);
        st = st == G3_OK ? g3_infer_generate(&lm, &o, &b, &made, NULL) : st;
        tap_ok(st == G3_OK && w.ids[2 * T] == b.ids[T],
               "past the context the model sees the last %d tokens", T);
        /* a callback error stops and is returned */
        cb.calls = 0;
        cb.fail_at = 2;
        o.max_new_tokens = 5;
        o.on_token = on_token;
        st = g3_infer_generate(&lm, &o, &w, &made, NULL);
        tap_ok(st == G3_ERR_IO && made == 2, "a callback error stops generation (%s)",
               g3_status_string(st));
    }
out:
    g3_bpe_ids_free(&a);
    g3_bpe_ids_free(&b);
    g3_bpe_ids_free(&w);
    g3_par_engine_free(eng);
    g3_gpt_free(m);
    g3_be_close(be);
    g3_alone_free(&one);
}

int main(void)
{
    test_pick();
    test_generate();
    return tap_exit();
}
