/* gpt3d core: growing arrays, the one copy of the "double the capacity when full" step. */
#ifndef G3_CORE_MEM_H
#define G3_CORE_MEM_H

#include <stddef.h>

#include "core/status.h"

/* Room for element n of a growing array: arr_p is the address of the array's pointer (any
 * element type, e.g. &v->items), *cap its capacity in elements of elem bytes.  When n < *cap
 * nothing changes; else the array is reallocated to twice *cap (first elements when *cap is
 * 0, at least n + 1) and *cap updated.  Not logged: the caller knows what the memory is for.
 * RET: G3_OK, or G3_ERR_NO_MEMORY with the array and *cap as they were. */
g3_status_t g3_mem_grow(void *arr_p, size_t *cap, size_t n, size_t elem, size_t first);

#endif
