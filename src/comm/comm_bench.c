/* comm_bench: gpt3d's host all-reduce next to Open MPI's MPI_Allreduce, in
 * the same processes and the same run.  Built with mpicc (configure's
 * MPICC) when it is found; not installed.
 *
 *   mpirun -np N src/comm/comm_bench [--min-bytes 4096] [--max-bytes 67108864]
 *          [--seconds 0.5] [--dtype float32]
 *
 * For each size (powers of 4 from min to max bytes) both all-reduce a float32
 * vector (sum) alternately, warm up, and then repeat until --seconds pass.
 * Reported per size: time per call (the slowest rank's mean), bus bandwidth
 * busbw = bytes / time * 2 (N - 1) / N (the NCCL-tests convention: what each
 * rank's links carry in a ring), and the ratios gpt3d / MPI.  Both results
 * are checked against each other once per size. */
#include "config.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/log.h"

static double g3_comm_bench_g3(g3_comm_t *comm, float *buf, size_t n, int iters)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        if (g3_comm_allreduce(comm, buf, buf, n, G3_DTYPE_FLOAT32, G3_COMM_SUM) != G3_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
    return MPI_Wtime() - t0;
}

static double g3_comm_bench_mpi(float *buf, size_t n, int iters)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/* Iterations that take about `seconds` on the slowest rank (same on all). */
static int g3_comm_bench_pick_iters(double one, double seconds)
{
    double t;
    int iters;
    MPI_Allreduce(&one, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    iters = t > 0 ? (int)(seconds / t) : 1000;
    return iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
}

/* The command line. */
typedef struct {
    size_t min_bytes, max_bytes;
    double seconds;
    int    rounds;
} g3_comm_bench_opts_t;

/* RET: 0, or 2 after the usage line for an argument it does not know. */
static int g3_comm_bench_args(int argc, char **argv, g3_comm_bench_opts_t *o)
{
    *o = (g3_comm_bench_opts_t){ 4096, 64u << 20, 1.0, 5 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-bytes") && i + 1 < argc)
            o->min_bytes = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            o->max_bytes = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            o->seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            o->rounds = atoi(argv[++i]);
        else {
            fprintf(
                stderr,
                "usage: comm_bench [--min-bytes B] [--max-bytes B] [--seconds S] [--rounds R]\n");
            return 2;
        }
    }
    return 0;
}

/* Correctness at one size: both all-reduces from the same input agree (integers: exact);
 * aborts the job when they do not.  a, b: (bytes / 4,) */
static void g3_comm_bench_check(g3_comm_t *comm, float *a, float *b, size_t bytes, int rank)
{
    size_t n = bytes / 4;
    int ok = 1, all_ok;

    for (size_t i = 0; i < n; i++)
        a[i] = b[i] = (float)((i * 7 + (size_t)rank) % 13);
    g3_comm_bench_g3(comm, a, n, 1);
    g3_comm_bench_mpi(b, n, 1);
    for (size_t i = 0; i < n && ok; i++)
        ok = a[i] == b[i];
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0)
            fprintf(stderr, "comm_bench: gpt3d and MPI results differ at %zu bytes\n",
                    bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Timing at one size: warm up and size the runs; then alternate short rounds of each so
 * that both see the same load, and keep each one's best round.  OUT: *tg, *tm, seconds per
 * call (the slowest rank's mean) of gpt3d and MPI.  a, b: (n,) */
static void g3_comm_bench_time(g3_comm_t *comm, float *a, float *b, size_t n,
                               const g3_comm_bench_opts_t *o, double *tg, double *tm)
{
    double share = o->seconds / (2 * o->rounds);
    int iters_g = g3_comm_bench_pick_iters(g3_comm_bench_g3(comm, a, n, 2) / 2, share);
    int iters_m = g3_comm_bench_pick_iters(g3_comm_bench_mpi(b, n, 2) / 2, share);

    *tg = *tm = 1e30;
    for (int k = 0; k < o->rounds; k++) {
        double t, slowest;
        MPI_Barrier(MPI_COMM_WORLD);
        t = g3_comm_bench_g3(comm, a, n, iters_g) / iters_g;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        *tg = slowest < *tg ? slowest : *tg;
        MPI_Barrier(MPI_COMM_WORLD);
        t = g3_comm_bench_mpi(b, n, iters_m) / iters_m;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        *tm = slowest < *tm ? slowest : *tm;
    }
}

/* Every size from min to max bytes (powers of 4): checked, timed, a line on rank 0. */
static void g3_comm_bench_sizes(g3_comm_t *comm, float *a, float *b, int rank, int size,
                                const g3_comm_bench_opts_t *o)
{
    double busf = 2.0 * (size - 1) / size;
    g3_comm_bench_opts_t run = *o;

    if (rank == 0) {
        printf(
            "# all-reduce float32 sum, %d ranks; time = the slowest rank's mean per call in the best of %d alternating rounds; busbw = bytes/time * 2(N-1)/N\n",
            size, o->rounds);
        printf("%10s %11s %11s %11s %11s %9s %9s\n", "bytes", "g3_us", "g3_busGB/s", "mpi_us",
               "mpi_busGB/s", "bw_ratio", "t_ratio");
    }
    if (run.rounds < 1)
        run.rounds = 1;
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 4) {
        double tg, tm;

        g3_comm_bench_check(comm, a, b, bytes, rank);
        g3_comm_bench_time(comm, a, b, bytes / 4, &run, &tg, &tm);
        if (rank == 0)
            printf("%10zu %11.1f %11.3f %11.1f %11.3f %9.2f %9.2f\n", bytes, tg * 1e6,
                   bytes / tg * busf / 1e9, tm * 1e6, bytes / tm * busf / 1e9, tm / tg,
                   tg / tm);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    g3_comm_bench_opts_t o;
    g3_comm_world_t *world = NULL;
    g3_comm_t *comm = NULL;
    int rank, size;
    float *a, *b;

    MPI_Init(&argc, &argv);
    if (g3_comm_bench_args(argc, argv, &o) != 0) {
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g3_log_init_from_env();
    if (g3_comm_world_init(300, &world) != G3_OK ||
        g3_comm_world_group(world, G3_COMM_BACKEND_HOST, &comm) != G3_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (g3_comm_world_proc(world)->rank != rank || g3_comm_world_proc(world)->size != size) {
        fprintf(stderr, "PMIx and MPI disagree on rank/size\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a = malloc(o.max_bytes);
    b = malloc(o.max_bytes);
    if (a == NULL || b == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < o.max_bytes / 4; i++)
        a[i] = b[i] = (float)((i * 7 + (size_t)rank) % 13);
    g3_comm_bench_sizes(comm, a, b, rank, size, &o);
    free(a);
    free(b);
    g3_comm_free(comm);
    g3_comm_world_free(world);
    MPI_Finalize();
    return 0;
}
