/* gpt3d comm: the staged backend (--distributed-backend ucx): device buffers through host
 * buffers and the UCX host collectives (comm.h, g3_comm_group_create_staged, which makes a
 * group of this row, g3_comm_transport_staged, in group.c).
 *
 * A staged group owns a HOST group of the same members (its own context id) and a pool of
 * host staging buffers.  Each operation copies its input device -> host with the compute
 * backend's to_host (ordered behind the device work queued before it), calls the host
 * operation of the same name through the public API on the host copy (same arguments, so
 * the same algorithm and reduction order as a HOST group: bitwise the same result for the
 * same bytes), and copies the result host -> device with to_device.  comm never includes a
 * device runtime header: the copies and the page-locked allocations are the compute
 * backend's (g3_comm_devmem_t).
 *
 * Buffers: n elements of dtype per rank; N the group size; es the element size. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/log.h"

#define G3_STAGED_POOL_MAX 256   /* staging buffers at once: one per collective in flight
                                  * (the engine has at most 2 per segment, 2 x 30) */

typedef struct {
    void  *ptr;       /* host memory from host_alloc (or malloc)                         */
    size_t cap;       /* bytes                                                           */
    int    busy;
} g3_staged_buf_t;

typedef struct {
    g3_comm_t        *host;                        /* the HOST group of the same members */
    g3_comm_devmem_t  mem;
    g3_staged_buf_t   pool[G3_STAGED_POOL_MAX];
} g3_staged_t;

/* A non-blocking collective in flight: its staging buffer and the host request. */
typedef struct {
    g3_staged_buf_t *buf;
    g3_comm_req_t   *host;
} g3_staged_req_t;

static void g3_staged_host_free(g3_staged_t *s, void *p)
{
    if (!p)
        return;
    if (s->mem.host_free)
        s->mem.host_free(s->mem.ctx, p);
    else
        free(p);
}

/* A free staging buffer of at least bytes: the smallest free one that fits, else a new one
 * (replacing the largest free one that is too small).  RET: NULL after logging. */
static g3_staged_buf_t *g3_staged_get(g3_comm_t *comm, size_t bytes)
{
    g3_staged_t *s = comm->be;
    g3_staged_buf_t *fit = NULL, *spare = NULL;
    size_t cap = 4096;
    g3_status_t st = G3_OK;
    void *p = NULL;

    for (int i = 0; i < G3_STAGED_POOL_MAX; i++) {
        g3_staged_buf_t *b = &s->pool[i];
        if (b->busy)
            continue;
        if (b->ptr && b->cap >= bytes && (!fit || b->cap < fit->cap))
            fit = b;
        else if (!spare || !b->ptr || (spare->ptr && b->cap > spare->cap))
            spare = b;
    }
    if (fit) {
        fit->busy = 1;
        return fit;
    }
    if (!spare) {
        g3_error("%s on group %s: more than %d staged collectives in flight", comm->cur_op,
                 comm->name, G3_STAGED_POOL_MAX);
        return NULL;
    }
    while (cap < bytes)
        cap *= 2;
    g3_staged_host_free(s, spare->ptr);
    spare->ptr = NULL;
    spare->cap = 0;
    if (s->mem.host_alloc)
        st = s->mem.host_alloc(s->mem.ctx, cap, &p);
    else if (!(p = malloc(cap)))
        st = G3_ERR_NO_MEMORY;
    if (st != G3_OK || !p) {
        g3_error("%s on group %s: cannot allocate %.1f MiB of host memory for staging device buffers (--distributed-backend ucx); free host memory or use --distributed-backend nccl", comm->cur_op, comm->name,
                 (double)cap / 1048576.0);
        return NULL;
    }
    spare->ptr = p;
    spare->cap = cap;
    spare->busy = 1;
    return spare;
}

static void g3_staged_put(g3_staged_buf_t *b)
{
    if (b)
        b->busy = 0;
}

/* The host group follows the staged group's timeout (g3_comm_set_timeout sets the outer). */
static g3_comm_t *g3_staged_host(g3_comm_t *comm)
{
    g3_staged_t *s = comm->be;
    s->host->timeout_s = comm->timeout_s;
    return s->host;
}

static g3_status_t g3_staged_in(g3_comm_t *comm, void *h, const void *d, size_t bytes)
{
    g3_staged_t *s = comm->be;
    return bytes ? s->mem.to_host(s->mem.ctx, h, d, bytes) : G3_OK;
}

static g3_status_t g3_staged_out(g3_comm_t *comm, void *d, const void *h, size_t bytes)
{
    g3_staged_t *s = comm->be;
    return bytes ? s->mem.to_device(s->mem.ctx, d, h, bytes) : G3_OK;
}

/* ---- blocking operations -------------------------------------------------------------- */

/* The blocking operations on n elements staged through one host buffer (n,): `in` (device)
 * copied in when not NULL, the host group's operation on the buffer (op for the all-reduce,
 * peer the root of a broadcast or the peer of a send or receive, tag theirs), the buffer
 * copied out to `out` when not NULL. */
typedef enum {
    G3_STAGED_ALLREDUCE,
    G3_STAGED_BROADCAST,
    G3_STAGED_SEND,
    G3_STAGED_RECV
} g3_staged_kind_t;

static g3_status_t g3_staged_run(g3_comm_t *comm, g3_staged_kind_t kind, const void *in,
                                 void *out, size_t n, g3_comm_dtype_t dtype,
                                 g3_comm_reduce_t op, int peer, int tag)
{
    size_t bytes = n * g3_comm_dtype_size(dtype);
    g3_staged_buf_t *b = g3_staged_get(comm, bytes);
    g3_comm_t *host;
    g3_status_t st = G3_OK;

    if (!b)
        return G3_ERR_NO_MEMORY;
    if (in)
        st = g3_staged_in(comm, b->ptr, in, bytes);
    host = g3_staged_host(comm);
    if (st == G3_OK && kind == G3_STAGED_ALLREDUCE)
        st = g3_comm_allreduce(host, b->ptr, b->ptr, n, dtype, op);
    else if (st == G3_OK && kind == G3_STAGED_BROADCAST)
        st = g3_comm_broadcast(host, b->ptr, n, dtype, peer);
    else if (st == G3_OK && kind == G3_STAGED_SEND)
        st = g3_comm_send(host, b->ptr, n, dtype, peer, tag);
    else if (st == G3_OK)
        st = g3_comm_recv(host, b->ptr, n, dtype, peer, tag);
    if (st == G3_OK && out)
        st = g3_staged_out(comm, out, b->ptr, bytes);
    g3_staged_put(b);
    return st;
}

static g3_status_t g3_staged_allreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                       g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    return g3_staged_run(comm, G3_STAGED_ALLREDUCE, send, recv, n, dtype, op, 0, 0);
}

/* send (N, n) -> host [0, N n), the reduced block r -> host [N n, (N+1) n) -> recv (n,) */
static g3_status_t g3_staged_reduce_scatter(g3_comm_t *comm, const void *send, void *recv,
                                            size_t n, g3_comm_dtype_t dtype,
                                            g3_comm_reduce_t op)
{
    size_t bytes = n * g3_comm_dtype_size(dtype), all = bytes * (size_t)comm->size;
    g3_staged_buf_t *b = g3_staged_get(comm, all + bytes);
    g3_status_t st;

    if (!b)
        return G3_ERR_NO_MEMORY;
    st = g3_staged_in(comm, b->ptr, send, all);
    if (st == G3_OK)
        st = g3_comm_reduce_scatter(g3_staged_host(comm), b->ptr, (char *)b->ptr + all, n,
                                    dtype, op);
    if (st == G3_OK)
        st = g3_staged_out(comm, recv, (char *)b->ptr + all, bytes);
    g3_staged_put(b);
    return st;
}

/* send (n,) -> host block r, gathered in place, host (N, n) -> recv */
static g3_status_t g3_staged_allgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                       g3_comm_dtype_t dtype)
{
    size_t bytes = n * g3_comm_dtype_size(dtype), all = bytes * (size_t)comm->size;
    g3_staged_buf_t *b = g3_staged_get(comm, all);
    char *mine;
    g3_status_t st;

    if (!b)
        return G3_ERR_NO_MEMORY;
    mine = (char *)b->ptr + (size_t)comm->rank * bytes;
    st = g3_staged_in(comm, mine, send, bytes);
    if (st == G3_OK)
        st = g3_comm_allgather(g3_staged_host(comm), mine, b->ptr, n, dtype);
    if (st == G3_OK)
        st = g3_staged_out(comm, recv, b->ptr, all);
    g3_staged_put(b);
    return st;
}

static g3_status_t g3_staged_broadcast(g3_comm_t *comm, void *buf, size_t n,
                                       g3_comm_dtype_t dtype, int root)
{
    int mine = comm->rank == root;

    return g3_staged_run(comm, G3_STAGED_BROADCAST, mine ? buf : NULL, mine ? NULL : buf, n,
                         dtype, G3_COMM_SUM, root, 0);
}

static g3_status_t g3_staged_send(g3_comm_t *comm, const void *buf, size_t n,
                                  g3_comm_dtype_t dtype, int peer, int tag)
{
    return g3_staged_run(comm, G3_STAGED_SEND, buf, NULL, n, dtype, G3_COMM_SUM, peer, tag);
}

static g3_status_t g3_staged_recv(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                                  int peer, int tag)
{
    return g3_staged_run(comm, G3_STAGED_RECV, NULL, buf, n, dtype, G3_COMM_SUM, peer, tag);
}

static g3_status_t g3_staged_barrier(g3_comm_t *comm)
{
    return g3_comm_barrier(g3_staged_host(comm));
}

static void g3_staged_group_free(g3_comm_t *comm)
{
    g3_staged_t *s = comm->be;
    if (!s)
        return;
    for (int i = 0; i < G3_STAGED_POOL_MAX; i++)
        g3_staged_host_free(s, s->pool[i].ptr);
    g3_comm_free(s->host);
    free(s);
    comm->be = NULL;
}

/* ---- non-blocking collectives ------------------------------------------------------------
 * Layout of the staging buffer: all-reduce (n,) in place; reduce-scatter (N, n) then the
 * block (n,); all-gather (N, n) with the input at block r. */

static void g3_staged_irelease(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_staged_req_t *q = req->be;
    (void)comm;
    if (!q)
        return;
    g3_comm_req_free(q->host);
    g3_staged_put(q->buf);
    free(q);
    req->be = NULL;
}

static g3_status_t g3_staged_istart(g3_comm_t *comm, g3_comm_req_t *req)
{
    size_t bytes = req->n * g3_comm_dtype_size(req->dtype), all = bytes * (size_t)comm->size;
    g3_comm_t *host = g3_staged_host(comm);
    g3_staged_req_t *q = calloc(1, sizeof(*q));
    g3_status_t st;
    char *h;

    req->seq = comm->coll_seq++;
    if (!q) {
        g3_error("%s on group %s: out of memory", comm->cur_op, comm->name);
        return G3_ERR_NO_MEMORY;
    }
    req->be = q;
    q->buf = g3_staged_get(comm, req->kind == G3_COMM_REQ_ALLREDUCE ? bytes
                                 : req->kind == G3_COMM_REQ_REDUCE_SCATTER ? all + bytes
                                                                           : all);
    if (!q->buf) {
        st = G3_ERR_NO_MEMORY;
        goto err_release;
    }
    h = q->buf->ptr;
    switch (req->kind) {
    case G3_COMM_REQ_ALLREDUCE:
        st = g3_staged_in(comm, h, req->send, bytes);
        if (st == G3_OK)
            st = g3_comm_iallreduce(host, h, h, req->n, req->dtype, req->op, NULL, &q->host);
        break;
    case G3_COMM_REQ_REDUCE_SCATTER:
        st = g3_staged_in(comm, h, req->send, all);
        if (st == G3_OK)
            st = g3_comm_ireduce_scatter(host, h, h + all, req->n, req->dtype, req->op, NULL,
                                         &q->host);
        break;
    default:
        st = g3_staged_in(comm, h + (size_t)comm->rank * bytes, req->send, bytes);
        if (st == G3_OK)
            st = g3_comm_iallgather(host, h + (size_t)comm->rank * bytes, h, req->n,
                                    req->dtype, NULL, &q->host);
        break;
    }
    if (st != G3_OK)
        goto err_release;
    return G3_OK;

err_release:
    g3_staged_irelease(comm, req);
    return st;
}

static g3_status_t g3_staged_iprogress(g3_comm_t *comm, g3_comm_req_t *req, int block,
                                       int *done)
{
    g3_staged_req_t *q = req->be;
    size_t bytes = req->n * g3_comm_dtype_size(req->dtype), all = bytes * (size_t)comm->size;
    char *h = q->buf->ptr;
    int host_done = 0;
    g3_status_t st;

    *done = 0;
    g3_staged_host(comm);
    if (block) {
        st = g3_comm_wait(q->host);
        q->host = NULL;
        if (st != G3_OK)
            return st;
    } else {
        st = g3_comm_test(q->host, &host_done);
        if (st != G3_OK || !host_done)
            return st;
        st = g3_comm_wait(q->host);   /* complete: frees the request at once */
        q->host = NULL;
        if (st != G3_OK)
            return st;
    }
    if (req->kind == G3_COMM_REQ_ALLREDUCE)
        st = g3_staged_out(comm, req->recv, h, bytes);
    else if (req->kind == G3_COMM_REQ_REDUCE_SCATTER)
        st = g3_staged_out(comm, req->recv, h + all, bytes);
    else
        st = g3_staged_out(comm, req->recv, h, all);
    g3_staged_put(q->buf);
    q->buf = NULL;
    if (st == G3_OK)
        *done = 1;
    return st;
}

/* The row's group_init: comm is made on init->over, a HOST group of the same members, and
 * copies with init->mem (both checked and made by g3_comm_group_create_staged, group.c). */
static g3_status_t g3_staged_group_init(g3_comm_t *comm, const g3_comm_group_init_t *init)
{
    g3_staged_t *s = calloc(1, sizeof(*s));

    if (!s) {
        g3_error("group %s: out of memory", comm->name);
        return G3_ERR_NO_MEMORY;
    }
    s->host = init->over;
    s->mem = *init->mem;
    comm->be = s;
    return G3_OK;
}

const g3_comm_transport_t g3_comm_transport_staged = {
    .name = "device through host (UCX, staged)",
    .devmem = 1,
    .over = G3_COMM_BACKEND_HOST,
    .group_init = g3_staged_group_init,
    .group_free = g3_staged_group_free,
    .allreduce = g3_staged_allreduce,
    .reduce_scatter = g3_staged_reduce_scatter,
    .allgather = g3_staged_allgather,
    .broadcast = g3_staged_broadcast,
    .send = g3_staged_send,
    .recv = g3_staged_recv,
    .barrier = g3_staged_barrier,
    .istart = g3_staged_istart,
    .iprogress = g3_staged_iprogress,
    .irelease = g3_staged_irelease,
};
