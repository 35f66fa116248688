/* Checkpoint directories: `latest`, the list of committed checkpoints, pruning, removing a
 * checkpoint directory. */
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hook.h"
#include "core/log.h"

static int g3_ckpt_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

g3_status_t g3_ckpt_list(const char *dir, int64_t **iters_p, int *n_p)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int64_t *iters = NULL;
    int n = 0, cap = 0;

    if (d == NULL) {
        g3_error("cannot read checkpoint directory %s: %s", dir, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    while ((e = readdir(d)) != NULL) {
        int64_t it;
        char p[PATH_MAX];
        struct stat sb;

        if (!g3_ckpt_parse_iter_name(e->d_name, &it))
            continue;
        snprintf(p, sizeof(p), "%s/%s/%s", dir, e->d_name, G3_CKPT_INDEX_NAME);
        if (stat(p, &sb) != 0)
            continue;
        if (n == cap) {
            int64_t *a;
            cap = cap ? 2 * cap : 16;
            a = realloc(iters, (size_t)cap * sizeof(*a));
            if (a == NULL) {
                free(iters);
                closedir(d);
                return G3_ERR_NO_MEMORY;
            }
            iters = a;
        }
        iters[n++] = it;
    }
    closedir(d);
    if (n > 1)
        qsort(iters, (size_t)n, sizeof(*iters), g3_ckpt_cmp_i64);
    *iters_p = iters;
    *n_p = n;
    return G3_OK;
}

/* buf <- at most 40 bytes of s[0, n) with every byte that is not printable ASCII as \xNN,
 * and "..." when more followed: what a damaged `latest` held, safe to print. */
static void g3_ckpt_escape_bytes(const char *s, size_t n, char *buf, size_t size)
{
    size_t len = 0, i;

    buf[0] = '\0';
    for (i = 0; i < n && i < 40 && len + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            buf[len++] = (char)c;
        else
            len += (size_t)snprintf(buf + len, size - len, "\\x%02x", c);
        buf[len] = '\0';
    }
    if (i < n && len + 4 < size)
        snprintf(buf + len, size - len, "...");
}

g3_status_t g3_ckpt_latest(const char *dir, int64_t *iteration_p)
{
    char p[PATH_MAX], line[128], shown[200];
    struct stat sb;
    FILE *f;
    size_t len;
    int64_t it;

    snprintf(p, sizeof(p), "%s/latest", dir);
    if (stat(p, &sb) != 0)
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    if (!S_ISREG(sb.st_mode)) {
        g3_error("%s is not a regular file (it is %s); it should hold one line naming a checkpoint: remove it and write e.g. 'echo iter_0000100 > %s', or load an iter_NNNNNNN directory in %s directly (--load %s/iter_NNNNNNN)",
                 p, S_ISDIR(sb.st_mode) ? "a directory" : "a special file", p, dir, dir);
        return G3_ERR_FORMAT;
    }
    f = fopen(p, "r");
    if (f == NULL)
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    len = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[len] = '\0';
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
        line[--len] = '\0';
    if (strlen(line) != len || !g3_ckpt_parse_iter_name(line, &it)) {
        g3_ckpt_escape_bytes(line, len, shown, sizeof(shown));
        g3_error("%s does not name a checkpoint (it holds '%s', %lld bytes; expected a line like iter_0000100): it was damaged; rewrite it or load with --load-fallback",
                 p, shown, (long long)sb.st_size);
        return G3_ERR_FORMAT;
    }
    *iteration_p = it;
    return G3_OK;
}

g3_status_t g3_ckpt_prune(const char *dir, int keep_last, const char *save_id)
{
    int64_t *iters = NULL, latest = -1;
    int n = 0, remove;
    g3_status_t st;

    if (keep_last <= 0)
        return G3_OK;
    st = g3_ckpt_list(dir, &iters, &n);
    if (st != G3_OK)
        return st;
    if (g3_ckpt_latest(dir, &latest) != G3_OK)
        latest = -1;
    remove = n - keep_last;
    for (int i = 0; i < n && remove > 0; i++) {
        char from[PATH_MAX], to[PATH_MAX + 80];

        if (iters[i] == latest)
            continue;
        g3_ckpt_iter_path(dir, iters[i], from, sizeof(from));
        snprintf(to, sizeof(to), "%s.deleting-%s", from, save_id ? save_id : "0");
        /* Rename first: a half-removed directory never carries a committed name. */
        if (rename(from, to) != 0) {
            g3_error("--keep-last: cannot rename %s to %s: %s", from, to, strerror(errno));
            st = G3_ERR_IO;
            break;
        }
        g3_hook_fault("pruning");
        st = g3_ckpt_rmdir_flat(to);
        if (st != G3_OK)
            break;
        g3_info("--keep-last %d: removed checkpoint %s", keep_last, from);
        remove--;
    }
    free(iters);
    if (st == G3_OK)
        st = g3_ckpt_fsync_path(dir, 1);
    return st;
}

/* Remove a directory holding only files (a checkpoint directory); refuses to
 * descend into subdirectories, so it never deletes anything else by accident. */
g3_status_t g3_ckpt_rmdir_flat(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[PATH_MAX];
    g3_status_t st = G3_OK;

    if (d == NULL) {
        if (errno == ENOENT)
            return G3_OK;
        g3_error("cannot open directory %s to remove it: %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        if (unlink(p) != 0 && errno != ENOENT) {
            g3_error("cannot remove %s: %s", p, strerror(errno));
            st = G3_ERR_IO;
        }
    }
    closedir(d);
    if (st == G3_OK && rmdir(path) != 0 && errno != ENOENT) {
        g3_error("cannot remove directory %s: %s", path, strerror(errno));
        st = G3_ERR_IO;
    }
    return st;
}
