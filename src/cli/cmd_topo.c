/* gpt3d topo: print the rank-to-node plan for the current job or for one
 * described on the command line.
 *
 *   gpt3d topo                                   the current job (srun, mpirun,
 *                                                a batch script, or this host)
 *   gpt3d topo --nodelist 'n[0-419]' --ranks-per-node 8 --topology-file topo.conf \
 *              --tensor-model-parallel-size 8 --pipeline-model-parallel-size 35 --summary
 *
 * Per rank: host, local rank, tp, pp, dp, leaf switch.  Per group: its
 * ranks, its hosts and the highest switch level its traffic crosses.  Then
 * the estimated bytes per iteration that cross leaf switches under this
 * plan and under two topology-blind orders (docs/topology.md). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "comm/comm.h"
#include "core/log.h"
#include "core/opt.h"
#include "parallel/par.h"
#include "topo/topo.h"
#include "train/flags.h"

static const g3_opt_spec_t g3_topo_specs[] = {
    { "nodelist", G3_OPT_STRING, NULL, "Plan for a job on these nodes (a Slurm host list such as n[0-419]) instead of the current job.", NULL, 0, 0, "HOSTLIST" },
    { "ranks-per-node", G3_OPT_INT, NULL, "Ranks (GPUs) per node; default: what the job runs, SLURM_NTASKS_PER_NODE, else 1.", NULL, 0, 0, NULL },
    { "summary", G3_OPT_BOOL, NULL, "Print totals and one line per kind of group instead of every rank and group.", NULL, 0, 0, NULL },
    { "hidden-size", G3_OPT_INT, "20480", "Traffic model: hidden size (default: MT-NLG 530B).", NULL, 0, 0, NULL },
    { "num-layers", G3_OPT_INT, "105", "Traffic model: transformer layers.", NULL, 0, 0, NULL },
    { "seq-length", G3_OPT_INT, "2048", "Traffic model: sequence length.", NULL, 0, 0, NULL },
    { "micro-batch-size", G3_OPT_INT, "1", "Traffic model: micro batch size.", NULL, 0, 0, NULL },
    { "global-batch-size", G3_OPT_INT, "1920", "Traffic model: global batch size.", NULL, 0, 0, NULL },
    { "vocab-size", G3_OPT_INT, "51200", "Traffic model: (padded) vocabulary size.", NULL, 0, 0, NULL },
    /* the layout flags, one definition with gpt3d train (its uneven pipeline split changes
     * no placement; --distributed-timeout-minutes bounds gathering the hosts here) */
    G3_TRAIN_LAYOUT_SPECS,
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_topo_cmd = {
    "topo", "Print the rank-to-node mapping for a job or a described cluster.", NULL, 0, 0,
    g3_topo_specs
};

typedef struct {
    g3_par_alloc_t alloc;  /* the nodes; rank_node NULL: block order */
    char     what[256];    /* where the allocation came from */
} g3_job_t;

static g3_status_t g3_cmd_job_from_nodelist(g3_job_t *j, const char *list, const char *what)
{
    g3_status_t st = g3_topo_hostlist_expand(list, &j->alloc.names, &j->alloc.nnodes);
    if (st != G3_OK)
        return st;
    snprintf(j->what, sizeof(j->what), "%s", what);
    return G3_OK;
}

/* The current job, gathered over PMIx (collective). */
static g3_status_t g3_cmd_job_from_world(g3_comm_world_t *world, g3_job_t *j, char *why,
                                     size_t why_len)
{
    g3_status_t st = g3_par_alloc_gather(world, "task hosts and topology addresses", &j->alloc,
                                         why, why_len);
    if (st != G3_OK)
        return st;
    snprintf(j->what, sizeof(j->what), "the current job (%d ranks over PMIx%s)",
             g3_comm_world_proc(world)->size,
             j->alloc.addrs ? ", with SLURM_TOPOLOGY_ADDR" : "");
    return G3_OK;
}

static const char *g3_cmd_level_name(const g3_topo_t *t, int level, char *buf, size_t len)
{
    if (level <= 0)
        snprintf(buf, len, "node");
    else if (level == 1)
        snprintf(buf, len, "leaf");
    else if (level > t->levels)
        snprintf(buf, len, "none (no common switch)");
    else
        snprintf(buf, len, "level %d", level);
    return buf;
}

static const char *g3_cmd_bytes(double b, char *buf, size_t len)
{
    static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB", "EB" };
    int u = 0;
    while (b >= 1000 && u < 6) {
        b /= 1000;
        u++;
    }
    snprintf(buf, len, u ? "%.3g %s" : "%.0f %s", b, units[u]);
    return buf;
}

/* "0-7,16" for ranks; hosts compressed to host lists (unique, in order). */
static void g3_cmd_format_ranks(const int *r, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 24 < len;) {
        int k = i;
        while (k + 1 < n && r[k + 1] == r[k] + 1)
            k++;
        used += (size_t)snprintf(buf + used, len - used, k > i + 1 ? "%s%d-%d" : "%s%d",
                                 i ? "," : "", r[i], r[k]);
        if (k == i + 1)
            used += (size_t)snprintf(buf + used, len - used, ",%d", r[k]);
        i = k + 1;
        if (i < n && used + 24 >= len)
            snprintf(buf + used, len - used, ",...");
    }
}

static void g3_cmd_format_hosts(const g3_topo_t *t, const g3_topo_plan_t *p, const int *r, int n,
                            const char **tmp, char *buf, size_t len)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *h = t->node_names[p->rank_topo[r[i]]];
        int dup = 0;
        for (int m = 0; m < k && !dup; m++)
            dup = tmp[m] == h;
        if (!dup)
            tmp[k++] = h;
    }
    g3_topo_hostlist_compress(tmp, k, buf, len);
}

static void g3_cmd_print_plan(const g3_topo_t *t, const g3_topo_plan_t *p, int summary)
{
    int maxn = p->tp > p->pp ? p->tp : p->pp;
    int *members, *hist;
    const char **tmp;
    char lv[48], rbuf[200], hbuf[200];

    maxn = maxn > p->dp ? maxn : p->dp;
    members = malloc((size_t)maxn * sizeof(int));
    tmp = malloc((size_t)maxn * sizeof(char *));
    hist = calloc((size_t)t->levels + 2, sizeof(int));
    if (!members || !tmp || !hist) {
        g3_error("out of memory printing the plan");
        goto out;
    }
    if (!summary) {
        printf("\nranks:\n%6s  %-20s %5s %4s %4s %4s  %s\n", "rank", "host", "local", "tp",
               "pp", "dp", "leaf switch");
        for (int w = 0; w < p->world; w++)
            printf("%6d  %-20s %5d %4d %4d %4d  %s\n", w, t->node_names[p->rank_topo[w]],
                   p->rank_local[w], p->coord[G3_TOPO_TP][w], p->coord[G3_TOPO_PP][w],
                   p->coord[G3_TOPO_DP][w], t->switch_names[t->node_switch[p->rank_topo[w]]]);
        printf(
            "\ngroups (ranks in group order; hosts; highest switch level its traffic crosses):\n");
    } else {
        printf("\ngroups (how many cross up to each switch level):\n");
    }
    for (int a = 0; a < G3_TOPO_AXES; a++) {
        int n = g3_topo_plan_axis_size(p, (g3_topo_axis_t)a), ngroups = p->world / n;
        memset(hist, 0, ((size_t)t->levels + 2) * sizeof(int));
        /* one group per combination of the other two coordinates: visit the
         * rank whose coordinate on this axis is 0 */
        for (int w = 0; w < p->world; w++) {
            int level;
            if (p->coord[a][w] != 0)
                continue;
            level = g3_topo_plan_group_level(t, p, w, (g3_topo_axis_t)a);
            hist[level > t->levels + 1 ? t->levels + 1 : level]++;
            if (summary)
                continue;
            g3_topo_plan_group(p, w, (g3_topo_axis_t)a, members);
            g3_cmd_format_ranks(members, n, rbuf, sizeof(rbuf));
            g3_cmd_format_hosts(t, p, members, n, tmp, hbuf, sizeof(hbuf));
            if (a == G3_TOPO_TP)
                printf("  tp group pp=%d dp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_PP][w], p->coord[G3_TOPO_DP][w], rbuf, hbuf,
                       g3_cmd_level_name(t, level, lv, sizeof(lv)));
            else if (a == G3_TOPO_PP)
                printf("  pp group tp=%d dp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_TP][w], p->coord[G3_TOPO_DP][w], rbuf, hbuf,
                       g3_cmd_level_name(t, level, lv, sizeof(lv)));
            else
                printf("  dp group tp=%d pp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_TP][w], p->coord[G3_TOPO_PP][w], rbuf, hbuf,
                       g3_cmd_level_name(t, level, lv, sizeof(lv)));
        }
        if (summary) {
            printf("  %s: %d groups of %d;", g3_topo_axis_name((g3_topo_axis_t)a), ngroups, n);
            for (int l = 0; l <= t->levels + 1; l++)
                if (hist[l])
                    printf(" %d within %s;", hist[l], g3_cmd_level_name(t, l, lv, sizeof(lv)));
            printf("\n");
        }
    }
    if (summary && p->dp <= 64) {
        /* one line per replica: its nodes and leaf switches, in stage order */
        printf("\nreplicas (pipeline stages 0..%d in order):\n", p->pp - 1);
        for (int d = 0; d < p->dp; d++) {
            const char **leaves = malloc((size_t)p->pp * sizeof(char *));
            int nl = 0;
            for (int s = 0; s < p->pp; s++)
                members[s] = g3_topo_plan_rank(p, 0, s, d);
            g3_cmd_format_hosts(t, p, members, p->pp, tmp, hbuf, sizeof(hbuf));
            if (leaves) {
                for (int s = 0; s < p->pp; s++) {
                    const char *l = t->switch_names[t->node_switch[p->rank_topo[members[s]]]];
                    if (nl == 0 || leaves[nl - 1] != l)
                        leaves[nl++] = l;
                }
                g3_topo_hostlist_compress(leaves, nl, rbuf, sizeof(rbuf));
                free(leaves);
            } else {
                rbuf[0] = '\0';
            }
            printf("  dp=%d: hosts %s; leaf switches %s\n", d, hbuf, rbuf);
        }
    }
out:
    free(members);
    free(tmp);
    free(hist);
}

static void g3_cmd_print_traffic(const g3_topo_t *t, g3_topo_plan_t *const plans[3],
                             const g3_topo_model_t *m)
{
    static const char *const heads[3] = { "this plan", "naive order", "Megatron order" };
    g3_topo_traffic_t tr[3];
    char b[3][32];
    double sum[3] = { 0, 0, 0 }, net[3] = { 0, 0, 0 };

    for (int i = 0; i < 3; i++) {
        g3_topo_plan_traffic(t, plans[i], m, &tr[i]);
        for (int a = 0; a < G3_TOPO_AXES; a++) {
            sum[i] += tr[i].bytes[a];
            net[i] += tr[i].total[a];
        }
    }
    printf(
        "\ntraffic per iteration (model: hidden %.0f, %.0f layers, seq %.0f, micro batch %.0f, global batch %.0f, vocab %.0f; bf16 activations, fp32 gradients; see docs/topology.md):\n",
        m->hidden, m->layers, m->seq, m->micro_batch, m->global_batch, m->vocab);
    printf("  %-38s %15s %15s %15s\n", "", heads[0], heads[1], heads[2]);
    for (int a = 0; a < G3_TOPO_AXES; a++) {
        char label[48];
        snprintf(label, sizeof(label), "%s crossing leaf switches",
                 a == G3_TOPO_TP ? "tensor-parallel" : a == G3_TOPO_PP ? "pipeline" : "data-parallel");
        printf("  %-38s %15s %15s %15s\n", label, g3_cmd_bytes(tr[0].bytes[a], b[0], 32),
               g3_cmd_bytes(tr[1].bytes[a], b[1], 32), g3_cmd_bytes(tr[2].bytes[a], b[2], 32));
    }
    printf("  %-38s %15s %15s %15s\n", "all crossing leaf switches", g3_cmd_bytes(sum[0], b[0], 32),
           g3_cmd_bytes(sum[1], b[1], 32), g3_cmd_bytes(sum[2], b[2], 32));
    printf("  %-38s %15s %15s %15s\n", "all between nodes", g3_cmd_bytes(net[0], b[0], 32),
           g3_cmd_bytes(net[1], b[1], 32), g3_cmd_bytes(net[2], b[2], 32));
    printf("  %-38s %8d / %4.1f %8d / %4.1f %8d / %4.1f\n", "leaf switches per replica max / mean",
           tr[0].replica_leaves_max, tr[0].replica_leaves_mean, tr[1].replica_leaves_max,
           tr[1].replica_leaves_mean, tr[2].replica_leaves_max, tr[2].replica_leaves_mean);
    if (sum[1] > 0)
        printf(
            "  this plan / naive order: %.2fx the leaf-crossing bytes, %.2fx the pipeline ones (on the critical path)\n",
            sum[0] / sum[1],
            tr[1].bytes[G3_TOPO_PP] > 0 ? tr[0].bytes[G3_TOPO_PP] / tr[1].bytes[G3_TOPO_PP] : 1.0);
}

/* The flags of the traffic model and the layout (the trainer's reader).  OUT: *lf, *rpn_flag
 * (0: not given), *model.  RET: an exit code (logged). */
static int g3_cmd_topo_flags(const g3_opts_t *o, g3_train_layout_flags_t *lf, int *rpn_flag,
                         g3_topo_model_t *model)
{
    if (!g3_train_flags_layout(o, lf))
        return G3_EXIT_USAGE;
    g3_topo_model_default(model);
    model->hidden = (double)g3_opts_int(o, "hidden-size");
    model->layers = (double)g3_opts_int(o, "num-layers");
    model->seq = (double)g3_opts_int(o, "seq-length");
    model->micro_batch = (double)g3_opts_int(o, "micro-batch-size");
    model->global_batch = (double)g3_opts_int(o, "global-batch-size");
    model->vocab = (double)g3_opts_int(o, "vocab-size");
    if (model->hidden < 1 || model->layers < 1 || model->seq < 1 || model->micro_batch < 1 ||
        model->global_batch < 1 || model->vocab < 1) {
        g3_error(
            "gpt3d topo: the traffic model's sizes (--hidden-size, --num-layers, --seq-length, --micro-batch-size, --global-batch-size, --vocab-size) must be positive");
        return G3_EXIT_USAGE;
    }
    if (g3_opts_is_set(o, "ranks-per-node") && g3_opts_int(o, "ranks-per-node") < 1) {
        g3_error("gpt3d topo: --ranks-per-node must be at least 1");
        return G3_EXIT_USAGE;
    }
    *rpn_flag = g3_opts_is_set(o, "ranks-per-node") ? (int)g3_opts_int(o, "ranks-per-node") : 0;
    return G3_EXIT_OK;
}

/* The running job's allocation: gathered over PMIx from its ranks, else the Slurm allocation
 * this one process runs in (*in_alloc = 1), else this host.  OUT: *world, job, *in_alloc,
 * *done (1: a rank other than 0, which stops here with the exit code returned).
 * RET: an exit code (logged). */
static int g3_cmd_topo_job_running(double timeout_s, int rpn_flag, g3_comm_world_t **world,
                               g3_job_t *job, int *in_alloc, int *done)
{
    char why[512];
    g3_status_t st;

    st = g3_comm_world_init(timeout_s, world);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    if (g3_comm_world_proc(*world)->size > 1) {
        st = g3_cmd_job_from_world(*world, job, why, sizeof(why));
        if (g3_comm_world_proc(*world)->rank != 0 && (st == G3_OK || st == G3_ERR_INVALID_ARG)) {
            *done = 1;   /* rank 0 alone plans, prints and reports a bad job */
            return G3_EXIT_OK;
        }
        if (st != G3_OK) {
            if (st == G3_ERR_INVALID_ARG)
                g3_error("%s", why);
            return g3_status_exit_code(st);
        }
        if (rpn_flag && rpn_flag != job->alloc.rpn) {
            g3_error(
                "gpt3d topo: --ranks-per-node %d, but the job runs %d ranks per node; drop the flag to plan for the running job",
                rpn_flag, job->alloc.rpn);
            return G3_EXIT_USAGE;
        }
        return G3_EXIT_OK;
    }
    st = g3_topo_slurm_alloc(&job->alloc.names, &job->alloc.nnodes, &job->alloc.rpn);
    if (st == G3_OK) {
        snprintf(job->what, sizeof(job->what), "SLURM_JOB_NODELIST");
        *in_alloc = 1;
        if (rpn_flag)
            job->alloc.rpn = rpn_flag;
        return G3_EXIT_OK;
    }
    if (st != G3_ERR_NOT_FOUND)
        return G3_EXIT_FAILURE;
    st = g3_cmd_job_from_nodelist(job, g3_comm_world_proc(*world)->hostname,
                              "this host (no Slurm allocation, no launcher)");
    job->alloc.rpn = rpn_flag ? rpn_flag : 1;
    return st == G3_OK ? G3_EXIT_OK : G3_EXIT_FAILURE;
}

/* The switches: --topology-file; under srun, the tasks' SLURM_TOPOLOGY_ADDR; one process in
 * an allocation, the tree Slurm reports (scontrol show topology, else the topology.conf beside
 * slurm.conf), or one flat switch with a word on how to get the tree.  OUT: *topo, *nodes.
 * RET: an exit code (logged). */
static int g3_cmd_topo_switches(const char *tfile, int in_alloc, g3_job_t *job, g3_topo_t **topo,
                            int **nodes)
{
    char why[512] = "", why_sc[256], conf_buf[1024];
    g3_status_t st;

    if (in_alloc && tfile == NULL) {
        st = g3_topo_from_scontrol(topo, why_sc, sizeof(why_sc));
        if (st == G3_OK) {
            st = g3_topo_nodes_find(*topo, job->alloc.names, job->alloc.nnodes, nodes, why,
                                    sizeof(why));
            if (st == G3_ERR_INVALID_ARG)
                g3_error("gpt3d topo: %s", why);
            return g3_status_exit_code(st);
        }
        if (st != G3_ERR_NOT_FOUND)
            return g3_status_exit_code(st);
        tfile = g3_topo_slurm_conf_path(conf_buf, sizeof(conf_buf));
        if (tfile == NULL)
            g3_warn(
                "gpt3d topo: one process in an allocation and no switch tree found (%s; no readable %s): planning as if all nodes were under one switch; run it under srun --mpi=pmix (each task reads SLURM_TOPOLOGY_ADDR) or give --topology-file",
                why_sc, conf_buf);
    }
    st = g3_par_alloc_topo(&job->alloc, tfile, job->what, topo, nodes, why, sizeof(why));
    if (st != G3_OK) {
        if (why[0])
            g3_error("gpt3d topo: %s", why);
        /* a malformed --topology-file is a usage error too */
        return tfile && st == G3_ERR_FORMAT ? G3_EXIT_USAGE : g3_status_exit_code(st);
    }
    return G3_EXIT_OK;
}

/* The plan and the two topology-blind references.  OUT: plans[3].  RET: an exit code. */
static int g3_cmd_topo_plans(const g3_topo_t *topo, const g3_job_t *job, int *nodes, int tp, int pp,
                         g3_topo_plan_t *plans[3])
{
    g3_topo_alloc_t alloc = { job->alloc.nnodes, nodes, job->alloc.rpn, job->alloc.rank_node,
                              job->alloc.rank_local };
    char why[512] = "";
    g3_status_t st = g3_topo_map(topo, &alloc, tp, pp, 0, &plans[0], why, sizeof(why));

    if (st == G3_ERR_INVALID_ARG) {
        g3_error("gpt3d topo: impossible layout: %s", why);
        return G3_EXIT_USAGE;
    }
    if (st == G3_OK)
        st = g3_topo_map_order(topo, &alloc, tp, pp, 0, G3_TOPO_ORDER_NAIVE, &plans[1], why,
                               sizeof(why));
    if (st == G3_OK)
        st = g3_topo_map_order(topo, &alloc, tp, pp, 0, G3_TOPO_ORDER_MEGATRON, &plans[2], why,
                               sizeof(why));
    if (st != G3_OK) {
        g3_error("gpt3d topo: mapping failed: %s %s", g3_status_string(st), why);
        return G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

/* The first lines: the job, where its allocation came from, the switches in use. */
static void g3_cmd_print_header(const g3_topo_t *topo, const g3_job_t *job, const int *nodes,
                            const g3_topo_plan_t *plan, int tp, int pp)
{
    int used = 0;
    char hl[300];
    int *seen = calloc((size_t)topo->nswitches + 1, sizeof(int));

    if (seen) {
        for (int i = 0; i < job->alloc.nnodes; i++)
            if (!seen[topo->node_switch[nodes[i]]]++)
                used++;
        free(seen);
    }
    g3_topo_hostlist_compress((const char *const *)job->alloc.names, job->alloc.nnodes, hl,
                              sizeof(hl));
    printf("gpt3d topo: %d node%s x %d rank%s = %d ranks; TP %d x PP %d x DP %d (layout: %s)\n",
           job->alloc.nnodes, job->alloc.nnodes == 1 ? "" : "s", job->alloc.rpn,
           job->alloc.rpn == 1 ? "" : "s", plan->world, tp, pp, plan->dp, plan->how);
    printf("allocation: %s from %s\n", hl, job->what);
    printf("topology: %s: %d switches, %d level%s, %d leaf switches in use\n", topo->source,
           topo->nswitches, topo->levels, topo->levels == 1 ? "" : "s", used);
    printf("search: %d candidate layouts scored, %ld slot visits for %d slots of TP ranks\n",
           plan->candidates, plan->steps, plan->world / plan->tp);
}

int g3_cmd_topo(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_comm_world_t *world = NULL;
    g3_topo_t *topo = NULL;
    g3_topo_plan_t *plans[3] = { NULL, NULL, NULL };
    g3_topo_model_t model;
    g3_job_t job;
    int *nodes = NULL, rc;
    g3_train_layout_flags_t lf;
    int rpn_flag = 0, in_alloc = 0, done = 0;

    memset(&job, 0, sizeof(job));
    if (g3_opts_parse(&g3_topo_cmd, argc, argv, &o) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_opts_help_shown(o)) {
        g3_opts_free(o);
        return G3_EXIT_OK;
    }
    rc = g3_cmd_topo_flags(o, &lf, &rpn_flag, &model);
    /* 1. the allocation: --nodelist, else the running job */
    if (rc == G3_EXIT_OK && g3_opts_str(o, "nodelist")) {
        if (g3_cmd_job_from_nodelist(&job, g3_opts_str(o, "nodelist"), "--nodelist") != G3_OK)
            rc = G3_EXIT_USAGE;
        job.alloc.rpn = rpn_flag ? rpn_flag : 1;
    } else if (rc == G3_EXIT_OK) {
        rc = g3_cmd_topo_job_running(lf.timeout_min * 60.0, rpn_flag, &world, &job, &in_alloc,
                                 &done);
    }
    /* 2. the switches, 3. the plan and the two references */
    if (rc == G3_EXIT_OK && !done)
        rc = g3_cmd_topo_switches(lf.topology_file, in_alloc, &job, &topo, &nodes);
    if (rc == G3_EXIT_OK && !done)
        rc = g3_cmd_topo_plans(topo, &job, nodes, lf.tp, lf.pp, plans);
    /* 4. print */
    if (rc == G3_EXIT_OK && !done) {
        g3_cmd_print_header(topo, &job, nodes, plans[0], lf.tp, lf.pp);
        g3_cmd_print_plan(topo, plans[0], g3_opts_bool(o, "summary"));
        g3_cmd_print_traffic(topo, plans, &model);
        fflush(stdout);
    }
    for (int i = 0; i < 3; i++)
        g3_topo_plan_free(plans[i]);
    free(nodes);
    g3_topo_free(topo);
    g3_par_alloc_free(&job.alloc);
    g3_comm_world_free(world);
    g3_opts_free(o);
    return rc;
}
