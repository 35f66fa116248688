/* gpt3d plan: the report of a plan (the tables, --json, the time table, --search's list; see
 * report.h, docs/plan.md).  Glossary in plan.h. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "search/report.h"

double g3_plan_gib(double bytes)
{
    return bytes / (1024.0 * 1024.0 * 1024.0);
}

/* "529,558,241,280" */
static const char *g3_plan_commas(int64_t v, char *buf, size_t len)
{
    char raw[32];
    int n = snprintf(raw, sizeof(raw), "%lld", (long long)v), o = 0;
    for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
        if (i > 0 && raw[i - 1] != '-' && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

/* "529.56B", "124.44M" */
static const char *g3_plan_short(double v, char *buf, size_t len)
{
    if (v >= 1e12)
        snprintf(buf, len, "%.2fT", v / 1e12);
    else if (v >= 1e9)
        snprintf(buf, len, "%.2fB", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.2fM", v / 1e6);
    else
        snprintf(buf, len, "%.0f", v);
    return buf;
}

/* The memory per rank of each stage, as a table, and the peak (and whether it fits). */
static void g3_plan_print_stages(const g3_plan_flags_t *f, const g3_plan_layout_t *lay)
{
    const g3_plan_input_t *in = &lay->in;
    const g3_plan_t *p = &lay->plan;
    int zero = in->distributed_optimizer, nfit = 0;
    char b1[48];

    printf(
        "\nper rank, GiB (optimizer: %s; activations: 1F1B keeps min(PP - stage, m) micro-batches)\n",
        zero ? "ZeRO-1 shard" : "replicated");
    printf("  %5s  %-11s %15s %9s %9s %11s %12s %12s %3s %9s %9s%s\n", "stage", "layers",
           "params/rank", "weights", "grads", "optimizer", zero ? "(replicated)" : "(ZeRO-1)",
           "activations", "mb", "overhead",
           "peak", f->gpu_gib > 0 ? "  fits" : "");
    for (int s = 0; s < p->pp; s++) {
        const g3_plan_stage_t *st = &p->stages[s];
        char layers[32];
        snprintf(layers, sizeof(layers), "[%d,%d)%s%s", st->layer_begin, st->layer_end,
                 st->has_embedding ? "+E" : "", st->has_head ? "+H" : "");
        nfit += g3_plan_stage_fits(f, p, st);
        printf("  %5d  %-11s %15s %9.2f %9.2f %11.2f %12.2f %12.2f %3d %9.2f %9.2f%s\n", s, layers,
               g3_plan_commas(st->params, b1, sizeof(b1)), g3_plan_gib(st->weight_bytes),
               g3_plan_gib(st->grad_bytes),
               g3_plan_gib(st->master_bytes[zero] + st->optim_bytes[zero]),
               g3_plan_gib(st->master_bytes[!zero] + st->optim_bytes[!zero]),
               g3_plan_gib(st->act_bytes), st->in_flight, g3_plan_gib(st->overhead_bytes),
               g3_plan_gib(st->peak_bytes),
               f->gpu_gib > 0 ? (g3_plan_stage_fits(f, p, st) ? "  yes" : "  NO") : "");
    }
    printf(
        "  (+E: embeddings, +H: final LayerNorm and output layer; weights: %s; optimizer: Adam m, v (+ the reduced-gradient shard under ZeRO-1); (%s): the optimizer %s; mb: micro-batches in flight; overhead: %s)\n",
        in->bf16 ? "bf16 working copy + fp32 master" : "fp32", zero ? "replicated" : "ZeRO-1",
        zero ? "without --use-distributed-optimizer" : "with --use-distributed-optimizer",
        in->bf16 ? "CUDA context, cuBLASLt, kernels, NCCL, GEMM autotuning's scratch"
                 : "the process");
    printf("  peak: stage %d, %.2f GiB per rank", p->peak_stage,
           g3_plan_gib(p->stages[p->peak_stage].peak_bytes));
    if (in->ranks_per_gpu > 1)
        printf("; %d ranks share a GPU: %.2f GiB on it", in->ranks_per_gpu,
               g3_plan_gib(p->stages[p->peak_stage].gpu_bytes));
    if (f->gpu_gib > 0)
        printf("; %s in %.4g GiB per GPU (%d of %d stages fit)",
               nfit == p->pp ? "fits" : "does NOT fit", f->gpu_gib, nfit, p->pp);
    printf("\n");
}


void g3_plan_print_human(const g3_plan_flags_t *f, const g3_plan_layout_t *lay)
{
    const g3_plan_input_t *in = &lay->in;
    const g3_gpt_config_t *m = &in->model;
    const g3_plan_t *p = &lay->plan;
    int zero = in->distributed_optimizer;
    char b1[48], b2[48];

    printf(
        "gpt3d plan: GPT %d layers, hidden %d, %d heads, ffn %d, sequence %d, positions %d, vocabulary %d (padded %d: a multiple of %d x TP %d)\n",
        m->num_layers, m->hidden_size, m->num_attention_heads, p->ffn, m->seq_length, p->positions,
        m->vocab_size, p->padded_vocab, m->make_vocab_size_divisible_by, m->tp_size);
    printf(
        "  parameters: %s (%s; the output layer is tied to the word embedding, counted once; gpt3d train reports the same)\n",
        g3_plan_commas(p->params_total, b1, sizeof(b1)),
        g3_plan_short((double)p->params_total, b2, sizeof(b2)));
    if (lay->nodes > 0)
        printf(
            "  layout: TP %d x PP %d x DP %d = %d ranks on %d node%s x %d (tensor-parallel groups inside a node)\n",
            m->tp_size, m->pp_size, in->dp, p->world, lay->nodes, lay->nodes == 1 ? "" : "s",
            lay->rpn);
    else
        printf(
            "  layout: TP %d x PP %d x DP %d = %d rank%s (no --nodes/--gpus-per-node: not checked against nodes)\n",
            m->tp_size, m->pp_size, in->dp, p->world, p->world == 1 ? "" : "s");
    printf(
        "  one replica (TP x PP ranks) holds %s parameters: %s more than the model, the copies of TP-replicated tensors%s\n",
        g3_plan_commas(p->params_replica, b1, sizeof(b1)),
        g3_plan_commas(p->params_replica - p->params_total, b2, sizeof(b2)),
        m->pp_size > 1 ? " and the last stage's word embedding" : "");
    printf(
        "  batches: micro %lld x DP %d x %lld micro-batches (gradient-accumulation steps) = global %lld sequences, %lld tokens per iteration",
        (long long)in->micro_batch, in->dp, (long long)p->micro_per_iter,
        (long long)in->global_batch, (long long)(in->global_batch * m->seq_length));
    if (in->start_batch != in->global_batch)
        printf("; ramp-up from %lld (%lld micro-batches)", (long long)in->start_batch,
               (long long)p->micro_first);
    printf("\n");
    printf(
        "  model FLOPs (docs/model.md, as gpt3d train's MFU): %.4g per iteration, %.4g per token, %.4g per rank per iteration\n",
        p->flops_iter, p->flops_token, p->flops_iter / p->world);
    if (f->length_given) {
        double tokens, flops;
        g3_plan_run_totals(lay, &tokens, &flops);
        printf("  the run: %lld iterations, %.4g tokens, %.4g FLOPs\n",
               (long long)lay->tplan.train_iters, tokens, flops);
    }
    if (m->pp_size > 1 && in->virtual_pp > 1)
        printf(
            "  pipeline bubble (interleaved 1F1B, V %d): (PP - 1) / (V m + PP - 1) = %d / %lld = %.2f%% of an iteration idle; (PP - 1) / (V m) = %.2f%% of the compute time; V x more pipeline transfers\n",
            in->virtual_pp, m->pp_size - 1,
            (long long)(in->virtual_pp * p->micro_per_iter + m->pp_size - 1), 100.0 * p->bubble,
            100.0 * p->bubble_vs_compute);
    else if (m->pp_size > 1)
        printf(
            "  pipeline bubble (1F1B): (PP - 1) / (m + PP - 1) = %d / %lld = %.2f%% of an iteration idle; (PP - 1) / m = %.2f%% of the compute time (what gpt3d train reports)\n",
            m->pp_size - 1, (long long)(p->micro_per_iter + m->pp_size - 1), 100.0 * p->bubble,
            100.0 * p->bubble_vs_compute);
    else
        printf("  pipeline bubble: none (PP 1)\n");
    printf("  device %s: %s; activation recompute: %s\n", g3_be_kind(in->kind)->name,
           in->bf16
               ? "bf16 weights and activations, fp32 gradients, fp32 master weights and Adam state"
               : "fp32 weights (the master copy), activations, gradients and Adam state",
           g3_plan_act_mode_words(p->recompute));
    if (f->gpu[0]) {
        g3_plan_overhead_t oh;
        g3_plan_overhead(in, &oh);
        printf("  GPU: %s; fixed cost per process %.0f MiB (%s); NCCL's 4 communicators %.0f MiB%s, plus 64 MiB per group of more than one rank; GEMM autotuning's scratch %.0f MiB%s\n",
               f->gpu, oh.fixed / 1048576.0, f->gpu_how, oh.nccl / 1048576.0,
               in->dist_ucx ? " (none: --distributed-backend ucx)" : "", oh.scratch / 1048576.0,
               oh.scratch > 0 ? " (one process)" : " (off: several processes, --deterministic or GPT3D_GEMM_AUTOTUNE=0)");
    }
    if (in->bf16 && p->recompute == G3_PLAN_ACT_SELECTIVE)
        printf(
            "  note: selective recompute saves nothing on CUDA: its fused attention never keeps the scores Megatron's selective recompute drops (it keeps the output and the softmax statistics); use --recompute-granularity full to save memory\n");
    if (in->sequence_parallel)
        printf(
            "  sequence parallelism: the LayerNorm and residual tensors split along the sequence over TP %d (reduce-scatter + all-gather instead of all-reduce)\n",
            m->tp_size);
    printf(
        "  model state per parameter held: %.2f B replicated; %.2f B with ZeRO-1 over DP %d (--use-distributed-optimizer%s)\n",
        p->bytes_per_param[0], p->bytes_per_param[1], in->dp, zero ? ", in use" : ", not in use");
    printf(
        "  activations per layer per micro-batch, Megatron's count (Korthikanti et al. 2022, %s sequence parallelism, with dropout): %.3f GiB without recompute, %.3f GiB selective, %.3f GiB full; gpt3d's %s backend keeps %.3f GiB per micro-batch on stage 0 (its own layout, as gpt3d train allocates it)\n",
        in->sequence_parallel ? "with" : "without", g3_plan_gib(p->act_per_layer[G3_PLAN_ACT_NONE]),
        g3_plan_gib(p->act_per_layer[G3_PLAN_ACT_SELECTIVE]),
        g3_plan_gib(p->act_per_layer[G3_PLAN_ACT_FULL]), g3_be_kind(in->kind)->name,
        g3_plan_gib(p->stages[0].act_set_bytes));

    g3_plan_print_stages(f, lay);
}

static void g3_plan_json_stage(const g3_plan_flags_t *f, const g3_plan_t *p,
                                   const g3_plan_stage_t *st)
{
    printf(
        "{\"stage\":%d,\"layer_begin\":%d,\"layer_end\":%d,\"embedding\":%s,\"head\":%s,\"params\":%lld,\"params_held\":%lld,\"in_flight\":%d,\"weight_bytes\":%.17g,\"grad_bytes\":%.17g,\"master_bytes\":%.17g,\"optim_bytes\":%.17g,\"master_bytes_zero1\":%.17g,\"optim_bytes_zero1\":%.17g,\"state_bytes\":%.17g,\"state_bytes_zero1\":%.17g,\"act_layer_bytes\":%.17g,\"act_recompute_bytes\":%.17g,\"act_extra_bytes\":%.17g,\"act_bytes\":%.17g,\"act_set_bytes\":%.17g,\"overhead_bytes\":%.17g,\"peak_bytes\":%.17g,\"gpu_bytes\":%.17g",
        st->stage, st->layer_begin, st->layer_end, st->has_embedding ? "true" : "false",
        st->has_head ? "true" : "false", (long long)st->params, (long long)st->params_held,
        st->in_flight, st->weight_bytes, st->grad_bytes, st->master_bytes[0], st->optim_bytes[0],
        st->master_bytes[1], st->optim_bytes[1], st->state_bytes[0], st->state_bytes[1],
        st->act_layer_bytes, st->act_recompute_bytes, st->act_extra_bytes, st->act_bytes,
        st->act_set_bytes, st->overhead_bytes, st->peak_bytes, st->gpu_bytes);
    if (f->gpu_gib > 0)
        printf(",\"fits\":%s", g3_plan_stage_fits(f, p, st) ? "true" : "false");
    printf("}");
}

/* The time of one layout as JSON members (no braces). */
static void g3_plan_json_time(const g3_plan_time_t *t)
{
    printf("\"ops_per_iteration\":%.9g,\"fixed_seconds\":%.9g,\"exposed_seconds\":%.9g,",
           t->ops_iter, t->fixed_seconds, t->exposed_seconds);
    printf(
        "\"seconds_per_iteration\":%.9g,\"tokens_per_second\":%.9g,\"model_tflops_per_gpu\":%.6g,\"hardware_tflops_per_gpu\":%.6g,\"micro_batch_seconds\":%.9g,\"parts\":{",
        t->seconds, t->tokens_per_s, t->model_tflops_gpu, t->hw_tflops_gpu, t->micro_seconds);
    for (int k = 0; k < G3_PLAN_T_PARTS; k++)
        printf("%s\"%s\":%.9g", k ? "," : "", g3_plan_time_part_name(k), t->part[k]);
    printf("}");
}

void g3_plan_print_json(const g3_plan_flags_t *f, const g3_plan_layout_t *lay,
                                   const g3_plan_machine_t *mc, const g3_plan_time_t *t,
                                   const g3_plan_layout_t *sizes, const g3_plan_time_t *stimes,
                                   int nsizes)
{
    const g3_plan_input_t *in = &lay->in;
    const g3_gpt_config_t *m = &in->model;
    const g3_plan_t *p = &lay->plan;
    int nfit = 0;

    printf(
        "{\"model\":{\"num_layers\":%d,\"hidden_size\":%d,\"num_attention_heads\":%d,\"ffn_hidden_size\":%d,\"seq_length\":%d,\"max_position_embeddings\":%d,\"vocab_size\":%d,\"padded_vocab_size\":%d,\"parameters\":%lld},",
        m->num_layers, m->hidden_size, m->num_attention_heads, p->ffn, m->seq_length, p->positions,
        m->vocab_size, p->padded_vocab, (long long)p->params_total);
    printf(
        "\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"world\":%d,\"nodes\":%d,\"ranks_per_node\":%d,\"device\":\"%s\",\"recompute\":\"%s\",\"distributed_optimizer\":%s},",
        m->tp_size, m->pp_size, in->dp, p->world, lay->nodes, lay->rpn, g3_be_kind(in->kind)->name,
        g3_plan_act_mode_name(p->recompute), in->distributed_optimizer ? "true" : "false");
    printf(
        "\"batch\":{\"micro_batch_size\":%lld,\"global_batch_size\":%lld,\"start_batch_size\":%lld,\"micro_batches\":%lld,\"micro_batches_first\":%lld,\"tokens_per_iteration\":%lld},",
        (long long)in->micro_batch, (long long)in->global_batch, (long long)in->start_batch,
        (long long)p->micro_per_iter, (long long)p->micro_first,
        (long long)(in->global_batch * m->seq_length));
    printf(
        "\"params_replica\":%lld,\"flops_per_iteration\":%.17g,\"flops_per_token\":%.17g,\"flops_per_rank_per_iteration\":%.17g,\"bubble\":%.17g,\"bubble_vs_compute\":%.17g,",
        (long long)p->params_replica, p->flops_iter, p->flops_token, p->flops_iter / p->world,
        p->bubble, p->bubble_vs_compute);
    if (f->length_given) {
        double tokens, flops;
        g3_plan_run_totals(lay, &tokens, &flops);
        printf("\"run\":{\"train_iters\":%lld,\"tokens\":%.17g,\"flops\":%.17g},",
               (long long)lay->tplan.train_iters, tokens, flops);
    }
    printf(
        "\"bytes_per_param\":%.17g,\"bytes_per_param_zero1\":%.17g,\"act_per_layer\":{\"none\":%.17g,\"selective\":%.17g,\"full\":%.17g},",
        p->bytes_per_param[0], p->bytes_per_param[1], p->act_per_layer[G3_PLAN_ACT_NONE],
        p->act_per_layer[G3_PLAN_ACT_SELECTIVE], p->act_per_layer[G3_PLAN_ACT_FULL]);
    printf("\"stages\":[");
    for (int s = 0; s < p->pp; s++) {
        if (s)
            printf(",");
        g3_plan_json_stage(f, p, &p->stages[s]);
        nfit += g3_plan_stage_fits(f, p, &p->stages[s]);
    }
    printf("],\"peak_stage\":%d,\"peak_bytes\":%.17g", p->peak_stage,
           p->stages[p->peak_stage].peak_bytes);
    if (f->gpu_gib > 0)
        printf(",\"gpu_memory_gib\":%.17g,\"fits\":%s", f->gpu_gib,
               nfit == p->pp ? "true" : "false");
    printf(",\"virtual_pipeline_size\":%d,\"sequence_parallel\":%s,\"ranks_per_gpu\":%d",
           in->virtual_pp, in->sequence_parallel ? "true" : "false", in->ranks_per_gpu);
    if (f->gpu[0]) {
        g3_plan_overhead_t oh;
        g3_plan_overhead(in, &oh);
        printf(",\"gpu\":\"%s\",\"fixed_bytes\":%.17g,\"nccl_bytes\":%.17g,\"gemm_autotune_scratch_bytes\":%.17g",
               f->gpu, oh.fixed, oh.nccl, oh.scratch);
    }
    if (t) {
        printf(",\"machine\":\"%s\",", mc->name);
        g3_plan_json_time(t);
        printf(",\"sizes\":[");
        for (int i = 0; i < nsizes; i++) {
            printf("%s{\"nodes\":%d,\"dp\":%d,\"micro_batches\":%lld,\"bubble\":%.9g,",
                   i ? "," : "", sizes[i].nodes, sizes[i].in.dp,
                   (long long)sizes[i].plan.micro_per_iter, sizes[i].plan.bubble);
            g3_plan_json_time(&stimes[i]);
            printf("}");
        }
        printf("]");
    } else {
        printf(",\"seconds_per_iteration\":null");
    }
    printf("}\n");
}

/* ---- time per iteration ------------------------------------------------------------------ */

static void g3_plan_time_row(const char *label, const g3_plan_layout_t *lay,
                                 const g3_plan_time_t *t)
{
    printf("  %-10s %5d %6d %6lld %7.2f%% %9.3f %11.4g %8.1f %8.1f", label, lay->nodes,
           lay->in.dp, (long long)lay->plan.micro_per_iter, 100.0 * lay->plan.bubble,
           t->seconds, t->tokens_per_s, t->model_tflops_gpu, t->hw_tflops_gpu);
    for (int k = 0; k < G3_PLAN_T_PARTS; k++)
        printf(" %6.1f%%", 100.0 * t->part[k] / t->seconds);
    printf("\n");
}

void g3_plan_print_time(const g3_plan_machine_t *mc, const g3_plan_layout_t *lay,
                                   const g3_plan_time_t *t, const g3_plan_layout_t *sizes,
                                   const g3_plan_time_t *stimes, int nsizes)
{
    static const char *short_names[G3_PLAN_T_PARTS] = { "compute", "TP", "p2p", "bubble",
                                                        "DP", "optim" };
    printf("\ntime per iteration on %s\n", mc->name);
    printf("  %-10s %5s %6s %6s %8s %9s %11s %8s %8s", "", "nodes", "DP", "m", "bubble",
           "s/iter", "tokens/s", "TFLOP/s", "w/recomp");
    for (int k = 0; k < G3_PLAN_T_PARTS; k++)
        printf(" %7s", short_names[k]);
    printf("\n");
    g3_plan_time_row(lay->nodes > 0 ? "--nodes" : "this", lay, t);
    for (int i = 0; i < nsizes; i++)
        g3_plan_time_row("--sizes", &sizes[i], &stimes[i]);
    if (mc->op_seconds > 0)
        printf("  fixed cost: %.0f ops per iteration on the slowest stage x %.1f us = %.2f ms (launches, host work, syncs: what does not grow with the work), of which %.2f ms is not hidden behind the GPU's work and is in the compute and optimizer above\n",
               t->ops_iter, mc->op_seconds * 1e6, t->fixed_seconds * 1e3, t->exposed_seconds * 1e3);
    printf(
        "  (TFLOP/s per GPU: model FLOPs as gpt3d train's MFU; w/recomp: with the recomputed forward counted, Megatron's and MT-NLG's convention; shares of the iteration: compute, tensor-parallel collectives, pipeline transfers, bubble, data-parallel reduction not overlapped, optimizer)\n");
}

void g3_plan_print_search(const g3_plan_flags_t *f, const g3_plan_search_t *ss,
                          const g3_plan_machine_t *mc, int json)
{
    const g3_gpt_config_t *m = &f->cfg.model;
    const g3_plan_search_t s = *ss;
    int world = f->nodes * f->rpn;

    if (json) {
        printf(
            "{\"search\":{\"nodes\":%d,\"ranks_per_node\":%d,\"world\":%d,\"checked\":%d,\"valid\":%d,\"fit\":%d",
            f->nodes, f->rpn, world, s.checked, s.valid, s.fit);
        if (f->gpu_gib > 0)
            printf(",\"gpu_memory_gib\":%.17g", f->gpu_gib);
        if (mc)
            printf(",\"machine\":\"%s\"", mc->name);
        printf("},\"layouts\":[");
        for (int i = 0, k = 0; i < s.n; i++) {
            const g3_plan_candidate_t *c = &s.c[i];
            if (!c->fits)
                continue;
            printf(
                "%s{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"virtual_pipeline_size\":%d,\"sequence_parallel\":%s,\"micro_batches\":%lld,\"bubble\":%.17g,\"peak_bytes\":%.17g,\"peak_stage\":%d,\"params_per_rank\":%lld",
                k++ ? "," : "", c->tp, c->pp, c->dp, c->vpp, c->sp ? "true" : "false",
                (long long)c->m, c->bubble, c->peak, c->peak_stage, (long long)c->params_rank);
            if (mc)
                printf(",\"seconds_per_iteration\":%.9g", c->seconds);
            printf("}");
        }
        printf("]}\n");
    } else {
        char gbs[48] = "micro batch x DP";
        if (f->cfg.global_batch_size > 0)
            snprintf(gbs, sizeof(gbs), "%lld", (long long)f->cfg.global_batch_size);
        printf(
            "gpt3d plan --search: %d node%s x %d = %d ranks; GPT %d layers, hidden %d, %d heads, sequence %d; micro batch %lld, global batch %s; device %s; recompute %s; optimizer %s\n",
            f->nodes, f->nodes == 1 ? "" : "s", f->rpn, world, m->num_layers, m->hidden_size,
            m->num_attention_heads, m->seq_length, (long long)f->cfg.micro_batch_size, gbs,
            g3_be_kind(f->cfg.backend)->name, g3_plan_act_mode_name(g3_plan_act_mode(m)),
            f->cfg.distributed_optimizer ? "ZeRO-1" : "replicated");
        printf(
            "  %d layout%s checked (TP x PP x V x sequence parallelism), %d valid for gpt3d train, %d fit%s%s\n",
            s.checked, s.checked == 1 ? "" : "s", s.valid, s.fit,
            f->gpu_gib > 0 ? " in the memory per GPU" : "",
            f->gpu_gib > 0 ? "" : " (give --gpu-memory GIB to keep only those that fit)");
        if (s.fit > 0) {
            printf("  %4s %4s %6s %3s %3s %8s %8s %12s %6s %15s%s\n", "TP", "PP", "DP", "V",
                   "SP", "m", "bubble", "peak GiB", "stage", "params/rank",
                   mc ? "     s/iter" : "");
            for (int i = 0; i < s.n; i++) {
                const g3_plan_candidate_t *c = &s.c[i];
                char b[48];
                if (!c->fits)
                    continue;
                printf("  %4d %4d %6d %3d %3s %8lld %7.2f%% %12.2f %6d %15s", c->tp, c->pp,
                       c->dp, c->vpp, c->sp ? "yes" : "no", (long long)c->m,
                       100.0 * c->bubble, g3_plan_gib(c->peak), c->peak_stage,
                       g3_plan_commas(c->params_rank, b, sizeof(b)));
                if (mc)
                    printf(" %10.3f", c->seconds);
                printf("\n");
            }
            printf(
                "  (ordered by %s, then peak memory; V: model chunks per pipeline rank (interleaved 1F1B); SP: sequence parallelism; gpt3d plan with the flags of a row prints its details)\n",
                mc ? "predicted seconds per iteration" : "pipeline bubble");
        }
    }
}
