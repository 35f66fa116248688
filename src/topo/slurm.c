/* gpt3d topo: what Slurm says about the allocation of one process that runs inside it without
 * a launcher (a batch script or salloc, no srun: no task has SLURM_TOPOLOGY_ADDR): its nodes
 * and ranks per node from the job's environment, and the switch tree from scontrol or the
 * topology.conf beside slurm.conf (topo.h, "Slurm"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "topo/topo.h"

/* SLURM_TASKS_PER_NODE looks like "8(x4),4": RET the count if uniform, else -1. */
static int g3_topo_uniform_tasks_per_node(const char *s)
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

g3_status_t g3_topo_slurm_alloc(char ***names_p, int *n_p, int *rpn_p)
{
    const char *nl = getenv("SLURM_JOB_NODELIST"), *ntpn = getenv("SLURM_NTASKS_PER_NODE");
    int tpn;
    g3_status_t st;

    if (nl == NULL)
        nl = getenv("SLURM_NODELIST");
    if (nl == NULL || *nl == '\0')
        return G3_ERR_NOT_FOUND;
    st = g3_topo_hostlist_expand(nl, names_p, n_p);
    if (st != G3_OK)
        return st;
    tpn = g3_topo_uniform_tasks_per_node(getenv("SLURM_TASKS_PER_NODE"));
    if (ntpn && atoi(ntpn) > 0)
        *rpn_p = atoi(ntpn);
    else if (tpn > 0)
        *rpn_p = tpn;
    else
        *rpn_p = 1;
    return G3_OK;
}

/* "scontrol show topology" prints topology.conf's keys plus Level=, and an upper switch lists
 * every node below it in Nodes= as well: keep SwitchName=, Switches=, LinkSpeed= and the
 * Nodes= of leaf switches only. */
g3_status_t g3_topo_from_scontrol(g3_topo_t **topo_p, char *why, size_t why_len)
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
                g3_error("out of memory reading scontrol show topology");
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


g3_status_t g3_topo_nodes_find(const g3_topo_t *topo, char *const *names, int n, int **nodes_p,
                               char *why, size_t why_len)
{
    int *nodes = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (nodes == NULL) {
        g3_error("out of memory finding %d nodes in the switch tree", n);
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        nodes[i] = g3_topo_node_find(topo, names[i]);
        if (nodes[i] < 0) {
            snprintf(
                why, why_len,
                "node %s of the allocation is not in %s; give the cluster's topology.conf with --topology-file",
                names[i], topo->source);
            free(nodes);
            return G3_ERR_INVALID_ARG;
        }
    }
    *nodes_p = nodes;
    return G3_OK;
}


const char *g3_topo_slurm_conf_path(char *buf, size_t len)
{
    const char *conf = getenv("SLURM_CONF"), *slash;
    if (conf && *conf && (slash = strrchr(conf, '/')) != NULL)
        snprintf(buf, len, "%.*s/topology.conf", (int)(slash - conf), conf);
    else
        snprintf(buf, len, "/etc/slurm/topology.conf");
    return access(buf, R_OK) == 0 ? buf : NULL;
}
