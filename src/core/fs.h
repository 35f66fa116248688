/* gpt3d core: file-system helpers shared by the layers above: mkdir -p and temporary names. */
#ifndef G3_CORE_FS_H
#define G3_CORE_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "core/status.h"

/* mkdir -p: create path and every missing parent with mode (the umask applies); directories
 * that exist already are fine (a file or dangling link in their place is ENOTDIR).  Not
 * logged: the caller names what the directory is for.
 * OUT: failed (size bytes; NULL: not wanted), the component that could not be created.
 * RET: G3_OK; G3_ERR_INVALID_ARG for an empty path or one of PATH_MAX bytes or more (errno
 * ENOENT or ENAMETOOLONG); G3_ERR_IO with mkdir's errno. */
g3_status_t g3_mkdir_p(const char *path, mode_t mode, char *failed, size_t size);

/* A temporary name beside path, unique to this process and moment ("PATH.tmp.PID.NSEC"), for
 * a file written whole and then renamed over path.  OUT: tmp (size bytes). */
void g3_tmp_name(const char *path, char *tmp, size_t size);

#endif
