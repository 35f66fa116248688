/* gpt3d curate: the lsh stage (curate.h): exact groups and MinHash LSH components over every
 * shard's signatures, on one rank or on R ranks that split the buckets.
 *
 * Documents are numbered g = 0 .. N-1 in the shard-list order, then line order.  With R ranks,
 * rank r owns the exact groups whose hash is r mod R and, in each band, the LSH buckets whose
 * key is r mod R.  Memory, per document: a union-find forest (4 bytes) and the exact losers (1)
 * on every rank; the exact entries of its groups (24 bytes / R) during the exact pass, then
 * one band's entries of its buckets at a time (16 bytes / R); rank 0 also the line, length and
 * kept document of every document (20 bytes) and the output's per-component tables (8 bytes).
 * The signatures are not held: every pass streams the .mh files through a 4 MB buffer, and a
 * candidate pair's two signatures are read when it is verified (the kernel's page cache keeps
 * the files when memory allows).  Rank 0 merges the ranks' exact groups and forests;
 * components do not depend on the order in which edges were found, and the document kept in
 * each is chosen by a fixed rule, so the output is bitwise the same for any R.
 *
 * --verify exact: a candidate pair is verified by the exact Jaccard of the two documents' sets
 * of 64-bit shingle hashes (the hashes minhash signs the 32 high bits of), not by the share of
 * equal signature entries.  The sets are not stored anywhere: every rank indexes the shards
 * once (one pass over their bytes: where each signed line starts and how long it is, 20 bytes
 * a document with its line number) and re-reads, re-parses and re-shingles a pair's two lines
 * when it verifies the pair (the last two documents read are kept: a bucket member is checked
 * against its anchors in turn).  A re-read document whose normalised text does not hash to
 * its signature's exact hash is an error (the shard changed after minhash).  The verdict of a
 * pair depends only on the pair, so the output stays the same for any R.
 *
 * Output (rank 0): OUT/duplicates.tsv, one line per removed document, in document order:
 *   SHARD<TAB>LINE<TAB>KIND<TAB>KEPT_SHARD<TAB>KEPT_LINE
 * SHARD is the position in the shard list, KIND "exact" (same normalised text as the kept
 * document, the first in order) or "fuzzy" (same component as the kept one); the first line is
 * "# gpt3d-curate-duplicates 1".  OUT/report.json counts what was found (only counts that do
 * not depend on R: how many pairs were checked does, and goes to the log). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/mem.h"
#include "curate/curate_internal.h"
#include "curate/minhash.h"

typedef struct {
    uint64_t key;
    uint64_t g;
} g3_curate_entry_t;

typedef struct {
    uint64_t k0, k1, g;
} g3_curate_xentry_t;

#define G3_CURATE_SCAN_BYTES (4u << 20)   /* read buffer of a pass over the signatures */

/* --verify exact: one document's sorted, distinct shingle hashes. */
typedef struct {
    uint64_t  g;
    int       valid;
    uint64_t *h;       /* (n,) */
    size_t    n, cap;
} g3_curate_set_t;

typedef struct {
    g3_curate_list_t       list;
    int                    nshards;
    int                   *fd;       /* (nshards,) open .mh files (-1: not open)      */
    char                 **mh_path;  /* (nshards,) their names                        */
    uint64_t              *first;    /* (nshards + 1,) first document of each shard    */
    uint64_t               n;        /* documents                                     */
    uint32_t               K, ngram;
    uint64_t               rsize;
    uint32_t              *parent;   /* (n,) union-find                               */
    int64_t               *exact_of; /* (n,) rank 0: the kept document of an exact loser, else -1 */
    uint64_t              *line;     /* (n,) rank 0: each document's line in its shard */
    uint32_t              *norm_len; /* (n,) rank 0: its normalised length             */
    unsigned char         *dead;     /* (n,) exact losers                             */
    unsigned char         *buf;      /* (G3_CURATE_SCAN_BYTES,) pass buffer           */
    g3_curate_mh_rec_t    *ra, *rb;  /* two records: a candidate pair                 */
    uint64_t               pairs_checked, edges, largest_bucket;
    /* --verify exact (all NULL / 0 otherwise) */
    int                    verify_exact;
    uint32_t               lower;    /* the signatures' --lower (the normalisation)   */
    const g3_curate_io_t  *io;
    int                   *sfd;      /* (nshards,) open shards (-1: not open)         */
    uint64_t              *off;      /* (n,) where each document's line starts        */
    uint32_t              *len;      /* (n,) its bytes, without the '\n'              */
    g3_buf_t               raw;      /* one line read back                            */
    g3_curate_doc_t        doc;
    g3_curate_words_t      words;
    g3_curate_set_t        set[2];   /* the last two documents' shingle sets          */
} g3_curate_lsh_t;

/* RET: the shard of document g. */
static int g3_curate_shard_of(const g3_curate_lsh_t *L, uint64_t g)
{
    int lo = 0, hi = L->nshards - 1;
    while (lo < hi) {   /* the last shard whose first document is <= g */
        int mid = (lo + hi + 1) / 2;
        if (L->first[mid] <= g) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static g3_status_t g3_curate_pread(const g3_curate_lsh_t *L, int s, void *buf, size_t bytes,
                                   uint64_t off)
{
    size_t done = 0;
    while (done < bytes) {
        ssize_t got = pread(L->fd[s], (char *)buf + done, bytes - done, (off_t)(off + done));
        if (got <= 0) {
            g3_error("gpt3d curate lsh: cannot read '%s' at byte %llu: %s", L->mh_path[s],
                     (unsigned long long)(off + done), got == 0 ? "unexpected end of file" : strerror(errno));
            return G3_ERR_IO;
        }
        done += (size_t)got;
    }
    return G3_OK;
}

/* Read document g's record into rec.  RET: G3_OK or G3_ERR_IO (logged). */
static g3_status_t g3_curate_rec_read(const g3_curate_lsh_t *L, uint64_t g, g3_curate_mh_rec_t *rec)
{
    int s = g3_curate_shard_of(L, g);
    return g3_curate_pread(L, s, rec, L->rsize,
                           G3_CURATE_MH_HEADER + (g - L->first[s]) * L->rsize);
}

/* One pass over every record in document order: fn(ctx, g, rec) for each. */
typedef g3_status_t (*g3_curate_scan_fn)(void *ctx, uint64_t g, const g3_curate_mh_rec_t *rec);

static g3_status_t g3_curate_scan(g3_curate_lsh_t *L, g3_curate_scan_fn fn, void *ctx)
{
    uint64_t per = G3_CURATE_SCAN_BYTES / L->rsize;
    g3_status_t st;
    if (per == 0)
        per = 1;
    for (int s = 0; s < L->nshards; s++) {
        uint64_t docs = L->first[s + 1] - L->first[s];
        for (uint64_t i = 0; i < docs; i += per) {
            uint64_t n = docs - i < per ? docs - i : per;
            if ((st = g3_curate_pread(L, s, L->buf, n * L->rsize,
                                      G3_CURATE_MH_HEADER + i * L->rsize)) != G3_OK)
                return st;
            for (uint64_t k = 0; k < n; k++) {
                st = fn(ctx, L->first[s] + i + k,
                        (const g3_curate_mh_rec_t *)(L->buf + k * L->rsize));
                if (st != G3_OK)
                    return st;
            }
        }
    }
    return G3_OK;
}

static uint32_t g3_curate_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Join the sets of a and b; the root is the smaller index (deterministic). */
static void g3_curate_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = g3_curate_find(parent, a);
    b = g3_curate_find(parent, b);
    if (a < b) parent[b] = a;
    else if (b < a) parent[a] = b;
}

static g3_status_t g3_curate_lsh_open(g3_curate_lsh_t *L, const char *mh_dir,
                                      const g3_curate_mh_params_t *want)
{
    char path[4096];
    g3_status_t st = G3_OK;

    L->fd = malloc((size_t)L->nshards * sizeof(*L->fd));
    L->mh_path = calloc((size_t)L->nshards, sizeof(*L->mh_path));
    L->first = calloc((size_t)L->nshards + 1, sizeof(*L->first));
    if (!L->fd || !L->mh_path || !L->first)
        return G3_ERR_NO_MEMORY;
    for (int s = 0; s < L->nshards; s++)
        L->fd[s] = -1;
    for (int s = 0; s < L->nshards; s++) {
        g3_curate_mh_header_t h;
        struct stat sb;
        g3_curate_shard_path(mh_dir, s, "mh", path, sizeof(path));
        int fd = open(path, O_RDONLY);
        if (fd < 0 || fstat(fd, &sb) != 0) {
            g3_error("gpt3d curate lsh: cannot open the signatures '%s' of shard %d ('%s'): %s (run the minhash stage on every shard first)",
                     path, s, L->list.path[s], strerror(errno));
            if (fd >= 0)
                close(fd);
            return G3_ERR_NOT_FOUND;
        }
        if ((size_t)sb.st_size < sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)
            || memcmp(h.magic, G3_CURATE_MH_MAGIC, sizeof(G3_CURATE_MH_MAGIC)) != 0) {
            g3_error("gpt3d curate lsh: '%s' is not a gpt3d MinHash signature file (no G3CURMH header)", path);
            close(fd);
            return G3_ERR_FORMAT;
        }
        if (h.version != G3_CURATE_MH_VERSION) {
            g3_error("gpt3d curate lsh: '%s' has format version %u; this gpt3d reads version %u (rerun minhash)",
                     path, h.version, G3_CURATE_MH_VERSION);
            close(fd);
            return G3_ERR_VERSION;
        }
        if (s == 0) {
            L->lower = h.lower;
            L->K = h.num_perm;
            L->ngram = h.ngram;
            L->rsize = g3_curate_mh_rec_size(h.num_perm);
        }
        if (h.num_perm != L->K || h.ngram != L->ngram || h.seed != want->seed
            || (want->num_perm && h.num_perm != (uint32_t)want->num_perm)) {
            g3_error("gpt3d curate lsh: '%s' was made with --num-perm %u --ngram %u --seed %llu; shard 0's with --num-perm %u --ngram %u, and this run asks for --num-perm %d --seed %llu (rerun minhash with one setting)",
                     path, h.num_perm, h.ngram, (unsigned long long)h.seed, L->K, L->ngram,
                     want->num_perm, (unsigned long long)want->seed);
            close(fd);
            return G3_ERR_INVALID_ARG;
        }
        if ((uint64_t)sb.st_size != G3_CURATE_MH_HEADER + h.docs * L->rsize) {
            g3_error("gpt3d curate lsh: '%s' is %lld bytes; its header says %llu documents of %llu bytes (truncated: rerun minhash on shard %d)",
                     path, (long long)sb.st_size, (unsigned long long)h.docs,
                     (unsigned long long)L->rsize, s);
            close(fd);
            return G3_ERR_FORMAT;
        }
        L->fd[s] = fd;
        if (!(L->mh_path[s] = strdup(path)))
            return G3_ERR_NO_MEMORY;
        L->first[s + 1] = L->first[s] + h.docs;
    }
    L->n = L->first[L->nshards];
    if (L->n >= UINT32_MAX) {
        g3_error("gpt3d curate lsh: %llu documents; one lsh run takes fewer than 2^32 (split the corpus)",
                 (unsigned long long)L->n);
        return G3_ERR_UNSUPPORTED;
    }
    return st;
}

static int g3_curate_xentry_cmp(const void *a, const void *b)
{
    const g3_curate_xentry_t *x = a, *y = b;
    if (x->k0 != y->k0) return x->k0 < y->k0 ? -1 : 1;
    if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
    return x->g < y->g ? -1 : x->g > y->g;
}

static int g3_curate_entry_cmp(const void *a, const void *b)
{
    const g3_curate_entry_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* ---- moving arrays between ranks (host groups move bytes; INT64 is the unit) ---- */

static g3_status_t g3_curate_send_pairs(g3_comm_t *comm, const int64_t *pairs, int64_t npairs)
{
    g3_status_t st = g3_comm_send(comm, &npairs, 1, G3_DTYPE_INT64, 0, 1);
    if (st == G3_OK && npairs > 0)
        st = g3_comm_send(comm, pairs, (size_t)npairs * 2, G3_DTYPE_INT64, 0, 2);
    return st;
}

/* Rank 0: receive every other rank's (a, b) pairs and hand each to fn. */
static g3_status_t g3_curate_recv_pairs(g3_comm_t *comm, void (*fn)(void *, int64_t, int64_t),
                                        void *ctx)
{
    for (int r = 1; r < g3_comm_size(comm); r++) {
        int64_t np = 0;
        g3_status_t st = g3_comm_recv(comm, &np, 1, G3_DTYPE_INT64, r, 1);
        if (st != G3_OK)
            return st;
        if (np <= 0)
            continue;
        int64_t *buf = malloc((size_t)np * 2 * sizeof(int64_t));
        if (!buf)
            return G3_ERR_NO_MEMORY;
        st = g3_comm_recv(comm, buf, (size_t)np * 2, G3_DTYPE_INT64, r, 2);
        for (int64_t i = 0; st == G3_OK && i < np; i++)
            fn(ctx, buf[2 * i], buf[2 * i + 1]);
        free(buf);
        if (st != G3_OK)
            return st;
    }
    return G3_OK;
}

static void g3_curate_take_exact(void *ctx, int64_t g, int64_t kept)
{
    g3_curate_lsh_t *L = ctx;
    L->exact_of[g] = kept;
    L->dead[g] = 1;
}

static void g3_curate_take_union(void *ctx, int64_t a, int64_t b)
{
    g3_curate_lsh_t *L = ctx;
    g3_curate_union(L->parent, (uint32_t)a, (uint32_t)b);
}

typedef struct {
    g3_curate_lsh_t    *L;
    int                 rank, R;
    g3_curate_xentry_t *x;
    size_t              nx, cap;
} g3_curate_xscan_t;

static g3_status_t g3_curate_xscan(void *ctx, uint64_t g, const g3_curate_mh_rec_t *rec)
{
    g3_curate_xscan_t *c = ctx;
    if (c->rank == 0 || c->L->verify_exact)
        c->L->line[g] = rec->line;
    if (c->rank == 0) {
        c->L->norm_len[g] = rec->norm_len;
    }
    if (rec->exact[1] % (uint64_t)c->R != (uint64_t)c->rank)
        return G3_OK;
    if (g3_mem_grow(&c->x, &c->cap, c->nx, sizeof(*c->x), 4096) != G3_OK)
        return G3_ERR_NO_MEMORY;
    c->x[c->nx++] = (g3_curate_xentry_t){ rec->exact[0], rec->exact[1], g };
    return G3_OK;
}

/* Exact groups of this rank's share; merged on rank 0, the losers known to every rank. */
static g3_status_t g3_curate_lsh_exact(g3_curate_lsh_t *L, g3_comm_t *comm, int rank, int R)
{
    g3_curate_xscan_t c = { L, rank, R, NULL, 0, 0 };
    int64_t *pairs = NULL;
    uint64_t np = 0;
    g3_status_t st;

    if ((st = g3_curate_scan(L, g3_curate_xscan, &c)) != G3_OK) {
        free(c.x);
        return st;
    }
    qsort(c.x, c.nx, sizeof(*c.x), g3_curate_xentry_cmp);
    /* The pairs overwrite the entries in place (pair k, 16 bytes, ends before entry k + 1, and
     * k < i): the group's first entry is kept in locals, as the pairs may cover it. */
    pairs = (int64_t *)c.x;
    if (c.nx > 0) {
        g3_curate_xentry_t head = c.x[0];
        for (uint64_t i = 1; i < c.nx; i++) {
            g3_curate_xentry_t e = c.x[i];
            if (e.k0 != head.k0 || e.k1 != head.k1) {
                head = e;
                continue;
            }
            pairs[2 * np] = (int64_t)e.g;
            pairs[2 * np + 1] = (int64_t)head.g;
            np++;
        }
    }
    if (rank == 0) {
        for (uint64_t i = 0; i < np; i++)
            g3_curate_take_exact(L, pairs[2 * i], pairs[2 * i + 1]);
        if (comm)
            st = g3_curate_recv_pairs(comm, g3_curate_take_exact, L);
    } else {
        st = g3_curate_send_pairs(comm, pairs, (int64_t)np);
    }
    free(c.x);
    if (st == G3_OK && comm) {
        /* Every rank needs the losers: broadcast the byte array in 8-byte units. */
        st = g3_comm_broadcast(comm, L->dead, (L->n + 7) / 8, G3_DTYPE_INT64, 0);
    }
    return st;
}

/* --verify exact: open every shard and find where each document's line lies (L->line must
 * hold every document's line).  RET: G3_OK, G3_ERR_NOT_FOUND, G3_ERR_IO, G3_ERR_FORMAT (a shard
 * shorter than its signatures, or a line too long), all logged. */
static g3_status_t g3_curate_lsh_index(g3_curate_lsh_t *L)
{
    L->sfd = malloc((size_t)L->nshards * sizeof(*L->sfd));
    L->off = malloc((L->n ? L->n : 1) * sizeof(*L->off));
    L->len = malloc((L->n ? L->n : 1) * sizeof(*L->len));
    if (!L->sfd || !L->off || !L->len)
        return G3_ERR_NO_MEMORY;
    for (int s = 0; s < L->nshards; s++)
        L->sfd[s] = -1;
    for (int s = 0; s < L->nshards; s++) {
        const char *path = L->list.path[s];
        uint64_t g = L->first[s], end = L->first[s + 1], pos = 0, start = 0, lineno = 1;
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            g3_error("gpt3d curate lsh: --verify exact: cannot open the shard '%s': %s (it must be the file the minhash stage read)",
                     path, strerror(errno));
            return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
        }
        L->sfd[s] = fd;
        for (;;) {
            ssize_t got = read(fd, L->buf, G3_CURATE_SCAN_BYTES);
            if (got < 0) {
                g3_error("gpt3d curate lsh: cannot read the shard '%s': %s", path, strerror(errno));
                return G3_ERR_IO;
            }
            /* The lines ending in this block; a last line without '\n' ends the file. */
            const unsigned char *p = L->buf, *e = L->buf + got, *nl = NULL;
            for (;;) {
                uint64_t at;
                if (got > 0 && g < end && (nl = memchr(p, '\n', (size_t)(e - p))) != NULL)
                    at = pos + (uint64_t)(nl - L->buf);
                else if (got == 0 && g < end && pos > start)
                    at = pos;
                else
                    break;
                if (at - start > L->io->max_line_bytes || at - start > UINT32_MAX) {
                    g3_error("gpt3d curate lsh: %s line %llu: the line is longer than %zu bytes (a corrupt shard, or raise --max-line-bytes)",
                             path, (unsigned long long)lineno, L->io->max_line_bytes);
                    return G3_ERR_FORMAT;
                }
                if (L->line[g] == lineno) {
                    L->off[g] = start;
                    L->len[g++] = (uint32_t)(at - start);
                }
                lineno++;
                start = at + 1;
                if (got == 0)
                    break;
                p = nl + 1;
            }
            pos += (uint64_t)got;
            if (g == end || got == 0)
                break;
        }
        if (g < end) {
            g3_error("gpt3d curate lsh: --verify exact: the shard '%s' has no line %llu, which its signatures '%s' sign (the shard changed after minhash: rerun minhash)",
                     path, (unsigned long long)L->line[g], L->mh_path[s]);
            return G3_ERR_FORMAT;
        }
    }
    return G3_OK;
}

static int g3_curate_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* --verify exact: document g's shingle set, from the slot that holds it or read into the slot
 * that does not hold `other` (the pair's other document).  OUT: *set_p.  RET: G3_OK or the
 * error (logged). */
static g3_status_t g3_curate_set_get(g3_curate_lsh_t *L, uint64_t g, uint64_t other,
                                     g3_curate_set_t **set_p)
{
    g3_curate_set_t *set;
    g3_curate_mh_rec_t *rec = L->ra;
    int s = g3_curate_shard_of(L, g);
    size_t n = L->len[g], nx;
    char *norm = NULL;
    size_t nlen;
    g3_status_t st;

    for (int i = 0; i < 2; i++) {
        if (L->set[i].valid && L->set[i].g == g) {
            *set_p = &L->set[i];
            return G3_OK;
        }
    }
    set = L->set[0].valid && L->set[0].g == other ? &L->set[1] : &L->set[0];
    set->valid = 0;
    if ((st = g3_curate_rec_read(L, g, rec)) != G3_OK)
        return st;
    L->raw.len = 0;
    if (g3_buf_reserve(&L->raw, n + 1) != G3_OK)
        return G3_ERR_NO_MEMORY;
    for (size_t done = 0; done < n;) {
        ssize_t got = pread(L->sfd[s], L->raw.data + done, n - done, (off_t)(L->off[g] + done));
        if (got <= 0) {
            g3_error("gpt3d curate lsh: cannot read the shard '%s' at byte %llu: %s",
                     L->list.path[s], (unsigned long long)(L->off[g] + done),
                     got == 0 ? "unexpected end of file (the shard changed: rerun minhash)" : strerror(errno));
            return G3_ERR_IO;
        }
        done += (size_t)got;
    }
    if (n > 0 && L->raw.data[n - 1] == '\r')
        n--;
    L->raw.data[n] = '\0';
    if ((st = g3_curate_doc_parse(L->list.path[s], L->line[g], L->raw.data, n,
                                  L->io->text_key, &L->doc)) != G3_OK)
        return st;
    if ((st = g3_curate_normalize(L->doc.text.data, L->doc.text.len, (int)L->lower, &norm,
                                  &nlen)) != G3_OK)
        return st;
    if (g3_curate_hash_bytes(norm, nlen, 0x243F6A8885A308D3ULL) != rec->exact[0]
        || g3_curate_hash_bytes(norm, nlen, 0x13198A2E03707344ULL) != rec->exact[1]) {
        g3_error("gpt3d curate lsh: --verify exact: %s line %llu is not the document that '%s' signed (the shard changed after minhash: rerun minhash)",
                 L->list.path[s], (unsigned long long)L->line[g], L->mh_path[s]);
        free(norm);
        return G3_ERR_FORMAT;
    }
    st = g3_curate_words(norm, nlen, &L->words);
    free(norm);
    if (st != G3_OK)
        return st;
    nx = g3_curate_shingle_count(L->words.n, L->ngram);
    if (nx > set->cap) {
        uint64_t *q = realloc(set->h, nx * sizeof(*q));
        if (!q)
            return G3_ERR_NO_MEMORY;
        set->h = q;
        set->cap = nx;
    }
    for (size_t i = 0; i < nx; i++)
        set->h[i] = g3_curate_shingle_hash(&L->words, i, L->ngram);
    qsort(set->h, nx, sizeof(*set->h), g3_curate_u64_cmp);
    set->n = 0;
    for (size_t i = 0; i < nx; i++)
        if (set->n == 0 || set->h[set->n - 1] != set->h[i])
            set->h[set->n++] = set->h[i];
    set->g = g;
    set->valid = 1;
    *set_p = set;
    return G3_OK;
}

/* --verify exact.  OUT: *similar, whether the exact Jaccard of a's and b's shingle sets reaches
 * threshold.  RET: G3_OK or the error (logged). */
static g3_status_t g3_curate_similar_exact(g3_curate_lsh_t *L, uint64_t a, uint64_t b,
                                           double threshold, int *similar)
{
    g3_curate_set_t *x, *y;
    g3_status_t st;
    size_t i = 0, j = 0, inter = 0;
    if ((st = g3_curate_set_get(L, a, b, &x)) != G3_OK
        || (st = g3_curate_set_get(L, b, a, &y)) != G3_OK)
        return st;
    while (i < x->n && j < y->n) {
        if (x->h[i] < y->h[j]) i++;
        else if (y->h[j] < x->h[i]) j++;
        else { inter++; i++; j++; }
    }
    size_t uni = x->n + y->n - inter;
    *similar = uni > 0 && (double)inter >= threshold * (double)uni - 1e-9;
    return G3_OK;
}

/* OUT: *similar, whether the estimated Jaccard of a and b reaches threshold (or, with --verify
 * exact, the exact one).  RET: G3_OK or G3_ERR_IO. */
static g3_status_t g3_curate_similar(g3_curate_lsh_t *L, uint64_t a, uint64_t b, double threshold,
                                     int *similar)
{
    g3_status_t st;
    uint32_t eq = 0;
    if (L->verify_exact)
        return g3_curate_similar_exact(L, a, b, threshold, similar);
    if ((st = g3_curate_rec_read(L, a, L->ra)) != G3_OK
        || (st = g3_curate_rec_read(L, b, L->rb)) != G3_OK)
        return st;
    for (uint32_t k = 0; k < L->K; k++)
        eq += L->ra->sig[k] == L->rb->sig[k];
    *similar = (double)eq >= threshold * (double)L->K - 1e-9;
    return G3_OK;
}

typedef struct {
    g3_curate_lsh_t   *L;
    int                band, rows, rank, R;
    g3_curate_entry_t *e;
    uint64_t           ne, cap;
} g3_curate_bscan_t;

static g3_status_t g3_curate_bscan(void *ctx, uint64_t g, const g3_curate_mh_rec_t *rec)
{
    g3_curate_bscan_t *c = ctx;
    if (c->L->dead[g] || rec->shingles == 0)
        return G3_OK;
    uint64_t key = g3_curate_hash_bytes(rec->sig + (size_t)c->band * (size_t)c->rows,
                                        (size_t)c->rows * 4,
                                        0x5851F42D4C957F2DULL + (uint64_t)c->band);
    if (key % (uint64_t)c->R != (uint64_t)c->rank)
        return G3_OK;
    if (c->ne == c->cap) {   /* a share larger than planned: many equal keys on this rank */
        uint64_t cap = 2 * c->cap + 4096;
        g3_curate_entry_t *q = realloc(c->e, cap * sizeof(*q));
        if (!q)
            return G3_ERR_NO_MEMORY;
        c->e = q;
        c->cap = cap;
    }
    c->e[c->ne++] = (g3_curate_entry_t){ key, g };
    return G3_OK;
}

/* LSH over this rank's buckets, band by band, into the local forest. */
static g3_status_t g3_curate_lsh_bands(g3_curate_lsh_t *L, const g3_curate_lsh_params_t *p,
                                       int bands, int rows, int rank, int R)
{
    g3_curate_bscan_t c = { L, 0, rows, rank, R, NULL, 0, 0 };
    uint64_t alive = 0;
    g3_status_t st = G3_OK;

    for (uint64_t g = 0; g < L->n; g++)
        alive += !L->dead[g];
    /* A rank's share of a band: about alive / R entries (all of them when R = 1); it grows
     * when equal keys (a large cluster of near-duplicates) fall to one rank. */
    c.cap = R == 1 ? alive : alive / (uint64_t)R + alive / (uint64_t)R / 8 + 4096;
    c.e = malloc((c.cap ? c.cap : 1) * sizeof(*c.e));
    if (!c.e)
        return G3_ERR_NO_MEMORY;
    for (int band = 0; band < bands && st == G3_OK; band++) {
        c.band = band;
        c.ne = 0;
        if ((st = g3_curate_scan(L, g3_curate_bscan, &c)) != G3_OK)
            break;
        qsort(c.e, c.ne, sizeof(*c.e), g3_curate_entry_cmp);
        for (uint64_t i = 0; i < c.ne && st == G3_OK;) {
            uint64_t j = i;
            while (j < c.ne && c.e[j].key == c.e[i].key)
                j++;
            if (j - i > L->largest_bucket)
                L->largest_bucket = j - i;
            /* Each member against the bucket's first `anchors` members before it. */
            for (uint64_t m = i + 1; m < j && st == G3_OK; m++) {
                uint64_t lim = m - i < (uint64_t)p->anchors ? m : i + (uint64_t)p->anchors;
                for (uint64_t a = i; a < lim; a++) {
                    uint32_t ga = (uint32_t)c.e[a].g, gm = (uint32_t)c.e[m].g;
                    int sim;
                    if (g3_curate_find(L->parent, ga) == g3_curate_find(L->parent, gm))
                        continue;
                    L->pairs_checked++;
                    if ((st = g3_curate_similar(L, ga, gm, p->threshold, &sim)) != G3_OK)
                        break;
                    if (sim) {
                        g3_curate_union(L->parent, ga, gm);
                        L->edges++;
                    }
                }
            }
            i = j;
        }
    }
    free(c.e);
    return st;
}

/* Rank 0 gets every rank's forest (as (doc, root) pairs) and joins it into its own. */
static g3_status_t g3_curate_lsh_merge(g3_curate_lsh_t *L, g3_comm_t *comm, int rank)
{
    int64_t *pairs;
    uint64_t np = 0;
    g3_status_t st;
    int64_t counts[3] = { (int64_t)L->pairs_checked, (int64_t)L->edges,
                          (int64_t)L->largest_bucket };

    if (rank == 0) {
        st = g3_curate_recv_pairs(comm, g3_curate_take_union, L);
        for (int r = 1; st == G3_OK && r < g3_comm_size(comm); r++) {
            st = g3_comm_recv(comm, counts, 3, G3_DTYPE_INT64, r, 3);
            L->pairs_checked += (uint64_t)counts[0];
            L->edges += (uint64_t)counts[1];
            if ((uint64_t)counts[2] > L->largest_bucket)
                L->largest_bucket = (uint64_t)counts[2];
        }
        return st;
    }
    for (uint64_t g = 0; g < L->n; g++)
        np += L->parent[g] != g;
    pairs = malloc((np ? np : 1) * 2 * sizeof(int64_t));
    if (!pairs)
        return G3_ERR_NO_MEMORY;
    np = 0;
    for (uint64_t g = 0; g < L->n; g++) {
        if (L->parent[g] == g)
            continue;
        pairs[2 * np] = (int64_t)g;
        pairs[2 * np + 1] = g3_curate_find(L->parent, (uint32_t)g);
        np++;
    }
    st = g3_curate_send_pairs(comm, pairs, (int64_t)np);
    free(pairs);
    if (st == G3_OK)
        st = g3_comm_send(comm, counts, 3, G3_DTYPE_INT64, 0, 3);
    return st;
}

/* Rank 0: choose the kept document of each component, write duplicates.tsv and the report. */
static g3_status_t g3_curate_lsh_write(g3_curate_lsh_t *L, const g3_curate_io_t *io,
                                       const g3_curate_lsh_params_t *p, const char *params,
                                       double t0, g3_curate_counts_t *c)
{
    char path[4096], rep[4096];
    g3_curate_out_t o;
    g3_status_t st;
    uint32_t *best = malloc((L->n ? L->n : 1) * sizeof(uint32_t));
    uint32_t *size = calloc(L->n ? L->n : 1, sizeof(uint32_t));
    uint64_t nexact = 0, nfuzzy = 0, ncomp = 0;

    if (!best || !size) {
        free(best);
        free(size);
        return G3_ERR_NO_MEMORY;
    }
    for (uint64_t g = 0; g < L->n; g++) {
        if (L->dead[g])
            continue;
        uint32_t root = g3_curate_find(L->parent, (uint32_t)g);
        if (size[root]++ == 0) {
            best[root] = (uint32_t)g;
            continue;
        }
        if (p->keep == G3_CURATE_KEEP_LONGEST && L->norm_len[g] > L->norm_len[best[root]])
            best[root] = (uint32_t)g;
    }
    snprintf(path, sizeof(path), "%s/duplicates.tsv", io->output_dir);
    snprintf(rep, sizeof(rep), "%s/report.json", io->output_dir);
    if ((st = g3_curate_out_open(&o, path, "duplicate list")) != G3_OK)
        goto err_free;
    fprintf(o.f, "# gpt3d-curate-duplicates 1\n");
    for (uint64_t g = 0; g < L->n; g++) {
        uint64_t kept;
        const char *kind;
        if (L->dead[g]) {
            kept = (uint64_t)L->exact_of[g];
            kind = "exact";
            nexact++;
        } else {
            uint32_t root = g3_curate_find(L->parent, (uint32_t)g);
            if (size[root] < 2 || best[root] == g)
                continue;
            kept = best[root];
            kind = "fuzzy";
            nfuzzy++;
        }
        fprintf(o.f, "%d\t%llu\t%s\t%d\t%llu\n", g3_curate_shard_of(L, g),
                (unsigned long long)L->line[g], kind, g3_curate_shard_of(L, kept),
                (unsigned long long)L->line[kept]);
    }
    for (uint64_t g = 0; g < L->n; g++)
        ncomp += size[g] >= 2;
    if ((st = g3_curate_out_commit(&o)) != G3_OK)
        goto err_free;
    {
        g3_buf_t b = { 0 };
        struct stat sb;
        g3_curate_rep_raw(&b, "{\"format\": \"gpt3d-curate-report\",\n  \"version\": 1");
        g3_curate_rep_str(&b, "stage", "lsh");
        g3_curate_rep_str(&b, "input", "");
        g3_curate_rep_u64(&b, "input_bytes", 0);
        g3_curate_rep_str(&b, "params", params);
        g3_curate_rep_u64(&b, "shards", (uint64_t)L->nshards);
        g3_curate_rep_u64(&b, "docs", L->n);
        g3_curate_rep_u64(&b, "removed_exact", nexact);
        g3_curate_rep_u64(&b, "removed_fuzzy", nfuzzy);
        g3_curate_rep_u64(&b, "components", ncomp);
        g3_curate_rep_u64(&b, "largest_bucket", L->largest_bucket);
        stat(path, &sb);
        g3_curate_rep_u64(&b, "output_bytes", (uint64_t)sb.st_size);
        g3_curate_rep_raw(&b, "\n}\n");
        if ((st = g3_curate_out_open(&o, rep, "report")) == G3_OK) {
            fwrite(b.data, 1, b.len, o.f);
            st = g3_curate_out_commit(&o);
        }
        g3_buf_free(&b);
    }
    c->docs_in = L->n;
    c->docs_out = L->n - nexact - nfuzzy;
    c->shards_done = (uint64_t)L->nshards;
    c->seconds = g3_clock_now() - t0;
    g3_info("curate lsh: %llu documents in %d shards: %llu exact and %llu fuzzy duplicates in %llu components; %llu candidate pairs checked, %llu edges (%.1f s)",
            (unsigned long long)L->n, L->nshards, (unsigned long long)nexact,
            (unsigned long long)nfuzzy, (unsigned long long)ncomp,
            (unsigned long long)L->pairs_checked, (unsigned long long)L->edges, c->seconds);
err_free:
    free(best);
    free(size);
    return st;
}

/* The lsh stage's parameters as its report records them, with the signatures' total size and
 * a hash of their times (new signatures redo lsh).  OUT: params (size bytes). */
static void g3_curate_lsh_params_str(const g3_curate_lsh_t *L, const char *mh_dir,
                                     const g3_curate_lsh_params_t *p,
                                     const g3_curate_mh_params_t *mp, char *params, size_t size)
{
    char path[4096];

    /* The signatures' sizes and times stand for their content: new signatures redo lsh. */
    uint64_t mh_bytes = 0, mh_time = 0;
    for (int s = 0; s < L->nshards; s++) {
        struct stat sb;
        g3_curate_shard_path(mh_dir, s, "mh", path, sizeof(path));
        if (stat(path, &sb) == 0) {
            mh_bytes += (uint64_t)sb.st_size;
            mh_time = g3_hash_mix64(mh_time ^ ((uint64_t)sb.st_mtim.tv_sec * 1000000000u
                                                 + (uint64_t)sb.st_mtim.tv_nsec));
        }
    }
    snprintf(params, size,
             "shards=%d bands=%d rows=%d threshold=%.6g keep=%s anchors=%d exact_only=%d verify=%s seed=%llu signatures=%llu:%016llx",
             L->nshards, mp->bands, mp->rows, p->threshold,
             p->keep == G3_CURATE_KEEP_LONGEST ? "longest" : "first", p->anchors, p->exact_only,
             p->verify_exact ? "exact" : "estimate",
             (unsigned long long)mp->seed, (unsigned long long)mh_bytes,
             (unsigned long long)mh_time);
}

/* Allocate the per-document arrays of an opened L (L->n documents): union-find parents (each
 * its own), the dead marks and the read buffers on every rank; the line numbers where rank 0
 * writes or exact verification reads them; rank 0's exact-duplicate and length arrays.
 * RET: G3_ERR_NO_MEMORY (logged). */
static g3_status_t g3_curate_lsh_alloc(g3_curate_lsh_t *L, const g3_curate_io_t *io,
                                       const g3_curate_lsh_params_t *p, int rank)
{
    L->parent = malloc((L->n ? L->n : 1) * sizeof(uint32_t));
    L->dead = calloc((L->n + 8) & ~(uint64_t)7, 1);
    L->buf = malloc(G3_CURATE_SCAN_BYTES > L->rsize ? G3_CURATE_SCAN_BYTES : L->rsize);
    L->ra = malloc(L->rsize);
    L->rb = malloc(L->rsize);
    L->verify_exact = p->verify_exact && !p->exact_only;
    L->io = io;
    if (rank == 0 || L->verify_exact)
        L->line = malloc((L->n ? L->n : 1) * sizeof(uint64_t));
    if (rank == 0) {
        L->exact_of = malloc((L->n ? L->n : 1) * sizeof(int64_t));
        L->norm_len = malloc((L->n ? L->n : 1) * sizeof(uint32_t));
    }
    if (!L->parent || !L->dead || !L->buf || !L->ra || !L->rb
        || ((rank == 0 || L->verify_exact) && !L->line)
        || (rank == 0 && (!L->exact_of || !L->norm_len))) {
        g3_error("gpt3d curate lsh: out of memory for %llu documents", (unsigned long long)L->n);
        return G3_ERR_NO_MEMORY;
    }
    for (uint64_t g = 0; g < L->n; g++)
        L->parent[g] = (uint32_t)g;
    return G3_OK;
}

/* Close L's files and free everything it holds (any part may be unset). */
static void g3_curate_lsh_free(g3_curate_lsh_t *L)
{
    for (int s = 0; L->fd && s < L->nshards; s++) {
        if (L->fd[s] >= 0)
            close(L->fd[s]);
        if (L->mh_path)
            free(L->mh_path[s]);
    }
    for (int s = 0; L->sfd && s < L->nshards; s++)
        if (L->sfd[s] >= 0)
            close(L->sfd[s]);
    free(L->sfd);
    free(L->off);
    free(L->len);
    g3_buf_free(&L->raw);
    g3_buf_free(&L->doc.text);
    g3_curate_words_free(&L->words);
    free(L->set[0].h);
    free(L->set[1].h);
    free(L->fd);
    free(L->mh_path);
    free(L->buf);
    free(L->ra);
    free(L->rb);
    free(L->line);
    free(L->norm_len);
    free(L->first);
    free(L->parent);
    free(L->dead);
    free(L->exact_of);
    g3_curate_list_free(&L->list);
}

g3_status_t g3_curate_lsh(const g3_curate_io_t *io, const char *mh_dir,
                          const g3_curate_lsh_params_t *p, const g3_curate_mh_params_t *mp,
                          g3_comm_t *comm, g3_curate_counts_t *c)
{
    g3_curate_lsh_t L;
    char params[512], failed[4096], path[4096], rep[4096];
    int rank = comm ? g3_comm_rank(comm) : 0, R = comm ? g3_comm_size(comm) : 1;
    double t0 = g3_clock_now();
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    memset(&L, 0, sizeof(L));
    if (mp->bands * mp->rows != mp->num_perm || p->threshold <= 0 || p->threshold > 1
        || p->anchors < 1) {
        g3_error("gpt3d curate lsh: --bands %d x --rows %d must equal --num-perm %d, --threshold %.3g must be in (0, 1] and --anchors %d at least 1",
                 mp->bands, mp->rows, mp->num_perm, p->threshold, p->anchors);
        return G3_ERR_INVALID_ARG;
    }
    if ((st = g3_curate_list_read(io->shard_list, &L.list)) != G3_OK)
        return st;
    L.nshards = L.list.n;
    g3_curate_lsh_params_str(&L, mh_dir, p, mp, params, sizeof(params));
    snprintf(path, sizeof(path), "%s/duplicates.tsv", io->output_dir);
    snprintf(rep, sizeof(rep), "%s/report.json", io->output_dir);
    if (!io->force && g3_curate_report_ok(rep, "lsh", NULL, params, path)) {
        if (rank == 0)
            g3_info("curate lsh: '%s' is done already (%s verifies); skipped", path, rep);
        c->shards_skipped = (uint64_t)L.nshards;
        g3_curate_list_free(&L.list);
        return G3_OK;
    }
    if (rank == 0) {
        unlink(rep);
        if (g3_mkdir_p(io->output_dir, 0777, failed, sizeof(failed)) != G3_OK) {
            g3_error("gpt3d curate lsh: cannot create the output directory '%s' (at '%s'): %s",
                     io->output_dir, failed, strerror(errno));
            st = G3_ERR_IO;
            goto cleanup;
        }
    }
    if ((st = g3_curate_lsh_open(&L, mh_dir, mp)) != G3_OK)
        goto cleanup;
    if ((st = g3_curate_lsh_alloc(&L, io, p, rank)) != G3_OK)
        goto cleanup;
    if ((st = g3_curate_lsh_exact(&L, comm, rank, R)) != G3_OK)
        goto cleanup;
    if (L.verify_exact && (st = g3_curate_lsh_index(&L)) != G3_OK)
        goto cleanup;
    if (!p->exact_only && (st = g3_curate_lsh_bands(&L, p, mp->bands, mp->rows, rank, R)) != G3_OK)
        goto cleanup;
    if (comm && (st = g3_curate_lsh_merge(&L, comm, rank)) != G3_OK)
        goto cleanup;
    if (rank == 0)
        st = g3_curate_lsh_write(&L, io, p, params, t0, c);
    if (st == G3_OK && comm)
        st = g3_comm_barrier(comm);

cleanup:
    if (st == G3_ERR_NO_MEMORY && L.parent)
        g3_error("gpt3d curate lsh: out of memory (%llu documents)", (unsigned long long)L.n);
    g3_curate_lsh_free(&L);
    return st;
}
