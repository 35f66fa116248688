/* gpt3d curate: text normalisation (Unicode NFC, white space, lower case), UTF-8 checks, words
 * and hashes.
 *
 * NFC as UAX #15 defines it: full canonical decomposition (the tables of nfc_tables.c, Hangul
 * by formula), canonical ordering of combining marks (a stable sort by combining class), then
 * canonical composition of the primary composites.  Pure ASCII text is already NFC and takes
 * a byte loop. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/table.h"
#include "curate/curate_internal.h"
#include "curate/nfc_tables.h"
#include "data/unicode_tables.h"

/* Hangul syllables (Unicode 3.12). */
#define G3_H_SBASE 0xAC00u
#define G3_H_LBASE 0x1100u
#define G3_H_VBASE 0x1161u
#define G3_H_TBASE 0x11A7u
#define G3_H_LCOUNT 19u
#define G3_H_VCOUNT 21u
#define G3_H_TCOUNT 28u
#define G3_H_NCOUNT (G3_H_VCOUNT * G3_H_TCOUNT)
#define G3_H_SCOUNT (G3_H_LCOUNT * G3_H_NCOUNT)

const char *g3_curate_unicode_version(void)
{
    return g3_curate_ucd_version;
}

uint32_t g3_curate_utf8_next(const char *s, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s + *i;
    if (u[0] < 0x80) {
        *i += 1;
        return u[0];
    }
    if (u[0] < 0xE0) {
        *i += 2;
        return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    }
    if (u[0] < 0xF0) {
        *i += 3;
        return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    }
    *i += 4;
    return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12)
           | ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
}

size_t g3_curate_utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return i;
        if (i + len > n)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

static uint32_t g3_curate_ccc_of(uint32_t cp)
{
    const g3_curate_ccc_t *r;
    if (cp < 0x300)
        return 0;
    r = g3_table_find(g3_curate_ccc, g3_curate_ccc_count, sizeof(*r),
                      offsetof(g3_curate_ccc_t, hi), cp);
    return r ? r->ccc : 0;
}

static const g3_curate_decomp_t *g3_curate_decomp_of(uint32_t cp)
{
    if (cp < 0xC0)
        return NULL;
    return g3_table_find(g3_curate_decomp, g3_curate_decomp_count, sizeof(g3_curate_decomp_t),
                         0, cp);
}

/* RET: the primary composite of (a, b), or 0 when there is none. */
static uint32_t g3_curate_compose(uint32_t a, uint32_t b)
{
    if (a >= G3_H_LBASE && a < G3_H_LBASE + G3_H_LCOUNT && b >= G3_H_VBASE
        && b < G3_H_VBASE + G3_H_VCOUNT)
        return G3_H_SBASE + ((a - G3_H_LBASE) * G3_H_VCOUNT + (b - G3_H_VBASE)) * G3_H_TCOUNT;
    if (a >= G3_H_SBASE && a < G3_H_SBASE + G3_H_SCOUNT && (a - G3_H_SBASE) % G3_H_TCOUNT == 0
        && b > G3_H_TBASE && b < G3_H_TBASE + G3_H_TCOUNT)
        return a + (b - G3_H_TBASE);
    unsigned lo = 0, hi = g3_curate_comp_count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        const g3_curate_comp_t *e = &g3_curate_comp[mid];
        if (a < e->first || (a == e->first && b < e->second)) hi = mid;
        else if (a > e->first || b > e->second) lo = mid + 1;
        else return e->composite;
    }
    return 0;
}

static uint32_t g3_curate_lower_cp(uint32_t cp)
{
    const g3_curate_map_t *r;
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    r = g3_table_find(g3_curate_lower, g3_curate_lower_count, sizeof(*r), 0, cp);
    return r ? r->to : cp;
}

/* cps[0..*n) -> NFC in place (the array has room for the decomposition: cap entries).
 * RET: G3_OK or G3_ERR_NO_MEMORY. */
static g3_status_t g3_curate_nfc(uint32_t **cps_p, size_t *n_p)
{
    uint32_t *in = *cps_p, *d = NULL;
    size_t n = *n_p, dn = 0, dcap = n + n / 2 + 16;

    d = malloc(dcap * sizeof(uint32_t));
    if (!d)
        return G3_ERR_NO_MEMORY;
    /* Decompose. */
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = in[i], tmp[3];
        const uint32_t *seq = &in[i];
        size_t len = 1;
        if (cp >= G3_H_SBASE && cp < G3_H_SBASE + G3_H_SCOUNT) {
            uint32_t s = cp - G3_H_SBASE;
            tmp[0] = G3_H_LBASE + s / G3_H_NCOUNT;
            tmp[1] = G3_H_VBASE + (s % G3_H_NCOUNT) / G3_H_TCOUNT;
            tmp[2] = G3_H_TBASE + s % G3_H_TCOUNT;
            seq = tmp;
            len = tmp[2] == G3_H_TBASE ? 2 : 3;
        } else {
            const g3_curate_decomp_t *e = g3_curate_decomp_of(cp);
            if (e) {
                seq = g3_curate_decomp_pool + e->off;
                len = e->len;
            }
        }
        if (dn + len > dcap) {
            dcap = 2 * dcap + len;
            uint32_t *q = realloc(d, dcap * sizeof(uint32_t));
            if (!q) {
                free(d);
                return G3_ERR_NO_MEMORY;
            }
            d = q;
        }
        memcpy(d + dn, seq, len * sizeof(uint32_t));
        dn += len;
    }
    /* Canonical ordering: a stable insertion sort of each run of non-starters by class. */
    for (size_t i = 1; i < dn; i++) {
        uint32_t c = g3_curate_ccc_of(d[i]);
        if (c == 0)
            continue;
        size_t k = i;
        while (k > 0) {
            uint32_t pc = g3_curate_ccc_of(d[k - 1]);
            if (pc == 0 || pc <= c)
                break;
            uint32_t t = d[k];
            d[k] = d[k - 1];
            d[k - 1] = t;
            k--;
        }
    }
    /* Canonical composition (UAX #15's algorithm). */
    if (dn > 0) {
        size_t starter = 0, out = 1;
        uint32_t last = g3_curate_ccc_of(d[0]) ? 256 : 0;
        for (size_t i = 1; i < dn; i++) {
            uint32_t ch = d[i], cc = g3_curate_ccc_of(ch);
            uint32_t comp = g3_curate_compose(d[starter], ch);
            if (comp && (last < cc || last == 0) && (last != 0 || out == starter + 1)) {
                d[starter] = comp;
                continue;
            }
            if (cc == 0)
                starter = out;
            last = cc;
            d[out++] = ch;
        }
        dn = out;
    }
    free(in);
    *cps_p = d;
    *n_p = dn;
    return G3_OK;
}

/* RET: 1 when s[0..n) may change under NFC: it has a code point from U+0300 up (a UTF-8
 * lead byte 0xCC or more).  Below U+0300 every code point is its own NFC and composes with
 * nothing before it (the combining marks, singletons and exclusions all lie above). */
static int g3_curate_may_change(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0xCC)
            return 1;
    return 0;
}

g3_status_t g3_curate_normalize(const char *s, size_t n, int lower, char **out_p,
                                size_t *out_len_p)
{
    g3_buf_t b = { 0 };
    size_t i = 0;
    int ascii = 1;

    for (size_t k = 0; k < n; k++)
        if ((unsigned char)s[k] >= 0x80) {
            ascii = 0;
            break;
        }
    if (g3_buf_reserve(&b, n) != G3_OK)
        return G3_ERR_NO_MEMORY;
    if (ascii) {
        int space = 1;   /* at the start: drop leading white space */
        for (i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F)) {
                space = 1;
                continue;
            }
            if (space && b.len > 0)
                b.data[b.len++] = ' ';
            space = 0;
            b.data[b.len++] = (char)(lower && c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        b.data[b.len] = '\0';
        *out_p = b.data;
        *out_len_p = b.len;
        return G3_OK;
    }
    uint32_t *cps = malloc((n + 1) * sizeof(uint32_t));
    size_t m = 0;
    if (!cps) {
        g3_buf_free(&b);
        return G3_ERR_NO_MEMORY;
    }
    while (i < n)
        cps[m++] = g3_curate_utf8_next(s, &i);
    if (g3_curate_may_change(s, n) && g3_curate_nfc(&cps, &m) != G3_OK) {
        free(cps);
        g3_buf_free(&b);
        return G3_ERR_NO_MEMORY;
    }
    int space = 1;
    for (size_t k = 0; k < m; k++) {
        uint32_t cp = cps[k];
        if (g3_ucs_class(cp) == G3_UCS_SPACE || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85) {
            space = 1;
            continue;
        }
        if ((space && b.len > 0 && g3_buf_append(&b, " ", 1) != G3_OK)
            || g3_utf8_put(&b, lower ? g3_curate_lower_cp(cp) : cp) != G3_OK) {
            free(cps);
            g3_buf_free(&b);
            return G3_ERR_NO_MEMORY;
        }
        space = 0;
    }
    free(cps);
    if (!b.data && g3_buf_reserve(&b, 1) != G3_OK)
        return G3_ERR_NO_MEMORY;
    b.data[b.len] = '\0';
    *out_p = b.data;
    *out_len_p = b.len;
    return G3_OK;
}

static g3_status_t g3_curate_words_push(g3_curate_words_t *ws, uint64_t h, size_t a, size_t e)
{
    if (g3_mem_grow(&ws->w, &ws->cap, ws->n, sizeof(*ws->w), 1024) != G3_OK)
        return G3_ERR_NO_MEMORY;
    ws->w[ws->n].hash = g3_hash_mix64(h);
    ws->w[ws->n].start = (uint32_t)a;
    ws->w[ws->n].end = (uint32_t)e;
    ws->n++;
    return G3_OK;
}

#define G3_FNV_OFFSET 0xcbf29ce484222325ULL
#define G3_FNV_PRIME 0x100000001b3ULL

static int g3_curate_is_mark(uint32_t cp)
{
    return cp >= 0x300
           && g3_table_find(g3_curate_mark, g3_curate_mark_count, sizeof(g3_curate_range_t),
                            offsetof(g3_curate_range_t, hi), cp);
}

/* The hash of a word with non-ASCII code points, s[a..e): of the UTF-8 of its NFC form,
 * lower-cased, so that composed and decomposed spellings are one word.
 * RET: G3_OK or G3_ERR_NO_MEMORY. */
static g3_status_t g3_curate_word_hash_wide(const char *s, size_t a, size_t e, uint64_t *h_p)
{
    uint32_t stack[64], *cps = stack;
    size_t m = 0, i = a;
    uint64_t h = G3_FNV_OFFSET;
    int nfc = g3_curate_may_change(s + a, e - a);
    if (nfc || e - a > 64) {   /* bytes bound the code points */
        if (!(cps = malloc((e - a + 1) * sizeof(uint32_t))))
            return G3_ERR_NO_MEMORY;
    }
    while (i < e)
        cps[m++] = g3_curate_utf8_next(s, &i);
    if (nfc && g3_curate_nfc(&cps, &m) != G3_OK) {
        free(cps);
        return G3_ERR_NO_MEMORY;
    }
    for (size_t k = 0; k < m; k++) {
        uint32_t cp = g3_curate_lower_cp(cps[k]);
        unsigned char u[4];
        size_t len;
        if (cp < 0x80) { u[0] = (unsigned char)cp; len = 1; }
        else if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | (cp >> 6)); len = 2; }
        else if (cp < 0x10000) { u[0] = (unsigned char)(0xE0 | (cp >> 12)); len = 3; }
        else { u[0] = (unsigned char)(0xF0 | (cp >> 18)); len = 4; }
        for (size_t j = 1; j < len; j++)
            u[j] = (unsigned char)(0x80 | ((cp >> (6 * (len - 1 - j))) & 0x3F));
        for (size_t j = 0; j < len; j++)
            h = (h ^ u[j]) * G3_FNV_PRIME;
    }
    if (cps != stack)
        free(cps);
    *h_p = h;
    return G3_OK;
}

g3_status_t g3_curate_words(const char *s, size_t n, g3_curate_words_t *ws)
{
    size_t i = 0, start = 0;
    uint64_t h = G3_FNV_OFFSET;
    int in = 0, wide = 0;   /* in a word; the word has a non-ASCII code point */

    ws->n = 0;
    for (;;) {
        size_t at = i;
        int word = 0;
        if (i < n) {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x80) {
                i++;
                uint32_t lc = c >= 'A' && c <= 'Z' ? c + 32u : c;
                word = (lc >= 'a' && lc <= 'z') || (lc >= '0' && lc <= '9');
                if (word) {
                    if (!in) {
                        in = 1;
                        wide = 0;
                        start = at;
                        h = G3_FNV_OFFSET;
                    }
                    h = (h ^ lc) * G3_FNV_PRIME;
                    continue;
                }
            } else {
                uint32_t cp = g3_curate_utf8_next(s, &i);
                g3_ucs_class_t k = g3_ucs_class(cp);
                /* A combining mark continues a word (it is part of its letter). */
                word = k == G3_UCS_LETTER || k == G3_UCS_NUMBER || (in && g3_curate_is_mark(cp));
                if (word) {
                    if (!in) {
                        in = 1;
                        start = at;
                    }
                    wide = 1;
                    continue;
                }
            }
        }
        /* Not a word character, or the end: the word so far is complete. */
        if (in) {
            if (wide && g3_curate_word_hash_wide(s, start, at, &h) != G3_OK)
                return G3_ERR_NO_MEMORY;
            if (g3_curate_words_push(ws, h, start, at) != G3_OK)
                return G3_ERR_NO_MEMORY;
            in = 0;
        }
        if (i >= n)
            break;
    }
    return G3_OK;
}

void g3_curate_words_free(g3_curate_words_t *ws)
{
    free(ws->w);
    ws->w = NULL;
    ws->n = ws->cap = 0;
}

uint64_t g3_curate_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *u = p;
    uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, u + i, 8);
        h ^= g3_hash_mix64(w ^ seed);
        h = (h << 27 | h >> 37) * 0x9E3779B97F4A7C15ULL + 0x52dce729;
    }
    uint64_t t = 0;
    for (size_t k = 0; i + k < n; k++)
        t |= (uint64_t)u[i + k] << (8 * k);
    h ^= g3_hash_mix64(t ^ seed ^ 0x1F);
    return g3_hash_mix64(h);
}
