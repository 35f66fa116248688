/* gpt3d core: file-system helpers (fs.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"

static int g3_fs_is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

g3_status_t g3_mkdir_p(const char *path, mode_t mode, char *failed, size_t size)
{
    char p[PATH_MAX];
    size_t n = strlen(path);

    if (failed && size)
        failed[0] = '\0';
    if (n == 0 || n >= sizeof(p)) {
        errno = n == 0 ? ENOENT : ENAMETOOLONG;
        return G3_ERR_INVALID_ARG;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        char c = p[i];
        if (c != '/' && c != '\0')
            continue;
        p[i] = '\0';
        if (mkdir(p, mode) != 0) {
            int err = errno; /* before g3_fs_is_dir's stat can change it */
            if (err == EEXIST && g3_fs_is_dir(p)) {
                p[i] = c;
                continue;
            }
            if (err == EEXIST)
                err = ENOTDIR;   /* a file or a dangling link where a directory goes */
            if (failed && size)
                snprintf(failed, size, "%s", p);
            errno = err;
            return G3_ERR_IO;
        }
        p[i] = c;
    }
    return G3_OK;
}

void g3_tmp_name(const char *path, char *tmp, size_t size)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);   /* wall-clock nanoseconds: a name, not a duration */
    snprintf(tmp, size, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)ts.tv_nsec);
}
