/* gpt3d core: memory helpers (mem.h). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"

g3_status_t g3_mem_reserve(void *arr_p, size_t *cap, size_t want, size_t elem, size_t first)
{
    void *old, *grown;
    size_t c;

    if (want <= *cap)
        return G3_OK;
    c = *cap ? *cap : first ? first : 1;
    while (c < want) {
        if (c > SIZE_MAX / 2)
            return G3_ERR_NO_MEMORY;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return G3_ERR_NO_MEMORY;
    /* The pointer is read and written as bytes: arr_p may point to any object pointer type. */
    memcpy(&old, arr_p, sizeof(old));
    grown = realloc(old, c * elem);
    if (!grown)
        return G3_ERR_NO_MEMORY;
    memcpy(arr_p, &grown, sizeof(grown));
    *cap = c;
    return G3_OK;
}

void *g3_mem_calloc(size_t n, size_t size, const char *who)
{
    void *p = calloc(n, size);
    if (!p)
        g3_error("%s: out of memory", who);
    return p;
}

void g3_mem_free_each(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}
