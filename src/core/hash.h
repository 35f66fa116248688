/* gpt3d core: the 64-bit mixer that the tokenizer's tables and the curation stages hash with.
 * MurmurHash3's fmix64 finaliser: a bijection of 64-bit words whose every output bit depends
 * on every input bit.  Changing it changes the curation stages' signatures on disk. */
#ifndef G3_CORE_HASH_H
#define G3_CORE_HASH_H

#include <stdint.h>

static inline uint64_t g3_hash_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
