/* gpt3d comm: the dispatch (argument checks, timing, statistics, then the group's
 * transport row: comm->tp) and the generic helpers the transports call (names, the serial
 * reduction, messages).  It calls no transport by name: the groups and their rows are made
 * in group.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/bf16.h"
#include "core/log.h"

/* Kept in step with the enums by the static assertions below. */
static const size_t g3_dtype_sizes[] = {
    [G3_DTYPE_FLOAT32] = 4, [G3_DTYPE_FLOAT64] = 8, [G3_DTYPE_INT64] = 8,
    [G3_DTYPE_BFLOAT16] = 2,
};
static const char *const g3_dtype_names[] = {
    [G3_DTYPE_FLOAT32] = "float32", [G3_DTYPE_FLOAT64] = "float64", [G3_DTYPE_INT64] = "int64",
    [G3_DTYPE_BFLOAT16] = "bfloat16",
};
static const char *const g3_reduce_names[] = { [G3_COMM_SUM] = "sum", [G3_COMM_MAX] = "max" };
static const char *const g3_backend_names[] = {
    [G3_COMM_BACKEND_HOST] = "host", [G3_COMM_BACKEND_NCCL] = "nccl",
    [G3_COMM_BACKEND_STAGED] = "staged",
};
_Static_assert(sizeof(g3_dtype_sizes) / sizeof(g3_dtype_sizes[0]) == G3_DTYPE_COUNT,
               "one size per dtype");
_Static_assert(sizeof(g3_dtype_names) / sizeof(g3_dtype_names[0]) == G3_DTYPE_COUNT,
               "one name per dtype");
_Static_assert(sizeof(g3_reduce_names) / sizeof(g3_reduce_names[0]) == G3_COMM_REDUCE_COUNT,
               "one name per reduction");
_Static_assert(sizeof(g3_backend_names) / sizeof(g3_backend_names[0]) == G3_COMM_BACKEND_COUNT,
               "one name per backend");

static const char *const g3_stat_names[] = {
    [G3_COMM_STAT_ALLREDUCE] = "all-reduce", [G3_COMM_STAT_REDUCE_SCATTER] = "reduce-scatter",
    [G3_COMM_STAT_ALLGATHER] = "all-gather", [G3_COMM_STAT_BROADCAST] = "broadcast",
    [G3_COMM_STAT_SEND] = "send",            [G3_COMM_STAT_RECV] = "recv",
    [G3_COMM_STAT_BARRIER] = "barrier",      [G3_COMM_STAT_NONBLOCKING] = "non-blocking",
};
_Static_assert(sizeof(g3_stat_names) / sizeof(g3_stat_names[0]) == G3_COMM_STAT_COUNT,
               "one name per statistic");

const char *g3_comm_stat_name(g3_comm_stat_t kind)
{
    return (unsigned)kind < G3_COMM_STAT_COUNT ? g3_stat_names[kind] : "invalid statistic";
}

void g3_comm_busy(const g3_comm_t *comm, double seconds[G3_COMM_STAT_COUNT])
{
    for (int k = 0; k < G3_COMM_STAT_COUNT; k++)
        seconds[k] = comm ? comm->busy_s[k] : 0.0;
}

size_t g3_comm_dtype_size(g3_comm_dtype_t dtype)
{
    return (unsigned)dtype < G3_DTYPE_COUNT ? g3_dtype_sizes[dtype] : 0;
}

const char *g3_comm_dtype_name(g3_comm_dtype_t dtype)
{
    return (unsigned)dtype < G3_DTYPE_COUNT ? g3_dtype_names[dtype] : "invalid dtype";
}

const char *g3_comm_reduce_name(g3_comm_reduce_t op)
{
    return (unsigned)op < G3_COMM_REDUCE_COUNT ? g3_reduce_names[op] : "invalid reduction";
}

const char *g3_comm_backend_name(g3_comm_backend_t backend)
{
    return (unsigned)backend < G3_COMM_BACKEND_COUNT ? g3_backend_names[backend]
                                                      : "invalid backend";
}

/* ---- serial reduction ------------------------------------------------------ */

#define G3_REDUCE_LOOP(T, EXPR)                                          \
    do {                                                                 \
        T *restrict d_ = dst;                                            \
        const T *restrict s_ = src;                                      \
        _Pragma("omp simd")                                              \
        for (size_t i = 0; i < n; i++) {                                 \
            T a = d_[i], b = s_[i];                                      \
            d_[i] = (EXPR);                                              \
        }                                                                \
    } while (0)

void g3_comm_reduce_local(void *dst, const void *src, size_t n, g3_comm_dtype_t dtype,
                          g3_comm_reduce_t op)
{
    switch (dtype) {
    case G3_DTYPE_BFLOAT16: {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) {
            float a = g3_bf16_to_f32(d[i]), b = g3_bf16_to_f32(s[i]);
            d[i] = op == G3_COMM_SUM ? g3_bf16_from_f32(a + b) : a > b ? d[i] : s[i];
        }
        break;
    }
    case G3_DTYPE_FLOAT32:
        if (op == G3_COMM_SUM) G3_REDUCE_LOOP(float, a + b);
        else                   G3_REDUCE_LOOP(float, a > b ? a : b);
        break;
    case G3_DTYPE_FLOAT64:
        if (op == G3_COMM_SUM) G3_REDUCE_LOOP(double, a + b);
        else                   G3_REDUCE_LOOP(double, a > b ? a : b);
        break;
    case G3_DTYPE_INT64:
        /* Sum wraps like two's complement (unsigned arithmetic: no UB). */
        if (op == G3_COMM_SUM)
            G3_REDUCE_LOOP(int64_t, (int64_t)((uint64_t)a + (uint64_t)b));
        else
            G3_REDUCE_LOOP(int64_t, a > b ? a : b);
        break;
    default:
        break;
    }
}

/* ---- messages -------------------------------------------------------------- */

void g3_comm_format_members(const int *members, int n, char *buf, size_t len)
{
    size_t used = 0;
    int i = 0;

    if (len == 0)
        return;
    buf[0] = '\0';
    while (i < n && used + 24 < len) {
        int j = i;
        while (j + 1 < n && members[j + 1] == members[j] + 1)
            j++;
        if (j > i)
            used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "",
                                     members[i], members[j]);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "",
                                     members[i]);
        i = j + 1;
    }
    if (i < n && used + 4 < len)
        snprintf(buf + used, len - used, ",...");
}

void g3_comm_log_timeout(const g3_comm_t *comm, int peer_grank, const char *verb)
{
    char members[160];

    g3_comm_format_members(comm->members, comm->size, members, sizeof(members));
    if (peer_grank >= 0)
        g3_error(
            "%s on group %s (rank %d of %d, world ranks %s) timed out after %.0f s waiting for group rank %d (world rank %d) to %s; it stopped, crashed or is stuck elsewhere (raise --distributed-timeout-minutes if it is only slow)",
            comm->cur_op ? comm->cur_op : "operation", comm->name, comm->rank, comm->size, members,
            comm->timeout_s, peer_grank, comm->members[peer_grank], verb);
    else
        g3_error(
            "%s on group %s (rank %d of %d, world ranks %s) timed out after %.0f s waiting for the other ranks to %s (raise --distributed-timeout-minutes if they are only slow)",
            comm->cur_op ? comm->cur_op : "operation", comm->name, comm->rank, comm->size, members,
            comm->timeout_s, verb);
}

/* ---- groups (made in group.c) ------------------------------------------------- */

void g3_comm_free(g3_comm_t *comm)
{
    if (comm == NULL)
        return;
    if (comm->tp && comm->tp->group_free)
        comm->tp->group_free(comm);
    free(comm->members);
    free(comm);
}

int g3_comm_rank(const g3_comm_t *comm) { return comm->rank; }
int g3_comm_size(const g3_comm_t *comm) { return comm->size; }

int g3_comm_world_rank_of(const g3_comm_t *comm, int grank)
{
    return grank >= 0 && grank < comm->size ? comm->members[grank] : -1;
}

void g3_comm_set_timeout(g3_comm_t *comm, double timeout_s)
{
    comm->timeout_s = timeout_s > 0 ? timeout_s : G3_COMM_DEFAULT_TIMEOUT_S;
}


/* ---- dispatch ---------------------------------------------------------------- */

static g3_status_t g3_comm_check(g3_comm_t *comm, const char *op, g3_comm_dtype_t dtype,
                                 size_t n, int need_reduce, g3_comm_reduce_t rop)
{
    if (comm->broken != G3_OK) {
        g3_error(
            "%s on group %s: the group is broken by an earlier failure (%s); the job must stop", op,
            comm->name, g3_status_string(comm->broken));
        return comm->broken;
    }
    if ((unsigned)dtype >= G3_DTYPE_COUNT) {
        g3_error("%s on group %s: invalid dtype %d", op, comm->name, (int)dtype);
        return G3_ERR_INVALID_ARG;
    }
    if (need_reduce && (unsigned)rop >= G3_COMM_REDUCE_COUNT) {
        g3_error("%s on group %s: invalid reduction %d", op, comm->name, (int)rop);
        return G3_ERR_INVALID_ARG;
    }
    if (n > ((size_t)1 << 48) / g3_comm_dtype_size(dtype)) {
        g3_error("%s on group %s: %zu elements is more than any buffer can hold", op,
                 comm->name, n);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

/* The start of a call: its name (a timeout's message names it) and the time it started. */
static double g3_comm_start(g3_comm_t *comm, const char *op)
{
    comm->cur_op = op;
    return g3_clock_now();
}

/* After a call of kind that started at t0: its time, and a failure breaks the group. */
static g3_status_t g3_comm_finish(g3_comm_t *comm, g3_comm_stat_t kind, double t0,
                                  g3_status_t st)
{
    comm->busy_s[kind] += g3_clock_now() - t0;
    if (st == G3_ERR_TIMEOUT || st == G3_ERR_COMM || st == G3_ERR_DEVICE) {
        comm->broken = st;
        comm->world->broken = 1;   /* peers may be gone: no shutdown fence */
    }
    comm->cur_op = NULL;
    return st;
}

/* A blocking reduction, all-reduce or (scatter) reduce-scatter: the checks, the timing and the
 * statistics around the transport's operation. */
static g3_status_t g3_comm_reduction(g3_comm_t *comm, int scatter, const void *send, void *recv,
                                     size_t n, g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    const char *what = scatter ? "reduce-scatter" : "all-reduce";
    double t0;
    g3_status_t st = g3_comm_check(comm, what, dtype, n, 1, op);
    if (st != G3_OK || n == 0)
        return st;
    t0 = g3_comm_start(comm, what);
    st = (scatter ? comm->tp->reduce_scatter : comm->tp->allreduce)(comm, send, recv, n, dtype,
                                                                       op);
    return g3_comm_finish(comm, scatter ? G3_COMM_STAT_REDUCE_SCATTER : G3_COMM_STAT_ALLREDUCE,
                          t0, st);
}

g3_status_t g3_comm_allreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                              g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    return g3_comm_reduction(comm, 0, send, recv, n, dtype, op);
}

g3_status_t g3_comm_reduce_scatter(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                   g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    return g3_comm_reduction(comm, 1, send, recv, n, dtype, op);
}

g3_status_t g3_comm_allgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                              g3_comm_dtype_t dtype)
{
    double t0;
    g3_status_t st = g3_comm_check(comm, "all-gather", dtype, n, 0, G3_COMM_SUM);
    if (st != G3_OK || n == 0)
        return st;
    t0 = g3_comm_start(comm, "all-gather");
    st = comm->tp->allgather(comm, send, recv, n, dtype);
    return g3_comm_finish(comm, G3_COMM_STAT_ALLGATHER, t0, st);
}

g3_status_t g3_comm_broadcast(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                              int root)
{
    double t0;
    g3_status_t st = g3_comm_check(comm, "broadcast", dtype, n, 0, G3_COMM_SUM);
    if (st != G3_OK)
        return st;
    if (root < 0 || root >= comm->size) {
        g3_error("broadcast on group %s: root %d is not a rank of the group (size %d)",
                 comm->name, root, comm->size);
        return G3_ERR_INVALID_ARG;
    }
    if (n == 0)
        return G3_OK;
    t0 = g3_comm_start(comm, "broadcast");
    st = comm->tp->broadcast(comm, buf, n, dtype, root);
    return g3_comm_finish(comm, G3_COMM_STAT_BROADCAST, t0, st);
}

static g3_status_t g3_comm_check_p2p(g3_comm_t *comm, const char *op, int peer, int tag)
{
    if (peer < 0 || peer >= comm->size || peer == comm->rank) {
        g3_error("%s on group %s: peer %d is not another rank of the group (size %d, this rank %d)",
                 op, comm->name, peer, comm->size, comm->rank);
        return G3_ERR_INVALID_ARG;
    }
    if (tag < 0 || tag > G3_COMM_MAX_TAG) {
        g3_error("%s on group %s: tag %d is outside 0..%d", op, comm->name, tag,
                 G3_COMM_MAX_TAG);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

/* A blocking send (is_send) or receive of buf, with its checks, timing and statistics. */
static g3_status_t g3_comm_p2p(g3_comm_t *comm, int is_send, void *buf, size_t n,
                               g3_comm_dtype_t dtype, int peer, int tag)
{
    const char *what = is_send ? "send" : "recv";
    double t0;
    g3_status_t st = g3_comm_check(comm, what, dtype, n, 0, G3_COMM_SUM);
    if (st == G3_OK)
        st = g3_comm_check_p2p(comm, what, peer, tag);
    if (st != G3_OK)
        return st;
    t0 = g3_comm_start(comm, what);
    st = is_send ? comm->tp->send(comm, buf, n, dtype, peer, tag)
                 : comm->tp->recv(comm, buf, n, dtype, peer, tag);
    return g3_comm_finish(comm, is_send ? G3_COMM_STAT_SEND : G3_COMM_STAT_RECV, t0, st);
}

g3_status_t g3_comm_send(g3_comm_t *comm, const void *buf, size_t n, g3_comm_dtype_t dtype,
                         int peer, int tag)
{
    return g3_comm_p2p(comm, 1, (void *)buf, n, dtype, peer, tag);   /* only read */
}

g3_status_t g3_comm_recv(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                         int peer, int tag)
{
    return g3_comm_p2p(comm, 0, buf, n, dtype, peer, tag);
}

g3_status_t g3_comm_barrier(g3_comm_t *comm)
{
    double t0;
    g3_status_t st = g3_comm_check(comm, "barrier", G3_DTYPE_FLOAT32, 0, 0, G3_COMM_SUM);
    if (st != G3_OK)
        return st;
    if (comm->size == 1)
        return G3_OK;
    t0 = g3_comm_start(comm, "barrier");
    st = comm->tp->barrier(comm);
    return g3_comm_finish(comm, G3_COMM_STAT_BARRIER, t0, st);
}

/* ---- non-blocking collectives ------------------------------------------------------------ */

static g3_status_t g3_comm_istart(g3_comm_t *comm, g3_comm_req_kind_t kind, const char *what,
                                  const void *send, void *recv, size_t n, g3_comm_dtype_t dtype,
                                  g3_comm_reduce_t op, void *after, g3_comm_req_t **req_p)
{
    g3_comm_req_t *req;
    g3_status_t st = g3_comm_check(comm, what, dtype, n, kind != G3_COMM_REQ_ALLGATHER, op);

    if (st != G3_OK)
        return st;
    if (!comm->tp->istart) {
        g3_error("%s on group %s: the %s backend has no non-blocking collectives", what,
                 comm->name, comm->tp->name);
        return G3_ERR_UNSUPPORTED;
    }
    req = calloc(1, sizeof(*req));
    if (!req) {
        g3_error("%s on group %s: out of memory for a request", what, comm->name);
        return G3_ERR_NO_MEMORY;
    }
    *req = (g3_comm_req_t){ comm, kind, what, send, recv, n, dtype, op, after, 0, n == 0, NULL };
    if (n > 0) {
        const char *prev = comm->cur_op;
        double t0 = g3_comm_start(comm, what);
        st = comm->tp->istart(comm, req);
        g3_comm_finish(comm, G3_COMM_STAT_NONBLOCKING, t0, st);
        comm->cur_op = prev;
        if (st != G3_OK) {
            free(req);
            return st;
        }
    }
    *req_p = req;
    return G3_OK;
}

g3_status_t g3_comm_iallreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                               g3_comm_dtype_t dtype, g3_comm_reduce_t op, void *after,
                               g3_comm_req_t **req_p)
{
    return g3_comm_istart(comm, G3_COMM_REQ_ALLREDUCE, "all-reduce (non-blocking)", send, recv,
                          n, dtype, op, after, req_p);
}

g3_status_t g3_comm_ireduce_scatter(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                    g3_comm_dtype_t dtype, g3_comm_reduce_t op, void *after,
                                    g3_comm_req_t **req_p)
{
    return g3_comm_istart(comm, G3_COMM_REQ_REDUCE_SCATTER, "reduce-scatter (non-blocking)",
                          send, recv, n, dtype, op, after, req_p);
}

g3_status_t g3_comm_iallgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                               g3_comm_dtype_t dtype, void *after, g3_comm_req_t **req_p)
{
    return g3_comm_istart(comm, G3_COMM_REQ_ALLGATHER, "all-gather (non-blocking)", send, recv,
                          n, dtype, G3_COMM_SUM, after, req_p);
}

static g3_status_t g3_comm_iprogress(g3_comm_req_t *req, int block)
{
    g3_comm_t *comm = req->comm;
    const char *prev = comm->cur_op;
    g3_status_t st;
    int done = 0;

    if (req->done)
        return G3_OK;
    if (comm->broken != G3_OK) {
        g3_error(
            "%s on group %s: the group is broken by an earlier failure (%s); the job must stop",
            req->what, comm->name, g3_status_string(comm->broken));
        return comm->broken;
    }
    double t0 = g3_comm_start(comm, req->what);
    st = comm->tp->iprogress(comm, req, block, &done);
    g3_comm_finish(comm, G3_COMM_STAT_NONBLOCKING, t0, st);
    comm->cur_op = prev;
    if (st == G3_OK && done)
        req->done = 1;
    return st;
}

g3_status_t g3_comm_test(g3_comm_req_t *req, int *done_p)
{
    g3_status_t st = g3_comm_iprogress(req, 0);
    *done_p = req->done;
    return st;
}

g3_status_t g3_comm_wait(g3_comm_req_t *req)
{
    g3_status_t st;
    if (!req)
        return G3_OK;
    st = g3_comm_iprogress(req, 1);
    g3_comm_req_free(req);
    return st;
}

void g3_comm_req_free(g3_comm_req_t *req)
{
    if (!req)
        return;
    if (req->be && req->comm->tp->irelease)
        req->comm->tp->irelease(req->comm, req);
    free(req);
}
