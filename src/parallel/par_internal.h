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
    g3_par_groups_t  dev;        /* NCCL or staged groups for a GPU backend
                                  * (g3_par_set_backend), or NULLs                       */
    g3_par_groups_t  buf;        /* the groups for backend buffers: dev when made, else
                                  * the host groups                                      */
    g3_comm_dtype_t  act;        /* activations on the wire: FLOAT32 or BFLOAT16        */
    int              act_esize;  /* bytes per activation element                         */
    int              devices;    /* distinct devices holding the buffers (GPU backends:
                                  * g3_par_set_backend), 0 for host memory                */
};

/* Tensors adjacent in the flat buffer with the same weight decay, updated in one pass. */
typedef struct {
    size_t begin, end;     /* element range in the flat buffers */
    int    weight_decay;
} g3_par_adamw_run_t;

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
    int    bucket;       /* its bucket (bucketed reductions), else 0                      */
    g3_comm_req_t *req[2]; /* in flight: the reduce-scatter / all-reduce of [0, q DP) or
                          * all of it, and the all-reduce of the tail; or the all-gather  */
} g3_par_segment_t;

/* Bucketed reductions (--ddp-bucket-size, --overlap-grad-reduce): the segments of one
 * bucket start together, after the last micro-batch's backward produced their gradients.
 * Buckets are numbered in the order they start: the last layers first. */
#define G3_PAR_BUCKETS_MAX 12
#define G3_PAR_TRIGGER_END (-1)   /* after the whole backward (embedding, layer 0, ...)   */
#define G3_PAR_TRIGGER_EMB (-2)   /* the tied word embedding (PP > 1): after the sum of
                                   * its two copies over the emb group                    */
typedef struct {
    int trigger;         /* local layer whose backward completes it, or G3_PAR_TRIGGER_*  */
    int fwd_layer;       /* ZeRO-1 parameter all-gather: the first forward use (local
                          * layer, -1 the embedding, nl the head)                         */
    int started;
    int gathering;       /* its parameter all-gather is in flight (--overlap-param-gather) */
} g3_par_bucket_t;

typedef struct {
    g3_par_adamw_config_t cfg;
    int               zero;          /* ZeRO-1                                           */
    g3_par_segment_t *seg;           /* (nseg,) before, [the word embedding], after; or
                                      * the buckets' segments in offset order            */
    int               nseg;
    int               bucketed;      /* reductions per bucket, non-blocking collectives  */
    int               overlap;       /* --overlap-grad-reduce: started during backward   */
    int               param_overlap; /* --overlap-param-gather                           */
    int               armed;         /* the last micro-batch's backward is running       */
    g3_par_bucket_t  *buckets;       /* (nbuckets,)                                      */
    int               nbuckets;
    g3_par_piece_t   *pieces;        /* (npieces,)                                       */
    int               npieces;
    size_t            state_numel;   /* elements of m (and v, and the ZeRO-1 gradient shard) */
    float            *m, *v;         /* (state_numel,) backend memory                    */
    float            *gshard;        /* (state_numel,) ZeRO-1 reduced gradients, or NULL */
    g3_par_adamw_run_t *runs;      /* (nruns,) weight-decay runs tiling the flat buffer */
    int               nruns;
    int64_t           step;
    /* --grad-reduce-in-bf16: the DP reductions move bf16 copies of the gradients */
    int               bf16_reduce;
    uint16_t         *g16;           /* (longest segment,) bf16 backend memory, or NULL;
                                      * bucketed: (numel,) at the segments' offsets      */
    uint16_t         *s16;           /* (longest shard q,) bf16 backend memory (ZeRO-1);
                                      * bucketed: (state_numel,) at the segments' so     */
    /* the norm and clipping scale in backend memory when the backend has sumsq_acc,
     * clip_scale and adamw_scaled (g3_be_clip_alloc, backend.h), else NULL */
    double           *dsumsq;        /* (1,) fp64 backend memory                         */
    float            *dscale;        /* (1,) fp32 backend memory, in dsumsq's allocation */
} g3_par_optim_t;

struct g3_par_engine {
    g3_par_t        *par;
    g3_gpt_t        *model;
    int              B, T;
    int              nsets;          /* activation sets: micro-batches in flight, x V    */
    int              nchunks, csets; /* V model chunks (interleaved 1F1B); sets per chunk */
    int              sp;             /* sequence parallelism: LayerNorm grads over TP    */
    int64_t          max_micro;      /* interleaved: the m the sets were sized for       */
    struct g3_par_ilv_op *ilv_ops;   /* interleaved: this stage's program for ilv_m      */
    int64_t          ilv_nops, ilv_m;
    g3_gpt_acts_t  **sets;           /* (nsets,) chunk c's at [c csets, (c+1) csets)     */
    g3_par_optim_t   opt;
    const char      *grad_dump_dir;
    g3_timers_t     *timers;         /* --timing-log-level (borrowed), or NULL           */
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
/* Bucketed reductions: the backward hook (model hooks.bwd_layer; li = G3_PAR_TRIGGER_END
 * after the whole backward) starts the buckets li completes while the last micro-batch's
 * backward runs (opt.armed), and progresses the ones in flight. */
g3_status_t g3_par_optim_bwd_hook(void *ctx, int li);
/* --overlap-param-gather: the forward hook waits for the all-gathers of the buckets layer
 * li reads; g3_par_optim_gather_wait waits for every one still in flight. */
g3_status_t g3_par_optim_fwd_hook(void *ctx, int li);
g3_status_t g3_par_optim_gather_wait(g3_par_engine_t *eng);

#endif
