/* gpt3d data: a small JSON reader (see json.h). */
#include "data/json.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

g3_status_t g3_buf_reserve(g3_buf_t *b, size_t extra)
{
    /* room for a NUL too */
    return g3_mem_reserve(&b->data, &b->cap, b->len + extra + 1, 1, 256);
}

g3_status_t g3_buf_append(g3_buf_t *b, const void *p, size_t n)
{
    if (g3_buf_reserve(b, n) != G3_OK)
        return G3_ERR_NO_MEMORY;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return G3_OK;
}

void g3_buf_free(g3_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

g3_status_t g3_utf8_put(g3_buf_t *out, unsigned cp)
{
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | (cp >> 6));
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | (cp >> 12));
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | (cp >> 18));
        u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return g3_buf_append(out, u, n);
}

void g3_json_skip_ws(g3_json_t *j)
{
    while (j->pos < j->n) {
        char c = j->s[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        j->pos++;
    }
}

static g3_status_t g3_json_fail(g3_json_t *j, const char *why)
{
    j->why = why;
    return G3_ERR_FORMAT;
}

static int g3_json_hex4(const char *p, unsigned *v)
{
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *v = x;
    return 1;
}

g3_status_t g3_json_string(g3_json_t *j, g3_buf_t *out)
{
    if (j->pos >= j->n || j->s[j->pos] != '"')
        return g3_json_fail(j, "expected a string");
    j->pos++;
    for (;;) {
        /* Copy the run of plain bytes up to the next quote or backslash. */
        size_t start = j->pos;
        while (j->pos < j->n) {
            unsigned char c = (unsigned char)j->s[j->pos];
            if (c == '"' || c == '\\' || c < 0x20)
                break;
            j->pos++;
        }
        if (out && j->pos > start && g3_buf_append(out, j->s + start, j->pos - start) != G3_OK)
            return G3_ERR_NO_MEMORY;
        if (j->pos >= j->n)
            return g3_json_fail(j, "unterminated string");
        unsigned char c = (unsigned char)j->s[j->pos];
        if (c == '"') {
            j->pos++;
            return G3_OK;
        }
        if (c < 0x20)
            return g3_json_fail(j, "raw control character inside a string (must be escaped)");
        /* A backslash escape. */
        if (j->pos + 1 >= j->n)
            return g3_json_fail(j, "unterminated escape");
        char e = j->s[j->pos + 1];
        char lit;
        j->pos += 2;
        switch (e) {
        case '"':  lit = '"'; break;
        case '\\': lit = '\\'; break;
        case '/':  lit = '/'; break;
        case 'b':  lit = '\b'; break;
        case 'f':  lit = '\f'; break;
        case 'n':  lit = '\n'; break;
        case 'r':  lit = '\r'; break;
        case 't':  lit = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (j->pos + 4 > j->n || !g3_json_hex4(j->s + j->pos, &cp))
                return g3_json_fail(j, "bad \\u escape (needs 4 hex digits)");
            j->pos += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && j->pos + 6 <= j->n && j->s[j->pos] == '\\'
                && j->s[j->pos + 1] == 'u' && g3_json_hex4(j->s + j->pos + 2, &lo)
                && lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                j->pos += 6;
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                /* A lone surrogate cannot be encoded as UTF-8 (Python's
                 * tokenizer would fail on it): U+FFFD, counted. */
                cp = 0xFFFD;
                j->lone_surrogates++;
            }
            if (out && g3_utf8_put(out, cp) != G3_OK)
                return G3_ERR_NO_MEMORY;
            continue;
        }
        default:
            return g3_json_fail(j, "unknown escape in a string");
        }
        if (out && g3_buf_append(out, &lit, 1) != G3_OK)
            return G3_ERR_NO_MEMORY;
    }
}

static g3_status_t g3_json_number(g3_json_t *j)
{
    size_t p = j->pos;
    const char *s = j->s;
    if (p < j->n && s[p] == '-')
        p++;
    if (p >= j->n || s[p] < '0' || s[p] > '9')
        return g3_json_fail(j, "bad number");
    if (s[p] == '0')
        p++;
    else
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    if (p < j->n && s[p] == '.') {
        p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9')
            return g3_json_fail(j, "bad number");
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < j->n && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        if (p < j->n && (s[p] == '+' || s[p] == '-'))
            p++;
        if (p >= j->n || s[p] < '0' || s[p] > '9')
            return g3_json_fail(j, "bad number");
        while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    j->pos = p;
    return G3_OK;
}

g3_status_t g3_json_int(g3_json_t *j, long long *v)
{
    size_t start = j->pos;
    g3_status_t st = g3_json_number(j);
    if (st != G3_OK)
        return st;
    long long x = 0;
    int neg = 0;
    for (size_t p = start; p < j->pos; p++) {
        char c = j->s[p];
        if (c == '-') { neg = 1; continue; }
        if (c < '0' || c > '9')
            return g3_json_fail(j, "expected an integer");
        if (x > (long long)1e17)
            return g3_json_fail(j, "integer too large");
        x = x * 10 + (c - '0');
    }
    *v = neg ? -x : x;
    return G3_OK;
}

static g3_status_t g3_json_literal(g3_json_t *j, const char *word)
{
    size_t n = strlen(word);
    if (j->pos + n > j->n || memcmp(j->s + j->pos, word, n) != 0)
        return g3_json_fail(j, "unexpected character (not a JSON value)");
    j->pos += n;
    return G3_OK;
}

static g3_status_t g3_json_skip_depth(g3_json_t *j, int depth)
{
    g3_status_t st;
    if (depth > 512)
        return g3_json_fail(j, "nesting deeper than 512 levels");
    g3_json_skip_ws(j);
    if (j->pos >= j->n)
        return g3_json_fail(j, "unexpected end of input (expected a value)");
    switch (j->s[j->pos]) {
    case '"':
        return g3_json_string(j, NULL);
    case 't': return g3_json_literal(j, "true");
    case 'f': return g3_json_literal(j, "false");
    case 'n': return g3_json_literal(j, "null");
    case '[':
        j->pos++;
        g3_json_skip_ws(j);
        if (j->pos < j->n && j->s[j->pos] == ']') {
            j->pos++;
            return G3_OK;
        }
        for (;;) {
            if ((st = g3_json_skip_depth(j, depth + 1)) != G3_OK)
                return st;
            g3_json_skip_ws(j);
            if (j->pos < j->n && j->s[j->pos] == ',') {
                j->pos++;
                continue;
            }
            if (j->pos < j->n && j->s[j->pos] == ']') {
                j->pos++;
                return G3_OK;
            }
            return g3_json_fail(j, "expected ',' or ']' in an array");
        }
    case '{': {
        int first = 1;
        for (;;) {
            st = g3_json_object_next(j, &first, NULL);
            if (st == G3_ERR_NOT_FOUND)
                return G3_OK;
            if (st != G3_OK)
                return st;
            if ((st = g3_json_skip_depth(j, depth + 1)) != G3_OK)
                return st;
        }
    }
    default:
        return g3_json_number(j);
    }
}

g3_status_t g3_json_skip_value(g3_json_t *j)
{
    return g3_json_skip_depth(j, 0);
}

g3_status_t g3_json_object_next(g3_json_t *j, int *first, g3_buf_t *key)
{
    g3_status_t st;
    g3_json_skip_ws(j);
    if (*first) {
        if (j->pos >= j->n || j->s[j->pos] != '{')
            return g3_json_fail(j, "expected a JSON object ('{')");
        j->pos++;
        g3_json_skip_ws(j);
        if (j->pos < j->n && j->s[j->pos] == '}') {
            j->pos++;
            return G3_ERR_NOT_FOUND;
        }
        *first = 0;
    } else {
        if (j->pos < j->n && j->s[j->pos] == '}') {
            j->pos++;
            return G3_ERR_NOT_FOUND;
        }
        if (j->pos >= j->n || j->s[j->pos] != ',')
            return g3_json_fail(j, "expected ',' or '}' in an object");
        j->pos++;
        g3_json_skip_ws(j);
    }
    if (key)
        key->len = 0;
    if ((st = g3_json_string(j, key)) != G3_OK)
        return st == G3_ERR_FORMAT && j->why && strcmp(j->why, "expected a string") == 0
            ? g3_json_fail(j, "expected a string key in an object") : st;
    g3_json_skip_ws(j);
    if (j->pos >= j->n || j->s[j->pos] != ':')
        return g3_json_fail(j, "expected ':' after an object key");
    j->pos++;
    g3_json_skip_ws(j);
    return G3_OK;
}

void g3_json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}
