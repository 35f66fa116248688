/* gpt3d topo: mapping world ranks to (tp, pp, dp), and the traffic model.
 *
 * A node of rpn ranks holds rpn / TP slots; a slot is one TP group (TP
 * consecutive local ranks).  The allocated nodes are put in switch order: a
 * depth-first walk of the tree in which a switch's children (switches and
 * nodes) come in the order of their first node in the allocation.  The
 * slots in that order are cut into DP replicas of PP consecutive slots, the
 * p-th slot of replica d becoming stage p of replica d.  Two candidates:
 *   chain         cut the whole sequence every PP slots;
 *   hierarchical  cut inside each switch's subtree first (a leaf with room
 *                 for k whole replicas keeps them), passing only the
 *                 leftover slots up to be joined with the neighbours'.
 * The candidate with fewer stage boundaries between different leaf
 * switches wins; ties go to the one whose worst replica spans fewer leaf
 * switches, then to chain.  Either way a replica visits each of its leaf
 * switches in one run and each of its nodes in one run. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

static const char *const g3_axis_names[] = { [G3_TOPO_TP] = "tp", [G3_TOPO_PP] = "pp",
                                             [G3_TOPO_DP] = "dp" };
_Static_assert(sizeof(g3_axis_names) / sizeof(g3_axis_names[0]) == G3_TOPO_AXES,
               "one name per axis");

const char *g3_topo_axis_name(g3_topo_axis_t axis)
{
    return (unsigned)axis < G3_TOPO_AXES ? g3_axis_names[axis] : "?";
}

/* "1, 2, 4 or 8": the divisors of n, at most a dozen shown. */
static void g3_topo_divisors(int n, char *buf, size_t len)
{
    int d[64], k = 0;
    size_t used = 0;

    for (int i = 1; i <= n && k < 64; i++)
        if (n % i == 0)
            d[k++] = i;
    buf[0] = '\0';
    for (int i = 0; i < k && used + 16 < len; i++) {
        if (i == 12 && k > 13) {
            used += (size_t)snprintf(buf + used, len - used, ", ...");
            i = k - 1;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%d",
                                 i == 0 ? "" : i == k - 1 ? " or " : ", ", d[i]);
    }
}

/* ---- plan storage --------------------------------------------------------------- */

static g3_topo_plan_t *g3_topo_plan_new(int world, int tp, int pp, int dp, int rpn, int nnodes)
{
    g3_topo_plan_t *p = calloc(1, sizeof(*p));
    int ok;

    if (p == NULL)
        return NULL;
    p->world = world;
    p->tp = tp;
    p->pp = pp;
    p->dp = dp;
    p->rpn = rpn;
    p->nnodes = nnodes;
    p->rank_node = malloc((size_t)world * sizeof(int));
    p->rank_topo = malloc((size_t)world * sizeof(int));
    p->rank_local = malloc((size_t)world * sizeof(int));
    p->rank_at = malloc((size_t)world * sizeof(int));
    ok = p->rank_node && p->rank_topo && p->rank_local && p->rank_at;
    for (int a = 0; a < G3_TOPO_AXES; a++) {
        p->coord[a] = malloc((size_t)world * sizeof(int));
        ok = ok && p->coord[a];
    }
    if (!ok) {
        g3_topo_plan_free(p);
        return NULL;
    }
    return p;
}

void g3_topo_plan_free(g3_topo_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->rank_node);
    free(p->rank_topo);
    free(p->rank_local);
    free(p->rank_at);
    for (int a = 0; a < G3_TOPO_AXES; a++)
        free(p->coord[a]);
    free(p);
}

static void g3_topo_plan_set(g3_topo_plan_t *p, int w, int tp, int pp, int dp)
{
    p->coord[G3_TOPO_TP][w] = tp;
    p->coord[G3_TOPO_PP][w] = pp;
    p->coord[G3_TOPO_DP][w] = dp;
    p->rank_at[((size_t)dp * (size_t)p->pp + (size_t)pp) * (size_t)p->tp + (size_t)tp] = w;
}

/* ---- checks shared by every layout -------------------------------------------- */

static g3_status_t g3_topo_map_check(const g3_topo_t *topo, const g3_topo_alloc_t *al, int tp,
                                     int pp, int *dp_p, int **node_local_p, char *why,
                                     size_t why_len)
{
    int rpn = al->ranks_per_node, world, dp = *dp_p;
    int *nl;
    char divs[160];

    if (why_len)
        why[0] = '\0';
    if (al->nnodes < 1 || rpn < 1) {
        snprintf(why, why_len, "the allocation is empty (%d nodes, %d ranks per node)",
                 al->nnodes, rpn);
        return G3_ERR_INVALID_ARG;
    }
    if ((long)al->nnodes * rpn > INT_MAX / 4) {
        snprintf(why, why_len, "%d nodes x %d ranks per node is too many ranks", al->nnodes,
                 rpn);
        return G3_ERR_INVALID_ARG;
    }
    world = al->nnodes * rpn;
    if (tp < 1 || pp < 1) {
        snprintf(why, why_len,
                 "tensor and pipeline parallel sizes must be at least 1 (got TP %d, PP %d)", tp,
                 pp);
        return G3_ERR_INVALID_ARG;
    }
    for (int i = 0; i < al->nnodes; i++)
        if (al->nodes[i] < 0 || al->nodes[i] >= topo->nnodes) {
            snprintf(why, why_len, "allocated node %d is not in the topology", i);
            return G3_ERR_INVALID_ARG;
        }
    if (tp > rpn || rpn % tp != 0) {
        g3_topo_divisors(rpn, divs, sizeof(divs));
        snprintf(
            why, why_len,
            "TP %d does not %s the %d ranks of a node: tensor-parallel groups must stay inside one node, so TP can be %s",
            tp, tp > rpn ? "fit in" : "divide", rpn, divs);
        return G3_ERR_INVALID_ARG;
    }
    if (world % (tp * pp) != 0) {
        g3_topo_divisors(world / tp, divs, sizeof(divs));
        snprintf(
            why, why_len,
            "the job's %d ranks (%d nodes x %d) are not a multiple of TP x PP = %d x %d; with TP %d, PP can be %s",
            world, al->nnodes, rpn, tp, pp, tp, divs);
        return G3_ERR_INVALID_ARG;
    }
    if (dp > 0 && (long)tp * pp * dp != world) {
        snprintf(
            why, why_len,
            "TP x PP x DP = %d x %d x %d = %ld ranks, but the job has %d (%d nodes x %d); with TP %d and PP %d, DP must be %d",
            tp, pp, dp, (long)tp * pp * dp, world, al->nnodes, rpn, tp, pp, world / (tp * pp));
        return G3_ERR_INVALID_ARG;
    }
    *dp_p = world / (tp * pp);

    /* node_local[node * rpn + local] = world rank */
    nl = malloc((size_t)world * sizeof(int));
    if (nl == NULL)
        return G3_ERR_NO_MEMORY;
    for (int i = 0; i < world; i++)
        nl[i] = -1;
    for (int w = 0; w < world; w++) {
        int node = al->rank_node ? al->rank_node[w] : w / rpn;
        int local = al->rank_local ? al->rank_local[w] : w % rpn;
        if (node < 0 || node >= al->nnodes || local < 0 || local >= rpn ||
            nl[node * rpn + local] >= 0) {
            snprintf(
                why, why_len,
                "rank %d is placed on node %d as local rank %d, which is outside the allocation or taken: every node must run exactly %d ranks with local ranks 0..%d",
                w, node, local, rpn, rpn - 1);
            free(nl);
            return G3_ERR_INVALID_ARG;
        }
        nl[node * rpn + local] = w;
    }
    *node_local_p = nl;
    return G3_OK;
}

static void g3_topo_plan_fill_places(g3_topo_plan_t *p, const g3_topo_alloc_t *al,
                                     const int *node_local)
{
    for (int node = 0; node < al->nnodes; node++)
        for (int l = 0; l < p->rpn; l++) {
            int w = node_local[node * p->rpn + l];
            p->rank_node[w] = node;
            p->rank_local[w] = l;
            p->rank_topo[w] = al->nodes[node];
        }
}

/* ---- switch order ------------------------------------------------------------------- */

typedef struct {
    int key;      /* first allocation index below it */
    int is_node;
    int id;       /* allocation node index or switch index */
} g3_child_t;

static int g3_topo_child_cmp(const void *a, const void *b)
{
    const g3_child_t *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : x->is_node - y->is_node;
}

typedef struct {
    const g3_topo_t *topo;
    int         *first;     /* (nswitches) first allocation index below, INT_MAX if none */
    g3_child_t  *kids;      /* children grouped by parent, sorted */
    int         *kid_start; /* (nswitches + 2) CSR offsets; slot nswitches = roots */
    int         *order;     /* (nnodes) allocation indices in switch order */
    int          norder;
} g3_order_t;

static void g3_topo_order_walk(g3_order_t *o, int group)
{
    for (int k = o->kid_start[group]; k < o->kid_start[group + 1]; k++) {
        if (o->kids[k].is_node)
            o->order[o->norder++] = o->kids[k].id;
        else
            g3_topo_order_walk(o, o->kids[k].id);
    }
}

static void g3_topo_order_free(g3_order_t *o)
{
    free(o->first);
    free(o->kids);
    free(o->kid_start);
    free(o->order);
}

static g3_status_t g3_topo_order_build(g3_order_t *o, const g3_topo_t *t, const g3_topo_alloc_t *al)
{
    int ns = t->nswitches, nk = 0, *fill;

    memset(o, 0, sizeof(*o));
    o->topo = t;
    o->first = malloc((size_t)(ns + 1) * sizeof(int));
    o->kids = malloc((size_t)(ns + al->nnodes + 1) * sizeof(g3_child_t));
    o->kid_start = calloc((size_t)ns + 2, sizeof(int));
    o->order = malloc((size_t)al->nnodes * sizeof(int));
    fill = calloc((size_t)ns + 2, sizeof(int));
    if (!o->first || !o->kids || !o->kid_start || !o->order || !fill) {
        free(fill);
        g3_topo_order_free(o);
        return G3_ERR_NO_MEMORY;
    }
    for (int s = 0; s < ns; s++)
        o->first[s] = INT_MAX;
    for (int i = 0; i < al->nnodes; i++)
        for (int s = t->node_switch[al->nodes[i]]; s >= 0; s = t->switch_parent[s])
            if (o->first[s] > i)
                o->first[s] = i;
    /* group children by parent (ns = the roots), counting sort */
    for (int i = 0; i < al->nnodes; i++) {
        int par = t->node_switch[al->nodes[i]];
        o->kid_start[(par >= 0 ? par : ns) + 1]++;
    }
    for (int s = 0; s < ns; s++)
        if (o->first[s] != INT_MAX) {
            int par = t->switch_parent[s];
            o->kid_start[(par >= 0 ? par : ns) + 1]++;
        }
    for (int g = 0; g <= ns; g++)
        o->kid_start[g + 1] += o->kid_start[g];
    for (int i = 0; i < al->nnodes; i++) {
        int par = t->node_switch[al->nodes[i]], g = par >= 0 ? par : ns;
        o->kids[o->kid_start[g] + fill[g]++] = (g3_child_t){ i, 1, i };
        nk++;
    }
    for (int s = 0; s < ns; s++)
        if (o->first[s] != INT_MAX) {
            int par = t->switch_parent[s], g = par >= 0 ? par : ns;
            o->kids[o->kid_start[g] + fill[g]++] = (g3_child_t){ o->first[s], 0, s };
            nk++;
        }
    for (int g = 0; g <= ns; g++)
        qsort(o->kids + o->kid_start[g], (size_t)(o->kid_start[g + 1] - o->kid_start[g]),
              sizeof(g3_child_t), g3_topo_child_cmp);
    free(fill);
    g3_topo_order_walk(o, ns);
    return G3_OK;
}

/* ---- the two candidates -------------------------------------------------------------- */

/* Candidate "hierarchical": pack(group) appends finished replicas to out
 * (slot indices, PP at a time) and leaves its leftover slots in *left. */
typedef struct {
    g3_order_t *o;
    int         S, PP;       /* slots per node, stages */
    int        *pos_of;      /* (nnodes) position of an allocation node in switch order */
    int        *out;         /* replicas, PP slots each, in creation order */
    int         nout;
    int        *buf;         /* scratch for leftovers */
    long        steps;       /* slots visited (g3_topo_plan_t.steps) */
} g3_pack_t;

/* Leftover slots of the subtree are written to left[0..*nleft). */
static void g3_topo_pack(g3_pack_t *pk, int group, int *left, int *nleft)
{
    g3_order_t *o = pk->o;
    int n = 0;

    for (int k = o->kid_start[group]; k < o->kid_start[group + 1]; k++) {
        if (o->kids[k].is_node) {
            int base = pk->pos_of[o->kids[k].id] * pk->S;
            for (int j = 0; j < pk->S; j++)
                left[n++] = base + j;
            pk->steps += pk->S;
        } else {
            int m = 0;
            g3_topo_pack(pk, o->kids[k].id, left + n, &m);
            n += m;
        }
    }
    /* whole replicas from the front; the tail goes up to the parent */
    {
        int whole = n / pk->PP, rest = n - whole * pk->PP;
        pk->steps += n;   /* each slot of the subtree is moved once here */
        memcpy(pk->out + pk->nout, left, (size_t)whole * (size_t)pk->PP * sizeof(int));
        pk->nout += whole * pk->PP;
        memmove(left, left + whole * pk->PP, (size_t)rest * sizeof(int));
        *nleft = rest;
    }
}

typedef struct {
    long cross;        /* stage boundaries between different leaf switches */
    int  max_leaves;   /* most leaves a replica spans */
} g3_score_t;

static int g3_topo_slot_leaf(const g3_topo_t *t, const g3_topo_alloc_t *al, const int *order, int S,
                             int slot)
{
    return t->node_switch[al->nodes[order[slot / S]]];
}

static g3_score_t g3_topo_score(const g3_topo_t *t, const g3_topo_alloc_t *al, const int *order,
                                int S, const int *rep, int PP, int DP, int *seen, long *steps)
{
    g3_score_t sc = { 0, 0 };

    *steps += (long)DP * PP;

    for (int d = 0; d < DP; d++) {
        const int *r = rep + (size_t)d * (size_t)PP;
        int leaves = 0;
        for (int p = 0; p < PP; p++) {
            int leaf = g3_topo_slot_leaf(t, al, order, S, r[p]);
            if (p > 0 && leaf != g3_topo_slot_leaf(t, al, order, S, r[p - 1]))
                sc.cross++;
            if (seen[leaf] != d + 1) {
                seen[leaf] = d + 1;
                leaves++;
            }
        }
        if (leaves > sc.max_leaves)
            sc.max_leaves = leaves;
    }
    return sc;
}

g3_status_t g3_topo_map(const g3_topo_t *topo, const g3_topo_alloc_t *al, int tp, int pp,
                        int dp, g3_topo_plan_t **plan_p, char *why, size_t why_len)
{
    g3_topo_plan_t *plan;
    g3_order_t o;
    g3_pack_t pk;
    int *node_local = NULL, *chain = NULL, *seen = NULL, *left = NULL;
    const int *rep;
    int S, nslots, world;
    g3_score_t sa, sb;
    g3_status_t st;

    st = g3_topo_map_check(topo, al, tp, pp, &dp, &node_local, why, why_len);
    if (st != G3_OK)
        return st;
    world = al->nnodes * al->ranks_per_node;
    S = al->ranks_per_node / tp;
    nslots = al->nnodes * S;
    st = g3_topo_order_build(&o, topo, al);
    if (st != G3_OK) {
        free(node_local);
        return st;
    }
    memset(&pk, 0, sizeof(pk));
    pk.o = &o;
    pk.S = S;
    pk.PP = pp;
    pk.pos_of = malloc((size_t)al->nnodes * sizeof(int));
    pk.out = malloc((size_t)nslots * sizeof(int));
    chain = malloc((size_t)nslots * sizeof(int));
    left = malloc((size_t)nslots * sizeof(int));
    seen = calloc((size_t)topo->nswitches + 1, sizeof(int));
    plan = g3_topo_plan_new(world, tp, pp, dp, al->ranks_per_node, al->nnodes);
    if (!pk.pos_of || !pk.out || !chain || !left || !seen || !plan) {
        st = G3_ERR_NO_MEMORY;
        goto out;
    }
    for (int k = 0; k < al->nnodes; k++)
        pk.pos_of[o.order[k]] = k;
    for (int s = 0; s < nslots; s++)
        chain[s] = s;
    {
        int nleft = 0;
        g3_topo_pack(&pk, topo->nswitches, left, &nleft);
        if (nleft != 0 || pk.nout != nslots) {
            snprintf(why, why_len, "internal error: hierarchical packing left %d slots", nleft);
            st = G3_ERR_INTERNAL;
            goto out;
        }
    }
    sa = g3_topo_score(topo, al, o.order, S, chain, pp, dp, seen, &pk.steps);
    memset(seen, 0, ((size_t)topo->nswitches + 1) * sizeof(int));
    sb = g3_topo_score(topo, al, o.order, S, pk.out, pp, dp, seen, &pk.steps);
    plan->candidates = 2;
    if (sb.cross < sa.cross || (sb.cross == sa.cross && sb.max_leaves < sa.max_leaves)) {
        rep = pk.out;
        snprintf(plan->how, sizeof(plan->how), "hierarchical");
    } else {
        rep = chain;
        snprintf(plan->how, sizeof(plan->how), "chain");
    }

    g3_topo_plan_fill_places(plan, al, node_local);
    for (int d = 0; d < dp; d++)
        for (int p = 0; p < pp; p++) {
            int slot = rep[(size_t)d * (size_t)pp + (size_t)p];
            int node = o.order[slot / S], j = slot % S;
            for (int t = 0; t < tp; t++)
                g3_topo_plan_set(plan, node_local[node * al->ranks_per_node + j * tp + t], t, p, d);
        }
    plan->steps = pk.steps + (long)world;
    *plan_p = plan;
    plan = NULL;
out:
    g3_topo_plan_free(plan);
    free(pk.pos_of);
    free(pk.out);
    free(chain);
    free(left);
    free(seen);
    free(node_local);
    g3_topo_order_free(&o);
    return st;
}

g3_status_t g3_topo_map_order(const g3_topo_t *topo, const g3_topo_alloc_t *al, int tp, int pp,
                              int dp, g3_topo_order_t order, g3_topo_plan_t **plan_p, char *why,
                              size_t why_len)
{
    g3_topo_plan_t *plan;
    int *node_local = NULL;
    g3_status_t st;

    st = g3_topo_map_check(topo, al, tp, pp, &dp, &node_local, why, why_len);
    if (st != G3_OK)
        return st;
    plan = g3_topo_plan_new(al->nnodes * al->ranks_per_node, tp, pp, dp, al->ranks_per_node,
                            al->nnodes);
    if (plan == NULL) {
        free(node_local);
        return G3_ERR_NO_MEMORY;
    }
    g3_topo_plan_fill_places(plan, al, node_local);
    for (int w = 0; w < plan->world; w++) {
        if (order == G3_TOPO_ORDER_MEGATRON)
            g3_topo_plan_set(plan, w, w % tp, w / (tp * dp), w / tp % dp);
        else
            g3_topo_plan_set(plan, w, w % tp, w / tp % pp, w / (tp * pp));
    }
    snprintf(plan->how, sizeof(plan->how), "%s",
             order == G3_TOPO_ORDER_MEGATRON ? "megatron" : "naive");
    plan->candidates = 1;
    plan->steps = plan->world;
    free(node_local);
    *plan_p = plan;
    return G3_OK;
}

/* ---- queries ------------------------------------------------------------------------ */

void g3_topo_plan_coords(const g3_topo_plan_t *p, int w, int *tp, int *pp, int *dp)
{
    *tp = p->coord[G3_TOPO_TP][w];
    *pp = p->coord[G3_TOPO_PP][w];
    *dp = p->coord[G3_TOPO_DP][w];
}

int g3_topo_plan_rank(const g3_topo_plan_t *p, int tp, int pp, int dp)
{
    if (tp < 0 || tp >= p->tp || pp < 0 || pp >= p->pp || dp < 0 || dp >= p->dp)
        return -1;
    return p->rank_at[((size_t)dp * (size_t)p->pp + (size_t)pp) * (size_t)p->tp + (size_t)tp];
}

int g3_topo_plan_axis_size(const g3_topo_plan_t *p, g3_topo_axis_t axis)
{
    return axis == G3_TOPO_TP ? p->tp : axis == G3_TOPO_PP ? p->pp : p->dp;
}

int g3_topo_plan_group(const g3_topo_plan_t *p, int w, g3_topo_axis_t axis, int *members)
{
    int c[G3_TOPO_AXES], n = g3_topo_plan_axis_size(p, axis);

    g3_topo_plan_coords(p, w, &c[G3_TOPO_TP], &c[G3_TOPO_PP], &c[G3_TOPO_DP]);
    for (int i = 0; i < n; i++) {
        c[axis] = i;
        members[i] = g3_topo_plan_rank(p, c[G3_TOPO_TP], c[G3_TOPO_PP], c[G3_TOPO_DP]);
    }
    return n;
}

/* ---- traffic ------------------------------------------------------------------------- */

void g3_topo_model_default(g3_topo_model_t *m)
{
    m->hidden = 20480;
    m->layers = 105;
    m->seq = 2048;
    m->micro_batch = 1;
    m->global_batch = 1920;
    m->vocab = 51200;
    m->act_bytes = 2;
    m->grad_bytes = 4;
}

double g3_topo_ring_allreduce_bytes(double bytes, int n)
{
    return n > 1 ? 2.0 * (n - 1) / n * bytes : 0.0;
}

int g3_topo_plan_group_level(const g3_topo_t *topo, const g3_topo_plan_t *p, int w,
                             g3_topo_axis_t axis)
{
    int c[G3_TOPO_AXES], n = g3_topo_plan_axis_size(p, axis), level = 0;

    g3_topo_plan_coords(p, w, &c[G3_TOPO_TP], &c[G3_TOPO_PP], &c[G3_TOPO_DP]);
    for (int i = 0; i < n && n > 1; i++) {
        int a, b, l;
        /* the ring link i -> i+1 (a pipeline has no wrap-around link) */
        if (axis == G3_TOPO_PP && i == n - 1)
            break;
        c[axis] = i;
        a = g3_topo_plan_rank(p, c[G3_TOPO_TP], c[G3_TOPO_PP], c[G3_TOPO_DP]);
        c[axis] = (i + 1) % n;
        b = g3_topo_plan_rank(p, c[G3_TOPO_TP], c[G3_TOPO_PP], c[G3_TOPO_DP]);
        l = g3_topo_node_distance(topo, p->rank_topo[a], p->rank_topo[b]);
        if (l > level)
            level = l;
    }
    return level;
}

void g3_topo_plan_traffic(const g3_topo_t *topo, const g3_topo_plan_t *p,
                          const g3_topo_model_t *m, g3_topo_traffic_t *t)
{
    double TP = p->tp, PP = p->pp, DP = p->dp;
    double micro = m->global_batch / (m->micro_batch * DP);      /* per iteration */
    double act = m->micro_batch * m->seq * m->hidden * m->act_bytes;   /* (b, s, h) */
    double params = 12.0 * m->layers * m->hidden * m->hidden + (m->vocab + m->seq) * m->hidden;
    double link[G3_TOPO_AXES];
    int *seen;

    memset(t, 0, sizeof(*t));
    /* bytes on one link of one group per iteration (see docs/topology.md):
     * TP: 4 all-reduces of (b, s, h) per layer and micro-batch, ring share 2(TP-1)/TP;
     * PP: activation forward + gradient backward per micro-batch, 1/TP per tp rank;
     * DP: one all-reduce of this rank's gradients, ring share 2(DP-1)/DP. */
    link[G3_TOPO_TP] = g3_topo_ring_allreduce_bytes(micro * (m->layers / PP) * 4.0 * act, p->tp);
    link[G3_TOPO_PP] = PP > 1 ? micro * 2.0 * act / TP : 0;
    link[G3_TOPO_DP] = g3_topo_ring_allreduce_bytes(params / (PP * TP) * m->grad_bytes, p->dp);

    for (int w = 0; w < p->world; w++) {
        int c[G3_TOPO_AXES];
        g3_topo_plan_coords(p, w, &c[G3_TOPO_TP], &c[G3_TOPO_PP], &c[G3_TOPO_DP]);
        for (int a = 0; a < G3_TOPO_AXES; a++) {
            int n = g3_topo_plan_axis_size(p, (g3_topo_axis_t)a), nc[G3_TOPO_AXES], peer, l;
            if (n < 2 || (a == G3_TOPO_PP && c[a] == n - 1))
                continue;
            memcpy(nc, c, sizeof(nc));
            nc[a] = (c[a] + 1) % n;
            peer = g3_topo_plan_rank(p, nc[G3_TOPO_TP], nc[G3_TOPO_PP], nc[G3_TOPO_DP]);
            l = g3_topo_node_distance(topo, p->rank_topo[w], p->rank_topo[peer]);
            if (l > t->max_level[a])
                t->max_level[a] = l;
            if (l >= 1)
                t->total[a] += link[a];
            if (topo->node_switch[p->rank_topo[w]] != topo->node_switch[p->rank_topo[peer]])
                t->bytes[a] += link[a];
        }
    }
    seen = calloc((size_t)topo->nswitches + 1, sizeof(int));
    if (seen) {
        double sum = 0;
        for (int d = 0; d < p->dp; d++) {
            int leaves = 0;
            for (int s = 0; s < p->pp; s++) {
                int leaf = topo->node_switch[p->rank_topo[g3_topo_plan_rank(p, 0, s, d)]];
                if (seen[leaf] != d + 1) {
                    seen[leaf] = d + 1;
                    leaves++;
                }
            }
            sum += leaves;
            if (leaves > t->replica_leaves_max)
                t->replica_leaves_max = leaves;
        }
        t->replica_leaves_mean = sum / p->dp;
        free(seen);
    }
}
