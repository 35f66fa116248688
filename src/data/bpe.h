/* gpt3d data: the GPT-2 byte-level BPE tokenizer.
 *
 * Reads the two GPT-2 files under either naming: encoder.json + vocab.bpe
 * (OpenAI) or vocab.json + merges.txt (Hugging Face); the contents are the
 * same.  Text is split with GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * implemented by hand with full Unicode letter/number classes and the
 * JavaScript/ECMAScript meaning of \s (the reference gpt-3-encoder runs this
 * regex under node), then each piece is byte-encoded and merged by rank.
 *
 * Threads: a g3_bpe_t is read-only after g3_bpe_load(); encoding uses a
 * g3_bpe_cache_t per thread (word -> ids), so give each thread its own. */
#ifndef G3_DATA_BPE_H
#define G3_DATA_BPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/mem.h"
#include "core/status.h"

typedef struct g3_bpe g3_bpe_t;
typedef struct g3_bpe_cache g3_bpe_cache_t;

/* A growable id array. ids: (len,) */
typedef struct {
    int32_t *ids;
    size_t   len;
    size_t   cap;
} g3_bpe_ids_t;

/* Append one id (the array grows by doubling).  RET: G3_ERR_NO_MEMORY, ids unchanged. */
static inline g3_status_t g3_bpe_ids_push(g3_bpe_ids_t *ids, int32_t id)
{
    if (g3_mem_grow(&ids->ids, &ids->cap, ids->len, sizeof(int32_t), 1024) != G3_OK)
        return G3_ERR_NO_MEMORY;
    ids->ids[ids->len++] = id;
    return G3_OK;
}

/* OUT: *bpe_p, only on G3_OK.  Errors name the file, the line and the cause. */
g3_status_t g3_bpe_load(const char *vocab_file, const char *merge_file, g3_bpe_t **bpe_p);
void g3_bpe_free(g3_bpe_t *bpe);

int32_t g3_bpe_vocab_size(const g3_bpe_t *bpe);
/* RET: the id of "<|endoftext|>", or -1 if the vocabulary has none. */
int32_t g3_bpe_eod_id(const g3_bpe_t *bpe);

/* A per-thread cache of word encodings (bounded; cleared when full). */
g3_status_t g3_bpe_cache_init(g3_bpe_cache_t **cache_p);
void g3_bpe_cache_free(g3_bpe_cache_t *cache);

/* Encode text[0..len), which must be valid UTF-8, appending to *out.
 * RET: G3_ERR_FORMAT for invalid UTF-8; *bad_offset_p (if not NULL) is then
 * the byte offset of the first invalid byte. */
g3_status_t g3_bpe_encode(const g3_bpe_t *bpe, g3_bpe_cache_t *cache, const char *text,
                          size_t len, g3_bpe_ids_t *out, size_t *bad_offset_p);

/* Like g3_bpe_encode, for any bytes: an ill-formed UTF-8 byte is taken as
 * one "other" character (it never matches \s, \p{L} or \p{N}), so
 * g3_bpe_decode(g3_bpe_encode_bytes(b)) == b for every byte string b. */
g3_status_t g3_bpe_encode_bytes(const g3_bpe_t *bpe, g3_bpe_cache_t *cache, const char *text,
                                size_t len, g3_bpe_ids_t *out);

/* Read only the vocabulary file.  OUT: *vocab_size_p, *eod_id_p (-1 if the
 * vocabulary has no "<|endoftext|>"). */
g3_status_t g3_bpe_vocab_info(const char *vocab_file, int64_t *vocab_size_p, int64_t *eod_id_p);

/* Replace invalid UTF-8 in text[0..len) by U+FFFD the way Python's
 * bytes.decode("utf-8", errors="replace") does (one U+FFFD per maximal
 * invalid subpart).  OUT: *out_p (malloc'd, NUL-terminated), *out_len_p,
 * *replaced_p (count of U+FFFD inserted).  When the text is valid *out_p is
 * NULL and *replaced_p is 0 (use the input as is). */
g3_status_t g3_utf8_sanitize(const char *text, size_t len, char **out_p, size_t *out_len_p,
                             size_t *replaced_p);

/* RET: offset of the first invalid byte, or len when text is valid UTF-8. */
size_t g3_utf8_validate(const char *text, size_t len);

/* Decode ids to bytes (which need not be valid UTF-8), appending to a
 * malloc'd buffer.  RET: G3_ERR_INVALID_ARG for an id outside the
 * vocabulary (logged with its position).  OUT: *out_p, *out_len_p. */
g3_status_t g3_bpe_decode(const g3_bpe_t *bpe, const int32_t *ids, size_t n, char **out_p,
                          size_t *out_len_p);

/* The bytes of one token (not NUL-terminated).  OUT: *len_p.  RET: NULL for
 * an id outside the vocabulary. */
const char *g3_bpe_token_bytes(const g3_bpe_t *bpe, int32_t id, size_t *len_p);

void g3_bpe_ids_free(g3_bpe_ids_t *ids);

#endif
