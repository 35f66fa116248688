/* gpt3d data: Megatron's indexed dataset, MMIDIDX version 1.
 *
 * A dataset is two files beside each other, PREFIX.bin and PREFIX.idx.
 * PREFIX.bin holds the token ids of every sequence back to back, in the
 * dtype the index names.  PREFIX.idx is (little-endian, no padding):
 *
 *   offset  size     field
 *   0       9        magic "MMIDIDX\0\0"
 *   9       8        u64 version = 1
 *   17      1        u8 dtype code: 1 uint8, 2 int8, 3 int16, 4 int32,
 *                    5 int64, 6 float64, 7 float32, 8 uint16
 *                    (we write 8 when the vocabulary has < 65500 ids, else 4)
 *   18      8        u64 S = number of sequences
 *   26      8        u64 D = number of document index entries (documents + 1)
 *   34      4*S      int32 sizes[S]      tokens in each sequence
 *   ..      8*S      int64 pointers[S]   byte offset of each sequence in .bin
 *   ..      8*D      int64 doc_idx[D]    sequence index where each document
 *                                        starts; doc_idx[0] = 0,
 *                                        doc_idx[D-1] = S
 *
 * gpt3d writes one sequence per document (no sentence splitting), so
 * S = D - 1.  The reader accepts any valid file, including Megatron's
 * sentence-split ones, and refuses float dtypes for token data. */
#ifndef G3_DATA_INDEXED_H
#define G3_DATA_INDEXED_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define G3_IDX_MAGIC       "MMIDIDX\0\0"
#define G3_IDX_MAGIC_LEN   9
#define G3_IDX_VERSION     1
#define G3_IDX_HEADER_LEN  34

typedef enum {
    G3_IDX_UINT8 = 1, G3_IDX_INT8 = 2, G3_IDX_INT16 = 3, G3_IDX_INT32 = 4,
    G3_IDX_INT64 = 5, G3_IDX_FLOAT64 = 6, G3_IDX_FLOAT32 = 7, G3_IDX_UINT16 = 8
} g3_idx_dtype_t;

const char *g3_idx_dtype_name(int code);
/* RET: the dtype Megatron picks for a vocabulary (uint16 if < 65500). */
g3_idx_dtype_t g3_idx_dtype_for_vocab(int64_t vocab_size);

/* ---- reading ------------------------------------------------------------ */

typedef struct g3_idx g3_idx_t;

/* Map PREFIX.idx and PREFIX.bin and validate everything: magic, version,
 * dtype, counts against the file sizes (in exact arithmetic), sizes >= 0,
 * the sequences back to back from byte 0 filling .bin exactly (a changed
 * dtype byte is named as such), doc_idx starting at 0, non-decreasing and
 * ending at S.  Token values are checked by the caller, who knows the
 * vocabulary (g3_idx_token_range; dataset.c).  A bad file is logged naming the file and the field.
 * OUT: *idx_p, only on G3_OK. */
g3_status_t g3_idx_open(const char *prefix, g3_idx_t **idx_p);
void g3_idx_close(g3_idx_t *idx);

const char *g3_idx_prefix(const g3_idx_t *idx);
uint64_t g3_idx_num_sequences(const g3_idx_t *idx);
/* RET: number of documents (D - 1). */
uint64_t g3_idx_num_documents(const g3_idx_t *idx);
int g3_idx_dtype(const g3_idx_t *idx);
/* RET: tokens in sequence i (i < S). */
int32_t g3_idx_size(const g3_idx_t *idx, uint64_t i);
/* Copy tokens [offset, offset + n) of sequence i as int32 into out.
 * out: (n,).  The range must lie inside the sequence. */
void g3_idx_read(const g3_idx_t *idx, uint64_t i, uint64_t offset, uint64_t n, int32_t *out);
/* The smallest and largest token id of sequences [first, end), one pass over their bytes
 * (which lie back to back: checked at open) at memory speed.
 * OUT: *min_p, *max_p (0 and -1 when the range holds no tokens). */
void g3_idx_token_range(const g3_idx_t *idx, uint64_t first, uint64_t end, int64_t *min_p,
                        int64_t *max_p);
/* Find the first token of sequences [first, end) outside [lo, hi) (for the message after
 * g3_idx_token_range found one).  RET: 1 when found; OUT: *seq_p, *pos_p (its sequence
 * and position in it), *value_p. */
int g3_idx_token_find_outside(const g3_idx_t *idx, uint64_t first, uint64_t end, int64_t lo,
                              int64_t hi, uint64_t *seq_p, uint64_t *pos_p, int64_t *value_p);
/* RET: 1 + the largest token id in the .bin (scans once, then cached). */
int64_t g3_idx_max_token_bound(g3_idx_t *idx);
/* Identity of the dataset for cache staleness: the sizes and modification
 * times (ns) of .idx and .bin, and a 64-bit hash of the header and the
 * sizes array. */
uint64_t g3_idx_fingerprint(const g3_idx_t *idx);

/* ---- writing ------------------------------------------------------------ */

typedef struct g3_idx_writer g3_idx_writer_t;

/* Start PREFIX.bin / PREFIX.idx.  Data goes to temporary files beside them
 * that g3_idx_writer_finish() renames into place, so a failed or
 * interrupted run never leaves a half-written dataset under the final
 * names.  OUT: *w_p. */
g3_status_t g3_idx_writer_open(const char *prefix, g3_idx_dtype_t dtype, g3_idx_writer_t **w_p);
/* Append one document of n tokens (one sequence).  ids: (n,) */
g3_status_t g3_idx_writer_add(g3_idx_writer_t *w, const int32_t *ids, size_t n);
/* Write the index, fsync, rename both files into place, free w. */
g3_status_t g3_idx_writer_finish(g3_idx_writer_t *w);
/* Remove the temporary files and free w (after an error). */
void g3_idx_writer_abort(g3_idx_writer_t *w);
uint64_t g3_idx_writer_num_documents(const g3_idx_writer_t *w);
uint64_t g3_idx_writer_num_tokens(const g3_idx_writer_t *w);

#endif
