/* gpt3d comm: the device backend on NCCL (built when configure finds it).
 *
 * Buffers are device memory on the CUDA device that was current when the
 * group was created.  The communicator is created non-blocking from a
 * unique id that the group's rank 0 published in the group-creation
 * exchange over PMIx (group.c, the row's group_id).  Every operation is enqueued on the group's
 * own stream and then waited for on the host by one polling loop
 * (g3_nccl_poll: cudaStreamQuery or cudaEventQuery with a growing sleep,
 * 20 us .. 1 ms, never a busy loop, checking ncclCommGetAsyncError and the
 * deadline).  On timeout the communicator is
 * aborted (ncclCommAbort) so that no kernel stays stuck on the GPU.
 * send/recv: NCCL matches in call order and has no tags; tag is ignored. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "comm/comm_impl.h"
#include "core/log.h"

_Static_assert(sizeof(ncclUniqueId) == G3_COMM_GROUP_ID_BYTES, "NCCL unique id size");

typedef struct {
    ncclComm_t   nccl;
    cudaStream_t stream;
    int          device;
    int         *dev_word;   /* (1,) device scratch for the barrier */
    int          aborted;
} g3_nccl_comm_t;

static const ncclDataType_t g3_nccl_types[] = {
    [G3_DTYPE_FLOAT32] = ncclFloat32, [G3_DTYPE_FLOAT64] = ncclFloat64,
    [G3_DTYPE_INT64] = ncclInt64, [G3_DTYPE_BFLOAT16] = ncclBfloat16,
};
static const ncclRedOp_t g3_nccl_ops[] = { [G3_COMM_SUM] = ncclSum, [G3_COMM_MAX] = ncclMax };
_Static_assert(sizeof(g3_nccl_types) / sizeof(g3_nccl_types[0]) == G3_DTYPE_COUNT,
               "one NCCL type per dtype");
_Static_assert(sizeof(g3_nccl_ops) / sizeof(g3_nccl_ops[0]) == G3_COMM_REDUCE_COUNT,
               "one NCCL op per reduction");

static void g3_nccl_sleep(long *ns)
{
    struct timespec ts = { 0, *ns };
    nanosleep(&ts, NULL);
    if (*ns < 1000000)
        *ns *= 2;
}

/* The row's group_id: the unique id the group's rank 0 publishes.  OUT: id (ncclUniqueId). */
static g3_status_t g3_nccl_group_id(void *id)
{
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    if (r != ncclSuccess) {
        g3_error("ncclGetUniqueId failed: %s (%s)", ncclGetErrorString(r),
                 ncclGetLastError(NULL));
        return G3_ERR_COMM;
    }
    memcpy(id, &uid, sizeof(uid));
    return G3_OK;
}

static void g3_nccl_abort(g3_comm_t *comm)
{
    g3_nccl_comm_t *c = comm->be;
    if (!c->aborted) {
        ncclCommAbort(c->nccl);
        c->aborted = 1;
    }
}

/* Wait until NCCL finished its non-blocking call (init or enqueue). */
static g3_status_t g3_nccl_wait_async(g3_comm_t *comm, double deadline, int peer)
{
    g3_nccl_comm_t *c = comm->be;
    long ns = 20000;

    for (;;) {
        ncclResult_t ar = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(c->nccl, &ar);
        if (r != ncclSuccess)
            ar = r;
        if (ar == ncclSuccess)
            return G3_OK;
        if (ar != ncclInProgress) {
            g3_error("%s on group %s: NCCL failed: %s (%s)", comm->cur_op, comm->name,
                     ncclGetErrorString(ar), ncclGetLastError(c->nccl));
            g3_nccl_abort(comm);
            return G3_ERR_COMM;
        }
        if (g3_clock_now() >= deadline) {
            g3_comm_log_timeout(comm, peer, "join");
            g3_nccl_abort(comm);
            return G3_ERR_TIMEOUT;
        }
        g3_nccl_sleep(&ns);
    }
}

/* The one polling loop for work queued on the GPU: query (the group's stream, or a request's
 * event) until it is done, checking NCCL's asynchronous error and the deadline, with a
 * growing sleep (never a busy loop).  block = 0: query once.  On a failure or the deadline
 * the communicator is aborted so that no kernel stays stuck on the GPU.
 * peer, verb: for the timeout message (peer < 0: the whole group).  OUT: *done. */
static g3_status_t g3_nccl_poll(g3_comm_t *comm, cudaStream_t stream, cudaEvent_t event,
                                double deadline, int block, int peer, const char *verb,
                                int *done)
{
    g3_nccl_comm_t *c = comm->be;
    long ns = 20000;

    *done = 0;
    for (;;) {
        cudaError_t ce = event ? cudaEventQuery(event) : cudaStreamQuery(stream);
        ncclResult_t ar = ncclSuccess;

        if (ce == cudaSuccess) {
            *done = 1;
            return G3_OK;
        }
        if (ce != cudaErrorNotReady) {
            g3_error("%s on group %s: CUDA stream failed: %s", comm->cur_op, comm->name,
                     cudaGetErrorString(ce));
            g3_nccl_abort(comm);
            return G3_ERR_DEVICE;
        }
        if (ncclCommGetAsyncError(c->nccl, &ar) == ncclSuccess && ar != ncclSuccess &&
            ar != ncclInProgress) {
            g3_error("%s on group %s: NCCL failed while running: %s (%s)", comm->cur_op,
                     comm->name, ncclGetErrorString(ar), ncclGetLastError(c->nccl));
            g3_nccl_abort(comm);
            return G3_ERR_COMM;
        }
        if (!block)
            return G3_OK;
        if (g3_clock_now() >= deadline) {
            g3_comm_log_timeout(comm, peer, verb);
            g3_nccl_abort(comm);
            return G3_ERR_TIMEOUT;
        }
        g3_nccl_sleep(&ns);
    }
}

/* After an enqueue: check the call's result, then wait for the stream. */
static g3_status_t g3_nccl_finish(g3_comm_t *comm, ncclResult_t r, int peer)
{
    g3_nccl_comm_t *c = comm->be;
    double deadline = g3_clock_now() + comm->timeout_s;
    g3_status_t st;
    int done;

    if (r != ncclSuccess && r != ncclInProgress) {
        g3_error("%s on group %s: NCCL call failed: %s (%s)", comm->cur_op, comm->name,
                 ncclGetErrorString(r), ncclGetLastError(c->nccl));
        return G3_ERR_COMM;
    }
    st = g3_nccl_wait_async(comm, deadline, peer);
    if (st != G3_OK)
        return st;
    return g3_nccl_poll(comm, c->stream, NULL, deadline, 1, peer,
                        peer >= 0 ? "match this transfer" : "join", &done);
}

static g3_status_t g3_nccl_allreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                     g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    g3_nccl_comm_t *c = comm->be;
    return g3_nccl_finish(comm, ncclAllReduce(send, recv, n, g3_nccl_types[dtype],
                                              g3_nccl_ops[op], c->nccl, c->stream), -1);
}

static g3_status_t g3_nccl_reduce_scatter(g3_comm_t *comm, const void *send, void *recv,
                                          size_t n, g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    g3_nccl_comm_t *c = comm->be;
    return g3_nccl_finish(comm, ncclReduceScatter(send, recv, n, g3_nccl_types[dtype],
                                                  g3_nccl_ops[op], c->nccl, c->stream), -1);
}

static g3_status_t g3_nccl_allgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                     g3_comm_dtype_t dtype)
{
    g3_nccl_comm_t *c = comm->be;
    return g3_nccl_finish(comm, ncclAllGather(send, recv, n, g3_nccl_types[dtype], c->nccl,
                                              c->stream), -1);
}

static g3_status_t g3_nccl_broadcast(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                                     int root)
{
    g3_nccl_comm_t *c = comm->be;
    return g3_nccl_finish(comm, ncclBroadcast(buf, buf, n, g3_nccl_types[dtype], root, c->nccl,
                                              c->stream), root == comm->rank ? -1 : root);
}

static g3_status_t g3_nccl_send(g3_comm_t *comm, const void *buf, size_t n, g3_comm_dtype_t dtype,
                                int peer, int tag)
{
    g3_nccl_comm_t *c = comm->be;
    (void)tag;
    return g3_nccl_finish(comm, ncclSend(buf, n, g3_nccl_types[dtype], peer, c->nccl,
                                         c->stream), peer);
}

static g3_status_t g3_nccl_recv(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                                int peer, int tag)
{
    g3_nccl_comm_t *c = comm->be;
    (void)tag;
    return g3_nccl_finish(comm, ncclRecv(buf, n, g3_nccl_types[dtype], peer, c->nccl,
                                         c->stream), peer);
}

static g3_status_t g3_nccl_barrier(g3_comm_t *comm)
{
    g3_nccl_comm_t *c = comm->be;
    return g3_nccl_finish(comm, ncclAllReduce(c->dev_word, c->dev_word, 1, ncclInt32, ncclSum,
                                              c->nccl, c->stream), -1);
}

static void g3_nccl_group_free(g3_comm_t *comm)
{
    g3_nccl_comm_t *c = comm->be;
    if (c == NULL)
        return;
    if (c->aborted || comm->broken != G3_OK)
        g3_nccl_abort(comm);
    else
        ncclCommDestroy(c->nccl);
    cudaFree(c->dev_word);
    cudaStreamDestroy(c->stream);
    free(c);
    comm->be = NULL;
}

/* ---- non-blocking collectives: enqueue behind `after`, wait on an event ---------------- */

typedef struct {
    cudaEvent_t ready;   /* recorded on req->after: the inputs are written         */
    cudaEvent_t done;    /* recorded on the group's stream behind the collective   */
    int         have_ready, have_done;
} g3_nccl_req_t;

static void g3_nccl_irelease(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_nccl_req_t *q = req->be;
    (void)comm;
    if (!q)
        return;
    if (q->have_ready)
        cudaEventDestroy(q->ready);
    if (q->have_done)
        cudaEventDestroy(q->done);
    free(q);
    req->be = NULL;
}

static g3_status_t g3_nccl_cuda_check(g3_comm_t *comm, cudaError_t ce, const char *call)
{
    if (ce == cudaSuccess)
        return G3_OK;
    g3_error("%s on group %s: %s failed: %s", comm->cur_op, comm->name, call,
             cudaGetErrorString(ce));
    return G3_ERR_DEVICE;
}

static g3_status_t g3_nccl_istart(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_nccl_comm_t *c = comm->be;
    g3_nccl_req_t *q = calloc(1, sizeof(*q));
    ncclResult_t r;
    g3_status_t st;

    req->seq = comm->coll_seq++;
    if (!q) {
        g3_error("%s on group %s: out of memory", comm->cur_op, comm->name);
        return G3_ERR_NO_MEMORY;
    }
    req->be = q;
    st = g3_nccl_cuda_check(comm, cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming),
                            "cudaEventCreate");
    q->have_done = st == G3_OK;
    if (st == G3_OK && req->after) {
        st = g3_nccl_cuda_check(comm, cudaEventCreateWithFlags(&q->ready,
                                                               cudaEventDisableTiming),
                                "cudaEventCreate");
        q->have_ready = st == G3_OK;
        if (st == G3_OK)
            st = g3_nccl_cuda_check(comm, cudaEventRecord(q->ready, (cudaStream_t)req->after),
                                    "cudaEventRecord on the compute stream");
        if (st == G3_OK)
            st = g3_nccl_cuda_check(comm, cudaStreamWaitEvent(c->stream, q->ready, 0),
                                    "cudaStreamWaitEvent");
    }
    if (st != G3_OK)
        goto err_release;
    if (req->kind == G3_COMM_REQ_ALLREDUCE)
        r = ncclAllReduce(req->send, req->recv, req->n, g3_nccl_types[req->dtype],
                          g3_nccl_ops[req->op], c->nccl, c->stream);
    else if (req->kind == G3_COMM_REQ_REDUCE_SCATTER)
        r = ncclReduceScatter(req->send, req->recv, req->n, g3_nccl_types[req->dtype],
                              g3_nccl_ops[req->op], c->nccl, c->stream);
    else
        r = ncclAllGather(req->send, req->recv, req->n, g3_nccl_types[req->dtype], c->nccl,
                          c->stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        g3_error("%s on group %s: NCCL call failed: %s (%s)", comm->cur_op, comm->name,
                 ncclGetErrorString(r), ncclGetLastError(c->nccl));
        st = G3_ERR_COMM;
        goto err_release;
    }
    st = g3_nccl_wait_async(comm, g3_clock_now() + comm->timeout_s, -1);   /* enqueued */
    if (st == G3_OK)
        st = g3_nccl_cuda_check(comm, cudaEventRecord(q->done, c->stream),
                                "cudaEventRecord on the NCCL stream");
    if (st != G3_OK)
        goto err_release;
    return G3_OK;

err_release:
    g3_nccl_irelease(comm, req);
    return st;
}

static g3_status_t g3_nccl_iprogress(g3_comm_t *comm, g3_comm_req_t *req, int block, int *done)
{
    g3_nccl_req_t *q = req->be;
    return g3_nccl_poll(comm, NULL, q->done, g3_clock_now() + comm->timeout_s, block, -1, "join",
                        done);
}

/* The row's group_init: the communicator from rank 0's unique id (init->root_id), on the
 * CUDA device current at the call, with its stream and scratch word. */
static g3_status_t g3_nccl_group_init(g3_comm_t *comm, const g3_comm_group_init_t *init)
{
    g3_nccl_comm_t *c;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId uid;
    ncclResult_t r;
    cudaError_t ce;
    g3_status_t st;

    if (init->root_id == NULL) {
        g3_error("group %s: its rank 0 (world rank %d) published no NCCL id", comm->name,
                 comm->members[0]);
        return G3_ERR_COMM;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return G3_ERR_NO_MEMORY;
    ce = cudaGetDevice(&c->device);
    if (ce == cudaSuccess)
        ce = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (ce != cudaSuccess) {
        g3_error("group %s: no usable CUDA device for NCCL: %s", comm->name,
                 cudaGetErrorString(ce));
        st = G3_ERR_DEVICE;
        goto err_free_c;
    }
    ce = cudaMalloc((void **)&c->dev_word, sizeof(int));
    if (ce == cudaSuccess)
        ce = cudaMemset(c->dev_word, 0, sizeof(int));
    if (ce != cudaSuccess) {
        g3_error("group %s: cudaMalloc of the NCCL scratch word failed: %s", comm->name,
                 cudaGetErrorString(ce));
        st = G3_ERR_DEVICE;
        goto err_destroy_stream;
    }
    memcpy(&uid, init->root_id, sizeof(uid));
    config.blocking = 0;
    config.commName = comm->name;
    comm->be = c;
    comm->cur_op = "NCCL communicator creation";
    r = ncclCommInitRankConfig(&c->nccl, comm->size, uid, comm->rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        g3_error("group %s: ncclCommInitRankConfig (rank %d of %d, device %d) failed: %s (%s)",
                 comm->name, comm->rank, comm->size, c->device, ncclGetErrorString(r),
                 ncclGetLastError(NULL));
        st = G3_ERR_COMM;
        goto err_free_word;
    }
    st = g3_nccl_wait_async(comm, g3_clock_now() + comm->timeout_s, -1);
    comm->cur_op = NULL;
    if (st != G3_OK)
        goto err_free_word;   /* aborted by the wait */
    return G3_OK;

err_free_word:
    comm->be = NULL;
    cudaFree(c->dev_word);
err_destroy_stream:
    cudaStreamDestroy(c->stream);
err_free_c:
    free(c);
    return st;
}

const g3_comm_transport_t g3_comm_transport_nccl = {
    .name = "device (NCCL)",
    .group_id = g3_nccl_group_id,
    .group_init = g3_nccl_group_init,
    .group_free = g3_nccl_group_free,
    .allreduce = g3_nccl_allreduce,
    .reduce_scatter = g3_nccl_reduce_scatter,
    .allgather = g3_nccl_allgather,
    .broadcast = g3_nccl_broadcast,
    .send = g3_nccl_send,
    .recv = g3_nccl_recv,
    .barrier = g3_nccl_barrier,
    .istart = g3_nccl_istart,
    .iprogress = g3_nccl_iprogress,
    .irelease = g3_nccl_irelease,
};
