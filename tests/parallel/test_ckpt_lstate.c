/* The linear layers' per-tensor backend state (model/gpt.h g3_gpt_lstate_t, backend.h's
 * linear_state_bytes) on the CPU backend: its row's size of 0 allocates nothing and writes
 * no dataset (checkpoints as before); a test row with a non-zero size gets one zeroed state
 * per linear layer, which the passes hand to the matmul ops of that layer (the output layer
 * none); a checkpoint saves it as backend_state/<layer> and a load restores it byte for
 * byte; a checkpoint without it (saved at size 0) loads with the state reset, and a model
 * without state loads a checkpoint that has one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ckpt/ckpt.h"
#include "gpt_small.h"
#include "model/gpt.h"
#include "parallel/par_ckpt.h"
#include "tap.h"

#define L_TEST  2
#define B_TEST  2
#define T_TEST  8
#define STATE_BYTES 40   /* the test row's bytes per linear layer (rounded to 64 in the buffer) */

static size_t g3t_state_bytes(const g3_be_opts_t *o, int IC, int OC)
{
    (void)o, (void)IC, (void)OC;
    return STATE_BYTES;
}

/* The matmul ops of the CPU, recording the state each call gets: hits[k] for state k of the
 * model under test (by its offset), nulls for calls without one. */
static g3_backend_ops_t g3t_ops;
static const g3_backend_ops_t *g3t_cpu;
static const g3_gpt_t *g3t_model;
static int g3t_hits[2][L_TEST * G3_GPT_LINS], g3t_nulls[2];

static void g3t_record(void *state, int bwd)
{
    if (!state) {
        g3t_nulls[bwd]++;
        return;
    }
    for (int k = 0; k < g3t_model->nlstates; k++)
        if (state == (char *)g3t_model->lstate + g3t_model->lstates[k].offset)
            g3t_hits[bwd][k]++;
}

static void g3t_matmul_fwd(g3_backend_t *be, void *state, void *out, const void *inp,
                           const void *w, const void *bias, int N, int IC, int OC)
{
    g3t_record(state, 0);
    g3t_cpu->matmul_fwd(be, state, out, inp, w, bias, N, IC, OC);
}

static void g3t_matmul_bwd(g3_backend_t *be, void *state, void *dinp, float *dw, float *dbias,
                           const void *dout, const void *inp, const void *w, int N, int IC,
                           int OC)
{
    g3t_record(state, 1);
    g3t_cpu->matmul_bwd(be, state, dinp, dw, dbias, dout, inp, w, N, IC, OC);
}

/* One forward and backward of m on fixed tokens.  RET: G3_OK or the pass's error. */
static g3_status_t g3t_pass(g3_gpt_t *m)
{
    int32_t tok[B_TEST * T_TEST];
    g3_gpt_acts_t *a = NULL;
    double loss = 0.0;
    g3_status_t st;

    for (int i = 0; i < B_TEST * T_TEST; i++)
        tok[i] = (i * 7 + 3) % m->cfg.vocab_size;
    st = g3_gpt_acts_init(m, B_TEST, T_TEST, &a);
    if (st == G3_OK)
        st = g3_gpt_forward(m, a, tok, tok, B_TEST, T_TEST, 1.0f, &loss);
    if (st == G3_OK)
        st = g3_gpt_backward(m, a);
    if (a)
        g3_gpt_acts_free(m, a);
    return st;
}

/* Save m's state (parameters and linear states, no optimizer) as iteration 1 under dir.
 * RET: the save's status. */
static g3_status_t g3t_save(g3_gpt_t *m, const char *dir)
{
    g3_ckpt_save_opts_t so = { .save_id = "t" };
    g3_ckpt_state_t *state = NULL;
    g3_par_ckpt_t t;
    g3_status_t st = g3_par_ckpt_init(&t, m, NULL, 1, 0);

    if (st == G3_OK)
        st = g3_par_ckpt_describe(&t, m, 1, 0, &state);
    if (st == G3_OK) {
        g3_ckpt_state_set_progress(state, 1, 0, 0);
        st = g3_ckpt_save(dir, state, &so, NULL);
    }
    g3_ckpt_state_free(state);
    g3_par_ckpt_free(&t);
    return st;
}

/* Load dir's checkpoint into m (the model alone).  OUT: *ntensors_p, the tensors it holds.
 * RET: the load's status. */
static g3_status_t g3t_load(g3_gpt_t *m, const char *dir, int *ntensors_p)
{
    g3_ckpt_load_opts_t lo;
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_state_t *state = NULL;
    g3_par_ckpt_t t;
    g3_status_t st = g3_par_ckpt_init(&t, m, NULL, 1, 0);

    memset(&lo, 0, sizeof(lo));
    if (st == G3_OK)
        st = g3_par_ckpt_describe(&t, m, 0, 0, &state);
    if (st == G3_OK)
        st = g3_ckpt_load(dir, state, &lo, NULL, &r);
    if (st == G3_OK)
        st = g3_par_ckpt_apply(&t, m, r, 0, 0);
    g3_ckpt_reader_close(r);
    r = NULL;
    if (st == G3_OK && g3_ckpt_reader_open(dir, &r) == G3_OK)
        *ntensors_p = g3_ckpt_reader_tensor_count(r);
    g3_ckpt_reader_close(r);
    g3_ckpt_state_free(state);
    g3_par_ckpt_free(&t);
    return st;
}

/* RET: 1 when m's linear states hold (i * 7 + 1) & 255 at every byte i of the buffer
 * (pattern 1) or are all zero (pattern 0). */
static int g3t_state_is(const g3_gpt_t *m, int pattern)
{
    unsigned char *h = malloc(m->lstate_bytes);
    int ok = h != NULL;

    if (ok)
        m->be->ops->download(m->be, h, m->lstate, m->lstate_bytes);
    for (int k = 0; ok && k < m->nlstates; k++)   /* the states' bytes, not the gaps */
        for (size_t i = m->lstates[k].offset; ok && i < m->lstates[k].offset + STATE_BYTES; i++)
            ok = h[i] == (pattern ? (unsigned char)((i * 7 + 1) & 255) : 0);
    free(h);
    return ok;
}

static void g3t_state_fill(g3_gpt_t *m)
{
    unsigned char *h = malloc(m->lstate_bytes);

    if (!h)
        return;
    for (size_t i = 0; i < m->lstate_bytes; i++)
        h[i] = (unsigned char)((i * 7 + 1) & 255);
    m->be->ops->upload(m->be, m->lstate, h, m->lstate_bytes);
    free(h);
}

/* The recorded states: every linear state once in each direction, the output layer NULL. */
static void g3t_check_ops(void)
{
    int once = 1;

    for (int d = 0; d < 2; d++)
        for (int k = 0; k < L_TEST * G3_GPT_LINS; k++)
            once &= g3t_hits[d][k] == 1;
    tap_ok(once, "forward and backward pass each of the %d linear states to its layer's matmul once",
           L_TEST * G3_GPT_LINS);
    tap_ok(g3t_nulls[0] >= 1 && g3t_nulls[1] >= 1,
           "the output layer's products get no state (%d forward, %d backward)", g3t_nulls[0],
           g3t_nulls[1]);
}

int main(void)
{
    char tmpl[] = "/tmp/gpt3d-lstate.XXXXXX", d0[600], d1[600], cmd[700];
    g3_be_kind_info_t row;
    g3_backend_t *be0 = NULL, *be1 = NULL;
    g3_gpt_t *m0 = NULL, *m1 = NULL;
    g3_gpt_config_t cfg;
    int n0 = 0, n1 = 0, ok;

    if (!mkdtemp(tmpl))
        return 1;
    snprintf(d0, sizeof(d0), "%s/zero", tmpl);
    snprintf(d1, sizeof(d1), "%s/state", tmpl);
    g3t_gpt_small(&cfg, L_TEST, 16, 2, T_TEST, 50);
    g3_be_open(G3_BE_KIND_CPU, NULL, &be0);
    g3_be_open(G3_BE_KIND_CPU, NULL, &be1);
    if (!be0 || !be1)
        return 1;

    /* the CPU's row: no state */
    tap_ok(g3_gpt_init(&cfg, be0, &m0) == G3_OK && m0->lstate_bytes == 0 && !m0->lstate &&
               m0->nlstates == L_TEST * G3_GPT_LINS && !g3_gpt_lstate(m0, 1, G3_GPT_LIN_FC2) &&
               g3_be_linear_state_bytes(be0, 16, 48) == 0,
           "the CPU's row: %d linear layers, no state allocated", L_TEST * G3_GPT_LINS);
    if (!m0)
        return 1;

    /* a test row with STATE_BYTES per linear layer, and matmul ops that record the states */
    row = *be1->kind;
    row.linear_state_bytes = g3t_state_bytes;
    be1->kind = &row;
    g3t_cpu = be1->ops;
    g3t_ops = *be1->ops;
    g3t_ops.matmul_fwd = g3t_matmul_fwd;
    g3t_ops.matmul_bwd = g3t_matmul_bwd;
    be1->ops = &g3t_ops;
    tap_ok(g3_gpt_init(&cfg, be1, &m1) == G3_OK && m1->lstate &&
               m1->lstate_bytes == (size_t)L_TEST * G3_GPT_LINS * 64 &&
               m1->lstates[5].bytes == STATE_BYTES && m1->lstates[5].offset == 5 * 64 &&
               strcmp(m1->lstates[5].name, "layers.1.attention.dense") == 0 &&
               g3_gpt_lstate(m1, 1, G3_GPT_LIN_PROJ) == (char *)m1->lstate + 5 * 64,
           "a row of %d bytes: one 64-byte-aligned state per linear layer, named for it",
           STATE_BYTES);
    if (!m1)
        return 1;
    tap_ok(g3t_state_is(m1, 0), "the states start as zero bytes (the fresh state)");
    g3t_model = m1;
    tap_ok(g3t_pass(m1) == G3_OK, "a forward and backward pass with the states");
    g3t_check_ops();

    /* save and load: byte for byte */
    g3t_state_fill(m1);
    ok = g3t_save(m1, d1) == G3_OK;
    g3_gpt_lstate_reset(m1);
    ok = ok && g3t_load(m1, d1, &n1) == G3_OK;
    tap_ok(ok && g3t_state_is(m1, 1) && n1 == m1->nparams + m1->nlstates,
           "saved and loaded: the states come back byte for byte (%d tensors)", n1);

    /* a checkpoint without state (size 0) writes only the parameters; loads reset the state */
    ok = g3t_save(m0, d0) == G3_OK;
    g3t_state_fill(m1);
    ok = ok && g3t_load(m1, d0, &n0) == G3_OK;
    tap_ok(ok && n0 == m0->nparams && g3t_state_is(m1, 0),
           "a checkpoint of a stateless row holds only the %d parameters and loads with the states reset",
           n0);
    tap_ok(g3t_load(m0, d1, &n1) == G3_OK,
           "a model without state loads a checkpoint that has one (its datasets unused)");

    g3_gpt_free(m1);
    g3_gpt_free(m0);
    g3_be_close(be1);
    g3_be_close(be0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmpl);
    return tap_exit();
}
