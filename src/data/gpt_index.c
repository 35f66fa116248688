/* gpt3d data: the GPT sample index (Megatron semantics) and its cache.
 * See gpt_index.h for the arrays and docs/data.md for the rules. */
#define _GNU_SOURCE
#include "data/gpt_index.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fs.h"
#include "core/log.h"

/* ---- numpy's MT19937 and RandomState.shuffle ----------------------------- */

#define G3_MT_N 624
#define G3_MT_M 397

void g3_mt19937_seed(g3_mt19937_t *mt, uint32_t seed)
{
    for (int i = 0; i < G3_MT_N; i++) {
        mt->key[i] = seed;
        seed = 1812433253U * (seed ^ (seed >> 30)) + (uint32_t)i + 1;
    }
    mt->pos = G3_MT_N;
}

static void g3_gptidx_mt19937_gen(g3_mt19937_t *mt)
{
    uint32_t *k = mt->key, y;
    int i;
    for (i = 0; i < G3_MT_N - G3_MT_M; i++) {
        y = (k[i] & 0x80000000U) | (k[i + 1] & 0x7fffffffU);
        k[i] = k[i + G3_MT_M] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
    }
    for (; i < G3_MT_N - 1; i++) {
        y = (k[i] & 0x80000000U) | (k[i + 1] & 0x7fffffffU);
        k[i] = k[i + (G3_MT_M - G3_MT_N)] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
    }
    y = (k[G3_MT_N - 1] & 0x80000000U) | (k[0] & 0x7fffffffU);
    k[G3_MT_N - 1] = k[G3_MT_M - 1] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
    mt->pos = 0;
}

static uint32_t g3_gptidx_mt_next32(g3_mt19937_t *mt)
{
    if (mt->pos == G3_MT_N)
        g3_gptidx_mt19937_gen(mt);
    uint32_t y = mt->key[mt->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
}

/* numpy's random_interval(max): uniform in [0, max] by masked rejection. */
static inline uint64_t g3_gptidx_np_interval(g3_mt19937_t *mt, uint64_t max)
{
    uint64_t mask = max, v;
    if (max == 0)
        return 0;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (max <= 0xffffffffULL) {
        while ((v = (g3_gptidx_mt_next32(mt) & mask)) > max)
            ;
    } else {
        do {
            uint64_t hi = g3_gptidx_mt_next32(mt);
            v = ((hi << 32) | g3_gptidx_mt_next32(mt)) & mask;
        } while (v > max);
    }
    return v;
}

/* numpy's shuffle of n elements of elem bytes (at most 8): from the last element down, each
 * swapped with one drawn from [0, i].  Inlined into the two typed shuffles, elem a constant. */
static inline void g3_gptidx_np_shuffle(g3_mt19937_t *mt, void *a, uint64_t n, size_t elem)
{
    unsigned char *p = a, t[8];
    for (uint64_t i = n > 0 ? n - 1 : 0; i >= 1; i--) {
        uint64_t j = g3_gptidx_np_interval(mt, i);
        memcpy(t, p + i * elem, elem);
        memcpy(p + i * elem, p + j * elem, elem);
        memcpy(p + j * elem, t, elem);
    }
}

static void g3_gptidx_shuffle_i32(g3_mt19937_t *mt, int32_t *a, uint64_t n)
{
    g3_gptidx_np_shuffle(mt, a, n, sizeof(*a));
}

void g3_np_shuffle_i64(g3_mt19937_t *mt, int64_t *a, uint64_t n)
{
    g3_gptidx_np_shuffle(mt, a, n, sizeof(*a));
}

/* ---- the document split -------------------------------------------------- */

g3_status_t g3_split_parse(const char *split, uint64_t num_docs, uint64_t bounds[4])
{
    double w[3] = { 0, 0, 0 }, sum = 0;
    int n = 0;
    const char *p = split;

    for (;;) {
        char *end;
        if (n == 3) {
            g3_error("--split '%s' has more than three parts (train,valid,test, e.g. 949,50,1)", split);
            return G3_ERR_INVALID_ARG;
        }
        errno = 0;
        w[n] = strtod(p, &end);
        if (end == p || errno || !isfinite(w[n]) || w[n] < 0) {
            g3_error("--split '%s': '%s' is not a non-negative number (expected e.g. 949,50,1)", split, p);
            return G3_ERR_INVALID_ARG;
        }
        sum += w[n++];
        p = end;
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        if (*p != ',' && *p != '/') {
            g3_error("--split '%s': parts are separated by ',' or '/' (e.g. 949,50,1)", split);
            return G3_ERR_INVALID_ARG;
        }
        p++;
    }
    if (!(sum > 0)) {
        g3_error("--split '%s' sums to zero; give the train,valid,test proportions, e.g. 949,50,1", split);
        return G3_ERR_INVALID_ARG;
    }
    /* Megatron: cumulative int(round(share * size)) (round half to even),
     * then everything shifted so that the last bound is exactly size. */
    int64_t b[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 3; i++)
        b[i + 1] = b[i] + (int64_t)nearbyint(w[i] / sum * (double)num_docs);
    int64_t diff = b[3] - (int64_t)num_docs;
    for (int i = 1; i < 4; i++)
        b[i] -= diff;
    for (int i = 0; i < 4; i++)
        bounds[i] = b[i] < 0 ? 0 : (uint64_t)b[i];
    return G3_OK;
}

/* ---- building ------------------------------------------------------------ */

static inline size_t g3_gptidx_align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Byte layout of the arrays block (also the cache file after its header). */
static size_t g3_gptidx_layout(uint64_t nd, uint64_t ns, size_t off[4])
{
    off[0] = 0;                                            /* doc_idx    */
    off[1] = off[0] + g3_gptidx_align8(nd * 4);            /* sample_doc */
    off[2] = off[1] + (ns + 1) * 8;                        /* sample_off */
    off[3] = off[2] + g3_gptidx_align8((ns + 1) * 4);      /* shuffle    */
    return off[3] + ns * 8;
}

static void g3_gptidx_point(g3_gptidx_t *gi)
{
    size_t off[4];
    char *m = gi->mem;
    g3_gptidx_layout(gi->num_doc_idx, gi->num_samples, off);
    gi->doc_idx = (const int32_t *)(m + off[0]);
    gi->sample_doc = (const int64_t *)(m + off[1]);
    gi->sample_off = (const int32_t *)(m + off[2]);
    gi->shuffle = (const int64_t *)(m + off[3]);
}

/* Check a sample index request over documents [doc_first, doc_end) of idx and count their
 * tokens.  OUT: *T_p.  RET: G3_ERR_INTERNAL (a bad request), G3_ERR_UNSUPPORTED (more
 * sequences than int32 ids), G3_ERR_INVALID_ARG (fewer than 2 tokens); logged. */
static g3_status_t g3_gptidx_check(const g3_idx_t *idx, uint64_t doc_first, uint64_t doc_end,
                                   int64_t seq_length, uint64_t seed, uint64_t num_samples,
                                   uint64_t *T_p)
{
    const char *name = g3_idx_prefix(idx);
    uint64_t T = 0;

    if (seq_length < 1 || num_samples == 0 || doc_end <= doc_first
        || doc_end > g3_idx_num_sequences(idx) || seed > 0xffffffffULL) {
        g3_error("internal: bad sample index request for '%s' (documents %llu..%llu, seq_length %lld, %llu samples, seed %llu)",
                 name, (unsigned long long)doc_first, (unsigned long long)doc_end,
                 (long long)seq_length, (unsigned long long)num_samples, (unsigned long long)seed);
        return G3_ERR_INTERNAL;
    }
    if (g3_idx_num_sequences(idx) > (uint64_t)INT32_MAX) {
        g3_error("'%s' has %llu sequences; the sample index holds document ids as int32 (as Megatron's does): split the dataset into several prefixes and blend them",
                 name, (unsigned long long)g3_idx_num_sequences(idx));
        return G3_ERR_UNSUPPORTED;
    }
    for (uint64_t d = doc_first; d < doc_end; d++)
        T += (uint64_t)g3_idx_size(idx, d);
    if (T < 2) {
        g3_error("'%s': documents %llu..%llu hold %llu tokens; a sample needs at least 2", name,
                 (unsigned long long)doc_first, (unsigned long long)doc_end, (unsigned long long)T);
        return G3_ERR_INVALID_ARG;
    }
    *T_p = T;
    return G3_OK;
}

/* sample_idx: walk the documents in doc_idx order, seq_length + 1 tokens per sample,
 * consecutive samples sharing one token (Megatron's helper).
 * OUT: sample_doc (N + 1,) and sample_off (N + 1,): where sample s starts (doc_idx position,
 * token offset in that document). */
static void g3_gptidx_fill_samples(const g3_idx_t *idx, const int32_t *doc_idx,
                                   int64_t seq_length, uint64_t N, int64_t *sample_doc,
                                   int32_t *sample_off)
{
    uint64_t di = 0;
    int64_t doc_off = 0;
    sample_doc[0] = 0;
    sample_off[0] = 0;
    for (uint64_t s = 1; s <= N; s++) {
        int64_t remaining = seq_length + 1;
        while (remaining != 0) {
            int64_t len = (int64_t)g3_idx_size(idx, (uint64_t)doc_idx[di]) - doc_off;
            remaining -= len;
            if (remaining <= 0) {
                doc_off += remaining + len - 1;
                remaining = 0;
            } else {
                di++;
                doc_off = 0;
            }
        }
        sample_doc[s] = (int64_t)di;
        sample_off[s] = (int32_t)doc_off;
    }
}

static g3_status_t g3_gptidx_build(const g3_idx_t *idx, uint64_t doc_first, uint64_t doc_end,
                                   int64_t seq_length, uint64_t seed, uint64_t num_samples,
                                   g3_gptidx_t **gi_p)
{
    const char *name = g3_idx_prefix(idx);
    uint64_t D = doc_end - doc_first, T = 0;
    g3_gptidx_t *gi;
    g3_status_t st = g3_gptidx_check(idx, doc_first, doc_end, seq_length, seed, num_samples, &T);

    if (st != G3_OK)
        return st;
    /* Smallest E with (E*T - 1) / S >= N. */
    uint64_t S = (uint64_t)seq_length;
    uint64_t E = (num_samples * S + 1 + T - 1) / T;
    if (E < 1)
        E = 1;
    int separate_last = 0;
    uint64_t n_first = 0;   /* samples of the first E-1 epochs */
    if (E > 1) {
        n_first = ((E - 1) * T - 1) / S;
        uint64_t last = num_samples - n_first;
        uint64_t per_epoch = (T - 1) / S;
        separate_last = last < (uint64_t)(int64_t)(0.80 * (double)per_epoch);
    }
    uint64_t nd = E * D;
    uint64_t N = (E * T - 1) / S;
    if (nd > (uint64_t)1 << 40 || N > (uint64_t)1 << 40) {
        g3_error(
            "'%s': %llu samples of %lld tokens need %llu epochs over %llu documents: too large; lower the sample count or the sequence length",
            name, (unsigned long long)num_samples, (long long)seq_length, (unsigned long long)E,
            (unsigned long long)D);
        return G3_ERR_INVALID_ARG;
    }

    gi = calloc(1, sizeof(*gi));
    if (!gi)
        return G3_ERR_NO_MEMORY;
    size_t off[4];
    gi->mem_len = g3_gptidx_layout(nd, N, off);
    gi->mem = malloc(gi->mem_len ? gi->mem_len : 1);
    if (!gi->mem) {
        g3_error("out of memory building the sample index of '%s' (%zu bytes)", name, gi->mem_len);
        free(gi);
        return G3_ERR_NO_MEMORY;
    }
    memset(gi->mem, 0, gi->mem_len);   /* padding bytes too (cache checksums) */
    gi->doc_first = doc_first;
    gi->doc_end = doc_end;
    gi->seq_length = seq_length;
    gi->seed = seed;
    gi->num_samples_wanted = num_samples;
    gi->num_epochs = E;
    gi->num_doc_idx = nd;
    gi->num_samples = N;
    gi->token_min = 0;
    gi->token_max = G3_GPTIDX_TOKENS_UNKNOWN;   /* g3_gptidx_open's token_range fills it */
    int32_t *doc_idx = (int32_t *)((char *)gi->mem + off[0]);
    int64_t *sample_doc = (int64_t *)((char *)gi->mem + off[1]);
    int32_t *sample_off = (int32_t *)((char *)gi->mem + off[2]);
    int64_t *shuffle = (int64_t *)((char *)gi->mem + off[3]);

    /* doc_idx: E copies of the split's documents, shuffled together (or
     * E-1 together and the last epoch on its own). */
    g3_mt19937_t mt;
    g3_mt19937_seed(&mt, (uint32_t)seed);
    for (uint64_t e = 0; e < E; e++)
        for (uint64_t d = 0; d < D; d++)
            doc_idx[e * D + d] = (int32_t)(doc_first + d);
    if (separate_last) {
        g3_gptidx_shuffle_i32(&mt, doc_idx, (E - 1) * D);
        g3_gptidx_shuffle_i32(&mt, doc_idx + (E - 1) * D, D);
    } else {
        g3_gptidx_shuffle_i32(&mt, doc_idx, nd);
    }

    g3_gptidx_fill_samples(idx, doc_idx, seq_length, N, sample_doc, sample_off);

    /* shuffle_idx: the samples of the first E-1 epochs shuffled, then
     * (separately) the rest. */
    uint64_t nf = separate_last ? n_first : N;
    for (uint64_t s = 0; s < N; s++)
        shuffle[s] = (int64_t)s;
    g3_np_shuffle_i64(&mt, shuffle, nf);
    if (nf < N)
        g3_np_shuffle_i64(&mt, shuffle + nf, N - nf);

    g3_gptidx_point(gi);
    *gi_p = gi;
    return G3_OK;
}

void g3_gptidx_get(const g3_gptidx_t *gi, const g3_idx_t *idx, uint64_t i, int32_t *tokens)
{
    uint64_t s = (uint64_t)gi->shuffle[i];
    int64_t df = gi->sample_doc[s], dl = gi->sample_doc[s + 1];
    int64_t of = gi->sample_off[s], ol = gi->sample_off[s + 1];
    if (df == dl) {
        g3_idx_read(idx, (uint64_t)gi->doc_idx[df], (uint64_t)of, (uint64_t)(ol - of + 1), tokens);
        return;
    }
    uint64_t d = (uint64_t)gi->doc_idx[df];
    uint64_t n = (uint64_t)g3_idx_size(idx, d) - (uint64_t)of;
    g3_idx_read(idx, d, (uint64_t)of, n, tokens);
    tokens += n;
    for (int64_t k = df + 1; k < dl; k++) {
        d = (uint64_t)gi->doc_idx[k];
        n = (uint64_t)g3_idx_size(idx, d);
        g3_idx_read(idx, d, 0, n, tokens);
        tokens += n;
    }
    g3_idx_read(idx, (uint64_t)gi->doc_idx[dl], 0, (uint64_t)ol + 1, tokens);
}

/* ---- the cache ----------------------------------------------------------- */

#define G3_GPTIDX_MAGIC   "G3GPTIDX"
#define G3_GPTIDX_VERSION 2   /* 2: the split's token range */
#define G3_GPTIDX_HDR     128

typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t header_len;
    uint64_t fingerprint;
    uint64_t doc_first, doc_end;
    int64_t  seq_length;
    uint64_t seed;
    uint64_t num_samples_wanted;
    uint64_t num_epochs;
    uint64_t num_doc_idx;
    uint64_t num_samples;
    uint64_t data_len;
    uint64_t checksum;
    int64_t  token_min, token_max;   /* the split's smallest and largest token id */
    char     pad[G3_GPTIDX_HDR - 16 - 13 * 8];
} g3_gptidx_hdr_t;

_Static_assert(sizeof(g3_gptidx_hdr_t) == G3_GPTIDX_HDR, "the cache header is 128 bytes");

/* The fields the header and the index (g3_gptidx_t) share, named once for the copies between
 * them at load and save. */
#define G3_GPTIDX_SHARED(X)                                                                   \
    X(doc_first) X(doc_end) X(seq_length) X(seed) X(num_samples_wanted) X(num_epochs)        \
    X(num_doc_idx) X(num_samples) X(token_min) X(token_max)

void g3_gptidx_free(g3_gptidx_t *gi)
{
    if (!gi)
        return;
    if (gi->mapped)
        munmap((char *)gi->mem - G3_GPTIDX_HDR, gi->mem_len + G3_GPTIDX_HDR);
    else
        free(gi->mem);
    free(gi);
}

static uint64_t g3_gptidx_checksum(const void *p, size_t n)
{
    /* Four independent lanes keep this near memory speed. */
    const unsigned char *b = p;
    uint64_t h[4] = { 0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
                      0x27D4EB2F165667C5ULL };
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * 0x100000001b3ULL;
            h[k] ^= h[k] >> 29;
        }
    }
    uint64_t r = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7) ^ n;
    for (; i < n; i++)
        r = (r ^ b[i]) * 0x100000001b3ULL;
    return r;
}

static uint64_t g3_gptidx_str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static g3_status_t g3_gptidx_cache_name(const g3_idx_t *idx, const char *dir, int hashed_name,
                                        const char *split_name, uint64_t doc_first,
                                        uint64_t doc_end, int64_t seq_length, uint64_t seed,
                                        uint64_t num_samples, char *buf, size_t size)
{
    const char *prefix = g3_idx_prefix(idx);
    const char *base = strrchr(prefix, '/');
    char tag[40] = "";
    base = base ? base + 1 : prefix;
    if (hashed_name) {
        /* Outside the data directory, tell same-named datasets apart. */
        char *real = realpath(prefix, NULL);
        char idxp[4096];
        snprintf(idxp, sizeof(idxp), "%s.idx", prefix);
        if (!real)
            real = realpath(idxp, NULL);
        snprintf(tag, sizeof(tag), "-%016llx",
                 (unsigned long long)g3_gptidx_str_hash(real ? real : prefix));
        free(real);
    }
    int n = snprintf(buf, size, "%s/%s%s_%s_%lluns_%lldsl_%llus_%llu-%llud.g3ix", dir, base, tag,
                     split_name, (unsigned long long)num_samples, (long long)seq_length,
                     (unsigned long long)seed, (unsigned long long)doc_first,
                     (unsigned long long)doc_end);
    if (n < 0 || (size_t)n >= size) {
        g3_error("the sample index cache path for '%s' in '%s' is too long", prefix, dir);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

/* Try to load path.  RET: G3_OK (loaded), G3_ERR_NOT_FOUND (absent),
 * G3_ERR_FORMAT (present but stale or corrupt: *why says how). */
static g3_status_t g3_gptidx_load(const char *path, const g3_idx_t *idx, uint64_t doc_first,
                                  uint64_t doc_end, int64_t seq_length, uint64_t seed,
                                  uint64_t num_samples, g3_gptidx_t **gi_p, const char **why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    g3_gptidx_hdr_t h;
    void *map;

    if (fd < 0) {
        if (errno == ENOENT)
            return G3_ERR_NOT_FOUND;
        *why = strerror(errno);
        return G3_ERR_FORMAT;
    }
    if (fstat(fd, &sb) != 0 || sb.st_size < G3_GPTIDX_HDR) {
        close(fd);
        *why = "truncated header";
        return G3_ERR_FORMAT;
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        *why = strerror(errno);
        return G3_ERR_FORMAT;
    }
    memcpy(&h, map, sizeof(h));
    *why = NULL;
    if (memcmp(h.magic, G3_GPTIDX_MAGIC, 8) != 0)
        *why = "bad magic";
    else if (h.version != G3_GPTIDX_VERSION || h.header_len != G3_GPTIDX_HDR)
        *why = "written by another gpt3d version";
    else if (h.fingerprint != g3_idx_fingerprint(idx))
        *why = "the dataset changed since it was built";
    else if (h.doc_first != doc_first || h.doc_end != doc_end || h.seq_length != seq_length
             || h.seed != seed || h.num_samples_wanted != num_samples)
        *why = "built for other parameters";
    else if (h.data_len != (uint64_t)sb.st_size - G3_GPTIDX_HDR)
        *why = "truncated";
    else {
        size_t off[4];
        if (g3_gptidx_layout(h.num_doc_idx, h.num_samples, off) != h.data_len)
            *why = "inconsistent array sizes";
        else if (g3_gptidx_checksum((char *)map + G3_GPTIDX_HDR, h.data_len) != h.checksum)
            *why = "checksum mismatch";
    }
    if (*why) {
        munmap(map, (size_t)sb.st_size);
        return G3_ERR_FORMAT;
    }
    g3_gptidx_t *gi = calloc(1, sizeof(*gi));
    if (!gi) {
        munmap(map, (size_t)sb.st_size);
        return G3_ERR_NO_MEMORY;
    }
    /* the header's parameters are the ones asked for (checked above) */
#define G3_GPTIDX_FROM_HDR(f) gi->f = h.f;
    G3_GPTIDX_SHARED(G3_GPTIDX_FROM_HDR)
#undef G3_GPTIDX_FROM_HDR
    gi->mem = (char *)map + G3_GPTIDX_HDR;
    gi->mem_len = h.data_len;
    gi->mapped = 1;
    g3_gptidx_point(gi);
    /* Cheap consistency: the last sample must end inside the doc_idx. */
    if (gi->sample_doc[gi->num_samples] >= (int64_t)gi->num_doc_idx) {
        *why = "inconsistent sample index";
        g3_gptidx_free(gi);
        return G3_ERR_FORMAT;
    }
    *gi_p = gi;
    return G3_OK;
}

/* Write gi to path atomically.  RET: G3_OK, or the errno-based status with
 * *err set (not logged: the caller may fall back to another directory). */
static g3_status_t g3_gptidx_save(const char *path, const g3_idx_t *idx, const g3_gptidx_t *gi,
                                  int *err)
{
    g3_gptidx_hdr_t h;
    char tmp[4200];
    int fd;

    g3_tmp_name(path, tmp, sizeof(tmp));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        *err = errno;
        return G3_ERR_IO;
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, G3_GPTIDX_MAGIC, 8);
    h.version = G3_GPTIDX_VERSION;
    h.header_len = G3_GPTIDX_HDR;
    h.fingerprint = g3_idx_fingerprint(idx);
#define G3_GPTIDX_TO_HDR(f) h.f = gi->f;
    G3_GPTIDX_SHARED(G3_GPTIDX_TO_HDR)
#undef G3_GPTIDX_TO_HDR
    h.data_len = gi->mem_len;
    h.checksum = g3_gptidx_checksum(gi->mem, gi->mem_len);
    const char *parts[2] = { (const char *)&h, gi->mem };
    size_t lens[2] = { sizeof(h), gi->mem_len };
    for (int k = 0; k < 2; k++) {
        size_t done = 0;
        while (done < lens[k]) {
            ssize_t w = write(fd, parts[k] + done, lens[k] - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                *err = w < 0 ? errno : EIO;
                goto err_unlink;
            }
            done += (size_t)w;
        }
    }
    if (fsync(fd) != 0) {
        *err = errno;
        goto err_unlink;
    }
    if (close(fd) != 0) {
        *err = errno;
        fd = -1;
        goto err_unlink;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        *err = errno;
        goto err_unlink;
    }
    return G3_OK;

err_unlink:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return G3_ERR_IO;
}

static int g3_gptidx_fallback_dir(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, size, "%s/gpt3d/index", xdg);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/gpt3d/index", home);
    else
        n = snprintf(buf, size, "/tmp/gpt3d-index-%ld", (long)getuid());
    return n > 0 && (size_t)n < size;
}

/* Where the cache may live: --data-cache-path alone if given; else beside the data, then the
 * per-user cache directory.  Fills dirs[] and hashed[] (whether the names are hashed); returns
 * how many directories there are. */
static int g3_gptidx_cache_dirs(const char *prefix, const char *cache_dir, char dirs[2][4096],
                                int hashed[2])
{
    int ndirs;
    if (cache_dir && *cache_dir) {
        snprintf(dirs[0], sizeof(dirs[0]), "%s", cache_dir);
        hashed[0] = 1;
        ndirs = 1;
    } else {
        const char *slash = strrchr(prefix, '/');
        if (!slash)
            snprintf(dirs[0], sizeof(dirs[0]), ".");
        else if (slash == prefix)
            snprintf(dirs[0], sizeof(dirs[0]), "/");
        else
            snprintf(dirs[0], sizeof(dirs[0]), "%.*s", (int)(slash - prefix), prefix);
        hashed[0] = 0;
        ndirs = 1;
        if (g3_gptidx_fallback_dir(dirs[1], sizeof(dirs[1]))) {
            hashed[1] = 1;
            ndirs = 2;
        }
    }
    return ndirs;
}

/* One builder at a time per dataset: locks the .idx (advisory; ignored where the file system
 * has no flock) and returns its descriptor, or -1 with no lock held. */
static int g3_gptidx_lock(const char *prefix)
{
    char idxp[4200];
    snprintf(idxp, sizeof(idxp), "%s.idx", prefix);
    int lock_fd = open(idxp, O_RDONLY | O_CLOEXEC);
    if (lock_fd >= 0 && flock(lock_fd, LOCK_EX) != 0) {
        close(lock_fd);
        lock_fd = -1;
    }
    return lock_fd;
}

/* Writes the index into the first cache directory that takes it, saying so; an index no
 * directory takes is only warned about (it still works, uncached). */
static void g3_gptidx_cache_store(const g3_idx_t *idx, const g3_gptidx_t *gi,
                                  const char *split_name, uint64_t doc_first, uint64_t doc_end,
                                  int rebuilt, double secs, int ndirs, char dirs[2][4096],
                                  char paths[2][4400], const int hashed[2])
{
    const char *prefix = g3_idx_prefix(idx);
    for (int k = 0; k < ndirs; k++) {
        int err = 0;
        if (hashed[k] && g3_mkdir_p(dirs[k], 0755, NULL, 0) != G3_OK) {
            err = errno;
        } else if (g3_gptidx_save(paths[k], idx, gi, &err) == G3_OK) {
            if (rebuilt)
                g3_info(
                    "built the %s sample index of '%s': %llu sample%s, %llu epoch%s over %llu document%s in %.2f s; cached in '%s'",
                    split_name, prefix, (unsigned long long)gi->num_samples,
                    gi->num_samples == 1 ? "" : "s", (unsigned long long)gi->num_epochs,
                    gi->num_epochs == 1 ? "" : "s", (unsigned long long)(doc_end - doc_first),
                    doc_end - doc_first == 1 ? "" : "s", secs, paths[k]);
            else
                g3_info("added the token range to the %s sample index cache '%s'", split_name, paths[k]);
            return;
        }
        if (k + 1 < ndirs)
            g3_info("cannot write the sample index cache in '%s' (%s); trying '%s'", dirs[k],
                    strerror(err), dirs[k + 1]);
        else
            g3_warn("cannot cache the %s sample index of '%s' in '%s' (%s); it is rebuilt on every start (set --data-cache-path to a writable directory)",
                    split_name, prefix, dirs[k], strerror(err));
    }
}

g3_status_t g3_gptidx_open(g3_idx_t *idx, const char *split_name, uint64_t doc_first,
                           uint64_t doc_end, int64_t seq_length, uint64_t seed,
                           uint64_t num_samples, const char *cache_dir, int token_range,
                           g3_gptidx_t **gi_p)
{
    int rebuilt = 1;
    double secs = 0;
    const char *prefix = g3_idx_prefix(idx);
    char dirs[2][4096], paths[2][4400];
    int hashed[2], ndirs = 0, lock_fd = -1;
    g3_status_t st;
    const char *why = NULL;
    g3_gptidx_t *gi = NULL;

    ndirs = g3_gptidx_cache_dirs(prefix, cache_dir, dirs, hashed);
    for (int k = 0; k < ndirs; k++)
        if ((st = g3_gptidx_cache_name(idx, dirs[k], hashed[k], split_name, doc_first, doc_end,
                                       seq_length, seed, num_samples, paths[k],
                                       sizeof(paths[k]))) != G3_OK)
            return st;

    lock_fd = g3_gptidx_lock(prefix);

    for (int k = 0; k < ndirs; k++) {
        st = g3_gptidx_load(paths[k], idx, doc_first, doc_end, seq_length, seed, num_samples, &gi,
                            &why);
        if (st == G3_OK) {
            g3_debug("loaded the %s sample index of '%s' from '%s'", split_name, prefix, paths[k]);
            if (!token_range || gi->token_max != G3_GPTIDX_TOKENS_UNKNOWN)
                goto done;
            rebuilt = 0;   /* cached without the token range: add it */
            goto scan;
        }
        if (st == G3_ERR_NO_MEMORY)
            goto done;
        if (st == G3_ERR_FORMAT)
            g3_info("rebuilding the %s sample index cache '%s' (%s)", split_name, paths[k], why);
    }

    double t0 = g3_clock_now();
    if ((st = g3_gptidx_build(idx, doc_first, doc_end, seq_length, seed, num_samples, &gi)) !=
        G3_OK)
        goto done;
    secs = g3_clock_now() - t0;

scan:
    if (token_range) {
        double t1 = g3_clock_now();
        g3_idx_token_range(idx, doc_first, doc_end, &gi->token_min, &gi->token_max);
        g3_info("checked the token ids of the %s split of '%s' (documents %llu..%llu) in %.2f s",
                split_name, prefix, (unsigned long long)doc_first, (unsigned long long)doc_end,
                g3_clock_now() - t1);
    }
    g3_gptidx_cache_store(idx, gi, split_name, doc_first, doc_end, rebuilt, secs, ndirs, dirs,
                          paths, hashed);
    st = G3_OK;   /* an uncached index still works */

done:
    if (lock_fd >= 0) {
        flock(lock_fd, LOCK_UN);
        close(lock_fd);
    }
    if (st != G3_OK) {
        g3_gptidx_free(gi);
        return st;
    }
    *gi_p = gi;
    return G3_OK;
}
