/* gpt3d parallel: a rank's model and optimizer state in and out of checkpoints (src/ckpt) by
 * global offsets, so that a checkpoint saved under any TP x PP x DP layout loads into this
 * process's layout.  Shared by the trainer's saves and resume (train/train_ckpt.c) and by the
 * model alone of gpt3d eval and gpt3d generate (infer/ckpt_model.c).
 *
 * What a rank describes (docs/checkpoints.md): every parameter it holds ("model/<name>", fp32,
 * which on the CPU backend are the master weights) and Adam's m and v
 * ("optim/exp_avg/<name>", "optim/exp_avg_sq/<name>": the rank's ZeRO-1 shard or, replicated
 * over DP, DP rank 0's copy) of the engine's optimizer ranges (g3_par_engine_optim_ranges),
 * and each linear layer's per-tensor backend state that has bytes ("backend_state/<name>",
 * u8 (TP, bytes): one row per TP rank, the same on every DP replica; g3_gpt_lstate_t).  A
 * checkpoint without a layer's state (every one saved while its size was 0), or with it at
 * another size or TP, loads with that state reset, said once.
 *
 * A load is three steps, so that the caller can run its own checks on the opened checkpoint
 * before anything reaches the model: g3_par_ckpt_init (host copies), g3_par_ckpt_read (the
 * checkpoint into them), g3_par_ckpt_apply (checks, then into the backend's buffers).
 * g3_par_ckpt_read adds its describe phase to lo->timing (the library the rest of its own).
 * Glossary: TP, PP, DP sizes; tp, pp, dp a rank's coordinates; "range" = a range of the flat
 * parameter buffer whose Adam moments this rank holds. */
#ifndef G3_PARALLEL_PAR_CKPT_H
#define G3_PARALLEL_PAR_CKPT_H

#include <stdint.h>

#include "ckpt/ckpt.h"
#include "core/status.h"
#include "model/gpt.h"
#include "parallel/par.h"

/* Host copies of what is saved or loaded (the backend's memory may be a device's), and the
 * state describing them.  Owned by the caller's stack; g3_par_ckpt_free releases what the
 * functions below allocated. */
typedef struct {
    g3_par_optim_range_t r[G3_PAR_OPTIM_RANGES_MAX];   /* backend pointers                  */
    float   *hm[G3_PAR_OPTIM_RANGES_MAX];               /* (end - begin,) host copies of m   */
    float   *hv[G3_PAR_OPTIM_RANGES_MAX];               /* (end - begin,) host copies of v   */
    int      n;                                         /* ranges (0: the model alone)       */
    int64_t *step;                                      /* the engine's Adam step, or NULL   */
    float   *hw;                                        /* (numel,) host copy of parameters */
    uint8_t *hs;   /* (lstate_bytes,) host copy of the linear layers' backend state, or NULL */
    int      stage_first[1025];                         /* PP + 1 layer boundaries           */
    g3_ckpt_layout_t layout;                            /* this rank's                       */
    g3_ckpt_state_t *state;                             /* g3_par_ckpt_read's, or NULL       */
    int      staged;   /* hw, hm, hv lie in a g3_par_ckpt_stage_t: not freed here            */
} g3_par_ckpt_t;

/* The host area a trainer's saves (and its resume) copy its state into: allocated once,
 * through the backend's host_alloc (page-locked memory on CUDA, so the device-to-host copies
 * run at the bus's speed) else malloc, and reused by every later save, so that no save
 * allocates or faults in fresh memory and an asynchronous save's writer thread writes straight
 * from it (no second host copy).  It holds this rank's parameters and the Adam moments of its
 * ranges side by side.  Pinning memory takes seconds per GiB, so the trainer starts the
 * allocation in a background thread when it opens (g3_par_ckpt_stage_start) and the first use
 * waits for what is left of it (g3_par_ckpt_stage_ready).  Owned by the trainer: free it with
 * g3_par_ckpt_stage_free before closing the backend.  Zero-initialise it. */
struct g3_par_ckpt_stage_bg;   /* a background allocation in flight (par_ckpt.c) */
typedef struct {
    g3_backend_t *be;       /* whose host_alloc made buf (NULL: malloc)                     */
    float        *buf;      /* (floats,)                                                     */
    size_t        floats;
    double        alloc_s;  /* seconds the last allocation took (pinning memory is slow)     */
    int           background;  /* buf was allocated by the background thread                 */
    int           plain;    /* host_alloc failed: buf is plain memory (said once)            */
    int           announced;   /* the user was told what the stage costs (the caller's flag) */
    struct g3_par_ckpt_stage_bg *bg;   /* g3_par_ckpt_stage_start's thread, or NULL          */
} g3_par_ckpt_stage_t;

/* The floats a stage needs for model's parameters, its linear layers' backend state and eng's
 * ranges (NULL: the model alone). */
size_t g3_par_ckpt_stage_floats(const g3_gpt_t *model, g3_par_engine_t *eng);
/* Start allocating `floats` for s in a background thread through be's host_alloc (safe from
 * any thread, backend.h), so that the allocation overlaps the trainer's start and first
 * iterations instead of stalling its first save; a backend without host_alloc gets plain
 * memory here (malloc is lazy: nothing to overlap).  Nothing when s already holds that much
 * or a thread is in flight.  A thread that cannot be started is said (a warning): the first
 * use allocates then. */
void g3_par_ckpt_stage_start(g3_par_ckpt_stage_t *s, g3_backend_t *be, size_t floats);
/* RET: 1 when s has memory or a background allocation in flight (it is to be used). */
int g3_par_ckpt_stage_scheduled(const g3_par_ckpt_stage_t *s);
/* Make s hold at least `floats`: wait for the background allocation, or allocate here (its
 * contents are not kept).  Page-locked memory that cannot be had (the backend said why) is
 * replaced by plain memory, said once, so that saves go on more slowly.  RET:
 * G3_ERR_NO_MEMORY (logged). */
g3_status_t g3_par_ckpt_stage_ready(g3_par_ckpt_stage_t *s, g3_backend_t *be, size_t floats);
/* Wait for a background allocation in flight, then free the memory. */
void g3_par_ckpt_stage_free(g3_par_ckpt_stage_t *s);

/* The world's all-reduce (min) for src/ckpt's agreements (g3_ckpt_comm_t); ctx: the g3_par_t. */
g3_status_t g3_par_ckpt_allreduce_min(void *ctx, int *value);

/* Fill t: the layout of model (its tp/pp position, dp_size replicas of which this is dp_rank),
 * the optimizer ranges of eng (NULL: the model alone) and host copies of the parameters and
 * moments.  RET: G3_ERR_UNSUPPORTED, G3_ERR_INVALID_ARG, G3_ERR_NO_MEMORY (logged; t freed). */
g3_status_t g3_par_ckpt_init(g3_par_ckpt_t *t, g3_gpt_t *model, g3_par_engine_t *eng,
                             int dp_size, int dp_rank);
/* g3_par_ckpt_init with the host copies in `stage` (made ready with g3_par_ckpt_stage_ready;
 * NULL: malloc as g3_par_ckpt_init): t borrows the stage's memory until the next call that
 * uses the stage.  tm: NULL, or the host memory (the stage's readiness, or the allocations)
 * is added to its stage_alloc phase and the copies from the backend to its d2h. */
g3_status_t g3_par_ckpt_init_staged(g3_par_ckpt_t *t, g3_gpt_t *model, g3_par_engine_t *eng,
                                    int dp_size, int dp_rank, g3_par_ckpt_stage_t *stage,
                                    g3_ckpt_timing_t *tm);
void g3_par_ckpt_free(g3_par_ckpt_t *t);

/* The host copies' first non-finite value (NaN or infinity): RET what holds it
 * ("parameters", "Adam first moments", ...; the moments only with with_optim) with its
 * element in *at_p, or NULL when every value is finite.  numel: the parameters in t->hw. */
const char *g3_par_ckpt_nonfinite(const g3_par_ckpt_t *t, size_t numel, int with_optim,
                                  size_t *at_p);
/* RET: the index of the first NaN or infinity of x[0..n), or n.  A branch-free test of the
 * exponent bits over blocks, the blocks spread over the OpenMP threads (one thread below a
 * few MiB); only a block that holds one is searched for its first.  x (n,) */
size_t g3_par_ckpt_first_nonfinite(const float *x, size_t n);

/* Describe this rank's state: every parameter it holds and, with_optim, the Adam moments of
 * the ranges it holds (saving: only those it owns, so each element is written once).
 * OUT: *state_p (free with g3_ckpt_state_free). */
g3_status_t g3_par_ckpt_describe(const g3_par_ckpt_t *t, const g3_gpt_t *model, int saving,
                                 int with_optim, g3_ckpt_state_t **state_p);

/* Read dir's checkpoint (g3_ckpt_load with lo; its optimizer unless lo->no_load_optim) into
 * t's host copies; collective over par (one rank alone: its 1 x 1 x 1 layout).  Each
 * candidate checkpoint (with lo->fallback, the older ones too) must pass, besides lo's own
 * checks: the index's consumed samples agree with the checksummed copies under /state, a
 * format-version-2+ index records state/rng, and every value read is finite (a NaN
 * checkpoint is named as the cause).
 * OUT: *reader_p (close with g3_ckpt_reader_close before g3_par_ckpt_free).  RET: load errors
 * (logged, naming the file and the dataset). */
g3_status_t g3_par_ckpt_read(g3_par_ckpt_t *t, const g3_gpt_t *model, const char *dir,
                             const g3_ckpt_load_opts_t *lo, g3_par_t *par,
                             g3_ckpt_reader_t **reader_p);

/* After the caller's checks: warn when the checkpoint's seed is not model's, then upload the
 * parameters, the backend state (reset, said once, where the checkpoint has none of a layer's)
 * and, with_optim, the Adam moments into the backend's buffers and set the engine's step to
 * `step`.  RET: backend errors. */
g3_status_t g3_par_ckpt_apply(g3_par_ckpt_t *t, g3_gpt_t *model, g3_ckpt_reader_t *r,
                              int with_optim, int64_t step);

#endif
