/* gpt3d core: memory helpers: growing arrays (the one copy of the "double the capacity when
 * full" step) and an allocation that logs its failure. */
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

/* calloc(n, size) that says so when there is no memory: "WHO: out of memory" (who: the
 * command or module, e.g. "gpt3d curate filter").  RET: the zeroed memory, or NULL (logged). */
void *g3_mem_calloc(size_t n, size_t size, const char *who);

#endif
