/* gpt3d core: counter-based random numbers (Philox4x32-10).
 *
 * A value is a pure function of (seed, stream, index): no state is carried,
 * so a tensor initialised element by element from its global element index
 * is the same whatever slice of it a rank owns.  Streams separate uses:
 * each parameter tensor has its own stream id, data shuffling another. */
#ifndef G3_CORE_RNG_H
#define G3_CORE_RNG_H

#include <stdint.h>

/* Philox4x32 with 10 rounds (Salmon et al., SC'11).
 * key = seed, counter = (index, stream).  OUT: out[4] */
void g3_rng_philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]);

/* RET: 64 uniformly random bits for (seed, stream, index). */
uint64_t g3_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);

/* RET: uniform in the open interval (0, 1), 24-bit resolution. */
float g3_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);

/* RET: standard normal N(0, 1) (Box-Muller on one Philox block). */
float g3_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* RET: a stream id derived from a name (FNV-1a 64), e.g. a tensor name, so
 * streams never depend on the order tensors are created in. */
uint64_t g3_rng_stream_from_name(const char *name);

/* Fill dst[0..n) with std * N(0,1) for global indices first..first+n.
 * dst: (n,) */
void g3_rng_fill_normal(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                        uint64_t first, float std);

#endif
