/* gpt3d core: the one binary search over the generated tables (the Unicode classes of the
 * tokenizer, the curation stages' NFC and case tables): rows sorted by a uint32_t key. */
#ifndef G3_CORE_TABLE_H
#define G3_CORE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* n rows of stride bytes, sorted and disjoint: row i holds the inclusive key range [lo, hi],
 * lo the uint32_t at the row's start and hi the one at byte offset hi_off (hi_off 0: the row
 * holds the single key lo).  RET: the row holding key, or NULL. */
static inline const void *g3_table_find(const void *rows, size_t n, size_t stride,
                                        size_t hi_off, uint32_t key)
{
    const unsigned char *base = rows;
    size_t lo = 0, hi = n;   /* search [lo, hi) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const unsigned char *r = base + mid * stride;
        uint32_t first, last;
        memcpy(&first, r, sizeof(first));
        memcpy(&last, r + hi_off, sizeof(last));
        if (key < first)
            hi = mid;
        else if (key > last)
            lo = mid + 1;
        else
            return r;
    }
    return NULL;
}

#endif
