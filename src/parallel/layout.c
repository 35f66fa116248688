/* gpt3d parallel: the layout of a job's ranks on the TP x PP x DP grid and its groups.
 * Glossary in par.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "parallel/par_internal.h"
#include "topo/topo.h"

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
            g3_error("rank %d sent %zu bytes of placement, not %zu: is every rank running the "
                     "same gpt3d?", r, len, sizeof(*t));
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
            snprintf(why, why_len, "the job runs %d ranks on %s but %d on %s; gpt3d needs the "
                     "same number of ranks on every node (srun --ntasks-per-node, mpirun "
                     "--map-by ppr:N:node)", a->rpn, a->names[0], count[k], a->names[k]);
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
    if (!nodes) {
        g3_error("%s: out of memory", where);
        st = G3_ERR_NO_MEMORY;
        goto err_free_topo;
    }
    for (int i = 0; i < a->nnodes; i++) {
        nodes[i] = g3_topo_node_find(topo, a->names[i]);
        for (int k = 0; k < i && nodes[i] >= 0; k++)
            if (nodes[k] == nodes[i]) {
                snprintf(why, why_len, "node %s is listed twice in %s", a->names[i], where);
                st = G3_ERR_INVALID_ARG;
                goto err_free_nodes;
            }
        if (nodes[i] < 0) {
            snprintf(why, why_len, "node %s of %s is not in %s; give the cluster's full "
                     "topology.conf with --topology-file", a->names[i], where, topo->source);
            st = G3_ERR_INVALID_ARG;
            goto err_free_nodes;
        }
    }
    *topo_p = topo;
    *nodes_p = nodes;
    return G3_OK;

err_free_nodes:
    free(nodes);
err_free_topo:
    g3_topo_free(topo);
    return st;
}

/* Create one layer of groups along axis (collective). */
static g3_status_t g3_par_group(g3_par_t *par, g3_topo_axis_t axis, const char *name,
                                g3_comm_backend_t backend, g3_comm_t **comm_p)
{
    int *members = malloc(sizeof(int) * (size_t)par->layout.world_size);
    int n;
    g3_status_t st;

    if (!members) {
        g3_error("parallel layout: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    n = g3_topo_plan_group(par->plan, par->layout.world_rank, axis, members);
    st = g3_comm_group_create(par->world, name, backend, members, n, comm_p);
    free(members);
    return st;
}

/* The tied word embedding's group: first and last stage of the same (tp, dp) when PP > 1,
 * this rank alone elsewhere (collective). */
static g3_status_t g3_par_emb_group(g3_par_t *par, const char *name, g3_comm_backend_t backend,
                                    g3_comm_t **comm_p)
{
    const g3_par_layout_t *l = &par->layout;
    int emb[2], n = 1;

    emb[0] = l->world_rank;
    if (l->pp > 1 && (l->pp_rank == 0 || l->pp_rank == l->pp - 1)) {
        emb[0] = g3_topo_plan_rank(par->plan, l->tp_rank, 0, l->dp_rank);
        emb[1] = g3_topo_plan_rank(par->plan, l->tp_rank, l->pp - 1, l->dp_rank);
        n = 2;
    }
    return g3_comm_group_create(par->world, name, backend, emb, n, comm_p);
}

g3_status_t g3_par_init(g3_comm_world_t *world, int tp, int pp, const char *topology_file,
                        g3_par_t **par_p, char *why, size_t why_len)
{
    const g3_comm_proc_t *me = g3_comm_world_proc(world);
    g3_par_alloc_t a;
    g3_topo_t *topo = NULL;
    int *nodes = NULL;
    g3_par_t *par;
    g3_status_t st;

    why[0] = '\0';
    if (tp < 1 || pp < 1 || me->size % (tp * pp) != 0) {
        int tpp = tp * pp;
        snprintf(why, why_len, "the job's %d rank%s cannot be split into tensor-parallel size "
                 "%d x pipeline-parallel size %d = %d ranks per model replica: the world size "
                 "must be TP x PP x DP; start a multiple of %d ranks or change "
                 "--tensor-model-parallel-size / --pipeline-model-parallel-size", me->size,
                 me->size == 1 ? "" : "s", tp, pp, tpp, tpp);
        return G3_ERR_INVALID_ARG;
    }
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
    st = g3_par_group(par, G3_TOPO_TP, "tp", G3_COMM_BACKEND_HOST, &par->tp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_PP, "pp", G3_COMM_BACKEND_HOST, &par->pp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_DP, "dp", G3_COMM_BACKEND_HOST, &par->dp);
    if (st == G3_OK)
        st = g3_par_emb_group(par, "emb", G3_COMM_BACKEND_HOST, &par->emb);
    if (st == G3_OK)
        st = g3_comm_world_group(world, G3_COMM_BACKEND_HOST, &par->all);
    par->buf = (g3_par_groups_t){ par->tp, par->pp, par->dp, par->emb };
    par->act = G3_DTYPE_FLOAT32;
    par->act_esize = 4;
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
    g3_comm_free(par->dev.emb);
    g3_comm_free(par->dev.dp);
    g3_comm_free(par->dev.pp);
    g3_comm_free(par->dev.tp);
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

g3_comm_world_t *g3_par_world(const g3_par_t *par)
{
    return par->world;
}

g3_status_t g3_par_set_backend(g3_par_t *par, const g3_backend_t *be)
{
    g3_par_groups_t d = { NULL, NULL, NULL, NULL };
    g3_status_t st;

    if (par->dev.tp)
        return G3_OK;   /* already made (a second engine on the same layout) */
    if (strcmp(be->name, "cpu") == 0) {
        par->buf = (g3_par_groups_t){ par->tp, par->pp, par->dp, par->emb };
        par->act = G3_DTYPE_FLOAT32;
        par->act_esize = 4;
        return G3_OK;
    }
    if (!g3_comm_backend_available(G3_COMM_BACKEND_NCCL)) {
        g3_error("--device %s with %d ranks needs NCCL for the tensor-, pipeline- and "
                 "data-parallel groups, and this gpt3d was built without it; reconfigure with "
                 "NCCL (configure --with-nccl=DIR) or use --device cpu", be->name,
                 par->layout.world_size);
        return G3_ERR_UNSUPPORTED;
    }
    /* the same members and order as the host groups; NCCL takes the current CUDA device,
     * which the backend set when it opened */
    st = g3_par_group(par, G3_TOPO_TP, "tp (NCCL)", G3_COMM_BACKEND_NCCL, &d.tp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_PP, "pp (NCCL)", G3_COMM_BACKEND_NCCL, &d.pp);
    if (st == G3_OK)
        st = g3_par_group(par, G3_TOPO_DP, "dp (NCCL)", G3_COMM_BACKEND_NCCL, &d.dp);
    if (st == G3_OK)
        st = g3_par_emb_group(par, "emb (NCCL)", G3_COMM_BACKEND_NCCL, &d.emb);
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

/* ---- printing ----------------------------------------------------------------------------- */

void g3_par_print_layout(const g3_par_t *par, const g3_gpt_config_t *cfg, FILE *out)
{
    const g3_par_layout_t *l = &par->layout;
    g3_gpt_config_t c = *cfg;

    fprintf(out, "  layout: TP %d x PP %d x DP %d = %d ranks on %d node%s x %d (%s; mapping: "
            "%s)\n", l->tp, l->pp, l->dp, l->world_size, l->nnodes, l->nnodes == 1 ? "" : "s",
            l->ranks_per_node, l->hosts, l->how);
    fprintf(out, "  tensor parallel %d: %d heads, %d MLP columns, %d vocabulary rows per rank; "
            "pipeline %d stage%s:", l->tp, cfg->num_attention_heads / l->tp,
            (cfg->ffn_hidden_size > 0 ? cfg->ffn_hidden_size : 4 * cfg->hidden_size) / l->tp,
            g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by, l->tp) /
                l->tp, l->pp, l->pp == 1 ? "" : "s");
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
    if (g3_log_enabled(G3_LOG_DEBUG)) {
        for (int r = 0; r < l->world_size; r++) {
            int tp, pp, dp;
            g3_topo_plan_coords(par->plan, r, &tp, &pp, &dp);
            g3_debug("rank table: world rank %d on %s local rank %d: tp %d pp %d dp %d", r,
                     par->hostnames[par->plan->rank_node[r]], par->plan->rank_local[r], tp, pp,
                     dp);
        }
    }
}
