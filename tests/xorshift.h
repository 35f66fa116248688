/* The tests' pseudo-random numbers where a test needs a stream of its own (header-only):
 * Marsaglia's xorshift64 (13, 7, 17).  A test keeps its state and seeds it as before, so
 * each test draws the same numbers it always drew. */
#ifndef G3_TESTS_XORSHIFT_H
#define G3_TESTS_XORSHIFT_H

#include <stdint.h>

/* Advance *state (never 0) and return it. */
static inline uint64_t g3t_xorshift64(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

#endif
