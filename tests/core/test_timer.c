/* core/timer: the per-operation timers of --timing-log-level.  Wall clock: a region's time
 * adds up and collect resets it; levels filter; a NULL set is inert.  Device clock (a fake
 * device whose events carry a counter "time"): the time between the recorded events adds up,
 * more pairs than G3_TIMER_PENDING_MAX resolve on the way, events are reused and every one
 * created is destroyed by free; a failing device reports its error from collect. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/timer.h"
#include "tap.h"

typedef struct { double t; } fake_event_t;
static double fake_now;          /* the device's clock, advanced by the test */
static int created, destroyed, fail_elapsed;

static g3_status_t fake_create(void *ctx, void **ev)
{
    (void)ctx;
    *ev = calloc(1, sizeof(fake_event_t));
    created++;
    return *ev ? G3_OK : G3_ERR_NO_MEMORY;
}
static void fake_destroy(void *ctx, void *ev)
{
    (void)ctx;
    free(ev);
    destroyed++;
}
static void fake_record(void *ctx, void *ev)
{
    (void)ctx;
    ((fake_event_t *)ev)->t = fake_now;
}
static g3_status_t fake_elapsed(void *ctx, void *a, void *b, double *s)
{
    (void)ctx;
    if (fail_elapsed)
        return G3_ERR_DEVICE;
    *s = ((fake_event_t *)b)->t - ((fake_event_t *)a)->t;
    return G3_OK;
}

int main(void)
{
    g3_timers_t *t = NULL;
    double s[G3_TIMER_COUNT];
    g3_timer_device_t dev = { NULL, fake_create, fake_destroy, fake_record, fake_elapsed };
    int ok;

    /* names and levels as Megatron prints them */
    tap_ok(!strcmp(g3_timer_name(G3_TIMER_FWD_BWD), "forward-backward") &&
               !strcmp(g3_timer_name(G3_TIMER_FORWARD), "forward-compute") &&
               g3_timer_level(G3_TIMER_OPTIMIZER) == 1 && g3_timer_level(G3_TIMER_BACKWARD) == 2,
           "timer names and levels");

    /* NULL: inert */
    g3_timers_start(NULL, G3_TIMER_DATA);
    g3_timers_stop(NULL, G3_TIMER_DATA);
    tap_ok(g3_timers_collect(NULL, s) == G3_OK && s[G3_TIMER_DATA] == 0.0 &&
               g3_timers_level(NULL) == 0, "a NULL set does nothing and collects zeros");

    /* wall clock, level 1 */
    tap_ok(g3_timers_init(1, NULL, &t) == G3_OK, "wall-clock set at level 1");
    {
        /* tb before the start and t0 after it: the region holds [t0, t0 + 0.002] and lies
         * within [tb, t1], whatever the scheduler does between the calls */
        double tb = g3_clock_now(), t0, t1;
        g3_timers_start(t, G3_TIMER_DATA);
        g3_timers_start(t, G3_TIMER_DATA);   /* ignored: already running */
        g3_timers_start(t, G3_TIMER_FORWARD);   /* level 2: not timed */
        t0 = g3_clock_now();
        while (g3_clock_now() - t0 < 0.002)
            ;
        g3_timers_stop(t, G3_TIMER_FORWARD);
        g3_timers_stop(t, G3_TIMER_DATA);
        g3_timers_stop(t, G3_TIMER_DATA);   /* ignored: not running */
        t1 = g3_clock_now();
        g3_timers_collect(t, s);
        tap_ok(s[G3_TIMER_DATA] >= 0.002 && s[G3_TIMER_DATA] <= t1 - tb,
               "wall clock: the region's time (%.9f s, within [0.002, %.9f])", s[G3_TIMER_DATA],
               t1 - tb);
        tap_ok(s[G3_TIMER_FORWARD] == 0.0, "a level-2 timer is not timed at level 1");
        g3_timers_collect(t, s);
        tap_ok(s[G3_TIMER_DATA] == 0.0, "collect resets the accumulators");
    }
    g3_timers_free(t);

    /* device clock, level 2: 3 x (PENDING_MAX + 5) regions of 0.5 "s" each */
    tap_ok(g3_timers_init(2, &dev, &t) == G3_OK && g3_timers_level(t) == 2,
           "device-clock set at level 2");
    for (int i = 0; i < 3 * (G3_TIMER_PENDING_MAX + 5); i++) {
        g3_timers_start(t, G3_TIMER_BACKWARD);
        fake_now += 0.5;
        g3_timers_stop(t, G3_TIMER_BACKWARD);
        fake_now += 7.0;   /* between regions: not counted */
    }
    g3_timers_start(t, G3_TIMER_OPTIMIZER);
    fake_now += 2.0;
    g3_timers_stop(t, G3_TIMER_OPTIMIZER);
    tap_ok(g3_timers_collect(t, s) == G3_OK, "device clock: collect succeeds");
    tap_ok(s[G3_TIMER_BACKWARD] == 0.5 * 3 * (G3_TIMER_PENDING_MAX + 5) &&
               s[G3_TIMER_OPTIMIZER] == 2.0,
           "device clock: the recorded intervals add up, the gaps do not (%.1f, %.1f)",
           s[G3_TIMER_BACKWARD], s[G3_TIMER_OPTIMIZER]);
    tap_ok(created <= 2 * G3_TIMER_PENDING_MAX + 4,
           "device clock: events are reused (%d created for %d regions)", created,
           3 * (G3_TIMER_PENDING_MAX + 5) + 1);

    /* a failing device: the error comes out of collect, once */
    fail_elapsed = 1;
    g3_timers_start(t, G3_TIMER_FWD_BWD);
    g3_timers_stop(t, G3_TIMER_FWD_BWD);
    ok = g3_timers_collect(t, s) == G3_ERR_DEVICE;
    fail_elapsed = 0;
    tap_ok(ok && g3_timers_collect(t, s) == G3_OK, "a device error is reported by collect once");
    g3_timers_start(t, G3_TIMER_DATA);   /* left running at free */
    g3_timers_free(t);
    tap_ok(created == destroyed, "every event created was destroyed (%d, %d)", created,
           destroyed);
    return tap_exit();
}
