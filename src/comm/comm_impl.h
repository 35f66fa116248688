/* gpt3d comm internals shared by the world (PMIx), the groups, the dispatch and the
 * transports (UCX, NCCL, staged).  Not for use outside src/comm. */
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

/* What the group-creation exchange carries from a group's rank 0 to every member's
 * group_init (NCCL's unique id; checked against ncclUniqueId in nccl.c). */
#define G3_COMM_GROUP_ID_BYTES 128

/* How a group is made (group.c hands it to the transport's group_init). */
typedef struct {
    const void             *root_id;   /* (G3_COMM_GROUP_ID_BYTES) rank 0's group_id, or NULL */
    const g3_comm_devmem_t *mem;       /* the compute backend's copies (devmem rows)          */
    g3_comm_t              *over;      /* the group this one is made on (devmem rows):
                                        * the new group owns it from a G3_OK on            */
} g3_comm_group_init_t;

/* A transport: one row of the table the groups are made from (g3_comm_transports in
 * group.c, indexed by g3_comm_backend_t; NCCL's ncclTransports[] is the model).  Each row is
 * defined in its transport's own file (ucx.c, nccl.c, staged.c); a build without the library
 * has no row, and the backend is "not built".  comm.c and group.c call a transport only
 * through its row; the transports call the generic helpers of comm.c and world.c, never
 * group.c, so the files of src/comm call in no circle.
 *
 * The ops: arguments are validated by comm.c before a call reaches them: n > 0 for the
 * collectives (send and recv may carry 0 elements), root and peer are valid group ranks;
 * barrier is not called on a group of one, the other collectives are (the transport
 * copies). */
typedef struct g3_comm_transport {
    const char *name;    /* for messages: "host (UCX)", "device (NCCL)", ...                */
    /* 1: its groups move device buffers with the compute backend's copies and are made on a
     * group of backend `over` (staged: HOST), by g3_comm_group_create_staged. */
    int               devmem;
    g3_comm_backend_t over;
    /* The transport's part of the world: made before each of its groups (does nothing once
     * made), freed by g3_comm_world_free before the bootstrap (nothing when never made).
     * NULL: none. */
    g3_status_t (*world_init)(g3_comm_world_t *world);
    void        (*world_free)(g3_comm_world_t *world);
    /* Optional: what a group's rank 0 publishes for every member's group_init (root_id).
     * OUT: id (G3_COMM_GROUP_ID_BYTES). */
    g3_status_t (*group_id)(void *id);
    /* comm's generic fields are set (comm->tp is this row): make comm->be.  On a failure,
     * what it made is undone (group_free is not called). */
    g3_status_t (*group_init)(g3_comm_t *comm, const g3_comm_group_init_t *init);
    void        (*group_free)(g3_comm_t *comm);
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
    /* Non-blocking collectives (comm.h; NULL: none): start req (its fields filled by
     * comm.c, n > 0), progress it (block: until it is complete; OUT *done), release its
     * transport state (req->be; after a failure, cancel). */
    g3_status_t (*istart)(g3_comm_t *comm, g3_comm_req_t *req);
    g3_status_t (*iprogress)(g3_comm_t *comm, g3_comm_req_t *req, int block, int *done);
    void        (*irelease)(g3_comm_t *comm, g3_comm_req_t *req);
} g3_comm_transport_t;

/* The rows (in their transports' files). */
extern const g3_comm_transport_t g3_comm_transport_ucx;
#ifdef HAVE_NCCL
extern const g3_comm_transport_t g3_comm_transport_nccl;
#endif
extern const g3_comm_transport_t g3_comm_transport_staged;

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
    void               *be;       /* the transport's state                    */
};

struct g3_comm {
    const g3_comm_transport_t *tp;   /* its transport's row      */
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
    void                *be;             /* the transport's state            */
};

/* Log "what timed out" once, in one greppable line:
 * "<op> on group <name> (rank g of n, world ranks ...) timed out after T s waiting for
 *  group rank p (world rank w) to <verb>". peer_grank < 0: peer unknown. */
void g3_comm_log_timeout(const g3_comm_t *comm, int peer_grank, const char *verb);

/* Write the group's world ranks compactly ("0-3,8,10-11") into buf. */
void g3_comm_format_members(const int *members, int n, char *buf, size_t len);

/* The bootstrap's part of g3_comm_world_free (world.c): PMIx finalized, the world freed.
 * The transports' worlds (UCX) are freed before it, by g3_comm_world_free (group.c). */
void g3_comm_world_pmix_free(g3_comm_world_t *world);

#endif
