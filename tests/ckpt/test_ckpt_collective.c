/* The collective entry points g3_ckpt_save / g3_ckpt_load as a trainer calls
 * them: real processes (fork) for the ranks of a TP 2 x PP 2 x DP 2 layout,
 * joined by a shared-memory all-reduce.  Checks that a save commits once for
 * all, that a failure on one rank fails the save on every rank and leaves
 * `latest` alone, and that --load-fallback moves all ranks together when only
 * one of them finds a corrupt file. */
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "synth.h"
#include "tap.h"

#define WORLD 8
typedef struct {
    pthread_barrier_t barrier;
    int               values[WORLD];
} shm_t;

typedef struct {
    shm_t *shm;
    int    rank;
} comm_ctx_t;

static g3_status_t shm_allreduce_min(void *ctx, int *v)
{
    comm_ctx_t *c = ctx;
    int m;
    c->shm->values[c->rank] = *v;
    pthread_barrier_wait(&c->shm->barrier);
    m = c->shm->values[0];
    for (int i = 1; i < WORLD; i++)
        if (c->shm->values[i] < m)
            m = c->shm->values[i];
    pthread_barrier_wait(&c->shm->barrier);
    *v = m;
    return G3_OK;
}

static char dir[300];
static shm_t *shm;

static synth_cfg_t cfg_at(int64_t it)
{
    synth_cfg_t c = { 4, 16, 4, 64, 50, 64, 32, G3_CKPT_F32, 1, it };
    return c;
}

/* What each rank does; exit status: bit 0 = save status != OK, bit 1 = load
 * failed or differs, bit 2 = loaded iteration != want_iter. */
static int rank_main(int rank, int64_t save_iter, int break_rank, int64_t want_iter, int fallback)
{
    comm_ctx_t cc = { shm, rank };
    g3_ckpt_comm_t comm = { &cc, shm_allreduce_min };
    g3_ckpt_layout_t l = synth_layout(2, 2, 2, rank, 4);
    g3_ckpt_save_opts_t so = { "coll", 0, 0, NULL };
    synth_rank_t r, got, want;
    int code = 0;

    g3_log_set_level(G3_LOG_ERROR + 0);
    g3_log_set_rank(rank, WORLD);
    if (save_iter >= 0) {
        synth_cfg_t c = cfg_at(save_iter);
        synth_build(&r, &c, &l, 1);
        if (rank == break_rank)
            so.save_id = "other";      /* this rank writes into a directory nobody prepared */
        if (g3_ckpt_save(dir, r.state, &so, &comm) != G3_OK)
            code |= 1;
        synth_free(&r);
    }
    if (want_iter >= 0) {
        synth_cfg_t c = cfg_at(want_iter);
        g3_ckpt_load_opts_t lo;
        g3_ckpt_reader_t *rd = NULL;
        memset(&lo, 0, sizeof(lo));
        lo.fallback = fallback;
        synth_build(&got, &c, &l, 0);
        synth_build(&want, &c, &l, 1);
        if (g3_ckpt_load(dir, got.state, &lo, &comm, &rd) != G3_OK ||
            synth_compare(&got, &want) != 0)
            code |= 2;
        else if (g3_ckpt_reader_iteration(rd) != want_iter)
            code |= 4;
        g3_ckpt_reader_close(rd);
        synth_free(&got);
        synth_free(&want);
    }
    return code;
}

/* Run all ranks; RET: OR of the exit codes, or -1 if one died. */
static int run_all(int64_t save_iter, int break_rank, int64_t want_iter, int fallback,
                   int codes[WORLD])
{
    pid_t pids[WORLD];
    int all = 0;
    fflush(stdout);
    for (int r = 0; r < WORLD; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            _exit(rank_main(r, save_iter, break_rank, want_iter, fallback));
    }
    for (int r = 0; r < WORLD; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (codes[r] < 0)
            return -1;
        all |= codes[r];
    }
    return all;
}

static herr_t find_piece(hid_t o, const char *name, const H5O_info_t *info, void *data)
{
    (void)o;
    if (info->type == H5O_TYPE_DATASET && strchr(name, '#') != NULL && ((char *)data)[0] == '\0')
        snprintf(data, 300, "%s", name);
    return 0;
}

/* Flip one byte in the data of the first piece dataset of a shard file. */
static int flip_first_piece(const char *path)
{
    char name[300] = "";
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d;
    haddr_t off = HADDR_UNDEF;
    unsigned char b;
    int fd, ok;

    if (f < 0)
        return 0;
    H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, find_piece, name);
    d = name[0] ? H5Dopen2(f, name, H5P_DEFAULT) : -1;
    if (d >= 0) {
        off = H5Dget_offset(d);
        H5Dclose(d);
    }
    H5Fclose(f);
    if (off == HADDR_UNDEF)
        return 0;
    fd = open(path, O_RDWR);
    ok = fd >= 0 && pread(fd, &b, 1, (off_t)off + 3) == 1;
    b ^= 0x01;
    ok = ok && pwrite(fd, &b, 1, (off_t)off + 3) == 1;
    if (fd >= 0)
        close(fd);
    return ok;
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    pthread_barrierattr_t ba;
    int codes[WORLD], rc, same;
    int64_t latest = -1;

    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(dir, sizeof(dir), "%s/gpt3d-ckpt-coll.XXXXXX", t ? t : "/tmp");
    tap_mkdtemp(dir);
    shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shm->barrier, &ba, WORLD);

    rc = run_all(10, -1, 10, 0, codes);
    tap_ok(rc == 0, "8 processes (TP 2 x PP 2 x DP 2) save collectively and load back bitwise (codes %d)", rc);
    rc = run_all(20, -1, 20, 0, codes);
    tap_ok(rc == 0 && g3_ckpt_latest(dir, &latest) == G3_OK && latest == 20, "a second save commits iteration 20");

    rc = run_all(30, 5, -1, 0, codes);
    same = 1;
    for (int r = 0; r < WORLD; r++)
        same &= codes[r] == 1;
    tap_ok(same, "one rank failing its shard write makes the save fail on every rank");
    tap_ok(g3_ckpt_latest(dir, &latest) == G3_OK && latest == 20, "... and latest still names iteration 20");
    {
        int64_t *iters = NULL;
        int n = 0;
        g3_ckpt_list(dir, &iters, &n);
        tap_ok(n == 2 && iters[1] == 20, "... and no iteration 30 was committed");
        free(iters);
    }

    /* Corrupt a file only some ranks read: the others load fine on their own. */
    {
        char path[400];
        snprintf(path, sizeof(path), "%s/iter_0000020/optim_tp01_pp001_dp001.h5", dir);
        tap_ok(flip_first_piece(path), "flip a byte of the first tensor piece in optim_tp01_pp001_dp001.h5");
    }
    rc = run_all(-1, -1, 20, 0, codes);
    same = 1;
    for (int r = 0; r < WORLD; r++)
        same &= codes[r] == 2;
    tap_ok(same, "a corrupt shard read by one rank fails the load on every rank (without --load-fallback)");
    rc = run_all(-1, -1, 10, 1, codes);
    tap_ok(rc == 0, "with --load-fallback every rank loads iteration 10 together (codes %d)", rc);

    tap_rmtree(dir);
    return tap_exit();
}
