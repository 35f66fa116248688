/* The metrics' TensorBoard event files (tensorboard.h): TFRecord framing around hand-encoded
 * Event protocol buffers. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/fs.h"
#include "core/log.h"
#include "metrics/tensorboard.h"

#define G3_TB_PREFIX "events.out.tfevents."

struct g3_tb {
    FILE *f;
    char *path;
    int   broken;   /* a write failed (warned once): nothing more is written */
};

static uint32_t g3_tb_masked_crc(const void *data, size_t n)
{
    uint32_t c = g3_crc32c(0, data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protocol buffer encoding: the few wire types an Event needs --------------------------- */

typedef struct {
    unsigned char *p;
    size_t         len, cap;
} g3_tb_buf_t;

static int g3_tb_put(g3_tb_buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        unsigned char *q;
        while (cap < b->len + n)
            cap *= 2;
        q = realloc(b->p, cap);
        if (!q)
            return 0;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 1;
}

static int g3_tb_varint(g3_tb_buf_t *b, uint64_t v)
{
    unsigned char s[10];
    size_t n = 0;
    do {
        s[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return g3_tb_put(b, s, n);
}

static int g3_tb_le(g3_tb_buf_t *b, uint64_t v, int bytes)
{
    unsigned char s[8];
    for (int i = 0; i < bytes; i++)
        s[i] = (unsigned char)(v >> (8 * i));
    return g3_tb_put(b, s, (size_t)bytes);
}

/* key = field number << 3 | wire type (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit) */
static int g3_tb_key(g3_tb_buf_t *b, unsigned field, unsigned wire)
{
    return g3_tb_varint(b, (uint64_t)(field << 3 | wire));
}

static int g3_tb_bytes(g3_tb_buf_t *b, unsigned field, const void *p, size_t n)
{
    return g3_tb_key(b, field, 2) && g3_tb_varint(b, n) && g3_tb_put(b, p, n);
}

/* Event { wall_time = 1 (double); step = 2 (int64); file_version = 3 (string) or
 * summary = 5 (Summary { value = 1: Value { tag = 1 (string); simple_value = 2 (float) } }) } */
static int g3_tb_event(g3_tb_buf_t *ev, double wall, int64_t step, const char *version,
                       const char *tag, float value)
{
    uint64_t wbits;
    int ok;

    memcpy(&wbits, &wall, sizeof(wbits));
    ok = g3_tb_key(ev, 1, 1) && g3_tb_le(ev, wbits, 8);
    if (ok && step != 0)
        ok = g3_tb_key(ev, 2, 0) && g3_tb_varint(ev, (uint64_t)step);
    if (ok && version) {
        ok = g3_tb_bytes(ev, 3, version, strlen(version));
    } else if (ok) {
        g3_tb_buf_t val = { NULL, 0, 0 }, sum = { NULL, 0, 0 };
        uint32_t vbits;
        memcpy(&vbits, &value, sizeof(vbits));
        ok = g3_tb_bytes(&val, 1, tag, strlen(tag)) && g3_tb_key(&val, 2, 5) &&
             g3_tb_le(&val, vbits, 4) && g3_tb_bytes(&sum, 1, val.p, val.len) &&
             g3_tb_bytes(ev, 5, sum.p, sum.len);
        free(val.p);
        free(sum.p);
    }
    return ok;
}

/* ---- the file -------------------------------------------------------------------------------- */

static double g3_tb_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One record: framing around data, written and flushed at once.  RET: 1, or 0 (errno). */
static int g3_tb_record(FILE *f, const unsigned char *data, size_t n)
{
    g3_tb_buf_t r = { NULL, 0, 0 };
    unsigned char len8[8];
    int ok;

    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)n >> (8 * i));
    ok = g3_tb_put(&r, len8, 8) && g3_tb_le(&r, g3_tb_masked_crc(len8, 8), 4) &&
         g3_tb_put(&r, data, n) && g3_tb_le(&r, g3_tb_masked_crc(data, n), 4);
    if (!ok)
        errno = ENOMEM;
    if (ok)
        ok = fwrite(r.p, 1, r.len, f) == r.len && fflush(f) == 0;
    free(r.p);
    return ok;
}

/* The TIMESTAMP of the new file: now, or one more than the newest events file of dir when
 * that is not older (name order = time order). */
static long long g3_tb_stamp(const char *dir)
{
    long long now = (long long)time(NULL), newest = -1;
    size_t plen = strlen(G3_TB_PREFIX);
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d)
        return now;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long long t;
        if (strncmp(e->d_name, G3_TB_PREFIX, plen) != 0)
            continue;
        t = strtoll(e->d_name + plen, &end, 10);
        if (end != e->d_name + plen && *end == '.' && t > newest)
            newest = t;
    }
    closedir(d);
    return newest >= now ? newest + 1 : now;
}

g3_status_t g3_tb_open(const char *dir, g3_tb_t **tb_p)
{
    char host[HOST_NAME_MAX + 1] = "localhost", failed[4096];
    g3_tb_buf_t ev = { NULL, 0, 0 };
    g3_tb_t *tb;
    long long stamp;
    int fd = -1;
    size_t plen;

    *tb_p = NULL;
    if (g3_mkdir_p(dir, 0777, failed, sizeof(failed)) != G3_OK) {
        g3_error("--tensorboard-dir %s: cannot create the directory %s: %s; pass a writable directory",
                 dir, failed, strerror(errno));
        return G3_ERR_IO;
    }
    if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    tb = calloc(1, sizeof(*tb));
    plen = strlen(dir) + sizeof(G3_TB_PREFIX) + strlen(host) + 64;
    if (tb)
        tb->path = malloc(plen);
    if (!tb || !tb->path) {
        free(tb);
        g3_error("--tensorboard-dir: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    stamp = g3_tb_stamp(dir);
    for (int n = 0; fd < 0 && n < 1000; n++) {
        snprintf(tb->path, plen, "%s/" G3_TB_PREFIX "%010lld.%s.%ld.%d", dir, stamp, host,
                 (long)getpid(), n);
        fd = open(tb->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd >= 0)
        tb->f = fdopen(fd, "wb");
    if (!tb->f) {
        g3_error("--tensorboard-dir: cannot create the events file %s: %s; pass a writable directory",
                 tb->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        g3_tb_close(tb);
        return G3_ERR_IO;
    }
    if (!g3_tb_event(&ev, g3_tb_wall(), 0, "brain.Event:2", NULL, 0.0f) ||
        !g3_tb_record(tb->f, ev.p, ev.len)) {
        g3_error("--tensorboard-dir: cannot write the events file %s: %s", tb->path,
                 strerror(errno));
        free(ev.p);
        g3_tb_close(tb);
        return G3_ERR_IO;
    }
    free(ev.p);
    *tb_p = tb;
    return G3_OK;
}

void g3_tb_scalar(g3_tb_t *tb, const char *tag, int64_t step, double value)
{
    g3_tb_buf_t ev = { NULL, 0, 0 };

    if (!tb || tb->broken)
        return;
    if (!g3_tb_event(&ev, g3_tb_wall(), step, NULL, tag, (float)value) ||
        !g3_tb_record(tb->f, ev.p, ev.len)) {
        g3_warn("cannot write to the TensorBoard events file %s: %s; no more TensorBoard events are written (training goes on, the metrics file has every value)",
                tb->path, strerror(errno));
        tb->broken = 1;
    }
    free(ev.p);
}

void g3_tb_close(g3_tb_t *tb)
{
    if (!tb)
        return;
    if (tb->f && fclose(tb->f) != 0 && !tb->broken)
        g3_warn("could not finish writing the TensorBoard events file %s: %s", tb->path,
                strerror(errno));
    free(tb->path);
    free(tb);
}
