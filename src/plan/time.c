/* gpt3d plan: time per iteration from measured speeds (see time.h; docs/plan.md has every
 * formula and the source of every built-in number).  Glossary in plan.h; N = B T tokens of
 * one micro-batch, e bytes per activation value, t = TP. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/clock.h"
#include "core/log.h"
#include "model/gpt.h"
#include "plan/gpu.h"
#include "plan/time.h"
#include "topo/topo.h"

const char *g3_plan_time_part_name(int part)
{
    static const char *names[G3_PLAN_T_PARTS] = { "compute", "tensor-parallel", "pipeline p2p",
                                                  "bubble", "data-parallel", "optimizer" };
    return part >= 0 && part < G3_PLAN_T_PARTS ? names[part] : "?";
}

/* ---- built-in machines ---------------------------------------------------------------------- */

/* DGX A100 (NVIDIA A100 80GB SXM datasheet; DGX A100 datasheet): bf16 dense peak 312 TFLOP/s,
 * HBM2e 2,039 GB/s, NVLink 3 600 GB/s per GPU (300 GB/s each way), eight 200 Gb/s HDR
 * InfiniBand adapters for compute (25 GB/s per GPU).  The achieved fractions no datasheet
 * gives (docs/plan.md "Built-in machines"): GEMMs 0.33 / 0.47 / 0.61 of peak at an intensity
 * cube of side 256 / 1024 / 4096 (chosen so that MT-NLG at 280 nodes matches its published
 * time: a fit, not a measurement; 0.35 / 0.5 / 0.65 before the recomputed forward skipped a
 * pass's last layer and the fixed costs overlapped the work), the attention core 0.4,
 * memory-bound ops 0.8 of HBM, NCCL's bus bandwidth 0.8 of a link. */
/* The fixed cost of an op of the passes, for every built-in machine: what gpt3d plan
 * --calibrate measured on the project's H100 (2026-11-26: 13.45 us; docs/plan.md "The fixed
 * cost of an op"); a calibration on the GPU measures its own. */
#define G3_PLAN_OP_FITTED 13.45e-6

static const g3_plan_machine_t g3_plan_dgx_a100 = {
    "dgx-a100 (DGX A100 datasheet numbers; docs/plan.md)", 8,
    { [G3_PLAN_PREC_BF16] = { 3, { 256, 1024, 4096 },
                              { 0.33 * 312e12, 0.47 * 312e12, 0.61 * 312e12 } } },
    G3_PLAN_PREC_BF16,
    0.40 * 312e12, 0.8 * 2039e9, 0.8 * 300e9, 10e-6, 0.8 * 25e9, 20e-6,
    G3_PLAN_OP_FITTED, 0.0, 0.0, "a100-80gb"
};

/* DGX H100 (H100 SXM5 datasheet; DGX H100 datasheet): bf16 dense peak 989 TFLOP/s, HBM3
 * 3.35 TB/s, NVLink 4 900 GB/s per GPU (450 each way), eight 400 Gb/s NDR InfiniBand
 * adapters (50 GB/s per GPU); the A100's achieved fractions until a GPU calibration
 * replaces them (cuBLASLt measured 902 TFLOP/s at 8192^3 on the project's
 * H100: ../shared/gpu/README.md). */
static const g3_plan_machine_t g3_plan_dgx_h100 = {
    "dgx-h100 (DGX H100 datasheet numbers; docs/plan.md)", 8,
    { [G3_PLAN_PREC_BF16] = { 4, { 256, 1024, 4096, 8192 },
                              { 0.33 * 989e12, 0.47 * 989e12, 0.61 * 989e12, 902e12 } } },
    G3_PLAN_PREC_BF16,
    0.40 * 989e12, 0.8 * 3350e9, 0.8 * 450e9, 10e-6, 0.8 * 50e9, 20e-6,
    G3_PLAN_OP_FITTED, 0.0, 0.0, "h100"
};

g3_status_t g3_plan_machine_builtin(const char *name, g3_plan_machine_t *mc)
{
    if (strcmp(name, "dgx-a100") == 0)
        *mc = g3_plan_dgx_a100;
    else if (strcmp(name, "dgx-h100") == 0)
        *mc = g3_plan_dgx_h100;
    else {
        g3_error("--machine %s: not a built-in machine (dgx-a100, dgx-h100) and not a file; give one of those or a file written by gpt3d plan --calibrate", name);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

g3_status_t g3_plan_machine_gpu(const char *gpu, g3_plan_machine_t *mc)
{
    const g3_plan_gpu_t *g = g3_plan_gpu_find(gpu);
    int a100;

    if (!g)
        return G3_ERR_INVALID_ARG;
    /* the DGX of that GPU: the A100's or the H100's fractions of the GPU's own peak and HBM */
    a100 = strncmp(g->name, "a100", 4) == 0;
    *mc = a100 ? g3_plan_dgx_a100 : g3_plan_dgx_h100;
    for (int i = 0; i < mc->gemm[G3_PLAN_PREC_BF16].n; i++)
        mc->gemm[G3_PLAN_PREC_BF16].flops[i] *= g->peak_flops / (a100 ? 312e12 : 989e12);
    mc->attn_flops = 0.40 * g->peak_flops;
    mc->mem_bw = 0.8 * g->mem_bw;
    mc->intra_bw = 0.8 * g->intra_bw;
    mc->inter_bw = 0.8 * g->inter_bw;
    mc->fixed_bytes = g->fixed_mib * 1048576.0;
    mc->nccl_bytes = g->nccl_mib * 1048576.0;
    snprintf(mc->gpu, sizeof(mc->gpu), "%s", g->name);
    if (strcmp(g->name, g3_plan_dgx_h100.gpu) != 0 && strcmp(g->name, g3_plan_dgx_a100.gpu) != 0)
        snprintf(mc->name, sizeof(mc->name),
                 "a DGX of %s (--gpu %s: datasheet numbers; docs/plan.md)", g->name, g->name);
    return G3_OK;
}

/* ---- the calibration file: "key value..." lines, # comments ------------------------------- */

/* A calibration's `gemm` lines are the rates of the products its backend computes: bf16 on a
 * GPU (the file names it), fp32 on the CPU.  They were read into slot 0: move them to that
 * precision's slot and time the passes at it. */
static void g3_plan_machine_gemm_prec(g3_plan_machine_t *mc)
{
    g3_plan_gemm_rates_t read = mc->gemm[0];

    memset(mc->gemm, 0, sizeof(mc->gemm));
    mc->gemm_prec = mc->gpu[0] ? G3_PLAN_PREC_BF16 : G3_PLAN_PREC_FP32;
    mc->gemm[mc->gemm_prec] = read;
}

g3_status_t g3_plan_machine_read(const char *path, g3_plan_machine_t *mc)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int lineno = 0, have = 0, format = 0;

    if (!f) {
        g3_error("cannot open the calibration file %s: %s; write one with gpt3d plan --calibrate %s", path, strerror(errno), path);
        return G3_ERR_IO;
    }
    memset(mc, 0, sizeof(*mc));
    snprintf(mc->name, sizeof(mc->name), "%s", path);
    mc->gpus_per_node = 1;
    while (fgets(line, sizeof(line), f)) {
        char key[64], word[64];
        double a = 0, b = 0;
        int n;
        lineno++;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        n = sscanf(line, "%63s %lf %lf", key, &a, &b);
        if (!format && !(n == 2 && strcmp(key, "format") == 0)) {
            g3_error("%s:%d: not a calibration of format %d (its first line must be 'format %d'; files before it are format 1): write it again with gpt3d plan --calibrate %s [--device cuda] on the machine it describes", path, lineno, G3_PLAN_CAL_FORMAT, G3_PLAN_CAL_FORMAT, path);
            fclose(f);
            return G3_ERR_FORMAT;
        }
        if (n == 2 && strcmp(key, "format") == 0 && !format) {
            if (a != G3_PLAN_CAL_FORMAT) {
                g3_error("%s: calibration format %g; this gpt3d reads format %d (docs/plan.md \"Calibration\"): write it again with gpt3d plan --calibrate %s", path, a, G3_PLAN_CAL_FORMAT, path);
                fclose(f);
                return G3_ERR_FORMAT;
            }
            format = 1;
        } else if (strcmp(key, "gpu") == 0 && sscanf(line, "%*s %63s", word) == 1 &&
                   g3_plan_gpu_row(word)) {
            snprintf(mc->gpu, sizeof(mc->gpu), "%.31s", word);
        } else if (n == 2 && a > 0 && a < 1e15 && strcmp(key, "fixed") == 0) {
            mc->fixed_bytes = a;
        } else if (n == 2 && a > 0 && a < 1e15 && strcmp(key, "nccl") == 0) {
            mc->nccl_bytes = a;
        } else if (n == 2 && a >= 0 && a < 1 && strcmp(key, "op") == 0) {
            mc->op_seconds = a;
        } else if (n >= 2 && strcmp(key, "gemm") == 0 && n == 3 && a > 0 && b > 0 &&
            mc->gemm[0].n < G3_PLAN_GEMM_POINTS) {
            mc->gemm[0].size[mc->gemm[0].n] = a;   /* slot 0 until the gpu line is known */
            mc->gemm[0].flops[mc->gemm[0].n++] = b;
        } else if (n == 2 && a > 0 && strcmp(key, "attention") == 0) {
            mc->attn_flops = a;
        } else if (n == 2 && a > 0 && strcmp(key, "memory") == 0) {
            mc->mem_bw = a;
        } else if (n == 3 && a > 0 && b >= 0 && strcmp(key, "intra") == 0) {
            mc->intra_bw = a;
            mc->intra_lat = b;
        } else if (n == 3 && a > 0 && b >= 0 && strcmp(key, "inter") == 0) {
            mc->inter_bw = a;
            mc->inter_lat = b;
        } else if (n == 2 && a >= 1 && a < 1e6 && strcmp(key, "gpus_per_node") == 0) {
            mc->gpus_per_node = (int)a;
        } else {
            g3_error("%s:%d: cannot read '%.*s': expected 'gemm SIZE FLOPS', 'attention FLOPS', 'memory BYTES_PER_S', 'intra|inter BYTES_PER_S LATENCY_S', 'gpus_per_node N', 'gpu NAME' (h100, h200, a100-40gb, a100-80gb), 'fixed BYTES', 'nccl BYTES' or 'op SECONDS' (below 1) with positive numbers; write the file again with gpt3d plan --calibrate", path, lineno, (int)strcspn(line, "\r\n"), line);
            fclose(f);
            return G3_ERR_FORMAT;
        }
        have = 1;
    }
    fclose(f);
    g3_plan_machine_gemm_prec(mc);
    if (!have || mc->gemm[mc->gemm_prec].n == 0 || mc->attn_flops <= 0 || mc->mem_bw <= 0 ||
        mc->intra_bw <= 0 || mc->inter_bw <= 0) {
        g3_error("%s: incomplete calibration (it needs gemm, attention, memory, intra and inter lines); write it again with gpt3d plan --calibrate", path);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* ---- measuring ------------------------------------------------------------------------------ */

/* The best of several wall-clock timings of fn (at least 3 and 0.3 s): on a busy machine the
 * fastest run is the one least disturbed (CPU time would misprice the ops that run on fewer
 * threads than the backend has: docs/plan.md).  RET: seconds. */
typedef void (*g3_plan_bench_fn)(g3_backend_t *be, void *ctx);

static double g3_plan_best(g3_backend_t *be, g3_plan_bench_fn fn, void *ctx)
{
    double best = 1e30, t0 = g3_clock_now();
    fn(be, ctx);   /* warm-up */
    be->ops->sync(be);
    for (int i = 0; i < 50 && (i < 3 || g3_clock_now() - t0 < 0.3); i++) {
        double a = g3_clock_now(), d;
        fn(be, ctx);
        be->ops->sync(be);
        d = g3_clock_now() - a;
        if (d > 0 && d < best)
            best = d;
    }
    return best;
}

typedef struct {
    void *x, *y, *z;
    float *dw;
    int n, B, T, NH, HS;
    size_t elems;
} g3_plan_bufs_t;

static void g3_plan_bench_gemm(g3_backend_t *be, void *ctx)
{
    g3_plan_bufs_t *b = ctx;
    be->ops->matmul_fwd(be, NULL, b->y, b->x, b->z, NULL, b->n, b->n, b->n);
    be->ops->matmul_bwd(be, NULL, b->x, b->dw, NULL, b->y, b->x, b->z, b->n, b->n, b->n);
}

static void g3_plan_bench_attn(g3_backend_t *be, void *ctx)
{
    g3_plan_bufs_t *b = ctx;
    /* x: qkv (B,T,3C), y: out (B,T,C) then dout, z: state and scratch, dw: dqkv */
    be->ops->attention_fwd(be, b->y, b->z, b->x, b->B, b->T, b->NH, b->HS);
    be->ops->attention_bwd(be, b->dw, (char *)b->z + b->elems, b->y, b->y, b->x, b->z, b->B,
                           b->T, b->NH, b->HS);
}

static void g3_plan_bench_mem(g3_backend_t *be, void *ctx)
{
    g3_plan_bufs_t *b = ctx;
    be->ops->residual_fwd(be, b->z, b->x, b->y, b->elems);
}

static void g3_plan_bench_copy(g3_backend_t *be, void *ctx)
{
    g3_plan_bufs_t *b = ctx;
    (void)be;
    memcpy(b->z, b->x, b->elems);
}

/* The tiny GPT whose passes measure the fixed cost of an op: 2 layers, hidden 64 (one head of
 * 64: a CUDA head size), MLP 256, 64 tokens, a vocabulary of 128: its work is a few
 * microseconds, its ops' launches, host work and syncs are what it costs. */
void g3_plan_tiny(g3_gpt_config_t *c)
{
    g3_gpt_config_defaults(c);
    c->num_layers = 2;
    c->hidden_size = 64;
    c->num_attention_heads = 1;
    c->ffn_hidden_size = 256;
    c->seq_length = 64;
    c->max_position_embeddings = 64;
    c->vocab_size = 128;
    c->make_vocab_size_divisible_by = 1;
}

typedef struct {
    g3_gpt_t      *m;
    g3_gpt_acts_t *a;
    int32_t        tok[64];
    g3_status_t    st;
} g3_plan_tiny_t;

static void g3_plan_bench_tiny(g3_backend_t *be, void *ctx)
{
    g3_plan_tiny_t *t = ctx;
    (void)be;
    if (t->st == G3_OK)
        t->st = g3_gpt_forward(t->m, t->a, t->tok, t->tok, 1, 64, 1.0f / 64, NULL);
    if (t->st == G3_OK)
        t->st = g3_gpt_backward(t->m, t->a);
}

/* The fixed cost of one op of the passes: the tiny GPT's forward + backward (the best of
 * several, each ending in its sync) over the ops they queue (counted by plan/count.h on the
 * same model).  OUT: *op_s seconds.  RET: the model's errors (logged). */
static g3_status_t g3_plan_measure_op(g3_backend_t *be, g3_be_kind_t kind, const g3_be_opts_t *o,
                                      double *op_s)
{
    g3_gpt_config_t c;
    g3_plan_tiny_t t;
    double n = 0, best;
    g3_status_t st;

    g3_plan_tiny(&c);
    memset(&t, 0, sizeof(t));
    st = g3_plan_count_pass(&c, kind, o, 1, 64, &n);
    if (st == G3_OK)
        st = g3_gpt_init(&c, be, &t.m);
    if (st == G3_OK)
        st = g3_gpt_acts_init(t.m, 1, 64, &t.a);
    if (st == G3_OK) {
        for (int i = 0; i < 64; i++)
            t.tok[i] = (i * 7) % 128;
        best = g3_plan_best(be, g3_plan_bench_tiny, &t);
        st = t.st;
        *op_s = n > 0 ? best / n : 0.0;
    }
    if (t.a)
        g3_gpt_acts_free(t.m, t.a);
    if (t.m)
        g3_gpt_free(t.m);
    return st;
}

/* What NCCL's communicators hold on the GPU: the four that every rank of gpt3d train --device
 * cuda makes (tp, pp, dp, emb: one alone too, each of one rank), made here the same way on the
 * backend's GPU, with the driver's used memory read after each (NVML, as the fixed cost).
 * OUT: *total (bytes the four added), each[4] (bytes each added: whether NCCL's cost is per
 * communicator or paid once).  RET: 1, or 0 with why (no NCCL in this build, not alone, a
 * failure). */
#define G3_PLAN_NCCL_COMMS 4
static int g3_plan_measure_nccl(g3_plan_nvml_t *nvml, const char *bus, double *total,
                                double each[G3_PLAN_NCCL_COMMS], char *why, size_t why_len)
{
    static const char *const names[G3_PLAN_NCCL_COMMS] = { "calibration tp (NCCL)",
                                                           "calibration pp (NCCL)",
                                                           "calibration dp (NCCL)",
                                                           "calibration emb (NCCL)" };
    g3_comm_world_t *world = NULL;
    g3_comm_t *comm[G3_PLAN_NCCL_COMMS] = { NULL };
    double before = 0, start = 0, last = 0, now = 0;
    int ok = 0, self = 0;

    if (!g3_comm_backend_available(G3_COMM_BACKEND_NCCL)) {
        snprintf(why, why_len, "this gpt3d was built without NCCL");
        return 0;
    }
    if (!g3_plan_nvml_used(nvml, bus, &before, &start, why, why_len))
        return 0;
    if (g3_comm_world_init(60, &world) != G3_OK) {
        snprintf(why, why_len, "no world to make NCCL communicators in (logged above)");
        return 0;
    }
    if (g3_comm_world_proc(world)->size != 1) {
        snprintf(why, why_len, "run alone, not under a launcher of %d ranks",
                 g3_comm_world_proc(world)->size);
        goto out;
    }
    self = g3_comm_world_proc(world)->rank;
    last = start;
    for (int i = 0; i < G3_PLAN_NCCL_COMMS; i++) {
        if (g3_comm_group_create(world, names[i], G3_COMM_BACKEND_NCCL, &self, 1, &comm[i]) !=
            G3_OK) {
            snprintf(why, why_len, "making NCCL communicator %d failed (logged above)", i + 1);
            goto out;
        }
        if (!g3_plan_nvml_used(nvml, bus, &before, &now, why, why_len))
            goto out;
        each[i] = now - last;
        last = now;
    }
    *total = last - start;
    ok = *total > 0;
    if (!ok)
        snprintf(why, why_len, "the driver counted no more memory with them");
out:
    for (int i = G3_PLAN_NCCL_COMMS - 1; i >= 0; i--)
        g3_comm_free(comm[i]);
    g3_comm_world_free(world);
    return ok;
}

/* What --calibrate measured: the rates, the fixed costs, where and why not, for the file and
 * the summary it prints. */
typedef struct {
    int    cuda;                           /* a GPU backend: bigger problems, its fixed costs */
    int    sizes[6], nsizes;               /* the sides of the GEMMs measured                 */
    double gemm[6], attn, mem, copy, op;   /* FLOP/s, FLOP/s, bytes/s, bytes/s, seconds       */
    double fixed, nccl, each[G3_PLAN_NCCL_COMMS];   /* bytes; 0: not measured                 */
    char   host[128], bus[64], why[256], nccl_why[256];
    const g3_plan_gpu_t *gpu;              /* the GPU as --gpu names it, or NULL              */
} g3_plan_cal_t;

/* A GPU's fixed costs: the memory the process holds with nothing allocated (the context,
 * cuBLASLt and its workspace, the kernels the passes loaded), as the driver counts it, less
 * what it counted before the backend opened; then NCCL's communicators.  OUT: cal's bus, gpu,
 * fixed, nccl, each, and why and nccl_why where they were not measured. */
static void g3_plan_measure_fixed(g3_backend_t *be, g3_plan_nvml_t *nvml, g3_plan_cal_t *cal)
{
    double before = 0, now = 0;

    snprintf(cal->bus, sizeof(cal->bus), "%s", be->device_id);
    cal->gpu = g3_plan_gpu_match(be->device);
    if (!cal->bus[0] && !cal->why[0])
        snprintf(cal->why, sizeof(cal->why), "the backend gave no PCI bus id");
    if (nvml && cal->bus[0] &&
        g3_plan_nvml_used(nvml, cal->bus, &before, &now, cal->why, sizeof(cal->why)))
        cal->fixed = now - before;
    /* then NCCL's communicators, as gpt3d train makes them (freed again before the
     * rates are measured) */
    if (cal->fixed > 0)
        g3_plan_measure_nccl(nvml, cal->bus, &cal->nccl, cal->each, cal->nccl_why,
                             sizeof(cal->nccl_why));
    else
        snprintf(cal->nccl_why, sizeof(cal->nccl_why), "the fixed cost was not measured");
}

/* Buffers for the largest GEMM (3 x n^2) and the attention: b's x, y, z and dw, big x 16
 * bytes each, zeroed.  RET: the backend's errors (logged); g3_plan_bufs_free frees what was
 * allocated either way. */
static g3_status_t g3_plan_bufs_alloc(g3_backend_t *be, size_t big, g3_plan_bufs_t *b)
{
    g3_status_t st;

    st = be->ops->alloc(be, big * 4 * 4, "the calibration buffers", &b->x);
    if (st == G3_OK)
        st = be->ops->alloc(be, big * 4 * 4, "the calibration buffers", &b->y);
    if (st == G3_OK)
        st = be->ops->alloc(be, big * 4 * 4, "the calibration buffers", &b->z);
    if (st == G3_OK)
        st = be->ops->alloc(be, big * 4 * 4, "the calibration buffers", (void **)&b->dw);
    if (st != G3_OK)
        return st;
    be->ops->zero(be, b->x, big * 16);
    be->ops->zero(be, b->y, big * 16);
    be->ops->zero(be, b->z, big * 16);
    be->ops->zero(be, b->dw, big * 16);
    return G3_OK;
}

static void g3_plan_bufs_free(g3_backend_t *be, g3_plan_bufs_t *b)
{
    if (b->x)
        be->ops->free(be, b->x);
    if (b->y)
        be->ops->free(be, b->y);
    if (b->z)
        be->ops->free(be, b->z);
    if (b->dw)
        be->ops->free(be, b->dw);
}

/* GEMMs of each side in cal->sizes.  OUT: cal->gemm[] FLOP/s. */
static void g3_plan_measure_gemm(g3_backend_t *be, g3_plan_bufs_t *b, g3_plan_cal_t *cal)
{
    for (int i = 0; i < cal->nsizes; i++) {
        double t;
        b->n = cal->sizes[i];
        t = g3_plan_best(be, g3_plan_bench_gemm, b);
        cal->gemm[i] = 6.0 * b->n * (double)b->n * b->n / t;   /* forward 2 n^3, backward 4 n^3 */
    }
}

/* Attention: causal, counted as the model counts it, 3 x 4 B T^2 C (forward + backward).
 * OUT: b's B, T, NH, HS (the shape measured), cal->attn FLOP/s. */
static void g3_plan_measure_attn(g3_backend_t *be, g3_plan_bufs_t *b, g3_plan_cal_t *cal)
{
    double t;

    b->B = cal->cuda ? 4 : 1;
    b->T = cal->cuda ? 2048 : 512;
    b->NH = cal->cuda ? 16 : 4;
    b->HS = 64;
    b->elems = g3_be_att_state_bytes(be, b->B, b->T, b->NH, b->HS);
    t = g3_plan_best(be, g3_plan_bench_attn, b);
    cal->attn = 12.0 * b->B * (double)b->T * b->T * b->NH * b->HS / t;
}

/* Memory-bound: out = a + b, 3 arrays of big x 4 values.  OUT: cal->mem bytes/s. */
static void g3_plan_measure_mem(g3_backend_t *be, size_t big, g3_plan_bufs_t *b,
                                g3_plan_cal_t *cal)
{
    double t, e = g3_be_dtype_size(be->act_dtype);

    b->elems = big * 4;
    t = g3_plan_best(be, g3_plan_bench_mem, b);
    cal->mem = 3.0 * (double)b->elems * e / t;
}

/* The host's copy bandwidth: what a shared-memory transport between ranks of one node moves
 * at best (host collectives of the CPU backend).  OUT: *copy bytes/s.  RET:
 * G3_ERR_NO_MEMORY (logged). */
static g3_status_t g3_plan_measure_copy(g3_backend_t *be, double *copy)
{
    g3_plan_bufs_t hb;
    double t;

    memset(&hb, 0, sizeof(hb));
    hb.elems = (size_t)64 << 20;
    hb.x = malloc(hb.elems);
    hb.z = malloc(hb.elems);
    if (!hb.x || !hb.z) {
        free(hb.x);
        free(hb.z);
        g3_error("gpt3d plan --calibrate: out of memory for the copy benchmark");
        return G3_ERR_NO_MEMORY;
    }
    memset(hb.x, 1, hb.elems);
    memset(hb.z, 0, hb.elems);
    t = g3_plan_best(be, g3_plan_bench_copy, &hb);
    *copy = 2.0 * (double)hb.elems / t;
    free(hb.x);
    free(hb.z);
    return G3_OK;
}

/* The calibration file's lines of the rates and links (docs/plan.md, Calibration); b: the
 * attention's shape measured. */
static void g3_plan_cal_write(FILE *f, const g3_backend_t *be, const g3_plan_bufs_t *b,
                              const g3_plan_cal_t *cal)
{
    fprintf(f, "# gpt3d plan --calibrate on %s: backend %s, %s, %d thread%s\n", cal->host,
            be->name, be->device, be->nthreads, be->nthreads == 1 ? "" : "s");
    fprintf(f, "format %d\n", G3_PLAN_CAL_FORMAT);
    if (cal->gpu)
        fprintf(f, "# the GPU, as gpt3d plan --gpu names it\ngpu %s\n", cal->gpu->name);
    fprintf(f, "# gemm SIZE FLOP/s: matmul forward + backward of SIZE^3 (6 SIZE^3 FLOPs)\n");
    for (int i = 0; i < cal->nsizes; i++)
        fprintf(f, "gemm %d %.6g\n", cal->sizes[i], cal->gemm[i]);
    fprintf(
        f,
        "# attention FLOP/s: forward + backward, counted as 12 B T^2 C (B %d T %d heads %d x %d)\n",
        b->B, b->T, b->NH, b->HS);
    fprintf(f, "attention %.6g\n", cal->attn);
    fprintf(f, "# memory bytes/s: a residual add (read 2, write 1)\n");
    fprintf(f, "memory %.6g\n", cal->mem);
    fprintf(f, "# op SECONDS: the fixed cost of one op of the passes (a 2-layer GPT of hidden 64, 64 tokens: forward + backward / its ops)\n");
    fprintf(f, "op %.6g\n", cal->op);
    fprintf(
        f, "# intra/inter BYTES/s LATENCY_s: %s\n",
        cal->cuda
            ? "not measured (one GPU): the DGX H100 numbers; edit for your machine"
            : "a host copy (read + write) bounds the shared-memory transport; between nodes: the DGX A100's InfiniBand, edit for your network");
    if (cal->cuda) {
        fprintf(f, "intra %.6g %.6g\ninter %.6g %.6g\ngpus_per_node 8\n",
                g3_plan_dgx_h100.intra_bw, g3_plan_dgx_h100.intra_lat,
                g3_plan_dgx_h100.inter_bw, g3_plan_dgx_h100.inter_lat);
    } else {
        fprintf(f, "intra %.6g %.6g\ninter %.6g %.6g\ngpus_per_node 1\n", cal->copy, 2e-6,
                g3_plan_dgx_a100.inter_bw, g3_plan_dgx_a100.inter_lat);
    }
}

/* The summary of the rates on stdout. */
static void g3_plan_cal_print(const g3_backend_t *be, const char *path, const g3_plan_cal_t *cal)
{
    printf("gpt3d plan --calibrate: %s, %s, %d thread%s -> %s\n", be->name, be->device,
           be->nthreads, be->nthreads == 1 ? "" : "s", path);
    for (int i = 0; i < cal->nsizes; i++)
        printf("  GEMM %5d^3: %9.2f GFLOP/s\n", cal->sizes[i], cal->gemm[i] / 1e9);
    printf("  attention:   %9.2f GFLOP/s\n  memory-bound: %8.2f GB/s\n  host copy:   %9.2f GB/s\n",
           cal->attn / 1e9, cal->mem / 1e9, cal->copy / 1e9);
    printf("  op:          %9.2f us (fixed cost of one op of the passes)\n", cal->op * 1e6);
}

/* The calibration file's lines of a GPU's fixed memory and NCCL's (or why they were not
 * measured), and their summary on stdout; nothing for a CPU. */
static void g3_plan_cal_write_fixed(FILE *f, const g3_plan_cal_t *cal)
{
    const double *each = cal->each;

    if (cal->fixed > 0) {
        fprintf(f, "# fixed BYTES: device memory of a process beyond its tensors (the driver's used memory with the backend open and nothing allocated, less before it opened)\n");
        fprintf(f, "fixed %.0f\n", cal->fixed);
        printf("  fixed:       %9.1f MiB per process (context, cuBLASLt and its workspace)\n",
               cal->fixed / 1048576.0);
        if (cal->nccl > 0) {
            fprintf(f, "# nccl BYTES: what the %d NCCL communicators every rank makes (tp, pp, dp, emb; here of one rank each) add to the driver's used memory: %.0f + %.0f + %.0f + %.0f\n",
                    G3_PLAN_NCCL_COMMS, each[0], each[1], each[2], each[3]);
            fprintf(f, "nccl %.0f\n", cal->nccl);
            printf("  NCCL:        %9.1f MiB per rank (%d communicators: %.1f + %.1f + %.1f + %.1f MiB)\n",
                   cal->nccl / 1048576.0, G3_PLAN_NCCL_COMMS, each[0] / 1048576.0,
                   each[1] / 1048576.0, each[2] / 1048576.0, each[3] / 1048576.0);
        } else {
            fprintf(f, "# nccl: not measured (%s): gpt3d plan uses its table's figure for the GPU\n", cal->nccl_why);
            printf("  NCCL:        not measured: %s\n", cal->nccl_why);
        }
    } else if (cal->cuda) {
        fprintf(f, "# fixed: not measured (%s): gpt3d plan uses its table's figure for the GPU\n", cal->why[0] ? cal->why : "the driver counted no more memory with the backend open");
        printf("  fixed:       not measured: %s\n", cal->why[0] ? cal->why : "the driver counted none");
    }
}

g3_status_t g3_plan_calibrate(g3_be_kind_t kind, const g3_be_opts_t *o, const char *path)
{
    static const int sizes[6] = { 128, 256, 512, 1024, 2048, 4096 };
    g3_backend_t *be = NULL;
    g3_plan_bufs_t b;
    g3_plan_cal_t cal = { .host = "this machine", .bus = "", .why = "", .nccl_why = "" };
    size_t big;
    g3_plan_nvml_t *nvml = NULL;
    g3_status_t st;
    FILE *f = NULL;

    memset(&b, 0, sizeof(b));
    /* a GPU: bigger problems, to reach its speed */
    cal.cuda = !(g3_be_kind(kind)->caps & G3_BE_CAP_HOST_MEMORY);
    memcpy(cal.sizes, sizes, sizeof(sizes));
    cal.nsizes = cal.cuda ? 6 : 4;
    big = cal.cuda ? (size_t)4096 * 4096 : (size_t)1024 * 1024;
    /* a GPU's memory as the driver counts it, before this process holds any of it */
    if (cal.cuda)
        nvml = g3_plan_nvml_open(cal.why, sizeof(cal.why));
    st = g3_be_open(kind, o, &be);
    if (st != G3_OK) {
        g3_plan_nvml_close(nvml);
        return st;
    }
    /* the fixed cost of an op, on the model's own passes; then (a GPU) the memory the process
     * holds with nothing allocated and NCCL's, before the rates' buffers are allocated */
    st = g3_plan_measure_op(be, kind, &be->opts, &cal.op);
    if (st != G3_OK)
        goto out;
    if (cal.cuda)
        g3_plan_measure_fixed(be, nvml, &cal);
    st = g3_plan_bufs_alloc(be, big, &b);
    if (st != G3_OK)
        goto out;
    g3_plan_measure_gemm(be, &b, &cal);
    g3_plan_measure_attn(be, &b, &cal);
    g3_plan_measure_mem(be, big, &b, &cal);
    st = g3_plan_measure_copy(be, &cal.copy);
    if (st != G3_OK)
        goto out;
    gethostname(cal.host, sizeof(cal.host) - 1);
    f = fopen(path, "w");
    if (!f) {
        g3_error("cannot create the calibration file %s: %s; give a writable path", path,
                 strerror(errno));
        st = G3_ERR_IO;
        goto out;
    }
    g3_plan_cal_write(f, be, &b, &cal);
    g3_plan_cal_print(be, path, &cal);
out:
    g3_plan_bufs_free(be, &b);
    g3_be_close(be);
    g3_plan_nvml_close(nvml);
    if (f && st == G3_OK)
        g3_plan_cal_write_fixed(f, &cal);
    if (f && fclose(f) != 0 && st == G3_OK) {
        g3_error("writing the calibration file %s failed: %s", path, strerror(errno));
        st = G3_ERR_IO;
    }
    return st;
}

/* ---- the model ------------------------------------------------------------------------------ */

/* RET: FLOP/s of a GEMM as intense as a cube of side d at the rates r (n >= 1): the
 * calibration's points, log-linear between them, the end points beyond. */
static double g3_plan_gemm_rate(const g3_plan_gemm_rates_t *r, double d)
{
    int n = r->n;
    if (d <= r->size[0])
        return r->flops[0];
    for (int i = 1; i < n; i++)
        if (d <= r->size[i]) {
            double u = log(d / r->size[i - 1]) / log(r->size[i] / r->size[i - 1]);
            return exp(log(r->flops[i - 1]) + u * (log(r->flops[i]) - log(r->flops[i - 1])));
        }
    return r->flops[n - 1];
}

/* Seconds of one forward GEMM (N,K) x (K,M), at the rate of the cube of the same arithmetic
 * intensity: S = 3 N K M / (N K + K M + N M) (a cube of side S does 2 S^3 FLOPs on 3 S^2
 * values, as this GEMM does 2 N K M on N K + K M + N M). */
static double g3_plan_gemm(const g3_plan_machine_t *mc, double N, double K, double M)
{
    return 2.0 * N * K * M / g3_plan_gemm_rate(&mc->gemm[mc->gemm_prec],
                                               3.0 * N * K * M / (N * K + K * M + N * M));
}

/* The part of a pass's fixed costs the GPU's work does not hide.  The host queues the pass's
 * ops without waiting (CUDA's stream), so while the GPU works on one op the host prepares the
 * next: an op's fixed cost `op` shows only where the GPU has run out of queued work.  With
 * fixed = n x op of the ops' fixed costs and work the pass's GPU work, the exposed part is
 * fixed^2 / (fixed + work): all of it when the work is nothing (the calibration's tiny GPT,
 * which is how `op` is measured), fixed x (fixed / work) when the work is much more (the host
 * has that share of chances to fall behind).  docs/plan.md "The fixed cost of an op". */
static double g3_plan_exposed(double fixed, double work)
{
    return fixed > 0.0 ? fixed * fixed / (fixed + (work > 0.0 ? work : 0.0)) : 0.0;
}

/* Ring all-reduce of `bytes` over n ranks on a link: the bytes a link carries (topo.h's one
 * model of a collective's traffic) at bw, and 2 (n - 1) steps of latency lat. */
static double g3_plan_allreduce(double bytes, int n, double bw, double lat)
{
    return n > 1 ? g3_topo_ring_allreduce_bytes(bytes, n) / bw + 2.0 * (n - 1) * lat : 0.0;
}

/* The model's shape as the time model prices it (N = B T tokens of one micro-batch, S = T,
 * C hidden, F the MLP's, tp = t, e bytes per activation value, V chunks per stage, share the
 * ranks on one GPU, gpn ranks per node; full and sel: the recompute). */
typedef struct {
    double N, S, C, F, tp, e, V, share;
    int    gpn, full, sel;
} g3_plan_dims_t;

/* One layer, one micro-batch: seconds of its compute (forward + backward), of its recompute,
 * of its TP communication. */
typedef struct {
    double c, rc, tp;
} g3_plan_layer_t;

/* The slowest stage, one micro-batch: seconds of compute (with the exposed fixed costs of its
 * ops), of TP communication, its ops, the exposed part of their fixed costs; and the most
 * parameters a stage holds. */
typedef struct {
    double c, tp, ops, fixed, held;
} g3_plan_worst_t;

/* The ops of the optimizer step: zeroing, the norm (sum of squares, the clipping scale, its
 * download and sync), Adam over the two groups (with and without weight decay), the bf16
 * copy. */
#define G3_PLAN_OPTIM_OPS 8.0

/* One layer, one micro-batch, forward: the four GEMMs of one TP rank, the attention core
 * (4 B T^2 C / t), the memory-bound ops (LayerNorms, residual adds, bias and GELU: about
 * 10 N C + 4 N F / t values read or written, e bytes each); then backward and recompute, and
 * TP's all-reduces.  OUT: *l (not yet shared by --ranks-per-gpu). */
static void g3_plan_time_layer(const g3_plan_input_t *in, const g3_plan_machine_t *mc,
                               const g3_plan_dims_t *d, g3_plan_layer_t *l)
{
    double N = d->N, S = d->S, C = d->C, F = d->F, tp = d->tp, e = d->e;
    double tp_bw = tp <= d->gpn ? mc->intra_bw : mc->inter_bw;
    double tp_lat = tp <= d->gpn ? mc->intra_lat : mc->inter_lat;
    double g = g3_plan_gemm(mc, N, C, 3 * C / tp) + g3_plan_gemm(mc, N, C / tp, C) +
               g3_plan_gemm(mc, N, C, F / tp) + g3_plan_gemm(mc, N, F / tp, C);
    double a = 4.0 * in->micro_batch * S * S * C / tp / (mc->attn_flops / 3.0);
    double mem = (10.0 * N * C + 4.0 * N * F / tp) * e / mc->mem_bw;

    /* backward: twice the GEMMs and the attention, twice the memory traffic; recompute:
     * full runs the forward again, selective the attention core (the CPU's; CUDA's fused
     * attention recomputes inside its backward anyway, which its rate includes) */
    l->c = 3.0 * g + a + 3.0 * mem;
    l->rc = 0;
    if (d->full)   /* each layer but a pass's last (its set is still there) */
        l->rc = g + a / 3.0 + mem;
    else if (d->sel && !in->bf16)
        l->c += a / 3.0;
    /* TP: two all-reduces of N C forward, two backward, two more with full recompute
     * (sequence parallelism: reduce-scatter + all-gather, the same bytes) */
    l->tp = (4.0 + (d->full ? 2.0 : 0.0)) * g3_plan_allreduce(N * C * e, (int)tp, tp_bw, tp_lat);
}

/* Each stage's micro-batch: its layers, its head, the exposed fixed costs of its ops.  l and
 * head_c: one layer's and the output layer's seconds.  OUT: *w, the slowest stage. */
static void g3_plan_time_stages(const g3_plan_input_t *in, const g3_plan_t *p,
                                const g3_plan_machine_t *mc, const g3_plan_ops_t *ops,
                                const g3_plan_dims_t *d, const g3_plan_layer_t *l, double head_c,
                                g3_plan_worst_t *w)
{
    const g3_gpt_config_t *m = &in->model;
    double V = d->V, tp = d->tp, worst = 0;

    memset(w, 0, sizeof(*w));
    for (int s = 0; s < p->pp; s++) {
        const g3_plan_stage_t *st = &p->stages[s];
        double nl = st->layer_end - st->layer_begin;
        /* V chunks: each a pass of its own (its syncs; its last layer not recomputed) */
        double rc = nl - V > 0 ? nl - V : 0.0;
        double c = nl * l->c + rc * l->rc + (st->has_head ? head_c : 0.0);
        double tpc = nl * l->tp, fx;
        double n = V * ops->stage + (nl - V) * ops->layer + (st->has_embedding ? ops->emb : 0.0);
        if (st->has_head)
            n += ops->head + ops->head_chunk * g3_gpt_head_chunks(&in->model, p->padded_vocab /
                                                                  (int)tp, (int)in->micro_batch,
                                                                  m->seq_length);
        fx = g3_plan_exposed(n * mc->op_seconds * d->share, c);
        c += fx;
        if (c + tpc > worst) {
            worst = c + tpc;
            w->c = c;
            w->tp = tpc;
            w->ops = n;
            w->fixed = fx;
        }
        if ((double)st->params_held > w->held)
            w->held = (double)st->params_held;
    }
}

/* Pipeline: each micro-batch's activation forward and its gradient back, V times with the
 * interleaved schedule; over InfiniBand when a stage boundary leaves the node.  RET: seconds
 * per micro-batch. */
static double g3_plan_time_p2p(const g3_plan_input_t *in, const g3_plan_machine_t *mc,
                               const g3_plan_dims_t *d)
{
    int PP = in->model.pp_size;
    double N = d->N, C = d->C, e = d->e, tp = d->tp, V = d->V;
    int stages_per_node = d->gpn / (int)tp > 0 ? d->gpn / (int)tp : 1;
    double p2p_bw = PP > stages_per_node ? mc->inter_bw : mc->intra_bw;
    double p2p_lat = PP > stages_per_node ? mc->inter_lat : mc->intra_lat;

    return PP > 1 ? 2.0 * V * (N * C * e / (in->sequence_parallel ? tp : 1.0) / p2p_bw + p2p_lat)
                  : 0.0;
}

/* Data parallelism: the gradients of the largest stage (held parameters, fp32 or bf16), a
 * ring over the DP ranks, which leave the node once TP x PP fills it; ZeRO-1: reduce-scatter +
 * the all-gather of the updated parameters (the same bytes as the all-reduce).  worst_c: the
 * slowest stage's compute per micro-batch.  RET: the seconds not overlapped. */
static double g3_plan_time_dp(const g3_plan_input_t *in, const g3_plan_machine_t *mc,
                              const g3_plan_time_opts_t *o, const g3_plan_dims_t *d, double held,
                              double worst_c)
{
    int PP = in->model.pp_size;
    double tp = d->tp;
    double dp_bw = (int)tp * PP >= d->gpn ? mc->inter_bw : mc->intra_bw;
    double dp_lat = (int)tp * PP >= d->gpn ? mc->inter_lat : mc->intra_lat;
    double grad = held * (o && o->grad_reduce_bf16 ? 2.0 : 4.0);
    double dpt = g3_plan_allreduce(grad, in->dp, dp_bw, dp_lat);
    double exposed = dpt;

    if (o && o->overlap_grad_reduce)   /* hidden behind the last micro-batch's backward */
        exposed = dpt - (2.0 / 3.0) * worst_c > 0 ? dpt - (2.0 / 3.0) * worst_c : 0.0;
    return exposed;
}

/* Adam: read w, g, m, v, write w, m, v (28 bytes per parameter), over 1/DP of the parameters
 * with ZeRO-1; the gradient norm reads g (4), zeroing the gradients writes it (4), the bf16
 * copy on CUDA reads w and writes 2 bytes (6); and the fixed costs of its ops
 * (G3_PLAN_OPTIM_OPS) that its work does not hide.  OUT: *opt_fixed, those.  RET: seconds,
 * them included. */
static double g3_plan_time_optim(const g3_plan_input_t *in, const g3_plan_machine_t *mc,
                                 const g3_plan_dims_t *d, double held, double *opt_fixed)
{
    double opt = held * (in->bf16 ? 28.0 + 6.0 : 28.0) / mc->mem_bw;

    if (in->distributed_optimizer)
        opt /= in->dp;
    opt += held * 8.0 / mc->mem_bw;
    opt *= d->share;
    *opt_fixed = g3_plan_exposed(G3_PLAN_OPTIM_OPS * mc->op_seconds * d->share, opt);
    return opt + *opt_fixed;
}

/* From t's parts: the iteration's seconds, tokens/s, model and hardware TFLOP/s per rank. */
static void g3_plan_time_rates(const g3_plan_input_t *in, const g3_plan_t *p,
                               const g3_plan_dims_t *d, g3_plan_time_t *t)
{
    double S = d->S, C = d->C, head_flops, hw;

    for (int k = 0; k < G3_PLAN_T_PARTS; k++)
        t->seconds += t->part[k];
    t->tokens_per_s = (double)in->global_batch * S / t->seconds;
    t->model_tflops_gpu = p->flops_iter / t->seconds / p->world / 1e12;
    /* Megatron's (and MT-NLG's) hardware FLOPs count the recomputed forward: 4/3 of the layers'
     * FLOPs with full recompute (96 instead of 72 B s l h^2) */
    head_flops = 6.0 * (double)in->global_batch * S * C * p->padded_vocab;
    hw = p->flops_iter + (d->full ? (p->flops_iter - head_flops) / 3.0 : 0.0);
    t->hw_tflops_gpu = hw / t->seconds / p->world / 1e12;
}

g3_status_t g3_plan_time(const g3_plan_input_t *in, const g3_plan_t *p,
                         const g3_plan_machine_t *mc, const g3_plan_time_opts_t *o,
                         g3_plan_time_t *t)
{
    const g3_gpt_config_t *m = &in->model;
    double mm = (double)p->micro_per_iter, head_c, p2p, opt_fixed;
    int PP = m->pp_size;
    g3_plan_dims_t d;
    g3_plan_layer_t l;
    g3_plan_worst_t w;
    g3_plan_ops_t ops;

    memset(t, 0, sizeof(*t));
    if ((unsigned)mc->gemm_prec >= G3_PLAN_PRECS || mc->gemm[mc->gemm_prec].n < 1 ||
        mc->attn_flops <= 0 || mc->mem_bw <= 0 || mc->intra_bw <= 0 ||
        mc->inter_bw <= 0) {
        g3_error("the machine %s lacks a rate; write its calibration again", mc->name);
        return G3_ERR_INVALID_ARG;
    }
    d.N = (double)in->micro_batch * m->seq_length;
    d.S = m->seq_length;
    d.C = m->hidden_size;
    d.F = p->ffn;
    d.tp = m->tp_size;
    d.e = in->bf16 ? 2.0 : 4.0;
    d.V = in->virtual_pp > 1 ? in->virtual_pp : 1;
    d.gpn = o && o->ranks_per_node > 0 ? o->ranks_per_node
            : mc->gpus_per_node > 0    ? mc->gpus_per_node
                                       : 1;
    d.share = in->ranks_per_gpu > 1 ? in->ranks_per_gpu : 1;   /* ranks on one GPU */
    d.full = p->recompute == G3_PLAN_ACT_FULL;
    d.sel = p->recompute == G3_PLAN_ACT_SELECTIVE;
    /* the ops of the passes, counted on the model itself (plan/count.h): each pays the
     * machine's fixed cost per op, on top of its work */
    memset(&ops, 0, sizeof(ops));
    if (mc->op_seconds > 0 &&
        g3_plan_count_ops(&in->model, in->kind, &in->be_opts, &ops) != G3_OK)
        return G3_ERR_INVALID_ARG;
    g3_plan_time_layer(in, mc, &d, &l);
    /* the output layer (last stage): 3 GEMMs of N x C x Vp/t, the logits' softmax traffic */
    head_c = 3.0 * g3_plan_gemm(mc, d.N, d.C, p->padded_vocab / d.tp) +
             4.0 * d.N * p->padded_vocab / d.tp * d.e / mc->mem_bw;
    /* --ranks-per-gpu R: R ranks take turns on one GPU's compute and memory bandwidth */
    l.c *= d.share;
    l.rc *= d.share;
    head_c *= d.share;
    g3_plan_time_stages(in, p, mc, &ops, &d, &l, head_c, &w);
    p2p = g3_plan_time_p2p(in, mc, &d);
    t->micro_seconds = w.c + w.tp + p2p;
    t->part[G3_PLAN_T_COMPUTE] = mm * w.c;
    t->part[G3_PLAN_T_TP] = mm * w.tp;
    t->part[G3_PLAN_T_P2P] = mm * p2p;
    t->part[G3_PLAN_T_BUBBLE] = PP > 1 ? (PP - 1) / d.V * t->micro_seconds : 0.0;
    t->part[G3_PLAN_T_DP] = g3_plan_time_dp(in, mc, o, &d, w.held, w.c);
    t->part[G3_PLAN_T_OPTIM] = g3_plan_time_optim(in, mc, &d, w.held, &opt_fixed);
    t->ops_iter = mm * w.ops + (mc->op_seconds > 0 ? G3_PLAN_OPTIM_OPS : 0.0);
    t->fixed_seconds = t->ops_iter * mc->op_seconds * d.share;
    t->exposed_seconds = mm * w.fixed + opt_fixed;
    g3_plan_time_rates(in, p, &d, t);
    return G3_OK;
}
