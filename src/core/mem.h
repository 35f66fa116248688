/* gpt3d core: memory helpers: growing arrays (the one copy of the "double the capacity until
 * it fits" step), an allocation that logs its failure, and freeing a list of pointers. */
#ifndef G3_CORE_MEM_H
#define G3_CORE_MEM_H

#include <stddef.h>

#include "core/status.h"

/* Room for want elements in a growing array: arr_p is the address of the array's pointer (any
 * element type, e.g. &v->items), *cap its capacity in elements of elem bytes.  When want <=
 * *cap nothing changes; else the capacity is doubled, from *cap (first when *cap is 0), until
 * it holds want, the array reallocated and *cap updated.  Not logged: the caller knows what
 * the memory is for.  RET: G3_OK, or G3_ERR_NO_MEMORY with the array and *cap as they were. */
g3_status_t g3_mem_reserve(void *arr_p, size_t *cap, size_t want, size_t elem, size_t first);

/* Room for element n (appending to an array of n elements): g3_mem_reserve for n + 1, inline
 * while there is room. */
static inline g3_status_t g3_mem_grow(void *arr_p, size_t *cap, size_t n, size_t elem,
                                      size_t first)
{
    return n < *cap ? G3_OK : g3_mem_reserve(arr_p, cap, n + 1, elem, first);
}

/* calloc(n, size) that says so when there is no memory: "WHO: out of memory" (who: the
 * command or module, e.g. "gpt3d curate filter").  RET: the zeroed memory, or NULL (logged). */
void *g3_mem_calloc(size_t n, size_t size, const char *who);

/* free() each of n pointers (NULL ones too, as free does). */
void g3_mem_free_each(void *const *ptrs, size_t n);

/* free() each of a list of pointers, in order: G3_FREE_ALL(c->slots, c->arena, c). */
#define G3_FREE_ALL(...)                                                                   \
    g3_mem_free_each((void *const[]){ __VA_ARGS__ },                                       \
                     sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *))

#endif
