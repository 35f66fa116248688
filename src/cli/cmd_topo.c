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
#include <unistd.h>

#include "cli/commands.h"
#include "comm/comm.h"
#include "core/log.h"
#include "core/opt.h"
#include "parallel/par.h"
#include "topo/topo.h"

static const g3_opt_spec_t g3_topo_specs[] = {
    { "nodelist", G3_OPT_STRING, NULL, "Plan for a job on these nodes (a Slurm host list such as n[0-419]) instead of the current job.", NULL, 0, 0, "HOSTLIST" },
    { "topology-file", G3_OPT_STRING, NULL, "Slurm topology.conf (tree format) describing the switches; default: the tasks' SLURM_TOPOLOGY_ADDR, else one flat switch.", NULL, 0, 0, "FILE" },
    { "ranks-per-node", G3_OPT_INT, NULL, "Ranks (GPUs) per node; default: what the job runs, SLURM_NTASKS_PER_NODE, else 1.", NULL, 0, 0, NULL },
    { "tensor-model-parallel-size", G3_OPT_INT, "1", "Tensor-parallel size TP (inside one node).", NULL, 0, 0, NULL },
    { "pipeline-model-parallel-size", G3_OPT_INT, "1", "Pipeline-parallel size PP; DP = ranks / (TP x PP).", NULL, 0, 0, NULL },
    { "summary", G3_OPT_BOOL, NULL, "Print totals and one line per kind of group instead of every rank and group.", NULL, 0, 0, NULL },
    { "hidden-size", G3_OPT_INT, "20480", "Traffic model: hidden size (default: MT-NLG 530B).", NULL, 0, 0, NULL },
    { "num-layers", G3_OPT_INT, "105", "Traffic model: transformer layers.", NULL, 0, 0, NULL },
    { "seq-length", G3_OPT_INT, "2048", "Traffic model: sequence length.", NULL, 0, 0, NULL },
    { "micro-batch-size", G3_OPT_INT, "1", "Traffic model: micro batch size.", NULL, 0, 0, NULL },
    { "global-batch-size", G3_OPT_INT, "1920", "Traffic model: global batch size.", NULL, 0, 0, NULL },
    { "vocab-size", G3_OPT_INT, "51200", "Traffic model: (padded) vocabulary size.", NULL, 0, 0, NULL },
    { "distributed-timeout-minutes", G3_OPT_FLOAT, "10", "Give up gathering the job's hosts after this long (exit 76).", NULL, 0, 0, NULL },
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

/* SLURM_TASKS_PER_NODE looks like "8(x4),4": RET the count if uniform, else -1. */
static int g3_uniform_tasks_per_node(const char *s)
{
    int first = -1;
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1)
            return -1;
        if (first < 0)
            first = (int)v;
        else if (first != (int)v)
            return -1;
        s = end;
        if (*s == '(') {
            s = strchr(s, ')');
            if (s == NULL)
                return -1;
            s++;
        }
        if (*s == ',')
            s++;
    }
    return first;
}

static g3_status_t g3_job_from_nodelist(g3_job_t *j, const char *list, const char *what)
{
    g3_status_t st = g3_topo_hostlist_expand(list, &j->alloc.names, &j->alloc.nnodes);
    if (st != G3_OK)
        return st;
    snprintf(j->what, sizeof(j->what), "%s", what);
    return G3_OK;
}

/* The current job, gathered over PMIx (collective). */
static g3_status_t g3_job_from_world(g3_comm_world_t *world, g3_job_t *j, char *why,
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

/* The switch tree Slurm itself reports, for one process in an allocation
 * (a batch script or salloc, no srun: no task has SLURM_TOPOLOGY_ADDR).
 * "scontrol show topology" prints topology.conf's keys plus Level=, and an
 * upper switch lists every node below it in Nodes= as well: keep SwitchName=,
 * Switches=, LinkSpeed= and the Nodes= of leaf switches only.
 * RET G3_ERR_NOT_FOUND (why says so) when scontrol cannot be run or reports
 * no switch; OUT: *topo_p. */
static g3_status_t g3_topo_from_scontrol(g3_topo_t **topo_p, char *why, size_t why_len)
{
    FILE *p = popen("scontrol show topology 2>/dev/null", "r");
    char line[4096], *text = NULL;
    size_t used = 0, cap = 0;
    int switches = 0, status;
    g3_status_t st;

    if (p == NULL) {
        snprintf(why, why_len, "cannot run scontrol show topology");
        return G3_ERR_NOT_FOUND;
    }
    while (fgets(line, sizeof(line), p)) {
        char *save = NULL, *tok, rec[4096];
        size_t rl = 0;
        int upper = strstr(line, "Switches=") != NULL;
        if (strncmp(line, "SwitchName=", 11) != 0)
            continue;
        rec[0] = '\0';
        for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
            if (strncmp(tok, "SwitchName=", 11) && strncmp(tok, "Switches=", 9) &&
                strncmp(tok, "LinkSpeed=", 10) && (upper || strncmp(tok, "Nodes=", 6)))
                continue;
            rl += (size_t)snprintf(rec + rl, sizeof(rec) > rl ? sizeof(rec) - rl : 0, "%s%s",
                                   rl ? " " : "", tok);
        }
        if (rl >= sizeof(rec) - 2)
            continue;   /* a line too long for us: the tree will miss it and say so */
        if (used + rl + 2 > cap) {
            size_t ncap = cap ? 2 * cap + rl + 2 : 4096 + rl;
            char *n = realloc(text, ncap);
            if (n == NULL) {
                free(text);
                pclose(p);
                g3_error("gpt3d topo: out of memory reading scontrol show topology");
                return G3_ERR_NO_MEMORY;
            }
            text = n;
            cap = ncap;
        }
        memcpy(text + used, rec, rl);
        used += rl;
        text[used++] = '\n';
        text[used] = '\0';
        switches++;
    }
    status = pclose(p);
    if (switches == 0) {
        free(text);
        snprintf(why, why_len, "scontrol show topology reports no switch%s",
                 status != 0 ? " (it failed: no scontrol, or no topology plugin)" : "");
        return G3_ERR_NOT_FOUND;
    }
    st = g3_topo_parse(text, "scontrol show topology", topo_p);
    free(text);
    return st;
}

/* The nodes of the allocation in the switch tree topo.  OUT: *nodes_p
 * (nnodes), RET G3_ERR_INVALID_ARG with why when a node is missing. */
static g3_status_t g3_topo_find_nodes(const g3_topo_t *topo, const g3_par_alloc_t *a,
                                      int **nodes_p, char *why, size_t why_len)
{
    int *nodes = malloc((size_t)a->nnodes * sizeof(int));
    if (nodes == NULL) {
        g3_error("gpt3d topo: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < a->nnodes; i++) {
        nodes[i] = g3_topo_node_find(topo, a->names[i]);
        if (nodes[i] < 0) {
            snprintf(
                why, why_len,
                "node %s of the allocation is not in %s; give the cluster's topology.conf with --topology-file",
                a->names[i], topo->source);
            free(nodes);
            return G3_ERR_INVALID_ARG;
        }
    }
    *nodes_p = nodes;
    return G3_OK;
}

/* topology.conf beside slurm.conf ($SLURM_CONF, else /etc/slurm): buf, or
 * NULL when it cannot be read. */
static const char *g3_topo_conf_path(char *buf, size_t len)
{
    const char *conf = getenv("SLURM_CONF"), *slash;
    if (conf && *conf && (slash = strrchr(conf, '/')) != NULL)
        snprintf(buf, len, "%.*s/topology.conf", (int)(slash - conf), conf);
    else
        snprintf(buf, len, "/etc/slurm/topology.conf");
    return access(buf, R_OK) == 0 ? buf : NULL;
}

static const char *g3_level_name(const g3_topo_t *t, int level, char *buf, size_t len)
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

static const char *g3_bytes(double b, char *buf, size_t len)
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
static void g3_format_ranks(const int *r, int n, char *buf, size_t len)
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

static void g3_format_hosts(const g3_topo_t *t, const g3_topo_plan_t *p, const int *r, int n,
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

static void g3_print_plan(const g3_topo_t *t, const g3_topo_plan_t *p, int summary)
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
            g3_format_ranks(members, n, rbuf, sizeof(rbuf));
            g3_format_hosts(t, p, members, n, tmp, hbuf, sizeof(hbuf));
            if (a == G3_TOPO_TP)
                printf("  tp group pp=%d dp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_PP][w], p->coord[G3_TOPO_DP][w], rbuf, hbuf,
                       g3_level_name(t, level, lv, sizeof(lv)));
            else if (a == G3_TOPO_PP)
                printf("  pp group tp=%d dp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_TP][w], p->coord[G3_TOPO_DP][w], rbuf, hbuf,
                       g3_level_name(t, level, lv, sizeof(lv)));
            else
                printf("  dp group tp=%d pp=%d: ranks %s; hosts %s; %s\n",
                       p->coord[G3_TOPO_TP][w], p->coord[G3_TOPO_PP][w], rbuf, hbuf,
                       g3_level_name(t, level, lv, sizeof(lv)));
        }
        if (summary) {
            printf("  %s: %d groups of %d;", g3_topo_axis_name((g3_topo_axis_t)a), ngroups, n);
            for (int l = 0; l <= t->levels + 1; l++)
                if (hist[l])
                    printf(" %d within %s;", hist[l], g3_level_name(t, l, lv, sizeof(lv)));
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
            g3_format_hosts(t, p, members, p->pp, tmp, hbuf, sizeof(hbuf));
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

static void g3_print_traffic(const g3_topo_t *t, g3_topo_plan_t *const plans[3],
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
        printf("  %-38s %15s %15s %15s\n", label, g3_bytes(tr[0].bytes[a], b[0], 32),
               g3_bytes(tr[1].bytes[a], b[1], 32), g3_bytes(tr[2].bytes[a], b[2], 32));
    }
    printf("  %-38s %15s %15s %15s\n", "all crossing leaf switches", g3_bytes(sum[0], b[0], 32),
           g3_bytes(sum[1], b[1], 32), g3_bytes(sum[2], b[2], 32));
    printf("  %-38s %15s %15s %15s\n", "all between nodes", g3_bytes(net[0], b[0], 32),
           g3_bytes(net[1], b[1], 32), g3_bytes(net[2], b[2], 32));
    printf("  %-38s %8d / %4.1f %8d / %4.1f %8d / %4.1f\n", "leaf switches per replica max / mean",
           tr[0].replica_leaves_max, tr[0].replica_leaves_mean, tr[1].replica_leaves_max,
           tr[1].replica_leaves_mean, tr[2].replica_leaves_max, tr[2].replica_leaves_mean);
    if (sum[1] > 0)
        printf(
            "  this plan / naive order: %.2fx the leaf-crossing bytes, %.2fx the pipeline ones (on the critical path)\n",
            sum[0] / sum[1],
            tr[1].bytes[G3_TOPO_PP] > 0 ? tr[0].bytes[G3_TOPO_PP] / tr[1].bytes[G3_TOPO_PP] : 1.0);
}

int g3_cmd_topo(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_comm_world_t *world = NULL;
    g3_topo_t *topo = NULL;
    g3_topo_plan_t *plans[3] = { NULL, NULL, NULL };
    g3_topo_model_t model;
    g3_topo_alloc_t alloc;
    g3_job_t job;
    int *nodes = NULL, rc = G3_EXIT_FAILURE;
    int tp, pp, rpn_flag;
    const char *tfile;
    char why[512], conf_buf[1024];
    g3_status_t st;
    int in_alloc = 0;   /* one process inside a Slurm allocation (no srun) */

    memset(&job, 0, sizeof(job));
    if (g3_opts_parse(&g3_topo_cmd, argc, argv, &o) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_opts_help_shown(o)) {
        g3_opts_free(o);
        return G3_EXIT_OK;
    }
    tp = (int)g3_opts_int(o, "tensor-model-parallel-size");
    pp = (int)g3_opts_int(o, "pipeline-model-parallel-size");
    tfile = g3_opts_str(o, "topology-file");
    g3_topo_model_default(&model);
    model.hidden = (double)g3_opts_int(o, "hidden-size");
    model.layers = (double)g3_opts_int(o, "num-layers");
    model.seq = (double)g3_opts_int(o, "seq-length");
    model.micro_batch = (double)g3_opts_int(o, "micro-batch-size");
    model.global_batch = (double)g3_opts_int(o, "global-batch-size");
    model.vocab = (double)g3_opts_int(o, "vocab-size");
    if (model.hidden < 1 || model.layers < 1 || model.seq < 1 || model.micro_batch < 1 ||
        model.global_batch < 1 || model.vocab < 1) {
        g3_error(
            "gpt3d topo: the traffic model's sizes (--hidden-size, --num-layers, --seq-length, --micro-batch-size, --global-batch-size, --vocab-size) must be positive");
        rc = G3_EXIT_USAGE;
        goto out;
    }
    if (g3_opts_is_set(o, "ranks-per-node") && g3_opts_int(o, "ranks-per-node") < 1) {
        g3_error("gpt3d topo: --ranks-per-node must be at least 1");
        rc = G3_EXIT_USAGE;
        goto out;
    }
    /* 0: not given */
    rpn_flag = g3_opts_is_set(o, "ranks-per-node") ? (int)g3_opts_int(o, "ranks-per-node") : 0;

    /* 1. the allocation */
    if (g3_opts_str(o, "nodelist")) {
        st = g3_job_from_nodelist(&job, g3_opts_str(o, "nodelist"), "--nodelist");
        if (st != G3_OK) {
            rc = G3_EXIT_USAGE;
            goto out;
        }
        job.alloc.rpn = rpn_flag ? rpn_flag : 1;
    } else {
        st = g3_comm_world_init(g3_opts_float(o, "distributed-timeout-minutes") * 60, &world);
        if (st != G3_OK) {
            rc = g3_status_exit_code(st);
            goto out;
        }
        if (g3_comm_world_proc(world)->size > 1) {
            st = g3_job_from_world(world, &job, why, sizeof(why));
            if (g3_comm_world_proc(world)->rank != 0 &&
                (st == G3_OK || st == G3_ERR_INVALID_ARG)) {
                rc = G3_EXIT_OK;   /* rank 0 alone plans, prints and reports a bad job */
                goto out;
            }
            if (st != G3_OK) {
                if (st == G3_ERR_INVALID_ARG)
                    g3_error("%s", why);
                rc = g3_status_exit_code(st);
                goto out;
            }
            if (rpn_flag && rpn_flag != job.alloc.rpn) {
                g3_error(
                    "gpt3d topo: --ranks-per-node %d, but the job runs %d ranks per node; drop the flag to plan for the running job",
                    rpn_flag, job.alloc.rpn);
                rc = G3_EXIT_USAGE;
                goto out;
            }
        } else {
            const char *nl = getenv("SLURM_JOB_NODELIST");
            if (nl == NULL)
                nl = getenv("SLURM_NODELIST");
            if (nl && *nl) {
                int tpn = g3_uniform_tasks_per_node(getenv("SLURM_TASKS_PER_NODE"));
                const char *ntpn = getenv("SLURM_NTASKS_PER_NODE");
                st = g3_job_from_nodelist(&job, nl, "SLURM_JOB_NODELIST");
                if (st != G3_OK)
                    goto out;
                in_alloc = 1;
                if (rpn_flag)
                    job.alloc.rpn = rpn_flag;
                else if (ntpn && atoi(ntpn) > 0)
                    job.alloc.rpn = atoi(ntpn);
                else if (tpn > 0)
                    job.alloc.rpn = tpn;
                else
                    job.alloc.rpn = 1;
            } else {
                char *one = (char *)g3_comm_world_proc(world)->hostname;
                st = g3_job_from_nodelist(&job, one, "this host (no Slurm allocation, no launcher)");
                if (st != G3_OK)
                    goto out;
                job.alloc.rpn = rpn_flag ? rpn_flag : 1;
            }
        }
    }

    /* 2. the switches: --topology-file; under srun, the tasks'
     * SLURM_TOPOLOGY_ADDR; one process in an allocation, the tree Slurm
     * reports (scontrol show topology, else the topology.conf beside
     * slurm.conf), or one flat switch with a word on how to get the tree. */
    why[0] = '\0';
    if (in_alloc && tfile == NULL) {
        char why_sc[256];
        st = g3_topo_from_scontrol(&topo, why_sc, sizeof(why_sc));
        if (st == G3_OK) {
            st = g3_topo_find_nodes(topo, &job.alloc, &nodes, why, sizeof(why));
            if (st != G3_OK) {
                g3_error("gpt3d topo: %s", why);
                rc = g3_status_exit_code(st);
                goto out;
            }
            goto have_topo;
        }
        if (st != G3_ERR_NOT_FOUND) {
            rc = g3_status_exit_code(st);
            goto out;
        }
        tfile = g3_topo_conf_path(conf_buf, sizeof(conf_buf));
        if (tfile == NULL)
            g3_warn(
                "gpt3d topo: one process in an allocation and no switch tree found (%s; no readable %s): planning as if all nodes were under one switch; run it under srun --mpi=pmix (each task reads SLURM_TOPOLOGY_ADDR) or give --topology-file",
                why_sc, conf_buf);
    }
    st = g3_par_alloc_topo(&job.alloc, tfile, job.what, &topo, &nodes, why, sizeof(why));
    if (st != G3_OK) {
        if (why[0])
            g3_error("gpt3d topo: %s", why);
        /* a malformed --topology-file is a usage error too */
        rc = tfile && st == G3_ERR_FORMAT ? G3_EXIT_USAGE : g3_status_exit_code(st);
        goto out;
    }

have_topo:
    /* 3. the plan and the two references */
    alloc = (g3_topo_alloc_t){ job.alloc.nnodes, nodes, job.alloc.rpn, job.alloc.rank_node,
                               job.alloc.rank_local };
    st = g3_topo_map(topo, &alloc, tp, pp, 0, &plans[0], why, sizeof(why));
    if (st == G3_ERR_INVALID_ARG) {
        g3_error("gpt3d topo: impossible layout: %s", why);
        rc = G3_EXIT_USAGE;
        goto out;
    }
    if (st == G3_OK)
        st = g3_topo_map_order(topo, &alloc, tp, pp, 0, G3_TOPO_ORDER_NAIVE, &plans[1], why,
                               sizeof(why));
    if (st == G3_OK)
        st = g3_topo_map_order(topo, &alloc, tp, pp, 0, G3_TOPO_ORDER_MEGATRON, &plans[2], why,
                               sizeof(why));
    if (st != G3_OK) {
        g3_error("gpt3d topo: mapping failed: %s %s", g3_status_string(st), why);
        goto out;
    }

    /* 4. print */
    {
        int used = 0;
        char hl[300];
        int *seen = calloc((size_t)topo->nswitches + 1, sizeof(int));
        if (seen) {
            for (int i = 0; i < job.alloc.nnodes; i++)
                if (!seen[topo->node_switch[nodes[i]]]++)
                    used++;
            free(seen);
        }
        g3_topo_hostlist_compress((const char *const *)job.alloc.names, job.alloc.nnodes, hl,
                                  sizeof(hl));
        printf("gpt3d topo: %d node%s x %d rank%s = %d ranks; TP %d x PP %d x DP %d (layout: %s)\n",
               job.alloc.nnodes, job.alloc.nnodes == 1 ? "" : "s", job.alloc.rpn,
               job.alloc.rpn == 1 ? "" : "s", plans[0]->world, tp, pp, plans[0]->dp, plans[0]->how);
        printf("allocation: %s from %s\n", hl, job.what);
        printf("topology: %s: %d switches, %d level%s, %d leaf switches in use\n", topo->source,
               topo->nswitches, topo->levels, topo->levels == 1 ? "" : "s", used);
        printf("search: %d candidate layouts scored, %ld slot visits for %d slots of TP ranks\n",
               plans[0]->candidates, plans[0]->steps, plans[0]->world / plans[0]->tp);
    }
    g3_print_plan(topo, plans[0], g3_opts_bool(o, "summary"));
    g3_print_traffic(topo, plans, &model);
    fflush(stdout);
    rc = G3_EXIT_OK;

out:
    for (int i = 0; i < 3; i++)
        g3_topo_plan_free(plans[i]);
    free(nodes);
    g3_topo_free(topo);
    g3_par_alloc_free(&job.alloc);
    g3_comm_world_free(world);
    g3_opts_free(o);
    return rc;
}
