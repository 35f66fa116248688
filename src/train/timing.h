/* gpt3d train: the report of --timing-log-level (Megatron-LM's timers): at each log interval
 * the time of forward-backward, optimizer, batch generation and checkpoint saving
 * (core/timer.h: CUDA events through the backend's event ops on a GPU, the wall clock on the
 * CPU), each communication group's time (comm.h, g3_comm_busy: tp, pp, dp and the tied
 * embedding's group; at level 2 split by operation) and, at level 2, the forward and
 * backward compute, as (min, max) over the ranks in ms per iteration, printed by rank 0 and
 * written to the metrics file as {"event":"timers",...} (docs/training.md).
 * Ownership: g3_train_timing_init gives a report freed with g3_train_timing_free; it borrows
 * be and par. */
#ifndef G3_TRAIN_TIMING_H
#define G3_TRAIN_TIMING_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "core/timer.h"
#include "parallel/par.h"
#include "metrics/events.h"

typedef struct g3_train_timing g3_train_timing_t;

/* level 0: *timing_p = NULL (nothing is timed: output and results as without the flag).
 * par: the layout (one rank: the 1 x 1 x 1 layout).  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_train_timing_init(int level, g3_backend_t *be, g3_par_t *par,
                                 g3_train_timing_t **timing_p);
void g3_train_timing_free(g3_train_timing_t *timing);
/* RET: the timers to start and stop (NULL when timing is NULL). */
g3_timers_t *g3_train_timing_timers(g3_train_timing_t *timing);

/* Collective over the world when par was given (every rank calls it at the same iteration).
 * iters: the iterations since the last report; out: the printout (rank 0 passes stdout,
 * the others NULL); sink: where the "timers" record goes (metrics/events.h: the metrics file,
 * and TensorBoard with G3_EV_TIMERS in its tb_groups: each timer as "NAME-time", the max over
 * the ranks in seconds per iteration, Megatron's tags; its progress is not used) or NULL.
 * A NULL timing does nothing.  RET: comm errors, device errors of the timing events. */
g3_status_t g3_train_timing_report(g3_train_timing_t *timing, int64_t iteration, int64_t iters,
                                   FILE *out, const g3_ev_sink_t *sink);

#endif
