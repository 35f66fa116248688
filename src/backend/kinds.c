/* gpt3d backend: the table of kinds (backend.h), one row per --device kind.
 *
 * This file is the only one that names the rows (kinds.h: cpu.c's, cuda_kind.c's); everyone
 * else finds them here (g3_be_kind) and calls them only through their fields.  It calls
 * nothing else, so the dispatch (backend.c) -> this table -> the rows -> the helpers they
 * share (shared.c) run one way (docs/design.md, "Backend kinds"). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kinds.h"

static const g3_be_kind_info_t *const g3_be_kinds[G3_BE_KINDS] = {
    [G3_BE_KIND_CPU] = &g3_be_cpu_kind,
    [G3_BE_KIND_CUDA] = &g3_be_cuda_kind,
};

const g3_be_kind_info_t *g3_be_kind(g3_be_kind_t kind)
{
    return (unsigned)kind < G3_BE_KINDS ? g3_be_kinds[kind] : NULL;
}

g3_status_t g3_be_kind_parse(const char *name, g3_be_kind_t *kind_p, char *why, size_t why_len)
{
    for (int k = 0; k < G3_BE_KINDS; k++)
        if (name && strcmp(name, g3_be_kinds[k]->name) == 0) {
            *kind_p = (g3_be_kind_t)k;
            return G3_OK;
        }
    snprintf(why, why_len, "compute backend '%s' is not one gpt3d knows (--device cpu or cuda)",
             name ? name : "(none)");
    return G3_ERR_UNSUPPORTED;
}
