#include "core/status.h"

#include <stddef.h>

/* Kept in step with g3_status_t by the static assertion below. */
static const char *const g3_status_names[] = {
    [G3_OK]               = "success",
    [G3_ERR_INVALID_ARG]  = "invalid argument",
    [G3_ERR_USAGE]        = "usage error",
    [G3_ERR_NO_MEMORY]    = "out of memory",
    [G3_ERR_IO]           = "input/output error",
    [G3_ERR_FORMAT]       = "corrupt or foreign file format",
    [G3_ERR_VERSION]      = "unsupported format version",
    [G3_ERR_NOT_FOUND]    = "not found",
    [G3_ERR_UNSUPPORTED]  = "not supported",
    [G3_ERR_COMM]         = "communication error",
    [G3_ERR_TIMEOUT]      = "distributed operation timed out",
    [G3_ERR_NUMERIC]      = "non-finite numeric value",
    [G3_ERR_DEVICE]       = "device error",
    [G3_ERR_INTERRUPTED]  = "interrupted on request",
    [G3_ERR_INTERNAL]     = "internal error",
};

_Static_assert(sizeof(g3_status_names) / sizeof(g3_status_names[0]) == G3_STATUS_COUNT,
               "g3_status_names must have one entry per g3_status_t");

const char *g3_status_string(g3_status_t status)
{
    if ((unsigned)status >= G3_STATUS_COUNT || g3_status_names[status] == NULL)
        return "unknown status";
    return g3_status_names[status];
}

int g3_status_exit_code(g3_status_t status)
{
    switch (status) {
    case G3_OK:              return G3_EXIT_OK;
    case G3_ERR_USAGE:
    case G3_ERR_INVALID_ARG: return G3_EXIT_USAGE;
    case G3_ERR_TIMEOUT:     return G3_EXIT_COMM_TIMEOUT;
    case G3_ERR_NUMERIC:     return G3_EXIT_NONFINITE;
    case G3_ERR_INTERRUPTED: return G3_EXIT_REQUEUE;
    default:                 return G3_EXIT_FAILURE;
    }
}
