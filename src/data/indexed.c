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

#include "core/log.h"

size_t g3_idx_dtype_size(int code)
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
static inline uint64_t g3_ld_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int64_t g3_ld_i64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int32_t g3_ld_i32(const unsigned char *p)
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

static uint64_t g3_idx_hash(const unsigned char *p, size_t n, uint64_t h)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 31;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Validate the mapped index; RET G3_OK or logs the first bad field. */
static g3_status_t g3_idx_validate(g3_idx_t *x)
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
    uint64_t version = g3_ld_u64(m + 9);
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
    x->num_seq = g3_ld_u64(m + 18);
    x->num_doc_idx = g3_ld_u64(m + 26);
    uint64_t avail = x->idx_len - G3_IDX_HEADER_LEN;
    if (x->num_seq > avail / 12 || x->num_doc_idx > avail / 8
        || 12 * x->num_seq + 8 * x->num_doc_idx > avail) {
        g3_error("indexed dataset '%s' is truncated or corrupt: the header's sequence count %llu and document count %llu need %llu bytes of arrays but the file has %llu after the header",
                 f, (unsigned long long)x->num_seq, (unsigned long long)x->num_doc_idx,
                 (unsigned long long)(12 * (x->num_seq < avail ? x->num_seq : avail)
                                      + 8 * (x->num_doc_idx < avail ? x->num_doc_idx : avail)),
                 (unsigned long long)avail);
        return G3_ERR_FORMAT;
    }
    if (12 * x->num_seq + 8 * x->num_doc_idx != avail) {
        g3_error("indexed dataset '%s' is corrupt: %llu bytes of trailing data after the doc_idx array (header says %llu sequences, %llu document entries)",
                 f, (unsigned long long)(avail - 12 * x->num_seq - 8 * x->num_doc_idx),
                 (unsigned long long)x->num_seq, (unsigned long long)x->num_doc_idx);
        return G3_ERR_FORMAT;
    }
    x->sizes = m + G3_IDX_HEADER_LEN;
    x->pointers = x->sizes + 4 * x->num_seq;
    x->doc_idx = x->pointers + 8 * x->num_seq;

    /* sizes and pointers: each sequence lies inside .bin, aligned, in order. */
    int64_t prev_end = 0;
    for (uint64_t i = 0; i < x->num_seq; i++) {
        int32_t sz = g3_ld_i32(x->sizes + 4 * i);
        int64_t ptr = g3_ld_i64(x->pointers + 8 * i);
        if (sz < 0) {
            g3_error("indexed dataset '%s' is corrupt: sizes[%llu] = %d is negative",
                     f, (unsigned long long)i, sz);
            return G3_ERR_FORMAT;
        }
        if (ptr < prev_end || ptr % (int64_t)x->itemsize != 0) {
            g3_error("indexed dataset '%s' is corrupt: pointers[%llu] = %lld is %s (previous sequence ends at byte %lld)",
                     f, (unsigned long long)i, (long long)ptr,
                     ptr < prev_end ? "not monotonic: it overlaps the previous sequence"
                                    : "not a multiple of the dtype size",
                     (long long)prev_end);
            return G3_ERR_FORMAT;
        }
        int64_t end = ptr + (int64_t)sz * (int64_t)x->itemsize;
        if ((uint64_t)end > x->bin_len) {
            g3_error("indexed dataset '%s': pointers[%llu] = %lld with sizes[%llu] = %d ends at byte %lld, past the end of '%s' (%zu bytes); the .bin is truncated or belongs to another .idx",
                     f, (unsigned long long)i, (long long)ptr, (unsigned long long)i, sz,
                     (long long)end, x->bin_path, x->bin_len);
            return G3_ERR_FORMAT;
        }
        prev_end = end;
    }
    /* doc_idx: starts at 0, non-decreasing, ends at S. */
    if (x->num_doc_idx < 1) {
        g3_error("indexed dataset '%s' is corrupt: the document index is empty (it must have documents + 1 entries, starting with 0)",
                 f);
        return G3_ERR_FORMAT;
    }
    int64_t prev = 0;
    for (uint64_t i = 0; i < x->num_doc_idx; i++) {
        int64_t d = g3_ld_i64(x->doc_idx + 8 * i);
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

g3_status_t g3_idx_open(const char *prefix, g3_idx_t **idx_p)
{
    g3_idx_t *x = calloc(1, sizeof(*x));
    struct stat sb;
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
    if ((st = g3_idx_map(x->bin_path, "data file", &x->bin_map, &x->bin_len, NULL)) != G3_OK)
        goto err_free;
    if ((st = g3_idx_validate(x)) != G3_OK)
        goto err_free;
    /* Fingerprint: file identity plus the content of header and sizes. */
    uint64_t h = 0xcbf29ce484222325ULL;
    h ^= (uint64_t)sb.st_size * 0x9E3779B97F4A7C15ULL;
    h = g3_idx_hash(x->idx_map, G3_IDX_HEADER_LEN + 4 * x->num_seq, h);
    h = g3_idx_hash((const unsigned char *)&x->bin_len, sizeof(x->bin_len), h);
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
    free(x->prefix);
    free(x->idx_path);
    free(x->bin_path);
    free(x);
}

const char *g3_idx_prefix(const g3_idx_t *x) { return x->prefix; }
uint64_t g3_idx_num_sequences(const g3_idx_t *x) { return x->num_seq; }
uint64_t g3_idx_num_documents(const g3_idx_t *x) { return x->num_doc_idx - 1; }
int g3_idx_dtype(const g3_idx_t *x) { return x->dtype; }
uint64_t g3_idx_fingerprint(const g3_idx_t *x) { return x->fingerprint; }

int32_t g3_idx_size(const g3_idx_t *x, uint64_t i)
{
    return g3_ld_i32(x->sizes + 4 * i);
}

int64_t g3_idx_pointer(const g3_idx_t *x, uint64_t i)
{
    return g3_ld_i64(x->pointers + 8 * i);
}

int64_t g3_idx_doc_index(const g3_idx_t *x, uint64_t i)
{
    return g3_ld_i64(x->doc_idx + 8 * i);
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
            out[k] = (int32_t)g3_ld_i64(p + 8 * k);
        break;
    default:
        break;   /* float dtypes are refused at open */
    }
}

int64_t g3_idx_max_token_bound(g3_idx_t *x)
{
    if (x->max_token_bound >= 0)
        return x->max_token_bound;
    int64_t mx = -1;
    uint64_t n = x->bin_len / x->itemsize;
    const unsigned char *p = x->bin_map;
    switch (x->dtype) {
    case G3_IDX_UINT16:
        for (uint64_t k = 0; k < n; k++) {
            uint16_t v;
            memcpy(&v, p + 2 * k, 2);
            if (v > mx) mx = v;
        }
        break;
    default: {
        int32_t buf[4096];
        /* Generic path: read in chunks through the dtype converter. */
        for (uint64_t i = 0; i < x->num_seq; i++) {
            uint64_t sz = (uint64_t)g3_idx_size(x, i);
            for (uint64_t o = 0; o < sz; o += 4096) {
                uint64_t c = sz - o < 4096 ? sz - o : 4096;
                g3_idx_read(x, i, o, c, buf);
                for (uint64_t k = 0; k < c; k++)
                    if (buf[k] > mx) mx = buf[k];
            }
        }
    }
    }
    x->max_token_bound = mx + 1;
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

static char *g3_strcat3(const char *a, const char *b, const char *c)
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
    free(w->idx_path);
    free(w->bin_path);
    free(w->idx_tmp);
    free(w->bin_tmp);
    free(w->sizes);
    free(w->buf);
    free(w);
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
    w->idx_path = g3_strcat3(prefix, ".idx", "");
    w->bin_path = g3_strcat3(prefix, ".bin", "");
    w->idx_tmp = g3_strcat3(prefix, ".idx", suffix);
    w->bin_tmp = g3_strcat3(prefix, ".bin", suffix);
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
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 65536;
        int32_t *s = realloc(w->sizes, cap * sizeof(*s));
        if (!s)
            return G3_ERR_NO_MEMORY;
        w->sizes = s;
        w->cap = cap;
    }
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

static g3_status_t g3_write_all(FILE *f, const void *p, size_t n, const char *path)
{
    if (n && fwrite(p, 1, n, f) != n) {
        g3_error("cannot write '%s': %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    return G3_OK;
}

static g3_status_t g3_fclose_synced(FILE *f, const char *path)
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

    st = g3_fclose_synced(w->bin, w->bin_tmp);
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
    if ((st = g3_write_all(f, hdr, sizeof(hdr), w->idx_tmp)) != G3_OK)
        goto err_close;
    if ((st = g3_write_all(f, w->sizes, S * 4, w->idx_tmp)) != G3_OK)
        goto err_close;
    int64_t ptr = 0;
    for (uint64_t i = 0; i < S; i++) {
        if ((st = g3_write_all(f, &ptr, 8, w->idx_tmp)) != G3_OK)
            goto err_close;
        ptr += (int64_t)w->sizes[i] * (int64_t)w->itemsize;
    }
    for (uint64_t i = 0; i < D; i++) {
        int64_t d = (int64_t)i;
        if ((st = g3_write_all(f, &d, 8, w->idx_tmp)) != G3_OK)
            goto err_close;
    }
    st = g3_fclose_synced(f, w->idx_tmp);
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
