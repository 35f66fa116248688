/* gpt3d train: the --timing-log-level report (timing.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "train/timing.h"

/* The values reported, in this order on every rank: the timers, the axes' totals, and (at
 * level 2) the axes' time per operation. */
#define G3_TIMING_NVAL (G3_TIMER_COUNT + G3_PAR_AXES + G3_PAR_AXES * G3_COMM_STAT_COUNT)

static const char *const g3_timing_axes[G3_PAR_AXES] = { "tp", "pp", "dp", "emb" };

struct g3_train_timing {
    int          level;
    g3_timers_t *timers;
    g3_par_t    *par;
    double       busy[G3_PAR_AXES][G3_COMM_STAT_COUNT];   /* at the last report */
};

static g3_status_t g3_train_timing_ev_create(void *ctx, void **ev)
{
    g3_backend_t *be = ctx;
    return be->ops->event_create(be, ev);
}

static void g3_train_timing_ev_destroy(void *ctx, void *ev)
{
    g3_backend_t *be = ctx;
    be->ops->event_destroy(be, ev);
}

static void g3_train_timing_ev_record(void *ctx, void *ev)
{
    g3_backend_t *be = ctx;
    be->ops->event_record(be, ev);
}

static g3_status_t g3_train_timing_ev_elapsed(void *ctx, void *a, void *b, double *s)
{
    g3_backend_t *be = ctx;
    return be->ops->event_elapsed(be, a, b, s);
}

g3_status_t g3_train_timing_init(int level, g3_backend_t *be, g3_par_t *par,
                                 g3_train_timing_t **timing_p)
{
    g3_timer_device_t dev = { be, g3_train_timing_ev_create, g3_train_timing_ev_destroy,
                              g3_train_timing_ev_record, g3_train_timing_ev_elapsed };
    int events = be->ops->event_create && be->ops->event_destroy && be->ops->event_record &&
                 be->ops->event_elapsed;
    g3_train_timing_t *t;
    g3_status_t st;

    *timing_p = NULL;
    if (level <= 0)
        return G3_OK;
    t = calloc(1, sizeof(*t));
    if (!t) {
        g3_error("--timing-log-level: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    st = g3_timers_init(level, events ? &dev : NULL, &t->timers);
    if (st != G3_OK) {
        free(t);
        return st;
    }
    t->level = level;
    t->par = par;
    g3_par_comm_busy(par, t->busy);
    *timing_p = t;
    return G3_OK;
}

void g3_train_timing_free(g3_train_timing_t *timing)
{
    if (!timing)
        return;
    g3_timers_free(timing->timers);
    free(timing);
}

g3_timers_t *g3_train_timing_timers(g3_train_timing_t *timing)
{
    return timing ? timing->timers : NULL;
}

/* One line "    NAME ....: (min, max)" (Megatron-LM's layout) and its JSON member. */
static void g3_train_timing_line(const char *name, double lo, double hi, FILE *out, FILE *metrics,
                                 int *first)
{
    if (out) {
        char dots[64];
        size_t len = strlen(name), n = len < 47 ? 47 - len : 1;
        memset(dots, '.', n);
        dots[n] = '\0';
        fprintf(out, "    %s %s: (%.2f, %.2f)\n", name, dots, lo, hi);
    }
    if (metrics)
        fprintf(metrics, "%s\"%s\":[%.6g,%.6g]", *first ? "" : ",", name, lo, hi);
    *first = 0;
}

g3_status_t g3_train_timing_report(g3_train_timing_t *timing, int64_t iteration, int64_t iters,
                                   FILE *out, FILE *metrics, g3_tb_t *tb)
{
    double v[2 * G3_TIMING_NVAL], secs[G3_TIMER_COUNT];
    double now[G3_PAR_AXES][G3_COMM_STAT_COUNT];
    double scale;
    int first = 1;
    g3_status_t st;

    if (!timing)
        return G3_OK;
    st = g3_timers_collect(timing->timers, secs);
    if (st != G3_OK)
        return st;
    memset(v, 0, sizeof(v));
    memset(now, 0, sizeof(now));
    for (int i = 0; i < G3_TIMER_COUNT; i++)
        v[i] = secs[i];
    g3_par_comm_busy(timing->par, now);
    for (int a = 0; a < G3_PAR_AXES; a++)
        for (int k = 0; k < G3_COMM_STAT_COUNT; k++) {
            double d = now[a][k] - timing->busy[a][k];
            v[G3_TIMER_COUNT + a] += d;
            v[G3_TIMER_COUNT + G3_PAR_AXES + a * G3_COMM_STAT_COUNT + k] = d;
            timing->busy[a][k] = now[a][k];
        }
    /* (min, max) over the ranks: max of v and of -v in one all-reduce */
    for (int i = 0; i < G3_TIMING_NVAL; i++)
        v[G3_TIMING_NVAL + i] = -v[i];
    st = g3_par_world_allreduce(timing->par, v, 2 * G3_TIMING_NVAL, 1);
    if (st != G3_OK)
        return st;
    if (!out && !metrics && !tb)
        return G3_OK;
    scale = 1e3 / (double)(iters > 0 ? iters : 1);
    if (out)
        fprintf(out, "(min, max) time across ranks (ms), per iteration over the last %lld:\n",
                (long long)iters);
    if (metrics)
        fprintf(
            metrics,
            "{\"event\":\"timers\",\"iteration\":%lld,\"iterations\":%lld,\"level\":%d,\"ms_per_iter\":{",
            (long long)iteration, (long long)iters, timing->level);
    for (int i = 0; i < G3_TIMING_NVAL; i++) {
        double hi = v[i], lo = -v[G3_TIMING_NVAL + i];
        char name[64];
        if (!(hi > 0.0))
            continue;   /* not run on any rank in this interval */
        if (i < G3_TIMER_COUNT) {
            snprintf(name, sizeof(name), "%s", g3_timer_name((g3_timer_id_t)i));
        } else if (i < G3_TIMER_COUNT + G3_PAR_AXES) {
            snprintf(name, sizeof(name), "comm-%s", g3_timing_axes[i - G3_TIMER_COUNT]);
        } else {
            int j = i - G3_TIMER_COUNT - G3_PAR_AXES;
            if (timing->level < 2)
                continue;
            snprintf(name, sizeof(name), "comm-%s-%s", g3_timing_axes[j / G3_COMM_STAT_COUNT],
                     g3_comm_stat_name((g3_comm_stat_t)(j % G3_COMM_STAT_COUNT)));
        }
        g3_train_timing_line(name, lo * scale, hi * scale, out, metrics, &first);
        if (tb) {
            char tag[80];
            snprintf(tag, sizeof(tag), "%s-time", name);
            g3_tb_scalar(tb, tag, iteration, hi * scale / 1e3);
        }
    }
    if (out)
        fflush(out);
    if (metrics) {
        fprintf(metrics, "}}\n");
        fflush(metrics);
    }
    return G3_OK;
}
