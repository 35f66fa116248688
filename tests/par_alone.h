/* Tests: one rank alone as the 1 x 1 x 1 layout of the parallel engine (src/parallel), the
 * trainer's only training path.  The world is a singleton (no launcher). */
#ifndef G3_TESTS_PAR_ALONE_H
#define G3_TESTS_PAR_ALONE_H

#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
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

#endif
