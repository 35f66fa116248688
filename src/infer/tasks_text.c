/* gpt3d infer: the text rules of the tasks (see tasks.h): Python's whitespace (str.isspace,
 * str.strip) and Megatron's WikiText detokenizer, written out by hand so that they give what
 * the Python does. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "data/json.h"
#include "infer/tasks_internal.h"

size_t g3_task_space_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;

    if (n == 0)
        return 0;
    if (u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r') || (u[0] >= 0x1c && u[0] <= 0x1f))
        return 1;
    if (n >= 2 && u[0] == 0xc2 && (u[1] == 0x85 || u[1] == 0xa0))   /* U+0085 U+00A0 */
        return 2;
    if (n >= 3 && u[0] == 0xe1 && u[1] == 0x9a && u[2] == 0x80)      /* U+1680 */
        return 3;
    if (n >= 3 && u[0] == 0xe2 && u[1] == 0x80 &&                    /* U+2000-200A, 2028, */
        (u[2] <= 0x8a || u[2] == 0xa8 || u[2] == 0xa9 || u[2] == 0xaf))   /* 2029, 202F */
        return 3;
    if (n >= 3 && u[0] == 0xe2 && u[1] == 0x81 && u[2] == 0x9f)      /* U+205F */
        return 3;
    if (n >= 3 && u[0] == 0xe3 && u[1] == 0x80 && u[2] == 0x80)      /* U+3000 */
        return 3;
    return 0;
}

void g3_task_strip(char *s)
{
    size_t n = strlen(s), b = 0, e = 0, sp;
    while (b < n && (sp = g3_task_space_len(s + b, n - b)) > 0)
        b += sp;
    e = b;
    for (size_t p = b; p < n;) {
        sp = g3_task_space_len(s + p, n - p);
        p += sp ? sp : 1;
        if (!sp)
            e = p;
    }
    memmove(s, s + b, e - b);
    s[e - b] = '\0';
}

char *g3_task_concat(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = c ? strlen(c) : 0;
    char *s = malloc(na + nb + nc + 1);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    if (c)
        memcpy(s + na + nb, c, nc);
    s[na + nb + nc] = '\0';
    return s;
}

/* RET: the first occurrence of f (nf > 0 bytes) in s[0..n), or NULL. */
static const char *g3_task_find(const char *s, size_t n, const char *f, size_t nf)
{
    for (const char *p = s; nf <= n && p <= s + n - nf; p++) {
        p = memchr(p, f[0], (size_t)(s + n - nf - p) + 1);
        if (!p)
            return NULL;
        if (memcmp(p, f, nf) == 0)
            return p;
    }
    return NULL;
}

/* The end of a rewrite of b into o (st: how the rewrite went): o, NUL-terminated (the NUL not
 * counted), replaces b; on an error o is freed and b kept.  RET: st, or G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_buf_replace(g3_buf_t *b, g3_buf_t *o, g3_status_t st)
{
    if (st == G3_OK)
        st = g3_buf_append(o, "", 1);
    if (st != G3_OK) {
        g3_buf_free(o);
        return st;
    }
    o->len--;
    g3_buf_free(b);
    *b = *o;
    return G3_OK;
}

/* str.replace(from, to) on b (all non-overlapping occurrences, left to right).
 * RET: G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_replace(g3_buf_t *b, const char *from, const char *to)
{
    g3_buf_t o = { NULL, 0, 0 };
    size_t nf = strlen(from), nt = strlen(to), i = 0;
    g3_status_t st = G3_OK;

    while (i < b->len && st == G3_OK) {
        const char *hit = g3_task_find(b->data + i, b->len - i, from, nf);
        size_t upto = hit ? (size_t)(hit - b->data) : b->len;
        st = g3_buf_append(&o, b->data + i, upto - i);
        if (st == G3_OK && hit)
            st = g3_buf_append(&o, to, nt);
        i = hit ? upto + nf : b->len;
    }
    return g3_task_buf_replace(b, &o, st);
}

/* re.sub(r"O\s*([^C]*?)\s*C", r"O\1C") for the single bytes O and C: from each O, up to the
 * first C after it, the whitespace at both ends of what lies between is dropped (an O with
 * no C after it stays).  RET: G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_strip_pairs(g3_buf_t *b, char open, char close)
{
    g3_buf_t o = { NULL, 0, 0 };
    size_t i = 0;
    g3_status_t st = G3_OK;

    while (i < b->len && st == G3_OK) {
        const char *c = b->data[i] == open ? memchr(b->data + i + 1, close, b->len - i - 1)
                                           : NULL;
        size_t j, k, end, sp;
        if (!c) {
            st = g3_buf_append(&o, b->data + i, 1);
            i++;
            continue;
        }
        j = i + 1;
        end = (size_t)(c - b->data);
        while (j < end && (sp = g3_task_space_len(b->data + j, end - j)) > 0)
            j += sp;
        k = j;   /* the end of the last non-space character in [j, end) */
        for (size_t p = j; p < end;) {
            sp = g3_task_space_len(b->data + p, end - p);
            p += sp ? sp : 1;
            if (!sp)
                k = p;
        }
        st = g3_buf_append(&o, &open, 1);
        if (st == G3_OK)
            st = g3_buf_append(&o, b->data + j, k - j);
        if (st == G3_OK)
            st = g3_buf_append(&o, &close, 1);
        i = end + 1;
    }
    return g3_task_buf_replace(b, &o, st);
}

/* re.sub(r"/' [0-9]/", r"/'[0-9]/"): the pattern and its (literal) replacement as Megatron
 * wrote them, in one left-to-right scan.  RET: G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_slash_quote(g3_buf_t *b)
{
    g3_buf_t o = { NULL, 0, 0 };
    const char *d = b->data;
    size_t i = 0;
    g3_status_t st = G3_OK;

    while (i < b->len && st == G3_OK) {
        if (i + 5 <= b->len && d[i] == '/' && d[i + 1] == '\'' && d[i + 2] == ' ' &&
            d[i + 3] >= '0' && d[i + 3] <= '9' && d[i + 4] == '/') {
            st = g3_buf_append(&o, "/'[0-9]/", 8);
            i += 5;
        } else {
            st = g3_buf_append(&o, d + i, 1);
            i++;
        }
    }
    return g3_task_buf_replace(b, &o, st);
}

g3_status_t g3_task_wikitext_detok(const char *text, size_t len, char **out_p, size_t *out_len_p)
{
    static const char *const rules1[][2] = {
        /* number separators */
        { " @-@ ", "-" }, { " @,@ ", "," }, { " @.@ ", "." },
        /* punctuation */
        { " : ", ": " }, { " ; ", "; " }, { " . ", ". " }, { " ! ", "! " }, { " ? ", "? " },
        { " , ", ", " },
    };
    static const char *const rules2[][2] = {
        /* miscellaneous */
        { "= = = =", "====" }, { "= = =", "===" }, { "= =", "==" },
        { " \xc2\xb0 ", "\xc2\xb0" }, { " \n", "\n" }, { "\n ", "\n" }, { " N ", " 1 " },
        { " 's", "'s" },
    };
    static const char pairs[][2] = { { '(', ')' }, { '[', ']' }, { '{', '}' }, { '"', '"' },
                                     { '\'', '\'' } };
    g3_buf_t b = { NULL, 0, 0 };
    g3_status_t st = g3_buf_append(&b, text, len);

    /* Megatron's order; each rule over the whole text.  contractions: */
    if (st == G3_OK)
        st = g3_task_replace(&b, "s '", "s'");
    if (st == G3_OK)
        st = g3_task_slash_quote(&b);
    for (size_t r = 0; st == G3_OK && r < sizeof(rules1) / sizeof(rules1[0]); r++)
        st = g3_task_replace(&b, rules1[r][0], rules1[r][1]);
    /* double brackets */
    for (size_t r = 0; st == G3_OK && r < sizeof(pairs) / sizeof(pairs[0]); r++)
        st = g3_task_strip_pairs(&b, pairs[r][0], pairs[r][1]);
    for (size_t r = 0; st == G3_OK && r < sizeof(rules2) / sizeof(rules2[0]); r++)
        st = g3_task_replace(&b, rules2[r][0], rules2[r][1]);
    if (st == G3_OK && !b.data) {   /* an empty text: an empty string */
        st = g3_buf_append(&b, "", 1);
        b.len = 0;
    }
    if (st != G3_OK) {
        g3_buf_free(&b);
        g3_error("wikitext detokenizer: out of memory for %zu bytes", len);
        return G3_ERR_NO_MEMORY;
    }
    *out_p = b.data;
    *out_len_p = b.len;
    return G3_OK;
}
