/* gpt3d topo: the switch tree: topology.conf, SLURM_TOPOLOGY_ADDR, flat. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "topo/topo.h"

/* ---- a string -> index map (open addressing, FNV-1a) ------------------------ */

typedef struct {
    int         cap;      /* power of two */
    int        *slot;     /* (cap) index + 1, 0 = empty */
    char *const *keys;    /* the names the indices refer to (not owned) */
} g3_index_t;

static uint64_t g3_topo_fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static g3_index_t *g3_topo_index_new(int n, char *const *keys)
{
    g3_index_t *ix = calloc(1, sizeof(*ix));
    if (ix == NULL)
        return NULL;
    ix->cap = 16;
    while (ix->cap < 2 * n + 2)
        ix->cap *= 2;
    ix->slot = calloc((size_t)ix->cap, sizeof(int));
    if (ix->slot == NULL) {
        free(ix);
        return NULL;
    }
    ix->keys = keys;
    return ix;
}

static void g3_topo_index_free(g3_index_t *ix)
{
    if (ix) {
        free(ix->slot);
        free(ix);
    }
}

/* RET: the index stored for name, or -1; *pos_p: where it would go. */
static int g3_topo_index_find(const g3_index_t *ix, const char *name, int *pos_p)
{
    int m = ix->cap - 1, pos = (int)(g3_topo_fnv(name) & (uint64_t)m);
    while (ix->slot[pos]) {
        if (strcmp(ix->keys[ix->slot[pos] - 1], name) == 0) {
            if (pos_p)
                *pos_p = pos;
            return ix->slot[pos] - 1;
        }
        pos = (pos + 1) & m;
    }
    if (pos_p)
        *pos_p = pos;
    return -1;
}

/* The caller guarantees capacity (n <= cap/2). */
static void g3_topo_index_put(g3_index_t *ix, int pos, int value)
{
    ix->slot[pos] = value + 1;
}

/* ---- building a tree --------------------------------------------------------- */

typedef struct {
    g3_topo_t   *t;
    int          cap_nodes, cap_sw;
    g3_index_t  *node_ix, *sw_ix;
} g3_builder_t;

static g3_status_t g3_topo_builder_init(g3_builder_t *b, const char *source, int hint_nodes,
                                        int hint_sw)
{
    memset(b, 0, sizeof(*b));
    b->t = calloc(1, sizeof(*b->t));
    if (b->t == NULL)
        return G3_ERR_NO_MEMORY;
    snprintf(b->t->source, sizeof(b->t->source), "%s", source);
    b->cap_nodes = hint_nodes > 16 ? hint_nodes : 16;
    b->cap_sw = hint_sw > 16 ? hint_sw : 16;
    b->t->node_names = calloc((size_t)b->cap_nodes, sizeof(char *));
    b->t->node_switch = calloc((size_t)b->cap_nodes, sizeof(int));
    b->t->switch_names = calloc((size_t)b->cap_sw, sizeof(char *));
    b->t->switch_parent = calloc((size_t)b->cap_sw, sizeof(int));
    b->t->switch_level = calloc((size_t)b->cap_sw, sizeof(int));
    b->node_ix = g3_topo_index_new(b->cap_nodes, b->t->node_names);
    b->sw_ix = g3_topo_index_new(b->cap_sw, b->t->switch_names);
    if (!b->t->node_names || !b->t->node_switch || !b->t->switch_names ||
        !b->t->switch_parent || !b->t->switch_level || !b->node_ix || !b->sw_ix)
        return G3_ERR_NO_MEMORY;
    return G3_OK;
}

static void g3_topo_builder_abort(g3_builder_t *b)
{
    g3_topo_index_free(b->node_ix);
    g3_topo_index_free(b->sw_ix);
    g3_topo_free(b->t);
    b->t = NULL;
}

static g3_status_t g3_topo_index_grow(g3_index_t **ixp, int n, char *const *keys)
{
    g3_index_t *ix = g3_topo_index_new(n, keys);
    if (ix == NULL)
        return G3_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++) {
        int pos;
        g3_topo_index_find(ix, keys[i], &pos);
        g3_topo_index_put(ix, pos, i);
    }
    g3_topo_index_free(*ixp);
    *ixp = ix;
    return G3_OK;
}

/* *p, a malloc'd array of the builder's, resized to n elements of elem bytes.
 * RET: 0, or -1 on OOM (*p kept). */
static int g3_topo_builder_resize(void **p, int n, size_t elem)
{
    void *grown = realloc(*p, (size_t)n * elem);
    if (grown == NULL)
        return -1;
    *p = grown;
    return 0;
}

/* RET: the switch's index (created with no parent if new), or -1 on OOM. */
static int g3_topo_builder_switch(g3_builder_t *b, const char *name)
{
    g3_topo_t *t = b->t;
    int pos, i = g3_topo_index_find(b->sw_ix, name, &pos);

    if (i >= 0)
        return i;
    if (t->nswitches + 1 > b->cap_sw / 2) {
        int cap = b->cap_sw * 2;
        if (g3_topo_builder_resize((void **)&t->switch_names, cap, sizeof(char *)) ||
            g3_topo_builder_resize((void **)&t->switch_parent, cap, sizeof(int)) ||
            g3_topo_builder_resize((void **)&t->switch_level, cap, sizeof(int)))
            return -1;
        b->cap_sw = cap;
        if (g3_topo_index_grow(&b->sw_ix, t->nswitches, t->switch_names) != G3_OK)
            return -1;
        g3_topo_index_find(b->sw_ix, name, &pos);
    }
    i = t->nswitches;
    t->switch_names[i] = strdup(name);
    if (t->switch_names[i] == NULL)
        return -1;
    t->switch_parent[i] = -1;
    t->switch_level[i] = 0;
    t->nswitches++;
    g3_topo_index_put(b->sw_ix, pos, i);
    return i;
}

/* RET: the node's index, -2 if it already exists, -1 on OOM. */
static int g3_topo_builder_node(g3_builder_t *b, const char *name, int sw)
{
    g3_topo_t *t = b->t;
    int pos, i = g3_topo_index_find(b->node_ix, name, &pos);

    if (i >= 0)
        return -2;
    if (t->nnodes + 1 > b->cap_nodes / 2) {
        int cap = b->cap_nodes * 2;
        if (g3_topo_builder_resize((void **)&t->node_names, cap, sizeof(char *)) ||
            g3_topo_builder_resize((void **)&t->node_switch, cap, sizeof(int)))
            return -1;
        b->cap_nodes = cap;
        if (g3_topo_index_grow(&b->node_ix, t->nnodes, t->node_names) != G3_OK)
            return -1;
        g3_topo_index_find(b->node_ix, name, &pos);
    }
    i = t->nnodes;
    t->node_names[i] = strdup(name);
    if (t->node_names[i] == NULL)
        return -1;
    t->node_switch[i] = sw;
    t->nnodes++;
    g3_topo_index_put(b->node_ix, pos, i);
    return i;
}

/* Levels, cycle check; hand the node index to the tree. */
static g3_status_t g3_topo_builder_finish(g3_builder_t *b, g3_topo_t **topo_p)
{
    g3_topo_t *t = b->t;
    int changed = 1, rounds = 0;

    for (int s = 0; s < t->nswitches; s++) {
        int steps = 0;
        for (int a = t->switch_parent[s]; a >= 0; a = t->switch_parent[a])
            if (++steps > t->nswitches) {
                g3_error("%s: switch %s is its own ancestor (a cycle in Switches=)", t->source,
                         t->switch_names[s]);
                g3_topo_builder_abort(b);
                return G3_ERR_FORMAT;
            }
    }
    /* level = 1 + the highest level among child switches (1 without any) */
    for (int s = 0; s < t->nswitches; s++)
        t->switch_level[s] = 1;
    while (changed && rounds++ <= t->nswitches) {
        changed = 0;
        for (int s = 0; s < t->nswitches; s++) {
            int p = t->switch_parent[s];
            if (p >= 0 && t->switch_level[p] < t->switch_level[s] + 1) {
                t->switch_level[p] = t->switch_level[s] + 1;
                changed = 1;
            }
        }
    }
    t->levels = 0;
    for (int s = 0; s < t->nswitches; s++)
        if (t->switch_level[s] > t->levels)
            t->levels = t->switch_level[s];
    g3_topo_index_free(b->sw_ix);
    t->index = b->node_ix;
    *topo_p = t;
    return G3_OK;
}

void g3_topo_free(g3_topo_t *t)
{
    if (t == NULL)
        return;
    if (t->node_names)
        for (int i = 0; i < t->nnodes; i++)
            free(t->node_names[i]);
    if (t->switch_names)
        for (int i = 0; i < t->nswitches; i++)
            free(t->switch_names[i]);
    free(t->node_names);
    free(t->node_switch);
    free(t->switch_names);
    free(t->switch_parent);
    free(t->switch_level);
    g3_topo_index_free(t->index);
    free(t);
}

int g3_topo_node_find(const g3_topo_t *t, const char *name)
{
    return t->index ? g3_topo_index_find(t->index, name, NULL) : -1;
}

int g3_topo_node_distance(const g3_topo_t *t, int a, int b)
{
    int anc[64], na = 0;

    if (a == b)
        return 0;
    for (int s = t->node_switch[a]; s >= 0 && na < 64; s = t->switch_parent[s])
        anc[na++] = s;
    for (int s = t->node_switch[b]; s >= 0; s = t->switch_parent[s])
        for (int i = 0; i < na; i++)
            if (anc[i] == s)
                return t->switch_level[s];
    return t->levels + 1;
}

/* ---- topology.conf ----------------------------------------------------------- */

typedef struct {
    char *name, *switches, *nodes;
    int   line;
} g3_sw_rec_t;

static char *g3_topo_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void g3_topo_sw_rec_free(g3_sw_rec_t *rec)
{
    free(rec->name);
    free(rec->switches);
    free(rec->nodes);
}

/* One line of topology.conf (buf, comments included, is cut up): its KEY=VALUE words into
 * rec (LinkSpeed= is ignored).  RET: G3_ERR_FORMAT (logged) for a word that is not one of
 * the keys or a key given twice; G3_ERR_NO_MEMORY. */
static g3_status_t g3_topo_parse_line(char *buf, const char *name, int line, g3_sw_rec_t *rec)
{
    char *hash, *tok, *save = NULL;

    if ((hash = strchr(buf, '#')) != NULL)
        *hash = '\0';
    for (tok = strtok_r(buf, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
        char *eq = strchr(tok, '='), **dst = NULL;
        if (eq == NULL || eq == tok || eq[1] == '\0') {
            g3_error(
                "%s:%d: '%s' is not KEY=VALUE (expected SwitchName=, Switches=, Nodes=, LinkSpeed=)",
                name, line, tok);
            return G3_ERR_FORMAT;
        }
        *eq = '\0';
        if (!strcasecmp(tok, "SwitchName"))
            dst = &rec->name;
        else if (!strcasecmp(tok, "Switches"))
            dst = &rec->switches;
        else if (!strcasecmp(tok, "Nodes"))
            dst = &rec->nodes;
        else if (!strcasecmp(tok, "LinkSpeed"))
            continue;
        else {
            g3_error(
                "%s:%d: unknown key '%s'; this reads the topology/tree format (SwitchName=, Switches=, Nodes=, LinkSpeed=)%s",
                name, line, tok,
                !strcasecmp(tok, "BlockName") || !strcasecmp(tok, "BlockSizes")
                    ? ", not topology/block"
                    : "");
            return G3_ERR_FORMAT;
        }
        if (*dst) {
            g3_error("%s:%d: %s= given twice", name, line, tok);
            return G3_ERR_FORMAT;
        }
        *dst = strdup(eq + 1);
        if (*dst == NULL)
            return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

/* Every switch line of text.  OUT: *recs_p ((*nrec_p) records; the caller frees them with
 * g3_topo_sw_rec_free and the array, also on an error).  RET: the first line's error (logged). */
static g3_status_t g3_topo_parse_records(const char *text, const char *name,
                                         g3_sw_rec_t **recs_p, int *nrec_p)
{
    int caprec = 0, line = 0;
    const char *p = text;
    g3_status_t st = G3_OK;

    while (*p && st == G3_OK) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char *buf = g3_topo_strndup(p, len);
        g3_sw_rec_t rec = { NULL, NULL, NULL, ++line };

        p += len + (eol ? 1 : 0);
        if (buf == NULL)
            return G3_ERR_NO_MEMORY;
        st = g3_topo_parse_line(buf, name, line, &rec);
        free(buf);
        if (st == G3_OK && (rec.name || rec.switches || rec.nodes)) {
            if (rec.name == NULL) {
                g3_error("%s:%d: Switches= or Nodes= without SwitchName=", name, line);
                st = G3_ERR_FORMAT;
            } else if (*nrec_p == caprec) {
                g3_sw_rec_t *r = realloc(*recs_p, (size_t)(caprec ? caprec * 2 : 16) * sizeof(*r));
                if (r == NULL)
                    st = G3_ERR_NO_MEMORY;
                else {
                    *recs_p = r;
                    caprec = caprec ? caprec * 2 : 16;
                }
            }
            if (st == G3_OK) {
                (*recs_p)[(*nrec_p)++] = rec;
                continue;
            }
        }
        g3_topo_sw_rec_free(&rec);
    }
    if (st == G3_OK && *nrec_p == 0) {
        g3_error("%s: no SwitchName= lines; not a Slurm topology.conf", name);
        st = G3_ERR_FORMAT;
    }
    return st;
}

/* rec's Switches= as children of its switch s.  RET: G3_ERR_FORMAT (logged) for a switch
 * without a SwitchName= line, with two parents, or listing itself. */
static g3_status_t g3_topo_link_switches(g3_builder_t *b, const g3_sw_rec_t *rec, int s,
                                         const char *name)
{
    char **kids = NULL;
    int nk = 0;
    g3_status_t st = g3_topo_hostlist_expand(rec->switches, &kids, &nk);

    for (int k = 0; k < nk && st == G3_OK; k++) {
        int pos, c = g3_topo_index_find(b->sw_ix, kids[k], &pos);
        if (c < 0) {
            g3_error("%s:%d: switch %s lists Switches=%s but %s has no SwitchName= line",
                     name, rec->line, rec->name, rec->switches, kids[k]);
            st = G3_ERR_FORMAT;
        } else if (b->t->switch_parent[c] >= 0) {
            g3_error("%s:%d: switch %s is under both %s and %s; a tree allows one parent",
                     name, rec->line, kids[k], b->t->switch_names[b->t->switch_parent[c]],
                     rec->name);
            st = G3_ERR_FORMAT;
        } else if (c == s) {
            g3_error("%s:%d: switch %s lists itself", name, rec->line, kids[k]);
            st = G3_ERR_FORMAT;
        } else {
            b->t->switch_parent[c] = s;
        }
    }
    g3_topo_names_free(kids, nk);
    return st;
}

/* rec's Nodes= under its switch s.  RET: G3_ERR_FORMAT (logged) for a node under two
 * switches; G3_ERR_NO_MEMORY. */
static g3_status_t g3_topo_link_nodes(g3_builder_t *b, const g3_sw_rec_t *rec, int s,
                                      const char *name)
{
    char **kids = NULL;
    int nk = 0;
    g3_status_t st = g3_topo_hostlist_expand(rec->nodes, &kids, &nk);

    for (int k = 0; k < nk && st == G3_OK; k++) {
        int id = g3_topo_builder_node(b, kids[k], s);
        if (id == -1)
            st = G3_ERR_NO_MEMORY;
        else if (id == -2) {
            int other = g3_topo_index_find(b->node_ix, kids[k], NULL);
            g3_error(
                "%s:%d: node %s is under both %s and %s; a node hangs from one leaf switch",
                name, rec->line, kids[k], b->t->switch_names[b->t->node_switch[other]],
                rec->name);
            st = G3_ERR_FORMAT;
        }
    }
    g3_topo_names_free(kids, nk);
    return st;
}

g3_status_t g3_topo_parse(const char *text, const char *name, g3_topo_t **topo_p)
{
    g3_sw_rec_t *recs = NULL;
    int nrec = 0;
    g3_builder_t b;
    g3_status_t st = g3_topo_parse_records(text, name, &recs, &nrec);

    if (st == G3_OK)
        st = g3_topo_builder_init(&b, name, 64, nrec * 2);
    if (st != G3_OK)
        goto out_free_recs;

    /* switches first (in file order), then who is whose parent */
    for (int i = 0; i < nrec && st == G3_OK; i++) {
        int before = b.t->nswitches;
        int s = g3_topo_builder_switch(&b, recs[i].name);
        if (s < 0)
            st = G3_ERR_NO_MEMORY;
        else if (b.t->nswitches == before) {
            g3_error("%s:%d: switch %s is defined twice", name, recs[i].line, recs[i].name);
            st = G3_ERR_FORMAT;
        }
    }
    for (int i = 0; i < nrec && st == G3_OK; i++) {
        int s = g3_topo_builder_switch(&b, recs[i].name);
        if (recs[i].switches)
            st = g3_topo_link_switches(&b, &recs[i], s, name);
        if (st == G3_OK && recs[i].nodes)
            st = g3_topo_link_nodes(&b, &recs[i], s, name);
    }
    if (st == G3_OK && b.t->nnodes == 0) {
        g3_error("%s: no switch lists Nodes=; there is nothing to place ranks on", name);
        st = G3_ERR_FORMAT;
    }
    if (st == G3_OK)
        st = g3_topo_builder_finish(&b, topo_p);
    else
        g3_topo_builder_abort(&b);

out_free_recs:
    for (int i = 0; i < nrec; i++)
        g3_topo_sw_rec_free(&recs[i]);
    free(recs);
    return st;
}

g3_status_t g3_topo_read_file(const char *path, g3_topo_t **topo_p)
{
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t len = 0, cap = 0;
    g3_status_t st;

    if (f == NULL) {
        g3_error(
            "cannot open topology file %s: %s (give a Slurm topology.conf, e.g. /etc/slurm/topology.conf)",
            path, strerror(errno));
        return G3_ERR_IO;
    }
    for (;;) {
        size_t got;
        if (len + 4096 + 1 > cap) {
            char *t = realloc(text, cap = cap ? cap * 2 : 65536);
            if (t == NULL) {
                free(text);
                fclose(f);
                return G3_ERR_NO_MEMORY;
            }
            text = t;
        }
        got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        g3_error("reading topology file %s failed: %s", path, strerror(errno));
        free(text);
        fclose(f);
        return G3_ERR_IO;
    }
    fclose(f);
    text[len] = '\0';
    st = g3_topo_parse(text, path, topo_p);
    free(text);
    return st;
}

/* ---- SLURM_TOPOLOGY_ADDR ------------------------------------------------------- */

g3_status_t g3_topo_from_addrs(int nnodes, const char *const *names, const char *const *addrs,
                               const char *const *patterns, g3_topo_t **topo_p)
{
    g3_builder_t b;
    g3_status_t st;

    st = g3_topo_builder_init(&b, "SLURM_TOPOLOGY_ADDR of the job's tasks", nnodes * 2, 16);
    if (st != G3_OK) {
        g3_topo_builder_abort(&b);
        return st;
    }
    for (int i = 0; i < nnodes && st == G3_OK; i++) {
        char *a = strdup(addrs[i] ? addrs[i] : ""), *pt = strdup(patterns[i] ? patterns[i] : "");
        char *sa = NULL, *sp = NULL, *ca, *cp;
        int parent = -1, leaf = -1, id;

        if (a == NULL || pt == NULL) {
            free(a);
            free(pt);
            st = G3_ERR_NO_MEMORY;
            break;
        }
        for (ca = strtok_r(a, ".", &sa), cp = strtok_r(pt, ".", &sp); ca && cp;
             ca = strtok_r(NULL, ".", &sa), cp = strtok_r(NULL, ".", &sp)) {
            int s;
            if (strcmp(cp, "switch") != 0)
                continue;
            s = g3_topo_builder_switch(&b, ca);
            if (s < 0) {
                st = G3_ERR_NO_MEMORY;
                break;
            }
            if (b.t->switch_parent[s] >= 0 && b.t->switch_parent[s] != parent) {
                g3_error(
                    "SLURM_TOPOLOGY_ADDR of %s puts switch %s under %s, another task's under %s",
                    names[i], ca, parent >= 0 ? b.t->switch_names[parent] : "nothing",
                    b.t->switch_names[b.t->switch_parent[s]]);
                st = G3_ERR_FORMAT;
                break;
            }
            if (parent >= 0 && b.t->switch_parent[s] < 0 && s != parent)
                b.t->switch_parent[s] = parent;
            parent = leaf = s;
        }
        free(a);
        free(pt);
        if (st != G3_OK)
            break;
        if (leaf < 0)
            leaf = g3_topo_builder_switch(&b, "(unknown)");
        if (leaf < 0) {
            st = G3_ERR_NO_MEMORY;
            break;
        }
        id = g3_topo_builder_node(&b, names[i], leaf);
        if (id == -1)
            st = G3_ERR_NO_MEMORY;
        else if (id == -2) {
            g3_error("node %s appears twice among the job's nodes", names[i]);
            st = G3_ERR_INTERNAL;
        }
    }
    if (st != G3_OK) {
        g3_topo_builder_abort(&b);
        return st;
    }
    return g3_topo_builder_finish(&b, topo_p);
}

g3_status_t g3_topo_flat(int nnodes, const char *const *names, g3_topo_t **topo_p)
{
    g3_builder_t b;
    g3_status_t st;
    int s;

    st = g3_topo_builder_init(&b, "no topology (all nodes under one switch)", nnodes * 2, 4);
    if (st != G3_OK) {
        g3_topo_builder_abort(&b);
        return st;
    }
    s = g3_topo_builder_switch(&b, "(flat)");
    if (s < 0)
        st = G3_ERR_NO_MEMORY;
    for (int i = 0; i < nnodes && st == G3_OK; i++) {
        int id = g3_topo_builder_node(&b, names[i], s);
        if (id == -1)
            st = G3_ERR_NO_MEMORY;
        else if (id == -2) {
            g3_error("node %s is listed twice in the allocation", names[i]);
            st = G3_ERR_INVALID_ARG;
        }
    }
    if (st != G3_OK) {
        g3_topo_builder_abort(&b);
        return st;
    }
    return g3_topo_builder_finish(&b, topo_p);
}
