/* Tests: one rank alone as the 1 x 1 x 1 layout of the parallel engine (src/parallel), the
 * trainer's only training path.  The world is a singleton (no launcher). */
#ifndef G3_TESTS_PAR_ALONE_H
#define G3_TESTS_PAR_ALONE_H

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "model/gpt.h"
#include "parallel/par.h"

typedef struct {
    g3_comm_world_t *world;
    g3_par_t        *par;
} g3_alone_t;

/* OUT: *a.  RET: G3_OK, or the world's or the layout's error (logged, or printed here). */
static inline g3_status_t g3_alone_init(g3_alone_t *a)
{
    char why[512];
    g3_status_t st;

    memset(a, 0, sizeof(*a));
    st = g3_comm_world_init(60.0, &a->world);
    if (st == G3_OK)
        st = g3_par_init(a->world, 1, 1, NULL, &a->par, why, sizeof(why));
    if (st == G3_ERR_INVALID_ARG)
        fprintf(stderr, "one-rank layout: %s\n", why);
    return st;
}

/* The trainer's engine for model on a's layout (B x T micro-batches, up to max_micro per
 * step; adamw NULL: forward only).  OUT: *eng_p. */
static inline g3_status_t g3_alone_engine(g3_alone_t *a, g3_gpt_t *model, int B, int T,
                                          int64_t max_micro, const g3_par_adamw_config_t *adamw,
                                          g3_par_engine_t **eng_p)
{
    g3_par_engine_config_t ecfg;
    g3_gpt_tp_comm_t tpc;

    memset(&ecfg, 0, sizeof(ecfg));
    if (adamw)
        ecfg.adamw = *adamw;
    ecfg.forward_only = adamw == NULL;
    ecfg.max_micro = max_micro;
    g3_par_tp_comm(a->par, &tpc);
    g3_gpt_set_tp_comm(model, &tpc);
    return g3_par_engine_init(a->par, model, B, T, &ecfg, eng_p);
}

static inline void g3_alone_free(g3_alone_t *a)
{
    g3_par_free(a->par);
    if (a->world)
        g3_comm_world_free(a->world);
    memset(a, 0, sizeof(*a));
}

/* A model of config cfg on the CPU backend with the trainer's engine on the one-rank layout
 * (the set-up of the benchmarks and the reference dump): the engine as g3_alone_engine (B x T
 * micro-batches, up to max_micro per step, adamw NULL: forward only), and with acts_B > 0 the
 * model's own activations for acts_B x T rows (g3_gpt_forward / g3_gpt_backward outside the
 * engine). */
typedef struct {
    g3_backend_t    *be;
    g3_gpt_t        *m;
    g3_gpt_acts_t   *acts;   /* NULL unless acts_B > 0 */
    g3_alone_t       one;
    g3_par_engine_t *eng;
} g3_alone_gpt_t;

/* OUT: *r (g3_alone_gpt_close frees what was made, after a failure too).  RET: G3_OK, or the
 * first error (logged). */
static inline g3_status_t g3_alone_gpt_open(g3_alone_gpt_t *r, const g3_gpt_config_t *cfg,
                                            int B, int T, int64_t max_micro,
                                            const g3_par_adamw_config_t *adamw, int acts_B)
{
    g3_status_t st;

    memset(r, 0, sizeof(*r));
    st = g3_be_open(G3_BE_KIND_CPU, NULL, &r->be);
    if (st == G3_OK)
        st = g3_alone_init(&r->one);
    if (st == G3_OK)
        st = g3_gpt_init(cfg, r->be, &r->m);
    if (st == G3_OK && acts_B > 0)
        st = g3_gpt_acts_init(r->m, acts_B, T, &r->acts);
    if (st == G3_OK)
        st = g3_alone_engine(&r->one, r->m, B, T, max_micro, adamw, &r->eng);
    return st;
}

static inline void g3_alone_gpt_close(g3_alone_gpt_t *r)
{
    g3_par_engine_free(r->eng);
    if (r->m) {
        g3_gpt_acts_free(r->m, r->acts);
        g3_gpt_free(r->m);
    }
    if (r->be)
        g3_be_close(r->be);
    g3_alone_free(&r->one);
    memset(r, 0, sizeof(*r));
}

#endif
