/* gpt3d plan: the arithmetic of a layout (see plan.h; docs/plan.md has the formulas and their
 * sources).  Glossary in plan.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "core/param.h"
#include "plan/plan.h"

/* The flat parameter buffers keep every tensor 16-element (64-byte) aligned (model/gpt.c). */
static int64_t g3_plan_align(int64_t n)
{
    return (n + 15) & ~(int64_t)15;
}

int g3_plan_act_mode(const g3_gpt_config_t *m)
{
    return (m->recompute_activations || m->recompute_granularity == G3_GPT_RECOMPUTE_FULL)
               ? G3_PLAN_ACT_FULL
           : m->recompute_granularity == G3_GPT_RECOMPUTE_SELECTIVE ? G3_PLAN_ACT_SELECTIVE
                                                                    : G3_PLAN_ACT_NONE;
}

const char *g3_plan_act_mode_name(int mode)
{
    return mode == G3_PLAN_ACT_FULL ? "full" : mode == G3_PLAN_ACT_SELECTIVE ? "selective"
                                                                            : "none";
}

const char *g3_plan_act_mode_words(int mode)
{
    return mode == G3_PLAN_ACT_FULL ? "full (each layer's input kept, the layer recomputed)"
           : mode == G3_PLAN_ACT_SELECTIVE ? "selective (the attention core recomputed)"
                                           : "none";
}

/* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
 * section 4, tensor parallelism without sequence parallelism, for 16-bit activations and
 * 1-byte dropout masks, per layer and micro-batch of s x b tokens:
 *   replicated over TP: the two LayerNorm inputs 4sbh, the QKV and fc1 inputs 4sbh, the two
 *                       dropout masks after the residual branches 2sbh          = 10 sbh
 *   split over TP:      Q, K 4sbh, V 2sbh, the projection input 2sbh,
 *                       the GELU and fc2 inputs 2 x 2sbF (= 16sbh for F = 4h)    = (8h + 4F) sb / t
 *   attention core:     softmax output 2as^2b, its dropout mask as^2b, the dropout
 *                       output 2as^2b                                            = 5 a s^2 b / t
 * which is s b h (10 + 24/t + 5 a s / (h t)) for F = 4h, and s b h (34 + 5 a s / h) at t = 1.
 * Selective recompute drops the attention core; full recompute keeps the layer input, 2 sbh.
 * In fp32 (the CPU backend) every 2-byte value takes 4 bytes, the masks stay 1 byte:
 *   18 sbh + (16h + 8F) sb / t + 9 a s^2 b / t; full: 4 sbh. */
static double g3_plan_act_layer(const g3_plan_input_t *in, int mode)
{
    const g3_gpt_config_t *m = &in->model;
    double s = m->seq_length, b = (double)in->micro_batch, h = m->hidden_size;
    double a = m->num_attention_heads, t = m->tp_size;
    double F = g3_gpt_config_ffn(m);
    double w = in->bf16 ? 2.0 : 4.0;   /* bytes of one activation value */
    /* sequence parallelism splits the replicated part over TP as well (section 4.2.2) */
    double repl = (4.0 * w + 2.0) * s * b * h / (in->sequence_parallel ? t : 1.0);
    double split = w * (4.0 * h + 2.0 * F) * s * b / t;
    double core = (2.0 * w + 1.0) * a * s * s * b / t;

    if (mode == G3_PLAN_ACT_FULL)
        return w * s * b * h / (in->sequence_parallel ? t : 1.0);
    if (mode == G3_PLAN_ACT_SELECTIVE)
        return repl + split;
    return repl + split + core;
}

/* ---- what gpt3d's backends keep: the model's own layout ------------------------------------ */

void g3_plan_input_backend(g3_plan_input_t *in, g3_be_kind_t kind, const g3_be_opts_t *o)
{
    const g3_be_kind_info_t *row = g3_be_kind(kind);

    in->kind = kind;
    if (o)
        in->be_opts = *o;
    else
        g3_be_opts_default(&in->be_opts);
    in->bf16 = row && row->act_dtype == G3_BE_BF16;
}

/* RET: the bytes of one micro-batch's activations stage `stage` allocates: the model's own
 * layout (g3_gpt_acts_estimate, the code gpt3d train allocates with) on a backend of
 * in->kind described from its row (g3_be_describe: its attention sizes, its capabilities),
 * with sequence parallelism's TP-split of the layer-boundary tensors.
 * -1 when the count itself fails (out of memory for the layout of a huge stage). */
static double g3_plan_act_set(const g3_plan_input_t *in, int stage)
{
    g3_backend_t be;
    g3_gpt_t sh;   /* the sizes g3_gpt_init derives; no parameters */
    const g3_gpt_config_t *m = &in->model;
    double bytes;
    size_t est;

    /* the backend's row: its attention state and scratch, whether the vocabulary-parallel
     * cross-entropy keeps its statistics in its memory.  --attention-backend auto: what the
     * trainer of this build runs, cuDNN's fused attention where it is built in (its backward
     * keeps an fp32 dQ accumulator in the attention scratch; on a shape cuDNN cannot run the
     * native kernels need less), else the native kernels */
    {
        g3_be_opts_t o = in->be_opts;
#ifdef HAVE_CUDNN
        if (o.attention == G3_BE_ATT_AUTO && !(g3_be_kind(in->kind)->caps & G3_BE_CAP_HOST_MEMORY))
            o.attention = G3_BE_ATT_CUDNN;
#endif
        g3_be_describe(in->kind, &o, &be);
    }
    memset(&sh, 0, sizeof(sh));
    sh.cfg = *m;
    sh.cfg.pp_rank = stage;
    sh.cfg.tp_rank = 0;
    sh.be = &be;
    sh.C = m->hidden_size;
    sh.F = g3_gpt_config_ffn(m);
    sh.NH = m->num_attention_heads;
    sh.HS = sh.C / sh.NH;
    sh.P = g3_gpt_config_positions(m);
    sh.Vp = g3_gpt_padded_vocab(m->vocab_size, m->make_vocab_size_divisible_by, m->tp_size);
    sh.C_l = sh.C / m->tp_size;
    sh.F_l = sh.F / m->tp_size;
    sh.NH_l = sh.NH / m->tp_size;
    sh.Vp_l = sh.Vp / m->tp_size;
    g3_gpt_stage_layers(m, stage, &sh.layer_begin, &sh.layer_end);
    /* the whole stage as one chunk: under V > 1 the caller scales the set by chunks / V */
    sh.nchunks = 1;
    sh.chunk_nl = sh.layer_end - sh.layer_begin;
    sh.has_embedding = stage == 0;
    sh.has_head = stage == m->pp_size - 1;
    sh.cfg.ffn_hidden_size = sh.F;
    sh.cfg.max_position_embeddings = sh.P;
    sh.esize = g3_be_dtype_size(be.act_dtype);
    {
        /* the model counts tokens B x T in an int: past 2^30 tokens, count a micro-batch that
         * fits and scale (the activations grow linearly with B) */
        int64_t B = in->micro_batch, Bc = B;
        if ((double)B * m->seq_length > (double)(1 << 30))
            Bc = (int64_t)((1 << 30) / m->seq_length) > 0 ? (1 << 30) / m->seq_length : 1;
        est = g3_gpt_acts_estimate(&sh, (int)Bc, m->seq_length);
        bytes = est == (size_t)-1 ? -1.0 : (double)est * ((double)B / (double)Bc);
    }
    /* sequence parallelism (Korthikanti et al. 2022, 4.2.2): the model carves the split
     * tensors itself (g3_gpt_acts_layout: the residual stream, the LayerNorm inputs, outputs
     * and statistics by ceil(N / TP) rows, plus the gather buffer), so the estimate holds it */
    return bytes;
}

/* RET: 1 when the CUDA backend of this input tunes its GEMMs (gemm_autotune option, else
 * GPT3D_GEMM_AUTOTUNE; on for one process, never with --deterministic), as g3_be_cuda_open
 * decides; 0 otherwise. */
static int g3_plan_gemm_autotune(const g3_plan_input_t *in)
{
    const g3_be_opts_t *o = &in->be_opts;
    int64_t world = (int64_t)in->model.tp_size * in->model.pp_size * in->dp;
    int tune = o->gemm_autotune >= 0 ? o->gemm_autotune : g3_param_gemm_autotune();

    if (g3_be_kind(in->kind)->caps & G3_BE_CAP_HOST_MEMORY)
        return 0;
    /* g3_be_cuda_open: on unless turned off, for one process, never deterministic */
    return tune != 0 && world == 1 && in->ranks_per_gpu <= 1 && !o->deterministic;
}

/* The GEMM autotuning's scratch: the first call of each shape times the candidates on the
 * call's own operands, and an fp32 output accumulated into (beta 1: the weight gradients) is
 * saved first into the kernels' scratch; how much that takes is the backend kind's to say
 * (gemm_tune_scratch_bytes: kernels/gemm.cu g3_gemm_tune, kernels/ctx.cu g3cuda_scratch).
 * The such outputs of one process (TP 1): the word embedding's gradient (Vp x C, the output
 * layer's dW), an MLP weight's (F x C), QKV's (3C x C). */
static double g3_plan_tune_scratch(const g3_plan_input_t *in)
{
    const g3_gpt_config_t *m = &in->model;
    const g3_be_kind_info_t *kind = g3_be_kind(in->kind);
    double C = m->hidden_size, F = g3_gpt_config_ffn(m);
    double Vp = g3_gpt_padded_vocab(m->vocab_size, m->make_vocab_size_divisible_by, 1);
    double out[3] = { 4.0 * Vp * C, 4.0 * F * C, 4.0 * 3.0 * C * C };

    if (!kind->gemm_tune_scratch_bytes || !g3_plan_gemm_autotune(in))
        return 0.0;
    return (double)kind->gemm_tune_scratch_bytes(out, 3);
}

/* CUDA (docs/plan.md "Overhead"): in->fixed_bytes, the GPU's own fixed cost (gpt3d plan
 * --gpu's table, or what --calibrate measured on it; else the H100's): the context with
 * cuBLASLt loaded, its 32 MiB workspace (kernels/ctx.cu), the kernels loaded.  NCCL: every
 * rank of gpt3d train --device cuda (one alone too: the 1 x 1 x 1 layout) makes four
 * communicators, tp, pp, dp and emb, whatever their sizes (g3_par_set_backend), which hold
 * in->nccl_bytes of the GPU (the table's or the calibration's; else the H100's); none with
 * --distributed-backend ucx; plus their buffers in each group of more than one rank
 * (NCCL_BUFFSIZE 4 MiB x 2 directions x up to 8 channels: 64 MiB per group, NCCL's
 * documented default, not measured).  The GEMM autotuning's scratch of one process.  CPU: the
 * process, its libraries, OpenBLAS's buffers, the batch and sample index: 20 MiB (what the
 * peak RSS of one-rank runs shows beyond the tensors: 14-20 MiB; tests/cli/test_plan.sh). */
double g3_plan_overhead(const g3_plan_input_t *in, g3_plan_overhead_t *parts)
{
    const g3_gpt_config_t *m = &in->model;
    double mib = 1048576.0;
    int groups = (m->tp_size > 1) + (m->pp_size > 1) + (in->dp > 1);
    g3_plan_overhead_t o;

    memset(&o, 0, sizeof(o));
    if (g3_be_kind(in->kind)->caps & G3_BE_CAP_HOST_MEMORY) {
        o.fixed = 20.0 * mib;
    } else {
        o.fixed = in->fixed_bytes > 0 ? in->fixed_bytes : G3_PLAN_FIXED_MIB * mib;
        if (!in->dist_ucx) {
            o.nccl = in->nccl_bytes > 0 ? in->nccl_bytes : G3_PLAN_NCCL_MIB * mib;
            o.nccl_groups = 64.0 * mib * groups;
        }
        o.scratch = g3_plan_tune_scratch(in);
    }
    o.total = o.fixed + o.nccl + o.nccl_groups + o.scratch;
    if (parts)
        *parts = o;
    return o.total;
}

/* One TP rank's parameters of a stage: exact (*exact) and as its flat buffer holds them. */
static void g3_plan_stage_params(const g3_plan_input_t *in, int C, int F, int P, int Vp,
                                 g3_plan_stage_t *st)
{
    int64_t t = in->model.tp_size, c = C, f = F, nl = st->layer_end - st->layer_begin;
    /* the twelve tensors of a layer, local sizes: LN weights and biases, qkv weight and bias,
     * dense weight and bias, fc1 weight and bias, fc2 weight and bias (model/gpt.c) */
    int64_t sizes[12] = { c, c, 3 * c * c / t, 3 * c / t, c * c / t, c,
                          c, c, f * c / t, f / t, c * f / t, c };
    int64_t exact = 0, held = 0;

    for (int i = 0; i < 12; i++) {
        exact += sizes[i];
        held += g3_plan_align(sizes[i]);
    }
    exact *= nl;
    held *= nl;
    if (st->has_embedding || st->has_head) {   /* the word embedding, rows split over TP */
        exact += (int64_t)Vp / t * c;
        held += g3_plan_align((int64_t)Vp / t * c);
    }
    if (st->has_embedding) {                   /* positions, replicated over TP */
        exact += (int64_t)P * c;
        held += g3_plan_align((int64_t)P * c);
    }
    if (st->has_head) {                        /* the final LayerNorm */
        exact += 2 * c;
        held += 2 * g3_plan_align(c);
    }
    st->params = exact;
    st->params_held = held;
}

/* Stage i of p's plan of in: its layers, parameters and the bytes of its state, activations
 * and overhead (p's model-wide fields set).  OUT: *st.  RET: G3_ERR_NO_MEMORY (logged) when
 * its activations cannot be counted. */
static g3_status_t g3_plan_stage_fill(const g3_plan_input_t *in, const g3_plan_t *p, int i,
                                      g3_plan_stage_t *st)
{
    const g3_gpt_config_t *m = &in->model;
    int PP = m->pp_size, dp = in->dp;
    double held, kept, full_layer, w = in->bf16 ? 2.0 : 4.0;
    int nl;

    st->stage = i;
    g3_gpt_stage_layers(m, i, &st->layer_begin, &st->layer_end);
    st->has_embedding = i == 0;
    st->has_head = i == PP - 1;
    g3_plan_stage_params(in, m->hidden_size, p->ffn, p->positions, p->padded_vocab, st);
    held = (double)st->params_held;
    st->weight_bytes = w * held;
    st->grad_bytes = 4.0 * held;
    st->master_bytes[0] = in->bf16 ? 4.0 * held : 0.0;
    st->master_bytes[1] = st->master_bytes[0];
    st->optim_bytes[0] = 8.0 * held;
    st->optim_bytes[1] = 12.0 * held / dp;
    for (int z = 0; z < 2; z++)
        st->state_bytes[z] = st->weight_bytes + st->grad_bytes + st->master_bytes[z] +
                             st->optim_bytes[z];

    /* 1F1B: stage i runs PP - i warm-up forwards before its first backward, and keeps
     * as many activation sets (g3_par_engine_init: min(PP - i, m)).  Interleaved
     * (Megatron's schedule, V chunks of L / (PP V) layers): 2 (PP - i - 1) + (V - 1) PP
     * warm-up chunks plus the one in its steady state, in units of one chunk. */
    nl = st->layer_end - st->layer_begin;
    st->in_flight = PP - i < p->micro_per_iter ? PP - i : (int)p->micro_per_iter;
    kept = p->act_per_layer[p->recompute];
    full_layer = p->act_per_layer[G3_PLAN_ACT_NONE];
    st->act_layer_bytes = kept;
    st->act_recompute_bytes = nl > 0 ? full_layer - kept : 0.0;
    st->act_extra_bytes = 0.0;
    st->act_set_bytes = g3_plan_act_set(in, i);
    if (st->act_set_bytes < 0.0) {   /* its count failed: never shown as 0 bytes */
        g3_error("gpt3d plan: out of memory counting the activations of stage %d (%d layers): the model is too large to plan on this machine",
                 i, st->layer_end - st->layer_begin);
        return G3_ERR_NO_MEMORY;
    }
    st->act_bytes = st->in_flight * st->act_set_bytes;
    if (in->virtual_pp > 1 && PP > 1) {
        double V = in->virtual_pp, chunks = 2.0 * (PP - i - 1) + (V - 1) * PP + 1;
        double total = V * (double)p->micro_per_iter;
        if (chunks > total)
            chunks = total;
        st->act_bytes = st->act_set_bytes * chunks / V;
    }
    st->overhead_bytes = g3_plan_overhead(in, NULL);
    st->peak_bytes = st->state_bytes[in->distributed_optimizer ? 1 : 0] + st->act_bytes +
                     st->overhead_bytes;
    st->gpu_bytes = st->peak_bytes * (in->ranks_per_gpu > 1 ? in->ranks_per_gpu : 1);
    return G3_OK;
}

g3_status_t g3_plan_compute(const g3_plan_input_t *in, g3_plan_t *plan)
{
    const g3_gpt_config_t *m = &in->model;
    int PP = m->pp_size, dp = in->dp;
    double C = m->hidden_size, L = m->num_layers;
    double rough;
    g3_plan_t p;

    memset(&p, 0, sizeof(p));
    p.ffn = g3_gpt_config_ffn(m);
    p.positions = g3_gpt_config_positions(m);
    p.padded_vocab = g3_gpt_padded_vocab(m->vocab_size, m->make_vocab_size_divisible_by,
                                         m->tp_size);
    /* the exact counts are int64: refuse sizes whose count could overflow them */
    rough = L * (4.0 * C * C + 2.0 * C * p.ffn + 9.0 * C + p.ffn) +
            ((double)p.padded_vocab + p.positions) * C + 2.0 * C;
    if (rough > 1e17) {
        g3_error("this model would have about %.3g parameters, beyond what gpt3d plan counts (1e17); check --num-layers, --hidden-size and --ffn-hidden-size", rough);
        return G3_ERR_INVALID_ARG;
    }
    p.params_total = g3_gpt_num_parameters(m);
    p.pp = PP;
    p.world = m->tp_size * PP * dp;
    p.micro_per_iter = in->global_batch / (in->micro_batch * dp);
    p.micro_first = in->start_batch / (in->micro_batch * dp);
    p.recompute = g3_plan_act_mode(m);
    {
        double V = in->virtual_pp > 1 ? in->virtual_pp : 1, mm = (double)p.micro_per_iter;
        p.bubble = PP > 1 ? (double)(PP - 1) / (V * mm + PP - 1) : 0.0;
        p.bubble_vs_compute = PP > 1 ? (double)(PP - 1) / (V * mm) : 0.0;
    }
    p.flops_iter = g3_gpt_flops_per_step(m, in->global_batch, m->seq_length);
    p.flops_token = p.flops_iter / ((double)in->global_batch * m->seq_length);
    for (int k = 0; k < G3_PLAN_ACT_MODES; k++)
        p.act_per_layer[k] = g3_plan_act_layer(in, k);
    /* model state per parameter held, as g3_par_engine_memory counts it: the fp32 master
     * weights (the passes' copy too on the CPU), the bf16 working copy (CUDA), fp32 gradients,
     * Adam m and v; ZeRO-1 shards Adam over DP and keeps the reduced-gradient shard beside it:
     * 8 + 12/DP (+ 2 for the working copy) */
    p.bytes_per_param[0] = (in->bf16 ? 2.0 : 0.0) + 4.0 + 4.0 + 8.0;
    p.bytes_per_param[1] = (in->bf16 ? 2.0 : 0.0) + 4.0 + 4.0 + 12.0 / dp;

    p.stages = calloc((size_t)PP, sizeof(*p.stages));
    if (!p.stages) {
        g3_error("gpt3d plan: out of memory for %d pipeline stages", PP);
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < PP; i++) {
        g3_plan_stage_t *st = &p.stages[i];
        if (g3_plan_stage_fill(in, &p, i, st) != G3_OK) {
            free(p.stages);
            return G3_ERR_NO_MEMORY;
        }
        p.params_replica += st->params * m->tp_size;
        if (st->peak_bytes > p.stages[p.peak_stage].peak_bytes)
            p.peak_stage = i;
    }
    *plan = p;
    return G3_OK;
}

void g3_plan_free(g3_plan_t *plan)
{
    free(plan->stages);
    plan->stages = NULL;
}

/* RET: bytes this process may still use: MemAvailable, lowered to the cgroup's limit (v2
 * memory.max less memory.current; v1 limit_in_bytes less usage_in_bytes); 0 when unknown. */
static double g3_plan_host_available(void)
{
    static const char *lim[2][2] = {
        { "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current" },
        { "/sys/fs/cgroup/memory/memory.limit_in_bytes",
          "/sys/fs/cgroup/memory/memory.usage_in_bytes" },
    };
    double avail = 0.0;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");

    if (f) {
        unsigned long long kb;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (double)kb * 1024.0;
                break;
            }
        fclose(f);
    }
    for (int k = 0; k < 2; k++) {
        unsigned long long max = 0, cur = 0;
        FILE *a = fopen(lim[k][0], "r"), *b = fopen(lim[k][1], "r");
        int ok = a && b && fscanf(a, "%llu", &max) == 1 && fscanf(b, "%llu", &cur) == 1;
        if (a)
            fclose(a);
        if (b)
            fclose(b);
        /* "max" (no limit) does not scan; v1's "no limit" is a huge number */
        if (ok && max > cur && max < (1ULL << 60)) {
            double left = (double)(max - cur);
            if (avail <= 0.0 || left < avail)
                avail = left;
            break;
        }
    }
    return avail;
}

g3_status_t g3_plan_check_fit(const g3_gpt_config_t *m, g3_be_kind_t kind,
                              const g3_be_opts_t *o, int dp, int64_t micro_batch,
                              int64_t global_batch, int zero, int local_ranks)
{
    g3_plan_input_t in;
    g3_plan_t p;
    double need, avail, gib = 1073741824.0;
    g3_status_t rc;
    int stage;

    memset(&in, 0, sizeof(in));
    in.model = *m;
    in.dp = dp > 0 ? dp : 1;
    in.micro_batch = micro_batch;
    in.global_batch = global_batch;
    in.start_batch = global_batch;
    in.distributed_optimizer = zero;
    g3_plan_input_backend(&in, kind, o);
    in.virtual_pp = 1;
    in.ranks_per_gpu = 1;
    /* a device's memory: the backend refuses what it cannot allocate */
    if (!(g3_be_kind(kind)->caps & G3_BE_CAP_HOST_MEMORY))
        return G3_OK;
    rc = g3_plan_compute(&in, &p);
    if (rc != G3_OK)
        return rc;   /* logged: a model beyond any memory, or no memory for the plan */
    stage = m->pp_rank >= 0 && m->pp_rank < p.pp ? m->pp_rank : 0;
    need = p.stages[stage].peak_bytes;
    g3_plan_free(&p);
    avail = g3_plan_host_available();
    if (avail <= 0.0)
        return G3_OK;
    avail /= local_ranks > 1 ? local_ranks : 1;
    if (need <= avail)
        return G3_OK;
    g3_error("this run needs %.2f GiB per rank (gpt3d plan's estimate for stage %d: model state, activations of --micro-batch-size %lld x --seq-length %d, the process) but only %.2f GiB is available%s: lower --micro-batch-size or --seq-length, add --recompute-granularity full, or spread the model over more ranks (gpt3d plan --search lists what fits)", need / gib, stage, (long long)micro_batch,
             m->seq_length, avail / gib,
             local_ranks > 1 ? " (the node's memory shared by its ranks)" : "");
    return G3_ERR_INVALID_ARG;   /* flags that cannot run here: a usage error (exit 2) */
}
