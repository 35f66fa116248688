/* gpt3d curate: the minhash stage (curate.h, the file format in minhash.h): per document, the
 * 128-bit hash of the normalised text and the MinHash signature of its word n-gram shingles. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "curate/curate_internal.h"
#include "curate/minhash.h"

typedef struct {
    const g3_curate_mh_params_t *p;
    uint32_t           a[G3_CURATE_MAX_PERM], b[G3_CURATE_MAX_PERM];
    g3_curate_words_t  words;
    uint32_t          *xs;        /* (nx,) shingle keys of one document */
    size_t             xcap;
    g3_curate_mh_rec_t *rec;
    g3_curate_doc_t    doc;
} g3_curate_mh_t;

static uint64_t g3_curate_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* sig[k] = min(sig[k], perm_k(x)) over xs: the hot loop (vectorised over k). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void g3_curate_mh_sig(const uint32_t *restrict a, const uint32_t *restrict b, int K,
                             const uint32_t *restrict xs, size_t nx, uint32_t *restrict sig)
{
    for (size_t i = 0; i < nx; i++) {
        uint32_t x = xs[i];
        for (int k = 0; k < K; k++) {
            uint32_t v = (x ^ b[k]) * a[k];
            v ^= v >> 15;
            sig[k] = v < sig[k] ? v : sig[k];
        }
    }
}

static g3_status_t g3_curate_mh_doc(g3_curate_mh_t *m, const char *text, size_t len)
{
    const g3_curate_mh_params_t *p = m->p;
    g3_curate_mh_rec_t *rec = m->rec;
    char *norm = NULL;
    size_t nlen, nw, nx, n = (size_t)p->ngram;
    g3_status_t st;

    if ((st = g3_curate_normalize(text, len, p->lower, &norm, &nlen)) != G3_OK)
        return st;
    rec->exact[0] = g3_curate_hash_bytes(norm, nlen, 0x243F6A8885A308D3ULL);
    rec->exact[1] = g3_curate_hash_bytes(norm, nlen, 0x13198A2E03707344ULL);
    rec->norm_len = nlen > UINT32_MAX ? UINT32_MAX : (uint32_t)nlen;
    /* Shingles of the normalised text (g3_curate_words lower-cases the words either way). */
    st = g3_curate_words(norm, nlen, &m->words);
    free(norm);
    if (st != G3_OK)
        return st;
    nw = m->words.n;
    nx = g3_curate_shingle_count(nw, n);
    if (nx > m->xcap) {
        uint32_t *q = realloc(m->xs, nx * sizeof(uint32_t));
        if (!q)
            return G3_ERR_NO_MEMORY;
        m->xs = q;
        m->xcap = nx;
    }
    for (size_t i = 0; i < nx; i++)
        m->xs[i] = (uint32_t)(g3_curate_shingle_hash(&m->words, i, n) >> 32);
    rec->shingles = (uint32_t)(nx > UINT32_MAX ? UINT32_MAX : nx);
    for (int k = 0; k < p->num_perm; k++)
        rec->sig[k] = UINT32_MAX;
    g3_curate_mh_sig(m->a, m->b, p->num_perm, m->xs, nx, rec->sig);
    return G3_OK;
}

static g3_status_t g3_curate_mh_shard(void *ctx, const g3_curate_shard_t *sh,
                                      g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                      uint64_t *docs_in, uint64_t *docs_out)
{
    g3_curate_mh_t *m = ctx;
    const g3_curate_mh_params_t *p = m->p;
    g3_curate_mh_header_t h;
    uint64_t rsize = g3_curate_mh_rec_size((uint32_t)p->num_perm), empty = 0, shingles = 0;
    g3_status_t st;

    memset(&h, 0, sizeof(h));
    memcpy(h.magic, G3_CURATE_MH_MAGIC, sizeof(G3_CURATE_MH_MAGIC));
    h.version = G3_CURATE_MH_VERSION;
    h.num_perm = (uint32_t)p->num_perm;
    h.ngram = (uint32_t)p->ngram;
    h.lower = (uint32_t)p->lower;
    h.seed = p->seed;
    fwrite(&h, sizeof(h), 1, out);
    while ((st = g3_curate_reader_next(in, sh->text_key, &m->doc)) == G3_OK) {
        m->rec->line = m->doc.line;
        if ((st = g3_curate_mh_doc(m, m->doc.text.data, m->doc.text.len)) != G3_OK) {
            g3_error("gpt3d curate minhash: out of memory at %s line %llu", sh->in_path,
                     (unsigned long long)m->doc.line);
            return st;
        }
        empty += m->rec->shingles == 0;
        shingles += m->rec->shingles;
        fwrite(m->rec, 1, rsize, out);
        h.docs++;
    }
    if (st != G3_ERR_NOT_FOUND)
        return st;
    if (fseek(out, 0, SEEK_SET) != 0 || fwrite(&h, sizeof(h), 1, out) != 1) {
        g3_error("gpt3d curate minhash: cannot write the header of the signatures of '%s'",
                 sh->in_path);
        return G3_ERR_IO;
    }
    *docs_in = *docs_out = h.docs;
    g3_curate_rep_u64(rep, "shingles", shingles);
    g3_curate_rep_u64(rep, "docs_without_words", empty);
    return G3_OK;
}

g3_status_t g3_curate_minhash(const g3_curate_io_t *io, const g3_curate_mh_params_t *p,
                              g3_curate_counts_t *c)
{
    g3_curate_mh_t *m;
    char params[256];
    uint64_t s = p->seed;
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    if (p->num_perm < 1 || p->num_perm > G3_CURATE_MAX_PERM || p->ngram < 1 || p->ngram > 64) {
        g3_error("gpt3d curate minhash: --num-perm %d / --ngram %d out of range (1..%d, 1..64)",
                 p->num_perm, p->ngram, G3_CURATE_MAX_PERM);
        return G3_ERR_INVALID_ARG;
    }
    m = calloc(1, sizeof(*m));
    if (!m || !(m->rec = malloc(g3_curate_mh_rec_size((uint32_t)p->num_perm)))) {
        free(m);
        g3_error("gpt3d curate minhash: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    m->p = p;
    for (int k = 0; k < p->num_perm; k++) {
        m->a[k] = (uint32_t)g3_curate_splitmix(&s) | 1u;
        m->b[k] = (uint32_t)g3_curate_splitmix(&s);
    }
    snprintf(params, sizeof(params), "key=%s ngram=%d num_perm=%d seed=%llu lower=%d",
             io->text_key, p->ngram, p->num_perm, (unsigned long long)p->seed, p->lower);
    st = g3_curate_each_shard(io, "minhash", params, "mh", g3_curate_mh_shard, m, c);
    g3_curate_words_free(&m->words);
    g3_buf_free(&m->doc.text);
    free(m->xs);
    free(m->rec);
    free(m);
    return st;
}
