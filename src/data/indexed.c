/* gpt3d data: Megatron MMIDIDX v1 reader and writer (see indexed.h). */
#define _GNU_SOURCE
#include "data/indexed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/mem.h"

static size_t g3_idx_dtype_size(int code)
{
    switch (code) {
    case G3_IDX_UINT8: case G3_IDX_INT8: return 1;
    case G3_IDX_INT16: case G3_IDX_UINT16: return 2;
    case G3_IDX_INT32: case G3_IDX_FLOAT32: return 4;
    case G3_IDX_INT64: case G3_IDX_FLOAT64: return 8;
    default: return 0;
    }
}

const char *g3_idx_dtype_name(int code)
{
    switch (code) {
    case G3_IDX_UINT8: return "uint8";
    case G3_IDX_INT8: return "int8";
    case G3_IDX_INT16: return "int16";
    case G3_IDX_INT32: return "int32";
    case G3_IDX_INT64: return "int64";
    case G3_IDX_FLOAT64: return "float64";
    case G3_IDX_FLOAT32: return "float32";
    case G3_IDX_UINT16: return "uint16";
    default: return "unknown";
    }
}

g3_idx_dtype_t g3_idx_dtype_for_vocab(int64_t vocab_size)
{
    return vocab_size < 65500 ? G3_IDX_UINT16 : G3_IDX_INT32;
}

/* Unaligned little-endian loads (the arrays start at offset 34). */
static inline uint64_t g3_idx_ld_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int64_t g3_idx_ld_i64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int32_t g3_idx_ld_i32(const unsigned char *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- reading ------------------------------------------------------------ */

struct g3_idx {
    char                *prefix;
    char                *idx_path, *bin_path;
    const unsigned char *idx_map;    /* (idx_len,) */
    size_t               idx_len;
    const unsigned char *bin_map;    /* (bin_len,); NULL when bin_len == 0 */
    size_t               bin_len;
    int                  dtype;
    size_t               itemsize;
    uint64_t             num_seq;    /* S */
    uint64_t             num_doc_idx;/* D */
    const unsigned char *sizes;      /* int32 (S,) unaligned */
    const unsigned char *pointers;   /* int64 (S,) unaligned */
    const unsigned char *doc_idx;    /* int64 (D,) unaligned */
    int64_t              max_token_bound;   /* -1 until computed */
    uint64_t             fingerprint;
};

static g3_status_t g3_idx_map(const char *path, const char *what, const unsigned char **map_p,
                              size_t *len_p, struct stat *st_p)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    void *map = NULL;

    if (fd < 0) {
        int e = errno;
        g3_error("cannot open the indexed dataset %s '%s': %s%s", what, path, strerror(e),
                 e == ENOENT ? " (--data-path takes the prefix without .bin/.idx; run 'gpt3d preprocess' to create one)" : "");
        return e == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    if (fstat(fd, &sb) != 0) {
        g3_error("cannot stat '%s': %s", path, strerror(errno));
        close(fd);
        return G3_ERR_IO;
    }
    if (sb.st_size > 0) {
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            g3_error("cannot memory-map '%s' (%lld bytes): %s", path, (long long)sb.st_size,
                     strerror(errno));
            close(fd);
            return G3_ERR_IO;
        }
    }
    close(fd);
    *map_p = map;
    *len_p = (size_t)sb.st_size;
    if (st_p)
        *st_p = sb;
    return G3_OK;
}

__extension__ typedef unsigned __int128 g3_u128_t;

/* n in decimal into buf (>= 40 bytes). */
static void g3_idx_u128_str(g3_u128_t n, char *buf)
{
    char tmp[48];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + (int)(n % 10));
        n /= 10;
    } while (n);
    for (int i = 0; i < k; i++)
        buf[i] = tmp[k - 1 - i];
    buf[k] = '\0';
}

/* RET: the integer item size (1, 2, 4 or 8) other than x->itemsize with which the pointers
 * lie back to back from byte 0 and fill the .bin exactly, or 0 when there is none. */
static size_t g3_idx_step_fits(const g3_idx_t *x)
{
    static const size_t steps[] = { 1, 2, 4, 8 };
    for (int k = 0; k < 4; k++) {
        size_t step = steps[k];
        uint64_t end = 0;
        uint64_t i;
        if (step == x->itemsize)
            continue;
        for (i = 0; i < x->num_seq; i++) {
            int32_t sz = g3_idx_ld_i32(x->sizes + 4 * i);
            int64_t ptr = g3_idx_ld_i64(x->pointers + 8 * i);
            if (sz < 0 || ptr < 0 || (uint64_t)ptr != end)
                break;
            end += (uint64_t)sz * step;
        }
        if (i == x->num_seq && end == x->bin_len)
            return step;
    }
    return 0;
}

/* When the pointers and the .bin fit another item size than the dtype byte's, the dtype byte
 * is what is wrong: say so (logged).  RET: 1 when it logged. */
static int g3_idx_dtype_diagnose(const g3_idx_t *x)
{
    size_t step = g3_idx_step_fits(x);
    if (!step)
        return 0;
    g3_error("indexed dataset '%s': its dtype byte (offset 17) is %d (%s, %zu byte%s per token), but its pointers and '%s' (%zu bytes) are laid out for %zu-byte tokens: the dtype byte was changed or the .idx belongs to other data; datasets for a vocabulary of fewer than 65500 ids have dtype 8 (uint16), larger ones 4 (int32): re-run 'gpt3d preprocess'",
             x->idx_path, x->dtype, g3_idx_dtype_name(x->dtype), x->itemsize,
             x->itemsize == 1 ? "" : "s", x->bin_path, x->bin_len, step);
    return 1;
}

/* Validate the mapped index's header (magic, version, dtype, counts) and that its arrays fill
 * the rest of the file exactly; set x's dtype, counts and array pointers.
 * RET: G3_ERR_FORMAT, G3_ERR_VERSION (logged). */
static g3_status_t g3_idx_validate_header(g3_idx_t *x)
{
    const unsigned char *m = x->idx_map;
    const char *f = x->idx_path;

    if (x->idx_len < G3_IDX_HEADER_LEN) {
        g3_error("indexed dataset '%s' is truncated: %zu bytes, shorter than the %d-byte header (magic, version, dtype, counts)",
                 f, x->idx_len, G3_IDX_HEADER_LEN);
        return G3_ERR_FORMAT;
    }
    if (memcmp(m, G3_IDX_MAGIC, G3_IDX_MAGIC_LEN) != 0) {
        g3_error("indexed dataset '%s': bad magic (expected \"MMIDIDX\\0\\0\" of Megatron's mmap indexed dataset); this is not an MMIDIDX .idx file (a Megatron 'lazy'/'cached' dataset? convert it with Megatron's tools or re-run 'gpt3d preprocess')",
                 f);
        return G3_ERR_FORMAT;
    }
    uint64_t version = g3_idx_ld_u64(m + 9);
    if (version != G3_IDX_VERSION) {
        g3_error("indexed dataset '%s': version %llu is not supported (this gpt3d reads MMIDIDX version %d)",
                 f, (unsigned long long)version, G3_IDX_VERSION);
        return G3_ERR_VERSION;
    }
    x->dtype = m[17];
    x->itemsize = g3_idx_dtype_size(x->dtype);
    if (x->itemsize == 0) {
        g3_error("indexed dataset '%s': unknown dtype code %d (known: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16)",
                 f, x->dtype);
        return G3_ERR_FORMAT;
    }
    if (x->dtype == G3_IDX_FLOAT32 || x->dtype == G3_IDX_FLOAT64) {
        g3_error("indexed dataset '%s': dtype %s holds floats, not token ids; tokenized text needs an integer dtype (re-run 'gpt3d preprocess')",
                 f, g3_idx_dtype_name(x->dtype));
        return G3_ERR_FORMAT;
    }
    x->num_seq = g3_idx_ld_u64(m + 18);
    x->num_doc_idx = g3_idx_ld_u64(m + 26);
    /* The arrays' size in exact (128-bit) arithmetic: the counts are whatever the file says,
     * up to 2^64 - 1 each, and a message must give the real byte count. */
    uint64_t avail = x->idx_len - G3_IDX_HEADER_LEN;
    g3_u128_t need = (g3_u128_t)12 * x->num_seq + (g3_u128_t)8 * x->num_doc_idx;
    if (need > avail) {
        char need_s[48];
        g3_idx_u128_str(need, need_s);
        g3_error("indexed dataset '%s' is truncated or corrupt: the header's sequence count %llu and document count %llu need %s bytes of arrays but the file has %llu after the header",
                 f, (unsigned long long)x->num_seq, (unsigned long long)x->num_doc_idx, need_s,
                 (unsigned long long)avail);
        return G3_ERR_FORMAT;
    }
    if (need != avail) {
        g3_error("indexed dataset '%s' is corrupt: %llu bytes of trailing data after the doc_idx array (header says %llu sequences, %llu document entries)",
                 f, (unsigned long long)(avail - (uint64_t)need),
                 (unsigned long long)x->num_seq, (unsigned long long)x->num_doc_idx);
        return G3_ERR_FORMAT;
    }
    x->sizes = m + G3_IDX_HEADER_LEN;
    x->pointers = x->sizes + 4 * x->num_seq;
    x->doc_idx = x->pointers + 8 * x->num_seq;
    return G3_OK;
}

/* Validate the index's sizes and pointers against the .bin.  RET: G3_ERR_FORMAT (logged). */
static g3_status_t g3_idx_validate_seqs(const g3_idx_t *x)
{
    const char *f = x->idx_path;

    /* sizes and pointers: the sequences lie back to back from byte 0 and fill .bin exactly,
     * as every writer (Megatron's, ours) makes them.  A gap or an overlap means a sizes or
     * pointers entry was changed, or the two files do not belong together: either way some
     * tokens would be dropped or read twice without a word.  Byte counts are unsigned (a
     * pointer can be anything up to 2^63 - 1; a size times the item size is < 2^34). */
    uint64_t prev_end = 0;
    for (uint64_t i = 0; i < x->num_seq; i++) {
        int32_t sz = g3_idx_ld_i32(x->sizes + 4 * i);
        int64_t ptr = g3_idx_ld_i64(x->pointers + 8 * i);
        if (sz < 0) {
            g3_error("indexed dataset '%s' is corrupt: sizes[%llu] = %d is negative",
                     f, (unsigned long long)i, sz);
            return G3_ERR_FORMAT;
        }
        if (ptr < 0 || (uint64_t)ptr != prev_end) {
            if (g3_idx_dtype_diagnose(x))
                return G3_ERR_FORMAT;
            if (i == 0)
                g3_error("indexed dataset '%s' is corrupt: pointers[0] = %lld, but the first sequence starts at byte 0 of '%s'; re-run 'gpt3d preprocess'",
                         f, (long long)ptr, x->bin_path);
            else
                g3_error(
                    "indexed dataset '%s' is corrupt: pointers[%llu] = %lld, but sequence %llu (pointers[%llu] = %lld, sizes[%llu] = %d tokens of %s) ends at byte %llu: a sizes or pointers entry was changed, or the .idx belongs to another .bin; re-run 'gpt3d preprocess'",
                    f, (unsigned long long)i, (long long)ptr, (unsigned long long)(i - 1),
                    (unsigned long long)(i - 1),
                    (long long)g3_idx_ld_i64(x->pointers + 8 * (i - 1)),
                    (unsigned long long)(i - 1), g3_idx_ld_i32(x->sizes + 4 * (i - 1)),
                    g3_idx_dtype_name(x->dtype), (unsigned long long)prev_end);
            return G3_ERR_FORMAT;
        }
        uint64_t end = (uint64_t)ptr + (uint64_t)sz * x->itemsize;
        if (end > x->bin_len) {
            if (g3_idx_dtype_diagnose(x))
                return G3_ERR_FORMAT;
            g3_error("indexed dataset '%s': pointers[%llu] = %lld with sizes[%llu] = %d ends at byte %llu, past the end of '%s' (%zu bytes); the .bin is truncated or belongs to another .idx",
                     f, (unsigned long long)i, (long long)ptr, (unsigned long long)i, sz,
                     (unsigned long long)end, x->bin_path, x->bin_len);
            return G3_ERR_FORMAT;
        }
        prev_end = end;
    }
    if (prev_end != x->bin_len) {
        if (g3_idx_dtype_diagnose(x))
            return G3_ERR_FORMAT;
        g3_error("indexed dataset '%s': its %llu sequences hold %llu bytes of %s tokens but '%s' has %zu bytes (%llu bytes unaccounted for): a sizes entry was lowered, or the .bin belongs to another .idx; re-run 'gpt3d preprocess'",
                 f, (unsigned long long)x->num_seq, (unsigned long long)prev_end,
                 g3_idx_dtype_name(x->dtype), x->bin_path, x->bin_len,
                 (unsigned long long)(x->bin_len - prev_end));
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* Validate the index's document index.  RET: G3_ERR_FORMAT (logged). */
static g3_status_t g3_idx_validate_docs(const g3_idx_t *x)
{
    const char *f = x->idx_path;

    /* doc_idx: starts at 0, non-decreasing, ends at S. */
    if (x->num_doc_idx < 1) {
        g3_error("indexed dataset '%s' is corrupt: the document index is empty (it must have documents + 1 entries, starting with 0)",
                 f);
        return G3_ERR_FORMAT;
    }
    int64_t prev = 0;
    for (uint64_t i = 0; i < x->num_doc_idx; i++) {
        int64_t d = g3_idx_ld_i64(x->doc_idx + 8 * i);
        if ((i == 0 && d != 0) || d < prev || (uint64_t)d > x->num_seq) {
            g3_error("indexed dataset '%s' is corrupt: doc_idx[%llu] = %lld is out of range (must start at 0, never decrease and stay <= %llu sequences)",
                     f, (unsigned long long)i, (long long)d, (unsigned long long)x->num_seq);
            return G3_ERR_FORMAT;
        }
        prev = d;
    }
    if ((uint64_t)prev != x->num_seq) {
        g3_error("indexed dataset '%s' is corrupt: the last doc_idx entry is %lld, not the sequence count %llu",
                 f, (long long)prev, (unsigned long long)x->num_seq);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* Validate the mapped index; RET G3_OK or logs the first bad field. */
static g3_status_t g3_idx_validate(g3_idx_t *x)
{
    g3_status_t st;

    if ((st = g3_idx_validate_header(x)) != G3_OK || (st = g3_idx_validate_seqs(x)) != G3_OK)
        return st;
    return g3_idx_validate_docs(x);
}

g3_status_t g3_idx_open(const char *prefix, g3_idx_t **idx_p)
{
    g3_idx_t *x = calloc(1, sizeof(*x));
    struct stat sb, bin_sb;
    g3_status_t st;
    size_t n = strlen(prefix);

    if (!x)
        return G3_ERR_NO_MEMORY;
    x->max_token_bound = -1;
    x->prefix = strdup(prefix);
    x->idx_path = malloc(n + 5);
    x->bin_path = malloc(n + 5);
    if (!x->prefix || !x->idx_path || !x->bin_path) {
        st = G3_ERR_NO_MEMORY;
        goto err_free;
    }
    memcpy(x->idx_path, prefix, n);
    memcpy(x->idx_path + n, ".idx", 5);
    memcpy(x->bin_path, prefix, n);
    memcpy(x->bin_path + n, ".bin", 5);
    if ((st = g3_idx_map(x->idx_path, "index", &x->idx_map, &x->idx_len, &sb)) != G3_OK)
        goto err_free;
    if ((st = g3_idx_map(x->bin_path, "data file", &x->bin_map, &x->bin_len, &bin_sb)) != G3_OK)
        goto err_free;
    if ((st = g3_idx_validate(x)) != G3_OK)
        goto err_free;
    /* Fingerprint: the content of header and sizes, and the identity of both files (size,
     * modification time): the sample index cache also holds what the token check found in
     * the .bin, so a .bin changed in place must not match its old cache. */
    uint64_t h = 0xcbf29ce484222325ULL, ids[6];
    ids[0] = (uint64_t)sb.st_size;
    ids[1] = (uint64_t)sb.st_mtim.tv_sec;
    ids[2] = (uint64_t)sb.st_mtim.tv_nsec;
    ids[3] = (uint64_t)x->bin_len;
    ids[4] = (uint64_t)bin_sb.st_mtim.tv_sec;
    ids[5] = (uint64_t)bin_sb.st_mtim.tv_nsec;
    h = g3_hash_fnv_words(x->idx_map, G3_IDX_HEADER_LEN + 4 * x->num_seq, h, 31);
    h = g3_hash_fnv_words(ids, sizeof(ids), h, 31);
    x->fingerprint = h;
    *idx_p = x;
    return G3_OK;

err_free:
    g3_idx_close(x);
    return st;
}

void g3_idx_close(g3_idx_t *x)
{
    if (!x)
        return;
    if (x->idx_map)
        munmap((void *)x->idx_map, x->idx_len);
    if (x->bin_map)
        munmap((void *)x->bin_map, x->bin_len);
    G3_FREE_ALL(x->prefix, x->idx_path, x->bin_path, x);
}

const char *g3_idx_prefix(const g3_idx_t *x) { return x->prefix; }
uint64_t g3_idx_num_sequences(const g3_idx_t *x) { return x->num_seq; }
uint64_t g3_idx_num_documents(const g3_idx_t *x) { return x->num_doc_idx - 1; }
int g3_idx_dtype(const g3_idx_t *x) { return x->dtype; }
uint64_t g3_idx_fingerprint(const g3_idx_t *x) { return x->fingerprint; }

int32_t g3_idx_size(const g3_idx_t *x, uint64_t i)
{
    return g3_idx_ld_i32(x->sizes + 4 * i);
}

static int64_t g3_idx_pointer(const g3_idx_t *x, uint64_t i)
{
    return g3_idx_ld_i64(x->pointers + 8 * i);
}

void g3_idx_read(const g3_idx_t *x, uint64_t i, uint64_t offset, uint64_t n, int32_t *out)
{
    const unsigned char *p = x->bin_map + g3_idx_pointer(x, i) + offset * x->itemsize;
    switch (x->dtype) {
    case G3_IDX_UINT16:
        for (uint64_t k = 0; k < n; k++) {
            uint16_t v;
            memcpy(&v, p + 2 * k, 2);
            out[k] = v;
        }
        break;
    case G3_IDX_INT32:
        memcpy(out, p, n * 4);
        break;
    case G3_IDX_UINT8:
        for (uint64_t k = 0; k < n; k++) out[k] = p[k];
        break;
    case G3_IDX_INT8:
        for (uint64_t k = 0; k < n; k++) out[k] = (int8_t)p[k];
        break;
    case G3_IDX_INT16:
        for (uint64_t k = 0; k < n; k++) {
            int16_t v;
            memcpy(&v, p + 2 * k, 2);
            out[k] = v;
        }
        break;
    case G3_IDX_INT64:
        for (uint64_t k = 0; k < n; k++)
            out[k] = (int32_t)g3_idx_ld_i64(p + 8 * k);
        break;
    default:
        break;   /* float dtypes are refused at open */
    }
}

/* The token bytes of sequences [first, end): they lie back to back (checked at open).
 * OUT: *p_p, *n_p (tokens). */
static void g3_idx_span(const g3_idx_t *x, uint64_t first, uint64_t end, const unsigned char **p_p,
                        uint64_t *n_p)
{
    uint64_t b0, b1;
    if (first >= end || first >= x->num_seq) {
        *p_p = x->bin_map;
        *n_p = 0;
        return;
    }
    b0 = (uint64_t)g3_idx_pointer(x, first);
    b1 = end >= x->num_seq ? x->bin_len : (uint64_t)g3_idx_pointer(x, end);
    *p_p = x->bin_map + b0;
    *n_p = (b1 - b0) / x->itemsize;
}

/* min and max of n tokens of one dtype with GCC's portable vector extension (32 bytes
 * at a time, SSE2/AVX2/NEON as the target has them): one pass at memory speed on one core.
 * The comparisons give all-ones lanes where true, so (a & m) | (b & ~m) picks per lane. */
#define G3_IDX_RANGE_KERNEL(name, type)                                                     \
    static void name(const unsigned char *bytes, uint64_t n, int64_t *lo, int64_t *hi)      \
    {                                                                                       \
        typedef type vec_t __attribute__((vector_size(32)));                                \
        enum { L = 32 / sizeof(type) };                                                     \
        vec_t mn, mx;                                                                       \
        type first, a, b;                                                                   \
        uint64_t i = 0;                                                                     \
        memcpy(&first, bytes, sizeof(type));                                                \
        for (int k = 0; k < L; k++)                                                         \
            mn[k] = mx[k] = first;                                                          \
        for (; i + L <= n; i += L) {                                                        \
            vec_t v, lt, gt;                                                                \
            memcpy(&v, bytes + i * sizeof(type), sizeof(v));                                \
            lt = (vec_t)(v < mn);                                                           \
            gt = (vec_t)(v > mx);                                                           \
            mn = (v & lt) | (mn & ~lt);                                                     \
            mx = (v & gt) | (mx & ~gt);                                                     \
        }                                                                                   \
        a = first;                                                                          \
        b = first;                                                                          \
        for (int k = 0; k < L; k++) {                                                       \
            a = mn[k] < a ? mn[k] : a;                                                      \
            b = mx[k] > b ? mx[k] : b;                                                      \
        }                                                                                   \
        for (; i < n; i++) {                                                                \
            type v;                                                                         \
            memcpy(&v, bytes + i * sizeof(type), sizeof(type));                             \
            a = v < a ? v : a;                                                              \
            b = v > b ? v : b;                                                              \
        }                                                                                   \
        *lo = (int64_t)a;                                                                   \
        *hi = (int64_t)b;                                                                   \
    }
G3_IDX_RANGE_KERNEL(g3_idx_range_u8, uint8_t)
G3_IDX_RANGE_KERNEL(g3_idx_range_i8, int8_t)
G3_IDX_RANGE_KERNEL(g3_idx_range_i16, int16_t)
G3_IDX_RANGE_KERNEL(g3_idx_range_u16, uint16_t)
G3_IDX_RANGE_KERNEL(g3_idx_range_i32, int32_t)
G3_IDX_RANGE_KERNEL(g3_idx_range_i64, int64_t)

/* min/max of n tokens at p (aligned) into *lo, *hi. */
static void g3_idx_range_any(int dtype, const unsigned char *p, uint64_t n, int64_t *lo,
                             int64_t *hi)
{
    switch (dtype) {
    case G3_IDX_UINT8:  g3_idx_range_u8(p, n, lo, hi); break;
    case G3_IDX_INT8:   g3_idx_range_i8(p, n, lo, hi); break;
    case G3_IDX_INT16:  g3_idx_range_i16(p, n, lo, hi); break;
    case G3_IDX_UINT16: g3_idx_range_u16(p, n, lo, hi); break;
    case G3_IDX_INT32:  g3_idx_range_i32(p, n, lo, hi); break;
    case G3_IDX_INT64:  g3_idx_range_i64(p, n, lo, hi); break;
    default:            *lo = 0; *hi = -1; break;   /* float dtypes are refused at open */
    }
}

/* The scan reads the .bin with pread in 256 KiB chunks (one buffer that stays in the L2 cache)
 * rather than through the mapping: copying from the page cache is several times faster than
 * faulting in every page of a mapping once, and the pages it reads are the ones training maps
 * next. */
#define G3_IDX_SCAN_CHUNK (256u << 10)

void g3_idx_token_range(const g3_idx_t *x, uint64_t first, uint64_t end, int64_t *min_p,
                        int64_t *max_p)
{
    const unsigned char *p;
    uint64_t n, bytes, off, done = 0;
    int64_t lo = 0, hi = -1;
    unsigned char *buf = NULL;
    int fd = -1;

    g3_idx_span(x, first, end, &p, &n);
    bytes = n * x->itemsize;
    off = (uint64_t)(p - x->bin_map);
    if (n > 0) {
        fd = open(x->bin_path, O_RDONLY | O_CLOEXEC);
        buf = fd >= 0 ? malloc(G3_IDX_SCAN_CHUNK) : NULL;
        if (buf)
            posix_fadvise(fd, (off_t)off, (off_t)bytes, POSIX_FADV_SEQUENTIAL);
    }
    while (done < bytes) {
        uint64_t c = bytes - done < G3_IDX_SCAN_CHUNK ? bytes - done : G3_IDX_SCAN_CHUNK;
        const unsigned char *q = p + done;
        int64_t l, h;
        if (buf) {
            ssize_t r = pread(fd, buf, c, (off_t)(off + done));
            if (r > 0 && (uint64_t)r % x->itemsize == 0) {
                c = (uint64_t)r;
                q = buf;
            }   /* else: read this chunk through the mapping */
        }
        g3_idx_range_any(x->dtype, q, c / x->itemsize, &l, &h);
        if (done == 0 || l < lo)
            lo = l;
        if (done == 0 || h > hi)
            hi = h;
        done += c;
    }
    free(buf);
    if (fd >= 0)
        close(fd);
    *min_p = lo;
    *max_p = hi;
}

int g3_idx_token_find_outside(const g3_idx_t *x, uint64_t first, uint64_t end, int64_t lo,
                              int64_t hi, uint64_t *seq_p, uint64_t *pos_p, int64_t *value_p)
{
    int64_t buf[512];
    if (end > x->num_seq)
        end = x->num_seq;
    for (uint64_t i = first; i < end; i++) {
        uint64_t sz = (uint64_t)g3_idx_size(x, i);
        const unsigned char *p = x->bin_map + g3_idx_pointer(x, i);
        for (uint64_t o = 0; o < sz; o += 512) {
            uint64_t c = sz - o < 512 ? sz - o : 512;
            for (uint64_t k = 0; k < c; k++) {
                const unsigned char *q = p + (o + k) * x->itemsize;
                switch (x->dtype) {
                case G3_IDX_UINT8:  buf[k] = q[0]; break;
                case G3_IDX_INT8:   buf[k] = (int8_t)q[0]; break;
                case G3_IDX_INT16:  { int16_t v; memcpy(&v, q, 2); buf[k] = v; break; }
                case G3_IDX_UINT16: { uint16_t v; memcpy(&v, q, 2); buf[k] = v; break; }
                case G3_IDX_INT32:  { int32_t v; memcpy(&v, q, 4); buf[k] = v; break; }
                default: buf[k] = g3_idx_ld_i64(q); break;
                }
            }
            for (uint64_t k = 0; k < c; k++)
                if (buf[k] < lo || buf[k] >= hi) {
                    *seq_p = i;
                    *pos_p = o + k;
                    *value_p = buf[k];
                    return 1;
                }
        }
    }
    return 0;
}

int64_t g3_idx_max_token_bound(g3_idx_t *x)
{
    if (x->max_token_bound < 0) {
        int64_t lo, hi;
        g3_idx_token_range(x, 0, x->num_seq, &lo, &hi);
        x->max_token_bound = hi + 1;
    }
    return x->max_token_bound;
}

/* ---- writing ------------------------------------------------------------ */

struct g3_idx_writer {
    char           *idx_path, *bin_path, *idx_tmp, *bin_tmp;
    FILE           *bin;
    g3_idx_dtype_t  dtype;
    size_t          itemsize;
    int32_t        *sizes;      /* (n,) */
    size_t          n, cap;
    uint64_t        tokens;
    unsigned char  *buf;        /* conversion buffer */
    size_t          buf_cap;
};

static char *g3_idx_strcat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (!s)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

static void g3_idx_writer_free(g3_idx_writer_t *w)
{
    G3_FREE_ALL(w->idx_path, w->bin_path, w->idx_tmp, w->bin_tmp, w->sizes, w->buf, w);
}

g3_status_t g3_idx_writer_open(const char *prefix, g3_idx_dtype_t dtype, g3_idx_writer_t **w_p)
{
    g3_idx_writer_t *w = calloc(1, sizeof(*w));
    char suffix[64];

    if (!w)
        return G3_ERR_NO_MEMORY;
    if (dtype != G3_IDX_UINT16 && dtype != G3_IDX_INT32) {
        g3_error("indexed dataset writer: dtype %s is not supported (uint16 or int32)",
                 g3_idx_dtype_name(dtype));
        free(w);
        return G3_ERR_INVALID_ARG;
    }
    w->dtype = dtype;
    w->itemsize = g3_idx_dtype_size(dtype);
    snprintf(suffix, sizeof(suffix), ".tmp.%ld", (long)getpid());
    w->idx_path = g3_idx_strcat3(prefix, ".idx", "");
    w->bin_path = g3_idx_strcat3(prefix, ".bin", "");
    w->idx_tmp = g3_idx_strcat3(prefix, ".idx", suffix);
    w->bin_tmp = g3_idx_strcat3(prefix, ".bin", suffix);
    if (!w->idx_path || !w->bin_path || !w->idx_tmp || !w->bin_tmp) {
        g3_idx_writer_free(w);
        return G3_ERR_NO_MEMORY;
    }
    w->bin = fopen(w->bin_tmp, "wb");
    if (!w->bin) {
        g3_error("cannot create '%s': %s (is the directory of --output-prefix writable?)",
                 w->bin_tmp, strerror(errno));
        g3_idx_writer_free(w);
        return G3_ERR_IO;
    }
    setvbuf(w->bin, NULL, _IOFBF, 1 << 20);
    *w_p = w;
    return G3_OK;
}

g3_status_t g3_idx_writer_add(g3_idx_writer_t *w, const int32_t *ids, size_t n)
{
    if (n > INT32_MAX) {
        g3_error("a document of %zu tokens does not fit the int32 size field of '%s'", n, w->idx_path);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_mem_grow(&w->sizes, &w->cap, w->n, sizeof(*w->sizes), 65536) != G3_OK)
        return G3_ERR_NO_MEMORY;
    if (w->dtype == G3_IDX_UINT16) {
        if (n * 2 > w->buf_cap) {
            unsigned char *b = realloc(w->buf, n * 2);
            if (!b)
                return G3_ERR_NO_MEMORY;
            w->buf = b;
            w->buf_cap = n * 2;
        }
        for (size_t k = 0; k < n; k++) {
            if (ids[k] < 0 || ids[k] > 65535) {
                g3_error("token id %d does not fit the uint16 dtype of '%s'", ids[k], w->bin_path);
                return G3_ERR_INVALID_ARG;
            }
            uint16_t v = (uint16_t)ids[k];
            memcpy(w->buf + 2 * k, &v, 2);
        }
        if (n && fwrite(w->buf, 2, n, w->bin) != n)
            goto err_write;
    } else if (n && fwrite(ids, 4, n, w->bin) != n) {
        goto err_write;
    }
    w->sizes[w->n++] = (int32_t)n;
    w->tokens += n;
    return G3_OK;

err_write:
    g3_error("cannot write '%s': %s", w->bin_tmp, strerror(errno));
    return G3_ERR_IO;
}

uint64_t g3_idx_writer_num_documents(const g3_idx_writer_t *w) { return w->n; }
uint64_t g3_idx_writer_num_tokens(const g3_idx_writer_t *w) { return w->tokens; }

static g3_status_t g3_idx_write_all(FILE *f, const void *p, size_t n, const char *path)
{
    if (n && fwrite(p, 1, n, f) != n) {
        g3_error("cannot write '%s': %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    return G3_OK;
}

static g3_status_t g3_idx_fclose_synced(FILE *f, const char *path)
{
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        g3_error("cannot write '%s': %s", path, strerror(e));
        return G3_ERR_IO;
    }
    return G3_OK;
}

g3_status_t g3_idx_writer_finish(g3_idx_writer_t *w)
{
    g3_status_t st;
    FILE *f = NULL;
    unsigned char hdr[G3_IDX_HEADER_LEN];
    uint64_t v, S = w->n, D = w->n + 1;

    st = g3_idx_fclose_synced(w->bin, w->bin_tmp);
    w->bin = NULL;
    if (st != G3_OK)
        goto err_abort;
    f = fopen(w->idx_tmp, "wb");
    if (!f) {
        g3_error("cannot create '%s': %s", w->idx_tmp, strerror(errno));
        st = G3_ERR_IO;
        goto err_abort;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    memcpy(hdr, G3_IDX_MAGIC, G3_IDX_MAGIC_LEN);
    v = G3_IDX_VERSION;
    memcpy(hdr + 9, &v, 8);
    hdr[17] = (unsigned char)w->dtype;
    memcpy(hdr + 18, &S, 8);
    memcpy(hdr + 26, &D, 8);
    if ((st = g3_idx_write_all(f, hdr, sizeof(hdr), w->idx_tmp)) != G3_OK)
        goto err_close;
    if ((st = g3_idx_write_all(f, w->sizes, S * 4, w->idx_tmp)) != G3_OK)
        goto err_close;
    int64_t ptr = 0;
    for (uint64_t i = 0; i < S; i++) {
        if ((st = g3_idx_write_all(f, &ptr, 8, w->idx_tmp)) != G3_OK)
            goto err_close;
        ptr += (int64_t)w->sizes[i] * (int64_t)w->itemsize;
    }
    for (uint64_t i = 0; i < D; i++) {
        int64_t d = (int64_t)i;
        if ((st = g3_idx_write_all(f, &d, 8, w->idx_tmp)) != G3_OK)
            goto err_close;
    }
    st = g3_idx_fclose_synced(f, w->idx_tmp);
    f = NULL;
    if (st != G3_OK)
        goto err_abort;
    /* .bin first: a reader that finds the new .idx also finds its .bin. */
    if (rename(w->bin_tmp, w->bin_path) != 0 || rename(w->idx_tmp, w->idx_path) != 0) {
        g3_error("cannot rename the finished dataset into '%s' / '%s': %s", w->bin_path,
                 w->idx_path, strerror(errno));
        st = G3_ERR_IO;
        goto err_abort;
    }
    g3_idx_writer_free(w);
    return G3_OK;

err_close:
    fclose(f);
err_abort:
    g3_idx_writer_abort(w);
    return st;
}

void g3_idx_writer_abort(g3_idx_writer_t *w)
{
    if (!w)
        return;
    if (w->bin)
        fclose(w->bin);
    unlink(w->bin_tmp);
    unlink(w->idx_tmp);
    g3_idx_writer_free(w);
}
