/* gpt3d train: the trainer's flags, shared by `gpt3d train` and `gpt3d plan` so that the two
 * accept the same command lines and refuse the same model sizes, batch arithmetic and
 * layouts with the same messages (docs/training.md lists the flags, docs/plan.md the plan).
 *
 * The table and the readers belong to the trainer; gpt3d plan appends its own flags to a copy
 * of the table and calls the same readers. */
#ifndef G3_TRAIN_FLAGS_H
#define G3_TRAIN_FLAGS_H

#include <stdint.h>

#include "core/opt.h"
#include "train/train.h"

/* gpt3d train's options in --help order; the last entry has a NULL name. */
extern const g3_opt_spec_t g3_train_opt_specs[];

/* An int flag that must fit an int and be >= lo.  OUT: *out.  RET: 1, or 0 after logging
 * "--NAME V is out of range". */
int g3_train_flags_int(const g3_opts_t *o, const char *name, int64_t lo, int *out);

/* Read the model flags (--num-layers .. --device), the layout flags (tensor and pipeline
 * sizes, the uneven pipeline split, --use-distributed-optimizer), the batch and length flags
 * (--micro-batch-size, --global-batch-size, --rampup-batch-size, --train-iters,
 * --train-samples), the schedule, optimizer and sampling flags into cfg (defaults set with
 * g3_train_config_defaults; cfg->model.vocab_size is set to 1 for the caller to fill).
 * OUT: cfg, *tp_p, *pp_p.  RET: 1, or 0 after logging every bad value once, naming its flag.
 * The relations between flags are checked later: g3_gpt_config_check, g3_train_plan. */
int g3_train_flags_read(const g3_opts_t *o, g3_train_config_t *cfg, int *tp_p, int *pp_p);

/* The data-parallel size of a job of `world` ranks: world / (TP x PP).  OUT: *dp_p.
 * RET: 1, or 0 after logging "impossible layout: ..." when world is not a multiple of
 * TP x PP. */
int g3_train_flags_dp(int world, int tp, int pp, int *dp_p);

#endif
