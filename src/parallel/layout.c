/* gpt3d parallel: the layout of a job's ranks on the TP x PP x DP grid and its groups.
 * Glossary in par.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/hook.h"
#include "core/log.h"
#include "parallel/par_internal.h"
#include "topo/topo.h"

/* Up to this many ranks the layout printout has a line per rank. */
#define G3_PAR_RANK_TABLE_MAX 32

/* What each task tells the others about where it runs. */
typedef struct {
    int32_t local_rank;
    char    host[256];
    char    addr[512];     /* SLURM_TOPOLOGY_ADDR         */
    char    pattern[128];  /* SLURM_TOPOLOGY_ADDR_PATTERN */
} g3_par_task_t;

void g3_par_alloc_free(g3_par_alloc_t *a)
{
    g3_topo_names_free(a->names, a->nnodes);
    g3_topo_names_free(a->addrs, a->nnodes);
    g3_topo_names_free(a->patterns, a->nnodes);
    free(a->rank_node);
    free(a->rank_local);
    memset(a, 0, sizeof(*a));
}

g3_status_t g3_par_alloc_gather(g3_comm_world_t *world, const char *what, g3_par_alloc_t *a,
                                char *why, size_t why_len)
{
    const g3_comm_proc_t *me = g3_comm_world_proc(world);
    g3_par_task_t mine;
    g3_comm_exchange_t *x = NULL;
    int *count = NULL, n = me->size, any_addr = 0;
    const char *v;
    g3_status_t st;

    memset(a, 0, sizeof(*a));
    memset(&mine, 0, sizeof(mine));
    mine.local_rank = me->local_rank;
    snprintf(mine.host, sizeof(mine.host), "%s", me->hostname);
    if ((v = getenv("SLURM_TOPOLOGY_ADDR")) != NULL)
        snprintf(mine.addr, sizeof(mine.addr), "%s", v);
    if ((v = getenv("SLURM_TOPOLOGY_ADDR_PATTERN")) != NULL)
        snprintf(mine.pattern, sizeof(mine.pattern), "%s", v);
    st = g3_comm_world_exchange(world, what, &mine, sizeof(mine), &x);
    if (st != G3_OK)
        return st;
    a->names = calloc((size_t)n, sizeof(char *));
    a->addrs = calloc((size_t)n, sizeof(char *));
    a->patterns = calloc((size_t)n, sizeof(char *));
    a->rank_node = malloc((size_t)n * sizeof(int));
    a->rank_local = malloc((size_t)n * sizeof(int));
    count = calloc((size_t)n, sizeof(int));
    if (!a->names || !a->addrs || !a->patterns || !a->rank_node || !a->rank_local || !count) {
        g3_error("%s: out of memory for %d ranks", what, n);
        st = G3_ERR_NO_MEMORY;
        goto err_free_alloc;
    }
    for (int r = 0; r < n; r++) {
        const g3_par_task_t *t;
        const void *blob;
        size_t len;
        int node = -1;

        st = g3_comm_exchange_get(x, r, &blob, &len);
        if (st != G3_OK)
            goto err_free_alloc;
        if (len != sizeof(*t)) {
            g3_error(
                "rank %d sent %zu bytes of placement, not %zu: is every rank running the same gpt3d?",
                r, len, sizeof(*t));
            st = G3_ERR_COMM;
            goto err_free_alloc;
        }
        t = blob;
        for (int k = 0; k < a->nnodes; k++)
            if (strncmp(a->names[k], t->host, sizeof(t->host)) == 0) {
                node = k;
                break;
            }
        if (node < 0) {
            node = a->nnodes++;
            a->names[node] = strndup(t->host, sizeof(t->host) - 1);
            a->addrs[node] = strndup(t->addr, sizeof(t->addr) - 1);
            a->patterns[node] = strndup(t->pattern, sizeof(t->pattern) - 1);
            if (!a->names[node] || !a->addrs[node] || !a->patterns[node]) {
                g3_error("%s: out of memory", what);
                st = G3_ERR_NO_MEMORY;
                goto err_free_alloc;
            }
            any_addr |= strstr(t->pattern, "switch") != NULL;
        }
        a->rank_node[r] = node;
        a->rank_local[r] = t->local_rank;
        count[node]++;
    }
    a->rpn = count[0];
    for (int k = 1; k < a->nnodes; k++)
        if (count[k] != a->rpn) {
            snprintf(
                why, why_len,
                "the job runs %d ranks on %s but %d on %s; gpt3d needs the same number of ranks on every node (srun --ntasks-per-node, mpirun --map-by ppr:N:node)",
                a->rpn, a->names[0], count[k], a->names[k]);
            st = G3_ERR_INVALID_ARG;
            goto err_free_alloc;
        }
    if (!any_addr) {
        /* no switch information: forget the empty addresses */
        g3_topo_names_free(a->addrs, a->nnodes);
        g3_topo_names_free(a->patterns, a->nnodes);
        a->addrs = a->patterns = NULL;
    }
    free(count);
    g3_comm_exchange_free(x);
    return G3_OK;

err_free_alloc:
    g3_par_alloc_free(a);
    free(count);
    g3_comm_exchange_free(x);
    return st;
}

g3_status_t g3_par_alloc_topo(const g3_par_alloc_t *a, const char *topology_file,
                              const char *where, g3_topo_t **topo_p, int **nodes_p, char *why,
                              size_t why_len)
{
    g3_topo_t *topo = NULL;
    int *nodes;
    unsigned char *seen;
    g3_status_t st;

    if (topology_file)
        st = g3_topo_read_file(topology_file, &topo);
    else if (a->addrs)
        st = g3_topo_from_addrs(a->nnodes, (const char *const *)a->names,
                                (const char *const *)a->addrs,
                                (const char *const *)a->patterns, &topo);
    else
        st = g3_topo_flat(a->nnodes, (const char *const *)a->names, &topo);
    if (st != G3_OK)
        return st;
    nodes = malloc((size_t)a->nnodes * sizeof(int));
    seen = calloc((size_t)topo->nnodes + 1, 1);   /* by topology node: linear, not quadratic */
    if (!nodes || !seen) {
        g3_error("%s: out of memory", where);
        st = G3_ERR_NO_MEMORY;
        goto err_free_nodes;
    }
    for (int i = 0; i < a->nnodes; i++) {
        nodes[i] = g3_topo_node_find(topo, a->names[i]);
        if (nodes[i] >= 0 && seen[nodes[i]]) {
            snprintf(why, why_len, "node %s is listed twice in %s", a->names[i], where);
            st = G3_ERR_INVALID_ARG;
            goto err_free_nodes;
        }
        if (nodes[i] >= 0)
            seen[nodes[i]] = 1;
        if (nodes[i] < 0) {
            snprintf(
                why, why_len,
                "node %s of %s is not in %s; give the cluster's full topology.conf with --topology-file",
                a->names[i], where, topo->source);
            st = G3_ERR_INVALID_ARG;
            goto err_free_nodes;
        }
    }
    free(seen);
    *topo_p = topo;
    *nodes_p = nodes;
    return G3_OK;

err_free_nodes:
    free(seen);
    free(nodes);
    g3_topo_free(topo);
    return st;
}

#define G3_PAR_AXIS_EMB (-1)   /* the tied word embedding's group, beside the topo axes */

/* This rank's group along axis (world ranks in group order).  The tied word embedding's
 * group is the first and last stage of the same (tp, dp) when PP > 1, this rank alone
 * elsewhere.  members: (world_size,).  RET: the group's size. */
static int g3_par_members(const g3_par_t *par, int axis, int *members)
{
    const g3_par_layout_t *l = &par->layout;

    if (axis != G3_PAR_AXIS_EMB)
        return g3_topo_plan_group(par->plan, l->world_rank, (g3_topo_axis_t)axis, members);
    members[0] = l->world_rank;
    if (l->pp > 1 && (l->pp_rank == 0 || l->pp_rank == l->pp - 1)) {
        members[0] = g3_topo_plan_rank(par->plan, l->tp_rank, 0, l->dp_rank);
        members[1] = g3_topo_plan_rank(par->plan, l->tp_rank, l->pp - 1, l->dp_rank);
        return 2;
    }
    return 1;
}

/* Create one layer of groups along axis (collective): on backend, or staged through host
 * buffers with mem's copies when mem is given. */
static g3_status_t g3_par_group(g3_par_t *par, int axis, const char *name,
                                g3_comm_backend_t backend, const g3_comm_devmem_t *mem,
                                g3_comm_t **comm_p)
{
    int *members = malloc(sizeof(int) * (size_t)par->layout.world_size);
    int n;
    g3_status_t st;

    if (!members) {
        g3_error("parallel layout: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    n = g3_par_members(par, axis, members);
    if (mem)
        st = g3_comm_group_create_staged(par->world, name, mem, members, n, comm_p);
    else
        st = g3_comm_group_create(par->world, name, backend, members, n, comm_p);
    free(members);
    return st;
}

int g3_par_dp_size(int64_t world, int tp, int pp, int *dp_p, char *why, size_t why_len)
{
    /* in 64 bits: TP x PP of two int flags can overflow an int (65536 x 65536 is 0) */
    int64_t rp = (int64_t)tp * pp;

    if (tp < 1 || pp < 1 || world < 1 || rp > world || world % rp != 0) {
        snprintf(
            why, why_len,
            "the job's %lld rank%s cannot be split into --tensor-model-parallel-size %d x --pipeline-model-parallel-size %d = %lld ranks per model replica (the world size must be TP x PP x DP); start a multiple of %lld ranks or change the sizes",
            (long long)world, world == 1 ? "" : "s", tp, pp, (long long)rp, (long long)rp);
        return 0;
    }
    *dp_p = (int)(world / rp);
    return 1;
}

void g3_par_layout_shard(const g3_par_layout_t *l, g3_gpt_config_t *cfg)
{
    cfg->tp_size = l->tp;
    cfg->tp_rank = l->tp_rank;
    cfg->pp_size = l->pp;
    cfg->pp_rank = l->pp_rank;
}

void g3_par_shard(const g3_par_t *par, g3_gpt_config_t *cfg)
{
    g3_par_layout_shard(&par->layout, cfg);
}

/* The buffers move on the host groups as fp32 (host-memory backends, and before or after a
 * GPU backend's groups exist). */
static void g3_par_buf_host(g3_par_t *par)
{
    par->buf = (g3_par_groups_t){ par->tp, par->pp, par->dp, par->emb };
    par->act = G3_DTYPE_FLOAT32;
    par->act_esize = 4;
}

g3_status_t g3_par_init(g3_comm_world_t *world, int tp, int pp, const char *topology_file,
                        g3_par_t **par_p, char *why, size_t why_len)
{
    const g3_comm_proc_t *me = g3_comm_world_proc(world);
    g3_par_alloc_t a;
    g3_topo_t *topo = NULL;
    int *nodes = NULL;
    g3_par_t *par;
    int dp;
    g3_status_t st;

    why[0] = '\0';
    if (!g3_par_dp_size(me->size, tp, pp, &dp, why, why_len))
        return G3_ERR_INVALID_ARG;
    par = calloc(1, sizeof(*par));
    if (!par) {
        g3_error("parallel layout: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    par->world = world;
    st = g3_par_alloc_gather(world, "the ranks' hosts for the parallel layout", &a, why,
                             why_len);
    if (st != G3_OK)
        goto err_free_par;
    st = g3_par_alloc_topo(&a, topology_file, "this job", &topo, &nodes, why, why_len);
    if (st != G3_OK)
        goto err_free_alloc;
    {
        g3_topo_alloc_t alloc = { a.nnodes, nodes, a.rpn, a.rank_node, a.rank_local };
        st = g3_topo_map(topo, &alloc, tp, pp, 0, &par->plan, why, why_len);
        if (st != G3_OK)
            goto err_free_tree;
    }
    par->layout.world_rank = me->rank;
    par->layout.world_size = me->size;
    par->layout.tp = tp;
    par->layout.pp = pp;
    par->layout.dp = par->plan->dp;
    par->layout.nnodes = a.nnodes;
    par->layout.ranks_per_node = a.rpn;
    par->layout.local_size = me->local_size;
    snprintf(par->layout.how, sizeof(par->layout.how), "%s", par->plan->how);
    g3_topo_hostlist_compress((const char *const *)a.names, a.nnodes, par->layout.hosts,
                              sizeof(par->layout.hosts));
    g3_topo_plan_coords(par->plan, me->rank, &par->layout.tp_rank, &par->layout.pp_rank,
                        &par->layout.dp_rank);
    par->hostnames = a.names;   /* kept for the rank table */
    par->nhosts = a.nnodes;
    a.names = NULL;
    g3_topo_free(topo);
    free(nodes);
    topo = NULL;
    nodes = NULL;

    /* the groups, in the same order on every rank */
    st = g3_par_group(par, G3_TOPO_TP, "tp", G3_COMM_BACKEND_HOST, NULL, &par->tp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_PP, "pp", G3_COMM_BACKEND_HOST, NULL, &par->pp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_DP, "dp", G3_COMM_BACKEND_HOST, NULL, &par->dp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_PAR_AXIS_EMB, "emb", G3_COMM_BACKEND_HOST, NULL, &par->emb);
    if (st == G3_OK)
        st = g3_comm_world_group(world, G3_COMM_BACKEND_HOST, &par->all);
    g3_par_buf_host(par);
    g3_par_alloc_free(&a);
    if (st != G3_OK) {
        g3_par_free(par);
        return st;
    }
    *par_p = par;
    return G3_OK;

err_free_tree:
    g3_topo_free(topo);
    free(nodes);
err_free_alloc:
    g3_par_alloc_free(&a);
err_free_par:
    free(par);
    return st;
}

void g3_par_free(g3_par_t *par)
{
    if (!par)
        return;
    g3_par_drop_backend(par);
    g3_comm_free(par->all);
    g3_comm_free(par->emb);
    g3_comm_free(par->dp);
    g3_comm_free(par->pp);
    g3_comm_free(par->tp);
    g3_topo_plan_free(par->plan);
    g3_topo_names_free(par->hostnames, par->nhosts);
    free(par);
}

const g3_par_layout_t *g3_par_layout(const g3_par_t *par)
{
    return &par->layout;
}

/* ---- the groups for backend buffers ------------------------------------------------------- */

/* The staged groups' copies: the backend's own download / upload (in the order of its queued
 * ops; they return when the bytes have moved) and its page-locked host memory. */
static g3_status_t g3_par_to_host(void *ctx, void *host_dst, const void *src, size_t bytes)
{
    g3_backend_t *be = ctx;
    be->ops->download(be, host_dst, src, bytes);
    return be->ops->sync(be);
}

static g3_status_t g3_par_to_device(void *ctx, void *dst, const void *host_src, size_t bytes)
{
    g3_backend_t *be = ctx;
    be->ops->upload(be, dst, host_src, bytes);
    return be->ops->sync(be);
}

static g3_status_t g3_par_host_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    g3_backend_t *be = ctx;
    return be->ops->host_alloc(be, bytes, ptr_p);
}

static void g3_par_host_free(void *ctx, void *ptr)
{
    g3_backend_t *be = ctx;
    be->ops->host_free(be, ptr);
}

/* Which devices the ranks' buffers live on (collective over the world): OUT par->devices, the
 * distinct (host, device) pairs.  With `nccl` (NCCL runs one rank per GPU) a layout in which
 * two ranks of one node hold the same device is refused on every rank, logged by world rank 0. */
static g3_status_t g3_par_find_devices(g3_par_t *par, const g3_backend_t *be, int nccl)
{
    typedef struct { char host[256]; char device[64]; } g3_par_dev_blob_t;
    g3_par_dev_blob_t mine, *all;
    g3_comm_exchange_t *x = NULL;
    int size = par->layout.world_size, a = -1, b = -1, distinct = 0;
    g3_status_t st;

    all = calloc((size_t)size, sizeof(*all));
    if (!all) {
        g3_error("parallel layout: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    memset(&mine, 0, sizeof(mine));
    snprintf(mine.host, sizeof(mine.host), "%s", g3_comm_world_proc(par->world)->hostname);
    snprintf(mine.device, sizeof(mine.device), "%s", be->device_id);
    st = g3_comm_world_exchange(par->world, "the ranks' GPUs", &mine, sizeof(mine), &x);
    for (int r = 0; r < size && st == G3_OK; r++) {
        const void *blob;
        size_t len;
        st = g3_comm_exchange_get(x, r, &blob, &len);
        if (st == G3_OK && len == sizeof(mine))
            memcpy(&all[r], blob, sizeof(mine));
    }
    g3_comm_exchange_free(x);
    for (int i = 0; i < size && st == G3_OK; i++) {
        int first = 1;
        for (int j = 0; j < i && first; j++)
            if (all[i].device[0] && !strcmp(all[i].device, all[j].device) &&
                !strcmp(all[i].host, all[j].host)) {
                first = 0;
                if (a < 0) {
                    a = j;
                    b = i;
                }
            }
        distinct += first;
    }
    if (st == G3_OK && nccl && a >= 0) {
        if (par->layout.world_rank == 0)
            g3_error("--distributed-backend nccl: world ranks %d and %d share the GPU %s on %s, and NCCL runs one rank per GPU; start at most one rank per GPU (or give each rank its own GPU with CUDA_VISIBLE_DEVICES), or pass --distributed-backend ucx to move the device tensors through host memory",
                     a, b, all[a].device, all[a].host);
        st = G3_ERR_USAGE;   /* the layout asked for: exit 2 */
    }
    if (st == G3_OK)
        par->devices = distinct;
    free(all);
    return st;
}

int g3_par_devices(const g3_par_t *par)
{
    return par->devices;
}

g3_status_t g3_par_set_backend(g3_par_t *par, const g3_backend_t *be, g3_par_dist_t dist)
{
    g3_par_groups_t d = { NULL, NULL, NULL, NULL };
    g3_comm_devmem_t mem = { (void *)be, g3_par_to_host, g3_par_to_device, NULL, NULL };
    int force = g3_hook_staged_host();
    int host_mem = be->host_memory, staged;
    g3_status_t st;

    if (par->dev.tp)
        return G3_OK;   /* already made (a second engine on the same layout) */
    if (host_mem && !force) {
        g3_par_buf_host(par);
        return G3_OK;
    }
    /* host memory with GPT3D_STAGED_HOST=1 (tests: the staged path on the CPU backend) or
     * --distributed-backend ucx: staged groups; else NCCL */
    staged = host_mem || dist == G3_PAR_DIST_UCX;
    if (!staged && !g3_comm_backend_available(G3_COMM_BACKEND_NCCL)) {
        g3_error("--device %s with %d ranks needs NCCL for the tensor-, pipeline- and data-parallel groups, and this gpt3d was built without it; reconfigure with NCCL (configure --with-nccl=DIR), pass --distributed-backend ucx, or use --device cpu", be->name, par->layout.world_size);
        return G3_ERR_UNSUPPORTED;
    }
    st = g3_par_find_devices(par, be, !staged);
    if (st != G3_OK)
        return st;
    if (be->ops->host_alloc && be->ops->host_free) {
        mem.host_alloc = g3_par_host_alloc;
        mem.host_free = g3_par_host_free;
    }
    /* the same members and order as the host groups; NCCL takes the current CUDA device,
     * which the backend set when it opened */
    {
        static const int axes[4] = { G3_TOPO_TP, G3_TOPO_PP, G3_TOPO_DP, G3_PAR_AXIS_EMB };
        static const char *const names[2][4] = {
            { "tp (NCCL)", "pp (NCCL)", "dp (NCCL)", "emb (NCCL)" },
            { "tp (staged)", "pp (staged)", "dp (staged)", "emb (staged)" },
        };
        g3_comm_t **dst[4] = { &d.tp, &d.pp, &d.dp, &d.emb };
        st = G3_OK;
        for (int i = 0; i < 4 && st == G3_OK; i++)
            st = g3_par_group(par, axes[i], names[staged][i], G3_COMM_BACKEND_NCCL,
                              staged ? &mem : NULL, dst[i]);
    }
    if (st != G3_OK) {
        g3_comm_free(d.emb);
        g3_comm_free(d.dp);
        g3_comm_free(d.pp);
        g3_comm_free(d.tp);
        return st;
    }
    par->dev = d;
    par->buf = d;
    par->act = be->act_dtype == G3_BE_BF16 ? G3_DTYPE_BFLOAT16 : G3_DTYPE_FLOAT32;
    par->act_esize = (int)g3_be_dtype_size(be->act_dtype);
    return G3_OK;
}

void g3_par_drop_backend(g3_par_t *par)
{
    if (!par)
        return;
    g3_comm_free(par->dev.emb);
    g3_comm_free(par->dev.dp);
    g3_comm_free(par->dev.pp);
    g3_comm_free(par->dev.tp);
    par->dev = (g3_par_groups_t){ NULL, NULL, NULL, NULL };
    par->devices = 0;
    g3_par_buf_host(par);
}

/* ---- tensor-parallel collectives for the model ---------------------------------------------- */

/* buf (n,) act, backend memory.  On NCCL groups bf16 activations are summed in bf16
 * (docs/parallelism.md, "GPUs": one rounding per addition, exact-then-rounded-once at TP 2). */
static g3_status_t g3_par_tp_sum(void *ctx, void *buf, size_t n)
{
    g3_par_t *par = ctx;
    return g3_comm_allreduce(par->buf.tp, buf, buf, n, par->act, G3_COMM_SUM);
}

static g3_status_t g3_par_tp_host(void *ctx, double *buf, size_t n, int max)
{
    g3_par_t *par = ctx;
    return g3_comm_allreduce(par->tp, buf, buf, n, G3_DTYPE_FLOAT64,
                             max ? G3_COMM_MAX : G3_COMM_SUM);
}

/* send (n,) fp32 backend memory, recv (TP, n): the cross-entropy statistics on a GPU. */
static g3_status_t g3_par_tp_gather(void *ctx, const float *send, float *recv, size_t n)
{
    g3_par_t *par = ctx;
    return g3_comm_allgather(par->buf.tp, send, recv, n, G3_DTYPE_FLOAT32);
}

/* Sequence parallelism: send (TP, n) act -> recv (n,) act, and back (backend memory). */
static g3_status_t g3_par_tp_rs(void *ctx, const void *send, void *recv, size_t n)
{
    g3_par_t *par = ctx;
    return g3_comm_reduce_scatter(par->buf.tp, send, recv, n, par->act, G3_COMM_SUM);
}

static g3_status_t g3_par_tp_ag(void *ctx, const void *send, void *recv, size_t n)
{
    g3_par_t *par = ctx;
    return g3_comm_allgather(par->buf.tp, send, recv, n, par->act);
}

void g3_par_tp_comm(g3_par_t *par, g3_gpt_tp_comm_t *comm)
{
    comm->ctx = par;
    comm->reduce_scatter = g3_par_tp_rs;
    comm->allgather_act = g3_par_tp_ag;
    comm->allreduce_sum = g3_par_tp_sum;
    comm->allreduce_host = g3_par_tp_host;
    comm->allgather = g3_par_tp_gather;   /* used by backends with xent_stats (CUDA) */
}

g3_status_t g3_par_world_allreduce(g3_par_t *par, double *buf, size_t n, int max)
{
    return g3_comm_allreduce(par->all, buf, buf, n, G3_DTYPE_FLOAT64,
                             max ? G3_COMM_MAX : G3_COMM_SUM);
}

void g3_par_comm_busy(const g3_par_t *par, double busy[G3_PAR_AXES][G3_COMM_STAT_COUNT])
{
    const g3_comm_t *host[G3_PAR_AXES] = { par->tp, par->pp, par->dp, par->emb };
    const g3_comm_t *dev[G3_PAR_AXES] = { par->dev.tp, par->dev.pp, par->dev.dp, par->dev.emb };

    for (int a = 0; a < G3_PAR_AXES; a++) {
        double h[G3_COMM_STAT_COUNT], d[G3_COMM_STAT_COUNT];
        g3_comm_busy(host[a], h);
        g3_comm_busy(dev[a], d);
        for (int k = 0; k < G3_COMM_STAT_COUNT; k++)
            busy[a][k] = h[k] + d[k];
    }
}

/* ---- printing ----------------------------------------------------------------------------- */

void g3_par_print_layout(const g3_par_t *par, const g3_gpt_config_t *cfg, FILE *out)
{
    const g3_par_layout_t *l = &par->layout;
    g3_gpt_config_t c = *cfg;

    fprintf(out, "  layout: TP %d x PP %d x DP %d = %d ranks on %d node%s x %d (%s; mapping: %s)\n",
            l->tp, l->pp, l->dp, l->world_size, l->nnodes, l->nnodes == 1 ? "" : "s",
            l->ranks_per_node, l->hosts, l->how);
    fprintf(
        out,
        "  tensor parallel %d: %d head%s, %d MLP columns, %d vocabulary rows per rank; pipeline %d stage%s:",
        l->tp, cfg->num_attention_heads / l->tp, cfg->num_attention_heads / l->tp == 1 ? "" : "s",
        (cfg->ffn_hidden_size > 0 ? cfg->ffn_hidden_size : 4 * cfg->hidden_size) / l->tp,
        g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by, l->tp) / l->tp,
        l->pp, l->pp == 1 ? "" : "s");
    c.pp_size = l->pp;
    for (int s = 0; s < l->pp; s++) {
        int b = 0, e = 0;
        if (c.virtual_pp_size > 1) {   /* interleaved: the stage's V chunks */
            int lc = c.num_layers / (l->pp * c.virtual_pp_size);
            fprintf(out, " %d:", s);
            for (int v = 0; v < c.virtual_pp_size; v++)
                fprintf(out, "[%d,%d)", (v * l->pp + s) * lc, (v * l->pp + s + 1) * lc);
            continue;
        }
        g3_gpt_stage_layers(&c, s, &b, &e);
        fprintf(out, " %d:[%d,%d)", s, b, e);
    }
    fprintf(out, "; data parallel %d\n", l->dp);
    /* Which rank holds what, on which node: one line per rank up to G3_PAR_RANK_TABLE_MAX
     * ranks (the README demo's 8), else at --log-level debug. */
    if (l->world_size <= G3_PAR_RANK_TABLE_MAX)
        fprintf(out, "  %4s  %-24s %-22s %-20s %s\n", "rank", "node (local rank)",
                "pipeline stage", "tensor slice", "data-parallel replica");
    else
        fprintf(out, "  (%d ranks: the table of which rank holds what, on which node, is printed at --log-level debug)\n",
                l->world_size);
    for (int r = 0; r < l->world_size; r++) {
        int tp, pp, dp, b = 0, e = 0, h = cfg->num_attention_heads / l->tp;
        char node[300], stage[64], slice[64];
        g3_topo_plan_coords(par->plan, r, &tp, &pp, &dp);
        if (l->world_size > G3_PAR_RANK_TABLE_MAX) {
            g3_debug("rank table: world rank %d on %s local rank %d: tp %d pp %d dp %d", r,
                     par->hostnames[par->plan->rank_node[r]], par->plan->rank_local[r], tp, pp,
                     dp);
            continue;
        }
        snprintf(node, sizeof(node), "%s (%d)", par->hostnames[par->plan->rank_node[r]],
                 par->plan->rank_local[r]);
        if (c.virtual_pp_size > 1) {
            int lc = c.num_layers / (l->pp * c.virtual_pp_size);
            snprintf(stage, sizeof(stage), "%d: %d chunks of %d layer%s", pp, c.virtual_pp_size,
                     lc, lc == 1 ? "" : "s");
        } else {
            g3_gpt_stage_layers(&c, pp, &b, &e);
            snprintf(stage, sizeof(stage), "%d: layers [%d,%d)", pp, b, e);
        }
        if (l->tp == 1)
            snprintf(slice, sizeof(slice), "all (TP 1)");
        else if (h == 1)
            snprintf(slice, sizeof(slice), "%d of %d: head %d", tp, l->tp, tp);
        else
            snprintf(slice, sizeof(slice), "%d of %d: heads %d-%d", tp, l->tp, tp * h,
                     tp * h + h - 1);
        fprintf(out, "  %4d  %-24s %-22s %-20s %d of %d\n", r, node, stage, slice, dp, l->dp);
    }
}
