/* gpt3d curate: what the stages share inside the module (not installed, not for other layers):
 * text helpers (norm.c), the shard loop, reader, writer and reports (io.c). */
#ifndef G3_CURATE_INTERNAL_H
#define G3_CURATE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "core/hash.h"
#include "curate/curate.h"
#include "data/json.h"

/* ---- text (norm.c) ------------------------------------------------------ */

/* One word: a maximal run of letters and numbers (Unicode L and N) and the combining marks
 * (M) that follow them, punctuation and the rest dropped; its hash is of the lower-cased UTF-8
 * of its NFC form (composed and decomposed spellings are one word).  start, end: byte offsets
 * in the text. */
typedef struct {
    uint64_t hash;
    uint32_t start, end;
} g3_curate_word_t;

typedef struct {
    g3_curate_word_t *w;   /* (n,) */
    size_t            n, cap;
} g3_curate_words_t;

/* The words of s[0..n) (valid UTF-8), appended to *ws after clearing it.
 * RET: G3_OK or G3_ERR_NO_MEMORY. */
g3_status_t g3_curate_words(const char *s, size_t n, g3_curate_words_t *ws);
void g3_curate_words_free(g3_curate_words_t *ws);

/* Decode the code point at s[*i] (valid UTF-8) and advance *i. */
uint32_t g3_curate_utf8_next(const char *s, size_t *i);
/* RET: the byte offset of the first invalid UTF-8 sequence in s[0..n), or n if none
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
size_t g3_curate_utf8_check(const char *s, size_t n);

/* 64-bit hashes of bytes (the mixer: core/hash.h). */
uint64_t g3_curate_hash_bytes(const void *p, size_t n, uint64_t seed);

/* The 64-bit hash of shingle i of ws: words i .. i + n - 1 (fewer at the end: a text of fewer
 * than n words is one shingle).  minhash signs its 32 high bits; lsh --verify exact compares
 * the sets of the full hashes. */
static inline uint64_t g3_curate_shingle_hash(const g3_curate_words_t *ws, size_t i, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    size_t end = i + n < ws->n ? i + n : ws->n;
    for (size_t k = i; k < end; k++)
        h = g3_hash_mix64(h ^ ws->w[k].hash) + k - i;
    return g3_hash_mix64(h);
}

/* RET: how many shingles of n words a text of nw words has. */
static inline size_t g3_curate_shingle_count(size_t nw, size_t n)
{
    return nw == 0 ? 0 : nw < n ? 1 : nw - n + 1;
}

/* ---- shards (io.c) ------------------------------------------------------ */

typedef struct {
    char    **path;   /* (n,) input paths                                */
    uint64_t *line;   /* (n,) their line in the shard list (1-based)     */
    int       n;
} g3_curate_list_t;

/* Read the shard list; every shard must be a regular file (else an error naming the list's
 * line).  RET: G3_OK, G3_ERR_NOT_FOUND, G3_ERR_FORMAT (an empty list), G3_ERR_IO, NO_MEMORY. */
g3_status_t g3_curate_list_read(const char *list_path, g3_curate_list_t *l);
void g3_curate_list_free(g3_curate_list_t *l);

/* A JSON-lines input read line by line. */
typedef struct {
    FILE       *f;
    const char *path;
    size_t      max_line;
    char       *buf;
    size_t      cap, len, pos;
    uint64_t    lineno;        /* of the line last returned (1-based)            */
    uint64_t    bytes;         /* read so far                                    */
    int         eof;
} g3_curate_reader_t;

/* One document: its line, the decoded text and where the text's JSON string lies in it. */
typedef struct {
    const char *raw;           /* the line without its '\n': (raw_len,)          */
    size_t      raw_len;
    uint64_t    line;
    g3_buf_t    text;          /* decoded UTF-8 text                             */
    size_t      val_start, val_end;   /* raw[val_start..val_end) is the JSON string */
} g3_curate_doc_t;

g3_status_t g3_curate_reader_open(g3_curate_reader_t *r, const char *path, size_t max_line);
void g3_curate_reader_close(g3_curate_reader_t *r);
/* The next document (blank lines skipped), parsed with text_key: valid UTF-8, one JSON object,
 * the key present with a string value; else an error naming the file, line and column.
 * RET: G3_OK, G3_ERR_NOT_FOUND at the end, G3_ERR_FORMAT, G3_ERR_IO, G3_ERR_NO_MEMORY. */
g3_status_t g3_curate_reader_next(g3_curate_reader_t *r, const char *text_key,
                                  g3_curate_doc_t *d);
/* Parse one line s[0..n) (NUL-terminated, no '\n') of path, line lineno, into *d as
 * g3_curate_reader_next does (its checks and errors).  RET: G3_OK, G3_ERR_FORMAT, NO_MEMORY. */
g3_status_t g3_curate_doc_parse(const char *path, uint64_t lineno, char *s, size_t n,
                                const char *text_key, g3_curate_doc_t *d);

/* A file written under a temporary name and renamed when complete. */
typedef struct {
    FILE *f;
    char  path[4096];
    char  tmp[4160];
} g3_curate_out_t;

/* what names the file in errors.  RET: G3_OK or G3_ERR_IO (logged). */
g3_status_t g3_curate_out_open(g3_curate_out_t *o, const char *path, const char *what);
/* Flush, close and rename over the final name.  RET: G3_OK or G3_ERR_IO (logged; the
 * temporary file removed). */
g3_status_t g3_curate_out_commit(g3_curate_out_t *o);

/* "PATH:LINE", the id of a document in the reports. */
void g3_curate_doc_id(const char *path, uint64_t line, char *id, size_t size);
/* A document the stage keeps whole: its line as read, and a newline, to out; one more in
 * *docs_out. */
void g3_curate_doc_keep(FILE *out, const g3_curate_doc_t *d, uint64_t *docs_out);

/* A report's body: "key": value pairs the stage appends with g3_curate_rep_*. */
void g3_curate_rep_u64(g3_buf_t *b, const char *key, uint64_t v);
void g3_curate_rep_str(g3_buf_t *b, const char *key, const char *v);
/* "key": [up to n ids] */
void g3_curate_rep_ids(g3_buf_t *b, const char *key, char ids[][256], int n);
/* Append raw JSON text. */
void g3_curate_rep_raw(g3_buf_t *b, const char *s);
/* Append s as a JSON string. */
void g3_curate_json_str(g3_buf_t *b, const char *s, size_t n);

/* One shard's work: read in (already open), write out (open under a temporary name), append
 * the report's fields to rep; count documents.  RET: G3_OK or the error (logged). */
typedef struct {
    const char *in_path;
    int         index;         /* position in the shard list                     */
    const char *text_key;
} g3_curate_shard_t;

typedef g3_status_t (*g3_curate_shard_fn)(void *ctx, const g3_curate_shard_t *sh,
                                          g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                          uint64_t *docs_in, uint64_t *docs_out);

/* Run fn over this task's shards: skip those done (same input, parameters and output), write
 * OUT/shard-N.SUFFIX and OUT/shard-N.report.json, count into *c.  stage and params are
 * recorded in the report (params: the parameters that change the output). */
g3_status_t g3_curate_each_shard(const g3_curate_io_t *io, const char *stage, const char *params,
                                 const char *suffix, g3_curate_shard_fn fn, void *ctx,
                                 g3_curate_counts_t *c);

/* OUT/shard-%05d.SUFFIX into path (size bytes). */
void g3_curate_shard_path(const char *dir, int index, const char *suffix, char *path,
                          size_t size);

/* Read a report file and check its stage, input and parameters (as g3_curate_each_shard
 * does).  RET: 1 when it verifies, else 0. */
int g3_curate_report_ok(const char *report, const char *stage, const char *input,
                        const char *params, const char *output);

#endif
