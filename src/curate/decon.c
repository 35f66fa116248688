/* gpt3d curate: decontamination against evaluation task files, as GPT-3 and MT-NLG did it
 * (curate.h, docs/curation.md).
 *
 * Words are runs of letters and numbers, lower-cased (punctuation and white space dropped:
 * g3_curate_words); an n-gram is n consecutive words.  Every n-gram of every task item (a line
 * of a task file) goes into one table, with the first item it came from.  contam-count counts,
 * per shard, the documents that hold each task n-gram (OUT/shard-N.ngc: "G3CURNGC", u32
 * version 1, u32 ngram, u64 entries, then (u64 n-gram hash, u64 documents) sorted by hash).
 * decontaminate sums those counts over all shards: an n-gram in >= `frequent` documents is
 * common text, not contamination.  Each other match, widened by `margin` characters on each
 * side, is cut out and the document split there; overlapping cuts merge; pieces shorter than
 * `min_piece` characters are dropped, and a document cut more than `max_splits` times is
 * dropped whole.  Each piece keeps the document's other JSON fields. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/mem.h"
#include "curate/curate_internal.h"

#define G3_CURATE_NGC_MAGIC "G3CURNGC"
#define G3_CURATE_NGC_VERSION 1u
#define G3_CURATE_EXAMPLES 5

typedef struct {
    uint64_t *key;        /* (cap,) n-gram hash; 0 = empty slot                 */
    uint32_t *item;       /* (cap,) first item holding it                       */
    uint64_t *count;      /* (cap,) documents holding it (this shard / summed)  */
    uint32_t *seen;       /* (cap,) last document that counted it (+1)          */
    uint64_t  cap, n;
} g3_curate_index_t;

typedef struct {
    const g3_curate_decon_params_t *p;
    g3_curate_index_t  ix;
    uint32_t          *item_file;    /* (nitems,) task file of each item   */
    uint64_t          *item_line;    /* (nitems,) its line                 */
    uint32_t           nitems, citems;
    uint64_t           items_short;  /* items with fewer than n words      */
    g3_curate_words_t  words;
    /* per shard (decontaminate) */
    uint64_t          *item_docs;    /* (nitems,) documents it was found in */
    uint32_t          *item_ex;      /* (nitems,) the first document's line */
    uint32_t          *item_last;    /* (nitems,) the last document's line  */
    int                counting;
} g3_curate_decon_t;

static uint64_t g3_curate_ngram_hash(const g3_curate_word_t *w, int n)
{
    uint64_t h = 0x6A09E667F3BCC908ULL;
    for (int k = 0; k < n; k++)
        h = g3_hash_mix64(h ^ w[k].hash) + (uint64_t)k;
    h = g3_hash_mix64(h);
    return h ? h : 1;
}

/* RET: the slot of key (its own or the empty one where it would go). */
static uint64_t g3_curate_ix_slot(const g3_curate_index_t *ix, uint64_t key)
{
    uint64_t m = ix->cap - 1, s = key & m;
    while (ix->key[s] && ix->key[s] != key)
        s = (s + 1) & m;
    return s;
}

static g3_status_t g3_curate_ix_grow(g3_curate_index_t *ix)
{
    g3_curate_index_t nx = { 0 };
    nx.cap = ix->cap ? 2 * ix->cap : 1024;
    nx.key = calloc(nx.cap, sizeof(uint64_t));
    nx.item = calloc(nx.cap, sizeof(uint32_t));
    if (!nx.key || !nx.item) {
        free(nx.key);
        free(nx.item);
        return G3_ERR_NO_MEMORY;
    }
    for (uint64_t s = 0; s < ix->cap; s++) {
        if (!ix->key[s])
            continue;
        uint64_t t = g3_curate_ix_slot(&nx, ix->key[s]);
        nx.key[t] = ix->key[s];
        nx.item[t] = ix->item[s];
    }
    nx.n = ix->n;
    free(ix->key);
    free(ix->item);
    *ix = nx;
    return G3_OK;
}

static g3_status_t g3_curate_add_item(g3_curate_decon_t *d, uint32_t file, uint64_t line,
                                      const char *text, size_t len)
{
    int n = d->p->ngram;
    g3_status_t st;

    if ((st = g3_curate_words(text, len, &d->words)) != G3_OK)
        return st;
    if (d->words.n < (size_t)n) {
        d->items_short++;
        return G3_OK;
    }
    if (d->nitems == d->citems) {
        uint32_t cap = d->citems ? 2 * d->citems : 256;
        uint32_t *f = realloc(d->item_file, cap * sizeof(uint32_t));
        if (f)
            d->item_file = f;
        uint64_t *l = f ? realloc(d->item_line, cap * sizeof(uint64_t)) : NULL;
        if (!f || !l)
            return G3_ERR_NO_MEMORY;
        d->item_line = l;
        d->citems = cap;
    }
    d->item_file[d->nitems] = file;
    d->item_line[d->nitems] = line;
    for (size_t i = 0; i + (size_t)n <= d->words.n; i++) {
        if (2 * (d->ix.n + 1) > d->ix.cap && (st = g3_curate_ix_grow(&d->ix)) != G3_OK)
            return st;
        uint64_t key = g3_curate_ngram_hash(d->words.w + i, n);
        uint64_t s = g3_curate_ix_slot(&d->ix, key);
        if (!d->ix.key[s]) {
            d->ix.key[s] = key;
            d->ix.item[s] = d->nitems;
            d->ix.n++;
        }
    }
    d->nitems++;
    return G3_OK;
}

/* Read every task file into the index. */
static g3_status_t g3_curate_tasks_load(g3_curate_decon_t *d, size_t max_line)
{
    const g3_curate_decon_params_t *p = d->p;
    g3_status_t st;

    for (int f = 0; f < p->num_task_files; f++) {
        g3_curate_reader_t r;
        g3_curate_doc_t doc = { 0 };
        const char *path = p->task_files[f];
        int json = -1;
        if ((st = g3_curate_reader_open(&r, path, max_line)) != G3_OK)
            return st;
        for (;;) {
            if (json < 0) {
                /* JSON lines when the first non-blank byte is '{', else plain text lines. */
                int ch;
                while ((ch = fgetc(r.f)) == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {}
                json = ch == '{';
                rewind(r.f);
            }
            if (json) {
                st = g3_curate_reader_next(&r, p->task_key, &doc);
                if (st != G3_OK)
                    break;
                st = g3_curate_add_item(d, (uint32_t)f, doc.line, doc.text.data, doc.text.len);
            } else {
                char *line = NULL;
                size_t cap = 0;
                ssize_t len;
                uint64_t lineno = 0;
                while ((len = getline(&line, &cap, r.f)) >= 0) {
                    lineno++;
                    if ((size_t)len > max_line
                        || g3_curate_utf8_check(line, (size_t)len) != (size_t)len) {
                        g3_error("gpt3d curate: task file '%s' line %llu: invalid UTF-8 or longer than %zu bytes",
                                 path, (unsigned long long)lineno, max_line);
                        st = G3_ERR_FORMAT;
                        break;
                    }
                    st = g3_curate_add_item(d, (uint32_t)f, lineno, line, (size_t)len);
                    if (st != G3_OK)
                        break;
                }
                free(line);
                if (st == G3_OK)
                    st = G3_ERR_NOT_FOUND;
                break;
            }
            if (st != G3_OK)
                break;
        }
        g3_buf_free(&doc.text);
        g3_curate_reader_close(&r);
        if (st != G3_ERR_NOT_FOUND) {
            if (st == G3_ERR_NO_MEMORY)
                g3_error("gpt3d curate: out of memory indexing the task file '%s'", path);
            return st;
        }
    }
    if (d->nitems == 0) {
        g3_error("gpt3d curate: the task files hold no item of %d words or more (check --task-files and --task-key)",
                 p->ngram);
        return G3_ERR_INVALID_ARG;
    }
    d->ix.count = calloc(d->ix.cap, sizeof(uint64_t));
    d->ix.seen = calloc(d->ix.cap, sizeof(uint32_t));
    d->item_docs = calloc(d->nitems, sizeof(uint64_t));
    d->item_ex = calloc(d->nitems, sizeof(uint32_t));
    d->item_last = calloc(d->nitems, sizeof(uint32_t));
    if (!d->ix.count || !d->ix.seen || !d->item_docs || !d->item_ex || !d->item_last) {
        g3_error("gpt3d curate: out of memory for the task index");
        return G3_ERR_NO_MEMORY;
    }
    g3_info("curate: %u task items (%llu shorter than %d words not indexed), %llu distinct %d-grams",
            d->nitems, (unsigned long long)d->items_short, p->ngram, (unsigned long long)d->ix.n,
            p->ngram);
    return G3_OK;
}

/* ---- contam-count -------------------------------------------------------- */

static int g3_curate_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static g3_status_t g3_curate_count_shard(void *ctx, const g3_curate_shard_t *sh,
                                         g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                         uint64_t *docs_in, uint64_t *docs_out)
{
    g3_curate_decon_t *d = ctx;
    g3_curate_index_t *ix = &d->ix;
    g3_curate_doc_t doc = { 0 };
    int n = d->p->ngram;
    uint64_t entries = 0, docs_hit = 0;
    uint32_t docno = 0;
    g3_status_t st;

    memset(ix->count, 0, ix->cap * sizeof(uint64_t));
    memset(ix->seen, 0, ix->cap * sizeof(uint32_t));
    while ((st = g3_curate_reader_next(in, sh->text_key, &doc)) == G3_OK) {
        int hit = 0;
        (*docs_in)++;
        docno++;
        if ((st = g3_curate_words(doc.text.data, doc.text.len, &d->words)) != G3_OK)
            break;
        for (size_t i = 0; i + (size_t)n <= d->words.n; i++) {
            uint64_t s = g3_curate_ix_slot(ix, g3_curate_ngram_hash(d->words.w + i, n));
            if (ix->key[s] && ix->seen[s] != docno) {
                ix->seen[s] = docno;
                ix->count[s]++;
                hit = 1;
            }
        }
        docs_hit += hit;
    }
    g3_buf_free(&doc.text);
    if (st != G3_ERR_NOT_FOUND)
        return st;
    /* Entries sorted by hash: collect, sort, write. */
    for (uint64_t s = 0; s < ix->cap; s++)
        entries += ix->count[s] > 0;
    uint64_t *e = malloc((entries ? entries : 1) * 2 * sizeof(uint64_t));
    if (!e)
        return G3_ERR_NO_MEMORY;
    uint64_t k = 0;
    for (uint64_t s = 0; s < ix->cap; s++)
        if (ix->count[s]) {
            e[2 * k] = ix->key[s];
            e[2 * k + 1] = ix->count[s];
            k++;
        }
    qsort(e, entries, 2 * sizeof(uint64_t), g3_curate_u64_cmp);
    uint32_t hdr[2] = { G3_CURATE_NGC_VERSION, (uint32_t)n };
    fwrite(G3_CURATE_NGC_MAGIC, 1, 8, out);
    fwrite(hdr, sizeof(hdr), 1, out);
    fwrite(&entries, sizeof(entries), 1, out);
    fwrite(e, 2 * sizeof(uint64_t), entries, out);
    free(e);
    *docs_out = *docs_in;
    g3_curate_rep_u64(rep, "docs_with_task_ngrams", docs_hit);
    g3_curate_rep_u64(rep, "task_ngrams_present", entries);
    return G3_OK;
}

/* The parameters that change the outputs: the task files (path and size) and n. */
static void g3_curate_decon_params_str(const g3_curate_io_t *io, const g3_curate_decon_params_t *p,
                                       char *s, size_t size)
{
    size_t used = (size_t)snprintf(s, size, "key=%s task_key=%s ngram=%d", io->text_key,
                                   p->task_key, p->ngram);
    for (int f = 0; f < p->num_task_files && used < size; f++) {
        struct stat sb;
        long long bytes = stat(p->task_files[f], &sb) == 0 ? (long long)sb.st_size : -1;
        used += (size_t)snprintf(s + used, size - used, " task=%s:%lld", p->task_files[f], bytes);
    }
}

static g3_status_t g3_curate_decon_init(g3_curate_decon_t *d, const g3_curate_io_t *io,
                                        const g3_curate_decon_params_t *p)
{
    memset(d, 0, sizeof(*d));
    d->p = p;
    if (p->num_task_files < 1 || p->ngram < 1 || p->ngram > 64 || p->margin < 0
        || p->min_piece < 0 || p->max_splits < 0 || p->frequent < 1) {
        g3_error("gpt3d curate: decontamination needs --task-files, --decon-ngram in 1..64, --margin, --min-piece and --max-splits >= 0, --frequent >= 1");
        return G3_ERR_INVALID_ARG;
    }
    return g3_curate_tasks_load(d, io->max_line_bytes);
}

static void g3_curate_decon_free(g3_curate_decon_t *d)
{
    G3_FREE_ALL(d->ix.key, d->ix.item, d->ix.count, d->ix.seen, d->item_file, d->item_line,
                d->item_docs, d->item_ex, d->item_last);
    g3_curate_words_free(&d->words);
}

g3_status_t g3_curate_contam_count(const g3_curate_io_t *io, const g3_curate_decon_params_t *p,
                                   g3_curate_counts_t *c)
{
    g3_curate_decon_t d;
    char params[8192];
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    if ((st = g3_curate_decon_init(&d, io, p)) == G3_OK) {
        g3_curate_decon_params_str(io, p, params, sizeof(params));
        st = g3_curate_each_shard(io, "contam-count", params, "ngc", g3_curate_count_shard, &d, c);
    }
    g3_curate_decon_free(&d);
    return st;
}

/* ---- decontaminate ----------------------------------------------------- */

/* Sum every shard's counts (all of the list, not only this task's) into ix->count. */
static g3_status_t g3_curate_counts_load(g3_curate_decon_t *d, const g3_curate_io_t *io,
                                         uint64_t *bytes)
{
    g3_curate_list_t list;
    char path[4096];
    g3_status_t st;

    *bytes = 0;
    if ((st = g3_curate_list_read(io->shard_list, &list)) != G3_OK)
        return st;
    memset(d->ix.count, 0, d->ix.cap * sizeof(uint64_t));
    for (int i = 0; i < list.n && st == G3_OK; i++) {
        char *data = NULL;
        size_t len = 0;
        uint32_t hdr[2];
        uint64_t entries;
        g3_curate_shard_path(d->p->counts_dir, i, "ngc", path, sizeof(path));
        if ((st = g3_read_file(path, "n-gram counts (run contam-count on every shard first)", &data, &len)) != G3_OK)
            break;
        *bytes += len;
        if (len < 24 || memcmp(data, G3_CURATE_NGC_MAGIC, 8) != 0) {
            g3_error("gpt3d curate decontaminate: '%s' is not a gpt3d n-gram count file", path);
            st = G3_ERR_FORMAT;
        } else {
            memcpy(hdr, data + 8, sizeof(hdr));
            memcpy(&entries, data + 16, sizeof(entries));
            if (hdr[0] != G3_CURATE_NGC_VERSION || hdr[1] != (uint32_t)d->p->ngram
                || len != 24 + entries * 16) {
                g3_error("gpt3d curate decontaminate: '%s' has version %u, n = %u and %zu bytes; expected version %u, n = %d and %llu bytes (rerun contam-count)",
                         path, hdr[0], hdr[1], len, G3_CURATE_NGC_VERSION, d->p->ngram,
                         (unsigned long long)(24 + entries * 16));
                st = G3_ERR_FORMAT;
            }
        }
        for (uint64_t k = 0; st == G3_OK && k < entries; k++) {
            uint64_t e[2];
            memcpy(e, data + 24 + 16 * k, sizeof(e));
            uint64_t s = g3_curate_ix_slot(&d->ix, e[0]);
            if (!d->ix.key[s]) {
                g3_error("gpt3d curate decontaminate: '%s' counts an n-gram that is not in the task files (made from other task files: rerun contam-count)",
                         path);
                st = G3_ERR_FORMAT;
                break;
            }
            d->ix.count[s] += e[1];
        }
        free(data);
    }
    g3_curate_list_free(&list);
    return st;
}

typedef struct {
    size_t a, b;   /* byte range [a, b) */
} g3_curate_range_t;

/* Move back (dir < 0) or forward over up to k code points from byte i of s[0..n). */
static size_t g3_curate_chars(const char *s, size_t n, size_t i, long k, int dir)
{
    while (k-- > 0) {
        if (dir < 0) {
            if (i == 0)
                break;
            i--;
            while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
                i--;
        } else {
            if (i >= n)
                break;
            i++;
            while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
                i++;
        }
    }
    return i;
}

static size_t g3_curate_nchars(const char *s, size_t a, size_t b)
{
    size_t c = 0;
    for (size_t i = a; i < b; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

typedef struct {
    uint64_t docs_hit, docs_dropped_splits, docs_dropped_short, pieces_out, pieces_short;
    uint64_t chars_removed, frequent_ignored;
    char     ex_hit[G3_CURATE_EXAMPLES][256], ex_drop[G3_CURATE_EXAMPLES][256];
    int      nex_hit, nex_drop;
    g3_curate_range_t *cuts;
    size_t   ncuts, ccuts;
    g3_buf_t piece;
} g3_curate_dstat_t;

static g3_status_t g3_curate_decon_doc(g3_curate_decon_t *d, g3_curate_dstat_t *ds,
                                       const g3_curate_shard_t *sh, const g3_curate_doc_t *doc,
                                       FILE *out, uint64_t *docs_out)
{
    const g3_curate_decon_params_t *p = d->p;
    const char *t = doc->text.data;
    size_t len = doc->text.len;
    int n = p->ngram;
    g3_status_t st;

    if ((st = g3_curate_words(t, len, &d->words)) != G3_OK)
        return st;
    ds->ncuts = 0;
    for (size_t i = 0; i + (size_t)n <= d->words.n; i++) {
        uint64_t s = g3_curate_ix_slot(&d->ix, g3_curate_ngram_hash(d->words.w + i, n));
        if (!d->ix.key[s])
            continue;
        if (d->ix.count[s] >= (uint64_t)p->frequent) {
            ds->frequent_ignored++;
            continue;
        }
        uint32_t item = d->ix.item[s];
        if (d->item_last[item] != (uint32_t)doc->line) {   /* once per document per item */
            d->item_last[item] = (uint32_t)doc->line;
            if (d->item_docs[item]++ == 0)
                d->item_ex[item] = (uint32_t)doc->line;
        }
        size_t a = g3_curate_chars(t, len, d->words.w[i].start, p->margin, -1);
        size_t b = g3_curate_chars(t, len, d->words.w[i + (size_t)n - 1].end, p->margin, 1);
        if (ds->ncuts > 0 && a <= ds->cuts[ds->ncuts - 1].b) {
            if (b > ds->cuts[ds->ncuts - 1].b)
                ds->cuts[ds->ncuts - 1].b = b;
            continue;
        }
        if (g3_mem_grow(&ds->cuts, &ds->ccuts, ds->ncuts, sizeof(*ds->cuts), 16) != G3_OK)
            return G3_ERR_NO_MEMORY;
        ds->cuts[ds->ncuts++] = (g3_curate_range_t){ a, b };
    }
    if (ds->ncuts == 0) {
        g3_curate_doc_keep(out, doc, docs_out);
        return G3_OK;
    }
    ds->docs_hit++;
    if (ds->nex_hit < G3_CURATE_EXAMPLES)
        g3_curate_doc_id(sh->in_path, doc->line, ds->ex_hit[ds->nex_hit++], 256);
    for (size_t k = 0; k < ds->ncuts; k++)
        ds->chars_removed += g3_curate_nchars(t, ds->cuts[k].a, ds->cuts[k].b);
    if (ds->ncuts > (size_t)p->max_splits) {
        ds->docs_dropped_splits++;
        if (ds->nex_drop < G3_CURATE_EXAMPLES)
            g3_curate_doc_id(sh->in_path, doc->line, ds->ex_drop[ds->nex_drop++], 256);
        return G3_OK;
    }
    int written = 0;
    for (size_t k = 0; k <= ds->ncuts; k++) {
        size_t a = k == 0 ? 0 : ds->cuts[k - 1].b, b = k == ds->ncuts ? len : ds->cuts[k].a;
        if (b <= a)
            continue;
        if (g3_curate_nchars(t, a, b) < (size_t)p->min_piece) {
            ds->pieces_short++;
            continue;
        }
        ds->piece.len = 0;
        g3_curate_json_str(&ds->piece, t + a, b - a);
        fwrite(doc->raw, 1, doc->val_start, out);
        fwrite(ds->piece.data, 1, ds->piece.len, out);
        fwrite(doc->raw + doc->val_end, 1, doc->raw_len - doc->val_end, out);
        fputc('\n', out);
        ds->pieces_out++;
        written = 1;
        (*docs_out)++;
    }
    if (!written) {
        ds->docs_dropped_short++;
        if (ds->nex_drop < G3_CURATE_EXAMPLES)
            g3_curate_doc_id(sh->in_path, doc->line, ds->ex_drop[ds->nex_drop++], 256);
    }
    return G3_OK;
}

static g3_status_t g3_curate_decon_shard(void *ctx, const g3_curate_shard_t *sh,
                                         g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                         uint64_t *docs_in, uint64_t *docs_out)
{
    g3_curate_decon_t *d = ctx;
    g3_curate_dstat_t ds;
    g3_curate_doc_t doc = { 0 };
    g3_status_t st;
    char id[256];

    memset(&ds, 0, sizeof(ds));
    memset(d->item_docs, 0, d->nitems * sizeof(uint64_t));
    memset(d->item_ex, 0, d->nitems * sizeof(uint32_t));
    memset(d->item_last, 0, d->nitems * sizeof(uint32_t));
    while ((st = g3_curate_reader_next(in, sh->text_key, &doc)) == G3_OK) {
        (*docs_in)++;
        if ((st = g3_curate_decon_doc(d, &ds, sh, &doc, out, docs_out)) != G3_OK) {
            g3_error("gpt3d curate decontaminate: out of memory at %s line %llu", sh->in_path,
                     (unsigned long long)doc.line);
            break;
        }
    }
    g3_buf_free(&doc.text);
    free(ds.cuts);
    g3_buf_free(&ds.piece);
    if (st != G3_ERR_NOT_FOUND)
        return st;
    g3_curate_rep_u64(rep, "docs_contaminated", ds.docs_hit);
    g3_curate_rep_u64(rep, "docs_dropped_too_many_splits", ds.docs_dropped_splits);
    g3_curate_rep_u64(rep, "docs_dropped_all_pieces_short", ds.docs_dropped_short);
    g3_curate_rep_u64(rep, "pieces_written", ds.pieces_out);
    g3_curate_rep_u64(rep, "pieces_dropped_short", ds.pieces_short);
    g3_curate_rep_u64(rep, "chars_removed", ds.chars_removed);
    g3_curate_rep_u64(rep, "matches_ignored_frequent", ds.frequent_ignored);
    g3_curate_rep_ids(rep, "examples_contaminated", ds.ex_hit, ds.nex_hit);
    g3_curate_rep_ids(rep, "examples_dropped", ds.ex_drop, ds.nex_drop);
    /* Which task items were found here: the item, the documents, one of them. */
    g3_curate_rep_raw(rep, ",\n  \"task_items_found\": [");
    int first = 1;
    for (uint32_t i = 0; i < d->nitems; i++) {
        if (!d->item_docs[i])
            continue;
        char t[64];
        g3_curate_rep_raw(rep, first ? "\n    {\"item\": " : ",\n    {\"item\": ");
        first = 0;
        g3_curate_doc_id(d->p->task_files[d->item_file[i]], d->item_line[i], id, sizeof(id));
        g3_curate_json_str(rep, id, strlen(id));
        snprintf(t, sizeof(t), ", \"docs\": %llu, \"example\": ",
                 (unsigned long long)d->item_docs[i]);
        g3_curate_rep_raw(rep, t);
        g3_curate_doc_id(sh->in_path, d->item_ex[i], id, sizeof(id));
        g3_curate_json_str(rep, id, strlen(id));
        g3_curate_rep_raw(rep, "}");
    }
    g3_curate_rep_raw(rep, first ? "]" : "\n  ]");
    return G3_OK;
}

g3_status_t g3_curate_decontaminate(const g3_curate_io_t *io, const g3_curate_decon_params_t *p,
                                    g3_curate_counts_t *c)
{
    g3_curate_decon_t d;
    char params[8400];
    uint64_t count_bytes = 0;
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    if (!p->counts_dir) {
        g3_error("gpt3d curate decontaminate: --counts-dir is required (the output of 'gpt3d curate contam-count' over the same shard list)");
        return G3_ERR_INVALID_ARG;
    }
    if ((st = g3_curate_decon_init(&d, io, p)) == G3_OK
        && (st = g3_curate_counts_load(&d, io, &count_bytes)) == G3_OK) {
        size_t used;
        g3_curate_decon_params_str(io, p, params, sizeof(params) - 200);
        used = strlen(params);
        snprintf(params + used, sizeof(params) - used,
                 " margin=%d min_piece=%d max_splits=%d frequent=%d counts=%s:%llu", p->margin,
                 p->min_piece, p->max_splits, p->frequent, p->counts_dir,
                 (unsigned long long)count_bytes);
        st = g3_curate_each_shard(io, "decontaminate", params, "jsonl", g3_curate_decon_shard,
                                  &d, c);
    }
    g3_curate_decon_free(&d);
    return st;
}
