/* gpt3d core: bf16 <-> fp32 on the host.
 *
 * bf16 is the upper 16 bits of an IEEE fp32.  fp32 -> bf16 rounds to nearest, ties to even;
 * a NaN stays a (quiet) NaN instead of rounding into an infinity.  One copy for every layer
 * (comm's bf16 reduction, the backends' conversion, checkpoints, the kernels' CPU reference)
 * so they agree bit for bit. */
#ifndef G3_CORE_BF16_H
#define G3_CORE_BF16_H

#include <stdint.h>
#include <string.h>

/* RET: the bf16 bits nearest to f (ties to even); NaN -> quiet NaN with f's sign and payload
 * top. */
static inline uint16_t g3_bf16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);              /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

/* RET: the fp32 value of bf16 bits h (exact). */
static inline float g3_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

#endif
