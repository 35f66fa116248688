/* gpt3d plan: the arithmetic of a layout (see plan.h; docs/plan.md has the formulas and their
 * sources).  Glossary in plan.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
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
double g3_plan_act_layer(const g3_plan_input_t *in, int mode)
{
    const g3_gpt_config_t *m = &in->model;
    double s = m->seq_length, b = (double)in->micro_batch, h = m->hidden_size;
    double a = m->num_attention_heads, t = m->tp_size;
    double F = g3_gpt_config_ffn(m);
    double w = in->bf16 ? 2.0 : 4.0;   /* bytes of one activation value */
    double repl = (4.0 * w + 2.0) * s * b * h;
    double split = w * (4.0 * h + 2.0 * F) * s * b / t;
    double core = (2.0 * w + 1.0) * a * s * s * b / t;

    if (mode == G3_PLAN_ACT_FULL)
        return w * s * b * h;
    if (mode == G3_PLAN_ACT_SELECTIVE)
        return repl + split;
    return repl + split + core;
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

g3_status_t g3_plan_compute(const g3_plan_input_t *in, g3_plan_t *plan)
{
    const g3_gpt_config_t *m = &in->model;
    int PP = m->pp_size, dp = in->dp;
    double C = m->hidden_size, L = m->num_layers, s = m->seq_length, b = (double)in->micro_batch;
    double rough, w = in->bf16 ? 2.0 : 4.0;
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
        g3_error("this model would have about %.3g parameters, beyond what gpt3d plan counts "
                 "(1e17); check --num-layers, --hidden-size and --ffn-hidden-size", rough);
        return G3_ERR_INVALID_ARG;
    }
    p.params_total = g3_gpt_num_parameters(m);
    p.pp = PP;
    p.world = m->tp_size * PP * dp;
    p.micro_per_iter = in->global_batch / (in->micro_batch * dp);
    p.micro_first = in->start_batch / (in->micro_batch * dp);
    p.recompute = g3_plan_act_mode(m);
    p.bubble = PP > 1 ? (double)(PP - 1) / (double)(p.micro_per_iter + PP - 1) : 0.0;
    p.bubble_vs_compute = PP > 1 ? (double)(PP - 1) / (double)p.micro_per_iter : 0.0;
    p.flops_iter = g3_gpt_flops_per_step(m, in->global_batch, m->seq_length);
    p.flops_token = p.flops_iter / ((double)in->global_batch * m->seq_length);
    for (int k = 0; k < G3_PLAN_ACT_MODES; k++)
        p.act_per_layer[k] = g3_plan_act_layer(in, k);
    /* model state per parameter held: weights, fp32 gradients, (bf16) fp32 master, Adam m and
     * v; ZeRO-1 shards the master and Adam over DP, and on the CPU the reduced gradient shard
     * the trainer keeps takes the master's place (docs/parallelism.md) */
    p.bytes_per_param[0] = w + 4.0 + (in->bf16 ? 4.0 : 0.0) + 8.0;
    p.bytes_per_param[1] = w + 4.0 + 12.0 / dp;

    p.stages = calloc((size_t)PP, sizeof(*p.stages));
    if (!p.stages) {
        g3_error("gpt3d plan: out of memory for %d pipeline stages", PP);
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < PP; i++) {
        g3_plan_stage_t *st = &p.stages[i];
        double held, kept, full_layer, nl;

        st->stage = i;
        g3_gpt_stage_layers(m, i, &st->layer_begin, &st->layer_end);
        st->has_embedding = i == 0;
        st->has_head = i == PP - 1;
        g3_plan_stage_params(in, m->hidden_size, p.ffn, p.positions, p.padded_vocab, st);
        p.params_replica += st->params * m->tp_size;
        held = (double)st->params_held;
        st->weight_bytes = w * held;
        st->grad_bytes = 4.0 * held;
        st->master_bytes[0] = in->bf16 ? 4.0 * held : 0.0;
        st->master_bytes[1] = st->master_bytes[0] / dp;
        st->optim_bytes[0] = 8.0 * held;
        st->optim_bytes[1] = (in->bf16 ? 8.0 : 12.0) * held / dp;
        for (int z = 0; z < 2; z++)
            st->state_bytes[z] = st->weight_bytes + st->grad_bytes + st->master_bytes[z] +
                                 st->optim_bytes[z];

        /* 1F1B: stage i runs PP - i warm-up forwards before its first backward */
        st->in_flight = PP - i < p.micro_per_iter ? PP - i : (int)p.micro_per_iter;
        nl = st->layer_end - st->layer_begin;
        kept = p.act_per_layer[p.recompute];
        full_layer = p.act_per_layer[G3_PLAN_ACT_NONE];
        st->act_layer_bytes = kept;
        st->act_recompute_bytes = nl > 0 ? full_layer - kept : 0.0;
        st->act_extra_bytes = 0.0;
        if (st->has_embedding)   /* the embedding output's dropout mask, 1 byte each */
            st->act_extra_bytes += st->in_flight * s * b * C;
        if (st->has_head)        /* final LN and output-layer inputs; fp32 logits split over TP */
            st->act_extra_bytes += 2.0 * w * s * b * C +
                                   4.0 * s * b * (double)p.padded_vocab / m->tp_size;
        st->act_bytes = st->in_flight * nl * kept + st->act_recompute_bytes + st->act_extra_bytes;
        st->peak_bytes = st->state_bytes[in->distributed_optimizer ? 1 : 0] + st->act_bytes;
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
