/* gpt3d curate: the dedup stage (curate.h): copy a shard without the documents that the lsh
 * stage's duplicates.tsv names for it, lines unchanged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/mem.h"
#include "curate/curate_internal.h"

#define G3_CURATE_EXAMPLES 5

typedef struct {
    uint64_t line;
    int      shard;
    int      fuzzy;
} g3_curate_drop_t;

typedef struct {
    g3_curate_drop_t *drop;       /* (ndrop,) every removed document, by (shard, line) */
    size_t            ndrop;
    const char       *tsv_path;
} g3_curate_dedup_t;

static int g3_curate_drop_cmp(const void *a, const void *b)
{
    const g3_curate_drop_t *x = a, *y = b;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Parse duplicates.tsv (read whole: tsv, len) once into d->drop, sorted by shard and line.
 * RET: G3_OK, FORMAT (logged), NO_MEMORY. */
static g3_status_t g3_curate_drops_parse(g3_curate_dedup_t *d, const char *tsv, size_t len)
{
    size_t cap = 0;
    uint64_t lineno = 0;
    const char *p = tsv, *end = tsv + len;

    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        lineno++;
        if (*p != '#' && e > p) {
            char kind[16];
            int shard, ks;
            unsigned long long line, kl;
            if (sscanf(p, "%d\t%llu\t%15s\t%d\t%llu", &shard, &line, kind, &ks, &kl) != 5
                || (strcmp(kind, "exact") && strcmp(kind, "fuzzy"))) {
                g3_error("gpt3d curate dedup: %s line %llu: not 'SHARD LINE exact|fuzzy KEPT_SHARD KEPT_LINE' (rerun the lsh stage)",
                         d->tsv_path, (unsigned long long)lineno);
                return G3_ERR_FORMAT;
            }
            if (g3_mem_grow(&d->drop, &cap, d->ndrop, sizeof(*d->drop), 1024) != G3_OK)
                return G3_ERR_NO_MEMORY;
            d->drop[d->ndrop++] = (g3_curate_drop_t){ line, shard, kind[0] == 'f' };
        }
        p = e + 1;
    }
    if (d->ndrop > 1)
        qsort(d->drop, d->ndrop, sizeof(*d->drop), g3_curate_drop_cmp);
    return G3_OK;
}

/* The drops of shard `index`: d->drop[*lo .. *hi). */
static void g3_curate_drops_of(const g3_curate_dedup_t *d, int index, size_t *lo, size_t *hi)
{
    size_t a = 0, b = d->ndrop;
    while (a < b) {   /* first entry with shard >= index */
        size_t m = a + (b - a) / 2;
        if (d->drop[m].shard < index) a = m + 1;
        else b = m;
    }
    *lo = a;
    b = d->ndrop;
    while (a < b) {   /* first entry with shard > index */
        size_t m = a + (b - a) / 2;
        if (d->drop[m].shard <= index) a = m + 1;
        else b = m;
    }
    *hi = a;
}

static g3_status_t g3_curate_dedup_shard(void *ctx, const g3_curate_shard_t *sh,
                                         g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                         uint64_t *docs_in, uint64_t *docs_out)
{
    g3_curate_dedup_t *d = ctx;
    g3_curate_doc_t doc = { 0 };
    size_t k, hi, nd;
    uint64_t exact = 0, fuzzy = 0;
    char ex[G3_CURATE_EXAMPLES][256];
    int nex = 0;
    g3_status_t st;

    g3_curate_drops_of(d, sh->index, &k, &hi);
    nd = hi - k;
    const g3_curate_drop_t *drops = d->drop;
    while ((st = g3_curate_reader_next(in, sh->text_key, &doc)) == G3_OK) {
        (*docs_in)++;
        while (k < hi && drops[k].line < doc.line)
            k++;
        if (k < hi && drops[k].line == doc.line) {
            if (drops[k].fuzzy) fuzzy++;
            else exact++;
            if (nex < G3_CURATE_EXAMPLES)
                g3_curate_doc_id(sh->in_path, doc.line, ex[nex++], sizeof(ex[0]));
            continue;
        }
        g3_curate_doc_keep(out, &doc, docs_out);
    }
    g3_buf_free(&doc.text);
    if (st != G3_ERR_NOT_FOUND)
        return st;
    if (exact + fuzzy != nd) {
        g3_error("gpt3d curate dedup: %s names %zu documents of shard %d ('%s') but %llu of them are there (the shard changed after minhash: rerun minhash and lsh)",
                 d->tsv_path, nd, sh->index, sh->in_path, (unsigned long long)(exact + fuzzy));
        return G3_ERR_FORMAT;
    }
    g3_curate_rep_u64(rep, "removed_exact", exact);
    g3_curate_rep_u64(rep, "removed_fuzzy", fuzzy);
    g3_curate_rep_ids(rep, "examples", ex, nex);
    return G3_OK;
}

g3_status_t g3_curate_dedup(const g3_curate_io_t *io, const char *lsh_dir,
                            g3_curate_counts_t *c)
{
    g3_curate_dedup_t d;
    char path[4096], params[4300];
    char *tsv = NULL;
    size_t tsv_len = 0;
    struct stat sb;
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    memset(&d, 0, sizeof(d));
    snprintf(path, sizeof(path), "%s/duplicates.tsv", lsh_dir);
    d.tsv_path = path;
    if ((st = g3_read_file(path, "duplicate list (run the lsh stage first)", &tsv, &tsv_len)) != G3_OK)
        return st;
    if (tsv_len < 27 || memcmp(tsv, "# gpt3d-curate-duplicates ", 26) != 0 || tsv[26] != '1') {
        g3_error("gpt3d curate dedup: '%s' is not a gpt3d duplicate list of version 1 (rerun the lsh stage)",
                 path);
        free(tsv);
        return G3_ERR_FORMAT;
    }
    st = g3_curate_drops_parse(&d, tsv, tsv_len);
    free(tsv);
    if (st != G3_OK) {
        if (st == G3_ERR_NO_MEMORY)
            g3_error("gpt3d curate dedup: out of memory reading '%s'", path);
        free(d.drop);
        return st;
    }
    stat(path, &sb);
    snprintf(params, sizeof(params), "key=%s duplicates=%s bytes=%lld mtime=%lld", io->text_key,
             path, (long long)sb.st_size, (long long)sb.st_mtime);
    st = g3_curate_each_shard(io, "dedup", params, "jsonl", g3_curate_dedup_shard, &d, c);
    free(d.drop);
    return st;
}
