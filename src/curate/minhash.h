/* gpt3d curate: the MinHash signature file (OUT/shard-N.mh), written by the minhash stage and
 * read by lsh.  Little-endian, fixed-size records so that lsh can map the file and index it:
 *
 *   header (64 bytes): magic "G3CURMH\0", u32 version (1), u32 num_perm K, u32 ngram,
 *                      u32 lower (exact hash of lower-cased text), u64 seed, u64 docs,
 *                      24 bytes zero
 *   docs records:      u64 line (1-based, in the shard), u64 exact[2] (128-bit hash of the
 *                      normalised text), u32 norm_len (bytes of the normalised text),
 *                      u32 shingles (0: no words, never a fuzzy duplicate), u32 sig[K]
 *
 * sig[k] = min over the document's shingles s of perm_k(x(s)), x(s) the 32 high bits of the
 * shingle's 64-bit hash and perm_k(x) = ((x ^ b_k) * a_k) ^ (... >> 15) mod 2^32, a bijection
 * (a_k odd) drawn from the seed; the share of equal entries of two signatures estimates the
 * Jaccard similarity of the shingle sets with standard error sqrt(J (1 - J) / K). */
#ifndef G3_CURATE_MINHASH_H
#define G3_CURATE_MINHASH_H

#include <stdint.h>

#define G3_CURATE_MH_MAGIC "G3CURMH"
#define G3_CURATE_MH_VERSION 1u
#define G3_CURATE_MH_HEADER 64u

typedef struct {
    char     magic[8];
    uint32_t version, num_perm, ngram, lower;
    uint64_t seed, docs;
    uint8_t  zero[24];
} g3_curate_mh_header_t;

typedef struct {
    uint64_t line;
    uint64_t exact[2];
    uint32_t norm_len;
    uint32_t shingles;
    uint32_t sig[];     /* (K,) */
} g3_curate_mh_rec_t;

/* RET: the bytes of one record with K permutations. */
static inline uint64_t g3_curate_mh_rec_size(uint32_t num_perm)
{
    return 32u + 4u * (uint64_t)num_perm;
}

#endif
