/* gpt3d core: per-operation timers (timer.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/timer.h"

static const char *const g3_timer_names[] = {
    [G3_TIMER_FWD_BWD] = "forward-backward", [G3_TIMER_OPTIMIZER] = "optimizer",
    [G3_TIMER_DATA] = "batch-generator",     [G3_TIMER_CKPT] = "save-checkpoint",
    [G3_TIMER_FORWARD] = "forward-compute",  [G3_TIMER_BACKWARD] = "backward-compute",
};
static const int g3_timer_levels[] = {
    [G3_TIMER_FWD_BWD] = 1, [G3_TIMER_OPTIMIZER] = 1, [G3_TIMER_DATA] = 1,
    [G3_TIMER_CKPT] = 1,    [G3_TIMER_FORWARD] = 2,   [G3_TIMER_BACKWARD] = 2,
};
_Static_assert(sizeof(g3_timer_names) / sizeof(g3_timer_names[0]) == G3_TIMER_COUNT,
               "one name per timer");
_Static_assert(sizeof(g3_timer_levels) / sizeof(g3_timer_levels[0]) == G3_TIMER_COUNT,
               "one level per timer");

typedef struct {
    int     running;
    double  t0;                               /* wall clock: the start                   */
    void   *ev_start;                         /* device clock: the open start event      */
    void   *pend[G3_TIMER_PENDING_MAX][2];    /* device clock: recorded (start, stop)    */
    int     npend;
    double  acc;                              /* seconds since the last collect          */
} g3_timer_t;

struct g3_timers {
    int               level;
    int               has_dev;
    g3_timer_device_t dev;
    g3_timer_t        t[G3_TIMER_COUNT];
    void            **spare;                  /* events ready for reuse                  */
    int               nspare, cap;
    g3_status_t       failed;                 /* the device clock's first error          */
};

const char *g3_timer_name(g3_timer_id_t id)
{
    return (unsigned)id < G3_TIMER_COUNT ? g3_timer_names[id] : "invalid timer";
}

int g3_timer_level(g3_timer_id_t id)
{
    return (unsigned)id < G3_TIMER_COUNT ? g3_timer_levels[id] : 99;
}

g3_status_t g3_timers_init(int level, const g3_timer_device_t *dev, g3_timers_t **timers_p)
{
    g3_timers_t *t = calloc(1, sizeof(*t));
    if (!t) {
        g3_error("timers: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    t->level = level;
    if (dev && dev->create && dev->destroy && dev->record && dev->elapsed) {
        t->dev = *dev;
        t->has_dev = 1;
    }
    *timers_p = t;
    return G3_OK;
}

int g3_timers_level(const g3_timers_t *timers)
{
    return timers ? timers->level : 0;
}

static void *g3_timers_event(g3_timers_t *t)
{
    void *ev = NULL;
    if (t->nspare > 0)
        return t->spare[--t->nspare];
    if (t->failed == G3_OK)
        t->failed = t->dev.create(t->dev.ctx, &ev);
    return t->failed == G3_OK ? ev : NULL;
}

static void g3_timers_recycle(g3_timers_t *t, void *ev)
{
    if (!ev)
        return;
    if (t->nspare == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        void **s = realloc(t->spare, (size_t)cap * sizeof(*s));
        if (!s) {
            t->dev.destroy(t->dev.ctx, ev);
            return;
        }
        t->spare = s;
        t->cap = cap;
    }
    t->spare[t->nspare++] = ev;
}

/* Resolve timer x's oldest pending pair into its accumulator. */
static void g3_timers_resolve_one(g3_timers_t *t, g3_timer_t *x)
{
    double s = 0.0;
    if (t->failed == G3_OK)
        t->failed = t->dev.elapsed(t->dev.ctx, x->pend[0][0], x->pend[0][1], &s);
    if (t->failed == G3_OK)
        x->acc += s;
    g3_timers_recycle(t, x->pend[0][0]);
    g3_timers_recycle(t, x->pend[0][1]);
    memmove(x->pend[0], x->pend[1], (size_t)(x->npend - 1) * sizeof(x->pend[0]));
    x->npend--;
}

void g3_timers_start(g3_timers_t *timers, g3_timer_id_t id)
{
    g3_timer_t *x;

    if (!timers || (unsigned)id >= G3_TIMER_COUNT || g3_timer_levels[id] > timers->level)
        return;
    x = &timers->t[id];
    if (x->running)
        return;
    x->running = 1;
    if (!timers->has_dev) {
        x->t0 = g3_clock_now();
        return;
    }
    x->ev_start = g3_timers_event(timers);
    if (x->ev_start)
        timers->dev.record(timers->dev.ctx, x->ev_start);
}

void g3_timers_stop(g3_timers_t *timers, g3_timer_id_t id)
{
    g3_timer_t *x;
    void *ev;

    if (!timers || (unsigned)id >= G3_TIMER_COUNT || g3_timer_levels[id] > timers->level)
        return;
    x = &timers->t[id];
    if (!x->running)
        return;
    x->running = 0;
    if (!timers->has_dev) {
        x->acc += g3_clock_now() - x->t0;
        return;
    }
    ev = x->ev_start ? g3_timers_event(timers) : NULL;
    if (!ev) {
        g3_timers_recycle(timers, x->ev_start);
        x->ev_start = NULL;
        return;
    }
    timers->dev.record(timers->dev.ctx, ev);
    if (x->npend == G3_TIMER_PENDING_MAX)
        g3_timers_resolve_one(timers, x);
    x->pend[x->npend][0] = x->ev_start;
    x->pend[x->npend][1] = ev;
    x->npend++;
    x->ev_start = NULL;
}

g3_status_t g3_timers_collect(g3_timers_t *timers, double seconds[G3_TIMER_COUNT])
{
    g3_status_t st;

    for (int i = 0; i < G3_TIMER_COUNT; i++)
        seconds[i] = 0.0;
    if (!timers)
        return G3_OK;
    for (int i = 0; i < G3_TIMER_COUNT; i++) {
        g3_timer_t *x = &timers->t[i];
        while (x->npend > 0)
            g3_timers_resolve_one(timers, x);
        seconds[i] = x->acc;
        x->acc = 0.0;
    }
    st = timers->failed;
    timers->failed = G3_OK;
    return st;
}

void g3_timers_free(g3_timers_t *timers)
{
    if (!timers)
        return;
    if (timers->has_dev) {
        for (int i = 0; i < G3_TIMER_COUNT; i++) {
            g3_timer_t *x = &timers->t[i];
            for (int k = 0; k < x->npend; k++) {
                timers->dev.destroy(timers->dev.ctx, x->pend[k][0]);
                timers->dev.destroy(timers->dev.ctx, x->pend[k][1]);
            }
            if (x->ev_start)
                timers->dev.destroy(timers->dev.ctx, x->ev_start);
        }
        for (int k = 0; k < timers->nspare; k++)
            timers->dev.destroy(timers->dev.ctx, timers->spare[k]);
    }
    free(timers->spare);
    free(timers);
}
