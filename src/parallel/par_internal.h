/* gpt3d parallel: internals shared by layout.c, engine.c and optim.c.  Glossary in par.h. */
#ifndef G3_PARALLEL_PAR_INTERNAL_H
#define G3_PARALLEL_PAR_INTERNAL_H

#include "parallel/par.h"
#include "topo/topo.h"

/* The groups that move backend buffers (activations, gradients, parameters) along each
 * axis. */
typedef struct {
    g3_comm_t *tp, *pp, *dp, *emb;
} g3_par_groups_t;

struct g3_par {
    g3_comm_world_t *world;      /* borrowed                                            */
    g3_topo_plan_t  *plan;
    g3_par_layout_t  layout;
    char           **hostnames;  /* (nhosts) the job's nodes, for the rank table        */
    int              nhosts;
    /* host (UCX) groups: backend buffers of the CPU backend, and host data of every
     * backend (cross-entropy statistics on the host, logits of the sample, control) */
    g3_comm_t       *tp, *pp, *dp, *emb, *all;
    g3_par_groups_t  dev;        /* NCCL groups for a GPU backend (g3_par_set_backend), or
                                  * NULLs                                                */
    g3_par_groups_t  buf;        /* the groups for backend buffers: dev when made, else
                                  * the host groups                                      */
    g3_comm_dtype_t  act;        /* activations on the wire: FLOAT32 or BFLOAT16        */
    int              act_esize;  /* bytes per activation element                         */
};

/* A range of the flat buffers this rank updates: the elements [begin, end) of the
 * parameters, whose reduced gradient is at g and Adam moments at m, v (backend memory,
 * (end - begin,) each). */
typedef struct {
    size_t begin, end;
    float *g, *m, *v;
    int    in_norm;      /* its elements count in the global norm on this rank          */
} g3_par_piece_t;

/* A range of the flat gradient buffer reduced over DP in one call.  Under ZeRO-1 DP rank r
 * owns [off + r q, off + (r+1) q) (reduce-scatter, update, all-gather) and every rank
 * updates the rem = len - DP q elements at the end (all-reduced) itself. */
typedef struct {
    size_t off, len;
    size_t q, rem;
    size_t so;           /* offset of its state (m, v, shard) in the state buffers       */
} g3_par_segment_t;

typedef struct {
    g3_train_adamw_config_t cfg;
    int               zero;          /* ZeRO-1                                           */
    g3_par_segment_t  seg[3];        /* before, [the word embedding], after              */
    int               nseg;
    g3_par_piece_t   *pieces;        /* (npieces,)                                       */
    int               npieces;
    size_t            state_numel;   /* elements of m (and v, and the ZeRO-1 gradient shard) */
    float            *m, *v;         /* (state_numel,) backend memory                    */
    float            *gshard;        /* (state_numel,) ZeRO-1 reduced gradients, or NULL */
    g3_train_adamw_run_t *runs;      /* (nruns,) weight-decay runs tiling the flat buffer */
    int               nruns;
    int64_t           step;
    /* --grad-reduce-in-bf16: the DP reductions move bf16 copies of the gradients */
    int               bf16_reduce;
    uint16_t         *g16;           /* (longest segment,) bf16 backend memory, or NULL  */
    uint16_t         *s16;           /* (longest shard q,) bf16 backend memory (ZeRO-1)  */
    /* the norm and clipping scale in backend memory when the backend has sumsq_acc,
     * clip_scale and adamw_scaled (g3_be_clip_alloc, backend.h), else NULL */
    double           *dsumsq;        /* (1,) fp64 backend memory                         */
    float            *dscale;        /* (1,) fp32 backend memory, in dsumsq's allocation */
} g3_par_optim_t;

struct g3_par_engine {
    g3_par_t        *par;
    g3_gpt_t        *model;
    int              B, T;
    int              nsets;          /* activation sets: micro-batches in flight         */
    g3_gpt_acts_t  **sets;           /* (nsets,)                                         */
    g3_par_optim_t   opt;
    const char      *grad_dump_dir;
    /* pipeline timing */
    double           t_sched, t_compute;
    int64_t          last_m;
};

/* optim.c */
g3_status_t g3_par_optim_init(g3_par_engine_t *eng, const g3_par_engine_config_t *cfg);
void g3_par_optim_free(g3_par_engine_t *eng);
/* After the schedule: reduce the gradients (embedding group, DP), dump them when asked,
 * compute the global norm, and (when finite) clip and update.  OUT: *norm_p.
 * RET: G3_ERR_NUMERIC for a NaN/infinite norm (nothing updated), comm errors. */
g3_status_t g3_par_optim_step(g3_par_engine_t *eng, double lr, int64_t iteration,
                              double *norm_p);

#endif
