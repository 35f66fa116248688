/* Checkpoint benchmark: save and load MB/s of a synthetic sharded GPT state
 * (f32 model + Adam m and v as ZeRO-1 shards), next to a plain sequential
 * write + fsync and read of the same number of bytes on the same disk.
 *
 *   bench_ckpt [DIR [TP PP DP [L [H]]]]     (defaults: $TMPDIR, 2 1 2, 2, 1024)
 *
 * All ranks of the layout are simulated one after another in this process, so
 * both sides are one writer stream.  Page-cache pages of the files are dropped
 * (posix_fadvise DONTNEED after fsync) before each read, so reads come from the
 * disk where the kernel honours that.  Plain and checkpoint I/O alternate, and
 * each figure is the median of BENCH_REPS (default 5) repetitions.
 *
 * Two references read the checkpoint's own files with read(), without HDF5:
 * every file once ("the shard files"), and what each rank's load reads ("each
 * rank's files": index, model and optim file per rank, so the DP replicas read
 * the model files a second time, from the page cache, as their loads do).
 *
 * Each repetition also prints where the save's and the load's time went (the library's
 * phases, ckpt.h g3_ckpt_timing_t, summed over the ranks); with GPT3D_CKPT_TIMING set, one
 * line per rank's load on stderr.
 *
 * Last, the trainer's check of every save's and load's host copy for NaN and infinity
 * (parallel/par_ckpt.h g3_par_ckpt_first_nonfinite, the "finite" and part of the "verify"
 * phase) over as many floats as the checkpoint holds, in GB/s on the OpenMP threads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/hook.h"
#include "parallel/par_ckpt.h"
#include "synth.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void drop_cache_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

static void drop_cache_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        drop_cache_file(p);
    }
    if (d)
        closedir(d);
}

/* Plain sequential write of `bytes` from one buffer (16 MB write calls) +
 * fsync.  RET: seconds. */
static double plain_write(const char *path, const char *buf, size_t bytes)
{
    size_t chunk = 16u << 20, done = 0;
    double t0 = now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);

    int short_write = 0;

    while (fd >= 0 && done < bytes) {
        size_t n = bytes - done < chunk ? bytes - done : chunk;
        ssize_t w = write(fd, buf + done, n);
        if (w != (ssize_t)n) {
            short_write = w >= 0;   /* a full disk may write part without an errno */
            break;
        }
        done += n;
    }
    if (fd < 0 || done < bytes || fsync(fd) != 0) {
        fprintf(stderr, "bench_ckpt: cannot write %s: %s\n", path,
                short_write ? "short write (disk full?)" : strerror(errno));
        exit(1);
    }
    close(fd);
    return now() - t0;
}

/* Read it back into a buffer of the same size, as a restore would.  RET: seconds. */
static double plain_read(const char *path, char *buf, size_t bytes)
{
    size_t chunk = 16u << 20, done = 0;
    double t0 = now();
    int fd = open(path, O_RDONLY);

    while (fd >= 0 && done < bytes) {
        ssize_t n = read(fd, buf + done, bytes - done < chunk ? bytes - done : chunk);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    if (fd < 0 || done < bytes) {
        fprintf(stderr, "bench_ckpt: cannot read %s back: %s\n", path,
                fd < 0 ? strerror(errno) : "short read");
        exit(1);
    }
    close(fd);
    return now() - t0;
}

/* Read every file of a directory (16 MB reads) into buf: the same files the
 * load reads, without HDF5, checksums or scattering.  RET: seconds. */
static double raw_read_dir(const char *dir, char *buf, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    size_t off = 0;
    double t0 = now();

    while (d && (e = readdir(d)) != NULL) {
        int fd;
        ssize_t n;
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        fd = open(p, O_RDONLY);
        while (fd >= 0 && off < cap &&
               (n = read(fd, buf + off, cap - off < (16u << 20) ? cap - off : (16u << 20))) > 0)
            off += (size_t)n;
        if (fd >= 0)
            close(fd);
    }
    if (d)
        closedir(d);
    return now() - t0;
}

/* Read one file into buf at *off (16 MB reads), wrapping to 0 where it would
 * not fit.  RET: bytes read. */
static size_t read_file_at(const char *path, char *buf, size_t cap, size_t *off)
{
    struct stat sb;
    size_t got = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY);

    if (fd < 0)
        return 0;
    if (fstat(fd, &sb) == 0 && *off + (size_t)sb.st_size > cap)
        *off = 0;
    while (*off < cap &&
           (n = read(fd, buf + *off, cap - *off < (16u << 20) ? cap - *off : (16u << 20))) > 0) {
        *off += (size_t)n;
        got += (size_t)n;
    }
    close(fd);
    return got;
}

/* What the simulated ranks' same-layout loads read, without HDF5 or checksums:
 * for each rank the index, its model file and its optim file, whole.  The DP
 * replicas of a (tp, pp) read the same model file again (from the page cache,
 * as the load does), so this is more bytes than the checkpoint holds.
 * OUT: *bytes_p.  RET: seconds. */
static double raw_read_ranks(const char *iter, int tp, int pp, int dp, int L, char *buf, size_t cap,
                             size_t *bytes_p)
{
    size_t off = 0, bytes = 0;
    char p[1024];
    double t0 = now();

    for (int r = 0; r < tp * pp * dp; r++) {
        g3_ckpt_layout_t l = synth_layout(tp, pp, dp, r, L);
        snprintf(p, sizeof(p), "%s/index.h5", iter);
        bytes += read_file_at(p, buf, cap, &off);
        snprintf(p, sizeof(p), "%s/model_tp%02d_pp%03d.h5", iter, l.tp, l.pp);
        bytes += read_file_at(p, buf, cap, &off);
        snprintf(p, sizeof(p), "%s/optim_tp%02d_pp%03d_dp%03d.h5", iter, l.tp, l.pp, l.dp);
        bytes += read_file_at(p, buf, cap, &off);
    }
    *bytes_p = bytes;
    return now() - t0;
}

static g3_status_t bench_save(const char *dir, synth_rank_t *ranks, int world, int64_t iteration,
                              double *t_p, double *t_shards_p, g3_ckpt_timing_t *tm)
{
    g3_ckpt_save_opts_t so = { "bench", 0, 0, tm };
    double t0 = now();
    g3_status_t st = g3_ckpt_save_prepare(dir, iteration, &so);

    for (int r = 0; st == G3_OK && r < world; r++)
        st = g3_ckpt_write_shards(dir, ranks[r].state, &so);
    *t_shards_p = now() - t0;
    if (st == G3_OK)
        st = g3_ckpt_commit(dir, ranks[0].state, &so);
    *t_p = now() - t0;
    if (st != G3_OK)
        fprintf(stderr, "bench_ckpt: save failed: %s\n", g3_status_string(st));
    return st;
}

/* The library's phases of a load (the host memory, describe, the copies and free are the
 * caller's: none here). */
#define BENCH_LOAD_PHASES                                                                   \
    (G3_CKPT_T_BIT(G3_CKPT_T_OPEN) | G3_CKPT_T_BIT(G3_CKPT_T_READ) |                        \
     G3_CKPT_T_BIT(G3_CKPT_T_VERIFY) | G3_CKPT_T_BIT(G3_CKPT_T_CONVERT))


/* Each simulated rank loads its own state, into the buffers it saved; the phases of all the
 * loads added into *tm, and with GPT3D_CKPT_TIMING set one line per rank's load on stderr. */
static g3_status_t bench_load(const char *dir, synth_rank_t *ranks, int world,
                              const g3_ckpt_load_opts_t *lo, double *t_p, g3_ckpt_timing_t *tm)
{
    double t0 = now();
    g3_status_t st = G3_OK;
    g3_ckpt_load_opts_t o = *lo;

    for (int r = 0; st == G3_OK && r < world; r++) {
        g3_ckpt_timing_t one;
        double t1 = now();
        char ph[256];

        memset(&one, 0, sizeof(one));
        o.timing = &one;
        st = g3_ckpt_load(dir, ranks[r].state, &o, NULL, NULL);
        for (int k = 0; k < G3_CKPT_T_COUNT; k++)
            tm->s[k] += one.s[k];
        if (g3_hook_ckpt_timing()) {
            g3_ckpt_timing_format(&one, BENCH_LOAD_PHASES, 0, ph, sizeof(ph));
            fprintf(stderr, "ckpt load timing (%s, rank %d): %s; total %.3f s\n", dir, r, ph,
                    now() - t1);
        }
    }
    *t_p = now() - t0;
    if (st != G3_OK)
        fprintf(stderr, "bench_ckpt: load failed: %s\n", g3_status_string(st));
    return st;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The finite check over `bytes` of finite floats: the median of reps, on the OpenMP threads.
 * RET: seconds, or -1 (out of memory, or a finite value taken for NaN). */
static double bench_finite(size_t bytes, int reps, int *threads_p)
{
    size_t n = bytes / sizeof(float);
    float *x = malloc(n * sizeof(float) + 1);
    double t[64], t0;
    int ok = 1;

    *threads_p = 1;
#ifdef _OPENMP
    *threads_p = omp_get_max_threads();
#endif
    if (!x)
        return -1;
    for (size_t i = 0; i < n; i++)   /* faulted in and finite */
        x[i] = (float)(i & 1023) - 512.0f;
    if (reps > 64)
        reps = 64;
    for (int r = 0; r < reps; r++) {
        t0 = now();
        ok &= g3_par_ckpt_first_nonfinite(x, n) == n;
        t[r] = now() - t0;
    }
    free(x);
    return ok ? median(t, reps) : -1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    const char *base = argc > 1 ? argv[1] : tmp ? tmp : "/tmp";   /* the checkpoint's parent */
    char dir[512], plain[600], iter[700];
    int tp = 2, pp = 1, dp = 2, L = 2, H = 1024;
    synth_cfg_t c;
    int world;
    synth_rank_t *ranks;
    double tsave[32], tload[32], tw[32], tr[32], traw[32], tranks[32], best_save, best_load, best_w,
        best_r, best_raw, best_ranks, reshard = 0;
    size_t rank_bytes = 0;
    int reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 5;
    size_t bytes = 0;
    char *pbuf;
    g3_ckpt_load_opts_t lo;

    snprintf(dir, sizeof(dir), "%s/gpt3d-bench-ckpt", base);
    if (argc > 4) {
        tp = atoi(argv[2]);
        pp = atoi(argv[3]);
        dp = atoi(argv[4]);
    }
    if (argc > 5)
        L = atoi(argv[5]);
    if (argc > 6)
        H = atoi(argv[6]);
    g3_log_set_level(G3_LOG_WARN);
    memset(&lo, 0, sizeof(lo));
    lo.no_verify = getenv("BENCH_NO_VERIFY") != NULL;
    c = (synth_cfg_t){ L, H, 16, 4 * H, 50257, 50304, 1024, G3_CKPT_F32, 1, 1 };
    world = tp * pp * dp;
    ranks = calloc((size_t)world, sizeof(*ranks));
    for (int r = 0; r < world; r++) {
        g3_ckpt_layout_t l = synth_layout(tp, pp, dp, r, L);
        synth_build(&ranks[r], &c, &l, 1);
    }
    /* bytes written = every piece a rank writes (model on dp 0, all optim) */
    {
        int64_t total = 0;
        synth_params_t *ps = malloc(sizeof(*ps));
        synth_model_params(&c, ps);
        for (int i = 0; i < ps->n; i++) {
            int64_t v = ps->t[i].shape[0] * ps->t[i].shape[1];
            total += v * 4 * 3;             /* model + exp_avg + exp_avg_sq */
        }
        bytes = (size_t)total;
        free(ps);
    }
    snprintf(plain, sizeof(plain), "%s.plain", dir);
    /* the plain file sits beside the checkpoint directory: its parent must exist before the
     * first repetition writes it (the save would create it only when it comes first) */
    if (g3_mkdir_p(base, 0777, NULL, 0) != G3_OK) {
        fprintf(stderr, "bench_ckpt: cannot create %s: %s\n", base, strerror(errno));
        return 1;
    }
    pbuf = malloc(bytes + (64u << 20));
    memset(pbuf, 0x5a, bytes + (64u << 20));
    printf("checkpoint benchmark: %.1f MB of tensors in %s, TP %d x PP %d x DP %d (%d ranks simulated in one process), %d layers, hidden %d, f32 model + Adam m, v as ZeRO-1 shards\n",
           (double)bytes / 1e6, dir, tp, pp, dp, world, L, H);
    if (reps < 1 || reps > 32)
        reps = 5;
    for (int rep = 0; rep < reps; rep++) {
        /* Odd repetitions run the checkpoint first: whichever write comes second
         * pays for the disk still flushing the first one. */
        int ckpt_first = rep % 2;
        double t_shards = 0, t_save = 0, t_load = 0;
        char cmd[1100], sph[256], lph[256];
        g3_ckpt_timing_t tms, tml;

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
        sync();
        memset(&tms, 0, sizeof(tms));
        memset(&tml, 0, sizeof(tml));
        for (int step = 0; step < 2; step++) {
            if ((step == 0) == ckpt_first) {
                if (bench_save(dir, ranks, world, c.iteration, &t_save, &t_shards, &tms) != G3_OK)
                    return 1;
            } else {
                tw[rep] = plain_write(plain, pbuf, bytes);
            }
        }
        tsave[rep] = t_save;
        /* reads: caches dropped for both, same order rule */
        g3_ckpt_iter_path(dir, c.iteration, iter, sizeof(iter));
        drop_cache_file(plain);
        drop_cache_dir(iter);
        for (int step = 0; step < 2; step++) {
            if ((step == 0) == ckpt_first) {
                if (bench_load(dir, ranks, world, &lo, &t_load, &tml) != G3_OK)
                    return 1;
            } else {
                tr[rep] = plain_read(plain, pbuf, bytes);
            }
        }
        tload[rep] = t_load;
        unlink(plain);
        drop_cache_dir(iter);
        traw[rep] = raw_read_dir(iter, pbuf, bytes + (64u << 20));
        drop_cache_dir(iter);
        tranks[rep] = raw_read_ranks(iter, tp, pp, dp, L, pbuf, bytes + (64u << 20), &rank_bytes);
        printf("  rep %d (%s first): plain write %.2f s, save %.2f s (shards %.2f s); plain read %.2f s, load %.2f s, read of the shard files %.2f s, of each rank's files %.2f s\n",
               rep, ckpt_first ? "checkpoint" : "plain", tw[rep], t_save, t_shards, tr[rep], t_load, traw[rep],
               tranks[rep]);
        g3_ckpt_timing_format(&tms, G3_CKPT_T_WRITER | G3_CKPT_T_BIT(G3_CKPT_T_COMMIT), 0, sph,
                              sizeof(sph));
        g3_ckpt_timing_format(&tml, BENCH_LOAD_PHASES, 0, lph, sizeof(lph));
        printf("    phases (s, all ranks): save: %s; load: %s\n", sph, lph);
    }
    best_raw = median(traw, reps);
    best_ranks = median(tranks, reps);
    best_save = median(tsave, reps);
    best_load = median(tload, reps);
    best_w = median(tw, reps);
    best_r = median(tr, reps);
    {   /* correctness of what the benchmark loaded, and a re-sharded load */
        g3_ckpt_layout_t l = synth_layout(tp, pp, dp, 0, L);
        synth_rank_t want;
        double t0;
        int bad = 0;
        synth_build(&want, &c, &l, 1);
        bad = synth_compare(&ranks[0], &want);
        synth_free(&want);
        drop_cache_dir(iter);
        t0 = now();
        {
            int tp2 = tp == 1 ? 2 : 1, dp2 = dp + 1, w2 = tp2 * pp * dp2;
            for (int r = 0; r < w2; r++) {
                g3_ckpt_layout_t l2 = synth_layout(tp2, pp, dp2, r, L);
                synth_rank_t g;
                synth_build(&g, &c, &l2, 0);
                if (g3_ckpt_load(dir, g.state, NULL, NULL, NULL) != G3_OK)
                    bad++;
                synth_free(&g);
            }
            reshard = now() - t0;
            printf("  (loaded values checked: %s; re-sharded load under TP %d x PP %d x DP %d: %.2f s including state setup)\n",
                   bad ? "MISMATCH" : "bitwise equal", tp2, pp, dp2, reshard);
        }
    }
    printf("  %-44s %8.1f MB/s  (%.2f s)\n", "save: shards + index + fsync + commit", bytes / 1e6 / best_save, best_save);
    printf("  %-44s %8.1f MB/s  (%.2f s)\n", "plain sequential write + fsync, same bytes", bytes / 1e6 / best_w, best_w);
    printf("  %-44s %8.2f\n", "save / plain write", best_w / best_save);
    printf("  %-44s %8.1f MB/s  (%.2f s)\n", "load: same layout, CRC-32C verified", bytes / 1e6 / best_load, best_load);
    printf("  %-44s %8.1f MB/s  (%.2f s)\n", "plain sequential read, same bytes", bytes / 1e6 / best_r, best_r);
    printf("  %-44s %8.2f\n", "load / plain read", best_r / best_load);
    printf("  %-44s %8.1f MB/s  (%.2f s)\n", "reference: plain read of the shard files", bytes / 1e6 / best_raw,
           best_raw);
    printf("  %-44s %8.2f\n", "load / plain read of the shard files", best_raw / best_load);
    printf("  %-44s %8.1f MB/s  (%.2f s, %.1f MB)\n", "reference: plain read of each rank's files",
           rank_bytes / 1e6 / best_ranks, best_ranks, rank_bytes / 1e6);
    printf("  %-44s %8.2f\n", "load / plain read of each rank's files", best_ranks / best_load);
    {
        int threads;
        double tf = bench_finite(bytes, reps, &threads);
        if (tf < 0) {
            fprintf(stderr, "bench_ckpt: the finite check failed (memory, or a wrong answer)\n");
            return 1;
        }
        printf("  %-44s %8.1f GB/s  (%.3f s, %d thread%s)\n", "finite check of the host copy (NaN, Inf)",
               bytes / 1e9 / tf, tf, threads, threads == 1 ? "" : "s");
    }
    {
        char cmd[1100];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", dir);
    }
    for (int r = 0; r < world; r++)
        synth_free(&ranks[r]);
    free(ranks);
    free(pbuf);
    return 0;
}
