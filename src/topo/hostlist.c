/* gpt3d topo: Slurm host lists, expanded and compressed.
 *
 * With libslurm (HAVE_SLURM) expansion goes through slurm_hostlist_create /
 * slurm_hostlist_shift, so that whatever syntax the site's Slurm accepts
 * works.  Slurm 23.11 changed hostlist_t from a pointer typedef to a struct
 * typedef (functions now take hostlist_t *); the handle type is therefore
 * taken from slurm_hostlist_create's own return type, which compiles
 * against both.  The built-in expander handles the common syntax: items
 * separated by commas or blanks, each with any number of bracket groups
 * "[a-b,c]" (cartesian product), zero padding taken from the lower bound. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_SLURM
#include <slurm/slurm.h>
#endif

#include "core/log.h"
#include "topo/topo.h"

#define G3_HOSTLIST_MAX 1000000   /* refuse lists that expand beyond this */

typedef struct {
    char **v;
    int    n, cap;
} g3_names_t;

static g3_status_t g3_topo_names_push(g3_names_t *a, const char *s, size_t len)
{
    if (a->n >= G3_HOSTLIST_MAX) {
        g3_error("host list expands to more than %d names", G3_HOSTLIST_MAX);
        return G3_ERR_INVALID_ARG;
    }
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        char **v = realloc(a->v, (size_t)cap * sizeof(*v));
        if (v == NULL)
            return G3_ERR_NO_MEMORY;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n] = malloc(len + 1);
    if (a->v[a->n] == NULL)
        return G3_ERR_NO_MEMORY;
    memcpy(a->v[a->n], s, len);
    a->v[a->n][len] = '\0';
    a->n++;
    return G3_OK;
}

void g3_topo_names_free(char **names, int n)
{
    if (names == NULL)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Expand item (no top-level separators) into out, prefix already built. */
static g3_status_t g3_topo_expand_item(const char *expr, const char *item, size_t len, char *prefix,
                                       size_t plen, size_t pcap, g3_names_t *out)
{
    const char *open = memchr(item, '[', len), *close;
    const char *p;

    if (open == NULL) {
        if (memchr(item, ']', len)) {
            g3_error("host list '%s': ']' without '['", expr);
            return G3_ERR_INVALID_ARG;
        }
        if (plen + len + 1 > pcap) {
            g3_error("host list '%s': a host name is too long", expr);
            return G3_ERR_INVALID_ARG;
        }
        memcpy(prefix + plen, item, len);
        return g3_topo_names_push(out, prefix, plen + len);
    }
    close = memchr(open, ']', len - (size_t)(open - item));
    if (close == NULL) {
        g3_error("host list '%s': '[' without ']'", expr);
        return G3_ERR_INVALID_ARG;
    }
    if (plen + (size_t)(open - item) + 1 > pcap) {
        g3_error("host list '%s': a host name is too long", expr);
        return G3_ERR_INVALID_ARG;
    }
    memcpy(prefix + plen, item, (size_t)(open - item));
    plen += (size_t)(open - item);
    /* ranges: "a-b,c,..." between open and close */
    p = open + 1;
    while (p < close) {
        const char *lo = p, *hi = NULL;
        size_t lolen, hilen = 0;
        unsigned long a, b;
        char num[32];

        while (p < close && isdigit((unsigned char)*p))
            p++;
        lolen = (size_t)(p - lo);
        if (p < close && *p == '-') {
            hi = ++p;
            while (p < close && isdigit((unsigned char)*p))
                p++;
            hilen = (size_t)(p - hi);
        }
        if (lolen == 0 || lolen > 18 || (hi && (hilen == 0 || hilen > 18)) ||
            (p < close && *p != ',')) {
            g3_error("host list '%s': bad range in '%.*s'; write ranges like [0-7,9] or [01-16]",
                     expr, (int)(close - open + 1), open);
            return G3_ERR_INVALID_ARG;
        }
        a = strtoul(lo, NULL, 10);
        b = hi ? strtoul(hi, NULL, 10) : a;
        if (b < a || b - a >= G3_HOSTLIST_MAX) {
            g3_error("host list '%s': range %.*s-%.*s is empty or too large", expr, (int)lolen,
                     lo, (int)hilen, hi ? hi : "");
            return G3_ERR_INVALID_ARG;
        }
        for (unsigned long v = a; v <= b; v++) {
            int w = snprintf(num, sizeof(num), "%0*lu", (int)lolen, v);
            g3_status_t st;
            if (plen + (size_t)w + 1 > pcap) {
                g3_error("host list '%s': a host name is too long", expr);
                return G3_ERR_INVALID_ARG;
            }
            memcpy(prefix + plen, num, (size_t)w);
            st = g3_topo_expand_item(expr, close + 1, len - (size_t)(close + 1 - item), prefix,
                                     plen + (size_t)w, pcap, out);
            if (st != G3_OK)
                return st;
        }
        if (p < close)
            p++;   /* the ',' */
    }
    return G3_OK;
}

g3_status_t g3_topo_hostlist_expand_builtin(const char *expr, char ***names_p, int *n_p)
{
    g3_names_t out = { NULL, 0, 0 };
    char prefix[1024];
    const char *p = expr;
    g3_status_t st = G3_OK;

    if (expr == NULL)
        expr = p = "";
    while (*p && st == G3_OK) {
        const char *start;
        int depth = 0;

        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        start = p;
        while (*p && (depth > 0 || (*p != ',' && !isspace((unsigned char)*p)))) {
            if (*p == '[')
                depth++;
            else if (*p == ']')
                depth--;
            p++;
        }
        st = g3_topo_expand_item(expr, start, (size_t)(p - start), prefix, 0, sizeof(prefix), &out);
    }
    if (st == G3_OK && out.n == 0) {
        g3_error("host list '%s' names no hosts", expr);
        st = G3_ERR_INVALID_ARG;
    }
    if (st != G3_OK) {
        g3_topo_names_free(out.v, out.n);
        return st;
    }
    *names_p = out.v;
    *n_p = out.n;
    return G3_OK;
}

g3_status_t g3_topo_hostlist_expand(const char *expr, char ***names_p, int *n_p)
{
#ifdef HAVE_SLURM
    typedef __typeof__(slurm_hostlist_create(NULL)) g3_slurm_hostlist_t;
    g3_slurm_hostlist_t hl;
    g3_names_t out = { NULL, 0, 0 };
    char *h;
    g3_status_t st = G3_OK;

    {
        hl = slurm_hostlist_create(expr ? expr : "");
        if (hl == NULL)   /* libslurm refused it: let the built-in one explain */
            return g3_topo_hostlist_expand_builtin(expr, names_p, n_p);
        while (st == G3_OK && (h = slurm_hostlist_shift(hl)) != NULL) {
            st = g3_topo_names_push(&out, h, strlen(h));
            free(h);
        }
        slurm_hostlist_destroy(hl);
        if (st == G3_OK && out.n > 0) {
            *names_p = out.v;
            *n_p = out.n;
            return G3_OK;
        }
        g3_topo_names_free(out.v, out.n);
        if (st != G3_OK)
            return st;
    }
#endif
    return g3_topo_hostlist_expand_builtin(expr, names_p, n_p);
}

/* Split name into the text before its trailing digits and those digits. */
static void g3_topo_split_name(const char *s, size_t *plen, size_t *dlen)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && isdigit((unsigned char)s[i - 1]))
        i--;
    if (n - i > 18)
        i = n;   /* too long to be a number we range over */
    *plen = i;
    *dlen = n - i;
}

static void g3_topo_append(char *buf, size_t len, size_t *used, const char *s)
{
    size_t n = strlen(s);
    if (*used + n + 1 > len) {
        *used = len;   /* marks truncation */
        return;
    }
    memcpy(buf + *used, s, n + 1);
    *used += n;
}

void g3_topo_hostlist_compress(const char *const *names, int n, char *buf, size_t len)
{
    size_t used = 0;
    int i = 0;

    if (len == 0)
        return;
    buf[0] = '\0';
    while (i < n) {
        size_t plen, dlen, pl2, dl2;
        int j = i + 1;
        char piece[256];

        g3_topo_split_name(names[i], &plen, &dlen);
        /* names[i..j) share the prefix and the digit width */
        while (dlen > 0 && j < n) {
            g3_topo_split_name(names[j], &pl2, &dl2);
            if (pl2 != plen || dl2 != dlen || strncmp(names[i], names[j], plen) != 0)
                break;
            j++;
        }
        if (i > 0)
            g3_topo_append(buf, len, &used, ",");
        if (j - i == 1) {
            g3_topo_append(buf, len, &used, names[i]);
        } else {
            snprintf(piece, sizeof(piece), "%.*s[", (int)plen, names[i]);
            g3_topo_append(buf, len, &used, piece);
            for (int k = i; k < j;) {
                unsigned long a = strtoul(names[k] + plen, NULL, 10), b = a;
                int m = k + 1;
                while (m < j && strtoul(names[m] + plen, NULL, 10) == b + 1) {
                    b++;
                    m++;
                }
                if (b > a)
                    snprintf(piece, sizeof(piece), "%s%.*s-%.*s", k > i ? "," : "",
                             (int)dlen, names[k] + plen, (int)dlen, names[m - 1] + plen);
                else
                    snprintf(piece, sizeof(piece), "%s%.*s", k > i ? "," : "", (int)dlen,
                             names[k] + plen);
                g3_topo_append(buf, len, &used, piece);
                k = m;
            }
            g3_topo_append(buf, len, &used, "]");
        }
        if (used >= len)
            break;
        i = j;
    }
    if (used >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
}
