/* gpt3d data (internal): the sample index of one GPT dataset split, built
 * exactly as Megatron-LM's GPTDataset._build_index_mappings does, and its
 * on-disk cache.
 *
 * Glossary: S = sequence length (tokens per sample = S + 1), N = samples
 * in the index, E = epochs, D = documents in the split.
 *
 *   doc_idx    (E*D,)   the split's document ids, all epochs, shuffled with
 *                        numpy's RandomState(seed) (the last epoch shuffled
 *                        on its own when it is used for < 80% of its samples)
 *   sample_doc (N+1,)   sample i starts at token sample_off[i] of document
 *   sample_off (N+1,)   doc_idx[sample_doc[i]] and ends (inclusive) at
 *                        token sample_off[i+1] of doc_idx[sample_doc[i+1]]
 *   shuffle    (N,)     sample order, shuffled with the same generator
 *
 * Cache file "<name>_<split>_<N>ns_<S>sl_<seed>s_<first>-<end>d.g3ix", see
 * docs/data.md; header: magic "G3GPTIDX", u32 version, the parameters, the
 * dataset's fingerprint, the split's token range (so the vocabulary check
 * at open reads the .bin once per dataset change, not once per run) and a
 * checksum of the arrays. */
#ifndef G3_DATA_GPT_INDEX_H
#define G3_DATA_GPT_INDEX_H

#include <stdint.h>

#include "core/status.h"
#include "data/indexed.h"

typedef struct {
    uint64_t       doc_first, doc_end;   /* the split's documents [first, end) */
    int64_t        seq_length;           /* S                                  */
    uint64_t       seed;
    uint64_t       num_samples_wanted;   /* requested; N >= this               */
    uint64_t       num_epochs;           /* E                                  */
    uint64_t       num_doc_idx;          /* E * D                              */
    uint64_t       num_samples;          /* N                                  */
    int64_t        token_min, token_max; /* smallest, largest token id of the
                                          * split's documents (0, -1: none;
                                          * token_max G3_GPTIDX_TOKENS_UNKNOWN:
                                          * not scanned)                       */
    const int32_t *doc_idx;              /* (E*D,)                             */
    const int64_t *sample_doc;           /* (N+1,)                             */
    const int32_t *sample_off;           /* (N+1,)                             */
    const int64_t *shuffle;              /* (N,)                               */
    void          *mem;                  /* malloc'd arrays, or the mapping    */
    size_t         mem_len;
    int            mapped;
} g3_gptidx_t;

#define G3_GPTIDX_TOKENS_UNKNOWN INT64_MIN

/* Load the cached index, or build and cache it.  split_name names the
 * split in the cache file; cache_dir may be NULL (see dataset.h).
 * token_range: also know the split's token range (one pass over its part
 * of the .bin the first time, then cached with the index).
 * OUT: *gi_p. */
g3_status_t g3_gptidx_open(g3_idx_t *idx, const char *split_name, uint64_t doc_first,
                           uint64_t doc_end, int64_t seq_length, uint64_t seed,
                           uint64_t num_samples, const char *cache_dir, int token_range,
                           g3_gptidx_t **gi_p);

/* Copy sample i (i < N, after the shuffle) into tokens.  tokens: (S+1,) */
void g3_gptidx_get(const g3_gptidx_t *gi, const g3_idx_t *idx, uint64_t i, int32_t *tokens);

void g3_gptidx_free(g3_gptidx_t *gi);

/* numpy.random.RandomState(seed).shuffle on an index array, exactly
 * (MT19937 seeded with init_genrand, Fisher-Yates from the end with
 * masked rejection sampling).  Exposed for the tests. */
typedef struct {
    uint32_t key[624];
    int      pos;
} g3_mt19937_t;

void g3_mt19937_seed(g3_mt19937_t *mt, uint32_t seed);
void g3_np_shuffle_i64(g3_mt19937_t *mt, int64_t *a, uint64_t n);

/* Megatron's document split: "949,50,1" (',' or '/' separated, up to 3
 * non-negative numbers) of num_docs documents.  OUT: bounds[4] with split
 * s covering [bounds[s], bounds[s+1]).  RET: G3_ERR_INVALID_ARG (logged)
 * for a malformed string. */
g3_status_t g3_split_parse(const char *split, uint64_t num_docs, uint64_t bounds[4]);

#endif
