/* gpt3d comm: ranks, blob exchange and collectives on groups of ranks.
 *
 * Glossary: world = every rank of the job (PMIx namespace); group = an
 * ordered subset of world ranks with its own communicator; grank = a rank's
 * index inside a group; n = element count per rank; TP/PP/DP = the tensor,
 * pipeline and data-parallel sizes whose groups the trainer builds here.
 *
 * Layers: core <- comm.  The world (g3_comm_world_t) is the PMIx client:
 * who am I, how many are we, which node, and a blob exchange
 * (put / commit / fence / get under a fresh key each time).  A group
 * communicator (g3_comm_t) runs collectives through the row of one backend
 * in the table of transports (comm_impl.h, group.c), chosen when the group is
 * created:
 *   G3_COMM_BACKEND_HOST  UCX ucp tag messages, host memory buffers;
 *   G3_COMM_BACKEND_NCCL  NCCL, device memory buffers (builds with NCCL);
 *   G3_COMM_BACKEND_STAGED  device memory buffers moved through host
 *                         buffers and the UCX collectives (staged.c; made
 *                         by g3_comm_group_create_staged, which takes the
 *                         compute backend's copy functions).
 *
 * Every blocking call waits at most the communicator's timeout (seconds;
 * set from --distributed-timeout-minutes by the drivers).  On expiry it logs
 * the group, the operation and the peer it was waiting for, and returns
 * G3_ERR_TIMEOUT; the driver then exits with G3_EXIT_COMM_TIMEOUT (76).  A
 * communicator that timed out or failed is broken: every later call on it
 * returns the same status at once.
 *
 * Ownership: g3_comm_world_init() gives a world the caller frees with
 * g3_comm_world_free() after every group made from it was freed with
 * g3_comm_free().  Not thread safe: one thread per process drives comm. */
#ifndef G3_COMM_COMM_H
#define G3_COMM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum {
    G3_DTYPE_FLOAT32 = 0,
    G3_DTYPE_FLOAT64,
    G3_DTYPE_INT64,
    G3_DTYPE_BFLOAT16,          /* bf16 activations (CUDA); host sums round once per add */
    G3_DTYPE_COUNT
} g3_comm_dtype_t;

typedef enum {
    G3_COMM_SUM = 0,
    G3_COMM_MAX,
    G3_COMM_REDUCE_COUNT
} g3_comm_reduce_t;

typedef enum {
    G3_COMM_BACKEND_HOST = 0,   /* UCX, host buffers   */
    G3_COMM_BACKEND_NCCL,       /* NCCL, device buffers */
    G3_COMM_BACKEND_STAGED,     /* device buffers through host buffers and UCX */
    G3_COMM_BACKEND_COUNT
} g3_comm_backend_t;

/* Default timeout of a blocking operation, in seconds (Megatron-LM's
 * --distributed-timeout-minutes defaults to 10). */
#define G3_COMM_DEFAULT_TIMEOUT_S 600.0

/* RET: element size in bytes, or 0 for an invalid dtype. */
size_t g3_comm_dtype_size(g3_comm_dtype_t dtype);
const char *g3_comm_dtype_name(g3_comm_dtype_t dtype);
const char *g3_comm_reduce_name(g3_comm_reduce_t op);
const char *g3_comm_backend_name(g3_comm_backend_t backend);
/* RET: 1 when this build has the backend (HOST always, NCCL with HAVE_NCCL). */
int g3_comm_backend_available(g3_comm_backend_t backend);

/* ---- world: PMIx bootstrap and blob exchange -------------------------- */

typedef struct {
    int  rank;            /* world rank, 0..size-1                          */
    int  size;            /* world size                                     */
    int  local_rank;      /* rank among the processes of this node          */
    int  local_size;      /* processes of this job on this node             */
    int  node_id;         /* 0..num_nodes-1 as the launcher numbers nodes    */
    int  num_nodes;
    int  singleton;       /* 1: no PMIx server, this process is the job     */
    char hostname[256];
    char nspace[256];     /* PMIx namespace ("singleton" when alone)        */
} g3_comm_proc_t;

typedef struct g3_comm_world g3_comm_world_t;

/* Connect to the PMIx server (srun --mpi=pmix, mpirun) and read rank, size,
 * local rank, node id and hostname.  Without a server (no PMIX_* variables
 * in the environment) the process runs as a one-rank singleton; with the
 * variables set but the server unreachable it fails with G3_ERR_COMM.
 * timeout_s: initial timeout for blocking calls (<= 0: the default).
 * OUT: *world_p, only on G3_OK. */
g3_status_t g3_comm_world_init(double timeout_s, g3_comm_world_t **world_p);
void g3_comm_world_free(g3_comm_world_t *world);

/* RET: this process's identity (owned by world). */
const g3_comm_proc_t *g3_comm_world_proc(const g3_comm_world_t *world);

/* Blob exchange.  Collective over the world: every rank publishes blob
 * (len may be 0) under a fresh key, commits and fences (with data
 * collection), then may read any rank's blob.  Use for UCX worker
 * addresses, NCCL unique ids, topology addresses.
 * OUT: *xchg_p, only on G3_OK; free with g3_comm_exchange_free(). */
typedef struct g3_comm_exchange g3_comm_exchange_t;
g3_status_t g3_comm_world_exchange(g3_comm_world_t *world, const char *what,
                                   const void *blob, size_t len,
                                   g3_comm_exchange_t **xchg_p);
/* Fetch rank's blob (cached after the first get).
 * OUT: *blob_p (owned by xchg, valid until it is freed), *len_p. */
g3_status_t g3_comm_exchange_get(g3_comm_exchange_t *xchg, int rank,
                                 const void **blob_p, size_t *len_p);
void g3_comm_exchange_free(g3_comm_exchange_t *xchg);

/* For drivers that are about to exit with a failure (e.g. 76 after a
 * timeout): ask the launcher to end every rank of the job now, with
 * exit_code as the job's status, instead of leaving the ranks that still
 * wait (or are stuck) to run into their own timeouts.  Returns (the caller
 * still returns its exit code); a no-op for a singleton. */
void g3_comm_world_abort(g3_comm_world_t *world, int exit_code, const char *reason);

/* Barrier over the whole world through PMIx (no data), with the timeout. */
g3_status_t g3_comm_world_fence(g3_comm_world_t *world, const char *what);

/* ---- groups ------------------------------------------------------------ */

typedef struct g3_comm g3_comm_t;

/* Create the communicator of this rank's group.  Collective over the WHOLE
 * world: every world rank calls it in the same order (one call creates one
 * "layer" of disjoint groups, e.g. all TP groups at once), passing the
 * members of its own group as world ranks in group-rank order; the list
 * must contain the caller and be identical on every member (checked: a
 * mismatch is an error naming the rank that disagrees).  name is used in
 * logs ("tp", "pp", "dp", "world").  The NCCL backend uses the CUDA device
 * that is current at the call.
 * OUT: *comm_p, only on G3_OK. */
g3_status_t g3_comm_group_create(g3_comm_world_t *world, const char *name,
                                 g3_comm_backend_t backend,
                                 const int *members, int nmembers,
                                 g3_comm_t **comm_p);
/* The group of all world ranks in world-rank order (collective). */
g3_status_t g3_comm_world_group(g3_comm_world_t *world, g3_comm_backend_t backend,
                                g3_comm_t **comm_p);
void g3_comm_free(g3_comm_t *comm);

/* The staged backend (--distributed-backend ucx): a group whose buffers are device memory
 * of a compute backend that comm does not know, moved through host buffers: every
 * collective and transfer copies its input device -> host (to_host: in the order of the
 * device work queued before it, so the input is complete), runs the UCX host collective
 * of the same name on the host copy (the same algorithm and reduction order as a HOST
 * group of the same members: bitwise the same result for the same bytes), and copies the
 * result host -> device (to_device).  Non-blocking collectives copy in at the start (the
 * `after` stream is the one to_host orders behind: the compute stream) and copy out when
 * the host request completes (g3_comm_test or g3_comm_wait).
 * Host buffers come from host_alloc (page-locked memory on a GPU; NULL: malloc) and are
 * reused: a group keeps the largest it needed, one per collective in flight. */
typedef struct {
    void *ctx;   /* the compute backend, passed back to every function */
    /* host_dst <- dev_src (bytes), after the device work queued so far; returns when the
     * bytes are in host_dst.  RET: G3_OK or the device's error (logged by it). */
    g3_status_t (*to_host)(void *ctx, void *host_dst, const void *dev_src, size_t bytes);
    /* dev_dst <- host_src (bytes), before the device work queued after it; returns when
     * host_src may be reused.  RET: G3_OK or the device's error (logged by it). */
    g3_status_t (*to_device)(void *ctx, void *dev_dst, const void *host_src, size_t bytes);
    /* Optional, both or neither: host memory for the staging buffers (page-locked). */
    g3_status_t (*host_alloc)(void *ctx, size_t bytes, void **ptr_p);
    void (*host_free)(void *ctx, void *ptr);
} g3_comm_devmem_t;

/* Create a STAGED group: collective over the world like g3_comm_group_create (it makes a
 * HOST group of the same members inside).  mem is copied; mem->ctx must outlive the group.
 * OUT: *comm_p, only on G3_OK. */
g3_status_t g3_comm_group_create_staged(g3_comm_world_t *world, const char *name,
                                        const g3_comm_devmem_t *mem, const int *members,
                                        int nmembers, g3_comm_t **comm_p);

int g3_comm_rank(const g3_comm_t *comm);             /* grank of this process */
int g3_comm_size(const g3_comm_t *comm);
int g3_comm_world_rank_of(const g3_comm_t *comm, int grank);
void g3_comm_set_timeout(g3_comm_t *comm, double timeout_s);

/* ---- collectives (blocking; every member calls them in the same order) --
 * Buffers are host memory for HOST groups and device memory for NCCL
 * groups.  send == recv means in place where allowed. */

/* recv[i] = op over ranks of send[i].  send, recv: (n,); in place allowed.
 * Every member gets bitwise the same result.  BFLOAT16 sums are rounded to bf16 after
 * every addition (host: fp32 add, round to nearest even; NCCL likewise per step), so N
 * ranks' sum carries up to N - 1 roundings. */
g3_status_t g3_comm_allreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                              g3_comm_dtype_t dtype, g3_comm_reduce_t op);
/* send: (size, n) blocks; rank r gets recv = op over ranks of block r.
 * recv: (n,); must not overlap send. */
g3_status_t g3_comm_reduce_scatter(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                   g3_comm_dtype_t dtype, g3_comm_reduce_t op);
/* send: (n,), recv: (size, n) with block r = rank r's send.  send may be
 * recv + rank * n (in place). */
g3_status_t g3_comm_allgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                              g3_comm_dtype_t dtype);
/* buf: (n,); root's values land on every rank. */
g3_status_t g3_comm_broadcast(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                              int root);
/* Point to point inside the group; tag in [0, G3_COMM_MAX_TAG].  Messages
 * between a pair with the same tag arrive in order.  (NCCL matches in call
 * order and ignores the tag.)  buf: (n,) */
#define G3_COMM_MAX_TAG 0x7fffff
g3_status_t g3_comm_send(g3_comm_t *comm, const void *buf, size_t n, g3_comm_dtype_t dtype,
                         int peer, int tag);
g3_status_t g3_comm_recv(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                         int peer, int tag);
g3_status_t g3_comm_barrier(g3_comm_t *comm);

/* ---- non-blocking collectives ------------------------------------------
 * Start a collective and return at once with a request; the collective
 * runs while the caller computes and is finished by g3_comm_wait.  The
 * arguments and results are those of the blocking call of the same name,
 * but the algorithm is fixed (so that an overlapped and a non-overlapped
 * run give the same bits): every block is reduced on one rank in group
 * rank order 0, 1, ..., N-1 and copied to the others.
 *   HOST (UCX): the messages of a round are posted at the start; the
 *     reductions between rounds and the next round's posts happen in
 *     g3_comm_test and g3_comm_wait (call g3_comm_test now and then while
 *     computing; any other call on the process's UCX worker moves the
 *     bytes too).  Rounds: all-reduce 2 (blocks to their owners, reduced
 *     blocks to everyone), reduce-scatter 1, all-gather 1, each with N - 1
 *     concurrent sends and receives.
 *   NCCL: enqueued on the group's stream behind an event recorded on
 *     `after` (a cudaStream_t, the compute stream whose queued work
 *     produces send; NULL: none) and an event recorded behind it; test
 *     queries that event, wait waits for it on the host with the group's
 *     timeout (and aborts the communicator on expiry).
 * send and recv must stay valid and untouched until the wait returns.
 * Every member starts the group's collectives (blocking and non-blocking)
 * in the same order; several may be in flight on one group.
 * OUT: *req_p (only on G3_OK; freed by g3_comm_wait or g3_comm_req_free). */
typedef struct g3_comm_req g3_comm_req_t;
g3_status_t g3_comm_iallreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                               g3_comm_dtype_t dtype, g3_comm_reduce_t op, void *after,
                               g3_comm_req_t **req_p);
g3_status_t g3_comm_ireduce_scatter(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                    g3_comm_dtype_t dtype, g3_comm_reduce_t op, void *after,
                                    g3_comm_req_t **req_p);
g3_status_t g3_comm_iallgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                               g3_comm_dtype_t dtype, void *after, g3_comm_req_t **req_p);
/* Progress req without blocking.  OUT: *done_p (1 when complete; the
 * request still has to be waited for or freed).  RET: comm errors (the
 * group is then broken). */
g3_status_t g3_comm_test(g3_comm_req_t *req, int *done_p);
/* Wait until req is complete (the group's timeout applies to each round),
 * then free it.  req may be NULL (G3_OK).  RET: comm errors, timeouts. */
g3_status_t g3_comm_wait(g3_comm_req_t *req);
/* Drop a request without waiting (after another failure): outstanding
 * receives are cancelled.  NULL is fine. */
void g3_comm_req_free(g3_comm_req_t *req);

/* ---- time spent in communication (--timing-log-level) ------------------
 * Each group adds up the wall-clock time this process spends inside its calls, per kind:
 * a blocking call from entry to return (for NCCL and staged groups that includes waiting
 * for the device), a non-blocking collective in its start, test and wait calls (the time it
 * runs in the background is not counted: that is the overlap).  Cumulative since the group
 * was made; a caller that wants intervals subtracts two readings. */
typedef enum {
    G3_COMM_STAT_ALLREDUCE = 0,
    G3_COMM_STAT_REDUCE_SCATTER,
    G3_COMM_STAT_ALLGATHER,
    G3_COMM_STAT_BROADCAST,
    G3_COMM_STAT_SEND,
    G3_COMM_STAT_RECV,
    G3_COMM_STAT_BARRIER,
    G3_COMM_STAT_NONBLOCKING,
    G3_COMM_STAT_COUNT
} g3_comm_stat_t;
/* RET: "all-reduce", "reduce-scatter", ... "non-blocking". */
const char *g3_comm_stat_name(g3_comm_stat_t kind);
/* OUT: seconds[G3_COMM_STAT_COUNT], cumulative; all zero for a NULL comm. */
void g3_comm_busy(const g3_comm_t *comm, double seconds[G3_COMM_STAT_COUNT]);

/* ---- serial reference (tests) ------------------------------------------
 * dst[i] = op(dst[i], src[i]) for i < n.  dst, src: (n,) host memory. */
void g3_comm_reduce_local(void *dst, const void *src, size_t n, g3_comm_dtype_t dtype,
                          g3_comm_reduce_t op);

#endif
