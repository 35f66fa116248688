/* gpt3d train: learning-rate schedule and batch-size ramp-up, with Megatron-LM's semantics.
 *
 * Both are functions of the number of samples consumed before an iteration, so a resumed run
 * and any parallel layout compute the same values.  Iteration-based flags are converted to
 * samples the way Megatron does (iterations x global batch size). */
#ifndef G3_TRAIN_SCHEDULE_H
#define G3_TRAIN_SCHEDULE_H

#include <limits.h>
#include <stdint.h>

#include "core/status.h"

typedef enum {
    G3_LR_DECAY_CONSTANT = 0,
    G3_LR_DECAY_LINEAR,
    G3_LR_DECAY_COSINE
} g3_lr_decay_t;

/* RET: G3_OK and *style_p for "constant", "linear" or "cosine"; G3_ERR_INVALID_ARG else. */
g3_status_t g3_train_lr_decay_parse(const char *name, g3_lr_decay_t *style_p);

typedef struct {
    double        max_lr;          /* --lr                                                   */
    double        min_lr;          /* --min-lr                                               */
    int64_t       warmup_samples;  /* linear warm-up from 0 over this many samples           */
    int64_t       decay_samples;   /* decay ends here (min_lr afterwards)                    */
    g3_lr_decay_t style;
} g3_train_lr_sched_t;

/* Megatron's OptimizerParamScheduler.get_lr() at num_steps = samples:
 *   samples <= warmup (warmup > 0): max_lr * samples / warmup
 *   constant style: max_lr;  samples > decay: min_lr;
 *   else r = (samples - warmup) / (decay - warmup) and
 *   min_lr + (max_lr - min_lr) * (1 - r)                (linear)
 *   min_lr + (max_lr - min_lr) * 0.5 (cos(pi r) + 1)    (cosine).
 * The update of an iteration uses the value at the samples consumed BEFORE it (as Megatron,
 * whose scheduler steps after the optimizer: with warm-up the first update has lr 0). */
double g3_train_lr_at(const g3_train_lr_sched_t *sched, int64_t samples);

/* Batch-size ramp-up (Megatron --rampup-batch-size START INCR SAMPLES). */
typedef struct {
    int64_t start;           /* first global batch size (0: no ramp-up)                     */
    int64_t increment;
    int64_t ramp_samples;    /* the ramp is over after this many samples                    */
    int64_t global;          /* --global-batch-size, reached at the end                     */
} g3_train_rampup_t;

/* Check a ramp-up against the global batch and micro-batch x data-parallel size; each
 * problem is logged naming --rampup-batch-size.  RET: G3_ERR_INVALID_ARG. */
g3_status_t g3_train_rampup_check(const g3_train_rampup_t *r, int64_t micro_times_dp);

/* The most samples gpt3d reads from one split: its sample index (src/data/gpt_index.c) is
 * built in memory at about 20 bytes a sample, so 2^31 samples would ask for 43 GB before the
 * first step.  2^31 - 1 samples of 2048 tokens are 4.4 T tokens. */
#define G3_TRAIN_MAX_SAMPLES INT32_MAX
/* RET: 1 when count (the value of --count_flag) x batch samples (--global-batch-size) stay
 * within G3_TRAIN_MAX_SAMPLES, else 0 after logging the flags, the product and the limit
 * (batch 1: count alone is a number of samples). */
int g3_train_samples_fit(const char *count_flag, int64_t count, int64_t batch);

/* RET: the global batch size of an iteration that starts after `samples` consumed samples:
 * global once samples > ramp_samples, else start + floor(samples / per_increment) * increment
 * with per_increment = ramp_samples / ((global - start) / increment) (Megatron). */
int64_t g3_train_rampup_batch(const g3_train_rampup_t *r, int64_t samples);

/* RET: the iterations a sample-based run of train_samples takes (Megatron's
 * update_train_iters: ramp-up iterations, then whole global batches; a last partial batch is
 * dropped). */
int64_t g3_train_rampup_iters(const g3_train_rampup_t *r, int64_t train_samples);

#endif
