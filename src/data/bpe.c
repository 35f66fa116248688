/* gpt3d data: the GPT-2 byte-level BPE tokenizer (see bpe.h).
 *
 * Tokens are kept as raw bytes: the GPT-2 files spell each byte as one
 * printable code point (bytes_to_unicode), which is undone at load time, so
 * a word starts as one symbol per byte and merges join adjacent symbols by
 * rank.  Merging keeps the candidate pairs in one bucket per rank and
 * processes one rank at a time in left-to-right order, which is exactly
 * GPT-2's "merge every occurrence of the lowest-ranked pair, left to right"
 * loop in near-linear time and bounded memory instead of O(n^2) (long words
 * without spaces, e.g. CJK text or a 50 MB run of letters, stay fast). */
#include "data/bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/mem.h"
#include "data/json.h"
#include "data/unicode_tables.h"

/* ---- hashing ----------------------------------------------------------- */

static inline uint64_t g3_bpe_hash_bytes(const unsigned char *p, size_t n)
{
    /* FNV-1a folded 8 bytes at a time, then mixed (g3_hash_mix64). */
    return g3_hash_mix64(g3_hash_fnv_words(p, n, 0xcbf29ce484222325ULL ^ (uint64_t)n, 29));
}


/* ---- the tokenizer ------------------------------------------------------ */

typedef struct {
    uint64_t key;      /* (left id << 32) | right id; UINT64_MAX = empty slot */
    int32_t  rank;     /* line order in the merges file                       */
    int32_t  merged;   /* id of left + right                                  */
} g3_bpe_merge_t;

struct g3_bpe {
    int32_t         vocab_size;
    int32_t         eod_id;
    char           *tok_bytes;    /* all token byte strings back to back     */
    size_t         *tok_off;      /* (V + 1,) offsets into tok_bytes         */
    int32_t        *vocab_slots;  /* open-addressing bytes -> id, -1 = empty  */
    size_t          vocab_mask;
    int32_t         byte_id[256]; /* id of each single-byte token             */
    g3_bpe_merge_t *merges;       /* open addressing, merge_mask + 1 slots    */
    size_t          merge_mask;
    int32_t         num_merges;
};

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves,
 * the other 68 bytes are shifted to U+0100 + n in byte order.
 * OUT: cp_of_byte[256]; byte_of_cp[324] (-1 where no byte). */
static void g3_bpe_byte_table(unsigned cp_of_byte[256], int byte_of_cp[324])
{
    unsigned n = 0;
    for (int i = 0; i < 324; i++)
        byte_of_cp[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        cp_of_byte[b] = printable ? b : 256 + n++;
        byte_of_cp[cp_of_byte[b]] = (int)b;
    }
}

static const char *g3_bpe_tok(const g3_bpe_t *bpe, int32_t id, size_t *len)
{
    *len = bpe->tok_off[id + 1] - bpe->tok_off[id];
    return bpe->tok_bytes + bpe->tok_off[id];
}

static int32_t g3_bpe_vocab_find(const g3_bpe_t *bpe, const char *p, size_t n)
{
    size_t i = g3_bpe_hash_bytes((const unsigned char *)p, n) & bpe->vocab_mask;
    for (;; i = (i + 1) & bpe->vocab_mask) {
        int32_t id = bpe->vocab_slots[i];
        size_t len;
        if (id < 0)
            return -1;
        const char *t = g3_bpe_tok(bpe, id, &len);
        if (len == n && memcmp(t, p, n) == 0)
            return id;
    }
}

static inline const g3_bpe_merge_t *g3_bpe_merge_find(const g3_bpe_t *bpe, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t i = g3_hash_mix64(key) & bpe->merge_mask;
    for (;; i = (i + 1) & bpe->merge_mask) {
        const g3_bpe_merge_t *m = &bpe->merges[i];
        if (m->key == key)
            return m;
        if (m->key == UINT64_MAX)
            return NULL;
    }
}

g3_status_t g3_read_file(const char *path, const char *what, char **data_p, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    g3_status_t st;
    if (!f) {
        g3_error("cannot open the %s '%s': %s", what, path, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    st = g3_read_stream(f, data_p, len_p);
    if (st == G3_ERR_NO_MEMORY)
        g3_error("out of memory reading the %s '%s'", what, path);
    else if (st != G3_OK)
        g3_error("cannot read the %s '%s': %s", what, path, strerror(errno));
    fclose(f);
    return st;
}

/* Undo bytes_to_unicode on a decoded JSON key / merges word.
 * RET: 0 when some code point is not one of the 256 byte stand-ins. */
static int g3_bpe_unbyte(const char *u8, size_t n, const int byte_of_cp[324], g3_buf_t *out)
{
    const unsigned char *s = (const unsigned char *)u8;
    out->len = 0;
    for (size_t i = 0; i < n;) {
        unsigned cp;
        if (s[i] < 0x80) {
            cp = s[i++];
        } else if ((s[i] & 0xE0) == 0xC0 && i + 1 < n) {
            cp = ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
            i += 2;
        } else {
            return 0;   /* all stand-ins are below U+0800 */
        }
        if (cp >= 324 || byte_of_cp[cp] < 0)
            return 0;
        unsigned char b = (unsigned char)byte_of_cp[cp];
        if (g3_buf_append(out, &b, 1) != G3_OK)
            return 0;
    }
    return 1;
}

static size_t g3_bpe_pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* Line number of byte offset pos in text (1-based). */
/* Where pos is in a vocabulary file, for a message: "line L, column C (byte B), in the entry
 * of key "K"" (a JSON file of one line is a megabyte long: the line alone says nothing).  The
 * key (NULL: none read yet) is shown up to 40 bytes, bytes outside printable ASCII as \xNN.
 * OUT: buf.  RET: buf. */
static const char *g3_bpe_vocab_where(const char *text, size_t pos, const g3_buf_t *key, char *buf,
                                      size_t size)
{
    size_t line = 1, col = 1, n;
    char k[200];
    size_t kl = 0;

    for (size_t i = 0; i < pos; i++) {
        col = text[i] == '\n' ? 1 : col + 1;
        line += text[i] == '\n';
    }
    for (size_t i = 0; key && key->data && i < key->len && i < 40 && kl + 5 < sizeof(k); i++) {
        unsigned char c = (unsigned char)key->data[i];
        kl += (size_t)snprintf(k + kl, sizeof(k) - kl, c >= 0x20 && c < 0x7f && c != '"' ? "%c" : "\\x%02x", c);
    }
    k[kl] = '\0';
    n = (size_t)snprintf(buf, size, "line %zu, column %zu (byte %zu)", line, col, pos);
    if (key && key->data && n < size)
        snprintf(buf + n, size - n, ", in the entry of key \"%s%s\"", k, key->len > 40 ? "..." : "");
    return buf;
}

/* The vocabulary's tokens in file order: token i has id ids[i] and the bytes
 * all.data[offs[i] .. offs[i+1]). */
typedef struct {
    int32_t *ids;    /* (n,) */
    size_t *offs;    /* (n + 1,) */
    g3_buf_t all;    /* the tokens' bytes, one after another */
    size_t n;
} g3_bpe_vocab_list_t;

static void g3_bpe_vocab_list_free(g3_bpe_vocab_list_t *v)
{
    free(v->ids);
    free(v->offs);
    g3_buf_free(&v->all);
}

/* Read the vocabulary file's JSON object (text, len bytes) into v: each key unbyted from GPT-2's
 * byte alphabet, with its id, in file order.  Errors are logged with where in the file.
 * RET: G3_ERR_FORMAT, G3_ERR_NO_MEMORY. */
static g3_status_t g3_bpe_vocab_parse(const char *path, const char *text, size_t len,
                                      const int byte_of_cp[324], g3_bpe_vocab_list_t *v)
{
    g3_status_t st;
    g3_buf_t key = { 0 }, raw = { 0 };
    size_t cap = 0;
    int first = 1;
    g3_json_t j = { text, len, 0, NULL, 0 };

    /* Pass 1: collect (bytes, id) pairs in file order. */
    for (;;) {
        long long id;
        st = g3_json_object_next(&j, &first, &key);
        if (st == G3_ERR_NOT_FOUND) {
            st = G3_OK;
            break;
        }
        if (st != G3_OK)
            goto err_syntax;
        if ((st = g3_json_int(&j, &id)) != G3_OK)
            goto err_syntax;
        if (id < 0 || id > INT32_MAX - 1) {
            char where[400];
            g3_error("vocabulary file '%s' %s: token id %lld is out of range (0 .. %d)", path,
                     g3_bpe_vocab_where(text, j.pos, &key, where, sizeof(where)), id,
                     INT32_MAX - 1);
            st = G3_ERR_FORMAT;
            goto err_free;
        }
        if (!g3_bpe_unbyte(key.data ? key.data : "", key.len, byte_of_cp, &raw)) {
            char where[400];
            g3_error(
                "vocabulary file '%s' %s: token %lld is not spelled in GPT-2's byte alphabet (is this a GPT-2 encoder.json / vocab.json?)",
                path, g3_bpe_vocab_where(text, j.pos, &key, where, sizeof(where)), id);
            st = G3_ERR_FORMAT;
            goto err_free;
        }
        if (v->n == cap) {
            cap = cap ? cap * 2 : 65536;
            int32_t *ni = realloc(v->ids, cap * sizeof(*v->ids));
            if (ni) v->ids = ni;
            size_t *no = ni ? realloc(v->offs, (cap + 1) * sizeof(*v->offs)) : NULL;
            if (!no) {
                st = G3_ERR_NO_MEMORY;
                g3_error("out of memory loading the vocabulary '%s'", path);
                goto err_free;
            }
            v->offs = no;
        }
        v->ids[v->n] = (int32_t)id;
        v->offs[v->n] = v->all.len;
        if ((st = g3_buf_append(&v->all, raw.data ? raw.data : "", raw.len)) != G3_OK) {
            g3_error("out of memory loading the vocabulary '%s'", path);
            goto err_free;
        }
        v->n++;
    }
    g3_json_skip_ws(&j);
    if (j.pos != len) {
        j.why = "trailing data after the JSON object";
        st = G3_ERR_FORMAT;
        goto err_syntax;
    }
    if (v->n == 0) {
        g3_error("vocabulary file '%s' has no tokens", path);
        st = G3_ERR_FORMAT;
        goto err_free;
    }
    v->offs[v->n] = v->all.len;
    goto err_free;   /* free the temporaries */

err_syntax:
    if (st == G3_ERR_FORMAT) {
        char where[400];
        g3_error(
            "vocabulary file '%s' %s: %s (expected a JSON object mapping token strings to ids, like GPT-2's encoder.json)",
            path, g3_bpe_vocab_where(text, j.pos, first ? NULL : &key, where, sizeof(where)),
            j.why ? (strcmp(j.why, "bad number") == 0 ? "the token id is not a number" : j.why)
                  : "syntax error");
    }
    else
        g3_error("out of memory loading the vocabulary '%s'", path);
err_free:
    g3_buf_free(&key);
    g3_buf_free(&raw);
    return st;
}

/* Place the tokens of v by id into bpe->tok_off / tok_bytes; the ids must be exactly
 * 0..n-1, each once.  RET: G3_ERR_FORMAT, G3_ERR_NO_MEMORY. */
static g3_status_t g3_bpe_vocab_place(g3_bpe_t *bpe, const char *path,
                                      const g3_bpe_vocab_list_t *v)
{
    g3_status_t st = G3_OK;
    size_t n = v->n;

    /* Pass 2: place tokens by id; ids must be exactly 0..n-1. */
    bpe->vocab_size = (int32_t)n;
    bpe->tok_off = calloc(n + 1, sizeof(*bpe->tok_off));
    bpe->tok_bytes = malloc(v->all.len + 1);
    size_t *seen_len = calloc(n, sizeof(size_t));
    size_t *seen_at = calloc(n, sizeof(size_t));
    if (!bpe->tok_off || !bpe->tok_bytes || !seen_len || !seen_at) {
        st = G3_ERR_NO_MEMORY;
        g3_error("out of memory loading the vocabulary '%s'", path);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t id = v->ids[i];
        if ((size_t)id >= n) {
            g3_error("vocabulary file '%s': token id %d is >= the number of tokens (%zu); ids must be 0..%zu with no gaps",
                     path, id, n, n - 1);
            st = G3_ERR_FORMAT;
        } else if (seen_len[id]) {
            g3_error("vocabulary file '%s': token id %d appears twice", path, id);
            st = G3_ERR_FORMAT;
        } else {
            seen_len[id] = v->offs[i + 1] - v->offs[i] + 1;   /* +1: mark seen */
            seen_at[id] = v->offs[i];
        }
        if (st != G3_OK)
            goto cleanup;
    }
    size_t off = 0;
    for (size_t id = 0; id < n; id++) {
        size_t l = seen_len[id] - 1;
        bpe->tok_off[id] = off;
        memcpy(bpe->tok_bytes + off, v->all.data + seen_at[id], l);
        off += l;
    }
    bpe->tok_off[n] = off;
cleanup:
    free(seen_len);
    free(seen_at);
    return st;
}

/* Build bpe's bytes -> id table over its placed tokens, and find the single-byte tokens and
 * <|endoftext|>.  RET: G3_ERR_FORMAT (two tokens of the same bytes, a byte with no token),
 * G3_ERR_NO_MEMORY. */
static g3_status_t g3_bpe_vocab_index(g3_bpe_t *bpe, const char *path)
{
    size_t n = (size_t)bpe->vocab_size;

    /* Pass 3: the bytes -> id table, and the single-byte tokens. */
    bpe->vocab_mask = g3_bpe_pow2_at_least(n * 2) - 1;
    bpe->vocab_slots = malloc((bpe->vocab_mask + 1) * sizeof(int32_t));
    if (!bpe->vocab_slots) {
        g3_error("out of memory loading the vocabulary '%s'", path);
        return G3_ERR_NO_MEMORY;
    }
    memset(bpe->vocab_slots, 0xff, (bpe->vocab_mask + 1) * sizeof(int32_t));
    for (int32_t id = 0; id < (int32_t)n; id++) {
        size_t l;
        const char *t = g3_bpe_tok(bpe, id, &l);
        if (g3_bpe_vocab_find(bpe, t, l) >= 0) {
            g3_error("vocabulary file '%s': token id %d repeats the bytes of an earlier token", path, id);
            return G3_ERR_FORMAT;
        }
        size_t i = g3_bpe_hash_bytes((const unsigned char *)t, l) & bpe->vocab_mask;
        while (bpe->vocab_slots[i] >= 0)
            i = (i + 1) & bpe->vocab_mask;
        bpe->vocab_slots[i] = id;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        bpe->byte_id[b] = g3_bpe_vocab_find(bpe, &c, 1);
        if (bpe->byte_id[b] < 0) {
            g3_error("vocabulary file '%s' has no token for byte 0x%02x; a byte-level BPE vocabulary needs all 256", path, b);
            return G3_ERR_FORMAT;
        }
    }
    bpe->eod_id = g3_bpe_vocab_find(bpe, "<|endoftext|>", 13);
    return G3_OK;
}

static g3_status_t g3_bpe_load_vocab(g3_bpe_t *bpe, const char *path, const int byte_of_cp[324])
{
    char *text = NULL;
    size_t len;
    g3_status_t st = g3_read_file(path, "vocabulary file (--vocab-file)", &text, &len);
    g3_bpe_vocab_list_t v = { 0 };

    if (st != G3_OK)
        return st;
    if ((st = g3_bpe_vocab_parse(path, text, len, byte_of_cp, &v)) == G3_OK
        && (st = g3_bpe_vocab_place(bpe, path, &v)) == G3_OK)
        st = g3_bpe_vocab_index(bpe, path);
    g3_bpe_vocab_list_free(&v);
    free(text);
    return st;
}

/* Scratch of the merges reader: the two tokens of a line and their join, unbyted, and which
 * tokens some merge so far makes. */
typedef struct {
    g3_buf_t a, b, ab;
    unsigned char *made;   /* (V,) 1: some merge so far makes this token */
} g3_bpe_merge_scratch_t;

/* Add the merge of line `line` (l, ll bytes, no newline) of the merges file to bpe's table:
 * its two tokens and their join must be in the vocabulary and each part made by an earlier
 * merge (or one byte).  A repeated merge keeps its first rank.  RET: G3_ERR_FORMAT,
 * G3_ERR_NO_MEMORY. */
static g3_status_t g3_bpe_merge_add(g3_bpe_t *bpe, const char *path, const char *vocab_path,
                                    size_t line, const char *l, size_t ll,
                                    const int byte_of_cp[324], g3_bpe_merge_scratch_t *s)
{
    const char *sp = memchr(l, ' ', ll);
    if (!sp || sp == l || sp == l + ll - 1 || memchr(sp + 1, ' ', (size_t)(l + ll - sp - 1))) {
        g3_error("merges file '%s' line %zu: expected two tokens separated by one space, like GPT-2's vocab.bpe / merges.txt",
                 path, line);
        return G3_ERR_FORMAT;
    }
    if (!g3_bpe_unbyte(l, (size_t)(sp - l), byte_of_cp, &s->a)
        || !g3_bpe_unbyte(sp + 1, (size_t)(l + ll - sp - 1), byte_of_cp, &s->b)) {
        g3_error("merges file '%s' line %zu: a token is not spelled in GPT-2's byte alphabet", path, line);
        return G3_ERR_FORMAT;
    }
    s->ab.len = 0;
    if (g3_buf_append(&s->ab, s->a.data, s->a.len) != G3_OK ||
        g3_buf_append(&s->ab, s->b.data, s->b.len) != G3_OK)
        return G3_ERR_NO_MEMORY;
    int32_t ia = g3_bpe_vocab_find(bpe, s->a.data, s->a.len);
    int32_t ib = g3_bpe_vocab_find(bpe, s->b.data, s->b.len);
    int32_t iab = g3_bpe_vocab_find(bpe, s->ab.data, s->ab.len);
    if (ia < 0 || ib < 0 || iab < 0) {
        g3_error("merges file '%s' line %zu: '%.*s' uses a token that is not in the vocabulary (do --vocab-file and --merge-file belong together?)",
                 path, line, (int)ll, l);
        return G3_ERR_FORMAT;
    }
    /* A merge joins symbols that exist by then: single bytes, or the results of earlier
     * merges (BPE learns them in this order).  Shuffled merges, or merges from another
     * tokenizer that happen to use tokens of this vocabulary, fail here. */
    for (int k = 0; k < 2; k++) {
        int32_t part = k ? ib : ia;
        size_t plen;
        g3_bpe_tok(bpe, part, &plen);
        if (plen > 1 && !s->made[part]) {
            g3_error(
                "merges file '%s' line %zu: '%.*s' joins '%.*s', which no earlier merge makes: the merges are out of order (shuffled?) or do not belong to --vocab-file %s",
                path, line, (int)ll, l, (int)(k ? l + ll - sp - 1 : sp - l), k ? sp + 1 : l,
                vocab_path);
            return G3_ERR_FORMAT;
        }
    }
    if (!s->made[iab])
        s->made[iab] = 1;
    uint64_t key = ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib;
    size_t i = g3_hash_mix64(key) & bpe->merge_mask;
    while (bpe->merges[i].key != UINT64_MAX && bpe->merges[i].key != key)
        i = (i + 1) & bpe->merge_mask;
    if (bpe->merges[i].key == key)
        return G3_OK;   /* a repeated merge: the first (lowest) rank wins, as in GPT-2 */
    bpe->merges[i].key = key;
    bpe->merges[i].rank = bpe->num_merges++;
    bpe->merges[i].merged = iab;
    return G3_OK;
}

/* Every vocabulary token of two or more bytes is made by some merge, except special
 * tokens spelled <...> (GPT-2's <|endoftext|>): otherwise the merges file was cut short
 * or belongs to another vocabulary, and those tokens could never be produced.
 * made: (V,) 1 where a merge makes the token.  RET: G3_ERR_FORMAT. */
static g3_status_t g3_bpe_merges_check_made(const g3_bpe_t *bpe, const char *path,
                                            const char *vocab_path, const unsigned char *made)
{
    size_t unmade = 0;
    int32_t first = -1;
    for (int32_t id = 0; id < bpe->vocab_size; id++) {
        size_t tl;
        const char *t = g3_bpe_tok(bpe, id, &tl);
        if (tl < 2 || made[id] || (t[0] == '<' && t[tl - 1] == '>'))
            continue;
        if (first < 0)
            first = id;
        unmade++;
    }
    if (unmade) {
        size_t tl;
        const char *t = g3_bpe_tok(bpe, first, &tl);
        g3_error("merges file '%s' makes none of %zu tokens of the vocabulary --vocab-file %s (the first: id %d, %zu bytes '%.*s'): the merges file was cut short or belongs to another vocabulary; pass the merges file made with it",
                 path, unmade, vocab_path, first, tl, (int)(tl > 40 ? 40 : tl), t);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

static g3_status_t g3_bpe_load_merges(g3_bpe_t *bpe, const char *path, const char *vocab_path,
                                      const int byte_of_cp[324])
{
    char *text = NULL;
    size_t len;
    g3_status_t st = g3_read_file(path, "merges file (--merge-file)", &text, &len);
    g3_bpe_merge_scratch_t s = { 0 };
    size_t lines = 0, line = 0;

    if (st != G3_OK)
        return st;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    bpe->merge_mask = g3_bpe_pow2_at_least((lines + 1) * 2 + 16) - 1;
    bpe->merges = malloc((bpe->merge_mask + 1) * sizeof(*bpe->merges));
    if (!bpe->merges) {
        g3_error("out of memory loading the merges '%s'", path);
        st = G3_ERR_NO_MEMORY;
        goto err_free;
    }
    for (size_t i = 0; i <= bpe->merge_mask; i++)
        bpe->merges[i].key = UINT64_MAX;
    s.made = calloc((size_t)bpe->vocab_size, sizeof(*s.made));
    if (!s.made) {
        g3_error("out of memory loading the merges '%s'", path);
        st = G3_ERR_NO_MEMORY;
        goto err_free;
    }

    for (size_t pos = 0; pos < len;) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        line++;
        size_t e = end;
        if (e > pos && text[e - 1] == '\r')
            e--;
        const char *l = text + pos;
        size_t ll = e - pos;
        pos = end + 1;
        if (ll == 0 || (line == 1 && ll >= 8 && memcmp(l, "#version", 8) == 0))
            continue;
        if ((st = g3_bpe_merge_add(bpe, path, vocab_path, line, l, ll, byte_of_cp, &s)) != G3_OK)
            goto err_free;
    }
    if (bpe->num_merges == 0) {
        g3_error("merges file '%s' has no merges", path);
        st = G3_ERR_FORMAT;
        goto err_free;
    }
    st = g3_bpe_merges_check_made(bpe, path, vocab_path, s.made);
err_free:
    free(s.made);
    g3_buf_free(&s.a);
    g3_buf_free(&s.b);
    g3_buf_free(&s.ab);
    free(text);
    return st;
}

g3_status_t g3_bpe_load(const char *vocab_file, const char *merge_file, g3_bpe_t **bpe_p)
{
    unsigned cp_of_byte[256];
    int byte_of_cp[324];
    g3_status_t st;
    g3_bpe_t *bpe = calloc(1, sizeof(*bpe));

    if (!bpe)
        return G3_ERR_NO_MEMORY;
    g3_bpe_byte_table(cp_of_byte, byte_of_cp);
    if ((st = g3_bpe_load_vocab(bpe, vocab_file, byte_of_cp)) != G3_OK)
        goto err_free_bpe;
    if ((st = g3_bpe_load_merges(bpe, merge_file, vocab_file, byte_of_cp)) != G3_OK)
        goto err_free_bpe;
    g3_ucs_class(0x4E00);   /* build the class table now, not in the first encode */
    *bpe_p = bpe;
    return G3_OK;

err_free_bpe:
    g3_bpe_free(bpe);
    return st;
}

void g3_bpe_free(g3_bpe_t *bpe)
{
    if (!bpe)
        return;
    G3_FREE_ALL(bpe->tok_bytes, bpe->tok_off, bpe->vocab_slots, bpe->merges, bpe);
}

int32_t g3_bpe_vocab_size(const g3_bpe_t *bpe) { return bpe->vocab_size; }
int32_t g3_bpe_eod_id(const g3_bpe_t *bpe) { return bpe->eod_id; }

const char *g3_bpe_token_bytes(const g3_bpe_t *bpe, int32_t id, size_t *len_p)
{
    if (id < 0 || id >= bpe->vocab_size)
        return NULL;
    return g3_bpe_tok(bpe, id, len_p);
}

/* ---- UTF-8 -------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s[0..n) (Unicode Table 3-7),
 * or 0 when it is ill-formed; *sub_p gets the length of its maximal
 * ill-formed subpart then (>= 1), which is what one U+FFFD replaces. */
static inline size_t g3_bpe_utf8_seq(const unsigned char *s, size_t n, size_t *sub_p)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;   /* range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) { need = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 3;
    else if (c == 0xED) { need = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 3;
    else if (c == 0xF0) { need = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) { need = 4; hi = 0x8F; }
    else {
        *sub_p = 1;
        return 0;
    }
    size_t k = 1;
    for (; k < need; k++) {
        if (k >= n)
            break;
        unsigned char x = s[k];
        if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF))
            break;
    }
    if (k == need)
        return need;
    *sub_p = k;
    return 0;
}

size_t g3_utf8_validate(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, sub;
    while (i < len) {
        /* ASCII fast path, 8 bytes at a time. */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        size_t k = g3_bpe_utf8_seq(s + i, len - i, &sub);
        if (k == 0)
            return i;
        i += k;
    }
    return len;
}

g3_status_t g3_utf8_sanitize(const char *text, size_t len, char **out_p, size_t *out_len_p,
                             size_t *replaced_p)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t first_bad = g3_utf8_validate(text, len);
    g3_buf_t out = { 0 };
    size_t replaced = 0, i = first_bad, sub = 1;

    *out_p = NULL;
    *out_len_p = len;
    *replaced_p = 0;
    if (first_bad == len)
        return G3_OK;
    if (g3_buf_reserve(&out, len + len / 2 + 16) != G3_OK ||
        g3_buf_append(&out, text, first_bad) != G3_OK)
        goto err_no_memory;
    while (i < len) {
        size_t start = i;
        while (i < len) {
            size_t k = g3_bpe_utf8_seq(s + i, len - i, &sub);
            if (k == 0)
                break;
            i += k;
        }
        if (i > start && g3_buf_append(&out, s + start, i - start) != G3_OK)
            goto err_no_memory;
        if (i < len) {
            if (g3_buf_append(&out, "\xEF\xBF\xBD", 3) != G3_OK)
                goto err_no_memory;
            replaced++;
            i += sub;
        }
    }
    *out_p = out.data;
    *out_len_p = out.len;
    *replaced_p = replaced;
    return G3_OK;

err_no_memory:
    g3_buf_free(&out);
    return G3_ERR_NO_MEMORY;
}

/* ---- pre-tokenisation --------------------------------------------------- */

/* Class of every ASCII byte (letters, digits, \t\n\v\f\r and space). */
static const unsigned char g3_ascii_class[128] = {
    ['\t'] = G3_UCS_SPACE, ['\n'] = G3_UCS_SPACE, ['\v'] = G3_UCS_SPACE, ['\f'] = G3_UCS_SPACE,
    ['\r'] = G3_UCS_SPACE, [' '] = G3_UCS_SPACE,
    ['0'] = G3_UCS_NUMBER, ['1'] = G3_UCS_NUMBER, ['2'] = G3_UCS_NUMBER, ['3'] = G3_UCS_NUMBER,
    ['4'] = G3_UCS_NUMBER, ['5'] = G3_UCS_NUMBER, ['6'] = G3_UCS_NUMBER, ['7'] = G3_UCS_NUMBER,
    ['8'] = G3_UCS_NUMBER, ['9'] = G3_UCS_NUMBER,
#define L(c) [c] = G3_UCS_LETTER
    L('A'), L('B'), L('C'), L('D'), L('E'), L('F'), L('G'), L('H'), L('I'), L('J'), L('K'),
    L('L'), L('M'), L('N'), L('O'), L('P'), L('Q'), L('R'), L('S'), L('T'), L('U'), L('V'),
    L('W'), L('X'), L('Y'), L('Z'),
    L('a'), L('b'), L('c'), L('d'), L('e'), L('f'), L('g'), L('h'), L('i'), L('j'), L('k'),
    L('l'), L('m'), L('n'), L('o'), L('p'), L('q'), L('r'), L('s'), L('t'), L('u'), L('v'),
    L('w'), L('x'), L('y'), L('z'),
#undef L
};

/* Class of the character at s[i] (i < n) and its byte length in *len.
 * An ill-formed byte counts as one OTHER character of length 1, so any
 * byte string can be pre-tokenised (valid text never takes that path). */
static inline g3_ucs_class_t g3_bpe_class_at(const unsigned char *s, size_t i, size_t n,
                                             size_t *len)
{
    unsigned char c = s[i];
    if (c < 0x80) {
        *len = 1;
        return (g3_ucs_class_t)g3_ascii_class[c];
    }
    size_t sub, k = g3_bpe_utf8_seq(s + i, n - i, &sub);
    uint32_t cp;
    if (k == 0) {
        *len = 1;
        return G3_UCS_OTHER;
    }
    *len = k;
    if (k == 2)
        cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
    else if (k == 3)
        cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
    else
        cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6)
             | (s[i + 3] & 0x3Fu);
    return g3_ucs_class(cp);
}

/* End of the run of characters of class cls starting at i. */
static inline size_t g3_bpe_run_end(const unsigned char *s, size_t i, size_t n, g3_ucs_class_t cls)
{
    size_t len;
    while (i < n && g3_bpe_class_at(s, i, n, &len) == cls)
        i += len;
    return i;
}

/* RET: the end of the regex match that starts at i (i < n), following
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * alternative by alternative. */
static size_t g3_bpe_piece_end(const unsigned char *s, size_t i, size_t n)
{
    size_t len0, len1;
    g3_ucs_class_t c0 = g3_bpe_class_at(s, i, n, &len0);

    if (s[i] == '\'' && i + 1 < n) {
        unsigned char a = s[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if (i + 2 < n) {
            unsigned char b = s[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    if (s[i] == ' ' && i + 1 < n) {
        g3_ucs_class_t c1 = g3_bpe_class_at(s, i + 1, n, &len1);
        if (c1 != G3_UCS_SPACE)   /* " ?" then a letter, number or other run */
            return g3_bpe_run_end(s, i + 1 + len1, n, c1);
    }
    if (c0 != G3_UCS_SPACE)
        return g3_bpe_run_end(s, i + len0, n, c0);
    /* Whitespace: \s+(?!\S) leaves the last blank of a run that is followed
     * by a non-blank for the next piece (" word"); a single blank before a
     * non-blank is taken by the final \s+. */
    size_t j = g3_bpe_run_end(s, i + len0, n, G3_UCS_SPACE);
    if (j == n)
        return n;
    size_t last = i, k = i;   /* start of the last character of the run */
    while (k < j) {
        last = k;
        g3_bpe_class_at(s, k, n, &len1);
        k += len1;
    }
    return last > i ? last : j;
}

/* ---- merging ------------------------------------------------------------ */

/* One merge candidate in a rank's bucket: the position of its left symbol, and the next
 * entry of the same bucket (or of the free list), -1 ending the list. */
typedef struct {
    int32_t pos;
    int32_t link;
} g3_bpe_ent_t;

typedef struct {
    uint64_t key_hash;   /* 0 = empty slot                                   */
    uint32_t key_off;    /* into arena: key bytes, then ids                   */
    uint16_t key_len;
    uint16_t num_ids;
} g3_bpe_slot_t;

struct g3_bpe_cache {
    g3_bpe_slot_t *slots;
    size_t         mask;
    size_t         used;
    char          *arena;
    size_t         arena_len, arena_cap;
    /* scratch for merging one word: the symbols as a linked list */
    int32_t       *tok, *next, *prev;   /* (m,) */
    size_t         scratch_cap;         /* symbols */
    /* the candidates, one bucket per merge rank: a bucket queue (bits: which ranks hold
     * candidates, sum: which 64-rank words of bits are non-zero) */
    int32_t       *head;                /* (num_merges,) first entry of each rank, -1: none */
    uint64_t      *bits, *sum;          /* (num_merges / 64,), (num_merges / 4096,)          */
    int32_t        nranks;              /* ranks the bucket arrays cover                     */
    g3_bpe_ent_t  *ent;                 /* (ent_cap,) bucket entries and the free list       */
    int32_t        ent_cap, ent_used, ent_free;
    int32_t       *round;               /* (m,) the positions of one rank, sorted            */
};

#define G3_BPE_CACHE_SLOTS    (1u << 18)
#define G3_BPE_CACHE_ARENA    (32u << 20)
#define G3_BPE_CACHE_MAX_KEY  128

g3_status_t g3_bpe_cache_init(g3_bpe_cache_t **cache_p)
{
    g3_bpe_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return G3_ERR_NO_MEMORY;
    c->mask = G3_BPE_CACHE_SLOTS - 1;
    c->slots = calloc(G3_BPE_CACHE_SLOTS, sizeof(*c->slots));
    c->arena_cap = 1 << 20;
    c->arena = malloc(c->arena_cap);
    c->ent_free = -1;
    if (!c->slots || !c->arena) {
        g3_bpe_cache_free(c);
        return G3_ERR_NO_MEMORY;
    }
    *cache_p = c;
    return G3_OK;
}

void g3_bpe_cache_free(g3_bpe_cache_t *c)
{
    if (!c)
        return;
    G3_FREE_ALL(c->slots, c->arena, c->tok, c->next, c->prev, c->head, c->bits, c->sum, c->ent,
                c->round, c);
}

/* The scratch for a word of m symbols and a vocabulary of nranks merges. */
static g3_status_t g3_bpe_scratch(g3_bpe_cache_t *c, size_t m, int32_t nranks)
{
    if (nranks > c->nranks) {
        size_t nw = ((size_t)nranks + 63) / 64, ns = (nw + 63) / 64;
        int32_t *h = realloc(c->head, (size_t)nranks * sizeof(int32_t));
        if (h) c->head = h;
        uint64_t *b = h ? calloc(nw, sizeof(uint64_t)) : NULL;
        uint64_t *su = b ? calloc(ns, sizeof(uint64_t)) : NULL;
        if (!su) {
            free(b);
            return G3_ERR_NO_MEMORY;
        }
        free(c->bits);
        free(c->sum);
        c->bits = b;
        c->sum = su;
        for (int32_t r = 0; r < nranks; r++)
            c->head[r] = -1;
        c->nranks = nranks;
    }
    if (m <= c->scratch_cap)
        return G3_OK;
    size_t cap = g3_bpe_pow2_at_least(m);
    int32_t *t = realloc(c->tok, cap * sizeof(int32_t));
    if (t) c->tok = t;
    int32_t *nx = t ? realloc(c->next, cap * sizeof(int32_t)) : NULL;
    if (nx) c->next = nx;
    int32_t *pv = nx ? realloc(c->prev, cap * sizeof(int32_t)) : NULL;
    if (pv) c->prev = pv;
    int32_t *rd = pv ? realloc(c->round, cap * sizeof(int32_t)) : NULL;
    if (!rd)
        return G3_ERR_NO_MEMORY;
    c->round = rd;
    c->scratch_cap = cap;
    return G3_OK;
}

/* Add the candidate at pos to rank r's bucket. */
static g3_status_t g3_bpe_bucket_push(g3_bpe_cache_t *c, int32_t r, int32_t pos)
{
    int32_t e = c->ent_free;
    if (e >= 0) {
        c->ent_free = c->ent[e].link;
    } else {
        if (c->ent_used == c->ent_cap) {
            int32_t cap = c->ent_cap ? c->ent_cap * 2 : 1024;
            g3_bpe_ent_t *n = cap > 0 ? realloc(c->ent, (size_t)cap * sizeof(*n)) : NULL;
            if (!n)
                return G3_ERR_NO_MEMORY;
            c->ent = n;
            c->ent_cap = cap;
        }
        e = c->ent_used++;
    }
    c->ent[e].pos = pos;
    c->ent[e].link = c->head[r];
    c->head[r] = e;
    c->bits[r >> 6] |= (uint64_t)1 << (r & 63);
    c->sum[r >> 12] |= (uint64_t)1 << ((r >> 6) & 63);
    return G3_OK;
}

/* The lowest rank with candidates, -1 when none is left. */
static int32_t g3_bpe_bucket_min(const g3_bpe_cache_t *c)
{
    size_t ns = (((size_t)c->nranks + 63) / 64 + 63) / 64;
    for (size_t i = 0; i < ns; i++) {
        if (!c->sum[i])
            continue;
        size_t w = i * 64 + (size_t)__builtin_ctzll(c->sum[i]);
        return (int32_t)(w * 64 + (size_t)__builtin_ctzll(c->bits[w]));
    }
    return -1;
}

static int g3_bpe_int32_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Empty rank r's bucket into c->round, sorted by position; RET: how many. */
static int32_t g3_bpe_bucket_take(g3_bpe_cache_t *c, int32_t r)
{
    int32_t k = 0, asc = 1, desc = 1;
    for (int32_t e = c->head[r], nx; e >= 0; e = nx) {
        nx = c->ent[e].link;
        c->round[k] = c->ent[e].pos;
        if (k > 0) {
            asc &= c->round[k - 1] < c->round[k];
            desc &= c->round[k - 1] > c->round[k];
        }
        k++;
        c->ent[e].link = c->ent_free;
        c->ent_free = e;
    }
    c->head[r] = -1;
    c->bits[r >> 6] &= ~((uint64_t)1 << (r & 63));
    if (!c->bits[r >> 6])
        c->sum[r >> 12] &= ~((uint64_t)1 << ((r >> 6) & 63));
    /* the entries come newest first, so a bucket filled left to right comes reversed */
    if (desc) {
        for (int32_t i = 0, j = k - 1; i < j; i++, j--) {
            int32_t t = c->round[i];
            c->round[i] = c->round[j];
            c->round[j] = t;
        }
    } else if (!asc) {
        qsort(c->round, (size_t)k, sizeof(int32_t), g3_bpe_int32_cmp);
    }
    return k;
}

/* The candidate of the pair that starts at symbol p (if it has a merge) into its bucket. */
static g3_status_t g3_bpe_consider(const g3_bpe_t *bpe, g3_bpe_cache_t *c, int32_t p, int32_t n)
{
    int32_t q;
    if (p < 0)
        return G3_OK;   /* no symbol to the left */
    q = c->next[p];
    if (q >= n)
        return G3_OK;
    const g3_bpe_merge_t *mg = g3_bpe_merge_find(bpe, c->tok[p], c->tok[q]);
    return mg ? g3_bpe_bucket_push(c, mg->rank, p) : G3_OK;
}

/* BPE-merge one pre-token of m bytes and append its ids to out.
 *
 * GPT-2's loop: while some adjacent pair has a merge, take the lowest-ranked pair and merge
 * every occurrence of it, left to right, in one pass over the word.  Here every adjacent
 * pair with a merge waits in the bucket of its rank; each round takes the lowest non-empty
 * bucket, sorts its positions and merges those whose pair is still that rank's pair (a
 * merge to its left may have consumed a symbol).  A merge creates at most two new pairs,
 * which go to their own buckets: a round never creates its own pair (the merged token is
 * longer than either half), so the rounds are exactly GPT-2's.  Time: O(m) bucket
 * operations plus the sorting of each round's positions, O(m log m) at worst; memory: 12
 * bytes per symbol, 8 per live candidate, 4 per position of the largest round. */
static g3_status_t g3_bpe_word(const g3_bpe_t *bpe, g3_bpe_cache_t *c, const unsigned char *w,
                               size_t m, g3_bpe_ids_t *out)
{
    g3_status_t st = G3_OK;
    int32_t r;

    if (m > INT32_MAX / 2)
        return G3_ERR_INVALID_ARG;
    if (g3_bpe_scratch(c, m, bpe->num_merges) != G3_OK)
        return G3_ERR_NO_MEMORY;
    int32_t *tok = c->tok, *next = c->next, *prev = c->prev;
    int32_t n = (int32_t)m;
    for (int32_t i = 0; i < n; i++) {
        tok[i] = bpe->byte_id[w[i]];
        next[i] = i + 1;      /* n = no next */
        prev[i] = i - 1;      /* -1 = no prev */
    }
    for (int32_t i = 0; i + 1 < n && st == G3_OK; i++)
        st = g3_bpe_consider(bpe, c, i, n);

    while (st == G3_OK && (r = g3_bpe_bucket_min(c)) >= 0) {
        int32_t k = g3_bpe_bucket_take(c, r);
        for (int32_t j = 0; j < k && st == G3_OK; j++) {
            int32_t p = c->round[j], q = next[p];
            if (prev[p] == -2 || q >= n)
                continue;   /* consumed by a merge to its left */
            const g3_bpe_merge_t *mg = g3_bpe_merge_find(bpe, tok[p], tok[q]);
            if (!mg || mg->rank != r)
                continue;   /* its right symbol was merged away: not this pair any more */
            tok[p] = mg->merged;
            next[p] = next[q];
            if (next[q] < n)
                prev[next[q]] = p;
            prev[q] = -2;   /* dead */
            tok[q] = -1;
            st = g3_bpe_consider(bpe, c, prev[p], n);
            if (st == G3_OK)
                st = g3_bpe_consider(bpe, c, p, n);
        }
    }
    if (st != G3_OK) {   /* out of memory: leave the buckets empty for the next word */
        while ((r = g3_bpe_bucket_min(c)) >= 0)
            (void)g3_bpe_bucket_take(c, r);
        return st;
    }
    size_t count = 0;
    for (int32_t i = 0; i < n; i = next[i])
        count++;
    if (g3_mem_reserve(&out->ids, &out->cap, out->len + count, sizeof(int32_t), 1024) != G3_OK)
        return G3_ERR_NO_MEMORY;
    for (int32_t i = 0; i < n; i = next[i])
        out->ids[out->len++] = tok[i];
    return G3_OK;
}

/* Encode one pre-token through the cache. */
static g3_status_t g3_bpe_piece(const g3_bpe_t *bpe, g3_bpe_cache_t *c, const unsigned char *w,
                                size_t m, g3_bpe_ids_t *out)
{
    if (m == 1)
        return g3_bpe_ids_push(out, bpe->byte_id[w[0]]);
    if (m > G3_BPE_CACHE_MAX_KEY)
        return g3_bpe_word(bpe, c, w, m, out);

    uint64_t h = g3_bpe_hash_bytes(w, m) | 1;
    size_t i = h & c->mask;
    for (;; i = (i + 1) & c->mask) {
        g3_bpe_slot_t *s = &c->slots[i];
        if (s->key_hash == 0)
            break;
        if (s->key_hash == h && s->key_len == m && memcmp(c->arena + s->key_off, w, m) == 0) {
            int32_t ids[G3_BPE_CACHE_MAX_KEY];
            memcpy(ids, c->arena + s->key_off + ((m + 3) & ~(size_t)3),
                   s->num_ids * sizeof(int32_t));
            if (g3_mem_reserve(&out->ids, &out->cap, out->len + s->num_ids, sizeof(int32_t),
                               1024) != G3_OK)
                return G3_ERR_NO_MEMORY;
            memcpy(out->ids + out->len, ids, s->num_ids * sizeof(int32_t));
            out->len += s->num_ids;
            return G3_OK;
        }
    }
    size_t before = out->len;
    g3_status_t st = g3_bpe_word(bpe, c, w, m, out);
    if (st != G3_OK)
        return st;
    size_t nids = out->len - before;
    size_t need = ((m + 3) & ~(size_t)3) + nids * sizeof(int32_t);
    if (c->used >= c->mask / 2 || c->arena_len + need > G3_BPE_CACHE_ARENA) {
        /* Full: start over (cheap, and keeps memory bounded). */
        memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
        c->used = 0;
        c->arena_len = 0;
        i = h & c->mask;
    }
    if (c->arena_len + need > c->arena_cap) {
        size_t cap = c->arena_cap * 2;
        while (cap < c->arena_len + need)
            cap *= 2;
        char *a = realloc(c->arena, cap);
        if (!a)
            return G3_OK;   /* not caching is fine */
        c->arena = a;
        c->arena_cap = cap;
    }
    g3_bpe_slot_t *s = &c->slots[i];
    s->key_hash = h;
    s->key_off = (uint32_t)c->arena_len;
    s->key_len = (uint16_t)m;
    s->num_ids = (uint16_t)nids;
    memcpy(c->arena + c->arena_len, w, m);
    memcpy(c->arena + c->arena_len + ((m + 3) & ~(size_t)3), out->ids + before,
           nids * sizeof(int32_t));
    c->arena_len += need;
    c->used++;
    return G3_OK;
}

/* Encode any bytes (ill-formed ones as single OTHER characters). */
static g3_status_t g3_bpe_encode_any(const g3_bpe_t *bpe, g3_bpe_cache_t *c, const char *text,
                                     size_t len, g3_bpe_ids_t *out)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t e = g3_bpe_piece_end(s, i, len);
        g3_status_t st = g3_bpe_piece(bpe, c, s + i, e - i, out);
        if (st != G3_OK)
            return st;
        i = e;
    }
    return G3_OK;
}

g3_status_t g3_bpe_encode(const g3_bpe_t *bpe, g3_bpe_cache_t *cache, const char *text,
                          size_t len, g3_bpe_ids_t *out, size_t *bad_offset_p)
{
    size_t bad = g3_utf8_validate(text, len);
    if (bad != len) {
        if (bad_offset_p)
            *bad_offset_p = bad;
        return G3_ERR_FORMAT;
    }
    return g3_bpe_encode_any(bpe, cache, text, len, out);
}

g3_status_t g3_bpe_encode_bytes(const g3_bpe_t *bpe, g3_bpe_cache_t *cache, const char *text,
                                size_t len, g3_bpe_ids_t *out)
{
    return g3_bpe_encode_any(bpe, cache, text, len, out);
}

g3_status_t g3_bpe_decode(const g3_bpe_t *bpe, const int32_t *ids, size_t n, char **out_p,
                          size_t *out_len_p)
{
    g3_buf_t out = { 0 };
    for (size_t i = 0; i < n; i++) {
        size_t l;
        if (ids[i] < 0 || ids[i] >= bpe->vocab_size) {
            g3_error("token id %d at position %zu is outside the vocabulary (0..%d)", ids[i], i,
                     bpe->vocab_size - 1);
            g3_buf_free(&out);
            return G3_ERR_INVALID_ARG;
        }
        const char *t = g3_bpe_tok(bpe, ids[i], &l);
        if (g3_buf_append(&out, t, l) != G3_OK) {
            g3_buf_free(&out);
            return G3_ERR_NO_MEMORY;
        }
    }
    if (!out.data && g3_buf_append(&out, "", 0) != G3_OK)
        return G3_ERR_NO_MEMORY;
    *out_p = out.data;
    *out_len_p = out.len;
    return G3_OK;
}

void g3_bpe_ids_free(g3_bpe_ids_t *ids)
{
    free(ids->ids);
    ids->ids = NULL;
    ids->len = ids->cap = 0;
}

g3_status_t g3_bpe_vocab_info(const char *vocab_file, int64_t *vocab_size_p, int64_t *eod_id_p)
{
    unsigned cp_of_byte[256];
    int byte_of_cp[324];
    g3_bpe_t *bpe = calloc(1, sizeof(*bpe));
    g3_status_t st;

    if (!bpe)
        return G3_ERR_NO_MEMORY;
    g3_bpe_byte_table(cp_of_byte, byte_of_cp);
    st = g3_bpe_load_vocab(bpe, vocab_file, byte_of_cp);
    if (st == G3_OK) {
        *vocab_size_p = bpe->vocab_size;
        *eod_id_p = bpe->eod_id;
    }
    g3_bpe_free(bpe);
    return st;
}
