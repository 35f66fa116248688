/* gpt3d plan: check a model on a parallel layout with the trainer's own checks, and say what
 * it costs per rank before any job is submitted (docs/plan.md):
 *
 *   gpt3d plan --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \
 *              --seq-length 2048 --micro-batch-size 1 --global-batch-size 1536 \
 *              --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
 *              --nodes 128 --gpus-per-node 8 --device cuda --gpu-memory 80
 *   gpt3d plan ... --nodes 128 --gpus-per-node 8 --gpu-memory 80 --search
 *
 * It takes every flag of gpt3d train (the same table, train/flags.c, read by the same code),
 * so a training command line or --config file works as it is, plus its own flags for what a
 * job would give the trainer: the ranks (--nodes x --gpus-per-node, or
 * --data-parallel-size) and the vocabulary size.  Flags that do not change the plan (the
 * learning rate, data paths, ...) are checked as the trainer checks them and otherwise
 * ignored. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/world.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/status.h"
#include "data/dataset.h"
#include "parallel/par.h"
#include "plan/plan.h"
#include "topo/topo.h"
#include "train/flags.h"
#include "train/train.h"

#define G3_GPT2_VOCAB 50257

/* gpt3d plan's own flags; gpt3d train's follow them (g3_train_opt_specs). */
static const g3_opt_spec_t g3_cli_plan_own_specs[] = {
    { "nodes", G3_OPT_INT, NULL, "Plan for this many nodes (with --gpus-per-node): DP = nodes x GPUs per node / (TP x PP).", G3_NOOPT },
    { "gpus-per-node", G3_OPT_INT, NULL, "Ranks (GPUs) per node; tensor-parallel groups stay inside a node.", G3_NOOPT },
    { "ranks-per-node", G3_OPT_INT, NULL, "The same as --gpus-per-node (gpt3d topo's name).", G3_NOOPT },
    { "data-parallel-size", G3_OPT_INT, NULL, "Data-parallel size DP, instead of (or checked against) --nodes x --gpus-per-node (default 1).", G3_NOOPT },
    { "vocab-size", G3_OPT_INT, NULL, "Vocabulary size before padding, instead of reading --vocab-file (default: 50257, GPT-2's, which the built-in corpus uses).", G3_NOOPT },
    { "gpu-memory", G3_OPT_FLOAT, NULL, "Memory of one GPU (or rank) in GiB: say whether each stage fits.", NULL, 0, 0, "GIB" },
    { "search", G3_OPT_BOOL, NULL, "List the valid layouts for --nodes x --gpus-per-node (TP a divisor of the GPUs per node up to 8, or the given TP; every PP, or the given PP) that fit --gpu-memory, by pipeline bubble, then memory.", G3_NOOPT },
    { "json", G3_OPT_BOOL, NULL, "Print one JSON object instead of the tables.", G3_NOOPT },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

/* What the flags say, before a layout is chosen. */
typedef struct {
    g3_train_config_t cfg;    /* the trainer's configuration (vocab_size set)             */
    int     nodes, rpn;       /* --nodes, --gpus-per-node; 0: not given                  */
    int     dp_flag;          /* --data-parallel-size; 0: not given                       */
    int     bf16;             /* --device cuda                                            */
    const char *device;       /* --device                                                 */
    int     length_given;     /* --train-iters or --train-samples given                   */
    double  gpu_gib;          /* --gpu-memory; 0: not given                               */
} g3_cli_plan_flags_t;

/* One checked layout. */
typedef struct {
    g3_plan_input_t in;
    g3_train_plan_t tplan;
    int             nodes, rpn;   /* 0: no node check was possible                         */
    g3_plan_t       plan;
} g3_cli_plan_layout_t;

static double g3_cli_plan_gib(double bytes)
{
    return bytes / (1024.0 * 1024.0 * 1024.0);
}

/* "529,558,241,280" */
static const char *g3_cli_plan_commas(int64_t v, char *buf, size_t len)
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
static const char *g3_cli_plan_short(double v, char *buf, size_t len)
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

/* The trainer's layout check on nodes x rpn ranks: the placement a job would get
 * (g3_par_alloc_topo on a flat switch, g3_topo_map as g3_par_init calls it).
 * OUT: *dp_p.  RET: an exit code (logged). */
static int g3_cli_plan_map(int nodes, int rpn, int tp, int pp, int dp, int *dp_p)
{
    g3_par_alloc_t a;
    g3_topo_t *topo = NULL;
    g3_topo_plan_t *tplan = NULL;
    int *tnodes = NULL, rc = G3_EXIT_FAILURE;
    char why[1024];
    g3_status_t st;

    memset(&a, 0, sizeof(a));
    a.names = calloc((size_t)nodes, sizeof(char *));
    if (!a.names) {
        g3_error("gpt3d plan: out of memory for %d nodes", nodes);
        return G3_EXIT_FAILURE;
    }
    a.nnodes = nodes;
    a.rpn = rpn;
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node%d", i);
        a.names[i] = strdup(name);
        if (!a.names[i]) {
            g3_error("gpt3d plan: out of memory for %d nodes", nodes);
            goto out;
        }
    }
    why[0] = '\0';
    st = g3_par_alloc_topo(&a, NULL, "the planned nodes", &topo, &tnodes, why, sizeof(why));
    if (st == G3_OK) {
        g3_topo_alloc_t alloc = { nodes, tnodes, rpn, NULL, NULL };
        st = g3_topo_map(topo, &alloc, tp, pp, dp, &tplan, why, sizeof(why));
    }
    if (st == G3_ERR_INVALID_ARG && why[0]) {
        g3_error("impossible layout: %s", why);
        rc = G3_EXIT_USAGE;
    } else if (st != G3_OK) {
        g3_error("gpt3d plan: placing the ranks failed: %s %s", g3_status_string(st), why);
        rc = g3_status_exit_code(st);
    } else {
        *dp_p = tplan->dp;
        rc = G3_EXIT_OK;
    }
out:
    g3_topo_plan_free(tplan);
    free(tnodes);
    g3_topo_free(topo);
    g3_par_alloc_free(&a);
    return rc;
}

/* The sizes the --device kernels are built for (g3_be_check_sizes, which gpt3d train runs
 * too).  RET: an exit code (logged). */
static int g3_cli_plan_device_check(const g3_cli_plan_flags_t *f, const g3_gpt_config_t *m)
{
    char why[1024];
    int Vp = g3_gpt_padded_vocab(m->vocab_size, m->make_vocab_size_divisible_by, m->tp_size);

    if (g3_be_check_sizes(f->device, m->hidden_size, m->num_attention_heads,
                          m->hidden_size / m->num_attention_heads, g3_gpt_config_ffn(m),
                          Vp / m->tp_size, why, sizeof(why)) != G3_OK) {
        g3_error("%s", why);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

/* Run every check gpt3d train runs before its first step on TP x PP (and the ranks of f),
 * then work out the plan.  OUT: *lay (g3_plan_free(&lay->plan) on success).
 * RET: an exit code; the errors are logged with the trainer's messages. */
static int g3_cli_plan_layout(const g3_cli_plan_flags_t *f, int tp, int pp, g3_cli_plan_layout_t *lay)
{
    g3_train_config_t cfg = f->cfg;
    int nodes = f->nodes, rpn = f->rpn, dp = 0, rc;
    int64_t world;

    memset(lay, 0, sizeof(*lay));
    if (nodes > 0) {
        /* a job of nodes x rpn ranks: DP as gpt3d train derives it */
        world = (int64_t)nodes * rpn;
        if (world > 0x7fffffff / 4) {
            g3_error("--nodes %d x --gpus-per-node %d = %lld ranks is too many", nodes, rpn,
                     (long long)world);
            return G3_EXIT_USAGE;
        }
        if (!f->dp_flag && !g3_train_flags_dp((int)world, tp, pp, &dp))
            return G3_EXIT_USAGE;
    } else {
        dp = f->dp_flag > 0 ? f->dp_flag : 1;
        world = (int64_t)tp * pp * dp;
        if (world > 0x7fffffff / 4) {
            g3_error("TP %d x PP %d x DP %d = %lld ranks is too many", tp, pp, dp,
                     (long long)world);
            return G3_EXIT_USAGE;
        }
        if (rpn > 0) {
            if (world % rpn != 0) {
                g3_error("impossible layout: TP %d x PP %d x DP %d = %lld ranks do not fill "
                         "whole nodes of --gpus-per-node %d (every node runs the same number "
                         "of ranks); change the sizes, or give --nodes N to derive DP", tp, pp,
                         dp, (long long)world, rpn);
                return G3_EXIT_USAGE;
            }
            nodes = (int)(world / rpn);
        }
    }
    if (nodes > 0) {
        rc = g3_cli_plan_map(nodes, rpn, tp, pp, f->dp_flag, &dp);
        if (rc != G3_EXIT_OK)
            return rc;
    }
    cfg.dp_size = dp;
    cfg.model.tp_size = tp;
    cfg.model.pp_size = pp;
    if (g3_gpt_config_check(&cfg.model) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_cli_plan_device_check(f, &cfg.model) != G3_EXIT_OK)
        return G3_EXIT_USAGE;
    /* the batch arithmetic; the plan needs no run length: one iteration stands in (one
     * global batch with a ramp-up, which needs sample-based training) */
    if (!f->length_given) {
        if (cfg.rampup[0] > 0)
            cfg.train_samples = cfg.rampup[2] + (cfg.global_batch_size > 0
                                                     ? cfg.global_batch_size
                                                     : cfg.micro_batch_size * dp);
        else
            cfg.train_iters = 1;
    }
    if (g3_train_plan(&cfg, &lay->tplan) != G3_OK)
        return G3_EXIT_USAGE;

    lay->nodes = nodes;
    lay->rpn = rpn;
    lay->in.model = cfg.model;
    lay->in.dp = dp;
    lay->in.micro_batch = cfg.micro_batch_size;
    lay->in.global_batch = lay->tplan.global_batch_size;
    lay->in.start_batch = lay->tplan.rampup.start > 0 ? lay->tplan.rampup.start
                                                      : lay->tplan.global_batch_size;
    lay->in.distributed_optimizer = cfg.distributed_optimizer;
    lay->in.bf16 = f->bf16;
    return g3_status_exit_code(g3_plan_compute(&lay->in, &lay->plan));
}

/* Tokens and FLOPs of the whole run when its length was given (ramp-up included). */
static void g3_cli_plan_run_totals(const g3_cli_plan_layout_t *lay, double *tokens, double *flops)
{
    int64_t consumed = 0, T = lay->in.model.seq_length;
    *tokens = *flops = 0.0;
    for (int64_t it = 0; it < lay->tplan.train_iters; it++) {
        int64_t gbs = g3_train_rampup_batch(&lay->tplan.rampup, consumed);
        consumed += gbs;
        *tokens += (double)gbs * T;
        *flops += g3_gpt_flops_per_step(&lay->in.model, gbs, (int)T);
    }
}

static int g3_cli_plan_stage_fits(const g3_cli_plan_flags_t *f, const g3_plan_stage_t *st)
{
    return f->gpu_gib <= 0.0 || g3_cli_plan_gib(st->peak_bytes) <= f->gpu_gib;
}

static void g3_cli_plan_print_human(const g3_cli_plan_flags_t *f, const g3_cli_plan_layout_t *lay)
{
    const g3_plan_input_t *in = &lay->in;
    const g3_gpt_config_t *m = &in->model;
    const g3_plan_t *p = &lay->plan;
    int zero = in->distributed_optimizer, nfit = 0;
    char b1[48], b2[48];

    printf("gpt3d plan: GPT %d layers, hidden %d, %d heads, ffn %d, sequence %d, positions %d, "
           "vocabulary %d (padded %d: a multiple of %d x TP %d)\n", m->num_layers,
           m->hidden_size, m->num_attention_heads, p->ffn, m->seq_length, p->positions,
           m->vocab_size, p->padded_vocab, m->make_vocab_size_divisible_by, m->tp_size);
    printf("  parameters: %s (%s; the output layer is tied to the word embedding, counted "
           "once; gpt3d train reports the same)\n", g3_cli_plan_commas(p->params_total, b1, sizeof(b1)),
           g3_cli_plan_short((double)p->params_total, b2, sizeof(b2)));
    if (lay->nodes > 0)
        printf("  layout: TP %d x PP %d x DP %d = %d ranks on %d node%s x %d (tensor-parallel "
               "groups inside a node)\n", m->tp_size, m->pp_size, in->dp, p->world, lay->nodes,
               lay->nodes == 1 ? "" : "s", lay->rpn);
    else
        printf("  layout: TP %d x PP %d x DP %d = %d rank%s (no --nodes/--gpus-per-node: not "
               "checked against nodes)\n", m->tp_size, m->pp_size, in->dp, p->world,
               p->world == 1 ? "" : "s");
    printf("  one replica (TP x PP ranks) holds %s parameters: %s more than the model, the "
           "copies of TP-replicated tensors%s\n", g3_cli_plan_commas(p->params_replica, b1, sizeof(b1)),
           g3_cli_plan_commas(p->params_replica - p->params_total, b2, sizeof(b2)),
           m->pp_size > 1 ? " and the last stage's word embedding" : "");
    printf("  batches: micro %lld x DP %d x %lld micro-batches (gradient-accumulation steps) = "
           "global %lld sequences, %lld tokens per iteration", (long long)in->micro_batch,
           in->dp, (long long)p->micro_per_iter, (long long)in->global_batch,
           (long long)(in->global_batch * m->seq_length));
    if (in->start_batch != in->global_batch)
        printf("; ramp-up from %lld (%lld micro-batches)", (long long)in->start_batch,
               (long long)p->micro_first);
    printf("\n");
    printf("  model FLOPs (docs/model.md, as gpt3d train's MFU): %.4g per iteration, %.4g per "
           "token, %.4g per rank per iteration\n", p->flops_iter, p->flops_token,
           p->flops_iter / p->world);
    if (f->length_given) {
        double tokens, flops;
        g3_cli_plan_run_totals(lay, &tokens, &flops);
        printf("  the run: %lld iterations, %.4g tokens, %.4g FLOPs\n",
               (long long)lay->tplan.train_iters, tokens, flops);
    }
    if (m->pp_size > 1)
        printf("  pipeline bubble (1F1B): (PP - 1) / (m + PP - 1) = %d / %lld = %.2f%% of an "
               "iteration idle; (PP - 1) / m = %.2f%% of the compute time (what gpt3d train "
               "reports)\n", m->pp_size - 1, (long long)(p->micro_per_iter + m->pp_size - 1),
               100.0 * p->bubble, 100.0 * p->bubble_vs_compute);
    else
        printf("  pipeline bubble: none (PP 1)\n");
    printf("  device %s: %s; activation recompute: %s\n", in->bf16 ? "cuda" : "cpu",
           in->bf16 ? "bf16 weights and activations, fp32 gradients, fp32 master weights and "
                      "Adam state"
                    : "fp32 weights (the master copy), activations, gradients and Adam state",
           g3_plan_act_mode_words(p->recompute));
    printf("  model state per parameter held: %.2f B replicated; %.2f B with ZeRO-1 over DP %d "
           "(--use-distributed-optimizer%s)\n", p->bytes_per_param[0], p->bytes_per_param[1],
           in->dp, zero ? ", in use" : ", not in use");
    printf("  activations per layer per micro-batch (Korthikanti et al. 2022, no sequence "
           "parallelism): %.3f GiB without recompute, %.3f GiB selective, %.3f GiB full\n",
           g3_cli_plan_gib(p->act_per_layer[G3_PLAN_ACT_NONE]),
           g3_cli_plan_gib(p->act_per_layer[G3_PLAN_ACT_SELECTIVE]),
           g3_cli_plan_gib(p->act_per_layer[G3_PLAN_ACT_FULL]));

    printf("\nper rank, GiB (optimizer: %s; activations: 1F1B keeps min(PP - stage, m) "
           "micro-batches)\n", zero ? "ZeRO-1 shard" : "replicated");
    printf("  %5s  %-11s %15s %9s %9s %11s %12s %12s %3s %9s%s\n", "stage", "layers",
           "params/rank", "weights", "grads", "optimizer", zero ? "(replicated)" : "(ZeRO-1)",
           "activations", "mb",
           "peak", f->gpu_gib > 0 ? "  fits" : "");
    for (int s = 0; s < p->pp; s++) {
        const g3_plan_stage_t *st = &p->stages[s];
        char layers[32];
        snprintf(layers, sizeof(layers), "[%d,%d)%s%s", st->layer_begin, st->layer_end,
                 st->has_embedding ? "+E" : "", st->has_head ? "+H" : "");
        nfit += g3_cli_plan_stage_fits(f, st);
        printf("  %5d  %-11s %15s %9.2f %9.2f %11.2f %12.2f %12.2f %3d %9.2f%s\n", s, layers,
               g3_cli_plan_commas(st->params, b1, sizeof(b1)), g3_cli_plan_gib(st->weight_bytes),
               g3_cli_plan_gib(st->grad_bytes),
               g3_cli_plan_gib(st->master_bytes[zero] + st->optim_bytes[zero]),
               g3_cli_plan_gib(st->master_bytes[!zero] + st->optim_bytes[!zero]), g3_cli_plan_gib(st->act_bytes),
               st->in_flight, g3_cli_plan_gib(st->peak_bytes),
               f->gpu_gib > 0 ? (g3_cli_plan_stage_fits(f, st) ? "  yes" : "  NO") : "");
    }
    printf("  (+E: embeddings, +H: final LayerNorm and output layer; optimizer: %sAdam m, v%s; "
           "(%s): the optimizer %s; mb: micro-batches in flight)\n",
           in->bf16 ? "fp32 master + " : "", !in->bf16 ? " (+ the reduced-gradient shard under "
                                                        "ZeRO-1)" : "",
           zero ? "replicated" : "ZeRO-1",
           zero ? "without --use-distributed-optimizer" : "with --use-distributed-optimizer");
    printf("  peak: stage %d, %.2f GiB", p->peak_stage,
           g3_cli_plan_gib(p->stages[p->peak_stage].peak_bytes));
    if (f->gpu_gib > 0)
        printf("; %s in %.4g GiB per rank (%d of %d stages fit; the %s, communication "
               "buffers and allocator fragmentation come on top)",
               nfit == p->pp ? "fits" : "does NOT fit", f->gpu_gib, nfit, p->pp,
               in->bf16 ? "CUDA context" : "process");
    printf("\n");
    if (in->bf16)
        printf("note: the CUDA backend of this version (bf16 working copy, fp32 master weights, "
               "gradients and Adam state, as Megatron-LM's bf16 layout) has not yet run on a GPU; "
               "see docs/cuda.md\n");
}

static void g3_cli_plan_json_stage(const g3_cli_plan_flags_t *f, const g3_plan_stage_t *st)
{
    printf("{\"stage\":%d,\"layer_begin\":%d,\"layer_end\":%d,\"embedding\":%s,\"head\":%s,"
           "\"params\":%lld,\"params_held\":%lld,\"in_flight\":%d,\"weight_bytes\":%.17g,"
           "\"grad_bytes\":%.17g,\"master_bytes\":%.17g,\"optim_bytes\":%.17g,"
           "\"master_bytes_zero1\":%.17g,\"optim_bytes_zero1\":%.17g,\"state_bytes\":%.17g,"
           "\"state_bytes_zero1\":%.17g,\"act_layer_bytes\":%.17g,\"act_recompute_bytes\":%.17g,"
           "\"act_extra_bytes\":%.17g,\"act_bytes\":%.17g,\"peak_bytes\":%.17g",
           st->stage, st->layer_begin, st->layer_end, st->has_embedding ? "true" : "false",
           st->has_head ? "true" : "false", (long long)st->params, (long long)st->params_held,
           st->in_flight, st->weight_bytes, st->grad_bytes, st->master_bytes[0],
           st->optim_bytes[0], st->master_bytes[1], st->optim_bytes[1], st->state_bytes[0],
           st->state_bytes[1], st->act_layer_bytes, st->act_recompute_bytes,
           st->act_extra_bytes, st->act_bytes, st->peak_bytes);
    if (f->gpu_gib > 0)
        printf(",\"fits\":%s", g3_cli_plan_stage_fits(f, st) ? "true" : "false");
    printf("}");
}

static void g3_cli_plan_print_json(const g3_cli_plan_flags_t *f, const g3_cli_plan_layout_t *lay)
{
    const g3_plan_input_t *in = &lay->in;
    const g3_gpt_config_t *m = &in->model;
    const g3_plan_t *p = &lay->plan;
    int nfit = 0;

    printf("{\"model\":{\"num_layers\":%d,\"hidden_size\":%d,\"num_attention_heads\":%d,"
           "\"ffn_hidden_size\":%d,\"seq_length\":%d,\"max_position_embeddings\":%d,"
           "\"vocab_size\":%d,\"padded_vocab_size\":%d,\"parameters\":%lld},",
           m->num_layers, m->hidden_size, m->num_attention_heads, p->ffn, m->seq_length,
           p->positions, m->vocab_size, p->padded_vocab, (long long)p->params_total);
    printf("\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"world\":%d,\"nodes\":%d,"
           "\"ranks_per_node\":%d,\"device\":\"%s\",\"recompute\":\"%s\","
           "\"distributed_optimizer\":%s},", m->tp_size, m->pp_size, in->dp, p->world,
           lay->nodes, lay->rpn, in->bf16 ? "cuda" : "cpu", g3_plan_act_mode_name(p->recompute),
           in->distributed_optimizer ? "true" : "false");
    printf("\"batch\":{\"micro_batch_size\":%lld,\"global_batch_size\":%lld,"
           "\"start_batch_size\":%lld,\"micro_batches\":%lld,\"micro_batches_first\":%lld,"
           "\"tokens_per_iteration\":%lld},", (long long)in->micro_batch,
           (long long)in->global_batch, (long long)in->start_batch,
           (long long)p->micro_per_iter, (long long)p->micro_first,
           (long long)(in->global_batch * m->seq_length));
    printf("\"params_replica\":%lld,\"flops_per_iteration\":%.17g,\"flops_per_token\":%.17g,"
           "\"flops_per_rank_per_iteration\":%.17g,\"bubble\":%.17g,"
           "\"bubble_vs_compute\":%.17g,", (long long)p->params_replica, p->flops_iter,
           p->flops_token, p->flops_iter / p->world, p->bubble, p->bubble_vs_compute);
    if (f->length_given) {
        double tokens, flops;
        g3_cli_plan_run_totals(lay, &tokens, &flops);
        printf("\"run\":{\"train_iters\":%lld,\"tokens\":%.17g,\"flops\":%.17g},",
               (long long)lay->tplan.train_iters, tokens, flops);
    }
    printf("\"bytes_per_param\":%.17g,\"bytes_per_param_zero1\":%.17g,"
           "\"act_per_layer\":{\"none\":%.17g,\"selective\":%.17g,\"full\":%.17g},",
           p->bytes_per_param[0], p->bytes_per_param[1], p->act_per_layer[G3_PLAN_ACT_NONE],
           p->act_per_layer[G3_PLAN_ACT_SELECTIVE], p->act_per_layer[G3_PLAN_ACT_FULL]);
    printf("\"stages\":[");
    for (int s = 0; s < p->pp; s++) {
        if (s)
            printf(",");
        g3_cli_plan_json_stage(f, &p->stages[s]);
        nfit += g3_cli_plan_stage_fits(f, &p->stages[s]);
    }
    printf("],\"peak_stage\":%d,\"peak_bytes\":%.17g", p->peak_stage,
           p->stages[p->peak_stage].peak_bytes);
    if (f->gpu_gib > 0)
        printf(",\"gpu_memory_gib\":%.17g,\"fits\":%s", f->gpu_gib,
               nfit == p->pp ? "true" : "false");
    printf("}\n");
}

/* ---- --search ------------------------------------------------------------------------------ */

typedef struct {
    int    tp, pp, dp;
    int64_t m;
    double bubble, peak;
    int    peak_stage;
    int64_t params_rank;   /* the peak stage's parameters per rank */
    int    fits;
} g3_cli_plan_candidate_t;

static int g3_cli_plan_candidate_cmp(const void *a, const void *b)
{
    const g3_cli_plan_candidate_t *x = a, *y = b;
    if (x->bubble != y->bubble)
        return x->bubble < y->bubble ? -1 : 1;
    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    if (x->tp != y->tp)
        return x->tp < y->tp ? -1 : 1;
    return x->pp < y->pp ? -1 : x->pp > y->pp;
}

static int g3_cli_plan_search(const g3_cli_plan_flags_t *f, int tp_given, int pp_given, int json)
{
    int world = f->nodes * f->rpn, nvalid = 0, nchecked = 0, nshown = 0, cap = 64, n = 0;
    g3_cli_plan_candidate_t *c = malloc(sizeof(*c) * (size_t)cap);
    const g3_gpt_config_t *m = &f->cfg.model;

    if (!c) {
        g3_error("gpt3d plan: out of memory");
        return G3_EXIT_FAILURE;
    }
    for (int tp = 1; tp <= f->rpn && tp <= 8; tp++) {
        if (f->rpn % tp != 0 || (tp_given && tp != tp_given))
            continue;
        for (int pp = 1; pp <= m->num_layers && pp <= world / tp; pp++) {
            g3_cli_plan_layout_t lay;
            g3_cli_quiet_t q;
            int rc;
            if (world % (tp * pp) != 0 || (pp_given && pp != pp_given))
                continue;
            nchecked++;
            g3_cli_quiet_begin(&q, 1);
            rc = g3_cli_plan_layout(f, tp, pp, &lay);
            g3_cli_quiet_end(&q, 0);
            if (rc != G3_EXIT_OK)
                continue;
            nvalid++;
            if (n == cap) {
                g3_cli_plan_candidate_t *nc = realloc(c, sizeof(*c) * (size_t)cap * 2);
                if (!nc) {
                    g3_plan_free(&lay.plan);
                    free(c);
                    g3_error("gpt3d plan: out of memory");
                    return G3_EXIT_FAILURE;
                }
                c = nc;
                cap *= 2;
            }
            c[n].tp = tp;
            c[n].pp = pp;
            c[n].dp = lay.in.dp;
            c[n].m = lay.plan.micro_per_iter;
            c[n].bubble = lay.plan.bubble;
            c[n].peak_stage = lay.plan.peak_stage;
            c[n].peak = lay.plan.stages[lay.plan.peak_stage].peak_bytes;
            c[n].params_rank = lay.plan.stages[lay.plan.peak_stage].params;
            c[n].fits = f->gpu_gib <= 0.0 || g3_cli_plan_gib(c[n].peak) <= f->gpu_gib;
            n++;
            g3_plan_free(&lay.plan);
        }
    }
    qsort(c, (size_t)n, sizeof(*c), g3_cli_plan_candidate_cmp);
    for (int i = 0; i < n; i++)
        nshown += c[i].fits;
    if (json) {
        printf("{\"search\":{\"nodes\":%d,\"ranks_per_node\":%d,\"world\":%d,\"checked\":%d,"
               "\"valid\":%d,\"fit\":%d", f->nodes, f->rpn, world, nchecked, nvalid, nshown);
        if (f->gpu_gib > 0)
            printf(",\"gpu_memory_gib\":%.17g", f->gpu_gib);
        printf("},\"layouts\":[");
        for (int i = 0, k = 0; i < n; i++) {
            if (!c[i].fits)
                continue;
            printf("%s{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"micro_batches\":%lld,\"bubble\":%.17g,"
                   "\"peak_bytes\":%.17g,\"peak_stage\":%d,\"params_per_rank\":%lld}",
                   k++ ? "," : "", c[i].tp, c[i].pp, c[i].dp, (long long)c[i].m, c[i].bubble,
                   c[i].peak, c[i].peak_stage, (long long)c[i].params_rank);
        }
        printf("]}\n");
    } else {
        char gbs[48] = "micro batch x DP";
        if (f->cfg.global_batch_size > 0)
            snprintf(gbs, sizeof(gbs), "%lld", (long long)f->cfg.global_batch_size);
        printf("gpt3d plan --search: %d node%s x %d = %d ranks; GPT %d layers, hidden %d, %d "
               "heads, sequence %d; micro batch %lld, global batch %s; device %s; recompute "
               "%s; optimizer %s\n", f->nodes, f->nodes == 1 ? "" : "s", f->rpn, world,
               m->num_layers, m->hidden_size, m->num_attention_heads, m->seq_length,
               (long long)f->cfg.micro_batch_size, gbs, f->bf16 ? "cuda" : "cpu",
               g3_plan_act_mode_name(g3_plan_act_mode(m)),
               f->cfg.distributed_optimizer ? "ZeRO-1" : "replicated");
        printf("  %d layout%s checked, %d valid for gpt3d train, %d fit%s%s\n", nchecked,
               nchecked == 1 ? "" : "s", nvalid, nshown,
               f->gpu_gib > 0 ? " in the memory per rank" : "",
               f->gpu_gib > 0 ? "" : " (give --gpu-memory GIB to keep only those that fit)");
        if (nshown > 0) {
            printf("  %4s %4s %6s %8s %8s %12s %6s %15s\n", "TP", "PP", "DP", "m", "bubble",
                   "peak GiB", "stage", "params/rank");
            for (int i = 0; i < n; i++) {
                char b[48];
                if (!c[i].fits)
                    continue;
                printf("  %4d %4d %6d %8lld %7.2f%% %12.2f %6d %15s\n", c[i].tp, c[i].pp,
                       c[i].dp, (long long)c[i].m, 100.0 * c[i].bubble, g3_cli_plan_gib(c[i].peak),
                       c[i].peak_stage, g3_cli_plan_commas(c[i].params_rank, b, sizeof(b)));
            }
            printf("  (ordered by pipeline bubble, then peak memory; gpt3d plan with the TP "
                   "and PP of a row prints its details)\n");
        }
    }
    free(c);
    if (nchecked == 0) {   /* nothing to check: say which flag left no candidate */
        if (tp_given && (tp_given > 8 || f->rpn % tp_given != 0))
            g3_error("gpt3d plan --search: --tensor-model-parallel-size %d leaves no layout: "
                     "TP must divide --gpus-per-node %d and be at most 8 (tensor-parallel "
                     "groups stay inside one node); give another TP or drop it", tp_given,
                     f->rpn);
        else if (pp_given)
            g3_error("gpt3d plan --search: --pipeline-model-parallel-size %d leaves no layout: "
                     "PP must be at most --num-layers %d and TP x PP must divide the %d ranks; "
                     "give another PP or drop it", pp_given, m->num_layers, world);
        else
            g3_error("gpt3d plan --search: no TP x PP divides the %d ranks; change --nodes or "
                     "--gpus-per-node", world);
        return G3_EXIT_USAGE;
    }
    if (nvalid == 0) {
        g3_error("gpt3d plan --search: none of the %d layouts checked passes gpt3d train's "
                 "checks; run gpt3d plan with one TP and PP to see why", nchecked);
        return G3_EXIT_USAGE;
    }
    if (nshown == 0) {
        g3_error("gpt3d plan --search: none of the %d valid layouts fits in --gpu-memory %g; "
                 "recompute activations (--recompute-granularity selective or full), shard the "
                 "optimizer (--use-distributed-optimizer) or plan for more nodes", nvalid,
                 f->gpu_gib);
        return G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

/* ---- the driver ------------------------------------------------------------------------------ */

/* The plan's table: its own flags, then every flag of gpt3d train.  RET: malloc'd or NULL. */
static g3_opt_spec_t *g3_cli_plan_specs(void)
{
    size_t a = 0, b = 0;
    g3_opt_spec_t *s;
    while (g3_cli_plan_own_specs[a].name)
        a++;
    while (g3_train_opt_specs[b].name)
        b++;
    s = malloc(sizeof(*s) * (a + b + 1));
    if (!s)
        return NULL;
    memcpy(s, g3_cli_plan_own_specs, sizeof(*s) * a);
    memcpy(s + a, g3_train_opt_specs, sizeof(*s) * (b + 1));
    return s;
}

int g3_cmd_plan(int argc, char **argv)
{
    g3_opt_spec_t *specs = g3_cli_plan_specs();
    g3_opt_cmd_t cmd = { "plan", "Check a parallel layout against a model and print memory "
                         "per rank.", NULL, 0, 0, specs };
    g3_opts_t *o = NULL;
    g3_cli_plan_flags_t f;
    g3_cli_plan_layout_t lay;
    int tp = 1, pp = 1, ok = 1, rc = G3_EXIT_USAGE, json, search;
    int gpn = 0, rpn = 0;

    if (!specs) {
        g3_error("gpt3d plan: out of memory");
        return G3_EXIT_FAILURE;
    }
    if (g3_opts_parse(&cmd, argc, argv, &o) != G3_OK)
        goto out;
    if (g3_opts_help_shown(o)) {
        rc = G3_EXIT_OK;
        goto out;
    }
    memset(&f, 0, sizeof(f));
    g3_train_config_defaults(&f.cfg);
    ok &= g3_train_flags_read(o, &f.cfg, &tp, &pp);
    json = g3_opts_bool(o, "json");
    search = g3_opts_bool(o, "search");
    f.device = g3_opts_str(o, "device");
    f.bf16 = strcmp(f.device, "cuda") == 0;
    f.length_given = g3_opts_is_set(o, "train-iters") || g3_opts_is_set(o, "train-samples");

    /* the ranks */
    if (g3_opts_is_set(o, "nodes"))
        ok &= g3_train_flags_int(o, "nodes", 1, &f.nodes);
    if (g3_opts_is_set(o, "gpus-per-node"))
        ok &= g3_train_flags_int(o, "gpus-per-node", 1, &gpn);
    if (g3_opts_is_set(o, "ranks-per-node"))
        ok &= g3_train_flags_int(o, "ranks-per-node", 1, &rpn);
    if (g3_opts_is_set(o, "data-parallel-size"))
        ok &= g3_train_flags_int(o, "data-parallel-size", 1, &f.dp_flag);
    if (gpn && rpn && gpn != rpn) {
        g3_error("--gpus-per-node %d and --ranks-per-node %d disagree: they name the same "
                 "thing; give one", gpn, rpn);
        ok = 0;
    }
    f.rpn = gpn ? gpn : rpn;
    if (ok && f.nodes && !f.rpn) {
        g3_error("--nodes %d needs --gpus-per-node G (the ranks each node runs)", f.nodes);
        ok = 0;
    }
    if (ok && (int64_t)f.nodes * f.rpn > INT_MAX / 4) {
        g3_error("--nodes %d x --gpus-per-node %d = %lld ranks is too many (at most %d); give "
                 "fewer --nodes or --gpus-per-node", f.nodes, f.rpn,
                 (long long)f.nodes * f.rpn, INT_MAX / 4);
        ok = 0;
    }
    if (g3_opts_is_set(o, "gpu-memory")) {
        f.gpu_gib = g3_opts_float(o, "gpu-memory");
        if (!(f.gpu_gib > 0.0 && f.gpu_gib < 1e9)) {
            g3_error("--gpu-memory %g: give the memory of one GPU in GiB, e.g. 80",
                     f.gpu_gib);
            ok = 0;
        }
    }
    if (search && (!f.nodes || f.dp_flag)) {
        g3_error("--search needs --nodes N and --gpus-per-node G, and derives DP itself%s",
                 f.dp_flag ? ": drop --data-parallel-size" : "");
        ok = 0;
    }

    /* the vocabulary: a size, or the file gpt3d train would read */
    if (g3_opts_is_set(o, "vocab-size") && g3_opts_is_set(o, "vocab-file")) {
        g3_error("give --vocab-size or --vocab-file, not both");
        ok = 0;
    } else if (g3_opts_is_set(o, "vocab-file")) {
        int64_t v = 0, eod = 0;
        if (g3_data_vocab_info(g3_opts_str(o, "vocab-file"), &v, &eod) != G3_OK)
            ok = 0;
        else if (v > 0x7fffffff) {
            g3_error("--vocab-file %s: %lld entries is too many", g3_opts_str(o, "vocab-file"),
                     (long long)v);
            ok = 0;
        } else {
            f.cfg.model.vocab_size = (int)v;
        }
    } else if (g3_opts_is_set(o, "vocab-size")) {
        ok &= g3_train_flags_int(o, "vocab-size", 1, &f.cfg.model.vocab_size);
    } else {
        f.cfg.model.vocab_size = G3_GPT2_VOCAB;
    }
    if (ok && !g3_opts_is_set(o, "ffn-hidden-size") &&
        f.cfg.model.hidden_size > 0x7fffffff / 4) {
        g3_error("--hidden-size %d is too large for the default --ffn-hidden-size (4 x hidden "
                 "size overflows); give a smaller --hidden-size", f.cfg.model.hidden_size);
        ok = 0;
    }
    if (!ok)
        goto out;

    if (search) {
        rc = g3_cli_plan_search(&f, g3_opts_is_set(o, "tensor-model-parallel-size") ? tp : 0,
                            g3_opts_is_set(o, "pipeline-model-parallel-size") ? pp : 0, json);
        goto out;
    }
    rc = g3_cli_plan_layout(&f, tp, pp, &lay);
    if (rc != G3_EXIT_OK)
        goto out;
    if (json)
        g3_cli_plan_print_json(&f, &lay);
    else
        g3_cli_plan_print_human(&f, &lay);
    fflush(stdout);
    rc = G3_EXIT_OK;
    if (f.gpu_gib > 0 && !g3_cli_plan_stage_fits(&f, &lay.plan.stages[lay.plan.peak_stage])) {
        g3_error("stage %d needs %.2f GiB per rank, more than --gpu-memory %g: recompute "
                 "activations (--recompute-granularity selective or full), shard the optimizer "
                 "(--use-distributed-optimizer), or use more pipeline or tensor parallelism "
                 "(--search lists what fits)", lay.plan.peak_stage,
                 g3_cli_plan_gib(lay.plan.stages[lay.plan.peak_stage].peak_bytes), f.gpu_gib);
        rc = G3_EXIT_FAILURE;
    }
    g3_plan_free(&lay.plan);
out:
    g3_opts_free(o);
    free(specs);
    return rc;
}
