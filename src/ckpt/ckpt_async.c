/* Asynchronous save: a background thread writes a host snapshot's shard files
 * (phase 2) while training goes on.  The caller still runs phase 1 before and
 * the all-reduce plus commit (phase 3, rank 0) after, at a step boundary. */
#include "ckpt/ckpt_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

struct g3_ckpt_async {
    pthread_t            thread;
    char                *dir;
    g3_ckpt_state_t     *snapshot;
    g3_ckpt_save_opts_t  opts;
    char                *save_id;
    g3_status_t          status;
    g3_ckpt_timing_t     timing;        /* the writer's phases, written by the thread */
    double               writer_s;      /* its wall time                              */
    int                  done;          /* set by the thread, under lock */
    int                  joined;
    pthread_mutex_t      lock;
};

static void *g3_ckpt_async_main(void *arg)
{
    g3_ckpt_async_t *a = arg;
    double t0 = g3_clock_now();
    g3_status_t st = g3_ckpt_write_shards(a->dir, a->snapshot, &a->opts);
    double dt = g3_clock_now() - t0;

    pthread_mutex_lock(&a->lock);
    a->status = st;
    a->writer_s = dt;
    a->done = 1;
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

g3_status_t g3_ckpt_async_start(const char *dir, g3_ckpt_state_t *snapshot,
                                const g3_ckpt_save_opts_t *opts, g3_ckpt_async_t **async_p)
{
    g3_ckpt_async_t *a = calloc(1, sizeof(*a));
    int rc;

    if (a == NULL)
        goto err_free_snapshot;
    a->dir = strdup(dir);
    a->save_id = strdup(g3_ckpt_save_id(opts));
    if (a->dir == NULL || a->save_id == NULL)
        goto err_free_async;
    if (opts)
        a->opts = *opts;
    a->opts.save_id = a->save_id;
    a->opts.timing = &a->timing;   /* the thread's own; the caller reads it after the wait */
    a->snapshot = snapshot;
    pthread_mutex_init(&a->lock, NULL);
    rc = pthread_create(&a->thread, NULL, g3_ckpt_async_main, a);
    if (rc != 0) {
        g3_error("cannot start the checkpoint writer thread: %s", strerror(rc));
        pthread_mutex_destroy(&a->lock);
        a->snapshot = NULL;
        goto err_free_async;
    }
    *async_p = a;
    return G3_OK;

err_free_async:
    free(a->dir);
    free(a->save_id);
    free(a);
err_free_snapshot:
    g3_ckpt_state_free(snapshot);
    return G3_ERR_NO_MEMORY;
}

int g3_ckpt_async_done(g3_ckpt_async_t *a)
{
    int done;
    pthread_mutex_lock(&a->lock);
    done = a->done;
    pthread_mutex_unlock(&a->lock);
    return done;
}

g3_status_t g3_ckpt_async_wait(g3_ckpt_async_t *a, const g3_ckpt_state_t **snapshot_p)
{
    if (!a->joined) {
        pthread_join(a->thread, NULL);
        a->joined = 1;
    }
    if (snapshot_p)
        *snapshot_p = a->snapshot;
    return a->status;
}

void g3_ckpt_async_timing(const g3_ckpt_async_t *a, g3_ckpt_timing_t *tm, double *writer_s)
{
    *tm = a->timing;
    *writer_s = a->writer_s;
}

void g3_ckpt_async_free(g3_ckpt_async_t *a)
{
    if (a == NULL)
        return;
    g3_ckpt_async_wait(a, NULL);
    pthread_mutex_destroy(&a->lock);
    g3_ckpt_state_free(a->snapshot);
    free(a->dir);
    free(a->save_id);
    free(a);
}
