/* gpt3d comm: the host backend on UCX ucp tag messages.
 *
 * One ucp worker per process; endpoints to peers are created on first use
 * from the worker addresses exchanged over PMIx when the first host group
 * is made.  Every message carries a 64-bit tag
 *     [63..48] group context id  [47..24] sender's world rank
 *     [23]     1 = user send/recv, 0 = collective
 *     [22..0]  user tag, or the group's collective sequence number
 * and is received with a full mask, so groups, senders and collectives
 * never mix; UCX matches messages of one sender with equal tags in order.
 *
 * Waiting: ranks often outnumber cores (8 ranks on 2 cores in tests), and
 * a rank that spins on ucp_worker_progress steals the core its peer needs
 * (docs/benchmarks.md, "Host collectives": spinning against waiting).  So
 * when nothing is left to progress we poll a few rounds with sched_yield()
 * between them (16 when ranks outnumber cores, 64 otherwise;
 * GPT3D_COMM_SPIN), then arm the worker and sleep in poll() on its event
 * fd, waking at the latest at the operation's deadline (and once a second
 * to look at it).
 *
 * Algorithms (N ranks, n elements, S = 64 KiB: GPT3D_COMM_SMALL_BYTES):
 *   all-reduce     <= S bytes: recursive doubling (log2 N steps of n,
 *                  folding the ranks beyond a power of two);
 *                  N = 2 above 2 segments (512 KiB): ring (for two ranks
 *                  the same exchange as direct, but cut into segments that
 *                  are folded in as they land; docs/benchmarks.md has the
 *                  before and after);
 *                  up to 32 MiB and N <= 16: direct (every rank sends block
 *                  j to rank j at once, reduces its block, sends it to all:
 *                  2 rounds of concurrent messages);
 *                  up to 1 MiB and N > 16: Rabenseifner (recursive halving
 *                  reduce-scatter + recursive doubling all-gather);
 *                  larger: ring reduce-scatter + ring all-gather (2 (N-1)
 *                  steps of n / N).
 *                  GPT3D_COMM_ALLREDUCE=rd|rh|direct|ring forces one.  All
 *                  give every rank bitwise the same result: a block is
 *                  reduced on one rank and copied, or partial sums meet as
 *                  a+b / b+a (IEEE addition is commutative).
 *   reduce-scatter ring (N-1 steps).
 *   all-gather     recursive doubling for small power-of-two groups, ring
 *                  otherwise.
 *   broadcast      binomial tree when small, else scatter + ring all-gather.
 *   barrier        dissemination (ceil(log2 N) rounds of 1-byte messages).
 * The size thresholds were picked from tools' comm_bench runs with 2 to 8
 * ranks on 2 cores (docs/benchmarks.md); they are guesses for other machines. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

/* All-reduce algorithms; GPT3D_COMM_ALLREDUCE=rd|rh|direct|ring forces one
 * (tests run every one of them; auto picks by size, see the top). */
typedef enum { G3_UCX_AUTO = 0, G3_UCX_RD, G3_UCX_RH, G3_UCX_DIRECT, G3_UCX_RING } g3_ucx_algo_t;
#define G3_UCX_DIRECT_MAX_BYTES ((size_t)32 << 20)
#define G3_UCX_RH_MAX_BYTES     ((size_t)1 << 20)

struct g3_ucx_world {
    g3_ucx_algo_t        algo;      /* forced all-reduce algorithm or auto  */
    ucp_context_h        ctx;
    ucp_worker_h         worker;
    int                  efd;       /* worker event fd for poll()           */
    int                  spin;      /* progress rounds before sleeping      */
    int                  yield;     /* give the core away between them      */
    size_t               segment_bytes; /* ring reduce steps are cut in these */
    g3_comm_exchange_t  *addrs;     /* worker address of every world rank   */
    ucp_ep_h            *eps;       /* (world size) created on first use    */
};

typedef struct {
    void   *scratch[3];            /* grown on demand, 64-byte aligned     */
    size_t  scratch_bytes[3];
} g3_ucx_comm_t;

/* One outstanding message. */
typedef struct {
    void               *req;       /* UCX request, NULL once complete      */
    int                 done;
    int                 is_recv;
    int                 peer;      /* group rank                           */
    size_t              bytes;     /* expected length                      */
    ucs_status_t        status;
    ucp_tag_recv_info_t info;
} g3_ucx_op_t;

#define G3_TAG_CTX_SHIFT  48
#define G3_TAG_SRC_SHIFT  24
#define G3_TAG_USER_BIT   (1ull << 23)
#define G3_TAG_LOW_MASK   0x7fffffull

static ucp_tag_t g3_ucx_tag(const g3_comm_t *comm, int src_world, int user, uint32_t low)
{
    return ((ucp_tag_t)comm->context_id << G3_TAG_CTX_SHIFT) |
           ((ucp_tag_t)(uint32_t)src_world << G3_TAG_SRC_SHIFT) |
           (user ? G3_TAG_USER_BIT : 0) | ((ucp_tag_t)low & G3_TAG_LOW_MASK);
}

/* ---- world ------------------------------------------------------------------ */

/* GPT3D_COMM_ALLREDUCE: the host all-reduce's algorithm (unset or empty: *algo unchanged).
 * RET: G3_ERR_INVALID_ARG (logged) for a name it does not know. */
static g3_status_t g3_ucx_algo_read(g3_ucx_algo_t *algo)
{
    static const char *const names[] = { "auto", "rd", "rh", "direct", "ring" };
    const char *env = g3_param_comm_allreduce();

    if (!env || !*env)
        return G3_OK;
    for (int i = 0; i < 5; i++)
        if (!strcmp(env, names[i])) {
            *algo = (g3_ucx_algo_t)i;
            return G3_OK;
        }
    g3_error("GPT3D_COMM_ALLREDUCE=%s: use auto, rd, rh, direct or ring", env);
    return G3_ERR_INVALID_ARG;
}

/* The UCX context (UCX_* variables read) for a world of size ranks, local_size per node.
 * OUT: *ctx_p. */
static g3_status_t g3_ucx_context_create(int size, int local_size, ucp_context_h *ctx_p)
{
    ucp_params_t params;
    ucp_config_t *config = NULL;
    ucs_status_t us = ucp_config_read(NULL, NULL, &config);

    if (us != UCS_OK) {
        g3_error("UCX: reading the configuration (UCX_* variables) failed: %s",
                 ucs_status_string(us));
        return G3_ERR_COMM;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.estimated_num_eps = (size_t)size;
    params.estimated_num_ppn = (size_t)local_size;
    us = ucp_init(&params, config, ctx_p);
    ucp_config_release(config);
    if (us != UCS_OK) {
        g3_error("UCX: ucp_init failed: %s (check UCX_TLS / UCX_NET_DEVICES)",
                 ucs_status_string(us));
        return G3_ERR_COMM;
    }
    return G3_OK;
}

/* u's worker (single-threaded) and its event fd.  OUT: u->worker, u->efd. */
static g3_status_t g3_ucx_worker_create(g3_ucx_world_t *u)
{
    ucp_worker_params_t wparams;
    ucs_status_t us;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    us = ucp_worker_create(u->ctx, &wparams, &u->worker);
    if (us != UCS_OK) {
        g3_error("UCX: ucp_worker_create failed: %s", ucs_status_string(us));
        return G3_ERR_COMM;
    }
    us = ucp_worker_get_efd(u->worker, &u->efd);
    if (us != UCS_OK) {
        g3_error(
            "UCX: ucp_worker_get_efd failed: %s; the transports in use cannot wake a sleeping rank",
            ucs_status_string(us));
        ucp_worker_destroy(u->worker);
        return G3_ERR_COMM;
    }
    return G3_OK;
}

/* Every world rank's worker address, exchanged over PMIx.  OUT: u->addrs. */
static g3_status_t g3_ucx_addrs_exchange(g3_comm_world_t *world, g3_ucx_world_t *u)
{
    ucp_address_t *addr = NULL;
    size_t addr_len = 0;
    ucs_status_t us = ucp_worker_get_address(u->worker, &addr, &addr_len);
    g3_status_t st;

    if (us != UCS_OK) {
        g3_error("UCX: ucp_worker_get_address failed: %s", ucs_status_string(us));
        return G3_ERR_COMM;
    }
    st = g3_comm_world_exchange(world, "UCX worker addresses", addr, addr_len, &u->addrs);
    ucp_worker_release_address(u->worker, addr);
    return st;
}

/* How u waits and which all-reduce it runs: the progress rounds before sleeping, the yield
 * between them, the ring's segments, GPT3D_COMM_ALLREDUCE.  RET: G3_ERR_INVALID_ARG (logged)
 * for an algorithm it does not know. */
static g3_status_t g3_ucx_world_tune(const g3_comm_world_t *world, g3_ucx_world_t *u)
{
    /* Before sleeping on the event fd, a rank polls a few rounds with
     * sched_yield() in between (the peer we wait for may need this core):
     * 64 when every local rank has a core, 16 when they outnumber them. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    g3_status_t st;

    u->spin = (ncpu > 0 && world->proc.local_size <= ncpu) ? 64 : 16;
    if (g3_param_comm_spin() >= 0)
        u->spin = (int)g3_param_comm_spin();
    /* Yield even when ranks fit (GPT3D_COMM_YIELD's default): other jobs may share the
     * cores, and a yield with nothing else runnable costs well under a microsecond. */
    u->yield = (int)g3_param_comm_yield();
    u->segment_bytes = (size_t)g3_param_comm_segment_bytes();
    st = g3_ucx_algo_read(&u->algo);
    if (st != G3_OK)
        return st;
    g3_debug(
        "UCX %s host backend: %d local ranks on %ld cores, %d progress rounds%s before sleeping",
        ucp_get_version_string(), world->proc.local_size, ncpu, u->spin,
        u->yield ? " (yielding)" : "");
    return G3_OK;
}

/* The row's world_init: the process's worker, made before the first host group (nothing to
 * do after that). */
static g3_status_t g3_ucx_world_init(g3_comm_world_t *world)
{
    g3_ucx_world_t *u;
    g3_status_t st;

    if (world->ucx != NULL)
        return G3_OK;
    if (world->proc.size >= (1 << 24)) {
        g3_error("the host backend supports at most %d ranks, the job has %d", 1 << 24,
                 world->proc.size);
        return G3_ERR_UNSUPPORTED;
    }
    u = calloc(1, sizeof(*u));
    if (u == NULL)
        return G3_ERR_NO_MEMORY;
    u->efd = -1;
    u->eps = calloc((size_t)world->proc.size, sizeof(*u->eps));
    if (u->eps == NULL) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_u;
    }
    st = g3_ucx_context_create(world->proc.size, world->proc.local_size, &u->ctx);
    if (st != G3_OK)
        goto err_free_eps;
    st = g3_ucx_worker_create(u);
    if (st != G3_OK)
        goto err_cleanup_ctx;
    st = g3_ucx_addrs_exchange(world, u);
    if (st != G3_OK)
        goto err_destroy_worker;
    st = g3_ucx_world_tune(world, u);
    if (st != G3_OK)
        goto err_free_addrs;
    world->ucx = u;
    return G3_OK;

err_free_addrs:
    g3_comm_exchange_free(u->addrs);
err_destroy_worker:
    ucp_worker_destroy(u->worker);
err_cleanup_ctx:
    ucp_cleanup(u->ctx);
err_free_eps:
    free(u->eps);
err_free_u:
    free(u);
    return st;
}

/* The row's world_free: after a shutdown fence (every rank reaches it before anyone tears
 * its worker down, so that no message still in flight loses its target; a broken world
 * skips it: a peer may be gone), the endpoints closed and the worker destroyed. */
static void g3_ucx_world_free(g3_comm_world_t *world)
{
    g3_ucx_world_t *u = world->ucx;

    if (u == NULL)
        return;
    if (!world->broken && world->proc.size > 1) {
        double saved = world->timeout_s;
        world->timeout_s = saved < 60 ? saved : 60;
        (void)g3_comm_world_fence(world, "shutdown");
        world->timeout_s = saved;
    }
    for (int r = 0; r < world->proc.size; r++) {
        ucp_request_param_t p;
        void *req;
        double until;

        if (u->eps[r] == NULL)
            continue;
        memset(&p, 0, sizeof(p));
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        req = ucp_ep_close_nbx(u->eps[r], &p);
        if (req == NULL || UCS_PTR_IS_ERR(req))
            continue;
        until = g3_clock_now() + 1.0;
        while (ucp_request_check_status(req) == UCS_INPROGRESS && g3_clock_now() < until)
            ucp_worker_progress(u->worker);
        ucp_request_free(req);
    }
    g3_comm_exchange_free(u->addrs);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ctx);
    free(u->eps);
    free(u);
    world->ucx = NULL;
}

static g3_status_t g3_ucx_ep(g3_comm_t *comm, int world_rank, ucp_ep_h *ep_p)
{
    g3_ucx_world_t *u = comm->world->ucx;
    ucp_ep_params_t p;
    const void *addr;
    size_t len;
    ucs_status_t us;
    g3_status_t st;

    if (u->eps[world_rank] == NULL) {
        st = g3_comm_exchange_get(u->addrs, world_rank, &addr, &len);
        if (st != G3_OK)
            return st;
        memset(&p, 0, sizeof(p));
        p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        p.address = addr;
        p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        us = ucp_ep_create(u->worker, &p, &u->eps[world_rank]);
        if (us != UCS_OK) {
            g3_error("UCX: connecting to world rank %d for group %s failed: %s", world_rank,
                     comm->name, ucs_status_string(us));
            return G3_ERR_COMM;
        }
    }
    *ep_p = u->eps[world_rank];
    return G3_OK;
}

/* ---- posting and waiting ------------------------------------------------------ */

/* What ucp_tag_send_nbx / ucp_tag_recv_nbx returned for op: a failure (logged), or the
 * request to wait for (NULL: done at once). */
static g3_status_t g3_ucx_posted(g3_comm_t *comm, g3_ucx_op_t *op, void *req)
{
    if (UCS_PTR_IS_ERR(req)) {
        if (op->is_recv)
            g3_error("%s on group %s: UCX receive of %zu bytes from world rank %d failed: %s",
                     comm->cur_op, comm->name, op->bytes, comm->members[op->peer],
                     ucs_status_string(UCS_PTR_STATUS(req)));
        else
            g3_error("%s on group %s: UCX send of %zu bytes to world rank %d failed: %s",
                     comm->cur_op, comm->name, op->bytes, comm->members[op->peer],
                     ucs_status_string(UCS_PTR_STATUS(req)));
        return G3_ERR_COMM;
    }
    op->req = req;
    op->done = req == NULL;
    op->status = UCS_OK;
    return G3_OK;
}

static g3_status_t g3_ucx_post_send(g3_comm_t *comm, g3_ucx_op_t *op, int peer, const void *buf,
                                    size_t bytes, int user, uint32_t low)
{
    ucp_request_param_t p;
    ucp_ep_h ep;
    void *req;
    g3_status_t st;

    *op = (g3_ucx_op_t){ .peer = peer, .bytes = bytes };
    st = g3_ucx_ep(comm, comm->members[peer], &ep);
    if (st != G3_OK)
        return st;
    memset(&p, 0, sizeof(p));
    req = ucp_tag_send_nbx(ep, buf, bytes,
                           g3_ucx_tag(comm, comm->members[comm->rank], user, low), &p);
    return g3_ucx_posted(comm, op, req);
}

static g3_status_t g3_ucx_post_recv(g3_comm_t *comm, g3_ucx_op_t *op, int peer, void *buf,
                                    size_t bytes, int user, uint32_t low)
{
    ucp_request_param_t p;
    void *req;

    *op = (g3_ucx_op_t){ .peer = peer, .bytes = bytes, .is_recv = 1 };
    memset(&p, 0, sizeof(p));
    /* UCX 1.13 does not fill recv_info.tag_info when a receive completes
     * at once, so always take a request and read the length from it. */
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    req = ucp_tag_recv_nbx(comm->world->ucx->worker, buf, bytes,
                           g3_ucx_tag(comm, comm->members[peer], user, low),
                           (ucp_tag_t)-1, &p);
    return g3_ucx_posted(comm, op, req);
}

/* RET: number of ops still in flight; *st_p set on the first failure. */
static int g3_ucx_test(g3_comm_t *comm, g3_ucx_op_t *ops, int nops, g3_status_t *st_p)
{
    int pending = 0;

    for (int i = 0; i < nops; i++) {
        g3_ucx_op_t *op = &ops[i];
        if (!op->done) {
            ucs_status_t s = op->is_recv ? ucp_tag_recv_request_test(op->req, &op->info)
                                         : ucp_request_check_status(op->req);
            if (s == UCS_INPROGRESS) {
                pending++;
                continue;
            }
            op->status = s;
            op->done = 1;
            ucp_request_free(op->req);
            op->req = NULL;
            if (s != UCS_OK && *st_p == G3_OK) {
                g3_error(
                    "%s on group %s: UCX %s of %zu bytes %s world rank %d failed: %s%s",
                    comm->cur_op, comm->name, op->is_recv ? "receive" : "send", op->bytes,
                    op->is_recv ? "from" : "to", comm->members[op->peer], ucs_status_string(s),
                    s == UCS_ERR_MESSAGE_TRUNCATED
                        ? " (a longer message arrived: the ranks called different operations or counts)"
                        : "");
                *st_p = G3_ERR_COMM;
            }
        }
        if (op->done && op->is_recv && op->status == UCS_OK && op->info.length != op->bytes &&
            *st_p == G3_OK) {
            g3_error(
                "%s on group %s: world rank %d sent %zu bytes where %zu were expected; the ranks called different operations or counts",
                comm->cur_op, comm->name, comm->members[op->peer], op->info.length, op->bytes);
            op->info.length = op->bytes;   /* report once */
            *st_p = G3_ERR_COMM;
        }
    }
    return pending;
}

/* Drop what is still outstanding after a failure: receives are cancelled
 * so that late messages do not land in buffers the caller may free. */
static void g3_ucx_abandon(g3_comm_t *comm, g3_ucx_op_t *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        if (ops[i].done || ops[i].req == NULL)
            continue;
        if (ops[i].is_recv)
            ucp_request_cancel(comm->world->ucx->worker, ops[i].req);
        ucp_request_free(ops[i].req);
        ops[i].req = NULL;
        ops[i].done = 1;
    }
}

/* Wait until ops[which] is complete (which < 0: all of them), progressing
 * them all.  A failure or the timeout abandons every op still outstanding. */
static g3_status_t g3_ucx_wait_until(g3_comm_t *comm, g3_ucx_op_t *ops, int nops, int which,
                                     double deadline)
{
    g3_ucx_world_t *u = comm->world->ucx;
    g3_status_t st = G3_OK;
    int spins = 0;

    for (;;) {
        struct pollfd pfd;
        ucs_status_t us;
        double now;
        int ms;

        while (ucp_worker_progress(u->worker) != 0) {
        }
        if (g3_ucx_test(comm, ops, nops, &st) == 0 || st != G3_OK ||
            (which >= 0 && ops[which].done))
            break;
        if (spins < u->spin) {
            spins++;
            if (u->yield)
                sched_yield();
            continue;
        }
        now = g3_clock_now();
        if (now >= deadline) {
            for (int i = 0; i < nops; i++)
                if (!ops[i].done) {
                    g3_comm_log_timeout(comm, ops[i].peer,
                                        ops[i].is_recv ? "send its data" : "receive our data");
                    break;
                }
            st = G3_ERR_TIMEOUT;
            break;
        }
        us = ucp_worker_arm(u->worker);
        if (us == UCS_ERR_BUSY)
            continue;
        if (us != UCS_OK) {
            g3_error("%s on group %s: ucp_worker_arm failed: %s", comm->cur_op, comm->name,
                     ucs_status_string(us));
            st = G3_ERR_COMM;
            break;
        }
        ms = (int)((deadline - now) * 1000.0) + 1;
        if (ms > 1000)
            ms = 1000;
        pfd.fd = u->efd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
            g3_error("%s on group %s: poll on the UCX event fd failed: %s", comm->cur_op,
                     comm->name, strerror(errno));
            st = G3_ERR_COMM;
            break;
        }
        spins = 0;
    }
    if (st != G3_OK)
        g3_ucx_abandon(comm, ops, nops);
    return st;
}

static g3_status_t g3_ucx_wait(g3_comm_t *comm, g3_ucx_op_t *ops, int nops)
{
    return g3_ucx_wait_until(comm, ops, nops, -1, g3_clock_now() + comm->timeout_s);
}

/* After posting ops[0 .. nops) with status st: wait for them all, or, when a post
 * failed, drop the ones posted. */
static g3_status_t g3_ucx_finish(g3_comm_t *comm, g3_ucx_op_t *ops, int nops, g3_status_t st)
{
    if (st != G3_OK) {
        g3_ucx_abandon(comm, ops, nops);
        return st;
    }
    return g3_ucx_wait(comm, ops, nops);
}

static g3_status_t g3_ucx_sendrecv(g3_comm_t *comm, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes, uint32_t seq)
{
    g3_ucx_op_t ops[2];
    g3_status_t st;

    st = g3_ucx_post_recv(comm, &ops[0], from, rbuf, rbytes, 0, seq);
    if (st != G3_OK)
        return st;
    st = g3_ucx_post_send(comm, &ops[1], to, sbuf, sbytes, 0, seq);
    return g3_ucx_finish(comm, ops, st == G3_OK ? 2 : 1, st);
}

static g3_status_t g3_ucx_send1(g3_comm_t *comm, int to, const void *buf, size_t bytes,
                                int user, uint32_t low)
{
    g3_ucx_op_t op;
    g3_status_t st = g3_ucx_post_send(comm, &op, to, buf, bytes, user, low);
    return st != G3_OK ? st : g3_ucx_wait(comm, &op, 1);
}

static g3_status_t g3_ucx_recv1(g3_comm_t *comm, int from, void *buf, size_t bytes,
                                int user, uint32_t low)
{
    g3_ucx_op_t op;
    g3_status_t st = g3_ucx_post_recv(comm, &op, from, buf, bytes, user, low);
    return st != G3_OK ? st : g3_ucx_wait(comm, &op, 1);
}

/* ---- scratch and blocks ------------------------------------------------------- */

static g3_status_t g3_ucx_scratch(g3_comm_t *comm, int which, size_t bytes, void **p)
{
    g3_ucx_comm_t *c = comm->be;

    if (c->scratch_bytes[which] < bytes) {
        void *m = NULL;
        if (posix_memalign(&m, 64, bytes) != 0) {
            g3_error("%s on group %s: out of memory for a %zu-byte scratch buffer",
                     comm->cur_op, comm->name, bytes);
            return G3_ERR_NO_MEMORY;
        }
        free(c->scratch[which]);
        c->scratch[which] = m;
        c->scratch_bytes[which] = bytes;
    }
    *p = c->scratch[which];
    return G3_OK;
}

/* Block i of n elements split over N ranks: the first n % N blocks get one more. */
static size_t g3_ucx_block_count(size_t n, int N, int i)
{
    return n / (size_t)N + ((size_t)i < n % (size_t)N ? 1 : 0);
}

static size_t g3_ucx_block_offset(size_t n, int N, int i)
{
    size_t r = n % (size_t)N, q = n / (size_t)N;
    return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

/* Ring all-gather of the n-element vector buf split in N blocks: on entry
 * rank r holds block (r + shift) mod N (shift 0 or 1), on exit every block. */
static g3_status_t g3_ucx_ring_allgather_blocks(g3_comm_t *comm, char *buf, size_t n,
                                                size_t es, int shift, uint32_t seq)
{
    int N = comm->size, r = comm->rank;
    int right = (r + 1) % N, left = (r - 1 + N) % N;

    for (int s = 0; s < N - 1; s++) {
        int sb = (r + shift - s + N) % N, rb = (r + shift - s - 1 + N) % N;
        g3_status_t st = g3_ucx_sendrecv(comm, right, buf + g3_ucx_block_offset(n, N, sb) * es,
                                         g3_ucx_block_count(n, N, sb) * es, left,
                                         buf + g3_ucx_block_offset(n, N, rb) * es,
                                         g3_ucx_block_count(n, N, rb) * es, seq);
        if (st != G3_OK)
            return st;
    }
    return G3_OK;
}

/* One reduce step of a ring, pipelined in segments (GPT3D_COMM_SEGMENT_BYTES, 256 KiB by
 * default: core/param.h): send scount elements
 * of sbuf to `to` while receiving rcount elements from `from` into tmp, and
 * as each segment lands (still in cache) fold it in:
 *   dst = base op tmp   (base != NULL; base may equal dst)
 *   dst = dst op tmp    (base == NULL).
 * Sender and receiver cut the same chunk into the same segments, and UCX
 * keeps one sender's equally tagged messages in order. */
static g3_status_t g3_ucx_reduce_step(g3_comm_t *comm, int to, const char *sbuf, size_t scount,
                                      int from, char *dst, const char *base, char *tmp,
                                      size_t rcount, g3_comm_dtype_t dtype, g3_comm_reduce_t op,
                                      uint32_t seq)
{
    size_t es = g3_comm_dtype_size(dtype);
    size_t seg = comm->world->ucx->segment_bytes / es;
    int nr, ns, nops = 0, folded = 0;
    double deadline = g3_clock_now() + comm->timeout_s;
    g3_ucx_op_t *ops;
    g3_status_t st = G3_OK;

    if (seg == 0)
        seg = 1;
    nr = rcount ? (int)((rcount + seg - 1) / seg) : 0;
    ns = scount ? (int)((scount + seg - 1) / seg) : 0;
    ops = malloc((size_t)(nr + ns + 1) * sizeof(*ops));
    if (ops == NULL)
        return G3_ERR_NO_MEMORY;
    for (int k = 0; k < nr && st == G3_OK; k++) {
        size_t off = (size_t)k * seg, cnt = rcount - off < seg ? rcount - off : seg;
        st = g3_ucx_post_recv(comm, &ops[nops], from, tmp + off * es, cnt * es, 0, seq);
        if (st == G3_OK)
            nops++;
    }
    for (int k = 0; k < ns && st == G3_OK; k++) {
        size_t off = (size_t)k * seg, cnt = scount - off < seg ? scount - off : seg;
        st = g3_ucx_post_send(comm, &ops[nops], to, sbuf + off * es, cnt * es, 0, seq);
        if (st == G3_OK)
            nops++;
    }
    if (st != G3_OK) {
        g3_ucx_abandon(comm, ops, nops);
        free(ops);
        return st;
    }
    /* receives are ops[0..nr) in segment order; fold them in that order */
    while (folded < nr) {
        if (!ops[folded].done) {
            st = g3_ucx_wait_until(comm, ops, nops, folded, deadline);
            if (st != G3_OK)
                break;
        }
        while (folded < nr && ops[folded].done) {
            size_t off = (size_t)folded * seg, cnt = rcount - off < seg ? rcount - off : seg;
            if (base && base != dst)
                memcpy(dst + off * es, base + off * es, cnt * es);
            g3_comm_reduce_local(dst + off * es, tmp + off * es, cnt, dtype, op);
            folded++;
        }
    }
    if (st == G3_OK)
        st = g3_ucx_wait_until(comm, ops, nops, -1, deadline);
    free(ops);
    return st;
}

/* ---- collectives ------------------------------------------------------------------ */

/* Recursive doubling and halving run on the largest power of two p <= N ranks; the
 * rem = N - p others fold in first: among the first 2 rem ranks each even one hands its
 * vector buf (n elements) to the next odd one, which folds it in (tmp: n elements of
 * scratch), and waits for the result.  OUT: *newr_p, this rank's index among the p, or -1
 * for a rank that waits. */
static g3_status_t g3_ucx_fold_in(g3_comm_t *comm, char *buf, void *tmp, size_t n,
                                  g3_comm_dtype_t dtype, g3_comm_reduce_t op, int rem,
                                  uint32_t seq, int *newr_p)
{
    int r = comm->rank;
    size_t bytes = n * g3_comm_dtype_size(dtype);
    g3_status_t st;

    if (r >= 2 * rem) {
        *newr_p = r - rem;
        return G3_OK;
    }
    if (r % 2 == 0) {
        *newr_p = -1;
        return g3_ucx_send1(comm, r + 1, buf, bytes, 0, seq);
    }
    st = g3_ucx_recv1(comm, r - 1, tmp, bytes, 0, seq);
    if (st == G3_OK)
        g3_comm_reduce_local(buf, tmp, n, dtype, op);
    *newr_p = r / 2;
    return st;
}

/* The rank of index pn among the p (see g3_ucx_fold_in). */
static int g3_ucx_fold_peer(int pn, int rem)
{
    return pn < rem ? pn * 2 + 1 : pn + rem;
}

/* After the p ranks are done: each odd one of the first 2 rem hands the result back. */
static g3_status_t g3_ucx_fold_out(g3_comm_t *comm, char *buf, size_t bytes, int rem,
                                   uint32_t seq)
{
    int r = comm->rank;

    if (r >= 2 * rem)
        return G3_OK;
    if (r % 2 == 0)
        return g3_ucx_recv1(comm, r + 1, buf, bytes, 0, seq);
    return g3_ucx_send1(comm, r - 1, buf, bytes, 0, seq);
}

static g3_status_t g3_ucx_allreduce_rd(g3_comm_t *comm, char *buf, size_t n,
                                       g3_comm_dtype_t dtype, g3_comm_reduce_t op, uint32_t seq)
{
    int N = comm->size;
    size_t es = g3_comm_dtype_size(dtype), bytes = n * es;
    int p = 1, rem, newr;
    void *tmp;
    g3_status_t st;

    st = g3_ucx_scratch(comm, 0, bytes, &tmp);
    if (st != G3_OK)
        return st;
    while (p * 2 <= N)
        p *= 2;
    rem = N - p;
    st = g3_ucx_fold_in(comm, buf, tmp, n, dtype, op, rem, seq, &newr);
    if (st != G3_OK)
        return st;
    if (newr >= 0) {
        for (int mask = 1; mask < p; mask <<= 1) {
            int peer = g3_ucx_fold_peer(newr ^ mask, rem);
            st = g3_ucx_sendrecv(comm, peer, buf, bytes, peer, tmp, bytes, seq);
            if (st != G3_OK)
                return st;
            g3_comm_reduce_local(buf, tmp, n, dtype, op);
        }
    }
    return g3_ucx_fold_out(comm, buf, bytes, rem, seq);
}

/* Rabenseifner: fold to a power of two p like recursive doubling, then a
 * reduce-scatter by recursive halving (log2 p steps of n/2, n/4, ...) and
 * an all-gather by recursive doubling (the same sizes back).  Moves as
 * little data as the ring in 2 log2 p steps instead of 2 (N - 1): what
 * matters when ranks outnumber cores and every step waits for a peer to be
 * scheduled. */
static g3_status_t g3_ucx_allreduce_rh(g3_comm_t *comm, char *buf, size_t n,
                                       g3_comm_dtype_t dtype, g3_comm_reduce_t op, uint32_t seq)
{
    int N = comm->size;
    size_t es = g3_comm_dtype_size(dtype), bytes = n * es;
    int p = 1, rem, newr, lo, hi;
    void *tmp;
    g3_status_t st = G3_OK;

    while (p * 2 <= N)
        p *= 2;
    rem = N - p;
    st = g3_ucx_scratch(comm, 0,
                        rem ? bytes : (g3_ucx_block_count(n, p, 0) * (size_t)p / 2 + 1) * es,
                        &tmp);
    if (st != G3_OK)
        return st;
    st = g3_ucx_fold_in(comm, buf, tmp, n, dtype, op, rem, seq, &newr);
    if (st != G3_OK)
        return st;
    if (newr >= 0) {
        /* [lo, hi): the blocks (of p) this rank is responsible for. */
        lo = 0;
        hi = p;
        for (int mask = p / 2; mask > 0; mask /= 2) {
            int peer = g3_ucx_fold_peer(newr ^ mask, rem);
            int mid = lo + (hi - lo) / 2;
            int klo = (newr & mask) ? mid : lo, khi = (newr & mask) ? hi : mid;
            int glo = (newr & mask) ? lo : mid, ghi = (newr & mask) ? mid : hi;
            size_t koff = g3_ucx_block_offset(n, p, klo);
            size_t kcnt = g3_ucx_block_offset(n, p, khi) - koff;
            size_t goff = g3_ucx_block_offset(n, p, glo);
            size_t gcnt = g3_ucx_block_offset(n, p, ghi) - goff;
            st = g3_ucx_sendrecv(comm, peer, buf + goff * es, gcnt * es, peer, tmp, kcnt * es,
                                 seq);
            if (st != G3_OK)
                return st;
            g3_comm_reduce_local(buf + koff * es, tmp, kcnt, dtype, op);
            lo = klo;
            hi = khi;
        }
        for (int mask = 1; mask < p; mask *= 2) {
            int peer = g3_ucx_fold_peer(newr ^ mask, rem);
            int w = hi - lo;
            int plo = (newr & mask) ? lo - w : hi, phi = plo + w;
            size_t moff = g3_ucx_block_offset(n, p, lo);
            size_t mcnt = g3_ucx_block_offset(n, p, hi) - moff;
            size_t poff = g3_ucx_block_offset(n, p, plo);
            size_t pcnt = g3_ucx_block_offset(n, p, phi) - poff;
            st = g3_ucx_sendrecv(comm, peer, buf + moff * es, mcnt * es, peer, buf + poff * es,
                                 pcnt * es, seq);
            if (st != G3_OK)
                return st;
            lo = lo < plo ? lo : plo;
            hi = hi > phi ? hi : phi;
        }
    }
    return g3_ucx_fold_out(comm, buf, bytes, rem, seq);
}

/* Direct (one-shot) all-reduce: every rank sends block j of its vector to
 * rank j and receives its own block from everyone at once, reduces them in
 * rank order, then sends the reduced block to everyone.  Two rounds of
 * N - 1 concurrent messages instead of 2 (N - 1) dependent steps: the same
 * bytes as the ring, but a rank that gets the core does all its work in
 * one go, which is what counts when ranks outnumber cores.  Scratch: (n)
 * elements for the N - 1 incoming blocks. */
static g3_status_t g3_ucx_allreduce_direct(g3_comm_t *comm, char *buf, size_t n,
                                           g3_comm_dtype_t dtype, g3_comm_reduce_t op,
                                           uint32_t seq)
{
    int N = comm->size, r = comm->rank;
    size_t es = g3_comm_dtype_size(dtype), mine = g3_ucx_block_count(n, N, r);
    size_t moff = g3_ucx_block_offset(n, N, r);
    g3_ucx_op_t *ops;
    char *tmp;
    int nops = 0;
    g3_status_t st;

    st = g3_ucx_scratch(comm, 0, (size_t)N * g3_ucx_block_count(n, N, 0) * es, (void **)&tmp);
    if (st != G3_OK)
        return st;
    ops = malloc(2 * (size_t)N * sizeof(*ops));
    if (ops == NULL)
        return G3_ERR_NO_MEMORY;
    /* round 1: blocks to their owners */
    for (int k = 1; k < N && st == G3_OK; k++) {
        int peer = (r + k) % N, from = (r - k + N) % N;
        st = g3_ucx_post_recv(comm, &ops[nops], from, tmp + (size_t)from * mine * es, mine * es,
                              0, seq);
        if (st == G3_OK)
            nops++;
        if (st == G3_OK)
            st = g3_ucx_post_send(comm, &ops[nops], peer,
                                  buf + g3_ucx_block_offset(n, N, peer) * es,
                                  g3_ucx_block_count(n, N, peer) * es, 0, seq);
        if (st == G3_OK)
            nops++;
    }
    st = g3_ucx_finish(comm, ops, nops, st);
    if (st == G3_OK) {
        /* fold in rank order; this rank's own block stays in place */
        char *dst = buf + moff * es;
        if (r != 0) {
            /* start from rank 0's block so that the order is 0, 1, ..., N-1 */
            memcpy(tmp + (size_t)r * mine * es, dst, mine * es);
            memcpy(dst, tmp, mine * es);
        }
        for (int j = 1; j < N; j++)
            g3_comm_reduce_local(dst, tmp + (size_t)j * mine * es, mine, dtype, op);
    }
    /* round 2: the reduced block to everyone */
    nops = 0;
    for (int k = 1; k < N && st == G3_OK; k++) {
        int peer = (r + k) % N, from = (r - k + N) % N;
        st = g3_ucx_post_recv(comm, &ops[nops], from, buf + g3_ucx_block_offset(n, N, from) * es,
                              g3_ucx_block_count(n, N, from) * es, 0, seq);
        if (st == G3_OK)
            nops++;
        if (st == G3_OK)
            st = g3_ucx_post_send(comm, &ops[nops], peer, buf + moff * es, mine * es, 0, seq);
        if (st == G3_OK)
            nops++;
    }
    st = g3_ucx_finish(comm, ops, nops, st);
    free(ops);
    return st;
}

static g3_status_t g3_ucx_allreduce_ring(g3_comm_t *comm, char *buf, size_t n,
                                         g3_comm_dtype_t dtype, g3_comm_reduce_t op,
                                         uint32_t seq)
{
    int N = comm->size, r = comm->rank;
    int right = (r + 1) % N, left = (r - 1 + N) % N;
    size_t es = g3_comm_dtype_size(dtype);
    void *tmp;
    g3_status_t st;

    st = g3_ucx_scratch(comm, 0, g3_ucx_block_count(n, N, 0) * es, &tmp);
    if (st != G3_OK)
        return st;
    /* Reduce-scatter: after N-1 steps rank r holds the full block r+1. */
    for (int s = 0; s < N - 1; s++) {
        int sb = (r - s + N) % N, rb = (r - s - 1 + N) % N;
        st = g3_ucx_reduce_step(comm, right, buf + g3_ucx_block_offset(n, N, sb) * es,
                                g3_ucx_block_count(n, N, sb), left,
                                buf + g3_ucx_block_offset(n, N, rb) * es, NULL, tmp,
                                g3_ucx_block_count(n, N, rb), dtype, op, seq);
        if (st != G3_OK)
            return st;
    }
    /* All-gather, starting from block r+1. */
    return g3_ucx_ring_allgather_blocks(comm, buf, n, es, 1, seq);
}

static g3_status_t g3_ucx_allreduce(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                    g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    size_t bytes = n * g3_comm_dtype_size(dtype);
    uint32_t seq = comm->coll_seq++;
    g3_ucx_algo_t algo = comm->world->ucx->algo;
    int N = comm->size;

    if (send != recv)
        memmove(recv, send, bytes);
    if (N == 1)
        return G3_OK;
    if (algo == G3_UCX_AUTO) {
        if (bytes <= comm->small_bytes)
            algo = G3_UCX_RD;
        else if (N == 2 && bytes > 2 * comm->world->ucx->segment_bytes)
            algo = G3_UCX_RING;     /* the same exchange as direct, pipelined in segments */
        else if (N <= 16 && bytes < G3_UCX_DIRECT_MAX_BYTES)
            algo = G3_UCX_DIRECT;
        else if (bytes < G3_UCX_RH_MAX_BYTES)
            algo = G3_UCX_RH;
        else
            algo = G3_UCX_RING;
    }
    if (n < (size_t)N)
        algo = G3_UCX_RD;   /* blocks would be empty */
    switch (algo) {
    case G3_UCX_RH:     return g3_ucx_allreduce_rh(comm, recv, n, dtype, op, seq);
    case G3_UCX_DIRECT: return g3_ucx_allreduce_direct(comm, recv, n, dtype, op, seq);
    case G3_UCX_RING:   return g3_ucx_allreduce_ring(comm, recv, n, dtype, op, seq);
    default:            return g3_ucx_allreduce_rd(comm, recv, n, dtype, op, seq);
    }
}

static g3_status_t g3_ucx_reduce_scatter(g3_comm_t *comm, const void *send, void *recv,
                                         size_t n, g3_comm_dtype_t dtype, g3_comm_reduce_t op)
{
    int N = comm->size, r = comm->rank;
    int right = (r + 1) % N, left = (r - 1 + N) % N;
    size_t es = g3_comm_dtype_size(dtype), bytes = n * es;
    const char *in = send;
    void *tmp;
    char *acc[2];
    uint32_t seq = comm->coll_seq++;
    g3_status_t st;

    if (N == 1) {
        memcpy(recv, send, bytes);
        return G3_OK;
    }
    st = g3_ucx_scratch(comm, 0, bytes, &tmp);
    if (st == G3_OK)
        st = g3_ucx_scratch(comm, 1, bytes, (void **)&acc[0]);
    if (st == G3_OK)
        st = g3_ucx_scratch(comm, 2, bytes, (void **)&acc[1]);
    if (st != G3_OK)
        return st;
    /* Step s passes the partial of block r-s-1 right and folds this rank's
     * block r-s-2 into what arrives from the left; block r ends here.  The
     * partials alternate between two buffers: one is still being sent
     * while the next fills. */
    for (int s = 0; s < N - 1; s++) {
        int sb = (r - s - 1 + N) % N, rb = (r - s - 2 + 2 * N) % N;
        const char *src = s == 0 ? in + (size_t)sb * bytes : acc[(s - 1) % 2];
        char *dst = s == N - 2 ? recv : acc[s % 2];
        st = g3_ucx_reduce_step(comm, right, src, n, left, dst, in + (size_t)rb * bytes, tmp, n,
                                dtype, op, seq);
        if (st != G3_OK)
            return st;
    }
    return G3_OK;
}

static g3_status_t g3_ucx_allgather(g3_comm_t *comm, const void *send, void *recv, size_t n,
                                    g3_comm_dtype_t dtype)
{
    int N = comm->size, r = comm->rank;
    size_t es = g3_comm_dtype_size(dtype), bytes = n * es;
    char *out = recv;
    uint32_t seq = comm->coll_seq++;

    if (send != out + (size_t)r * bytes)
        memmove(out + (size_t)r * bytes, send, bytes);
    if (N == 1)
        return G3_OK;
    if ((N & (N - 1)) == 0 && bytes * (size_t)N <= comm->small_bytes) {
        for (int mask = 1; mask < N; mask <<= 1) {
            int peer = r ^ mask;
            size_t mine = (size_t)(r & ~(mask - 1)), theirs = (size_t)(peer & ~(mask - 1));
            g3_status_t st = g3_ucx_sendrecv(comm, peer, out + mine * bytes, (size_t)mask * bytes,
                                             peer, out + theirs * bytes, (size_t)mask * bytes,
                                             seq);
            if (st != G3_OK)
                return st;
        }
        return G3_OK;
    }
    /* Ring over the N blocks of n elements each (N n elements split in N). */
    return g3_ucx_ring_allgather_blocks(comm, out, n * (size_t)N, es, 0, seq);
}

static g3_status_t g3_ucx_broadcast(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                                    int root)
{
    int N = comm->size, r = comm->rank;
    int vr = (r - root + N) % N;
    size_t es = g3_comm_dtype_size(dtype), bytes = n * es;
    uint32_t seq = comm->coll_seq++;
    g3_status_t st = G3_OK;

    if (N == 1)
        return G3_OK;
    if (bytes <= comm->small_bytes || n < (size_t)N) {
        /* Binomial tree rooted at root, in ranks relative to it. */
        g3_ucx_op_t ops[32];
        int nops = 0, mask = 1;

        while (mask < N) {
            if (vr & mask) {
                st = g3_ucx_recv1(comm, (vr - mask + root) % N, buf, bytes, 0, seq);
                if (st != G3_OK)
                    return st;
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < N) {
                st = g3_ucx_post_send(comm, &ops[nops], (vr + mask + root) % N, buf, bytes, 0,
                                      seq);
                if (st != G3_OK) {
                    g3_ucx_abandon(comm, ops, nops);
                    return st;
                }
                nops++;
            }
        }
        return nops ? g3_ucx_wait(comm, ops, nops) : G3_OK;
    }
    /* Large: root scatters block i to rank i, then a ring all-gather. */
    if (r == root) {
        g3_ucx_op_t *ops = malloc((size_t)N * sizeof(*ops));
        int nops = 0;

        if (ops == NULL)
            return G3_ERR_NO_MEMORY;
        for (int i = 0; i < N && st == G3_OK; i++) {
            if (i == root)
                continue;
            st = g3_ucx_post_send(comm, &ops[nops], i,
                                  (char *)buf + g3_ucx_block_offset(n, N, i) * es,
                                  g3_ucx_block_count(n, N, i) * es, 0, seq);
            if (st == G3_OK)
                nops++;
        }
        st = g3_ucx_finish(comm, ops, nops, st);
        free(ops);
    } else {
        st = g3_ucx_recv1(comm, root, (char *)buf + g3_ucx_block_offset(n, N, r) * es,
                          g3_ucx_block_count(n, N, r) * es, 0, seq);
    }
    if (st != G3_OK)
        return st;
    return g3_ucx_ring_allgather_blocks(comm, buf, n, es, 0, seq);
}

static g3_status_t g3_ucx_send(g3_comm_t *comm, const void *buf, size_t n, g3_comm_dtype_t dtype,
                               int peer, int tag)
{
    return g3_ucx_send1(comm, peer, buf, n * g3_comm_dtype_size(dtype), 1, (uint32_t)tag);
}

static g3_status_t g3_ucx_recv(g3_comm_t *comm, void *buf, size_t n, g3_comm_dtype_t dtype,
                               int peer, int tag)
{
    return g3_ucx_recv1(comm, peer, buf, n * g3_comm_dtype_size(dtype), 1, (uint32_t)tag);
}

static g3_status_t g3_ucx_barrier(g3_comm_t *comm)
{
    int N = comm->size, r = comm->rank;
    uint32_t seq = comm->coll_seq++;
    char out = 1, in = 0;

    for (int k = 1; k < N; k <<= 1) {
        g3_status_t st = g3_ucx_sendrecv(comm, (r + k) % N, &out, 1, (r - k + N) % N, &in, 1, seq);
        if (st != G3_OK)
            return st;
    }
    return G3_OK;
}

static void g3_ucx_group_free(g3_comm_t *comm)
{
    g3_ucx_comm_t *c = comm->be;
    if (c == NULL)
        return;
    for (int i = 0; i < 3; i++)
        free(c->scratch[i]);
    free(c);
    comm->be = NULL;
}

/* ---- non-blocking collectives --------------------------------------------------------
 * The direct algorithms as small state machines: a round's messages are all posted at once;
 * when they have all completed, iprogress does the local reduction and posts the next round.
 *   all-reduce      round 1: block j of recv to rank j, block r from everyone (into tmp);
 *                   the blocks folded in rank order into block r of recv; round 2: block r
 *                   to everyone, block j from rank j.
 *   reduce-scatter  round 1: block j of send to rank j, block r from everyone (into tmp);
 *                   then recv = sum of the blocks in rank order.
 *   all-gather      round 1: this rank's block to everyone, block j from rank j.
 * Empty blocks (n < N) send no message. */
typedef struct {
    int          round;      /* rounds posted                                  */
    int          finished;
    g3_ucx_op_t *ops;        /* (2 (N - 1)) this round's messages              */
    int          nops;
    char        *tmp;        /* (N, block) incoming blocks                     */
} g3_ucx_req_t;

static void g3_ucx_irelease(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_ucx_req_t *q = req->be;
    if (!q)
        return;
    g3_ucx_abandon(comm, q->ops, q->nops);
    free(q->ops);
    free(q->tmp);
    free(q);
    req->be = NULL;
}

/* Post round q->round + 1 of req. */
static g3_status_t g3_ucx_ipost(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_ucx_req_t *q = req->be;
    int N = comm->size, r = comm->rank;
    size_t es = g3_comm_dtype_size(req->dtype), n = req->n;
    size_t mine = g3_ucx_block_count(n, N, r), moff = g3_ucx_block_offset(n, N, r);
    char *out = req->recv;
    const char *in = req->send;
    g3_status_t st = G3_OK;

    q->nops = 0;
    q->round++;
    for (int k = 1; k < N && st == G3_OK; k++) {
        int to = (r + k) % N, from = (r - k + N) % N;
        const char *sb = NULL;
        char *rb = NULL;
        size_t sbytes = 0, rbytes = 0;
        if (req->kind == G3_COMM_REQ_ALLREDUCE && q->round == 1) {
            rb = q->tmp + (size_t)from * mine * es;
            rbytes = mine * es;
            sb = out + g3_ucx_block_offset(n, N, to) * es;
            sbytes = g3_ucx_block_count(n, N, to) * es;
        } else if (req->kind == G3_COMM_REQ_ALLREDUCE) {
            rb = out + g3_ucx_block_offset(n, N, from) * es;
            rbytes = g3_ucx_block_count(n, N, from) * es;
            sb = out + moff * es;
            sbytes = mine * es;
        } else if (req->kind == G3_COMM_REQ_REDUCE_SCATTER) {
            rb = q->tmp + (size_t)from * n * es;
            rbytes = n * es;
            sb = in + (size_t)to * n * es;
            sbytes = n * es;
        } else {
            rb = out + (size_t)from * n * es;
            rbytes = n * es;
            sb = out + (size_t)r * n * es;
            sbytes = n * es;
        }
        if (rbytes > 0) {
            st = g3_ucx_post_recv(comm, &q->ops[q->nops], from, rb, rbytes, 0, req->seq);
            if (st == G3_OK)
                q->nops++;
        }
        if (st == G3_OK && sbytes > 0) {
            st = g3_ucx_post_send(comm, &q->ops[q->nops], to, sb, sbytes, 0, req->seq);
            if (st == G3_OK)
                q->nops++;
        }
    }
    if (st != G3_OK)
        g3_ucx_abandon(comm, q->ops, q->nops);
    return st;
}

/* The round posted last has completed: reduce, and post the next round or finish. */
static g3_status_t g3_ucx_iadvance(g3_comm_t *comm, g3_comm_req_t *req)
{
    g3_ucx_req_t *q = req->be;
    int N = comm->size, r = comm->rank;
    size_t es = g3_comm_dtype_size(req->dtype), n = req->n;
    char *out = req->recv;

    if (req->kind == G3_COMM_REQ_ALLREDUCE && q->round == 1) {
        size_t mine = g3_ucx_block_count(n, N, r);
        char *dst = out + g3_ucx_block_offset(n, N, r) * es;
        if (r != 0) {   /* start from rank 0's block: the order is 0, 1, ..., N-1 */
            memcpy(q->tmp + (size_t)r * mine * es, dst, mine * es);
            memcpy(dst, q->tmp, mine * es);
        }
        for (int j = 1; j < N; j++)
            g3_comm_reduce_local(dst, q->tmp + (size_t)j * mine * es, mine, req->dtype, req->op);
        return g3_ucx_ipost(comm, req);
    }
    if (req->kind == G3_COMM_REQ_REDUCE_SCATTER) {
        const char *in = req->send;
        memcpy(out, r == 0 ? in : q->tmp, n * es);
        for (int j = 1; j < N; j++)
            g3_comm_reduce_local(out, j == r ? in + (size_t)r * n * es
                                             : q->tmp + (size_t)j * n * es, n, req->dtype,
                                 req->op);
    }
    q->finished = 1;
    return G3_OK;
}

static g3_status_t g3_ucx_istart(g3_comm_t *comm, g3_comm_req_t *req)
{
    int N = comm->size, r = comm->rank;
    size_t es = g3_comm_dtype_size(req->dtype), n = req->n, tmp_elems = 0;
    g3_ucx_req_t *q;
    g3_status_t st;

    req->seq = comm->coll_seq++;
    if (req->kind == G3_COMM_REQ_ALLREDUCE) {
        if (req->send != req->recv)
            memmove(req->recv, req->send, n * es);
        tmp_elems = (size_t)N * g3_ucx_block_count(n, N, 0);
    } else if (req->kind == G3_COMM_REQ_REDUCE_SCATTER) {
        tmp_elems = (size_t)N * n;
    } else if (req->send != (char *)req->recv + (size_t)r * n * es) {
        memmove((char *)req->recv + (size_t)r * n * es, req->send, n * es);
    }
    if (N == 1) {
        if (req->kind == G3_COMM_REQ_REDUCE_SCATTER)
            memcpy(req->recv, req->send, n * es);
        req->done = 1;
        return G3_OK;
    }
    q = calloc(1, sizeof(*q));
    if (q)
        q->ops = calloc(2 * (size_t)N, sizeof(*q->ops));
    if (q && q->ops && tmp_elems)
        q->tmp = malloc(tmp_elems * es);
    if (!q || !q->ops || (tmp_elems && !q->tmp)) {
        if (q) {
            free(q->ops);
            free(q);
        }
        g3_error("%s on group %s: out of memory for %zu bytes of scratch", req->what,
                 comm->name, tmp_elems * es);
        return G3_ERR_NO_MEMORY;
    }
    req->be = q;
    st = g3_ucx_ipost(comm, req);
    if (st != G3_OK)
        g3_ucx_irelease(comm, req);
    return st;
}

static g3_status_t g3_ucx_iprogress(g3_comm_t *comm, g3_comm_req_t *req, int block, int *done)
{
    g3_ucx_req_t *q = req->be;
    g3_status_t st = G3_OK;

    *done = 0;
    if (!q) {   /* finished at the start (a group of one) */
        *done = 1;
        return G3_OK;
    }
    while (!q->finished) {
        if (block) {
            st = g3_ucx_wait(comm, q->ops, q->nops);
        } else {
            while (ucp_worker_progress(comm->world->ucx->worker) != 0) {
            }
            if (g3_ucx_test(comm, q->ops, q->nops, &st) > 0 && st == G3_OK)
                return G3_OK;
            if (st != G3_OK)
                g3_ucx_abandon(comm, q->ops, q->nops);
        }
        if (st == G3_OK)
            st = g3_ucx_iadvance(comm, req);
        if (st != G3_OK)
            return st;
    }
    *done = 1;
    return G3_OK;
}

static g3_status_t g3_ucx_group_init(g3_comm_t *comm, const g3_comm_group_init_t *init)
{
    g3_ucx_comm_t *c = calloc(1, sizeof(*c));
    (void)init;
    if (c == NULL)
        return G3_ERR_NO_MEMORY;
    comm->be = c;
    return G3_OK;
}

const g3_comm_transport_t g3_comm_transport_ucx = {
    .name = "host (UCX)",
    .world_init = g3_ucx_world_init,
    .world_free = g3_ucx_world_free,
    .group_init = g3_ucx_group_init,
    .group_free = g3_ucx_group_free,
    .allreduce = g3_ucx_allreduce,
    .reduce_scatter = g3_ucx_reduce_scatter,
    .allgather = g3_ucx_allgather,
    .broadcast = g3_ucx_broadcast,
    .send = g3_ucx_send,
    .recv = g3_ucx_recv,
    .barrier = g3_ucx_barrier,
    .istart = g3_ucx_istart,
    .iprogress = g3_ucx_iprogress,
    .irelease = g3_ucx_irelease,
};
