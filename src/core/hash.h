/* gpt3d core: the 64-bit mixer that the tokenizer's tables and the curation stages hash with.
 * MurmurHash3's fmix64 finaliser: a bijection of 64-bit words whose every output bit depends
 * on every input bit.  Changing it changes the curation stages' signatures on disk. */
#ifndef G3_CORE_HASH_H
#define G3_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t g3_hash_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* FNV-1a over p[0..n) continuing from h, 8 bytes at a time (each little-endian word xor-ed in
 * and multiplied by the FNV prime, then its high bits folded down by fold), the tail byte by
 * byte.  The tokenizer's table keys use fold 29; the indexed datasets' fingerprints fold 31,
 * and those are on disk (in the sample-index caches): changing either changes them. */
static inline uint64_t g3_hash_fnv_words(const void *p, size_t n, uint64_t h, unsigned fold)
{
    const unsigned char *u = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, u + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> fold;
    }
    for (; i < n; i++)
        h = (h ^ u[i]) * 0x100000001b3ULL;
    return h;
}

#endif
