#include "core/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void g3_rng_philox_round(uint32_t ctr[4], const uint32_t key[2])
{
    uint64_t p0 = (uint64_t)PHILOX_M0 * ctr[0];
    uint64_t p1 = (uint64_t)PHILOX_M1 * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;

    ctr[0] = hi1 ^ ctr[1] ^ key[0];
    ctr[1] = lo1;
    ctr[2] = hi0 ^ ctr[3] ^ key[1];
    ctr[3] = lo0;
}

void g3_rng_philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4])
{
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    uint32_t ctr[4] = { (uint32_t)index, (uint32_t)(index >> 32),
                        (uint32_t)stream, (uint32_t)(stream >> 32) };

    for (int r = 0; r < 10; r++) {
        g3_rng_philox_round(ctr, key);
        key[0] += PHILOX_W0;
        key[1] += PHILOX_W1;
    }
    out[0] = ctr[0]; out[1] = ctr[1]; out[2] = ctr[2]; out[3] = ctr[3];
}

uint64_t g3_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint32_t r[4];
    g3_rng_philox4x32(seed, stream, index, r);
    return ((uint64_t)r[1] << 32) | r[0];
}

/* 24 random bits mapped to the centre of one of 2^24 bins: never 0 or 1. */
static inline float g3_rng_u32_to_open01(uint32_t x)
{
    return ((float)(x >> 8) + 0.5f) * (1.0f / 16777216.0f);
}

float g3_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint32_t r[4];
    g3_rng_philox4x32(seed, stream, index, r);
    return g3_rng_u32_to_open01(r[0]);
}

float g3_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint32_t r[4];
    g3_rng_philox4x32(seed, stream, index, r);
    /* Box-Muller in double so the result does not depend on libm's float
     * accuracy; u1 uses 53 bits from two words for a long tail. */
    double u1 = ((double)(((uint64_t)r[0] << 21) ^ (r[1] >> 11)) + 0.5) / 9007199254740992.0;
    double u2 = ((double)r[2] + 0.5) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint64_t g3_rng_stream_from_name(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

void g3_rng_fill_normal(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                        uint64_t first, float std)
{
    for (uint64_t i = 0; i < n; i++)
        dst[i] = std * g3_rng_normal(seed, stream, first + i);
}
