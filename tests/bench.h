/* What the C benchmarks under tests/ share (header-only): the median of a set of timings or
 * rates.  Their clock is the library's monotonic one (core/clock.h: g3_clock_now). */
#ifndef G3_TESTS_BENCH_H
#define G3_TESTS_BENCH_H

#include <stdlib.h>

static int g3t_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* x (n,) sorted in place.  RET: its median (the upper one of an even n): x[n / 2]. */
static inline double g3t_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof(double), g3t_cmp_double);
    return x[n / 2];
}

#endif
