/* Counter-based RNG: known answers, reproducibility, stream independence,
 * distribution moments, layout independence of fills. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "tap.h"

int main(void)
{
    uint32_t r[4], r2[4];

    /* Philox4x32-10 known-answer tests from Random123 (kat_vectors):
     * counter = 0, key = 0 and counter = all ones, key = all ones. */
    g3_rng_philox4x32(0, 0, 0, r);
    tap_ok(r[0] == 0x6627e8d5u && r[1] == 0xe169c58du && r[2] == 0xbc57ac4cu && r[3] == 0x9b00dbd8u,
           "Philox4x32-10 zero vector matches Random123 (%08x %08x %08x %08x)", r[0], r[1], r[2], r[3]);
    g3_rng_philox4x32(UINT64_MAX, UINT64_MAX, UINT64_MAX, r);
    tap_ok(r[0] == 0x408f276du && r[1] == 0x41c83b0eu && r[2] == 0xa20bc7c6u && r[3] == 0x6d5451fdu,
           "Philox4x32-10 ones vector matches Random123 (%08x %08x %08x %08x)", r[0], r[1], r[2], r[3]);

    g3_rng_philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull, r);
    tap_ok(r[0] == 0xd16cfe09u && r[1] == 0x94fdccebu && r[2] == 0x5001e420u && r[3] == 0x24126ea1u,
           "Philox4x32-10 pi vector matches Random123 (%08x %08x %08x %08x)", r[0], r[1], r[2], r[3]);

    g3_rng_philox4x32(1234, 5, 6, r);
    g3_rng_philox4x32(1234, 5, 6, r2);
    tap_ok(memcmp(r, r2, sizeof(r)) == 0, "same (seed, stream, index) gives the same block");
    g3_rng_philox4x32(1235, 5, 6, r2);
    tap_ok(memcmp(r, r2, sizeof(r)) != 0, "a different seed gives a different block");

    /* Moments of the normal generator over 2^20 draws. */
    {
        const int n = 1 << 20;
        double sum = 0, sum2 = 0, sum4 = 0;
        for (int i = 0; i < n; i++) {
            double x = g3_rng_normal(42, 7, (uint64_t)i);
            sum += x; sum2 += x * x; sum4 += x * x * x * x;
        }
        double mean = sum / n, var = sum2 / n - mean * mean, kurt = sum4 / n;
        tap_ok(fabs(mean) < 0.005, "normal mean ~ 0 (%.5f)", mean);
        tap_ok(fabs(var - 1.0) < 0.01, "normal variance ~ 1 (%.5f)", var);
        tap_ok(fabs(kurt - 3.0) < 0.05, "normal fourth moment ~ 3 (%.4f)", kurt);
    }
    /* Uniform: range and mean. */
    {
        const int n = 1 << 20;
        double sum = 0, mn = 1, mx = 0;
        for (int i = 0; i < n; i++) {
            double u = g3_rng_uniform(9, 1, (uint64_t)i);
            sum += u; if (u < mn) mn = u; if (u > mx) mx = u;
        }
        tap_ok(mn > 0.0 && mx < 1.0, "uniform stays inside (0, 1) [%g, %g]", mn, mx);
        tap_ok(fabs(sum / n - 0.5) < 0.002, "uniform mean ~ 0.5 (%.5f)", sum / n);
    }
    /* Streams are independent: correlation of two streams at equal indices. */
    {
        const int n = 1 << 18;
        double sxy = 0;
        for (int i = 0; i < n; i++)
            sxy += (double)g3_rng_normal(42, 1, (uint64_t)i) * g3_rng_normal(42, 2, (uint64_t)i);
        tap_ok(fabs(sxy / n) < 0.01, "streams 1 and 2 are uncorrelated (%.5f)", sxy / n);
        double sadj = 0;
        for (int i = 0; i < n; i++)
            sadj +=
                (double)g3_rng_normal(42, 1, (uint64_t)i) * g3_rng_normal(42, 1, (uint64_t)i + 1);
        tap_ok(fabs(sadj / n) < 0.01, "adjacent indices are uncorrelated (%.5f)", sadj / n);
    }
    /* Layout independence: filling a tensor in two halves equals one fill. */
    {
        float whole[1000], parts[1000];
        uint64_t stream = g3_rng_stream_from_name("layers.0.attn.qkv.weight");
        g3_rng_fill_normal(whole, 1000, 3, stream, 0, 0.02f);
        g3_rng_fill_normal(parts, 300, 3, stream, 0, 0.02f);
        g3_rng_fill_normal(parts + 300, 700, 3, stream, 300, 0.02f);
        tap_ok(memcmp(whole, parts, sizeof(whole)) == 0, "a fill split at any offset equals the whole fill");
        tap_ok(stream != g3_rng_stream_from_name("layers.0.attn.proj.weight"),
               "stream ids differ by tensor name");
    }
    return tap_exit();
}
