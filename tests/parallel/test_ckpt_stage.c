/* The checkpoints' host staging area (parallel/par_ckpt.h) on a backend whose host_alloc is
 * this test's: g3_par_ckpt_stage_start allocates in another thread and
 * g3_par_ckpt_stage_ready takes its memory (once, no second allocation); page-locked memory
 * that cannot be had (a device backend's host_alloc failing, in the thread or in the
 * foreground) is replaced by plain memory and never asked for again; a host-memory backend's
 * failure is an error; a stage too small for a later use is allocated again; freeing a stage
 * whose thread is still in flight waits for it (no leak under ASan). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "parallel/par_ckpt.h"
#include "tap.h"

static int calls, fail;
static pthread_t caller;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static g3_status_t fake_host_alloc(g3_backend_t *be, size_t bytes, void **ptr_p)
{
    (void)be;
    pthread_mutex_lock(&lock);
    calls++;
    caller = pthread_self();
    pthread_mutex_unlock(&lock);
    if (fail)
        return G3_ERR_NO_MEMORY;
    *ptr_p = malloc(bytes);
    return *ptr_p ? G3_OK : G3_ERR_NO_MEMORY;
}

static void fake_host_free(g3_backend_t *be, void *ptr)
{
    (void)be;
    free(ptr);
}

int main(void)
{
    g3_backend_ops_t ops;
    g3_backend_t be;
    g3_par_ckpt_stage_t s;
    g3_status_t st;

    memset(&ops, 0, sizeof(ops));
    ops.host_alloc = fake_host_alloc;
    ops.host_free = fake_host_free;
    memset(&be, 0, sizeof(be));
    be.ops = &ops;
    be.host_memory = 0;   /* a device's backend: host_alloc is page-locked memory */

    /* the background allocation, taken by the first use */
    memset(&s, 0, sizeof(s));
    g3_par_ckpt_stage_start(&s, &be, 1000);
    tap_ok(g3_par_ckpt_stage_scheduled(&s), "started: the stage is scheduled");
    st = g3_par_ckpt_stage_ready(&s, &be, 1000);
    tap_ok(st == G3_OK && s.buf && s.floats == 1000 && s.be == &be && s.background && !s.plain,
           "ready: the thread's page-locked memory, 1000 floats");
    tap_ok(calls == 1 && !pthread_equal(caller, pthread_self()),
           "host_alloc was called once, from another thread");
    s.buf[999] = 1.0f;
    st = g3_par_ckpt_stage_ready(&s, &be, 800);
    tap_ok(st == G3_OK && calls == 1 && s.buf[999] == 1.0f,
           "a later use of the same or a smaller size allocates nothing");
    st = g3_par_ckpt_stage_ready(&s, &be, 2000);
    tap_ok(st == G3_OK && calls == 2 && s.floats == 2000 && !s.background,
           "a larger use allocates again, in the foreground");
    g3_par_ckpt_stage_free(&s);
    tap_ok(!s.buf && s.floats == 0, "freed");

    /* page-locked memory cannot be had in the thread: plain memory, and no more asking */
    memset(&s, 0, sizeof(s));
    calls = 0;
    fail = 1;
    g3_par_ckpt_stage_start(&s, &be, 500);
    st = g3_par_ckpt_stage_ready(&s, &be, 500);
    tap_ok(st == G3_OK && s.buf && s.floats == 500 && s.be == NULL && s.plain,
           "the thread's allocation failed: plain memory instead (said once)");
    st = g3_par_ckpt_stage_ready(&s, &be, 3000);
    tap_ok(st == G3_OK && calls == 1 && s.floats == 3000 && s.be == NULL,
           "a larger use: plain memory again, host_alloc not asked again");
    g3_par_ckpt_stage_free(&s);

    /* the same failure without a thread (the first use allocates) */
    memset(&s, 0, sizeof(s));
    calls = 0;
    st = g3_par_ckpt_stage_ready(&s, &be, 700);
    tap_ok(st == G3_OK && calls == 1 && s.buf && s.be == NULL && s.plain,
           "a foreground allocation failing: plain memory instead");
    g3_par_ckpt_stage_free(&s);

    /* a host-memory backend (the CPU's): its host_alloc is plain memory already */
    memset(&s, 0, sizeof(s));
    be.host_memory = 1;
    st = g3_par_ckpt_stage_ready(&s, &be, 700);
    tap_ok(st == G3_ERR_NO_MEMORY && !s.buf,
           "a host-memory backend's failure is an error (G3_ERR_NO_MEMORY, logged)");
    g3_par_ckpt_stage_free(&s);

    /* a backend without host_alloc: plain memory at once, no thread */
    memset(&s, 0, sizeof(s));
    ops.host_alloc = NULL;
    ops.host_free = NULL;
    g3_par_ckpt_stage_start(&s, &be, 100);
    tap_ok(s.buf && !s.bg && s.be == NULL && !s.plain,
           "no host_alloc: plain memory at the start, no thread");
    g3_par_ckpt_stage_free(&s);

    /* freed while the thread may still be running: waits for it, frees its memory */
    memset(&s, 0, sizeof(s));
    ops.host_alloc = fake_host_alloc;
    ops.host_free = fake_host_free;
    be.host_memory = 0;
    fail = 0;
    g3_par_ckpt_stage_start(&s, &be, 4096);
    g3_par_ckpt_stage_free(&s);
    tap_ok(!s.bg && !s.buf, "freed with a thread in flight: joined, nothing left");
    return tap_exit();
}
