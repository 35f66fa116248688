/* The checkpoints' finite check (parallel/par_ckpt.h g3_par_ckpt_first_nonfinite, the blocked
 * bit test spread over the OpenMP threads): the index it returns is the first NaN or infinity
 * that a scalar isfinite() loop finds, for NaN (quiet, signalling, negative), +Inf and -Inf at
 * the first, middle and last element and on either side of every block boundary, on one
 * thread (few blocks) and on the threaded path (many blocks); two of them: the earlier one;
 * finite extremes (FLT_MAX, denormals, -0) are not taken for one; and g3_par_ckpt_nonfinite
 * names the array that holds it (parameters, Adam first or second moments). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/par_ckpt.h"
#include "tap.h"

/* g3_par_ckpt_first_nonfinite's block (par_ckpt.c), and a count of blocks over its serial
 * threshold (64): the threaded path. */
#define BLOCK 16384
#define MANY (70 * BLOCK + 123)

static float bits_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof(f));
    return f;
}

static size_t ref_first(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return n;
}

/* x (n,) all finite; one special value at each position tried: the first, middle and last,
 * and b*BLOCK - 1, b*BLOCK, b*BLOCK + 1 for every block boundary.  RET: the mismatches. */
static int try_positions(float *x, size_t n, float special, const char *what)
{
    int bad = 0;
    size_t fixed[3] = { 0, n / 2, n - 1 };

    for (size_t k = 0; k < 3 + 3 * (n / BLOCK + 1); k++) {
        size_t at, got, want;
        if (k < 3) {
            at = fixed[k];
        } else {
            size_t b = (k - 3) / 3 + 1, d = (k - 3) % 3;   /* b*BLOCK - 1 + d */
            at = b * BLOCK - 1 + d;
            if (at >= n)
                continue;
        }
        float keep = x[at];
        x[at] = special;
        got = g3_par_ckpt_first_nonfinite(x, n);
        want = ref_first(x, n);
        x[at] = keep;
        if (got != want || want != at) {
            if (bad++ == 0)
                tap_diag("%s at %zu of %zu: found %zu, isfinite %zu", what, at, n, got, want);
        }
    }
    return bad;
}

static void fill_finite(float *x, size_t n)
{
    /* finite values of every kind: normal, extremes, denormal, zeros of both signs */
    const float v[] = { 1.0f, -2.5f, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-40f, 0.0f, -0.0f, 3e38f };
    for (size_t i = 0; i < n; i++)
        x[i] = v[i % (sizeof(v) / sizeof(v[0]))];
}

int main(void)
{
    const struct { uint32_t bits; const char *name; } sp[] = {
        { 0x7fc00000u, "quiet NaN" }, { 0x7f800001u, "signalling NaN" },
        { 0xffc00000u, "negative NaN" }, { 0x7f800000u, "+Inf" }, { 0xff800000u, "-Inf" },
    };
    const size_t sizes[] = { 1, 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7, MANY };
    float *x = malloc(sizeof(float) * MANY);
    int bad;

    if (!x) {
        tap_skip_all("out of memory");
        return 0;
    }
    fill_finite(x, MANY);
    tap_ok(g3_par_ckpt_first_nonfinite(x, 0) == 0, "no elements: none found (0)");
    bad = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        bad += g3_par_ckpt_first_nonfinite(x, sizes[s]) != sizes[s];
    tap_ok(bad == 0, "finite extremes, denormals and -0 are finite, at every size (%d wrong)",
           bad);
    for (size_t k = 0; k < sizeof(sp) / sizeof(sp[0]); k++) {
        float f = bits_float(sp[k].bits);
        int small = 0;
        for (size_t s = 0; s + 1 < sizeof(sizes) / sizeof(sizes[0]); s++)
            small += try_positions(x, sizes[s], f, sp[k].name);
        tap_ok(small == 0, "%s: the first index, at every position and block edge, few blocks",
               sp[k].name);
        tap_ok(try_positions(x, MANY, f, sp[k].name) == 0,
               "%s: the first index, at every position and block edge, %d blocks (threads)",
               sp[k].name, (MANY + BLOCK - 1) / BLOCK);
    }
    /* two of them: the earlier, in another block (later thread's first) or in the same one */
    x[60 * BLOCK + 5] = bits_float(0x7fc00000u);
    x[3 * BLOCK + 9] = bits_float(0xff800000u);
    tap_ok(g3_par_ckpt_first_nonfinite(x, MANY) == 3 * BLOCK + 9, "two blocks: the earlier");
    x[3 * BLOCK + 2] = bits_float(0x7f800000u);
    tap_ok(g3_par_ckpt_first_nonfinite(x, MANY) == 3 * BLOCK + 2, "one block: the earlier");
    fill_finite(x, MANY);

    {   /* which array: parameters, then each range's m, then its v */
        g3_par_ckpt_t t;
        size_t at = 99;
        const char *what;
        memset(&t, 0, sizeof(t));
        t.n = 1;
        t.r[0].begin = 0;
        t.r[0].end = BLOCK;
        t.hw = x;
        t.hm[0] = x + 2 * BLOCK;
        t.hv[0] = x + 4 * BLOCK;
        tap_ok(g3_par_ckpt_nonfinite(&t, 2 * BLOCK, 1, &at) == NULL, "all finite: none named");
        x[4 * BLOCK + 7] = NAN;
        what = g3_par_ckpt_nonfinite(&t, 2 * BLOCK, 1, &at);
        tap_ok(what && !strcmp(what, "Adam second moments") && at == 7,
               "a NaN in v: \"Adam second moments\", element 7 (%s, %zu)", what ? what : "none",
               at);
        tap_ok(g3_par_ckpt_nonfinite(&t, 2 * BLOCK, 0, &at) == NULL,
               "without the optimizer the moments are not looked at");
        x[2 * BLOCK + BLOCK - 1] = -INFINITY;
        what = g3_par_ckpt_nonfinite(&t, 2 * BLOCK, 1, &at);
        tap_ok(what && !strcmp(what, "Adam first moments") && at == BLOCK - 1,
               "-Inf in m too: \"Adam first moments\" first (%s, %zu)", what ? what : "none", at);
        x[2 * BLOCK - 1] = INFINITY;
        what = g3_par_ckpt_nonfinite(&t, 2 * BLOCK, 1, &at);
        tap_ok(what && !strcmp(what, "parameters") && at == 2 * BLOCK - 1,
               "Inf in the parameters' last element: \"parameters\" first (%s, %zu)",
               what ? what : "none", at);
    }
    free(x);
    return tap_exit();
}
