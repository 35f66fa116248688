/* gpt3d data: the GPT training dataset (Megatron semantics) over one or a
 * weighted blend of Megatron indexed datasets (P.bin / P.idx, MMIDIDX v1).
 *
 * What a sample is.  Each dataset prefix is split by documents into
 * train/valid/test ranges (--split "949,50,1", Megatron's rounding).  For a
 * split, the document order is shuffled from the seed (numpy-compatible
 * MT19937, so the order equals Megatron's for the same seed), and samples
 * are windows of seq_length + 1 consecutive tokens that run across document
 * boundaries; consecutive windows share one token (the last input token of
 * one sample is the first of the next), exactly as Megatron's doc_idx /
 * sample_idx / shuffle_idx.  The sample order is shuffled too.
 *
 * Blends.  With several prefixes, global sample i comes from the dataset
 * whose realised share lags its weight the most (Megatron's
 * build_blending_indices), so every prefix of the sequence is within one
 * sample of the weights.
 *
 * Layout independence.  The sample behind a global index depends only on
 * (seed, data configuration, requested sample counts), never on TP/PP/DP.
 * A data-parallel rank computes the global indices it needs itself:
 *
 *     global batch b starts at consumed_samples (= b * global_batch_size
 *     without batch-size ramp-up); the sample at position j of that global
 *     batch is  global_sample_index = consumed_samples + j,  j in [0, GBS);
 *     DP rank r with micro-batch size MBS takes, for micro-batch m,
 *     j = r * (GBS / DP) + m * MBS + k,  k in [0, MBS).
 *
 * A run resumed from a checkpoint's consumed_samples therefore sees exactly
 * the samples an uninterrupted run would have seen.
 *
 * Index cache.  The per-split indices are cached beside the data as
 * "<prefix>_<split>_indexmap_<N>ns_<S>sl_<seed>s_<hash>.g3ix" (see
 * docs/data.md), written atomically (tmp + rename), validated on load and
 * rebuilt when stale.  When the data directory is not writable the cache
 * goes to cfg->cache_dir, else $XDG_CACHE_HOME/gpt3d/index (or
 * $HOME/.cache/gpt3d/index).  g3_data_open() is safe to call from many
 * processes at once (each builds or loads; renames are atomic).
 *
 * Threads: after g3_data_open() returns, g3_data_get() and the other
 * getters only read and may be called from any number of threads. */
#ifndef G3_DATA_DATASET_H
#define G3_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum {
    G3_SPLIT_TRAIN = 0,
    G3_SPLIT_VALID = 1,
    G3_SPLIT_TEST  = 2,
    G3_SPLIT_COUNT
} g3_split_t;

/* RET: "train", "valid" or "test". */
const char *g3_split_name(g3_split_t split);

typedef struct {
    /* The words of --data-path exactly as given: either one prefix
     * ("DIR/kjv_text_document") or weight/prefix pairs
     * ("0.3", "A", "0.7", "B").  Weights need not sum to 1. */
    int                 data_path_count;
    char *const        *data_path;
    const char         *split;          /* "949,50,1"; NULL means "969,30,1" (Megatron's default) */
    int64_t             seq_length;     /* tokens per sample = seq_length + 1          */
    uint64_t            seed;           /* --seed                                      */
    /* Samples each split must provide (Megatron: train = train_iters * GBS,
     * valid = (train_iters / eval_interval + 1) * eval_iters * GBS,
     * test = eval_iters * GBS).  0: that split is not built. */
    uint64_t            num_samples[G3_SPLIT_COUNT];
    const char         *cache_dir;      /* --data-cache-path; NULL: beside the data      */
    /* The vocabulary the run uses.  > 0: every dataset's dtype must be able to
     * hold its ids and every token of the splits built must lie in
     * [0, vocab_size) (checked at open; the range is cached with the sample
     * index).  0: token values are not checked. */
    int64_t             vocab_size;
    const char         *vocab_file;     /* names the vocabulary in messages; may be NULL */
} g3_data_config_t;

typedef struct g3_data g3_data_t;

/* Open the datasets, validate them, and load or build the sample indices of
 * every split whose num_samples is > 0; with cfg->vocab_size, check the
 * dtypes and token ids against it.  Errors are logged (naming the file
 * and the field or flag) and returned (G3_ERR_FORMAT for bad data).
 * OUT: *data_p, only on G3_OK; free with g3_data_close(). */
g3_status_t g3_data_open(const g3_data_config_t *cfg, g3_data_t **data_p);

/* Copy sample global_sample_index of split into tokens[0 .. seq_length]
 * (inputs are tokens[0..seq_length), labels tokens[1..seq_length]).
 * tokens: (seq_length + 1,)
 * RET: G3_ERR_INVALID_ARG when the split was not built or the index is
 * >= g3_data_num_samples(d, split). */
g3_status_t g3_data_get(const g3_data_t *d, g3_split_t split, uint64_t global_sample_index,
                        int32_t *tokens);

/* RET: samples available in split (>= the number requested; 0 if the split
 * was not built or has no documents). */
uint64_t g3_data_num_samples(const g3_data_t *d, g3_split_t split);

/* RET: one more than the largest token id stored in any opened dataset
 * (a lower bound on the vocabulary size the model needs).  The first call
 * scans every .bin once (seconds per GB) and is not thread-safe; later
 * calls return the cached value. */
int64_t g3_data_max_token_bound(const g3_data_t *d);

void g3_data_close(g3_data_t *d);

/* The tokenizer record beside each dataset of --data-path (PREFIX.tokenizer.json, written by
 * 'gpt3d preprocess') against the run's tokenizer files: every dataset made with other
 * files is named, with the file that differs (data/tokid.h); a dataset without a record
 * (Megatron's tools) is logged as unchecked.  allow: warnings instead of errors.
 * RET: G3_ERR_FORMAT when some dataset differs and !allow. */
struct g3_tokid;
g3_status_t g3_data_check_tokenizer(int data_path_count, char *const *data_path,
                                    const struct g3_tokid *run, int allow);

/* The tokenizer facts training needs, read from a GPT-2 vocabulary file
 * (encoder.json or vocab.json) without building the whole tokenizer.
 * OUT: *vocab_size_p (entries in the file: 50257 for GPT-2),
 *      *eod_id_p (id of "<|endoftext|>": 50256; -1 if absent). */
g3_status_t g3_data_vocab_info(const char *vocab_file, int64_t *vocab_size_p, int64_t *eod_id_p);

/* The built-in corpus directory 'gpt3d corpus' uses by default:
 * ${GPT3D_DATA_DIR}/kjv if GPT3D_DATA_DIR is set and not empty, else
 * $HOME/.cache/gpt3d/kjv.  Its files: kjv_text_document.bin/.idx (the
 * --data-path prefix is DIR/kjv_text_document), encoder.json, vocab.bpe.
 * OUT: buf (size bytes).  RET: G3_ERR_NOT_FOUND when neither variable is
 * set, G3_ERR_INVALID_ARG when the path does not fit. */
g3_status_t g3_data_corpus_dir(char *buf, size_t size);

#endif
