/* gpt3d train: saving and loading the training state through src/ckpt (internal to train).
 *
 * What a checkpoint of a training run holds (docs/checkpoints.md): every parameter this rank
 * holds ("model/<name>", fp32, which on the CPU backend are the master weights), Adam's m and
 * v ("optim/exp_avg/<name>", "optim/exp_avg_sq/<name>": the rank's ZeRO-1 shard or, replicated
 * over DP, DP rank 0's copy), and in /state: optimizer.step, lr, lr_scheduler (consumed
 * samples), batch_rampup (global batch, consumed samples), rng (seed), data_sampler
 * (consumed train samples, seed).  Every random draw and every batch is a function of the
 * seed and the consumed samples, so these scalars are the whole RNG and data state. */
#ifndef G3_TRAIN_TRAIN_CKPT_H
#define G3_TRAIN_TRAIN_CKPT_H

#include <stdint.h>

#include "ckpt/ckpt.h"
#include "core/status.h"
#include "model/gpt.h"
#include "parallel/par.h"
#include "parallel/par_ckpt.h"
#include "train/train.h"

/* What is saved and loaded: the model and the engine's optimizer state. */
typedef struct {
    const g3_train_config_t *cfg;
    g3_gpt_t                *model;
    g3_par_engine_t         *eng;   /* its optimizer ranges (any layout, one rank
                                     * included), or NULL: the model alone; load it
                                     * with cfg->no_load_optim set */
    g3_par_ckpt_stage_t     *stage; /* the saves' host staging area (par_ckpt.h), the
                                     * trainer's; NULL: each save allocates its own */
} g3_train_ckpt_t;

/* Save the state after `iteration` (collective over the world).  gbs: the global batch of
 * the last iteration; lr: its learning rate.  tm: NULL, or this rank's phases of the save
 * are added to it (stage_alloc, describe, d2h, finite, pack, checksum, write, fsync, commit;
 * ckpt.h).
 * RET: G3_OK on every rank when committed. */
g3_status_t g3_train_ckpt_save(const g3_train_ckpt_t *c, int64_t iteration,
                               int64_t consumed_samples, int64_t gbs, double lr,
                               g3_ckpt_timing_t *tm);

/* Asynchronous save (--async-save): rank 0 prepares the temporary directory, every rank copies
 * its state to host memory (the stall) and a writer thread writes its shards while training
 * goes on.  tm: NULL, or the phases of the stall are added to it (commit: the temporary
 * directory; stage_alloc, describe, d2h, finite, pack: the snapshot).  OUT: *pending_p.
 * Only one save may be pending. */
typedef struct g3_train_ckpt_async g3_train_ckpt_async_t;
g3_status_t g3_train_ckpt_save_async(const g3_train_ckpt_t *c, int64_t iteration,
                                     int64_t consumed_samples, int64_t gbs, double lr,
                                     g3_ckpt_timing_t *tm, g3_train_ckpt_async_t **pending_p);
/* Commit a pending save (collective): block = 0 does it only when every rank's writer has
 * finished (else nothing, *iteration_p = -1); block = 1 waits.  *pending_p becomes NULL once
 * finished.  OUT: *iteration_p, the iteration committed, or -1.  RET: the save's failure (the
 * temporary directory is removed; the previous checkpoints are intact).  tm: NULL, or, when a
 * save was committed, the writer thread's phases (pack, checksum, write, fsync) and the
 * commit's are added to it and *writer_s is the writer's wall time (else left alone). */
g3_status_t g3_train_ckpt_async_finish(const g3_train_ckpt_t *c, g3_train_ckpt_async_t **pending_p,
                                       int block, int64_t *iteration_p, g3_ckpt_timing_t *tm,
                                       double *writer_s);

/* On an error: wait for the writer thread and forget the save (not committed; the next save
 * removes its temporary directory).  Not collective.  NULL: nothing. */
void g3_train_ckpt_async_drop(g3_train_ckpt_async_t *pending);

/* Load cfg->load_dir's latest checkpoint into the model and optimizer (collective).
 * OUT: *iteration_p, *consumed_p (0 and *loaded_p = 0 when load_dir holds no checkpoint
 * yet: the run starts from scratch, as the batch suite's first job does); *unreadable_p = 1
 * when the load failed because the checkpoint itself cannot be read or verified (a file
 * corrupt, missing or unreadable; not a checkpoint that disagrees with the run's model or
 * tokenizer), else 0.
 * The host copies are the staging area when it is scheduled (a run that saves), else fresh
 * memory.  tm: NULL, or the phases of the load are added to it (stage_alloc, describe, d2h,
 * open, read, verify, convert, h2d, free).
 * RET: G3_ERR_INVALID_ARG for a model mismatch (logged by the library, naming the flags),
 * load errors (naming the file and dataset). */
g3_status_t g3_train_ckpt_load(const g3_train_ckpt_t *c, int64_t *iteration_p,
                               int64_t *consumed_p, int *loaded_p, int *unreadable_p,
                               g3_ckpt_timing_t *tm);

#endif
