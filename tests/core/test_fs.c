/* g3_mkdir_p: nested creation, existing directories, the failing component named, errno
 * kept, empty and over-long paths refused; everything it made is removed.  g3_tmp_name's
 * form. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "tap.h"

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int main(void)
{
    char tmpl[512], path[1024], failed[PATH_MAX], *root, *lng;
    const char *tmpdir = getenv("TMPDIR");
    g3_status_t st;
    FILE *f;

    snprintf(tmpl, sizeof(tmpl), "%s/g3_test_fs.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    root = mkdtemp(tmpl);
    if (!root)
        tap_skip_all("cannot make a temporary directory under $TMPDIR or /tmp");

    snprintf(path, sizeof(path), "%s/a/b/c", root);
    memset(failed, 'x', sizeof(failed));
    st = g3_mkdir_p(path, 0755, failed, sizeof(failed));
    tap_ok(st == G3_OK && is_dir(path) && failed[0] == '\0', "three missing levels are created");
    tap_ok(g3_mkdir_p(path, 0755, NULL, 0) == G3_OK, "an existing directory is fine");
    snprintf(path, sizeof(path), "%s/a/b/d/", root);
    tap_ok(g3_mkdir_p(path, 0755, NULL, 0) == G3_OK && is_dir(path), "a trailing slash is fine");

    snprintf(path, sizeof(path), "%s/file", root);
    f = fopen(path, "w");
    if (f)
        fclose(f);
    snprintf(path, sizeof(path), "%s/file/x/y", root);
    errno = 0;
    st = g3_mkdir_p(path, 0755, failed, sizeof(failed));
    tap_ok(st == G3_ERR_IO && errno == ENOTDIR,
           "a regular file on the way: G3_ERR_IO, errno ENOTDIR (%s)", strerror(errno));
    snprintf(path, sizeof(path), "%s/file", root);   /* the file, where a directory should be */
    tap_ok(strcmp(failed, path) == 0, "the component that failed is named ('%s')", failed);

    snprintf(path, sizeof(path), "%s/file", root);
    errno = 0;
    st = g3_mkdir_p(path, 0755, failed, sizeof(failed));
    tap_ok(st == G3_ERR_IO && errno == ENOTDIR && strcmp(failed, path) == 0,
           "a regular file as the last component: G3_ERR_IO, errno ENOTDIR, named");

    snprintf(path, sizeof(path), "%s/dangling", root);
    errno = 0;
    st = symlink("no-such-target", path) == 0 ? g3_mkdir_p(path, 0755, failed, sizeof(failed))
                                               : G3_ERR_INTERNAL;
    tap_ok(st == G3_ERR_IO && errno == ENOTDIR,
           "a dangling link as the last component: G3_ERR_IO, errno ENOTDIR (%s)", strerror(errno));

    errno = 0;
    tap_ok(g3_mkdir_p("", 0755, failed, sizeof(failed)) == G3_ERR_INVALID_ARG && errno == ENOENT,
           "an empty path: G3_ERR_INVALID_ARG, errno ENOENT");
    lng = malloc(PATH_MAX + 2);
    memset(lng, 'a', PATH_MAX + 1);
    lng[PATH_MAX + 1] = '\0';
    errno = 0;
    tap_ok(g3_mkdir_p(lng, 0755, NULL, 0) == G3_ERR_INVALID_ARG && errno == ENAMETOOLONG,
           "a path of PATH_MAX bytes or more: G3_ERR_INVALID_ARG, errno ENAMETOOLONG");
    free(lng);

    {
        char tmp[64], want[64];
        g3_tmp_name("/d/f.json", tmp, sizeof(tmp));
        snprintf(want, sizeof(want), "/d/f.json.tmp.%ld.", (long)getpid());
        tap_ok(strncmp(tmp, want, strlen(want)) == 0 && strlen(tmp) > strlen(want),
               "g3_tmp_name: PATH.tmp.PID.NSEC beside the path ('%s')", tmp);
    }

    snprintf(path, sizeof(path), "rm -rf '%s'", root);
    tap_ok(system(path) == 0 && !is_dir(root), "the scratch directory is removed");
    return tap_exit();
}
