/* src/topo: host lists, topology.conf, distances, and the placement rules of
 * the rank mapping on synthetic fat trees (420 nodes, uneven leaves, three
 * levels), impossible layouts, the group API, the traffic model. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "tap.h"
#include "topo/topo.h"

/* ---- helpers ------------------------------------------------------------------ */

static int expands_to(const char *expr, const char *want_joined)
{
    char **names = NULL, buf[4096] = "";
    int n = 0;
    if (g3_topo_hostlist_expand(expr, &names, &n) != G3_OK)
        return 0;
    for (int i = 0; i < n; i++) {
        strcat(buf, i ? " " : "");
        strcat(buf, names[i]);
    }
    g3_topo_names_free(names, n);
    if (strcmp(buf, want_joined) != 0)
        tap_diag("'%s' expanded to '%s', want '%s'", expr, buf, want_joined);
    return strcmp(buf, want_joined) == 0;
}

static int builtin_matches(const char *expr)
{
    char **a = NULL, **b = NULL;
    int na = 0, nb = 0, same;
    if (g3_topo_hostlist_expand(expr, &a, &na) != G3_OK ||
        g3_topo_hostlist_expand_builtin(expr, &b, &nb) != G3_OK)
        return 0;
    same = na == nb;
    for (int i = 0; same && i < na; i++)
        same = !strcmp(a[i], b[i]);
    g3_topo_names_free(a, na);
    g3_topo_names_free(b, nb);
    return same;
}

/* A topology.conf with leaves of the given sizes (nodes nNNNN numbered in
 * leaf order), grouped `per_pod` leaves under a pod switch when per_pod > 0,
 * all pods (or leaves) under one top switch. */
static char *fat_tree(const int *leaf_sizes, int nleaves, int per_pod, int *nnodes)
{
    size_t cap = 1 << 20, used = 0;
    char *t = malloc(cap);
    int node = 0, npods = per_pod > 0 ? (nleaves + per_pod - 1) / per_pod : 0;

    t[0] = '\0';
    used += (size_t)snprintf(t + used, cap - used, "# synthetic fat tree\n");
    for (int l = 0; l < nleaves; l++) {
        used += (size_t)snprintf(t + used, cap - used, "SwitchName=leaf%03d Nodes=n[%04d-%04d]  # %d nodes\n",
                                 l, node, node + leaf_sizes[l] - 1, leaf_sizes[l]);
        node += leaf_sizes[l];
    }
    for (int p = 0; p < npods; p++) {
        int last = (p + 1) * per_pod - 1 < nleaves - 1 ? (p + 1) * per_pod - 1 : nleaves - 1;
        used += (size_t)snprintf(t + used, cap - used, "SwitchName=pod%02d Switches=leaf[%03d-%03d]\n",
                                 p, p * per_pod, last);
    }
    if (npods)
        used += (size_t)snprintf(t + used, cap - used, "SwitchName=top Switches=pod[00-%02d]\n",
                                 npods - 1);
    else
        used += (size_t)snprintf(t + used, cap - used, "SwitchName=top Switches=leaf[000-%03d]\n",
                                 nleaves - 1);
    *nnodes = node;
    return t;
}

/* fat_tree with nleaves leaves of leaf_size nodes each. */
static char *uniform_fat_tree(int nleaves, int leaf_size, int per_pod, int *nnodes)
{
    int *sizes = malloc(sizeof(int) * (size_t)nleaves);
    for (int i = 0; i < nleaves; i++)
        sizes[i] = leaf_size;
    char *text = fat_tree(sizes, nleaves, per_pod, nnodes);
    free(sizes);
    return text;
}

typedef struct {
    g3_topo_t      *topo;
    int            *nodes;
    g3_topo_alloc_t alloc;
} world_t;

/* The allocation: the first n nodes of the topology, in name order. */
static void world_init(world_t *w, g3_topo_t *topo, int n, int rpn)
{
    w->topo = topo;
    w->nodes = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%04d", i);
        w->nodes[i] = g3_topo_node_find(topo, name);
    }
    w->alloc = (g3_topo_alloc_t){ n, w->nodes, rpn, NULL, NULL };
}

static int leaf_of(const world_t *w, const g3_topo_plan_t *p, int rank)
{
    return w->topo->node_switch[p->rank_topo[rank]];
}

/* The placement rules.  RET: 1 if all hold; reasons are printed. */
static int check_rules(const world_t *w, const g3_topo_plan_t *p, int max_leaves_allowed,
                       const char *what)
{
    int ok = 1, *seen = calloc((size_t)p->world, sizeof(int));
    int *leafseen = calloc((size_t)w->topo->nswitches + 1, sizeof(int));

    /* a bijection between ranks and coordinates */
    for (int d = 0; d < p->dp; d++)
        for (int s = 0; s < p->pp; s++)
            for (int t = 0; t < p->tp; t++) {
                int r = g3_topo_plan_rank(p, t, s, d), ct, cp, cd;
                if (r < 0 || r >= p->world || seen[r]++) {
                    tap_diag("%s: (%d,%d,%d) -> rank %d twice or invalid", what, t, s, d, r);
                    ok = 0;
                    continue;
                }
                g3_topo_plan_coords(p, r, &ct, &cp, &cd);
                if (ct != t || cp != s || cd != d) {
                    tap_diag("%s: coords of rank %d disagree", what, r);
                    ok = 0;
                }
            }
    for (int r = 0; r < p->world && ok; r++)
        if (seen[r] != 1) {
            tap_diag("%s: rank %d has no coordinates", what, r);
            ok = 0;
        }
    /* TP groups: one node, consecutive local ranks in tp order */
    for (int d = 0; d < p->dp && ok; d++)
        for (int s = 0; s < p->pp && ok; s++) {
            int r0 = g3_topo_plan_rank(p, 0, s, d);
            for (int t = 1; t < p->tp; t++) {
                int r = g3_topo_plan_rank(p, t, s, d);
                if (p->rank_node[r] != p->rank_node[r0] ||
                    p->rank_local[r] != p->rank_local[r0] + t) {
                    tap_diag("%s: tp group (pp %d, dp %d) leaves its node or its order", what, s, d);
                    ok = 0;
                    break;
                }
            }
        }
    /* replicas: each leaf, and each node, visited in one run of stages;
     * no more leaves than allowed */
    for (int d = 0; d < p->dp && ok; d++) {
        int leaves = 0;
        for (int s = 0; s < p->pp; s++) {
            int r = g3_topo_plan_rank(p, 0, s, d),
                prev = s ? g3_topo_plan_rank(p, 0, s - 1, d) : -1;
            int leaf = leaf_of(w, p, r);
            if (prev >= 0 && leaf == leaf_of(w, p, prev))
                continue;
            if (leafseen[leaf] == d + 1) {
                tap_diag("%s: replica %d comes back to leaf %s at stage %d", what, d,
                         w->topo->switch_names[leaf], s);
                ok = 0;
            }
            leafseen[leaf] = d + 1;
            leaves++;
        }
        for (int s = 1; s < p->pp && ok; s++) {
            int a = g3_topo_plan_rank(p, 0, s - 1, d), b = g3_topo_plan_rank(p, 0, s, d);
            if (p->rank_node[a] != p->rank_node[b])
                for (int u = s + 1; u < p->pp; u++)
                    if (p->rank_node[g3_topo_plan_rank(p, 0, u, d)] == p->rank_node[a]) {
                        tap_diag("%s: replica %d returns to a node at stage %d", what, d, u);
                        ok = 0;
                        break;
                    }
        }
        if (leaves > max_leaves_allowed) {
            tap_diag("%s: replica %d spans %d leaf switches, at most %d expected", what, d,
                     leaves, max_leaves_allowed);
            ok = 0;
        }
    }
    free(seen);
    free(leafseen);
    return ok;
}

static long pp_crossings(const world_t *w, const g3_topo_plan_t *p)
{
    long c = 0;
    for (int d = 0; d < p->dp; d++)
        for (int s = 1; s < p->pp; s++)
            c += leaf_of(w, p, g3_topo_plan_rank(p, 0, s, d)) !=
                 leaf_of(w, p, g3_topo_plan_rank(p, 0, s - 1, d));
    return c;
}

/* ---- tests ----------------------------------------------------------------------- */

static void test_hostlists(void)
{
    static const char *const same[] = { "n[0-3]", "n[01-10]", "a,b", "n[0-2,5],x[7-8]",
                                        "rack[1-2]-gpu[0-1]", "dgx[0000-0419]" };
    char **names = NULL, buf[256];
    int n = 0;

    tap_ok(expands_to("n[0-3]", "n0 n1 n2 n3"), "n[0-3]");
    tap_ok(expands_to("n[08-11]", "n08 n09 n10 n11"), "zero padding from the lower bound");
    tap_ok(expands_to("a,b c", "a b c"), "commas and blanks separate names");
    tap_ok(expands_to("n[0-2,5],x[7-8]", "n0 n1 n2 n5 x7 x8"), "several ranges and items");
    tap_ok(g3_topo_hostlist_expand_builtin("r[1-2]n[0-1]", &names, &n) == G3_OK && n == 4 &&
               !strcmp(names[1], "r1n1") && !strcmp(names[2], "r2n0"),
           "built-in: two bracket groups make a product");
    g3_topo_names_free(names, n);
    tap_ok(g3_topo_hostlist_expand_builtin("n[3-1]", &names, &n) == G3_ERR_INVALID_ARG,
           "built-in: a reversed range is an error");
    tap_ok(g3_topo_hostlist_expand_builtin("n[0-", &names, &n) == G3_ERR_INVALID_ARG,
           "built-in: an unclosed bracket is an error");
    tap_ok(g3_topo_hostlist_expand_builtin("n[a-b]", &names, &n) == G3_ERR_INVALID_ARG,
           "built-in: letters in a range are an error");
    tap_ok(g3_topo_hostlist_expand_builtin(" , ", &names, &n) == G3_ERR_INVALID_ARG,
           "built-in: an empty list is an error");
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        tap_ok(builtin_matches(same[i]), "%s and the built-in expander agree on '%s'",
#ifdef HAVE_SLURM
               "libslurm",
#else
               "(no libslurm)",
#endif
               same[i]);
    {
        const char *h[] = { "n00", "n01", "n02", "n05", "login", "n07", "x1", "x2" };
        g3_topo_hostlist_compress(h, 8, buf, sizeof(buf));
        tap_ok(!strcmp(buf, "n[00-02,05],login,n07,x[1-2]"), "compress keeps order: %s", buf);
        g3_topo_hostlist_compress(h, 8, buf, 12);
        tap_ok(strlen(buf) == 11 && !strcmp(buf + 8, "..."), "compress truncates with ...: %s", buf);
    }
}

static void test_topology_files(void)
{
    g3_topo_t *t = NULL;
    const char *ok_text =
        "# comment\n"
        "SwitchName=s0 Nodes=a[0-1] LinkSpeed=100\n"
        "switchname=s1 nodes=a[2-3]   # keys are case-insensitive\n"
        "SwitchName=s2 Nodes=b0\n"
        "SwitchName=p0 Switches=s[0-1]\n"
        "SwitchName=p1 Switches=s2\n"
        "SwitchName=top Switches=p[0-1]\n"
        "SwitchName=lonely Nodes=c0\n";
    int a0, a1, a2, b0, c0;

    tap_ok(g3_topo_parse(ok_text, "ok.conf", &t) == G3_OK, "a three-level topology.conf parses");
    if (t == NULL) {
        for (int i = 0; i < 9; i++)
            tap_skip("no topology");
        return;
    }
    tap_ok(t->nnodes == 6 && t->nswitches == 7 && t->levels == 3, "6 nodes, 7 switches, 3 levels");
    a0 = g3_topo_node_find(t, "a0");
    a1 = g3_topo_node_find(t, "a1");
    a2 = g3_topo_node_find(t, "a2");
    b0 = g3_topo_node_find(t, "b0");
    c0 = g3_topo_node_find(t, "c0");
    tap_ok(a0 >= 0 && g3_topo_node_find(t, "zz") == -1, "node lookup");
    tap_ok(g3_topo_node_distance(t, a0, a0) == 0 && g3_topo_node_distance(t, a0, a1) == 1 &&
               g3_topo_node_distance(t, a0, a2) == 2 && g3_topo_node_distance(t, a0, b0) == 3,
           "distances: node 0, leaf 1, pod 2, top 3");
    tap_ok(g3_topo_node_distance(t, a0, c0) == 4, "no common switch: levels + 1");
    g3_topo_free(t);
    t = NULL;

    tap_ok(g3_topo_parse("SwitchName=s0 Nodes=a\nSwitchName=s0 Nodes=b\n", "dup", &t) ==
               G3_ERR_FORMAT, "a switch defined twice is refused");
    tap_ok(g3_topo_parse("SwitchName=s0 Nodes=a\nSwitchName=top Switches=s[0-1]\n", "unk", &t) ==
               G3_ERR_FORMAT, "an unknown child switch is refused");
    tap_ok(g3_topo_parse("SwitchName=s0 Nodes=a[0-1]\nSwitchName=s1 Nodes=a1\n", "twice", &t) ==
               G3_ERR_FORMAT, "a node under two switches is refused");
    tap_ok(g3_topo_parse("SwitchName=s0 Nodes=a Switches=s1\nSwitchName=s1 Switches=s0\n", "cyc",
                         &t) == G3_ERR_FORMAT, "a cycle is refused");
    tap_ok(g3_topo_parse("BlockName=b1 Nodes=a\n", "blk", &t) == G3_ERR_FORMAT &&
               g3_topo_parse("Nodes=a\n", "noname", &t) == G3_ERR_FORMAT &&
               g3_topo_parse("# nothing\n", "empty", &t) == G3_ERR_FORMAT,
           "block format, a line without SwitchName= and an empty file are refused");
}

static void test_addrs(void)
{
    const char *names[] = { "n1", "n2", "n3", "n4", "x" };
    const char *addrs[] = { "top.leaf1.n1", "top.leaf1.n2", "top.leaf2.n3", "top.leaf2.n4", "x" };
    const char *pats[] = { "switch.switch.node", "switch.switch.node", "switch.switch.node",
                           "switch.switch.node", "node" };
    g3_topo_t *t = NULL;

    tap_ok(g3_topo_from_addrs(5, names, addrs, pats, &t) == G3_OK && t->nswitches == 4 &&
               t->levels == 2,
           "SLURM_TOPOLOGY_ADDR: leaves, a top switch and an (unknown) one");
    if (t) {
        tap_ok(g3_topo_node_distance(t, 0, 1) == 1 && g3_topo_node_distance(t, 0, 2) == 2 &&
                   g3_topo_node_distance(t, 0, 4) == 3,
               "distances from addresses");
        g3_topo_free(t);
    } else {
        tap_skip("no topology");
    }
}

static void test_mtnlg(void)
{
    int nnodes;
    char *text;
    g3_topo_t *t = NULL;
    world_t w;
    g3_topo_plan_t *p = NULL;
    g3_topo_model_t m;
    g3_topo_traffic_t tr;
    char why[512];
    clock_t c0;
    double secs;

    text = uniform_fat_tree(21, 20, 0, &nnodes);
    tap_ok(g3_topo_parse(text, "mtnlg", &t) == G3_OK && nnodes == 420, "420 nodes, 21 leaves of 20");
    free(text);
    c0 = clock();
    world_init(&w, t, 420, 8);
    tap_ok(g3_topo_map(t, &w.alloc, 8, 35, 12, &p, why, sizeof(why)) == G3_OK,
           "MT-NLG: TP 8 x PP 35 x DP 12 on 420 x 8 GPUs maps");
    g3_topo_model_default(&m);
    if (p) {
        g3_topo_plan_traffic(t, p, &m, &tr);
        secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
        tap_ok(secs < 1.0, "map + traffic of 3360 ranks take %.3f s of CPU (< 1 s)", secs);
        /* 35 nodes over leaves of 20: at most ceil(35/20) + 1 = 3 leaves */
        tap_ok(check_rules(&w, p, 3, "mtnlg"), "placement rules hold; replicas span <= 3 leaves");
        tap_ok(tr.bytes[G3_TOPO_TP] == 0 && tr.max_level[G3_TOPO_TP] == 0,
               "no tensor-parallel traffic leaves a node");
        tap_ok(pp_crossings(&w, p) <= 12 * 2, "at most 2 leaf changes per pipeline (%ld in all)",
               pp_crossings(&w, p));
        g3_topo_plan_free(p);
    } else {
        tap_diag("%s", why);
        for (int i = 0; i < 4; i++)
            tap_skip("no plan");
    }
    free(w.nodes);
    for (int n = 280; n <= 350; n += 70) {
        world_init(&w, t, n, 8);
        p = NULL;
        tap_ok(g3_topo_map(t, &w.alloc, 8, 35, 0, &p, why, sizeof(why)) == G3_OK &&
                   p->dp == n / 35 && check_rules(&w, p, 3, "mtnlg-small"),
               "MT-NLG on %d nodes: DP %d derived, rules hold", n, n / 35);
        g3_topo_plan_free(p);
        free(w.nodes);
    }
    g3_topo_free(t);
}

static void test_uneven_and_three_levels(void)
{
    static const int uneven[] = { 17, 23, 9, 31, 20, 20, 6, 34, 24, 16 };   /* 200 nodes */
    int nnodes;
    char *text;
    g3_topo_t *t = NULL;
    world_t w;
    g3_topo_plan_t *p = NULL, *naive = NULL;
    char why[512];

    text = fat_tree(uneven, 10, 0, &nnodes);
    tap_ok(g3_topo_parse(text, "uneven", &t) == G3_OK && nnodes == 200, "uneven leaves: 200 nodes");
    free(text);
    world_init(&w, t, 200, 8);
    /* TP 4: two slots per node; PP 20 = 10 nodes per replica */
    tap_ok(g3_topo_map(t, &w.alloc, 4, 20, 0, &p, why, sizeof(why)) == G3_OK && p->dp == 20,
           "uneven: TP 4 x PP 20 x DP 20 maps");
    if (p) {
        /* 10 nodes over leaves of at least 6: <= ceil(10 / 6) + 1 = 3 */
        tap_ok(check_rules(&w, p, 3, "uneven"), "uneven: placement rules hold");
        tap_ok(g3_topo_map_order(t, &w.alloc, 4, 20, 0, G3_TOPO_ORDER_NAIVE, &naive, why,
                                 sizeof(why)) == G3_OK &&
                   pp_crossings(&w, p) <= pp_crossings(&w, naive),
               "uneven: no more leaf changes in pipelines than the naive order (%ld vs %ld)",
               pp_crossings(&w, p), naive ? pp_crossings(&w, naive) : -1);
        g3_topo_plan_free(naive);
        g3_topo_plan_free(p);
    } else {
        tap_diag("%s", why);
        tap_skip("no plan");
        tap_skip("no plan");
    }
    free(w.nodes);
    g3_topo_free(t);

    /* three levels: 4 pods x 4 leaves x 8 nodes; PP 16 with TP 8 = 16 nodes:
     * two leaves of one pod per replica, never through the top switch */
    {
        text = uniform_fat_tree(16, 8, 4, &nnodes);
        t = NULL;
        tap_ok(g3_topo_parse(text, "3level", &t) == G3_OK && t->levels == 3,
               "three levels: leaves, pods, top");
        free(text);
        world_init(&w, t, 128, 8);
        p = NULL;
        tap_ok(g3_topo_map(t, &w.alloc, 8, 16, 0, &p, why, sizeof(why)) == G3_OK &&
                   check_rules(&w, p, 2, "3level"),
               "three levels: rules hold, 2 leaves per replica");
        if (p) {
            int worst = 0;
            for (int r = 0; r < p->world; r++) {
                int l = g3_topo_plan_group_level(t, p, r, G3_TOPO_PP);
                worst = l > worst ? l : worst;
            }
            tap_ok(worst == 2, "three levels: no pipeline goes above its pod (highest level %d)",
                   worst);
        } else {
            tap_skip("no plan");
        }
        g3_topo_plan_free(p);
        free(w.nodes);
        g3_topo_free(t);
    }
}

/* The plan of TP 8 x PP 35 over the topology text (freed; named name) and a world of nnodes
 * nodes of 8 GPUs on it.  OUT: *t, *w, *p (NULL when the map fails). */
static void map_pp35(char *text, const char *name, int nnodes, g3_topo_t **t, world_t *w,
                     g3_topo_plan_t **p)
{
    char why[512];

    *t = NULL;
    *p = NULL;
    g3_topo_parse(text, name, t);
    free(text);
    world_init(w, *t, nnodes, 8);
    g3_topo_map(*t, &w->alloc, 8, 35, 0, p, why, sizeof(why));
}

/* RET: 1 when plan p chose the layout how, changes leaf `crossings` times along the
 * pipelines and keeps the placement rules (a replica within 2 leaves). */
static int layout_is(const world_t *w, const g3_topo_plan_t *p, const char *how, long crossings,
                     const char *name)
{
    return p && !strcmp(p->how, how) && pp_crossings(w, p) == crossings &&
           check_rules(w, p, 2, name);
}

static void test_candidates_and_placement(void)
{
    int sizes[3], nnodes;
    g3_topo_t *t = NULL;
    world_t w;
    g3_topo_plan_t *p = NULL;
    char why[512];

    /* leaves of 40 nodes, PP 35: cutting every 35 nodes and keeping a whole
     * replica per leaf both change leaf 6 times; the tie goes to the chain,
     * whose worst replica spans 2 leaves, not 7 */
    map_pp35(uniform_fat_tree(7, 40, 0, &nnodes), "big-leaves", 280, &t, &w, &p);
    tap_ok(layout_is(&w, p, "chain", 6, "big-leaves"),
           "leaves of 40, PP 35: chain layout on a tie (%s, %ld leaf changes)",
           p ? p->how : "-", p ? pp_crossings(&w, p) : -1);
    g3_topo_plan_free(p);
    free(w.nodes);
    g3_topo_free(t);

    /* leaves of 5, 35 and 30 nodes, PP 35: the chain changes leaf twice;
     * keeping the 35 whole and joining 5 + 30 changes once */
    sizes[0] = 5;
    sizes[1] = 35;
    sizes[2] = 30;
    map_pp35(fat_tree(sizes, 3, 0, &nnodes), "5-35-30", 70, &t, &w, &p);
    tap_ok(layout_is(&w, p, "hierarchical", 1, "5-35-30"),
           "leaves of 5, 35, 30, PP 35: the hierarchical layout wins (%s, %ld leaf change)",
           p ? p->how : "-", p ? pp_crossings(&w, p) : -1);
    g3_topo_plan_free(p);
    free(w.nodes);

    /* interleaved names: n0000 on leaf 0, n0001 on leaf 1, ...: the naive
     * order crosses leaves at every stage, the plan never */
    {
        char conf[512];
        g3_topo_t *ti = NULL;
        g3_topo_plan_t *naive = NULL;
        g3_topo_model_t m;
        g3_topo_traffic_t a, b;
        snprintf(conf, sizeof(conf),
                 "SwitchName=l0 Nodes=n[0000,0002,0004,0006]\n"
                 "SwitchName=l1 Nodes=n[0001,0003,0005,0007]\n"
                 "SwitchName=top Switches=l[0-1]\n");
        g3_topo_parse(conf, "interleaved", &ti);
        world_init(&w, ti, 8, 4);
        p = NULL;
        tap_ok(g3_topo_map(ti, &w.alloc, 4, 4, 0, &p, why, sizeof(why)) == G3_OK &&
                   g3_topo_map_order(ti, &w.alloc, 4, 4, 0, G3_TOPO_ORDER_NAIVE, &naive, why,
                                     sizeof(why)) == G3_OK &&
                   pp_crossings(&w, p) == 0 && pp_crossings(&w, naive) == 6,
               "interleaved names: pipelines stay under one leaf (naive order: 6 changes)");
        if (p && naive) {
            g3_topo_model_default(&m);
            g3_topo_plan_traffic(ti, p, &m, &a);
            g3_topo_plan_traffic(ti, naive, &m, &b);
            tap_ok(a.bytes[G3_TOPO_PP] == 0 && b.bytes[G3_TOPO_PP] > 0,
                   "interleaved names: the plan's pipeline bytes cross no leaf switch");
        } else {
            tap_skip("no plan");
        }
        g3_topo_plan_free(naive);
        g3_topo_plan_free(p);
        free(w.nodes);
        g3_topo_free(ti);
    }

    /* a cyclic launcher placement (rank w on node w % nnodes): TP groups
     * still stay inside a node */
    {
        int rn[64], rl[64];
        world_init(&w, t, 8, 8);
        for (int r = 0; r < 64; r++) {
            rn[r] = r % 8;
            rl[r] = r / 8;
        }
        w.alloc.rank_node = rn;
        w.alloc.rank_local = rl;
        p = NULL;
        tap_ok(g3_topo_map(t, &w.alloc, 4, 4, 0, &p, why, sizeof(why)) == G3_OK &&
                   check_rules(&w, p, 2, "cyclic"),
               "cyclic rank placement: rules hold on the real placement");
        if (p) {
            int members[8], n, ok = 1;
            n = g3_topo_plan_group(p, 9, G3_TOPO_TP, members);
            for (int i = 0; i < n; i++)
                ok &= p->rank_node[members[i]] == p->rank_node[9];
            n = g3_topo_plan_group(p, 9, G3_TOPO_DP, members);
            for (int i = 0; i < n; i++)
                ok &= p->coord[G3_TOPO_DP][members[i]] == i &&
                      p->coord[G3_TOPO_PP][members[i]] == p->coord[G3_TOPO_PP][9];
            tap_ok(ok && n == 4, "group API: members in coordinate order, TP on rank 9's node");
            {
                rn[1] = 0;   /* rank 1 takes rank 0's seat: node 0, local rank 0 */
                rl[1] = 0;
                g3_topo_plan_free(p);
                p = NULL;
                tap_ok(g3_topo_map(t, &w.alloc, 4, 4, 0, &p, why, sizeof(why)) ==
                           G3_ERR_INVALID_ARG && strstr(why, "exactly 8 ranks"),
                       "a placement with two ranks in one seat is refused: %s", why);
            }
        } else {
            tap_skip("no plan");
            tap_skip("no plan");
        }
        g3_topo_plan_free(p);
        free(w.nodes);
    }
    g3_topo_free(t);
}

static void test_impossible(void)
{
    const char *names[] = { "a", "b", "c", "d" };
    g3_topo_t *t = NULL;
    int nodes[4] = { 0, 1, 2, 3 };
    g3_topo_alloc_t al = { 4, nodes, 8, NULL, NULL };
    g3_topo_plan_t *p = NULL;
    char why[512];

    g3_topo_flat(4, names, &t);
    tap_ok(g3_topo_map(t, &al, 16, 1, 0, &p, why, sizeof(why)) == G3_ERR_INVALID_ARG &&
               strstr(why, "TP 16 does not fit in the 8 ranks of a node") &&
               strstr(why, "1, 2, 4 or 8"),
           "TP larger than a node: %s", why);
    tap_ok(g3_topo_map(t, &al, 3, 1, 0, &p, why, sizeof(why)) == G3_ERR_INVALID_ARG &&
               strstr(why, "does not divide"), "TP not dividing a node: %s", why);
    tap_ok(g3_topo_map(t, &al, 8, 3, 0, &p, why, sizeof(why)) == G3_ERR_INVALID_ARG &&
               strstr(why, "PP can be 1, 2 or 4"), "world not a multiple of TP x PP: %s", why);
    tap_ok(g3_topo_map(t, &al, 8, 2, 3, &p, why, sizeof(why)) == G3_ERR_INVALID_ARG &&
               strstr(why, "DP must be 2"), "DP given and wrong: %s", why);
    tap_ok(g3_topo_map(t, &al, 0, 1, 0, &p, why, sizeof(why)) == G3_ERR_INVALID_ARG,
           "TP 0 is refused");
    tap_ok(p == NULL, "no plan comes out of a refused layout");
    g3_topo_free(t);
}

static void test_traffic_model(void)
{
    const char *names[] = { "a", "b" };
    const char *addrs[] = { "s0.a", "s1.b" };
    const char *pats[] = { "switch.node", "switch.node" };
    g3_topo_t *t = NULL, *flat = NULL;
    int nodes[2] = { 0, 1 };
    g3_topo_alloc_t al = { 2, nodes, 1, NULL, NULL };
    g3_topo_plan_t *p = NULL;
    g3_topo_model_t m = { 8, 2, 16, 2, 8, 100, 2, 4 };   /* h, L, s, b, B, V, act, grad */
    g3_topo_traffic_t tr;
    char why[256];

    /* PP 2 over two leaves: micro-batches = 8 / 2 = 4; per boundary and
     * micro-batch 2 * (b s h) * 2 bytes = 2 * 256 * 2 = 1024; 4096 in all */
    g3_topo_from_addrs(2, names, addrs, pats, &t);
    g3_topo_map(t, &al, 1, 2, 0, &p, why, sizeof(why));
    g3_topo_plan_traffic(t, p, &m, &tr);
    tap_ok(tr.bytes[G3_TOPO_PP] == 4096 && tr.bytes[G3_TOPO_DP] == 0 &&
               tr.total[G3_TOPO_PP] == 4096,
           "pipeline bytes by hand: 4096 (got %.0f)", tr.bytes[G3_TOPO_PP]);
    g3_topo_plan_free(p);
    /* DP 2: params 12 L h^2 + (V + s) h = 1536 + 928 = 2464 fp32 gradients,
     * ring share 2 (DP - 1) / DP = 1, two links: 2 * 2464 * 4 = 19712 */
    p = NULL;
    g3_topo_map(t, &al, 1, 1, 0, &p, why, sizeof(why));
    g3_topo_plan_traffic(t, p, &m, &tr);
    tap_ok(tr.bytes[G3_TOPO_DP] == 19712, "data-parallel bytes by hand: 19712 (got %.0f)",
           tr.bytes[G3_TOPO_DP]);
    g3_topo_plan_free(p);
    g3_topo_flat(2, names, &flat);
    p = NULL;
    g3_topo_map(flat, &al, 1, 1, 0, &p, why, sizeof(why));
    g3_topo_plan_traffic(flat, p, &m, &tr);
    tap_ok(tr.bytes[G3_TOPO_DP] == 0 && tr.total[G3_TOPO_DP] == 19712,
           "one switch: nothing crosses a leaf, all of it goes between nodes");
    g3_topo_plan_free(p);
    g3_topo_free(flat);
    g3_topo_free(t);
}

int main(void)
{
    test_hostlists();
    test_topology_files();
    test_addrs();
    test_mtnlg();
    test_uneven_and_three_levels();
    test_candidates_and_placement();
    test_impossible();
    test_traffic_model();
    return tap_exit();
}
