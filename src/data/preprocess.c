/* gpt3d data: the preprocessing pipeline (preprocess.h): a reader that cuts the input into
 * batches of whole documents, tokenizer threads that encode the batches, and the calling
 * thread, which writes them in input order to one indexed-dataset writer per key. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "data/bpe.h"
#include "data/indexed.h"
#include "data/json.h"
#include "data/preprocess.h"
#include "data/tokid.h"

typedef enum { G3_PRE_JSONL, G3_PRE_PARAGRAPH, G3_PRE_LINE, G3_PRE_FILE } g3_pre_mode_t;

#define G3_PRE_BATCH (1u << 20)   /* input bytes per batch (whole documents) */

typedef struct {
    /* input */
    char          *in;
    size_t         in_len, in_cap;
    uint64_t       first_line;       /* line number of in[0] (1-based)        */
    uint64_t       seq;
    int            state;            /* 0 free, 1 being tokenized, 2 done     */
    /* output, per key */
    g3_bpe_ids_t  *ids;              /* (K,)                                  */
    size_t       **sizes;            /* (K,) arrays of document lengths       */
    size_t        *nsizes, *csizes;  /* (K,)                                  */
    uint64_t       docs, skipped, replaced;
    g3_status_t    st;
    char           err[768];
} g3_pre_batch_t;

typedef struct {
    const g3_bpe_t  *bpe;
    g3_pre_mode_t    mode;
    int              num_keys;
    char *const     *keys;
    int32_t          eod;            /* -1: no --append-eod                   */
    /* reader state (under lock) */
    FILE            *in;
    const char      *in_name;
    double           in_size;        /* bytes; -1 when not a regular file     */
    char            *carry;
    size_t           carry_len, carry_cap;
    uint64_t         carry_line;
    int              eof;
    uint64_t         next_seq;
    uint64_t         bytes_read;
    g3_status_t      read_st;
    /* ring */
    g3_pre_batch_t  *ring;
    int              ring_len;
    int              failed;
    pthread_mutex_t  lock;
    pthread_cond_t   cond_free, cond_done;
} g3_pre_t;

/* ---- reading whole documents --------------------------------------------- */

/* RET: the end of the last complete unit in buf[0..n) (0 if none): after
 * the last '\n' for lines, after the last blank line for paragraphs. */
static size_t g3_pre_cut(g3_pre_mode_t mode, const char *buf, size_t n)
{
    if (mode == G3_PRE_FILE)
        return 0;
    size_t i = n;
    while (i > 0 && buf[i - 1] != '\n')
        i--;
    if (mode != G3_PRE_PARAGRAPH || i == 0)
        return i;
    /* Find a line before i that is blank: the cut goes after it. */
    while (i > 0) {
        size_t end = i - 1, start = end;   /* buf[end] == '\n' */
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        int blank = 1;
        for (size_t k = start; k < end; k++)
            if (buf[k] != ' ' && buf[k] != '\t' && buf[k] != '\r')
                blank = 0;
        if (blank)
            return end + 1;
        i = start;
    }
    return 0;
}

/* Fill b with the next whole units (called with the lock held).
 * RET: 1 if b got data, 0 at the end of input (or on a read error). */
static int g3_pre_read(g3_pre_t *p, g3_pre_batch_t *b)
{
    for (;;) {
        if (p->carry_len > 0) {
            size_t cut = p->eof ? p->carry_len : g3_pre_cut(p->mode, p->carry, p->carry_len);
            if (cut > 0 && (p->carry_len >= G3_PRE_BATCH || p->eof || cut >= G3_PRE_BATCH / 2)) {
                if (b->in_cap < cut + 1) {
                    char *q = realloc(b->in, cut + 1);
                    if (!q) {
                        p->read_st = G3_ERR_NO_MEMORY;
                        return 0;
                    }
                    b->in = q;
                    b->in_cap = cut + 1;
                }
                memcpy(b->in, p->carry, cut);
                b->in[cut] = '\0';
                b->in_len = cut;
                b->first_line = p->carry_line;
                for (size_t k = 0; k < cut; k++)
                    p->carry_line += p->carry[k] == '\n';
                memmove(p->carry, p->carry + cut, p->carry_len - cut);
                p->carry_len -= cut;
                return 1;
            }
        }
        if (p->eof)
            return 0;
        if (p->carry_cap - p->carry_len < G3_PRE_BATCH) {
            size_t cap = p->carry_cap ? p->carry_cap * 2 : 2 * G3_PRE_BATCH;
            char *q = realloc(p->carry, cap);
            if (!q) {
                p->read_st = G3_ERR_NO_MEMORY;
                g3_error("gpt3d preprocess: out of memory reading '%s' (a document larger than %zu MB?)",
                         p->in_name, cap >> 20);
                return 0;
            }
            p->carry = q;
            p->carry_cap = cap;
        }
        size_t got = fread(p->carry + p->carry_len, 1, G3_PRE_BATCH, p->in);
        p->carry_len += got;
        p->bytes_read += got;
        if (got < G3_PRE_BATCH) {
            if (ferror(p->in)) {
                g3_error("gpt3d preprocess: cannot read '%s': %s", p->in_name, strerror(errno));
                p->read_st = G3_ERR_IO;
                return 0;
            }
            if (feof(p->in))
                p->eof = 1;
        }
    }
}

/* ---- tokenizing a batch -------------------------------------------------- */

static g3_status_t g3_pre_emit(g3_pre_t *p, g3_pre_batch_t *b, int key, g3_bpe_cache_t *cache,
                               const char *text, size_t len)
{
    size_t before = b->ids[key].len, bad;
    g3_status_t st;
    if (len == 0) {
        b->skipped++;
        return G3_OK;
    }
    st = g3_bpe_encode(p->bpe, cache, text, len, &b->ids[key], &bad);
    if (st != G3_OK)
        return st;   /* text was sanitized: only G3_ERR_NO_MEMORY */
    if (p->eod >= 0 && (st = g3_bpe_ids_push(&b->ids[key], p->eod)) != G3_OK)
        return st;
    if (g3_mem_grow(&b->sizes[key], &b->csizes[key], b->nsizes[key], sizeof(size_t), 256)
        != G3_OK)
        return G3_ERR_NO_MEMORY;
    b->sizes[key][b->nsizes[key]++] = b->ids[key].len - before;
    return G3_OK;
}

static void g3_pre_fail(g3_pre_batch_t *b, g3_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void g3_pre_fail(g3_pre_batch_t *b, g3_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof(b->err), fmt, ap);
    va_end(ap);
    b->st = st;
}

/* Find the next paragraph in s[*pos..n): skip blank lines, then take lines until a blank one.
 * RET: 1 with the paragraph [*start, *end) beginning on line *unit_line, *pos and *line past
 * it and the blank line that ends it; 0 when only blank lines are left. */
static int g3_pre_next_paragraph(const char *s, size_t n, size_t *pos, uint64_t *line,
                                 size_t *start, size_t *end, uint64_t *unit_line)
{
    size_t q = *pos, next = n;
    int in_par = 0;
    *start = n;
    *end = n;
    while (q < n) {
        size_t e = q;
        while (e < n && s[e] != '\n')
            e++;
        int blank = 1;
        for (size_t k = q; k < e; k++)
            if (s[k] != ' ' && s[k] != '\t' && s[k] != '\r')
                blank = 0;
        size_t after = e < n ? e + 1 : e;
        if (blank && in_par) {
            *end = q;
            next = after;
            (*line)++;
            break;
        }
        if (!blank && !in_par) {
            in_par = 1;
            *start = q;
            *unit_line = *line;
        }
        if (e < n)
            (*line)++;
        q = after;
        if (q >= n)
            *end = next = n;
    }
    if (!in_par)
        return 0;
    *pos = next;
    return 1;
}

/* Find the next unit of s[*pos..n) (*pos < n): a line (jsonl, line), a paragraph, or
 * everything (file).  A line's end includes its '\n'.
 * RET: 1 with the unit [*start, *end) beginning on line *unit_line, *pos and *line past it;
 * 0 when none is left. */
static int g3_pre_next_unit(g3_pre_mode_t mode, const char *s, size_t n, size_t *pos,
                            uint64_t *line, size_t *start, size_t *end, uint64_t *unit_line)
{
    *start = *pos;
    *unit_line = *line;
    if (mode == G3_PRE_FILE) {
        *end = *pos = n;
        return 1;
    }
    if (mode == G3_PRE_PARAGRAPH)
        return g3_pre_next_paragraph(s, n, pos, line, start, end, unit_line);
    size_t e = *pos;
    while (e < n && s[e] != '\n')
        e++;
    *end = e;
    *pos = e < n ? e + 1 : e;
    (*line)++;
    return 1;
}

/* One plain-text unit s[start..end) -> one document of key 0 (a blank line in line mode is
 * no document).  RET: G3_OK or G3_ERR_NO_MEMORY (b->st and b->err set). */
static g3_status_t g3_pre_text_unit(g3_pre_t *p, g3_pre_batch_t *b, g3_bpe_cache_t *cache,
                                    const char *s, size_t start, size_t end)
{
    g3_status_t st;
    size_t e = end;
    if (p->mode == G3_PRE_LINE) {
        size_t q = start;
        while (q < e && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r'))
            q++;
        if (q == e)
            return G3_OK;   /* blank line */
    }
    /* A line or paragraph ends before its last newline ("\r\n" too). */
    if (p->mode != G3_PRE_FILE) {
        if (e > start && s[e - 1] == '\n')
            e--;
        if (e > start && s[e - 1] == '\r')
            e--;
    }
    if ((st = g3_pre_emit(p, b, 0, cache, s + start, e - start)) != G3_OK) {
        g3_pre_fail(b, st, "out of memory");
        return st;
    }
    b->docs++;
    return G3_OK;
}

/* One JSON line s[start..end) (line unit_line) -> one document per key; a blank line is
 * none.  val and key are the caller's scratch buffers.
 * RET: G3_OK, G3_ERR_FORMAT or G3_ERR_NO_MEMORY (b->st and b->err set). */
static g3_status_t g3_pre_json_unit(g3_pre_t *p, g3_pre_batch_t *b, g3_bpe_cache_t *cache,
                                    g3_buf_t *val, g3_buf_t *key, const char *s, size_t start,
                                    size_t end, uint64_t unit_line)
{
    g3_status_t st;
    size_t q = start;
    while (q < end && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r'))
        q++;
    if (q == end)
        return G3_OK;
    g3_json_t j = { s + start, end - start, 0, NULL, 0 };
    int first = 1;
    int found[G3_PRE_MAX_KEYS] = { 0 };
    size_t vstart[G3_PRE_MAX_KEYS], vlen[G3_PRE_MAX_KEYS];
    /* Decode each wanted value into val, remembering where it lies. */
    val->len = 0;
    for (;;) {
        st = g3_json_object_next(&j, &first, key);
        if (st == G3_ERR_NOT_FOUND)
            break;
        if (st != G3_OK)
            goto json_error;
        int want = -1;
        for (int k = 0; k < p->num_keys; k++)
            if (strlen(p->keys[k]) == key->len && memcmp(p->keys[k], key->data ? key->data : "", key->len) == 0)
                want = k;
        if (want < 0) {
            if ((st = g3_json_skip_value(&j)) != G3_OK)
                goto json_error;
            continue;
        }
        if (j.pos >= j.n || j.s[j.pos] != '"') {
            g3_pre_fail(b, G3_ERR_FORMAT,
                        "line %llu: the value of \"%s\" is not a string (gpt3d takes one text string per key per line)",
                        (unsigned long long)unit_line, p->keys[want]);
            return G3_ERR_FORMAT;
        }
        vstart[want] = val->len;
        if ((st = g3_json_string(&j, val)) != G3_OK)
            goto json_error;
        vlen[want] = val->len - vstart[want];
        found[want] = 1;
    }
    g3_json_skip_ws(&j);
    if (j.pos != j.n) {
        j.why = "trailing characters after the JSON object (one object per line)";
        st = G3_ERR_FORMAT;
        goto json_error;
    }
    b->replaced += j.lone_surrogates;
    for (int k = 0; k < p->num_keys; k++) {
        if (!found[k]) {
            g3_pre_fail(b, G3_ERR_FORMAT,
                        "line %llu: the JSON object has no key \"%s\" (choose the text's key with --json-keys)",
                        (unsigned long long)unit_line, p->keys[k]);
            return G3_ERR_FORMAT;
        }
        if ((st = g3_pre_emit(p, b, k, cache, val->data + vstart[k], vlen[k])) != G3_OK) {
            g3_pre_fail(b, st, "out of memory");
            return st;
        }
    }
    b->docs++;
    return G3_OK;

json_error:
    if (st == G3_ERR_NO_MEMORY) {
        g3_pre_fail(b, st, "out of memory");
        return st;
    }
    g3_pre_fail(b, G3_ERR_FORMAT,
                "line %llu, column %zu: %s (each line must be one JSON object, e.g. {\"text\": \"...\"}; use --input-format text for plain text)",
                (unsigned long long)unit_line, j.pos + 1, j.why ? j.why : "invalid JSON");
    return G3_ERR_FORMAT;
}

/* Tokenize batch b: replace invalid UTF-8 once for the whole batch, then cut it into units
 * and turn each into documents.  A failure is left in b->st and b->err. */
static void g3_pre_tokenize(g3_pre_t *p, g3_pre_batch_t *b, g3_bpe_cache_t *cache, g3_buf_t *val,
                            g3_buf_t *key)
{
    const char *s = b->in;
    size_t n = b->in_len;
    uint64_t line = b->first_line;
    char *clean = NULL;
    size_t clean_len, replaced;
    g3_status_t st;

    for (int k = 0; k < p->num_keys; k++) {
        b->ids[k].len = 0;
        b->nsizes[k] = 0;
    }
    b->docs = b->skipped = b->replaced = 0;
    b->st = G3_OK;
    b->err[0] = '\0';

    if ((st = g3_utf8_sanitize(s, n, &clean, &clean_len, &replaced)) != G3_OK) {
        g3_pre_fail(b, st, "out of memory");
        return;
    }
    if (clean) {
        s = clean;
        n = clean_len;
        b->replaced += replaced;
    }

    size_t i = 0, start, end;
    uint64_t unit_line;
    while (i < n && g3_pre_next_unit(p->mode, s, n, &i, &line, &start, &end, &unit_line)) {
        if (p->mode == G3_PRE_JSONL)
            st = g3_pre_json_unit(p, b, cache, val, key, s, start, end, unit_line);
        else
            st = g3_pre_text_unit(p, b, cache, s, start, end);
        if (st != G3_OK)
            break;
    }
    free(clean);
}

static void *g3_pre_worker(void *arg)
{
    g3_pre_t *p = arg;
    g3_bpe_cache_t *cache = NULL;
    g3_buf_t val = { 0 }, key = { 0 };

    if (g3_bpe_cache_init(&cache) != G3_OK) {
        pthread_mutex_lock(&p->lock);
        p->read_st = G3_ERR_NO_MEMORY;
        p->eof = 1;
        pthread_cond_broadcast(&p->cond_done);
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->failed || (p->eof && p->carry_len == 0) || p->read_st != G3_OK)
            break;
        g3_pre_batch_t *b = &p->ring[p->next_seq % (uint64_t)p->ring_len];
        while (b->state != 0 && !p->failed)
            pthread_cond_wait(&p->cond_free, &p->lock);
        if (p->failed)
            break;
        if (b->state != 0 || b != &p->ring[p->next_seq % (uint64_t)p->ring_len])
            continue;   /* another worker took this slot meanwhile */
        if (!g3_pre_read(p, b)) {
            p->eof = 1;
            p->carry_len = 0;
            pthread_cond_broadcast(&p->cond_done);
            break;
        }
        b->seq = p->next_seq++;
        b->state = 1;
        pthread_mutex_unlock(&p->lock);
        g3_pre_tokenize(p, b, cache, &val, &key);
        pthread_mutex_lock(&p->lock);
        b->state = 2;
        pthread_cond_broadcast(&p->cond_done);
    }
    pthread_mutex_unlock(&p->lock);
    g3_buf_free(&val);
    g3_buf_free(&key);
    g3_bpe_cache_free(cache);
    return NULL;
}

/* Decide jsonl vs text from the first non-blank byte of buf[0..n). */
static g3_pre_mode_t g3_pre_sniff(const char *buf, size_t n, g3_pre_mode_t text_mode)
{
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        return c == '{' ? G3_PRE_JSONL : text_mode;
    }
    return text_mode;
}

/* ---- the run ------------------------------------------------------------- */

/* Open the input and read its first block: it decides the format (auto), and a UTF-8 byte
 * order mark at the start is dropped.  Sets p's reader state, mode and keys; what it got is
 * released by the caller (p->in, p->carry) on failure too. */
static g3_status_t g3_pre_open_input(g3_pre_t *p, const g3_pre_config_t *cfg)
{
    p->in_name = cfg->input;
    p->in = strcmp(cfg->input, "-") == 0 ? stdin : fopen(cfg->input, "rb");
    if (!p->in) {
        g3_error("gpt3d preprocess: cannot open --input '%s': %s", cfg->input, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    g3_pre_mode_t text_mode = cfg->text_docs == G3_PRE_DOCS_LINE ? G3_PRE_LINE
                              : cfg->text_docs == G3_PRE_DOCS_FILE ? G3_PRE_FILE : G3_PRE_PARAGRAPH;
    p->carry_cap = 2 * G3_PRE_BATCH;
    p->carry = malloc(p->carry_cap);
    if (!p->carry)
        return G3_ERR_NO_MEMORY;
    p->carry_len = fread(p->carry, 1, G3_PRE_BATCH, p->in);
    p->bytes_read = p->carry_len;
    if (p->carry_len < G3_PRE_BATCH) {
        if (ferror(p->in)) {
            g3_error("gpt3d preprocess: cannot read '%s': %s", cfg->input, strerror(errno));
            return G3_ERR_IO;
        }
        p->eof = 1;
    }
    if (p->carry_len >= 3 && memcmp(p->carry, "\xEF\xBB\xBF", 3) == 0) {
        memmove(p->carry, p->carry + 3, p->carry_len - 3);
        p->carry_len -= 3;
    }
    if (cfg->format == G3_PRE_FORMAT_JSONL)
        p->mode = G3_PRE_JSONL;
    else if (cfg->format == G3_PRE_FORMAT_TEXT)
        p->mode = text_mode;
    else
        p->mode = g3_pre_sniff(p->carry, p->carry_len, text_mode);
    if (p->mode == G3_PRE_JSONL) {
        p->num_keys = cfg->num_keys;
        p->keys = cfg->keys;
    } else {
        static char text_key[] = "text";
        static char *text_keys[] = { text_key };
        p->num_keys = 1;
        p->keys = text_keys;
    }
    struct stat sb;
    p->in_size = fstat(fileno(p->in), &sb) == 0 && S_ISREG(sb.st_mode) ? (double)sb.st_size : -1;
    p->carry_line = 1;
    return G3_OK;
}

/* One writer per key: writers[k] gets PREFIX_KEY_document.  On failure the writers opened
 * so far stay in writers[] for the caller to abort. */
static g3_status_t g3_pre_open_writers(const g3_pre_t *p, const char *prefix, g3_idx_dtype_t dtype,
                                       g3_idx_writer_t **writers)
{
    g3_status_t st;
    for (int k = 0; k < p->num_keys; k++) {
        char path[4096];
        if (snprintf(path, sizeof(path), "%s_%s_document", prefix, p->keys[k]) >= (int)sizeof(path)) {
            g3_error("gpt3d preprocess: --output-prefix is too long");
            return G3_ERR_INVALID_ARG;
        }
        if ((st = g3_idx_writer_open(path, dtype, &writers[k])) != G3_OK)
            return st;
    }
    return G3_OK;
}

/* The batch ring: 2 per worker and 2 more, so that workers never wait for the writer while
 * it writes one.  What was allocated stays for g3_pre_ring_free on failure. */
static g3_status_t g3_pre_ring_init(g3_pre_t *p, int workers)
{
    p->ring_len = 2 * workers + 2;
    p->ring = calloc((size_t)p->ring_len, sizeof(*p->ring));
    if (!p->ring)
        return G3_ERR_NO_MEMORY;
    for (int r = 0; r < p->ring_len; r++) {
        g3_pre_batch_t *b = &p->ring[r];
        b->ids = calloc((size_t)p->num_keys, sizeof(*b->ids));
        b->sizes = calloc((size_t)p->num_keys, sizeof(*b->sizes));
        b->nsizes = calloc((size_t)p->num_keys, sizeof(size_t));
        b->csizes = calloc((size_t)p->num_keys, sizeof(size_t));
        if (!b->ids || !b->sizes || !b->nsizes || !b->csizes)
            return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

static void g3_pre_ring_free(g3_pre_t *p)
{
    for (int r = 0; p->ring && r < p->ring_len; r++) {
        g3_pre_batch_t *b = &p->ring[r];
        free(b->in);
        for (int k = 0; k < p->num_keys; k++) {
            if (b->ids)
                g3_bpe_ids_free(&b->ids[k]);
            if (b->sizes)
                free(b->sizes[k]);
        }
        free(b->ids);
        free(b->sizes);
        free(b->nsizes);
        free(b->csizes);
    }
    free(p->ring);
    p->ring = NULL;
}

/* Write the batches in input order as the workers finish them, until the input ends or a
 * batch fails; progress every 5 s.  OUT: c->records, skipped, replaced (so far). */
static g3_status_t g3_pre_write_batches(g3_pre_t *p, g3_idx_writer_t **writers, double t0,
                                        g3_pre_counts_t *c)
{
    g3_status_t st = G3_OK;
    double last_report = t0;
    for (uint64_t seq = 0;; seq++) {
        g3_pre_batch_t *b = &p->ring[seq % (uint64_t)p->ring_len];
        pthread_mutex_lock(&p->lock);
        while (!(b->state == 2 && b->seq == seq) &&
               !(p->eof && p->carry_len == 0 && seq >= p->next_seq))
            pthread_cond_wait(&p->cond_done, &p->lock);
        int finished = !(b->state == 2 && b->seq == seq);
        pthread_mutex_unlock(&p->lock);
        if (finished)
            break;
        if (b->st != G3_OK) {
            g3_error("gpt3d preprocess: '%s' %s", p->in_name, b->err);
            return b->st;
        }
        for (int k = 0; k < p->num_keys && st == G3_OK; k++) {
            size_t off = 0;
            for (size_t d = 0; d < b->nsizes[k] && st == G3_OK; d++) {
                st = g3_idx_writer_add(writers[k], b->ids[k].ids + off, b->sizes[k][d]);
                off += b->sizes[k][d];
            }
        }
        if (st != G3_OK)
            return st;
        c->records += b->docs;
        c->skipped += b->skipped;
        c->replaced += b->replaced;
        pthread_mutex_lock(&p->lock);
        b->state = 0;
        pthread_cond_broadcast(&p->cond_free);
        double read_mb = (double)p->bytes_read / 1e6;
        pthread_mutex_unlock(&p->lock);
        double now = g3_clock_now();
        if (now - last_report >= 5.0) {
            last_report = now;
            if (p->in_size > 0)
                g3_info("preprocess: %llu documents, %.1f of %.1f MB (%.0f%%), %.2f MB/s",
                        (unsigned long long)c->records, read_mb, p->in_size / 1e6,
                        100.0 * read_mb * 1e6 / p->in_size, read_mb / (now - t0));
            else
                g3_info("preprocess: %llu documents, %.1f MB, %.2f MB/s",
                        (unsigned long long)c->records, read_mb, read_mb / (now - t0));
        }
    }
    return p->read_st;
}

/* Count what the writers hold, finish them (writers[k] becomes NULL) and write the
 * tokenizer sidecar beside each dataset.  OUT: c->documents, c->tokens */
static g3_status_t g3_pre_finish(const g3_pre_t *p, const char *prefix, const g3_tokid_t *tokid,
                                 g3_idx_writer_t **writers, g3_pre_counts_t *c)
{
    g3_status_t st = G3_OK;
    for (int k = 0; k < p->num_keys; k++) {
        c->tokens += g3_idx_writer_num_tokens(writers[k]);
        c->documents += g3_idx_writer_num_documents(writers[k]);
    }
    for (int k = 0; k < p->num_keys; k++) {
        g3_idx_writer_t *w = writers[k];
        writers[k] = NULL;
        if (st == G3_OK)
            st = g3_idx_writer_finish(w);
        else
            g3_idx_writer_abort(w);
    }
    for (int k = 0; k < p->num_keys && st == G3_OK; k++) {
        char *dp = NULL;
        if (asprintf(&dp, "%s_%s_document", prefix, p->keys[k]) < 0)
            return G3_ERR_NO_MEMORY;
        st = g3_tokid_write_sidecar(dp, tokid);
        free(dp);
    }
    return st;
}

/* Loads the tokenizer, logs its identity (recorded beside each dataset, data/tokid.h) and
 * sets p's tokenizer and end-of-document id.  OUT: *bpe_p, *tokid.
 * RET: G3_OK, or an error (logged; nothing is left to free). */
static g3_status_t g3_pre_tokenizer(const g3_pre_config_t *cfg, g3_pre_t *p, g3_bpe_t **bpe_p,
                                    g3_tokid_t *tokid)
{
    g3_bpe_t *bpe = NULL;
    char desc[512];
    g3_status_t st;

    if ((st = g3_bpe_load(cfg->vocab_file, cfg->merge_file, &bpe)) != G3_OK)
        return st;
    if ((st = g3_tokid_of_files(cfg->vocab_file, cfg->merge_file, tokid)) != G3_OK)
        goto err_free_bpe;
    g3_tokid_describe(tokid, desc, sizeof(desc));
    g3_info("preprocess: tokenizer %s", desc);
    p->bpe = bpe;
    p->eod = -1;
    if (cfg->append_eod) {
        p->eod = g3_bpe_eod_id(bpe);
        if (p->eod < 0) {
            g3_error("gpt3d preprocess: --append-eod, but the vocabulary '%s' has no \"<|endoftext|>\" token", cfg->vocab_file);
            st = G3_ERR_INVALID_ARG;
            goto err_free_bpe;
        }
    }
    *bpe_p = bpe;
    return G3_OK;

err_free_bpe:
    g3_bpe_free(bpe);
    return st;
}

g3_status_t g3_pre_run(const g3_pre_config_t *cfg, g3_pre_counts_t *counts)
{
    g3_bpe_t *bpe = NULL;
    g3_tokid_t tokid;
    g3_pre_t p;
    g3_pre_counts_t c;
    g3_idx_writer_t **writers = NULL;
    pthread_t *threads = NULL;
    int nthreads = 0;
    double t0 = 0;
    g3_status_t st;

    memset(&p, 0, sizeof(p));
    memset(&c, 0, sizeof(c));
    if ((st = g3_pre_tokenizer(cfg, &p, &bpe, &tokid)) != G3_OK)
        return st;
    if ((st = g3_pre_open_input(&p, cfg)) != G3_OK)
        goto err_close_input;

    writers = calloc((size_t)p.num_keys, sizeof(*writers));
    if (!writers) {
        st = G3_ERR_NO_MEMORY;
        goto err_close_input;
    }
    g3_idx_dtype_t dtype = g3_idx_dtype_for_vocab(g3_bpe_vocab_size(bpe));
    if ((st = g3_pre_open_writers(&p, cfg->output_prefix, dtype, writers)) != G3_OK)
        goto err_abort_writers;

    if ((st = g3_pre_ring_init(&p, cfg->workers)) != G3_OK)
        goto err_free_ring;
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond_free, NULL);
    pthread_cond_init(&p.cond_done, NULL);
    threads = calloc((size_t)cfg->workers, sizeof(*threads));
    if (!threads) {
        st = G3_ERR_NO_MEMORY;
        goto err_destroy_sync;
    }
    for (; nthreads < cfg->workers; nthreads++)
        if (pthread_create(&threads[nthreads], NULL, g3_pre_worker, &p) != 0) {
            g3_error("gpt3d preprocess: cannot start a worker thread: %s", strerror(errno));
            st = G3_ERR_NO_MEMORY;
            goto err_join;
        }
    g3_info("preprocess: %s -> %s_%s_document.{bin,idx} (%s, %d worker%s, dtype %s)", cfg->input,
            cfg->output_prefix, p.keys[0], p.mode == G3_PRE_JSONL ? "JSON lines" : "plain text",
            cfg->workers, cfg->workers == 1 ? "" : "s", g3_idx_dtype_name(dtype));

    t0 = g3_clock_now();
    st = g3_pre_write_batches(&p, writers, t0, &c);

err_join:
    pthread_mutex_lock(&p.lock);
    if (st != G3_OK)
        p.failed = 1;
    pthread_cond_broadcast(&p.cond_free);
    pthread_mutex_unlock(&p.lock);
    for (int t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    free(threads);
    if (st == G3_OK) {
        c.seconds = g3_clock_now() - t0;
        c.bytes_read = p.bytes_read;
        st = g3_pre_finish(&p, cfg->output_prefix, &tokid, writers, &c);
        if (st == G3_OK)
            *counts = c;
    }
err_destroy_sync:
    pthread_cond_destroy(&p.cond_free);
    pthread_cond_destroy(&p.cond_done);
    pthread_mutex_destroy(&p.lock);
err_free_ring:
    g3_pre_ring_free(&p);
err_abort_writers:
    for (int k = 0; writers && k < p.num_keys; k++)
        g3_idx_writer_abort(writers[k]);
    free(writers);
err_close_input:
    free(p.carry);
    if (p.in && p.in != stdin)
        fclose(p.in);
    g3_bpe_free(bpe);
    return st;
}
