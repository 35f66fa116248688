/* comm_check: a multi-rank test program for src/comm, run by the shell
 * tests under mpirun (or alone as a singleton).
 *
 *   comm_check info                 print this rank's identity (one line)
 *   comm_check collectives BACKEND  every collective on random data, several
 *                                   sizes, dtypes and group shapes, against a
 *                                   serial reference; exit 0 iff all pass.
 *                                   BACKEND: host (default), nccl, or staged:
 *                                   the staged backend with host "device"
 *                                   memory behind non-dereferenceable
 *                                   addresses (a path that skipped staging
 *                                   would crash), every result compared
 *                                   bitwise with the direct host collective;
 *                                   staged-cuda: the same with CUDA device
 *                                   memory (builds with NCCL), every local
 *                                   rank on GPU local_rank % devices
 *   comm_check hang SECONDS         the last rank stops responding; the
 *                                   others time out and exit 76
 *   comm_check mismatch-group       ranks disagree on a group: exit 2
 *   comm_check mismatch-count       ranks disagree on a count: exit 1
 *
 * Every rank derives every rank's data from (seed, world rank, case), so it
 * can compute the whole group's reference locally. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

#include "comm/comm.h"
#include "core/log.h"
#include "core/rng.h"

static const g3_comm_proc_t *me;
static long n_checks, n_failed;
static g3_comm_backend_t backend = G3_COMM_BACKEND_HOST;
static int on_gpu;   /* buffers in CUDA device memory: nccl, staged-cuda */

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    n_checks++;
    if (ok)
        return;
    n_failed++;
    fprintf(stderr, "FAIL [rank %d]: ", me->rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Element i of world rank w's input for case c. */
static void gen(void *dst, size_t n, g3_comm_dtype_t dt, uint64_t c, int w, size_t first)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u = g3_rng_u64(1234, c * 4096 + (uint64_t)w, first + i);
        double x = ((double)(u >> 11) / 9007199254740992.0) * 2.0 - 1.0;   /* [-1, 1) */
        switch (dt) {
        case G3_DTYPE_FLOAT32: ((float *)dst)[i] = (float)x; break;
        case G3_DTYPE_FLOAT64: ((double *)dst)[i] = x; break;
        case G3_DTYPE_BFLOAT16: {   /* the upper half of the float: truncation is fine here */
            float f = (float)x;
            uint32_t b;
            memcpy(&b, &f, sizeof(b));
            ((uint16_t *)dst)[i] = (uint16_t)(b >> 16);
            break;
        }
        default: ((int64_t *)dst)[i] = (int64_t)(u >> 24) - ((int64_t)1 << 39); break;
        }
    }
}

static double elem(const void *p, g3_comm_dtype_t dt, size_t i)
{
    switch (dt) {
    case G3_DTYPE_FLOAT32: return ((const float *)p)[i];
    case G3_DTYPE_FLOAT64: return ((const double *)p)[i];
    case G3_DTYPE_BFLOAT16: {
        uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &b, sizeof(f));
        return f;
    }
    default: return (double)((const int64_t *)p)[i];
    }
}

/* got vs ref (n elements); abssum: sum of |inputs| per element, for the
 * float tolerance (reduction order differs from the serial one). */
static int compare(const void *got, const void *ref, const double *abssum, size_t n,
                   g3_comm_dtype_t dt, g3_comm_reduce_t op, size_t *bad_p)
{
    for (size_t i = 0; i < n; i++) {
        int ok;
        if (dt == G3_DTYPE_INT64 || op == G3_COMM_MAX) {
            ok = memcmp((const char *)got + i * g3_comm_dtype_size(dt),
                        (const char *)ref + i * g3_comm_dtype_size(dt),
                        g3_comm_dtype_size(dt)) == 0;
        } else {
            /* bf16: every partial sum is rounded (half an ulp, 2^-9 relative), and the
             * order differs from the serial one: 8 ulps of the sum of magnitudes */
            double tol = (dt == G3_DTYPE_FLOAT32 ? 1e-6 : dt == G3_DTYPE_BFLOAT16 ? 0.0078125
                                                                                  : 1e-14) *
                         8 * (abssum ? abssum[i] : 1);
            ok = fabs(elem(got, dt, i) - elem(ref, dt, i)) <= tol;
        }
        if (!ok) {
            *bad_p = i;
            return 0;
        }
    }
    return 1;
}

static uint64_t fnv(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- device staging: the same checks run on NCCL and staged groups --------
 * Staged groups get "device" memory at a non-canonical address (the real one with bit 62
 * flipped): only the copy functions below translate it, so a collective that handed a
 * device pointer to the host transport instead of staging it would crash. */

#define FAKE_BIT ((uintptr_t)1 << 62)
static void *fake_to_real(const void *p) { return (void *)((uintptr_t)p ^ FAKE_BIT); }

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
#ifdef HAVE_NCCL
    if (on_gpu) {
        if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
            fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
            exit(1);
        }
        return p;
    }
#endif
    p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return backend == G3_COMM_BACKEND_STAGED ? fake_to_real(p) : p;   /* host "device" */
}

static void dev_free(void *p)
{
#ifdef HAVE_NCCL
    if (on_gpu) {
        cudaFree(p);
        return;
    }
#endif
    free(backend == G3_COMM_BACKEND_STAGED ? fake_to_real(p) : p);
}

/* Copy bytes between the host and the test's "device" memory: into device memory dst when
 * to_device, out of device memory src otherwise. */
static void dev_copy(void *dst, const void *src, size_t bytes, int to_device)
{
#ifdef HAVE_NCCL
    if (on_gpu) {
        cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
        return;
    }
#endif
    if (backend == G3_COMM_BACKEND_STAGED) {
        if (to_device)
            dst = fake_to_real(dst);
        else
            src = fake_to_real(src);
    }
    memcpy(dst, src, bytes);
}

static void to_dev(void *dst, const void *src, size_t bytes) { dev_copy(dst, src, bytes, 1); }
static void to_host(void *dst, const void *src, size_t bytes) { dev_copy(dst, src, bytes, 0); }

/* The staged backend's copy functions over the fake device memory; counted, so the test
 * can tell that every operation went through them. */
static long staged_copies;
static g3_status_t staged_to_host(void *ctx, void *h, const void *d, size_t bytes)
{
    (void)ctx;
    staged_copies++;
    to_host(h, d, bytes);
    return G3_OK;
}
static g3_status_t staged_to_device(void *ctx, void *d, const void *h, size_t bytes)
{
    (void)ctx;
    staged_copies++;
    to_dev(d, h, bytes);
    return G3_OK;
}
static const g3_comm_devmem_t staged_mem = { NULL, staged_to_host, staged_to_device, NULL,
                                             NULL };

/* Staged groups: got (bytes) must be bitwise what the direct host collective gives. */
static void same_as_host(const void *got, const void *host, size_t bytes, const char *what,
                         const char *shape, g3_comm_dtype_t dt, size_t n)
{
    check(memcmp(got, host, bytes) == 0, "%s staged %s %s n=%zu: not bitwise the host result",
          shape, what, g3_comm_dtype_name(dt), n);
}

/* ---- the battery ------------------------------------------------------------ */

/* The serial reference of a reduction over the ranks of comm of what gen(., n, dt, c, rank,
 * first) gives each rank: ref (n,) folded with op in rank order 0, 1, ..., N-1, abssum (n,)
 * the sums of the absolute values (the scale of a float tolerance); tmp (n,) scratch. */
static void host_reduce(const g3_comm_t *comm, size_t n, g3_comm_dtype_t dt, uint64_t c,
                        size_t first, g3_comm_reduce_t op, void *ref, double *abssum, void *tmp)
{
    memset(abssum, 0, n * sizeof(double));
    for (int m = 0; m < g3_comm_size(comm); m++) {
        gen(tmp, n, dt, c, g3_comm_world_rank_of(comm, m), first);
        for (size_t i = 0; i < n; i++)
            abssum[i] += fabs(elem(tmp, dt, i));
        if (m == 0)
            memcpy(ref, tmp, n * g3_comm_dtype_size(dt));
        else
            g3_comm_reduce_local(ref, tmp, n, dt, op);
    }
}

static g3_status_t run_case(g3_comm_t *comm, g3_comm_t *hostcomm, const char *shape, size_t n,
                            g3_comm_dtype_t dt, uint64_t c)
{
    int N = g3_comm_size(comm), r = g3_comm_rank(comm);
    size_t es = g3_comm_dtype_size(dt);
    char *mine = malloc(n * es * (size_t)N), *ref = malloc(n * es * (size_t)N);
    char *got = malloc(n * es * (size_t)N), *tmp = malloc(n * es * (size_t)N);
    double *abssum = calloc(n * (size_t)N, sizeof(double));
    void *d_a = dev_alloc(n * es * (size_t)N), *d_b = dev_alloc(n * es * (size_t)N);
    g3_status_t st = G3_OK;
    size_t bad = 0;

    if (!mine || !ref || !got || !tmp || !abssum) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    /* all-reduce, sum and max, in place on odd cases */
    for (int op = 0; op < G3_COMM_REDUCE_COUNT && st == G3_OK; op++) {
        uint64_t cc = c * 8 + (uint64_t)op;
        int in_place = (int)(cc % 2);
        gen(mine, n, dt, cc, g3_comm_world_rank_of(comm, r), 0);
        host_reduce(comm, n, dt, cc, 0, (g3_comm_reduce_t)op, ref, abssum, tmp);
        to_dev(d_a, mine, n * es);
        st = g3_comm_allreduce(comm, d_a, in_place ? d_a : d_b, n, dt, (g3_comm_reduce_t)op);
        if (st != G3_OK)
            break;
        to_host(got, in_place ? d_a : d_b, n * es);
        if (backend == G3_COMM_BACKEND_STAGED) {
            st = g3_comm_allreduce(hostcomm, mine, tmp, n, dt, (g3_comm_reduce_t)op);
            if (st != G3_OK)
                break;
            same_as_host(got, tmp, n * es, "all-reduce", shape, dt, n);
        }
        check(compare(got, ref, abssum, n, dt, (g3_comm_reduce_t)op, &bad),
              "%s all-reduce %s %s n=%zu (%s) element %zu: got %.9g want %.9g", shape,
              g3_comm_reduce_name((g3_comm_reduce_t)op), g3_comm_dtype_name(dt), n,
              in_place ? "in place" : "out of place", bad, elem(got, dt, bad),
              elem(ref, dt, bad));
        {
            /* every member must hold bitwise the same result */
            int64_t h = (int64_t)fnv(got, n * es);
            int64_t *all = malloc((size_t)N * sizeof(int64_t));
            st = g3_comm_allgather(hostcomm, &h, all, 1, G3_DTYPE_INT64);
            if (st == G3_OK) {
                int same = 1;
                for (int m = 0; m < N; m++)
                    same &= all[m] == h;
                check(same, "%s all-reduce %s %s n=%zu: ranks disagree bitwise", shape,
                      g3_comm_reduce_name((g3_comm_reduce_t)op), g3_comm_dtype_name(dt), n);
            }
            free(all);
        }
    }
    /* reduce-scatter: input (N, n), output block r */
    if (st == G3_OK) {
        uint64_t cc = c * 8 + 2;
        gen(mine, n * (size_t)N, dt, cc, g3_comm_world_rank_of(comm, r), 0);
        host_reduce(comm, n, dt, cc, (size_t)r * n, G3_COMM_SUM, ref, abssum, tmp);
        to_dev(d_a, mine, n * es * (size_t)N);
        st = g3_comm_reduce_scatter(comm, d_a, d_b, n, dt, G3_COMM_SUM);
        if (st == G3_OK && backend == G3_COMM_BACKEND_STAGED) {
            st = g3_comm_reduce_scatter(hostcomm, mine, tmp, n, dt, G3_COMM_SUM);
            to_host(got, d_b, n * es);
            same_as_host(got, tmp, n * es, "reduce-scatter", shape, dt, n);
        }
        if (st == G3_OK) {
            to_host(got, d_b, n * es);
            check(compare(got, ref, abssum, n, dt, G3_COMM_SUM, &bad),
                  "%s reduce-scatter %s n=%zu element %zu: got %.9g want %.9g", shape,
                  g3_comm_dtype_name(dt), n, bad, elem(got, dt, bad), elem(ref, dt, bad));
        }
    }
    /* all-gather, in place on odd cases */
    if (st == G3_OK) {
        uint64_t cc = c * 8 + 3;
        int in_place = (int)(c % 2);
        for (int m = 0; m < N; m++)
            gen(ref + (size_t)m * n * es, n, dt, cc, g3_comm_world_rank_of(comm, m), 0);
        gen(mine, n, dt, cc, g3_comm_world_rank_of(comm, r), 0);
        if (in_place) {
            to_dev((char *)d_b + (size_t)r * n * es, mine, n * es);
            st = g3_comm_allgather(comm, (char *)d_b + (size_t)r * n * es, d_b, n, dt);
        } else {
            to_dev(d_a, mine, n * es);
            st = g3_comm_allgather(comm, d_a, d_b, n, dt);
        }
        if (st == G3_OK && backend == G3_COMM_BACKEND_STAGED) {
            st = g3_comm_allgather(hostcomm, mine, tmp, n, dt);
            to_host(got, d_b, n * es * (size_t)N);
            same_as_host(got, tmp, n * es * (size_t)N, "all-gather", shape, dt, n);
        }
        if (st == G3_OK) {
            to_host(got, d_b, n * es * (size_t)N);
            check(compare(got, ref, NULL, n * (size_t)N, dt, G3_COMM_MAX, &bad),
                  "%s all-gather %s n=%zu (%s) element %zu: got %.9g want %.9g", shape,
                  g3_comm_dtype_name(dt), n, in_place ? "in place" : "out of place", bad,
                  elem(got, dt, bad), elem(ref, dt, bad));
        }
    }
    /* broadcast from a root that moves with the case */
    if (st == G3_OK) {
        uint64_t cc = c * 8 + 4;
        int root = (int)(c % (uint64_t)N);
        gen(ref, n, dt, cc, g3_comm_world_rank_of(comm, root), 0);
        gen(mine, n, dt, cc, g3_comm_world_rank_of(comm, r), 0);
        to_dev(d_a, mine, n * es);
        st = g3_comm_broadcast(comm, d_a, n, dt, root);
        if (st == G3_OK) {
            to_host(got, d_a, n * es);
            check(compare(got, ref, NULL, n, dt, G3_COMM_MAX, &bad),
                  "%s broadcast %s n=%zu root %d element %zu", shape, g3_comm_dtype_name(dt),
                  n, root, bad);
        }
    }
    /* send/recv around the ring: even ranks send first */
    if (st == G3_OK && N > 1) {
        uint64_t cc = c * 8 + 5;
        int right = (r + 1) % N, left = (r - 1 + N) % N;
        int tag = (int)(c % 1000);
        gen(mine, n, dt, cc, g3_comm_world_rank_of(comm, r), 0);
        gen(ref, n, dt, cc, g3_comm_world_rank_of(comm, left), 0);
        to_dev(d_a, mine, n * es);
        if (r % 2 == 0) {
            st = g3_comm_send(comm, d_a, n, dt, right, tag);
            if (st == G3_OK)
                st = g3_comm_recv(comm, d_b, n, dt, left, tag);
        } else {
            st = g3_comm_recv(comm, d_b, n, dt, left, tag);
            if (st == G3_OK)
                st = g3_comm_send(comm, d_a, n, dt, right, tag);
        }
        if (st == G3_OK) {
            to_host(got, d_b, n * es);
            check(compare(got, ref, NULL, n, dt, G3_COMM_MAX, &bad),
                  "%s send/recv %s n=%zu from %d element %zu", shape, g3_comm_dtype_name(dt),
                  n, left, bad);
        }
    }
    if (st == G3_OK)
        st = g3_comm_barrier(comm);
    dev_free(d_a);
    dev_free(d_b);
    free(mine);
    free(ref);
    free(got);
    free(tmp);
    free(abssum);
    return st;
}

typedef struct {
    const char *name;
    int n;
    int members[64];
} shape_t;

/* This rank's group in each layer of disjoint groups. */
static int make_shapes(shape_t *s, int N, int r)
{
    int k = 0, b;

    s[k].name = "world";
    s[k].n = N;
    for (int i = 0; i < N; i++)
        s[k].members[i] = i;
    k++;
    if (N >= 2) {
        b = N / 2;
        s[k].name = "halves";
        s[k].n = 0;
        for (int i = r < b ? 0 : b; i < (r < b ? b : N); i++)
            s[k].members[s[k].n++] = i;
        k++;
        s[k].name = "strided-reversed";
        s[k].n = 0;
        for (int i = N - 1; i >= 0; i--)
            if (i % 2 == r % 2)
                s[k].members[s[k].n++] = i;
        k++;
    }
    if (N >= 4) {
        s[k].name = "uneven";
        s[k].n = 0;
        for (int i = r < 3 ? 0 : 3; i < (r < 3 ? 3 : N); i++)
            s[k].members[s[k].n++] = i;
        k++;
    }
    s[k].name = "self";
    s[k].n = 1;
    s[k].members[0] = r;
    k++;
    return k;
}

/* Non-blocking collectives: an all-reduce (sum), a reduce-scatter and an all-gather in
 * flight together on one group, tested while "computing", waited for in reverse order.  The
 * host backend (and the staged one, through it) reduces every block in rank order: bitwise
 * the serial reference (which folds rank 0, 1, ..., N-1 in that order); NCCL within the
 * float tolerance. */
static g3_status_t run_nb_case(g3_comm_t *comm, const char *shape, size_t n, g3_comm_dtype_t dt,
                               uint64_t c)
{
    int N = g3_comm_size(comm), r = g3_comm_rank(comm);
    size_t es = g3_comm_dtype_size(dt), bytes = n * es * (size_t)N;
    char *in_ar = malloc(n * es), *in_rs = malloc(bytes), *in_ag = malloc(n * es);
    char *ref_ar = malloc(n * es), *ref_rs = malloc(n * es), *ref_ag = malloc(bytes);
    char *tmp = malloc(bytes), *got = malloc(bytes);
    double *abs_ar = calloc(n, sizeof(double)), *abs_rs = calloc(n, sizeof(double));
    void *d_ar = dev_alloc(n * es), *d_rs = dev_alloc(bytes), *d_rso = dev_alloc(n * es);
    void *d_ag = dev_alloc(bytes), *d_agi = dev_alloc(n * es);
    g3_comm_req_t *req[3] = { NULL, NULL, NULL };
    int exact = backend != G3_COMM_BACKEND_NCCL, done = 0, polls = 0;
    g3_status_t st;
    size_t bad = 0;

    if (!in_ar || !in_rs || !in_ag || !ref_ar || !ref_rs || !ref_ag || !tmp || !got ||
        !abs_ar || !abs_rs) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    gen(in_ar, n, dt, c * 8 + 6, g3_comm_world_rank_of(comm, r), 0);
    gen(in_rs, n * (size_t)N, dt, c * 8 + 7, g3_comm_world_rank_of(comm, r), 0);
    gen(in_ag, n, dt, c * 8 + 3, g3_comm_world_rank_of(comm, r), 0);
    host_reduce(comm, n, dt, c * 8 + 6, 0, G3_COMM_SUM, ref_ar, abs_ar, tmp);
    host_reduce(comm, n, dt, c * 8 + 7, (size_t)r * n, G3_COMM_SUM, ref_rs, abs_rs, tmp);
    for (int m = 0; m < N; m++)
        gen(ref_ag + (size_t)m * n * es, n, dt, c * 8 + 3, g3_comm_world_rank_of(comm, m), 0);
    to_dev(d_ar, in_ar, n * es);
    to_dev(d_rs, in_rs, bytes);
    to_dev(d_agi, in_ag, n * es);
    st = g3_comm_iallreduce(comm, d_ar, d_ar, n, dt, G3_COMM_SUM, NULL, &req[0]);
    if (st == G3_OK)
        st = g3_comm_ireduce_scatter(comm, d_rs, d_rso, n, dt, G3_COMM_SUM, NULL, &req[1]);
    if (st == G3_OK)
        st = g3_comm_iallgather(comm, d_agi, d_ag, n, dt, NULL, &req[2]);
    while (st == G3_OK && !done && polls < 1000) {   /* "compute", then poll */
        volatile double x = 0.0;
        for (int i = 0; i < 2000; i++)
            x += i;
        st = g3_comm_test(req[0], &done);
        polls++;
    }
    for (int k = 2; k >= 0; k--) {
        g3_status_t wst = st == G3_OK ? g3_comm_wait(req[k]) : G3_OK;
        if (st != G3_OK)
            g3_comm_req_free(req[k]);
        st = st == G3_OK ? wst : st;
    }
    if (st == G3_OK) {
        to_host(got, d_ar, n * es);
        check(exact ? memcmp(got, ref_ar, n * es) == 0
                    : compare(got, ref_ar, abs_ar, n, dt, G3_COMM_SUM, &bad),
              "%s non-blocking all-reduce %s n=%zu: %s the rank-order sum", shape,
              g3_comm_dtype_name(dt), n, exact ? "not bitwise" : "not within tolerance of");
        to_host(got, d_rso, n * es);
        check(exact ? memcmp(got, ref_rs, n * es) == 0
                    : compare(got, ref_rs, abs_rs, n, dt, G3_COMM_SUM, &bad),
              "%s non-blocking reduce-scatter %s n=%zu: %s the rank-order sum", shape,
              g3_comm_dtype_name(dt), n, exact ? "not bitwise" : "not within tolerance of");
        to_host(got, d_ag, bytes);
        check(memcmp(got, ref_ag, bytes) == 0, "%s non-blocking all-gather %s n=%zu", shape,
              g3_comm_dtype_name(dt), n);
    }
    dev_free(d_ar);
    dev_free(d_rs);
    dev_free(d_rso);
    dev_free(d_ag);
    dev_free(d_agi);
    free(in_ar);
    free(in_rs);
    free(in_ag);
    free(ref_ar);
    free(ref_rs);
    free(ref_ag);
    free(tmp);
    free(got);
    free(abs_ar);
    free(abs_rs);
    return st;
}

static int cmd_collectives(g3_comm_world_t *world, g3_comm_t *wcomm)
{
    static const size_t sizes[] = { 1, 5, 1000, 20000, 150001 };
    shape_t shapes[8];
    int nshapes = make_shapes(shapes, me->size, me->rank);
    uint64_t c = 0;
    g3_status_t st = G3_OK;
    int64_t failed;

    if (me->size > 64) {
        fprintf(stderr, "comm_check supports at most 64 ranks\n");
        return 1;
    }
    for (int s = 0; s < nshapes && st == G3_OK; s++) {
        g3_comm_t *comm = NULL, *hostcomm = NULL;
        if (backend == G3_COMM_BACKEND_STAGED)
            st = g3_comm_group_create_staged(world, shapes[s].name, &staged_mem,
                                             shapes[s].members, shapes[s].n, &comm);
        else
            st = g3_comm_group_create(world, shapes[s].name, backend, shapes[s].members,
                                      shapes[s].n, &comm);
        if (st == G3_OK && backend != G3_COMM_BACKEND_HOST)
            st = g3_comm_group_create(world, shapes[s].name, G3_COMM_BACKEND_HOST,
                                      shapes[s].members, shapes[s].n, &hostcomm);
        if (st != G3_OK) {
            check(0, "creating group %s: %s", shapes[s].name, g3_status_string(st));
            g3_comm_free(comm);
            break;
        }
        check(g3_comm_size(comm) == shapes[s].n &&
                  g3_comm_world_rank_of(comm, g3_comm_rank(comm)) == me->rank,
              "group %s: size %d rank %d", shapes[s].name, g3_comm_size(comm),
              g3_comm_rank(comm));
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]) && st == G3_OK; z++)
            for (int dt = 0; dt < G3_DTYPE_COUNT && st == G3_OK; dt++) {
                /* big cases once per shape (float32) to keep 8 ranks on 2 cores quick */
                if (sizes[z] > 20000 && dt != G3_DTYPE_FLOAT32)
                    continue;
                st = run_case(comm, hostcomm ? hostcomm : comm, shapes[s].name, sizes[z],
                              (g3_comm_dtype_t)dt, c++);
                if (st == G3_OK)
                    st = run_nb_case(comm, shapes[s].name, sizes[z], (g3_comm_dtype_t)dt, c++);
            }
        if (st != G3_OK)
            check(0, "group %s: an operation failed: %s", shapes[s].name, g3_status_string(st));
        g3_comm_free(hostcomm);
        g3_comm_free(comm);
    }
    failed = n_failed;
    if (st == G3_OK)
        st = g3_comm_allreduce(wcomm, &failed, &failed, 1, G3_DTYPE_INT64, G3_COMM_SUM);
    if (me->rank == 0)
        printf(
            "collectives: %d ranks, backend %s, %d shapes, %ld checks on rank 0, %lld failures in all%s: %s\n",
            me->size, g3_comm_backend_name(backend), nshapes, n_checks, (long long)failed,
            backend == G3_COMM_BACKEND_STAGED
                ? (staged_copies > 0 ? ", staged copies made" : ", NO staged copies")
                : "",
            st == G3_OK && failed == 0 && (backend != G3_COMM_BACKEND_STAGED || staged_copies > 0)
                ? "ALL OK"
                : "FAILED");
    if (st != G3_OK)
        return g3_status_exit_code(st);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    g3_comm_world_t *world = NULL;
    g3_comm_t *wcomm = NULL;
    const char *mode = argc > 1 ? argv[1] : "info";
    g3_status_t st;
    int rc = 0;

    g3_log_init_from_env();
    if (!strcmp(mode, "collectives") && argc > 2 && !strcmp(argv[2], "nccl"))
        backend = G3_COMM_BACKEND_NCCL;
    on_gpu = backend == G3_COMM_BACKEND_NCCL;
    if (!strcmp(mode, "collectives") && argc > 2 && !strcmp(argv[2], "staged-cuda")) {
        backend = G3_COMM_BACKEND_STAGED;   /* real device memory, every rank on one GPU */
        on_gpu = 1;
    }
    if (!strcmp(mode, "collectives") && argc > 2 && !strcmp(argv[2], "staged"))
        backend = G3_COMM_BACKEND_STAGED;
    st = g3_comm_world_init(30, &world);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    me = g3_comm_world_proc(world);
    if (on_gpu) {
#ifdef HAVE_NCCL
        int ndev = 0;
        cudaError_t ce = cudaGetDeviceCount(&ndev);
        if (ce != cudaSuccess || ndev < 1) {
            printf("SKIP: no CUDA device (%s)\n",
                   ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
            g3_comm_world_free(world);
            return 77;
        }
        if (backend == G3_COMM_BACKEND_NCCL && ndev < me->local_size) {
            printf("SKIP: %d local ranks but %d CUDA devices (NCCL needs one each)\n",
                   me->local_size, ndev);
            g3_comm_world_free(world);
            return 77;
        }
        cudaSetDevice(me->local_rank % ndev);
#else
        printf("SKIP: this build has no CUDA runtime for the test (configure found no NCCL)\n");
        g3_comm_world_free(world);
        return 77;
#endif
    }

    if (!strcmp(mode, "info")) {
        g3_comm_exchange_t *x = NULL;
        char blob[64];
        const void *got;
        size_t len;
        int peer = (me->rank + 1) % me->size;

        /* identity, plus one exchange round trip: the next rank's blob */
        snprintf(blob, sizeof(blob), "hello from %d", me->rank);
        st = g3_comm_world_exchange(world, "test blobs", blob, strlen(blob) + 1, &x);
        if (st == G3_OK)
            st = g3_comm_exchange_get(x, peer, &got, &len);
        if (st == G3_OK)
            printf(
                "rank %d size %d local_rank %d local_size %d node %d/%d singleton %d host %s next says '%s'\n",
                me->rank, me->size, me->local_rank, me->local_size, me->node_id, me->num_nodes,
                me->singleton, me->hostname, (const char *)got);
        g3_comm_exchange_free(x);
        rc = g3_status_exit_code(st);
        goto out;
    }

    st = g3_comm_world_group(world, G3_COMM_BACKEND_HOST, &wcomm);
    if (st != G3_OK) {
        rc = g3_status_exit_code(st);
        goto out;
    }
    if (!strcmp(mode, "collectives")) {
        rc = cmd_collectives(world, wcomm);
    } else if (!strcmp(mode, "hang")) {
        double t = argc > 2 ? atof(argv[2]) : 3;
        float x[1000] = { 0 };
        g3_comm_set_timeout(wcomm, t);
        st = g3_comm_barrier(wcomm);
        if (st == G3_OK && me->rank == me->size - 1) {
            fprintf(stderr, "rank %d: stopping to respond\n", me->rank);
            sleep(600);
        }
        if (st == G3_OK)
            st = g3_comm_allreduce(wcomm, x, x, 1000, G3_DTYPE_FLOAT32, G3_COMM_SUM);
        rc = g3_status_exit_code(st);
        /* what a driver does: end the job with the timeout's exit code */
        if (st == G3_ERR_TIMEOUT && argc > 3 && !strcmp(argv[3], "abort"))
            g3_comm_world_abort(world, rc, "a distributed operation timed out");
    } else if (!strcmp(mode, "mismatch-group")) {
        int members[2] = { 0, 1 };
        g3_comm_t *bad = NULL;
        if (me->rank == 1) {
            members[0] = 1;
            members[1] = 0;
        }
        st = g3_comm_group_create(world, "mismatched", G3_COMM_BACKEND_HOST, members, 2, &bad);
        g3_comm_free(bad);
        rc = g3_status_exit_code(st);
    } else if (!strcmp(mode, "mismatch-count")) {
        double x[64] = { 0 };
        g3_comm_set_timeout(wcomm, 10);
        st = g3_comm_allreduce(wcomm, x, x, me->rank == 0 ? 32 : 64, G3_DTYPE_FLOAT64,
                               G3_COMM_SUM);
        rc = g3_status_exit_code(st);
    } else {
        fprintf(stderr, "comm_check: unknown mode '%s'\n", mode);
        rc = 2;
    }
    g3_comm_free(wcomm);
out:
    g3_comm_world_free(world);
    return rc;
}
