/* Checkpoint phase timing: the phases' names, the clock reads that charge a phase and the
 * summaries gpt3d train logs (ckpt.h, "phase timing"). */
#include "ckpt/ckpt_internal.h"

#include <stdio.h>

#include "core/clock.h"

__thread g3_ckpt_timing_t *g3_ckpt_tm;

static const char *const g3_ckpt_phase_names[G3_CKPT_T_COUNT] = {
    [G3_CKPT_T_WAIT] = "wait", [G3_CKPT_T_STAGE_ALLOC] = "stage_alloc",
    [G3_CKPT_T_DESCRIBE] = "describe", [G3_CKPT_T_D2H] = "d2h",
    [G3_CKPT_T_FINITE] = "finite", [G3_CKPT_T_PACK] = "pack", [G3_CKPT_T_CHECKSUM] = "checksum",
    [G3_CKPT_T_WRITE] = "write", [G3_CKPT_T_FSYNC] = "fsync", [G3_CKPT_T_COMMIT] = "commit",
    [G3_CKPT_T_OPEN] = "open", [G3_CKPT_T_READ] = "read", [G3_CKPT_T_VERIFY] = "verify",
    [G3_CKPT_T_CONVERT] = "convert", [G3_CKPT_T_H2D] = "h2d", [G3_CKPT_T_FREE] = "free",
};

double g3_ckpt_timing_now(const g3_ckpt_timing_t *tm)
{
    return tm ? g3_clock_now() : 0;
}

void g3_ckpt_timing_add(g3_ckpt_timing_t *tm, g3_ckpt_phase_t phase, double *t0)
{
    double t1;

    if (tm == NULL)
        return;
    t1 = g3_clock_now();
    if (t1 > *t0)
        tm->s[phase] += t1 - *t0;
    *t0 = t1;
}

void g3_ckpt_timing_format(const g3_ckpt_timing_t *tm, unsigned mask, int json, char *buf,
                           size_t size)
{
    size_t used = 0;
    const char *sep = "";

    if (size == 0)
        return;
    buf[0] = '\0';
    for (int k = 0; k < G3_CKPT_T_COUNT && used < size; k++) {
        int n;

        if (!(mask & G3_CKPT_T_BIT(k)))
            continue;
        n = json ? snprintf(buf + used, size - used, "%s\"%s\":%.6f", sep, g3_ckpt_phase_names[k], tm->s[k])
                 : snprintf(buf + used, size - used, "%s%s %.3f", sep, g3_ckpt_phase_names[k], tm->s[k]);
        if (n < 0)
            break;
        used += (size_t)n;
        sep = json ? "," : ", ";
    }
}
