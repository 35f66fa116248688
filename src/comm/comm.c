/* gpt3d comm: groups, argument checks and dispatch to the backend ops. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/bf16.h"
#include "core/log.h"
#include "core/param.h"

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

int g3_comm_backend_available(g3_comm_backend_t backend)
{
    switch (backend) {
    case G3_COMM_BACKEND_HOST: return 1;
    case G3_COMM_BACKEND_STAGED: return 1;
#ifdef HAVE_NCCL
    case G3_COMM_BACKEND_NCCL: return 1;
#endif
    default: return 0;
    }
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

/* ---- groups ---------------------------------------------------------------- */

/* What each rank publishes when a group layer is created: enough to check
 * that every member agrees on the group, plus the NCCL id from its root. */
#define G3_GROUP_MAGIC 0x67336772u   /* "g3gr" */
typedef struct {
    uint32_t magic;
    uint32_t nmembers;
    uint64_t members_hash;   /* FNV-1a over the member list */
    uint32_t backend;
    uint32_t has_id;
    unsigned char id[128];   /* NCCL unique id, on the group's rank 0 */
} g3_group_blob_t;

static uint64_t g3_members_hash(const int *members, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)members[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    }
    return h;
}

static g3_status_t g3_group_check_members(const g3_comm_world_t *world, const char *name,
                                          const int *members, int n, int *self_p)
{
    int self = -1;

    if (n < 1 || members == NULL) {
        g3_error("group %s: no members given; pass this rank's group (at least itself)", name);
        return G3_ERR_INVALID_ARG;
    }
    for (int i = 0; i < n; i++) {
        if (members[i] < 0 || members[i] >= world->proc.size) {
            g3_error("group %s: member %d is world rank %d, outside the world of %d ranks",
                     name, i, members[i], world->proc.size);
            return G3_ERR_INVALID_ARG;
        }
        for (int j = 0; j < i; j++)
            if (members[j] == members[i]) {
                g3_error("group %s: world rank %d is listed twice (positions %d and %d)", name,
                         members[i], j, i);
                return G3_ERR_INVALID_ARG;
            }
        if (members[i] == world->proc.rank)
            self = i;
    }
    if (self < 0) {
        g3_error("group %s: this rank (world rank %d) is not in its own member list", name,
                 world->proc.rank);
        return G3_ERR_INVALID_ARG;
    }
    *self_p = self;
    return G3_OK;
}

/* Every member's description of the group (exchanged in x) against this rank's (mine).
 * OUT: *root_p, the description of the group's rank 0 (it lives as long as x).
 * RET: G3_ERR_COMM for a malformed one, G3_ERR_INVALID_ARG for one that disagrees (both
 * logged, naming the world rank); the exchange's errors. */
static g3_status_t g3_group_blobs_check(const char *name, g3_comm_exchange_t *x,
                                        const int *members, int nmembers,
                                        const g3_group_blob_t *mine,
                                        const g3_group_blob_t **root_p)
{
    for (int i = 0; i < nmembers; i++) {
        const void *blob;
        size_t len;
        const g3_group_blob_t *b;
        g3_status_t st = g3_comm_exchange_get(x, members[i], &blob, &len);

        if (st != G3_OK)
            return st;
        b = blob;
        if (len != sizeof(*b) || b->magic != G3_GROUP_MAGIC) {
            g3_error(
                "group %s: world rank %d sent a malformed group description (%zu bytes); is it running the same gpt3d build?",
                name, members[i], len);
            return G3_ERR_COMM;
        }
        if (b->nmembers != (uint32_t)nmembers || b->members_hash != mine->members_hash ||
            b->backend != mine->backend) {
            g3_error(
                "group %s: world rank %d disagrees on the group (it has %u members on backend %s, this rank %d members on %s, member lists %s); every member must pass the same list in the same order",
                name, members[i], b->nmembers, g3_comm_backend_name((g3_comm_backend_t)b->backend),
                nmembers, g3_comm_backend_name((g3_comm_backend_t)mine->backend),
                b->members_hash == mine->members_hash ? "equal" : "differ");
            return G3_ERR_INVALID_ARG;
        }
        if (i == 0)
            *root_p = b;
    }
    return G3_OK;
}

g3_status_t g3_comm_group_create(g3_comm_world_t *world, const char *name,
                                 g3_comm_backend_t backend, const int *members, int nmembers,
                                 g3_comm_t **comm_p)
{
    g3_comm_t *comm;
    g3_group_blob_t mine;
    const g3_group_blob_t *root_blob = NULL;
    g3_comm_exchange_t *x = NULL;
    int self;
    g3_status_t st;

    if (!g3_comm_backend_available(backend)) {
        g3_error(
            "group %s: the %s backend is not built into this gpt3d (configure found no NCCL); use the host backend or rebuild with NCCL",
            name, g3_comm_backend_name(backend));
        return G3_ERR_UNSUPPORTED;
    }
    if (backend == G3_COMM_BACKEND_STAGED) {
        g3_error("group %s: a staged group needs the compute backend's copy functions; create it with g3_comm_group_create_staged", name);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_group_check_members(world, name, members, nmembers, &self);
    if (st != G3_OK)
        return st;
    if (world->group_seq >= 0xffffu) {
        g3_error(
            "group %s: too many group layers created (%u); groups are meant to be made once at start-up",
            name, world->group_seq);
        return G3_ERR_INVALID_ARG;
    }

    comm = calloc(1, sizeof(*comm));
    if (comm == NULL)
        return G3_ERR_NO_MEMORY;
    comm->members = malloc((size_t)nmembers * sizeof(int));
    if (comm->members == NULL) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_comm;
    }
    memcpy(comm->members, members, (size_t)nmembers * sizeof(int));
    comm->world = world;
    comm->backend = backend;
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    comm->rank = self;
    comm->size = nmembers;
    comm->context_id = (uint16_t)(++world->group_seq);
    comm->timeout_s = world->timeout_s;
    comm->small_bytes = (size_t)g3_param_comm_small_bytes();

    memset(&mine, 0, sizeof(mine));
    mine.magic = G3_GROUP_MAGIC;
    mine.nmembers = (uint32_t)nmembers;
    mine.members_hash = g3_members_hash(members, nmembers);
    mine.backend = (uint32_t)backend;
#ifdef HAVE_NCCL
    if (backend == G3_COMM_BACKEND_NCCL && self == 0) {
        st = g3_comm_nccl_unique_id(mine.id);
        if (st != G3_OK)
            goto err_free_members;
        mine.has_id = 1;
    }
#endif
    st = g3_comm_world_exchange(world, "group creation", &mine, sizeof(mine), &x);
    if (st != G3_OK)
        goto err_free_members;
    st = g3_group_blobs_check(name, x, members, nmembers, &mine, &root_blob);
    if (st != G3_OK)
        goto err_free_exchange;

    switch (backend) {
    case G3_COMM_BACKEND_HOST:
        if (world->ucx == NULL) {
            st = g3_comm_ucx_world_init(world);
            if (st != G3_OK)
                goto err_free_exchange;
        }
        st = g3_comm_ucx_group_init(comm);
        break;
#ifdef HAVE_NCCL
    case G3_COMM_BACKEND_NCCL:
        if (!root_blob->has_id) {
            g3_error("group %s: its rank 0 (world rank %d) published no NCCL id", name,
                     members[0]);
            st = G3_ERR_COMM;
            break;
        }
        st = g3_comm_nccl_group_init(comm, root_blob->id);
        break;
#endif
    default:
        st = G3_ERR_UNSUPPORTED;
        break;
    }
    (void)root_blob;
    if (st != G3_OK)
        goto err_free_exchange;
    g3_comm_exchange_free(x);
    {
        char list[160];
        g3_comm_format_members(members, nmembers, list, sizeof(list));
        g3_debug("group %s (%s, context %u): rank %d of %d, world ranks %s", name,
                 g3_comm_backend_name(backend), comm->context_id, self, nmembers, list);
    }
    *comm_p = comm;
    return G3_OK;

err_free_exchange:
    g3_comm_exchange_free(x);
err_free_members:
    free(comm->members);
err_free_comm:
    free(comm);
    return st;
}

g3_status_t g3_comm_world_group(g3_comm_world_t *world, g3_comm_backend_t backend,
                                g3_comm_t **comm_p)
{
    int n = world->proc.size;
    int *members = malloc((size_t)n * sizeof(int));
    g3_status_t st;

    if (members == NULL)
        return G3_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++)
        members[i] = i;
    st = g3_comm_group_create(world, "world", backend, members, n, comm_p);
    free(members);
    return st;
}

/* The groups make the transports' worlds (UCX's, on the first host group), so the world's
 * end is here: the transports first, then the bootstrap (world.c), which knows none of them. */
void g3_comm_world_free(g3_comm_world_t *world)
{
    if (world == NULL)
        return;
    if (world->ucx) {
        /* Every rank reaches this point before anyone tears its worker
         * down, so that no message still in flight loses its target.  A
         * broken world skips it: a peer may be gone. */
        if (!world->broken && world->proc.size > 1) {
            double saved = world->timeout_s;
            world->timeout_s = saved < 60 ? saved : 60;
            (void)g3_comm_world_fence(world, "shutdown");
            world->timeout_s = saved;
        }
        g3_comm_ucx_world_free(world);
    }
    g3_comm_world_pmix_free(world);
}

void g3_comm_free(g3_comm_t *comm)
{
    if (comm == NULL)
        return;
    if (comm->ops && comm->ops->destroy)
        comm->ops->destroy(comm);
    free(comm->members);
    free(comm);
}

int g3_comm_rank(const g3_comm_t *comm) { return comm->rank; }
int g3_comm_size(const g3_comm_t *comm) { return comm->size; }
const char *g3_comm_name(const g3_comm_t *comm) { return comm->name; }
g3_comm_backend_t g3_comm_backend(const g3_comm_t *comm) { return comm->backend; }
double g3_comm_timeout(const g3_comm_t *comm) { return comm->timeout_s; }

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
 * statistics around the backend's operation. */
static g3_status_t g3_comm_reduction(g3_comm_t *comm, int scatter, const void *send, void *recv,
                                     size_t n, g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    const char *what = scatter ? "reduce-scatter" : "all-reduce";
    double t0;
    g3_status_t st = g3_comm_check(comm, what, dtype, n, 1, op);
    if (st != G3_OK || n == 0)
        return st;
    t0 = g3_comm_start(comm, what);
    st = (scatter ? comm->ops->reduce_scatter : comm->ops->allreduce)(comm, send, recv, n, dtype,
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
    st = comm->ops->allgather(comm, send, recv, n, dtype);
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
    st = comm->ops->broadcast(comm, buf, n, dtype, root);
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
    st = is_send ? comm->ops->send(comm, buf, n, dtype, peer, tag)
                 : comm->ops->recv(comm, buf, n, dtype, peer, tag);
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
    st = comm->ops->barrier(comm);
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
    if (!comm->ops->istart) {
        g3_error("%s on group %s: the %s backend has no non-blocking collectives", what,
                 comm->name, comm->ops->name);
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
        st = comm->ops->istart(comm, req);
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
    st = comm->ops->iprogress(comm, req, block, &done);
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
    if (req->be && req->comm->ops->irelease)
        req->comm->ops->irelease(req->comm, req);
    free(req);
}
