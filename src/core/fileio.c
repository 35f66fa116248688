/* gpt3d core: reading a whole stream (fileio.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "core/fileio.h"
#include "core/mem.h"

g3_status_t g3_read_stream(FILE *f, char **data_p, size_t *len_p)
{
    char *data = NULL;
    size_t len = 0, cap = 0;
    int err;

    for (;;) {
        /* at least 64 KiB free for each read, and a byte for the NUL */
        if (g3_mem_reserve(&data, &cap, len + 65536 + 1, 1, (1 << 20) + 1) != G3_OK) {
            free(data);
            errno = ENOMEM;
            return G3_ERR_NO_MEMORY;
        }
        size_t got = fread(data + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        err = errno;
        free(data);
        errno = err;
        return G3_ERR_IO;
    }
    data[len] = '\0';
    *data_p = data;
    *len_p = len;
    return G3_OK;
}
