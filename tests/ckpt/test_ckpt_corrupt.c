/* Damaged checkpoints are refused with clear errors: a flipped byte in a
 * tensor or an index table, a truncated shard, a missing shard, a foreign file,
 * a newer format version, a shard from another checkpoint, a damaged
 * `latest`.  --load-fallback loads the previous checkpoint only when asked. */
#include <fcntl.h>
#include <stdarg.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/crc32c.h"
#include "core/log.h"
#include "synth.h"
#include "tap.h"

static char base[300], good[400], work[400];
static char captured[65536];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        tap_diag("command failed: %s", cmd);
}

/* A fresh copy of the good save directory in `work`. */
static void fresh(void)
{
    sh("rm -rf '%s' && cp -a '%s' '%s'", work, good, work);
}

/* fresh(), then path (size) = the file name of the fresh copy's iteration 20 */
static void fresh_file(char *path, size_t size, const char *name)
{
    fresh();
    snprintf(path, size, "%s/iter_0000020/%s", work, name);
}

static int saved_fd = -1;
static char cap_path[400];
static void capture_begin(void)
{
    int fd;
    fflush(stderr);
    snprintf(cap_path, sizeof(cap_path), "%s/stderr.txt", base);
    fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    saved_fd = dup(2);
    dup2(fd, 2);
    close(fd);
}
static const char *capture_end(void)
{
    FILE *f;
    size_t n;
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    f = fopen(cap_path, "r");
    n = f ? fread(captured, 1, sizeof(captured) - 1, f) : 0;
    if (f)
        fclose(f);
    captured[n] = '\0';
    return captured;
}

static synth_cfg_t cfg_at(int64_t it)
{
    synth_cfg_t c = { 4, 16, 4, 64, 50, 64, 32, G3_CKPT_F32, 1, it };
    return c;
}

/* Load latest of `work` under 1x1x1 (values of iteration it).  OUT: the log. */
static g3_status_t load(int64_t it, int fallback, const char **log_p)
{
    g3_ckpt_load_opts_t o;
    synth_cfg_t c = cfg_at(it);
    int bad = -1;
    g3_status_t st;

    memset(&o, 0, sizeof(o));
    o.fallback = fallback;
    capture_begin();
    st = synth_check(work, &c, 1, 1, 1, &o, &bad);
    *log_p = capture_end();
    if (st == G3_OK && bad != 0)
        return G3_ERR_INTERNAL;
    return st;
}

static int verify_faults(void)
{
    int faults = 0;
    capture_begin();
    g3_ckpt_verify(work, &faults);
    capture_end();
    return faults;
}

/* Flip one byte at `delta` inside dataset `name` of file `path`. */
static int flip(const char *path, const char *name, long delta)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d;
    haddr_t off;
    unsigned char b;
    int fd, ok;

    if (f < 0)
        return 0;
    d = H5Dopen2(f, name, H5P_DEFAULT);
    off = d >= 0 ? H5Dget_offset(d) : HADDR_UNDEF;
    if (d >= 0)
        H5Dclose(d);
    H5Fclose(f);
    if (off == HADDR_UNDEF)
        return 0;
    fd = open(path, O_RDWR);
    ok = fd >= 0 && pread(fd, &b, 1, (off_t)off + delta) == 1;
    b ^= 0x10;
    ok = ok && pwrite(fd, &b, 1, (off_t)off + delta) == 1;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Write the checksum block of a format-version-3 index anew after an edit (as a forger
 * would; docs/checkpoint-format.md, section 6), so that the check behind it is what refuses
 * the edit.  An index without the block (versions 1 and 2) is left as it is. */
static int reseal(const char *path)
{
    char block[512];
    unsigned char buf[4096];
    uint32_t crc = 0;
    off_t size = 512;
    ssize_t n;
    int fd = open(path, O_RDWR), ok;

    if (fd < 0)
        return 0;
    ok = pread(fd, block, sizeof(block), 0) == (ssize_t)sizeof(block);
    if (!ok || strncmp(block, "gpt3d-checkpoint-index-seal 1\n", 30) != 0) {
        close(fd);
        return ok;
    }
    while ((n = pread(fd, buf, sizeof(buf), size)) > 0) {
        crc = g3_crc32c(crc, buf, (size_t)n);
        size += n;
    }
    memset(block, 0, sizeof(block));
    snprintf(block, sizeof(block), "gpt3d-checkpoint-index-seal 1\nsize %lld\ncrc32c %08x\n",
             (long long)size, crc);
    ok = pwrite(fd, block, sizeof(block), 0) == (ssize_t)sizeof(block);
    close(fd);
    return ok;
}

static int set_version(const char *path, int v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT), a;
    int ok;
    if (f < 0)
        return 0;
    a = H5Aopen(f, "format_version", H5P_DEFAULT);
    ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &v) >= 0;
    if (a >= 0)
        H5Aclose(a);
    H5Fclose(f);
    return ok && reseal(path);
}

int main(void)
{
    const char *t = getenv("TMPDIR"), *log;
    char p[600], q[600];
    g3_ckpt_save_opts_t so = { "c", 0, 0, NULL };
    g3_status_t st;

    snprintf(base, sizeof(base), "%s/gpt3d-ckpt-corrupt.XXXXXX", t ? t : "/tmp");
    tap_mkdtemp(base);
    snprintf(good, sizeof(good), "%s/good", base);
    snprintf(work, sizeof(work), "%s/work", base);
    g3_log_set_level(G3_LOG_WARN);    /* the fallback's warning is checked */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    {
        synth_cfg_t c10 = cfg_at(10), c20 = cfg_at(20);
        tap_ok(synth_save(good, &c10, 2, 1, 2, &so) == G3_OK &&
                   synth_save(good, &c20, 2, 1, 2, &so) == G3_OK,
               "two good checkpoints (iterations 10 and 20, TP 2 x DP 2)");
    }
    fresh();
    tap_ok(load(20, 0, &log) == G3_OK, "the intact copy loads");

    /* 1. a flipped byte in a tensor */
    fresh_file(p, sizeof(p), "model_tp01_pp000.h5");
    tap_ok(flip(p, "model/layers.1.mlp.fc1.weight#0", 17), "flip a byte of layers.1.mlp.fc1.weight in model_tp01_pp000.h5");
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT, "the load fails (%s)", g3_status_string(st));
    tap_ok(strstr(log, "checksum mismatch") && strstr(log, "model_tp01_pp000.h5") &&
           strstr(log, "model/layers.1.mlp.fc1.weight#0"),
           "the error names the checksum, the file and the dataset");
    tap_ok(strstr(log, "--load-fallback") != NULL, "... and suggests --load-fallback");
    if (!strstr(log, "checksum mismatch"))
        tap_diag("log: %s", log);
    tap_ok(verify_faults() >= 1, "verify finds the fault");
    st = load(10, 1, &log);
    tap_ok(st == G3_OK && strstr(log, "trying") != NULL,
           "--load-fallback loads the previous checkpoint (iteration 10) bitwise and says so");

    /* 2. a truncated shard */
    fresh_file(p, sizeof(p), "optim_tp00_pp000_dp001.h5");
    {
        struct stat sb;
        stat(p, &sb);
        tap_ok(truncate(p, sb.st_size / 2) == 0, "truncate optim_tp00_pp000_dp001.h5 to half");
    }
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "optim_tp00_pp000_dp001.h5") && strstr(log, "truncated"),
           "a truncated shard is refused, naming the file (%s)", g3_status_string(st));
    tap_ok(verify_faults() >= 1, "verify finds the truncated file");

    /* 3. a missing shard */
    fresh_file(p, sizeof(p), "model_tp00_pp000.h5");
    unlink(p);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_NOT_FOUND && strstr(log, "model_tp00_pp000.h5") && strstr(log, "missing"),
           "a missing shard is refused: '... shard file model_tp00_pp000.h5 is missing' (%s)", g3_status_string(st));
    tap_ok(verify_faults() >= 1, "verify finds the missing file");

    /* 4. a newer format version, in the index and in a shard */
    fresh_file(p, sizeof(p), "index.h5");
    tap_ok(set_version(p, G3_CKPT_FORMAT_VERSION + 1), "set the index's format_version to %d", G3_CKPT_FORMAT_VERSION + 1);
    st = load(20, 0, &log);
    snprintf(q, sizeof(q), "format version %d", G3_CKPT_FORMAT_VERSION + 1);
    tap_ok(st == G3_ERR_VERSION && strstr(log, q) && strstr(log, "reads versions 1 to") &&
           strstr(log, "index.h5"), "a newer index version is refused, naming both versions (%s)",
           g3_status_string(st));
    fresh_file(p, sizeof(p), "model_tp01_pp000.h5");
    set_version(p, G3_CKPT_FORMAT_VERSION + 1);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_VERSION && strstr(log, "model_tp01_pp000.h5"), "a newer shard version is refused (%s)",
           g3_status_string(st));

    /* 5. foreign files */
    fresh_file(p, sizeof(p), "model_tp01_pp000.h5");
    {
        hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        H5Fclose(f);
    }
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "not a gpt3d checkpoint file") && strstr(log, "model_tp01_pp000.h5"),
           "a foreign HDF5 file in place of a shard is refused (%s)", g3_status_string(st));
    fresh_file(p, sizeof(p), "index.h5");
    sh("echo 'not hdf5 at all' > '%s'", p);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "begins with neither gpt3d's checksum block nor an HDF5 signature") &&
           strstr(log, "index.h5"), "a non-HDF5 index is refused (%s)", g3_status_string(st));

    /* 6. a shard copied from another checkpoint */
    fresh();
    snprintf(p, sizeof(p), "%s/iter_0000010/model_tp01_pp000.h5", work);
    snprintf(q, sizeof(q), "%s/iter_0000020/model_tp01_pp000.h5", work);
    sh("cp '%s' '%s'", p, q);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "belongs to iteration 10"),
           "a shard from another checkpoint is refused (%s)", g3_status_string(st));

    /* 7. a flipped byte in an index table */
    fresh_file(p, sizeof(p), "index.h5");
    tap_ok(flip(p, "pieces", 40), "flip a byte in the index's /pieces table");
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "index.h5 fails its checksum"),
           "the index's checksum block refuses it first (%s)", g3_status_string(st));
    tap_ok(reseal(p), "... the checksum block written anew");
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "checksum mismatch") && strstr(log, "/pieces"),
           "the damaged table is refused, naming /pieces (%s)", g3_status_string(st));

    /* 8. `latest` damaged or dangling */
    fresh();
    sh("echo garbage > '%s/latest'", work);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_FORMAT && strstr(log, "does not name a checkpoint"), "a damaged latest is refused (%s)",
           g3_status_string(st));
    tap_ok(load(20, 1, &log) == G3_OK, "--load-fallback then takes the newest committed checkpoint (20)");
    fresh();
    sh("rm -rf '%s/iter_0000020'", work);
    st = load(20, 0, &log);
    tap_ok(st == G3_ERR_NOT_FOUND && strstr(log, "which does not exist"), "latest naming a removed checkpoint is refused");
    tap_ok(load(10, 1, &log) == G3_OK, "--load-fallback loads iteration 10 instead");

    /* 9. debris of an interrupted save is never loaded */
    fresh();
    sh("mv '%s/iter_0000020' '%s/iter_0000030.tmp-x' && echo iter_0000010 > '%s/latest'", work, work, work);
    tap_ok(load(10, 1, &log) == G3_OK, "a .tmp directory with a higher iteration is ignored even with --load-fallback");

    /* 10. pieces of several MiB are read in 2 MiB blocks straight from the file and
     * checksummed by a second thread: a flipped byte in a later block is caught, on the
     * same-layout path and on the re-sharded one (which reads rows of the piece) */
    {
        synth_cfg_t big = {
            1, 512, 4, 4096, 50, 64, 32, G3_CKPT_F32, 0, 40
        }; /* fc1: 4 MiB per TP rank */
        char bigdir[500];
        g3_ckpt_load_opts_t o;
        int bad = -1;

        memset(&o, 0, sizeof(o));
        snprintf(bigdir, sizeof(bigdir), "%s/big", base);
        tap_ok(synth_save(bigdir, &big, 2, 1, 1, &so) == G3_OK, "save a model with 4 MiB pieces under TP 2");
        st = synth_check(bigdir, &big, 2, 1, 1, &o, &bad);
        tap_ok(st == G3_OK && bad == 0, "it loads bitwise under TP 2 (%s, %d mismatches)", g3_status_string(st), bad);
        st = synth_check(bigdir, &big, 1, 1, 1, &o, &bad);
        tap_ok(st == G3_OK && bad == 0, "... and under TP 1 (%s, %d mismatches)", g3_status_string(st), bad);
        snprintf(p, sizeof(p), "%s/iter_0000040/model_tp00_pp000.h5", bigdir);
        tap_ok(flip(p, "model/layers.0.mlp.fc1.weight#0", (3L << 20) + 5),
               "flip a byte 3 MiB into layers.0.mlp.fc1.weight in model_tp00_pp000.h5");
        for (int tps = 2; tps >= 1; tps--) {
            capture_begin();
            st = synth_check(bigdir, &big, tps, 1, 1, &o, &bad);
            log = capture_end();
            tap_ok(st == G3_ERR_FORMAT && strstr(log, "checksum mismatch") && strstr(log, "model_tp00_pp000.h5") &&
                   strstr(log, "layers.0.mlp.fc1.weight"),
                   "the load under TP %d fails naming the file and tensor (%s)", tps, g3_status_string(st));
        }
    }

    sh("rm -rf '%s'", base);
    return tap_exit();
}
