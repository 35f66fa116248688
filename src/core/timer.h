/* gpt3d core: the per-operation timers of --timing-log-level (Megatron-LM's timers).
 *
 * A timer set holds one accumulator per g3_timer_id_t.  start/stop bracket a region; the
 * time adds up until g3_timers_collect takes it (at each --log-interval).  Two clocks:
 *   - the wall clock (g3_clock_now) when the set has no device clock: right for work that
 *     is done when the call returns (the CPU backend, communication that waits);
 *   - a device clock (g3_timer_device_t, filled by whoever owns a GPU backend from its
 *     event ops): start and stop record events in the order of the queued device work, so
 *     a region measures the GPU's time, not the launch time; the pairs are resolved (which
 *     waits for the stop event) only when more than G3_TIMER_PENDING_MAX are pending and at
 *     collect time, so timing adds no synchronisation to the step.
 * A NULL set is valid everywhere and does nothing (--timing-log-level 0).  A timer that is
 * started twice, or stopped without a start, ignores the second call.
 * Ownership: g3_timers_init gives a set freed with g3_timers_free. */
#ifndef G3_CORE_TIMER_H
#define G3_CORE_TIMER_H

#include "core/status.h"

typedef enum {
    G3_TIMER_FWD_BWD = 0,     /* "forward-backward": an iteration's schedule (level 1)      */
    G3_TIMER_OPTIMIZER,       /* "optimizer": reductions, norm, clipping, update (level 1)  */
    G3_TIMER_DATA,            /* "batch-generator": reading the batch (level 1)             */
    G3_TIMER_CKPT,            /* "save-checkpoint" (level 1)                                 */
    G3_TIMER_FORWARD,         /* "forward-compute": the micro-batches' forward (level 2)    */
    G3_TIMER_BACKWARD,        /* "backward-compute": their backward (level 2)               */
    G3_TIMER_COUNT
} g3_timer_id_t;

/* RET: the timer's name as Megatron-LM prints it, and the lowest level that shows it. */
const char *g3_timer_name(g3_timer_id_t id);
int g3_timer_level(g3_timer_id_t id);

/* Events of a device, in the order of its queued work (all four set). */
typedef struct {
    void *ctx;
    g3_status_t (*create)(void *ctx, void **event_p);
    void (*destroy)(void *ctx, void *event);
    void (*record)(void *ctx, void *event);
    g3_status_t (*elapsed)(void *ctx, void *start, void *end, double *seconds_p);
} g3_timer_device_t;

#define G3_TIMER_PENDING_MAX 64   /* event pairs held per timer before one is resolved */

typedef struct g3_timers g3_timers_t;

/* level: 1 or 2 (timers above it are not started); dev: the device clock, or NULL for the
 * wall clock (copied).  OUT: *timers_p.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_timers_init(int level, const g3_timer_device_t *dev, g3_timers_t **timers_p);
void g3_timers_free(g3_timers_t *timers);
int g3_timers_level(const g3_timers_t *timers);   /* 0 for NULL */

void g3_timers_start(g3_timers_t *timers, g3_timer_id_t id);
void g3_timers_stop(g3_timers_t *timers, g3_timer_id_t id);

/* The seconds each timer accumulated since the last collect (then reset).
 * OUT: seconds[G3_TIMER_COUNT].  RET: the device clock's errors (logged by it). */
g3_status_t g3_timers_collect(g3_timers_t *timers, double seconds[G3_TIMER_COUNT]);

#endif
