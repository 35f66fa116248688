/* gpt3d preprocess: text or JSON lines -> Megatron indexed dataset.
 *
 *   gpt3d preprocess --input corpus.jsonl --output-prefix out/corpus \
 *       --vocab-file encoder.json --merge-file vocab.bpe [--json-keys text] \
 *       [--append-eod] [--workers N]
 *
 * writes out/corpus_text_document.bin/.idx (one pair per JSON key, named as
 * Megatron's tools/preprocess_data.py names them) and beside each pair
 * out/corpus_text_document.tokenizer.json, the SHA-256 digests of the two
 * tokenizer files (data/tokid.h; Megatron's readers ignore it).  Input formats:
 *   jsonl  one JSON object per line; the document is the string under each
 *          key (blank lines are skipped);
 *   text   plain UTF-8; --text-docs says what a document is: "paragraph"
 *          (default: runs of non-blank lines, separated by blank lines),
 *          "line" (every non-blank line) or "file" (the whole input);
 *   auto   (default) jsonl when the first non-blank byte is '{', else text.
 * Invalid UTF-8 becomes U+FFFD (as Python's errors="replace"), counted and
 * reported; empty documents are skipped (as Megatron does).
 *
 * Threads: --workers tokenizer threads take batches of whole documents in
 * turn; the main thread writes the batches in input order, so the output
 * does not depend on the number of workers. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/opt.h"
#include "data/bpe.h"
#include "data/indexed.h"
#include "data/json.h"
#include "data/tokid.h"

static const g3_opt_spec_t g3_pre_specs[] = {
    { "input",          G3_OPT_STRING, NULL, "Input file: JSON lines or plain UTF-8 text ('-' for stdin).", NULL, 0, 0, "FILE" },
    { "output-prefix",  G3_OPT_STRING, NULL, "Output prefix: writes PREFIX_KEY_document.bin/.idx.", NULL, 0, 0, "PREFIX" },
    { "vocab-file",     G3_OPT_STRING, NULL, "GPT-2 vocabulary: encoder.json or vocab.json.", NULL, 0, 0, "FILE" },
    { "merge-file",     G3_OPT_STRING, NULL, "GPT-2 merges: vocab.bpe or merges.txt.", NULL, 0, 0, "FILE" },
    { "json-keys",      G3_OPT_LIST,   "text", "JSON keys to extract; one output dataset per key.", NULL, 1, 0, "KEY" },
    { "append-eod",     G3_OPT_BOOL,   NULL, "Append <|endoftext|> to every document.", NULL, 0, 0, NULL },
    { "workers",        G3_OPT_INT,    "0", "Tokenizer threads (0: one per online CPU).", NULL, 0, 0, "N" },
    { "input-format",   G3_OPT_CHOICE, "auto", "Input format.", "auto|jsonl|text", 0, 0, NULL },
    { "text-docs",      G3_OPT_CHOICE, "paragraph", "Plain text: what one document is.", "paragraph|line|file", 0, 0, NULL },
    { "tokenizer-type", G3_OPT_CHOICE, "GPT2BPETokenizer", "Accepted for Megatron compatibility.", "GPT2BPETokenizer", 0, 0, NULL },
    { "dataset-impl",   G3_OPT_CHOICE, "mmap", "Accepted for Megatron compatibility.", "mmap", 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_pre_cmd = {
    "preprocess", "Write a Megatron indexed dataset (.bin/.idx) from text or JSON lines.", NULL, 0, 0,
    g3_pre_specs
};

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
    if (p->eod >= 0) {
        int32_t e = p->eod;
        g3_bpe_ids_t *o = &b->ids[key];
        if (o->len == o->cap) {
            size_t cap = o->cap ? o->cap * 2 : 1024;
            int32_t *q = realloc(o->ids, cap * sizeof(int32_t));
            if (!q)
                return G3_ERR_NO_MEMORY;
            o->ids = q;
            o->cap = cap;
        }
        o->ids[o->len++] = e;
    }
    if (b->nsizes[key] == b->csizes[key]) {
        size_t cap = b->csizes[key] ? b->csizes[key] * 2 : 256;
        size_t *q = realloc(b->sizes[key], cap * sizeof(size_t));
        if (!q)
            return G3_ERR_NO_MEMORY;
        b->sizes[key] = q;
        b->csizes[key] = cap;
    }
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

    /* Replace invalid UTF-8 once for the whole batch. */
    if ((st = g3_utf8_sanitize(s, n, &clean, &clean_len, &replaced)) != G3_OK) {
        g3_pre_fail(b, st, "out of memory");
        return;
    }
    if (clean) {
        s = clean;
        n = clean_len;
        b->replaced += replaced;
    }

    for (size_t i = 0; i < n;) {
        /* One unit: a line (jsonl, line), a paragraph, or everything. */
        size_t start = i, end, next;
        uint64_t unit_line = line;
        if (p->mode == G3_PRE_FILE) {
            end = next = n;
        } else if (p->mode == G3_PRE_PARAGRAPH) {
            /* Skip blank lines, then take lines until a blank one. */
            size_t q = i;
            int in_par = 0;
            start = n;
            end = n;
            next = n;
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
                    end = q;
                    next = after;
                    line++;
                    break;
                }
                if (!blank && !in_par) {
                    in_par = 1;
                    start = q;
                    unit_line = line;
                }
                if (e < n)
                    line++;
                q = after;
                if (q >= n)
                    end = next = n;
            }
            if (!in_par) {
                i = n;
                break;
            }
        } else {
            end = i;
            while (end < n && s[end] != '\n')
                end++;
            next = end < n ? end + 1 : end;
            line++;
        }
        i = next;

        if (p->mode != G3_PRE_JSONL) {
            size_t e = end;
            if (p->mode == G3_PRE_LINE) {
                size_t q = start;
                while (q < e && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r'))
                    q++;
                if (q == e)
                    continue;   /* blank line */
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
                goto done;
            }
            b->docs++;
            continue;
        }

        /* JSON lines: skip blank lines; take the keys' strings. */
        size_t q = start;
        while (q < end && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r'))
            q++;
        if (q == end)
            continue;
        g3_json_t j = { s + start, end - start, 0, NULL, 0 };
        int first = 1;
        int found[64] = { 0 };
        size_t vstart[64], vlen[64];
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
                goto done;
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
                goto done;
            }
            if ((st = g3_pre_emit(p, b, k, cache, val->data + vstart[k], vlen[k])) != G3_OK) {
                g3_pre_fail(b, st, "out of memory");
                goto done;
            }
        }
        b->docs++;
        continue;

json_error:
        if (st == G3_ERR_NO_MEMORY)
            g3_pre_fail(b, st, "out of memory");
        else
            g3_pre_fail(b, G3_ERR_FORMAT,
                        "line %llu, column %zu: %s (each line must be one JSON object, e.g. {\"text\": \"...\"}; use --input-format text for plain text)",
                        (unsigned long long)unit_line, j.pos + 1, j.why ? j.why : "invalid JSON");
        goto done;
    }
done:
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

int g3_cmd_preprocess(int argc, char **argv)
{
    g3_opts_t *opts = NULL;
    g3_bpe_t *bpe = NULL;
    g3_tokid_t tokid;
    g3_pre_t p;
    g3_idx_writer_t **writers = NULL;
    pthread_t *threads = NULL;
    int nthreads = 0, num_keys = 0;
    char *const *keys;
    g3_status_t st = g3_opts_parse(&g3_pre_cmd, argc, argv, &opts);
    uint64_t total_docs = 0, total_skipped = 0, total_replaced = 0, total_tokens = 0;
    double t0 = 0;

    memset(&p, 0, sizeof(p));
    if (st != G3_OK)
        return g3_status_exit_code(st);
    if (g3_opts_help_shown(opts)) {
        g3_opts_free(opts);
        return G3_EXIT_OK;
    }
    const char *input = g3_opts_str(opts, "input"), *prefix = g3_opts_str(opts, "output-prefix");
    const char *vocab = g3_opts_str(opts, "vocab-file"), *merges = g3_opts_str(opts, "merge-file");
    if (!input || !prefix || !vocab || !merges) {
        g3_error("gpt3d preprocess: --input, --output-prefix, --vocab-file and --merge-file are required (see 'gpt3d preprocess --help')");
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    num_keys = g3_opts_list(opts, "json-keys", &keys);
    if (num_keys > 64) {
        g3_error("gpt3d preprocess: at most 64 --json-keys");
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    int64_t workers = g3_opts_int(opts, "workers");
    if (workers < 0 || workers > 1024) {
        g3_error("gpt3d preprocess: --workers %lld is out of range (0 = one per CPU, up to 1024)", (long long)workers);
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    if (workers == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        workers = ncpu > 0 ? ncpu : 1;
    }

    if ((st = g3_bpe_load(vocab, merges, &bpe)) != G3_OK)
        goto err_free_opts;
    /* the tokenizer's identity, recorded beside each dataset (data/tokid.h) */
    if ((st = g3_tokid_of_files(vocab, merges, &tokid)) != G3_OK)
        goto err_free_bpe;
    {
        char desc[512];
        g3_tokid_describe(&tokid, desc, sizeof(desc));
        g3_info("preprocess: tokenizer %s", desc);
    }
    p.bpe = bpe;
    p.eod = -1;
    if (g3_opts_bool(opts, "append-eod")) {
        p.eod = g3_bpe_eod_id(bpe);
        if (p.eod < 0) {
            g3_error("gpt3d preprocess: --append-eod, but the vocabulary '%s' has no \"<|endoftext|>\" token", vocab);
            st = G3_ERR_INVALID_ARG;
            goto err_free_bpe;
        }
    }

    p.in_name = input;
    p.in = strcmp(input, "-") == 0 ? stdin : fopen(input, "rb");
    if (!p.in) {
        g3_error("gpt3d preprocess: cannot open --input '%s': %s", input, strerror(errno));
        st = errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
        goto err_free_bpe;
    }
    const char *tdocs = g3_opts_str(opts, "text-docs");
    g3_pre_mode_t text_mode = !strcmp(tdocs, "line") ? G3_PRE_LINE
                              : !strcmp(tdocs, "file") ? G3_PRE_FILE : G3_PRE_PARAGRAPH;
    /* Read the first block now: it decides the format (auto), and a UTF-8
     * byte order mark at the start of the input is dropped. */
    p.carry_cap = 2 * G3_PRE_BATCH;
    p.carry = malloc(p.carry_cap);
    if (!p.carry) {
        st = G3_ERR_NO_MEMORY;
        goto err_close_input;
    }
    p.carry_len = fread(p.carry, 1, G3_PRE_BATCH, p.in);
    p.bytes_read = p.carry_len;
    if (p.carry_len < G3_PRE_BATCH) {
        if (ferror(p.in)) {
            g3_error("gpt3d preprocess: cannot read '%s': %s", input, strerror(errno));
            st = G3_ERR_IO;
            goto err_close_input;
        }
        p.eof = 1;
    }
    if (p.carry_len >= 3 && memcmp(p.carry, "\xEF\xBB\xBF", 3) == 0) {
        memmove(p.carry, p.carry + 3, p.carry_len - 3);
        p.carry_len -= 3;
    }
    const char *fmt = g3_opts_str(opts, "input-format");
    if (!strcmp(fmt, "jsonl"))
        p.mode = G3_PRE_JSONL;
    else if (!strcmp(fmt, "text"))
        p.mode = text_mode;
    else
        p.mode = g3_pre_sniff(p.carry, p.carry_len, text_mode);
    if (p.mode == G3_PRE_JSONL) {
        p.num_keys = num_keys;
        p.keys = keys;
    } else {
        static char text_key[] = "text";
        static char *text_keys[] = { text_key };
        p.num_keys = 1;
        p.keys = text_keys;
    }
    struct stat sb;
    double in_size = fstat(fileno(p.in), &sb) == 0 && S_ISREG(sb.st_mode) ? (double)sb.st_size : -1;
    p.carry_line = 1;

    /* One writer per key. */
    writers = calloc((size_t)p.num_keys, sizeof(*writers));
    if (!writers) {
        st = G3_ERR_NO_MEMORY;
        goto err_close_input;
    }
    g3_idx_dtype_t dtype = g3_idx_dtype_for_vocab(g3_bpe_vocab_size(bpe));
    for (int k = 0; k < p.num_keys; k++) {
        char path[4096];
        if (snprintf(path, sizeof(path), "%s_%s_document", prefix, p.keys[k]) >= (int)sizeof(path)) {
            g3_error("gpt3d preprocess: --output-prefix is too long");
            st = G3_ERR_INVALID_ARG;
            goto err_abort_writers;
        }
        if ((st = g3_idx_writer_open(path, dtype, &writers[k])) != G3_OK)
            goto err_abort_writers;
    }

    /* The batch ring and the workers. */
    p.ring_len = (int)(2 * workers + 2);
    p.ring = calloc((size_t)p.ring_len, sizeof(*p.ring));
    if (!p.ring) {
        st = G3_ERR_NO_MEMORY;
        goto err_abort_writers;
    }
    for (int r = 0; r < p.ring_len; r++) {
        g3_pre_batch_t *b = &p.ring[r];
        b->ids = calloc((size_t)p.num_keys, sizeof(*b->ids));
        b->sizes = calloc((size_t)p.num_keys, sizeof(*b->sizes));
        b->nsizes = calloc((size_t)p.num_keys, sizeof(size_t));
        b->csizes = calloc((size_t)p.num_keys, sizeof(size_t));
        if (!b->ids || !b->sizes || !b->nsizes || !b->csizes) {
            st = G3_ERR_NO_MEMORY;
            goto err_free_ring;
        }
    }
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond_free, NULL);
    pthread_cond_init(&p.cond_done, NULL);
    threads = calloc((size_t)workers, sizeof(*threads));
    if (!threads) {
        st = G3_ERR_NO_MEMORY;
        goto err_destroy_sync;
    }
    for (; nthreads < workers; nthreads++)
        if (pthread_create(&threads[nthreads], NULL, g3_pre_worker, &p) != 0) {
            g3_error("gpt3d preprocess: cannot start a worker thread: %s", strerror(errno));
            st = G3_ERR_NO_MEMORY;
            pthread_mutex_lock(&p.lock);
            p.failed = 1;
            pthread_cond_broadcast(&p.cond_free);
            pthread_mutex_unlock(&p.lock);
            goto err_join;
        }
    g3_info("preprocess: %s -> %s_%s_document.{bin,idx} (%s, %d worker%s, dtype %s)", input, prefix,
            p.keys[0], p.mode == G3_PRE_JSONL ? "JSON lines" : "plain text", (int)workers,
            workers == 1 ? "" : "s", g3_idx_dtype_name(dtype));

    /* Write batches in input order. */
    t0 = g3_clock_now();
    double last_report = t0;
    for (uint64_t seq = 0;; seq++) {
        g3_pre_batch_t *b = &p.ring[seq % (uint64_t)p.ring_len];
        pthread_mutex_lock(&p.lock);
        while (!(b->state == 2 && b->seq == seq) && !(p.eof && p.carry_len == 0 && seq >= p.next_seq))
            pthread_cond_wait(&p.cond_done, &p.lock);
        int finished = !(b->state == 2 && b->seq == seq);
        pthread_mutex_unlock(&p.lock);
        if (finished)
            break;
        if (b->st != G3_OK) {
            g3_error("gpt3d preprocess: '%s' %s", input, b->err);
            st = b->st;
            break;
        }
        for (int k = 0; k < p.num_keys && st == G3_OK; k++) {
            size_t off = 0;
            for (size_t d = 0; d < b->nsizes[k] && st == G3_OK; d++) {
                st = g3_idx_writer_add(writers[k], b->ids[k].ids + off, b->sizes[k][d]);
                off += b->sizes[k][d];
            }
        }
        if (st != G3_OK)
            break;
        total_docs += b->docs;
        total_skipped += b->skipped;
        total_replaced += b->replaced;
        pthread_mutex_lock(&p.lock);
        b->state = 0;
        pthread_cond_broadcast(&p.cond_free);
        double read_mb = (double)p.bytes_read / 1e6;
        pthread_mutex_unlock(&p.lock);
        double now = g3_clock_now();
        if (now - last_report >= 5.0) {
            last_report = now;
            if (in_size > 0)
                g3_info("preprocess: %llu documents, %.1f of %.1f MB (%.0f%%), %.2f MB/s",
                        (unsigned long long)total_docs, read_mb, in_size / 1e6,
                        100.0 * read_mb * 1e6 / in_size, read_mb / (now - t0));
            else
                g3_info("preprocess: %llu documents, %.1f MB, %.2f MB/s",
                        (unsigned long long)total_docs, read_mb, read_mb / (now - t0));
        }
    }
    if (st == G3_OK && p.read_st != G3_OK)
        st = p.read_st;

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
        double secs = g3_clock_now() - t0;
        uint64_t written = 0;
        for (int k = 0; k < p.num_keys; k++) {
            total_tokens += g3_idx_writer_num_tokens(writers[k]);
            written += g3_idx_writer_num_documents(writers[k]);
        }
        for (int k = 0; k < p.num_keys; k++) {
            g3_idx_writer_t *w = writers[k];
            writers[k] = NULL;
            if (st == G3_OK)
                st = g3_idx_writer_finish(w);
            else
                g3_idx_writer_abort(w);
        }
        for (int k = 0; k < p.num_keys && st == G3_OK; k++) {
            char *dp = NULL;
            if (asprintf(&dp, "%s_%s_document", prefix, p.keys[k]) < 0) {
                st = G3_ERR_NO_MEMORY;
                break;
            }
            st = g3_tokid_write_sidecar(dp, &tokid);
            free(dp);
        }
        if (st == G3_OK) {
            g3_info("preprocess: wrote %llu documents, %llu tokens from %llu records, %.1f MB in %.2f s (%.2f MB/s); %llu empty documents skipped",
                    (unsigned long long)written, (unsigned long long)total_tokens,
                    (unsigned long long)total_docs,
                    (double)p.bytes_read / 1e6, secs, (double)p.bytes_read / 1e6 / (secs > 0 ? secs : 1e-9),
                    (unsigned long long)total_skipped);
            if (total_replaced)
                g3_warn("preprocess: '%s' had %llu invalid UTF-8 sequences or lone surrogate escapes; each was replaced by U+FFFD",
                        input, (unsigned long long)total_replaced);
        }
    }
err_destroy_sync:
    pthread_cond_destroy(&p.cond_free);
    pthread_cond_destroy(&p.cond_done);
    pthread_mutex_destroy(&p.lock);
err_free_ring:
    for (int r = 0; p.ring && r < p.ring_len; r++) {
        g3_pre_batch_t *b = &p.ring[r];
        free(b->in);
        for (int k = 0; k < p.num_keys; k++) {
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
    free(p.ring);
err_abort_writers:
    for (int k = 0; writers && k < p.num_keys; k++)
        g3_idx_writer_abort(writers[k]);
    free(writers);
err_close_input:
    free(p.carry);
    if (p.in && p.in != stdin)
        fclose(p.in);
err_free_bpe:
    g3_bpe_free(bpe);
err_free_opts:
    g3_opts_free(opts);
    if (st == G3_ERR_FORMAT || st == G3_ERR_NOT_FOUND || st == G3_ERR_IO)
        return G3_EXIT_FAILURE;
    return g3_status_exit_code(st);
}
