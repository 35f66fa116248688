/* gpt3d CPU backend: open/close, memory, threads and the peak FLOP/s.  The ops themselves
 * are in cpu_ops.c (elementwise, norms, losses, optimizer) and cpu_matmul.c (the parallel
 * sgemm, linear layers and attention); they call nothing of this file. */
#include "config.h"

#include <cblas.h>   /* openblas_set_num_threads */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu_internal.h"
#include "backend/kinds.h"
#include "core/log.h"
#include "core/param.h"

/* ---- memory --------------------------------------------------------------------------- */

static g3_status_t g3_cpu_alloc(g3_backend_t *be, size_t bytes, const char *what, void **ptr_p)
{
    void *p = NULL;
    /* Large buffers on 2 MiB boundaries and transparent huge pages: fewer TLB misses when
     * sgemm streams through vocabulary-sized matrices. */
    size_t align = bytes >= (4u << 20) ? (2u << 20) : 64;
    int rc;

    if (bytes == 0)
        bytes = 64;
    rc = posix_memalign(&p, align, bytes);
    if (rc != 0) {
        g3_error(
            "CPU backend: cannot allocate %.1f MiB for %s: %s; use a smaller model, micro batch or sequence, or --recompute-activations",
            (double)bytes / 1048576.0, what ? what : "a tensor", strerror(rc));
        return G3_ERR_NO_MEMORY;
    }
#ifdef MADV_HUGEPAGE
    if (align > 64)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    __atomic_add_fetch(&((g3_cpu_t *)be->priv)->live, 1, __ATOMIC_RELAXED);
    *ptr_p = p;
    return G3_OK;
}

static void g3_cpu_free(g3_backend_t *be, void *ptr)
{
    if (ptr)
        __atomic_sub_fetch(&((g3_cpu_t *)be->priv)->live, 1, __ATOMIC_RELAXED);
    free(ptr);
}

/* The staging buffers of staged groups: plain host memory, counted like ->alloc's so that the
 * order of frees is checked on the CPU as the CUDA backend's page-locked memory needs it. */
static g3_status_t g3_cpu_host_alloc(g3_backend_t *be, size_t bytes, void **ptr_p)
{
    return g3_cpu_alloc(be, bytes, "a host staging buffer", ptr_p);
}

static void g3_cpu_copy(g3_backend_t *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (bytes)
        memcpy(dst, src, bytes);
}

static void g3_cpu_zero(g3_backend_t *be, void *ptr, size_t bytes)
{
    (void)be;
    /* Parallel memset: gradient buffers are hundreds of MiB. */
    if (bytes < (1u << 20)) {
        memset(ptr, 0, bytes);
        return;
    }
#pragma omp parallel
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
        int t = 0, n = 1;
#endif
        size_t chunk = (bytes / (size_t)n + 63) & ~(size_t)63;
        size_t lo = (size_t)t * chunk, hi = lo + chunk > bytes ? bytes : lo + chunk;
        if (lo < hi)
            memset((char *)ptr + lo, 0, hi - lo);
    }
}

static g3_status_t g3_cpu_sync(g3_backend_t *be)
{
    (void)be;
    return G3_OK;
}

/* ---- peak FLOP/s -------------------------------------------------------------------------- */

/* Theoretical fp32 peak: threads x clock x FLOPs per cycle per core, where the clock is the
 * nominal one in /proc/cpuinfo's model name ("@ 2.80GHz", else "cpu MHz") and FLOPs per cycle
 * are 2 FMA ports x vector lanes x 2 (AVX-512: 64, AVX2+FMA: 32, else SSE: 8).  Turbo and
 * parts with one AVX-512 FMA port make it approximate; GPT3D_CPU_PEAK_GFLOPS overrides it. */
static void g3_cpu_peak(g3_backend_t *be)
{
    double env = g3_param_cpu_peak_gflops();   /* 0: unset (or not a positive number) */
    double ghz = 0.0, mhz = 0.0;
    int flops_cycle = 8;
    const char *isa = "sse";
    char line[512], model[128] = "unknown CPU";
    FILE *f;

    if (env > 0.0) {
        be->peak_flops = env * 1e9;
        snprintf(be->peak_how, sizeof(be->peak_how), "GPT3D_CPU_PEAK_GFLOPS=%s",
                 g3_param_str(G3_PARAM_ID_cpu_peak_gflops));
        return;
    }
    f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            char *colon = strchr(line, ':');
            if (!colon)
                continue;
            if (!strncmp(line, "model name", 10) && !strcmp(model, "unknown CPU")) {
                char *at;
                snprintf(model, sizeof(model), "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
                at = strstr(model, "@ ");
                if (at)
                    ghz = strtod(at + 2, NULL);
            } else if (!strncmp(line, "cpu MHz", 7) && mhz == 0.0) {
                mhz = strtod(colon + 1, NULL);
            }
        }
        fclose(f);
    }
    if (ghz <= 0.0)
        ghz = mhz > 0.0 ? mhz / 1000.0 : 2.0;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        flops_cycle = 64;
        isa = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        flops_cycle = 32;
        isa = "avx2+fma";
    }
#endif
    be->peak_flops = (double)be->nthreads * ghz * 1e9 * flops_cycle;
    snprintf(be->device, sizeof(be->device), "%d x %s (%s)", be->nthreads, model, isa);
    snprintf(be->peak_how, sizeof(be->peak_how),
             "%d thread%s x %.2f GHz x %d FLOP/cycle (%s, 2 FMA ports)", be->nthreads,
             be->nthreads == 1 ? "" : "s", ghz, flops_cycle, isa);
}

/* ---- the table ---------------------------------------------------------------------------- */

static void g3_cpu_close(g3_backend_t *be)
{
    g3_cpu_t *cpu = be->priv;

    if (cpu->live != 0)
        g3_error("bug: the CPU backend is closed while %ld of its buffers are still allocated; whoever holds them must free them before g3_be_close (a GPU backend would crash freeing them later)",
                 cpu->live);
    free(cpu->kbuf);
    free(be->priv);
    free(be);
}

static const g3_backend_ops_t g3_cpu_ops = {
    .close = g3_cpu_close,
    .alloc = g3_cpu_alloc,
    .free = g3_cpu_free,
    .upload = g3_cpu_copy,
    .download = g3_cpu_copy,
    .zero = g3_cpu_zero,
    .sync = g3_cpu_sync,
    .host_alloc = g3_cpu_host_alloc,
    .host_free = g3_cpu_free,
    .embedding_fwd = g3_cpu_embedding_fwd,
    .embedding_bwd = g3_cpu_embedding_bwd,
    .layernorm_fwd = g3_cpu_layernorm_fwd,
    .layernorm_bwd = g3_cpu_layernorm_bwd,
    .matmul_fwd = g3_cpu_matmul_fwd,
    .matmul_bwd = g3_cpu_matmul_bwd,
    .attention_fwd = g3_cpu_attention_fwd,
    .attention_bwd = g3_cpu_attention_bwd,
    .gelu_fwd = g3_cpu_gelu_fwd,
    .gelu_bwd = g3_cpu_gelu_bwd,
    .residual_fwd = g3_cpu_residual_fwd,
    .scale = g3_cpu_scale,
    .cast = g3_cpu_cast,
    .xent_fwd = g3_cpu_xent_fwd,
    .xent_bwd = g3_cpu_xent_bwd,
    .adamw = g3_cpu_adamw,
    .sumsq = g3_cpu_sumsq,
    /* fused: only with the fused_ops option 1 (g3_be_fused_keep), for the tests: the same
     * results through the fused path */
    .residual_layernorm_fwd = g3_cpu_residual_layernorm_fwd,
    .matmul_gelu_fwd = g3_cpu_matmul_gelu_fwd,
    .matmul_dgelu_bwd = g3_cpu_matmul_dgelu_bwd,
    .sumsq_acc = g3_cpu_sumsq_acc,
    .clip_scale = g3_cpu_clip_scale,
    .adamw_scaled = g3_cpu_adamw_scaled,
};

static g3_status_t g3_cpu_open(g3_be_opts_t *o, g3_backend_t **be_p)
{
    g3_backend_t *be;
    g3_cpu_t *cpu;

    be = calloc(1, sizeof(*be));
    cpu = calloc(1, sizeof(*cpu));
    if (!be || !cpu) {
        free(be);
        free(cpu);
        g3_error("CPU backend: out of memory opening the backend");
        return G3_ERR_NO_MEMORY;
    }
#ifdef _OPENMP
    if (o->nthreads > 0)
        omp_set_num_threads(o->nthreads);
#endif
    cpu->nthreads = g3_cpu_max_threads();
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
    /* OpenMP owns the cores; each slab's sgemm runs on the thread that calls it. */
    openblas_set_num_threads(1);
#endif
    g3_cpu_ftz();
#pragma omp parallel num_threads(cpu->nthreads)
    g3_cpu_ftz();

    cpu->ops = g3_cpu_ops;
    g3_be_fused_keep(&cpu->ops, o, 0);
    be->ops = &cpu->ops;
    be->nthreads = cpu->nthreads;
    be->priv = cpu;
    g3_cpu_peak(be);
    g3_debug("CPU backend: %s; peak %.1f GFLOP/s (%s); attention %s; OpenMP threads wait: %s",
             be->device, be->peak_flops / 1e9, be->peak_how, g3_be_att_name(G3_BE_ATT_NATIVE),
             g3_be_cpu_wait_how());
    *be_p = be;
    return G3_OK;
}


/* ---- its row of the table of kinds ----------------------------------------------------------- */

/* The CPU runs its own attention: auto and native choose it, cuDNN's needs a GPU. */
static g3_status_t g3_cpu_check_opts(const g3_be_opts_t *o, char *why, size_t why_len)
{
    if (o->attention == G3_BE_ATT_CUDNN) {
        snprintf(
            why, why_len,
            "--attention-backend cudnn needs --device cuda (cuDNN's fused attention runs on NVIDIA GPUs); with --device cpu pass --attention-backend auto or native, or drop the flag");
        return G3_ERR_UNSUPPORTED;
    }
    return G3_OK;
}

static g3_status_t g3_cpu_probe(char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    return G3_OK;   /* always built in, always here */
}

/* The saved probabilities (B,NH,T,T) fp32, and as much scratch for the backward (dP, then
 * dS): cpu_matmul.c. */
static size_t g3_cpu_att_bytes(const g3_be_opts_t *o, int B, int T, int NH, int HS)
{
    (void)o;
    (void)HS;
    return (size_t)B * NH * T * T * sizeof(float);
}

const g3_be_kind_info_t g3_be_cpu_kind = {
    .kind = G3_BE_KIND_CPU,
    .name = "cpu",
    .act_dtype = G3_BE_F32,
    .caps = G3_BE_CAP_HOST_MEMORY,
    .check_opts = g3_cpu_check_opts,
    .probe = g3_cpu_probe,
    .check_sizes = NULL,   /* any size */
    .attention_state_bytes = g3_cpu_att_bytes,
    .attention_scratch_bytes = g3_cpu_att_bytes,
    .linear_state_bytes = NULL,   /* fp32 products: no per-tensor state */
    .open = g3_cpu_open,
};
