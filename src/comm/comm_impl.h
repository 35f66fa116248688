/* gpt3d comm internals shared by the world (PMIx), the group layer and the
 * backends (UCX, NCCL).  Not for use outside src/comm. */
#ifndef G3_COMM_IMPL_H
#define G3_COMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "core/clock.h"

typedef struct g3_ucx_world g3_ucx_world_t;

struct g3_comm_world {
    g3_comm_proc_t   proc;
    double           timeout_s;
    int              pmix_up;       /* PMIx_Init succeeded (not a singleton)   */
    void            *pmix_me;       /* pmix_proc_t of this process             */
    uint32_t         exchange_seq;  /* fresh key per exchange                  */
    uint32_t         group_seq;     /* group layers created: context ids       */
    int              broken;        /* a fence failed or timed out             */
    g3_ucx_world_t  *ucx;           /* host transport, made by the first HOST group */
};

/* The backend interface.  Arguments are validated by comm.c before a call
 * reaches the backend: n > 0 for the collectives (send and recv may carry
 * 0 elements), root and peer are valid group ranks; barrier is not called
 * on a group of one, the other collectives are (the backend copies). */
typedef struct {
    const char *name;
    g3_status_t (*allreduce)(g3_comm_t *comm, const void *send, void *recv, size_t n,
                             g3_comm_dtype_t dtype, g3_comm_reduce_t op);
    g3_status_t (*reduce_scatter)(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                  g3_comm_dtype_t dtype, g3_comm_reduce_t op);
    g3_status_t (*allgather)(g3_comm_t *comm, const void *send, void *recv, size_t n,
                             g3_comm_dtype_t dtype);
    g3_status_t (*broadcast)(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                             int root);
    g3_status_t (*send)(g3_comm_t *comm, const void *buf, size_t n, g3_comm_dtype_t dtype,
                        int peer, int tag);
    g3_status_t (*recv)(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                        int peer, int tag);
    g3_status_t (*barrier)(g3_comm_t *comm);
    void        (*destroy)(g3_comm_t *comm);
    /* Non-blocking collectives (comm.h): start req (its fields filled by
     * comm.c, n > 0), progress it (block: until it is complete; OUT *done),
     * release its backend state (req->be; after a failure, cancel). */
    g3_status_t (*istart)(g3_comm_t *comm, g3_comm_req_t *req);
    g3_status_t (*iprogress)(g3_comm_t *comm, g3_comm_req_t *req, int block, int *done);
    void        (*irelease)(g3_comm_t *comm, g3_comm_req_t *req);
} g3_comm_ops_t;

typedef enum { G3_COMM_REQ_ALLREDUCE = 0, G3_COMM_REQ_REDUCE_SCATTER, G3_COMM_REQ_ALLGATHER }
    g3_comm_req_kind_t;

/* A non-blocking collective in flight. */
struct g3_comm_req {
    g3_comm_t          *comm;
    g3_comm_req_kind_t  kind;
    const char         *what;     /* "all-reduce", ... for messages          */
    const void         *send;
    void               *recv;
    size_t              n;
    g3_comm_dtype_t     dtype;
    g3_comm_reduce_t    op;
    void               *after;    /* NCCL: the stream to order behind, or NULL */
    uint32_t            seq;      /* the group's collective sequence number  */
    int                 done;
    void               *be;       /* backend state                            */
};

struct g3_comm {
    const g3_comm_ops_t *ops;
    g3_comm_world_t     *world;
    g3_comm_backend_t    backend;
    char                 name[32];
    int                  rank;           /* grank of this process            */
    int                  size;
    int                 *members;        /* (size) world rank of each grank  */
    uint16_t             context_id;     /* same on every member             */
    double               timeout_s;
    size_t               small_bytes;    /* latency-bound below: RD / trees  */
    g3_status_t          broken;         /* G3_OK until an op fails          */
    uint32_t             coll_seq;       /* collectives started on this group */
    const char          *cur_op;         /* op in progress, for messages     */
    double               busy_s[G3_COMM_STAT_COUNT];   /* time in calls (comm.h) */
    void                *be;             /* backend state                    */
};

/* Log "what timed out" once, in one greppable line:
 * "<op> on group <name> (rank g of n, world ranks ...) timed out after T s waiting for
 *  group rank p (world rank w) to <verb>". peer_grank < 0: peer unknown. */
void g3_comm_log_timeout(const g3_comm_t *comm, int peer_grank, const char *verb);

/* Write the group's world ranks compactly ("0-3,8,10-11") into buf. */
void g3_comm_format_members(const int *members, int n, char *buf, size_t len);

/* The bootstrap's part of g3_comm_world_free (world.c): PMIx finalized, the world freed.
 * The transports' worlds (UCX) are freed before it, by g3_comm_world_free (comm.c). */
void g3_comm_world_pmix_free(g3_comm_world_t *world);

/* Backends. */
g3_status_t g3_comm_ucx_world_init(g3_comm_world_t *world);
void g3_comm_ucx_world_free(g3_comm_world_t *world);
g3_status_t g3_comm_ucx_group_init(g3_comm_t *comm);

#ifdef HAVE_NCCL
/* G3_COMM_NCCL_ID_BYTES: size of ncclUniqueId (checked in nccl.c). */
#define G3_COMM_NCCL_ID_BYTES 128
g3_status_t g3_comm_nccl_unique_id(void *id /* (G3_COMM_NCCL_ID_BYTES,) */);
g3_status_t g3_comm_nccl_group_init(g3_comm_t *comm, const void *id);
#endif

#endif
