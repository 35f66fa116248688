/* gpt3d comm: the world: PMIx bootstrap and blob exchange.
 *
 * Under srun --mpi=pmix or mpirun the launcher runs a PMIx server and puts
 * PMIX_* variables into our environment; PMIx_Init connects to it.  PMIx
 * 4.2's PMIx_Init fails with PMIX_ERR_UNREACHABLE when there is no server,
 * so with no PMIX_* variables we do not call it and run as a one-rank
 * singleton.  A launcher that starts several tasks without PMIx (srun
 * --mpi=none, an mpirun without a PMIx server) would make every task think
 * it is rank 0: that is detected from SLURM_NTASKS / OMPI_COMM_WORLD_SIZE
 * and refused. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "comm/comm_impl.h"
#include "core/log.h"

extern char **environ;

static int g3_comm_world_env_has_pmix(void)
{
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "PMIX_NAMESPACE=", 15) || !strncmp(*e, "PMIX_SERVER_URI", 15))
            return 1;
    return 0;
}

/* A launcher started several tasks but gave us no PMIx server. */
static g3_status_t g3_comm_world_check_lonely_launch(void)
{
    static const char *const vars[] = { "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE",
                                        "PMI_SIZE" };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) {
            g3_error(
                "%s=%s says this task is one of several, but there is no PMIx server (no PMIX_* variables): every task would run alone as rank 0. Launch with 'srun --mpi=pmix' (see 'srun --mpi=list') or Open MPI's mpirun.",
                vars[i], v);
            return G3_ERR_COMM;
        }
    }
    return G3_OK;
}

/* PMIx integers come in several widths; accept any non-negative one. */
static int g3_pmix_value_int(const pmix_value_t *v, long *out)
{
    switch (v->type) {
    case PMIX_UINT8:  *out = v->data.uint8;  return 1;
    case PMIX_UINT16: *out = v->data.uint16; return 1;
    case PMIX_UINT32: *out = v->data.uint32; return 1;
    case PMIX_UINT64: *out = (long)v->data.uint64; return 1;
    case PMIX_INT:    *out = v->data.integer; return 1;
    case PMIX_INT8:   *out = v->data.int8;   return 1;
    case PMIX_INT16:  *out = v->data.int16;  return 1;
    case PMIX_INT32:  *out = v->data.int32;  return 1;
    case PMIX_INT64:  *out = (long)v->data.int64; return 1;
    case PMIX_UINT:   *out = v->data.uint;   return 1;
    case PMIX_SIZE:   *out = (long)v->data.size; return 1;
    default:          return 0;
    }
}

/* RET: 1 and *out on success, 0 when the key is missing or not an integer. */
static int g3_pmix_get_int(const pmix_proc_t *proc, const char *key, long *out)
{
    pmix_value_t *v = NULL;
    int ok;

    if (PMIx_Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL)
        return 0;
    ok = g3_pmix_value_int(v, out);
    PMIX_VALUE_RELEASE(v);
    return ok;
}

static void g3_comm_world_fill_singleton(g3_comm_proc_t *p)
{
    p->rank = 0;
    p->size = 1;
    p->local_rank = 0;
    p->local_size = 1;
    p->node_id = 0;
    p->num_nodes = 1;
    p->singleton = 1;
    snprintf(p->nspace, sizeof(p->nspace), "singleton");
}

static g3_status_t g3_comm_world_query(g3_comm_world_t *world)
{
    pmix_proc_t *me = world->pmix_me;
    pmix_proc_t wild;
    g3_comm_proc_t *p = &world->proc;
    pmix_value_t *v = NULL;
    long x;

    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    p->rank = (int)me->rank;
    snprintf(p->nspace, sizeof(p->nspace), "%s", me->nspace);
    if (!g3_pmix_get_int(&wild, PMIX_JOB_SIZE, &x) || x < 1) {
        g3_error(
            "PMIx did not give the job size (PMIX_JOB_SIZE) for namespace %s; the launcher's PMIx server is too old or broken",
            me->nspace);
        return G3_ERR_COMM;
    }
    p->size = (int)x;
    p->local_rank = g3_pmix_get_int(me, PMIX_LOCAL_RANK, &x) ? (int)x : 0;
    p->local_size = g3_pmix_get_int(&wild, PMIX_LOCAL_SIZE, &x) ? (int)x : 1;
    p->node_id = g3_pmix_get_int(me, PMIX_NODEID, &x) ? (int)x : 0;
    p->num_nodes = g3_pmix_get_int(&wild, PMIX_NUM_NODES, &x) ? (int)x : 1;
    if (PMIx_Get(me, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS && v &&
        v->type == PMIX_STRING && v->data.string)
        snprintf(p->hostname, sizeof(p->hostname), "%s", v->data.string);
    if (v)
        PMIX_VALUE_RELEASE(v);
    if (p->rank < 0 || p->rank >= p->size || p->local_rank >= p->local_size) {
        g3_error("PMIx gave inconsistent ranks (rank %d of %d, local rank %d of %d)",
                 p->rank, p->size, p->local_rank, p->local_size);
        return G3_ERR_COMM;
    }
    return G3_OK;
}

g3_status_t g3_comm_world_init(double timeout_s, g3_comm_world_t **world_p)
{
    g3_comm_world_t *world;
    pmix_proc_t *me;
    pmix_status_t prc;
    g3_status_t st;

    world = calloc(1, sizeof(*world));
    me = calloc(1, sizeof(*me));
    if (world == NULL || me == NULL) {
        g3_error("out of memory creating the comm world");
        st = G3_ERR_NO_MEMORY;
        goto err_free_world;
    }
    world->pmix_me = me;
    world->timeout_s = timeout_s > 0 ? timeout_s : G3_COMM_DEFAULT_TIMEOUT_S;
    if (gethostname(world->proc.hostname, sizeof(world->proc.hostname) - 1) != 0)
        snprintf(world->proc.hostname, sizeof(world->proc.hostname), "localhost");

    if (!g3_comm_world_env_has_pmix()) {
        st = g3_comm_world_check_lonely_launch();
        if (st != G3_OK)
            goto err_free_world;
        g3_comm_world_fill_singleton(&world->proc);
        g3_debug("no PMIx server in the environment: running as a singleton on %s",
                 world->proc.hostname);
        *world_p = world;
        return G3_OK;
    }

    prc = PMIx_Init(me, NULL, 0);
    if (prc != PMIX_SUCCESS) {
        g3_error(
            "PMIx_Init failed: %s. PMIX_* variables are set, so a launcher meant to serve this process but its PMIx server cannot be reached; check the srun --mpi=pmix / mpirun versions (this build uses PMIx %s)",
            PMIx_Error_string(prc), PMIx_Get_version());
        st = G3_ERR_COMM;
        goto err_free_world;
    }
    world->pmix_up = 1;
    st = g3_comm_world_query(world);
    if (st != G3_OK)
        goto err_finalize;
    g3_log_set_rank(world->proc.rank, world->proc.size);
    g3_debug("PMIx %s: rank %d of %d, local rank %d of %d, node %d of %d (%s)",
             PMIx_Get_version(), world->proc.rank, world->proc.size, world->proc.local_rank,
             world->proc.local_size, world->proc.node_id, world->proc.num_nodes,
             world->proc.hostname);
    *world_p = world;
    return G3_OK;

err_finalize:
    PMIx_Finalize(NULL, 0);
err_free_world:
    free(me);
    free(world);
    return st;
}

void g3_comm_world_pmix_free(g3_comm_world_t *world)
{
    if (world->pmix_up)
        PMIx_Finalize(NULL, 0);
    free(world->pmix_me);
    free(world);
}

void g3_comm_world_abort(g3_comm_world_t *world, int exit_code, const char *reason)
{
    pmix_status_t prc;

    if (world == NULL || !world->pmix_up || world->proc.size < 2)
        return;
    world->broken = 1;
    fflush(stdout);
    fflush(stderr);
    /* NULL procs: the whole namespace.  The server usually kills us too. */
    prc = PMIx_Abort(exit_code, reason, NULL, 0);
    if (prc != PMIX_SUCCESS)
        g3_warn(
            "PMIx_Abort (ending the job with status %d) failed: %s; the other ranks stop at their own timeouts",
            exit_code, PMIx_Error_string(prc));
}

const g3_comm_proc_t *g3_comm_world_proc(const g3_comm_world_t *world)
{
    return &world->proc;
}

/* ---- fence with our own timeout ------------------------------------------
 * PMIx_Fence_nb completes in PMIx's progress thread; we wait on a condition
 * variable with a deadline instead of trusting every server to honour
 * PMIX_TIMEOUT.  The waiter state lives on the heap: after a timeout the
 * callback may still fire later, so it is leaked on purpose then. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    int             done;
    pmix_status_t   status;
} g3_fence_wait_t;

static void g3_comm_fence_cb(pmix_status_t status, void *cbdata)
{
    g3_fence_wait_t *w = cbdata;
    pthread_mutex_lock(&w->lock);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static g3_status_t g3_comm_world_fence_collect(g3_comm_world_t *world, const char *what,
                                               int collect)
{
    pmix_proc_t *me = world->pmix_me;
    pmix_proc_t all;
    pmix_info_t info[1];
    pthread_condattr_t attr;
    g3_fence_wait_t *w;
    struct timespec dl;
    double t0 = g3_clock_now(), deadline;
    pmix_status_t prc;
    int timed_out = 0;
    bool yes = true;

    if (world->broken) {
        g3_error("world fence for %s: the world is broken by an earlier failure", what);
        return G3_ERR_COMM;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return G3_ERR_NO_MEMORY;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);

    PMIX_LOAD_PROCID(&all, me->nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    prc = PMIx_Fence_nb(&all, 1, info, collect ? 1 : 0, g3_comm_fence_cb, w);
    PMIX_INFO_DESTRUCT(&info[0]);
    if (prc == PMIX_OPERATION_SUCCEEDED) {
        w->done = 1;
        w->status = PMIX_SUCCESS;
    } else if (prc != PMIX_SUCCESS) {
        g3_error("PMIx_Fence_nb for %s failed: %s", what, PMIx_Error_string(prc));
        world->broken = 1;
        goto err_free;
    }

    deadline = t0 + world->timeout_s;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    {
        double whole = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + world->timeout_s;
        dl.tv_sec = (time_t)whole;
        dl.tv_nsec = (long)((whole - (double)dl.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        int rc = pthread_cond_timedwait(&w->cond, &w->lock, &dl);
        if (rc == ETIMEDOUT && !w->done && g3_clock_now() >= deadline) {
            timed_out = 1;
            break;
        }
    }
    prc = w->status;
    pthread_mutex_unlock(&w->lock);
    if (timed_out) {
        g3_error(
            "world fence for %s timed out after %.0f s: at least one of the %d ranks did not reach it (stopped, crashed or stuck elsewhere); raise --distributed-timeout-minutes if it is only slow",
            what, world->timeout_s, world->proc.size);
        world->broken = 1;
        return G3_ERR_TIMEOUT;   /* w leaks: the callback may still come */
    }
    if (prc != PMIX_SUCCESS) {
        g3_error("world fence for %s failed: %s (a rank may have died)", what,
                 PMIx_Error_string(prc));
        world->broken = 1;
        goto err_free;
    }
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return G3_OK;

err_free:
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return G3_ERR_COMM;
}

g3_status_t g3_comm_world_fence(g3_comm_world_t *world, const char *what)
{
    if (!world->pmix_up)
        return G3_OK;
    return g3_comm_world_fence_collect(world, what, 0);
}

/* ---- blob exchange ---------------------------------------------------------- */

typedef struct {
    void   *data;
    size_t  len;
    int     fetched;
} g3_blob_t;

struct g3_comm_exchange {
    g3_comm_world_t *world;
    char             key[64];
    char             what[64];
    g3_blob_t       *blobs;      /* (size) filled on demand */
};

g3_status_t g3_comm_world_exchange(g3_comm_world_t *world, const char *what,
                                   const void *blob, size_t len,
                                   g3_comm_exchange_t **xchg_p)
{
    g3_comm_exchange_t *x;
    pmix_value_t val;
    pmix_status_t prc;
    g3_status_t st;

    x = calloc(1, sizeof(*x));
    if (x == NULL)
        return G3_ERR_NO_MEMORY;
    x->blobs = calloc((size_t)world->proc.size, sizeof(*x->blobs));
    if (x->blobs == NULL) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_x;
    }
    x->world = world;
    snprintf(x->key, sizeof(x->key), "gpt3d.x%u", (unsigned)world->exchange_seq++);
    snprintf(x->what, sizeof(x->what), "%s", what);

    /* Our own blob is always known locally (and is all a singleton has). */
    x->blobs[world->proc.rank].data = malloc(len ? len : 1);
    if (x->blobs[world->proc.rank].data == NULL) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_blobs;
    }
    if (len)
        memcpy(x->blobs[world->proc.rank].data, blob, len);
    x->blobs[world->proc.rank].len = len;
    x->blobs[world->proc.rank].fetched = 1;

    if (world->pmix_up) {
        PMIX_VALUE_CONSTRUCT(&val);
        val.type = PMIX_BYTE_OBJECT;
        val.data.bo.bytes = (char *)x->blobs[world->proc.rank].data;
        val.data.bo.size = len;
        prc = PMIx_Put(PMIX_GLOBAL, x->key, &val);
        if (prc != PMIX_SUCCESS) {
            g3_error("PMIx_Put of %s (%zu bytes, key %s) failed: %s", what, len, x->key,
                     PMIx_Error_string(prc));
            st = G3_ERR_COMM;
            goto err_free_blobs;
        }
        prc = PMIx_Commit();
        if (prc != PMIX_SUCCESS) {
            g3_error("PMIx_Commit of %s failed: %s", what, PMIx_Error_string(prc));
            st = G3_ERR_COMM;
            goto err_free_blobs;
        }
        st = g3_comm_world_fence_collect(world, what, 1);
        if (st != G3_OK)
            goto err_free_blobs;
    }
    *xchg_p = x;
    return G3_OK;

err_free_blobs:
    for (int r = 0; r < world->proc.size; r++)
        free(x->blobs[r].data);
    free(x->blobs);
err_free_x:
    free(x);
    return st;
}

g3_status_t g3_comm_exchange_get(g3_comm_exchange_t *x, int rank, const void **blob_p,
                                 size_t *len_p)
{
    g3_comm_world_t *world = x->world;
    pmix_proc_t *me = world->pmix_me;
    pmix_proc_t peer;
    pmix_value_t *v = NULL;
    pmix_status_t prc;
    g3_blob_t *b;

    if (rank < 0 || rank >= world->proc.size) {
        g3_error("exchange %s: rank %d is outside the world (size %d)", x->what, rank,
                 world->proc.size);
        return G3_ERR_INVALID_ARG;
    }
    b = &x->blobs[rank];
    if (!b->fetched) {
        PMIX_LOAD_PROCID(&peer, me->nspace, (pmix_rank_t)rank);
        prc = PMIx_Get(&peer, x->key, NULL, 0, &v);
        if (prc != PMIX_SUCCESS || v == NULL) {
            g3_error("PMIx_Get of %s from rank %d (key %s) failed: %s", x->what, rank, x->key,
                     PMIx_Error_string(prc));
            return G3_ERR_COMM;
        }
        if (v->type != PMIX_BYTE_OBJECT) {
            g3_error("PMIx_Get of %s from rank %d returned type %d, not bytes", x->what, rank,
                     (int)v->type);
            PMIX_VALUE_RELEASE(v);
            return G3_ERR_COMM;
        }
        b->len = v->data.bo.size;
        b->data = malloc(b->len ? b->len : 1);
        if (b->data == NULL) {
            PMIX_VALUE_RELEASE(v);
            return G3_ERR_NO_MEMORY;
        }
        if (b->len)
            memcpy(b->data, v->data.bo.bytes, b->len);
        PMIX_VALUE_RELEASE(v);
        b->fetched = 1;
    }
    *blob_p = b->data;
    *len_p = b->len;
    return G3_OK;
}

void g3_comm_exchange_free(g3_comm_exchange_t *x)
{
    if (x == NULL)
        return;
    for (int r = 0; r < x->world->proc.size; r++)
        free(x->blobs[r].data);
    free(x->blobs);
    free(x);
}
