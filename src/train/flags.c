/* gpt3d train: the trainer's option table and the readers of its model, layout and batch
 * flags (shared with gpt3d plan; see flags.h) and of its checkpoint and stop flags. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "train/flags.h"

const g3_opt_spec_t g3_train_opt_specs[] = {
    /* model */
    { "num-layers", G3_OPT_INT, "6", "Transformer layers.", G3_NOOPT },
    { "hidden-size", G3_OPT_INT, "384", "Hidden size h.", G3_NOOPT },
    { "num-attention-heads", G3_OPT_INT, "6", "Attention heads (must divide the hidden size).", G3_NOOPT },
    { "ffn-hidden-size", G3_OPT_INT, NULL, "MLP hidden size (default 4 x hidden size).", G3_NOOPT },
    { "seq-length", G3_OPT_INT, "256", "Tokens per training sequence.", G3_NOOPT },
    { "max-position-embeddings", G3_OPT_INT, NULL, "Position embeddings (default: --seq-length).", G3_NOOPT },
    { "make-vocab-size-divisible-by", G3_OPT_INT, "128", "Pad the vocabulary to a multiple of this x tensor-parallel size.", G3_NOOPT },
    { "init-method-std", G3_OPT_FLOAT, "0.02", "Std of the normal initialisation; output projections use std/sqrt(2 x layers).", G3_NOOPT },
    { "layernorm-epsilon", G3_OPT_FLOAT, "1e-5", "LayerNorm epsilon.", G3_NOOPT },
    { "recompute-activations", G3_OPT_BOOL, NULL, "Keep only each layer's input and recompute the layer in backward.", G3_NOOPT },
    { "recompute-granularity", G3_OPT_CHOICE, NULL, "Recompute in backward: full (each layer from its input, = --recompute-activations) or selective (the attention core only; saves nothing with --device cuda, whose fused attention never keeps the scores).", "full|selective", 0, 0, NULL },
    G3_TRAIN_BACKEND_SPECS,
    /* batches and length */
    { "micro-batch-size", G3_OPT_INT, "4", "Sequences per forward/backward pass.", G3_NOOPT },
    { "global-batch-size", G3_OPT_INT, NULL, "Sequences per optimizer step (default: micro batch x data-parallel size); gradients accumulate over micro-batches.", G3_NOOPT },
    { "rampup-batch-size", G3_OPT_LIST, NULL, "Grow the global batch from START by INCR over SAMPLES samples (needs --train-samples).", NULL, 3, 3, "START INCR SAMPLES" },
    { "train-iters", G3_OPT_INT, NULL, "Iterations to train (or give --train-samples).", G3_NOOPT },
    { "train-samples", G3_OPT_INT, NULL, "Samples to train on (or give --train-iters).", G3_NOOPT },
    /* optimizer and schedule */
    { "lr", G3_OPT_FLOAT, "6e-4", "Peak learning rate.", G3_NOOPT },
    { "min-lr", G3_OPT_FLOAT, "0", "Learning rate at the end of the decay.", G3_NOOPT },
    { "lr-decay-style", G3_OPT_CHOICE, "linear", "Learning-rate decay after the warm-up.", "cosine|linear|constant", 0, 0, NULL },
    { "lr-warmup-iters", G3_OPT_INT, "0", "Linear warm-up iterations (with --train-iters).", G3_NOOPT },
    { "lr-warmup-samples", G3_OPT_INT, "0", "Linear warm-up samples (with --train-samples).", G3_NOOPT },
    { "lr-warmup-fraction", G3_OPT_FLOAT, NULL, "Warm-up as a fraction of the decay length.", G3_NOOPT },
    { "lr-decay-iters", G3_OPT_INT, NULL, "Iterations to decay over (default: --train-iters).", G3_NOOPT },
    { "lr-decay-samples", G3_OPT_INT, NULL, "Samples to decay over (default: --train-samples).", G3_NOOPT },
    { "adam-beta1", G3_OPT_FLOAT, "0.9", "AdamW beta1.", G3_NOOPT },
    { "adam-beta2", G3_OPT_FLOAT, "0.999", "AdamW beta2.", G3_NOOPT },
    { "adam-eps", G3_OPT_FLOAT, "1e-8", "AdamW epsilon.", G3_NOOPT },
    { "weight-decay", G3_OPT_FLOAT, "0.01", "Decoupled weight decay (not on biases or LayerNorm).", G3_NOOPT },
    { "clip-grad", G3_OPT_FLOAT, "1.0", "Clip the global gradient norm to this (0: off).", G3_NOOPT },
    { "seed", G3_OPT_INT, "1234", "Seed of the initial weights, data order and sampling.", G3_NOOPT },
    /* evaluation, logging, output */
    { "eval-interval", G3_OPT_INT, "1000", "Iterations between validation runs.", G3_NOOPT },
    { "eval-iters", G3_OPT_INT, "100", "Global batches of the validation split per evaluation (0: none).", G3_NOOPT },
    { "eval-tasks", G3_OPT_STRING, NULL, "Zero- and few-shot tasks at each --eval-interval and at the end: NAME:FILE[:K],... (docs/evaluation.md).", NULL, 0, 0, "SPEC" },
    { "log-interval", G3_OPT_INT, "10", "Iterations between progress lines.", G3_NOOPT },
    { "run-dir", G3_OPT_STRING, NULL, "Directory for this run's files (metrics.jsonl; default: --save, else gpt3d-run in the directory gpt3d is started from).", NULL, 0, 0, "DIR" },
    { "metrics-file", G3_OPT_STRING, NULL, "JSON-lines metrics (default: RUN_DIR/metrics.jsonl).", NULL, 0, 0, "FILE" },
    { "tensorboard-dir", G3_OPT_STRING, NULL, "Write TensorBoard event files here (a new file per run; a resumed run continues the curves): lm loss, learning rate, batch size, grad norm, validation loss, throughput (docs/training.md).", NULL, 0, 0, "DIR" },
    { "tensorboard-log-interval", G3_OPT_INT, "1", "Iterations between the per-iteration TensorBoard scalars (lm loss, learning-rate, batch-size, grad-norm).", G3_NOOPT },
    { "log-validation-ppl-to-tensorboard", G3_OPT_BOOL, NULL, "Also write the validation perplexity to TensorBoard.", G3_NOOPT },
    { "log-timers-to-tensorboard", G3_OPT_BOOL, NULL, "Also write the --timing-log-level timers to TensorBoard (NAME-time, the max over the ranks, seconds per iteration).", G3_NOOPT },
    { "log-memory-to-tensorboard", G3_OPT_BOOL, NULL, "Also write the memory of the writing rank to TensorBoard (peak resident bytes, model state, activations).", G3_NOOPT },
    /* data */
    { "data-path", G3_OPT_LIST, NULL, "Dataset prefix(es) PREFIX or W1 PREFIX1 W2 PREFIX2... (default: the built-in KJV corpus).", NULL, 1, 0, "[W] PREFIX..." },
    { "split", G3_OPT_STRING, "969,30,1", "Train,valid,test proportions of the documents.", G3_NOOPT },
    { "vocab-file", G3_OPT_STRING, NULL, "GPT-2 vocabulary, encoder.json or vocab.json (default: the built-in corpus's).", NULL, 0, 0, "FILE" },
    { "merge-file", G3_OPT_STRING, NULL, "GPT-2 merges, vocab.bpe or merges.txt (default: the built-in corpus's).", NULL, 0, 0, "FILE" },
    { "data-cache-path", G3_OPT_STRING, NULL, "Where sample indices are cached (default: beside the data).", NULL, 0, 0, "DIR" },
    { "allow-tokenizer-mismatch", G3_OPT_BOOL, NULL, "Train although a dataset's or the checkpoint's recorded tokenizer files differ from --vocab-file/--merge-file (a warning instead of an error).", G3_NOOPT },
    /* parallel layout and checkpoints */
    G3_TRAIN_LAYOUT_SPECS,
    { "use-distributed-optimizer", G3_OPT_BOOL, NULL, "Shard the Adam state and the reduced gradients over the data-parallel ranks (ZeRO-1).", G3_NOOPT },
    { "grad-reduce-in-bf16", G3_OPT_BOOL, NULL, "Reduce the gradients over the data-parallel ranks in bf16 (half the bytes; fp32 accumulation and Adam stay).", G3_NOOPT },
    { "ddp-bucket-size", G3_OPT_INT, NULL, "Reduce the gradients over the data-parallel ranks in buckets of about N elements, last layers first (default with --overlap-grad-reduce: max(40M, 1M x DP); unset otherwise: one reduction per segment).", NULL, 0, 0, "N" },
    { "overlap-grad-reduce", G3_OPT_BOOL, NULL, "Start each bucket's data-parallel gradient reduction as soon as the last micro-batch's backward has produced it (overlaps the backward pass).", G3_NOOPT },
    { "overlap-param-gather", G3_OPT_BOOL, NULL, "With --use-distributed-optimizer and --overlap-grad-reduce: wait for each bucket's parameter all-gather only at its first use in the next forward pass.", G3_NOOPT },
    /* --distributed-backend and --timing-log-level (docs/comm.md, docs/training.md) */
    { "distributed-backend", G3_OPT_CHOICE, "nccl", "How --device cuda moves tensors between ranks: nccl (one rank per GPU) or ucx (through page-locked host memory and the UCX collectives; several ranks may share a GPU). --device cpu always uses UCX.", "nccl|ucx", 0, 0, NULL },
    { "timing-log-level", G3_OPT_CHOICE, "0", "Per-operation timers at each --log-interval: 0 none, 1 forward-backward, optimizer, data, checkpoint and each communication group, 2 also forward/backward compute and the gradient reduction (min/max over ranks; also in the metrics file).", "0|1|2", 0, 0, NULL },
    /* interleaved 1F1B (issue 19) */
    { "virtual-pipeline-model-parallel-size", G3_OPT_INT, NULL, "Interleaved 1F1B: model chunks per pipeline stage V (stage r holds layers (c x PP + r) x L / (PP x V) ... for c < V); the bubble shrinks by V for V times more pipeline transfers. Needs PP > 1, layers divisible by PP x V, micro-batches per DP rank a multiple of PP.", G3_NOOPT },
    { "num-layers-per-virtual-pipeline-stage", G3_OPT_INT, NULL, "Interleaved 1F1B given as layers per model chunk N: V = layers / (PP x N).", G3_NOOPT },
    { "sequence-parallel", G3_OPT_BOOL, NULL, "Shard the LayerNorms, the residual stream and the embedding output over the tensor-parallel ranks along the tokens (TP all-reduces become reduce-scatter + all-gather): their activation memory drops by TP. Needs TP > 1.", G3_NOOPT },
    { "debug-grad-dump", G3_OPT_STRING, NULL, "Tests: write each rank's reduced gradients of iteration 1, and its parameters and Adam moments at the end, to DIR (see docs/parallelism.md).", NULL, 0, 0, "DIR" },
    { "save", G3_OPT_STRING, NULL, "Checkpoint directory to save to (at --save-interval, on request and at the end).", NULL, 0, 0, "DIR" },
    { "load", G3_OPT_STRING, NULL, "Checkpoint directory to resume from (its latest checkpoint; none there yet: start from scratch).", NULL, 0, 0, "DIR" },
    { "save-interval", G3_OPT_INT, "0", "Iterations between checkpoints (0: only at the end and on request).", G3_NOOPT },
    { "keep-last", G3_OPT_INT, "0", "After each save keep only the newest N checkpoints (0: keep all).", G3_NOOPT },
    G3_TRAIN_LOAD_FALLBACK_SPEC,
    { "no-save-optim", G3_OPT_BOOL, NULL, "Save the model only (no Adam state: such a checkpoint cannot resume exactly).", G3_NOOPT },
    { "no-load-optim", G3_OPT_BOOL, NULL, "Load the model only; the Adam state starts from zero.", G3_NOOPT },
    { "async-save", G3_OPT_BOOL, NULL, "Write the --save-interval checkpoints from a background thread while training goes on (the log reports the stall).", G3_NOOPT },
    { "exit-signal", G3_OPT_CHOICE, "SIGUSR2", "On this signal save a checkpoint at the next step boundary and exit 75 (requeue).", "SIGUSR2|SIGUSR1|SIGTERM", 0, 0, NULL },
    { "exit-duration-in-mins", G3_OPT_FLOAT, "0", "After this many minutes of training save and exit 75 (0: never).", G3_NOOPT },
    { "exit-interval", G3_OPT_INT, "0", "Save and exit 75 when the iteration is a multiple of this (0: never).", G3_NOOPT },
    /* the text sample at the end */
    { "sample-tokens", G3_OPT_INT, "0", "After training, generate this many tokens after --prompt.", G3_NOOPT },
    { "prompt", G3_OPT_STRING, "And God said", "Prompt of the text sample.", G3_NOOPT },
    { "top-k", G3_OPT_INT, "1", "Sample among the k likeliest tokens (1: greedy, the default; 0: all tokens, as in Megatron-LM and gpt3d generate).", G3_NOOPT },
    { "temperature", G3_OPT_FLOAT, "1.0", "Softmax temperature of the sample (with --top-k other than 1).", G3_NOOPT },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

/* An int flag within lo .. hi (g3_train_flags_int with an upper bound). */
static int g3_train_flags_range(const g3_opts_t *o, const char *name, int64_t lo, int hi,
                                int *out)
{
    int64_t v = g3_opts_int(o, name);
    if (v < lo || v > hi) {
        g3_error("--%s %lld is out of range (%lld .. %d)", name, (long long)v, (long long)lo, hi);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int g3_train_flags_int(const g3_opts_t *o, const char *name, int64_t lo, int *out)
{
    return g3_train_flags_range(o, name, lo, INT_MAX, out);
}

/* The uneven pipeline split lf gives (0: even), into m. */
static void g3_train_flags_split(const g3_train_layout_flags_t *lf, g3_gpt_config_t *m)
{
    m->pp_first_layers = lf->pp_first;
    m->pp_last_layers = lf->pp_last;
}

int g3_train_flags_layout(const g3_opts_t *o, g3_train_layout_flags_t *lf)
{
    int ok = 1;

    memset(lf, 0, sizeof(*lf));
    ok &= g3_train_flags_int(o, "tensor-model-parallel-size", 1, &lf->tp);
    ok &= g3_train_flags_int(o, "pipeline-model-parallel-size", 1, &lf->pp);
    /* gpt3d topo maps ranks to nodes and has no layers to split */
    if (g3_opts_declared(o, "decoder-first-pipeline-num-layers") &&
        g3_opts_is_set(o, "decoder-first-pipeline-num-layers"))
        ok &= g3_train_flags_int(o, "decoder-first-pipeline-num-layers", 1, &lf->pp_first);
    if (g3_opts_declared(o, "decoder-last-pipeline-num-layers") &&
        g3_opts_is_set(o, "decoder-last-pipeline-num-layers"))
        ok &= g3_train_flags_int(o, "decoder-last-pipeline-num-layers", 1, &lf->pp_last);
    lf->timeout_min = g3_opts_float(o, "distributed-timeout-minutes");
    if (!(lf->timeout_min > 0.0)) {
        g3_error("--distributed-timeout-minutes must be positive (got %g)", lf->timeout_min);
        ok = 0;
    }
    lf->topology_file = g3_opts_str(o, "topology-file");
    lf->tp_given = g3_opts_is_set(o, "tensor-model-parallel-size");
    lf->pp_given = g3_opts_is_set(o, "pipeline-model-parallel-size");
    return ok;
}

double g3_train_flags_timeout_s(const g3_opts_t *o)
{
    double min = g3_opts_float(o, "distributed-timeout-minutes");
    return min > 0.0 ? min * 60.0 : 600.0;
}

int g3_train_flags_job_layout(int world, const g3_train_layout_flags_t *lf, g3_gpt_config_t *m,
                              g3_par_layout_t *l)
{
    memset(l, 0, sizeof(*l));   /* world rank 0: every coordinate 0 */
    if (!g3_train_flags_dp(world, lf->tp, lf->pp, &l->dp))
        return 0;
    l->world_size = world;
    l->tp = lf->tp;
    l->pp = lf->pp;
    g3_par_layout_shard(l, m);
    g3_train_flags_split(lf, m);
    return 1;
}

void g3_train_flags_tokenizer(const g3_opts_t *o, g3_train_data_flags_t *d)
{
    d->vocab_file = g3_opts_str(o, "vocab-file");
    d->merge_file = g3_opts_str(o, "merge-file");
    d->allow_tokenizer_mismatch = g3_opts_bool(o, "allow-tokenizer-mismatch");
}

void g3_train_flags_data(const g3_opts_t *o, g3_train_data_flags_t *d)
{
    d->data_path = NULL;
    d->data_path_count = 0;
    if (g3_opts_is_set(o, "data-path"))
        d->data_path_count = g3_opts_list(o, "data-path", &d->data_path);
    d->split = g3_opts_str(o, "split");
    d->data_cache_path = g3_opts_str(o, "data-cache-path");
}

int g3_train_flags_backend(const g3_opts_t *o, g3_be_kind_t *kind_p, g3_be_opts_t *be_opts)
{
    char why[256];
    int ok = 1;

    if (g3_be_kind_parse(g3_opts_str(o, "device"), kind_p, why, sizeof(why)) != G3_OK) {
        g3_error("%s", why);
        ok = 0;
    }
    if (g3_be_att_parse(g3_opts_str(o, "attention-backend"), &be_opts->attention) != G3_OK) {
        g3_error("--attention-backend %s: use auto, native or cudnn",
                 g3_opts_str(o, "attention-backend"));
        ok = 0;
    }
    be_opts->deterministic = g3_opts_bool(o, "deterministic");
    return ok;
}

int g3_train_flags_probe(g3_be_kind_t kind, const g3_be_opts_t *be_opts, int elsewhere)
{
    char why[1024];
    g3_status_t st = g3_be_probe(kind, be_opts, why, sizeof(why));

    if (st != G3_OK && elsewhere && st != G3_ERR_UNSUPPORTED)
        st = G3_OK;   /* no GPU here (a login node); the build's support is what counts */
    if (st != G3_OK) {
        g3_error("%s", why);
        return st == G3_ERR_UNSUPPORTED ? G3_EXIT_USAGE : G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

int g3_train_flags_seed(int64_t seed)
{
    if (seed < 0 || seed > (int64_t)UINT32_MAX) {
        g3_error("--seed %lld is out of range (0 .. 4294967295): the data shuffles use numpy's 32-bit seeding, as Megatron does", (long long)seed);
        return 0;
    }
    return 1;
}

/* The model flags.  OUT: cfg->model.  RET: 1, or 0 (logged). */
static int g3_train_flags_model(const g3_opts_t *o, g3_gpt_config_t *m)
{
    int ok = 1;

    ok &= g3_train_flags_range(o, "num-layers", 1, G3_TRAIN_MAX_LAYERS, &m->num_layers);
    ok &= g3_train_flags_int(o, "hidden-size", 1, &m->hidden_size);
    ok &= g3_train_flags_int(o, "num-attention-heads", 1, &m->num_attention_heads);
    if (g3_opts_is_set(o, "ffn-hidden-size"))
        ok &= g3_train_flags_int(o, "ffn-hidden-size", 1, &m->ffn_hidden_size);
    ok &= g3_train_flags_int(o, "seq-length", 1, &m->seq_length);
    if (g3_opts_is_set(o, "max-position-embeddings"))
        ok &= g3_train_flags_int(o, "max-position-embeddings", 1, &m->max_position_embeddings);
    ok &= g3_train_flags_int(o, "make-vocab-size-divisible-by", 1,
                             &m->make_vocab_size_divisible_by);
    m->init_method_std = (float)g3_opts_float(o, "init-method-std");
    m->layernorm_epsilon = (float)g3_opts_float(o, "layernorm-epsilon");
    m->recompute_activations = g3_opts_bool(o, "recompute-activations");
    if (g3_opts_is_set(o, "recompute-granularity"))
        m->recompute_granularity = strcmp(g3_opts_str(o, "recompute-granularity"), "full") == 0
                                       ? G3_GPT_RECOMPUTE_FULL : G3_GPT_RECOMPUTE_SELECTIVE;
    ok &= g3_train_flags_seed(g3_opts_int(o, "seed"));
    m->seed = (uint64_t)g3_opts_int(o, "seed");
    m->vocab_size = 1;   /* checked against the vocabulary file later */
    return ok;
}

/* The interleaved schedule: --virtual-pipeline-model-parallel-size, or V from
 * --num-layers-per-virtual-pipeline-stage (both: they must agree); prior: the flags before
 * were good.  OUT: m->virtual_pp_size.  RET: 1, or 0 (logged). */
static int g3_train_flags_vpp(const g3_opts_t *o, int prior, int pp, g3_gpt_config_t *m)
{
    int ok = 1, n = 0, L = m->num_layers;

    if (g3_opts_is_set(o, "virtual-pipeline-model-parallel-size"))
        ok &= g3_train_flags_int(o, "virtual-pipeline-model-parallel-size", 1,
                                 &m->virtual_pp_size);
    if (!(ok && prior) || !g3_opts_is_set(o, "num-layers-per-virtual-pipeline-stage"))
        return ok;
    if (!g3_train_flags_int(o, "num-layers-per-virtual-pipeline-stage", 1, &n))
        return 0;
    if (L % ((int64_t)pp * n) != 0) {
        g3_error("--num-layers-per-virtual-pipeline-stage %d: --num-layers %d is not a multiple of --pipeline-model-parallel-size %d x %d, so the model chunks cannot all have %d layers; change one of them", n, L, pp, n, n);
        return 0;
    }
    if (m->virtual_pp_size > 0 && m->virtual_pp_size != L / (pp * n)) {
        g3_error(
            "--num-layers-per-virtual-pipeline-stage %d gives %d model chunks per stage (%d layers / (PP %d x %d)) but --virtual-pipeline-model-parallel-size says %d; give only one of them",
            n, L / (pp * n), L, pp, n, m->virtual_pp_size);
        return 0;
    }
    m->virtual_pp_size = L / (pp * n);
    return 1;
}

/* The layout flags, the schedule over them and the data-parallel gradient flags; prior: the
 * flags before were good.  OUT: cfg, *lf.  RET: 1, or 0 (logged). */
static int g3_train_flags_parallel(const g3_opts_t *o, int prior, g3_train_config_t *cfg,
                                   g3_train_layout_flags_t *lf)
{
    int ok = g3_train_flags_layout(o, lf);

    g3_train_flags_split(lf, &cfg->model);

    cfg->model.sequence_parallel = g3_opts_bool(o, "sequence-parallel");
    lf->sp_given = g3_opts_is_set(o, "sequence-parallel");
    lf->vpp_given = g3_opts_is_set(o, "virtual-pipeline-model-parallel-size") ||
                    g3_opts_is_set(o, "num-layers-per-virtual-pipeline-stage");
    ok &= g3_train_flags_vpp(o, ok && prior, lf->pp, &cfg->model);
    cfg->distributed_optimizer = g3_opts_bool(o, "use-distributed-optimizer");
    cfg->grad_reduce_bf16 = g3_opts_bool(o, "grad-reduce-in-bf16");
    cfg->overlap_grad_reduce = g3_opts_bool(o, "overlap-grad-reduce");
    cfg->overlap_param_gather = g3_opts_bool(o, "overlap-param-gather");
    if (g3_opts_is_set(o, "ddp-bucket-size")) {
        cfg->ddp_bucket_size = g3_opts_int(o, "ddp-bucket-size");
        if (cfg->ddp_bucket_size <= 0) {
            g3_error("--ddp-bucket-size must be positive (got %lld elements)",
                     (long long)cfg->ddp_bucket_size);
            ok = 0;
        }
    }
    if (cfg->overlap_param_gather &&
        (!cfg->distributed_optimizer || !cfg->overlap_grad_reduce)) {
        g3_error(
            "--overlap-param-gather needs --use-distributed-optimizer and --overlap-grad-reduce (as in Megatron-LM); add them or drop it");
        ok = 0;
    }
    cfg->grad_dump_dir = g3_opts_str(o, "debug-grad-dump");
    return ok;
}

/* The batch and length flags.  OUT: cfg.  RET: 1, or 0 (logged). */
static int g3_train_flags_batch(const g3_opts_t *o, g3_train_config_t *cfg)
{
    char *const *list;
    int ok = 1;

    cfg->micro_batch_size = g3_opts_int(o, "micro-batch-size");
    cfg->global_batch_size = g3_opts_is_set(o, "global-batch-size")
                                 ? g3_opts_int(o, "global-batch-size") : 0;
    if (g3_opts_is_set(o, "global-batch-size") && cfg->global_batch_size < 1) {
        g3_error("--global-batch-size must be at least 1 (got %lld)",
                 (long long)cfg->global_batch_size);
        ok = 0;
    }
    if (cfg->micro_batch_size > INT_MAX) {
        g3_error("--micro-batch-size %lld is too large", (long long)cfg->micro_batch_size);
        ok = 0;
    }
    if (g3_opts_list(o, "rampup-batch-size", &list) == 3) {
        for (int i = 0; i < 3; i++) {
            char *end;
            errno = 0;
            cfg->rampup[i] = strtoll(list[i], &end, 10);
            if (errno || *end || end == list[i]) {
                g3_error("--rampup-batch-size: '%s' is not an integer (give START INCR SAMPLES)",
                         list[i]);
                ok = 0;
            }
        }
        if (ok && cfg->rampup[0] < 1) {
            g3_error("--rampup-batch-size: the start batch size must be at least 1 (got %lld)",
                     (long long)cfg->rampup[0]);
            ok = 0;
        }
    }
    cfg->train_iters = g3_opts_is_set(o, "train-iters") ? g3_opts_int(o, "train-iters") : 0;
    cfg->train_samples = g3_opts_is_set(o, "train-samples") ? g3_opts_int(o, "train-samples")
                                                             : 0;
    if ((g3_opts_is_set(o, "train-iters") && cfg->train_iters < 1) ||
        (g3_opts_is_set(o, "train-samples") && cfg->train_samples < 1)) {
        g3_error("--train-iters and --train-samples must be at least 1");
        ok = 0;
    }
    return ok;
}

/* The learning-rate schedule and AdamW.  OUT: cfg.  RET: 1, or 0 (logged). */
static int g3_train_flags_schedule(const g3_opts_t *o, g3_train_config_t *cfg)
{
    int ok = 1;

    cfg->lr = g3_opts_float(o, "lr");
    cfg->min_lr = g3_opts_float(o, "min-lr");
    g3_train_lr_decay_parse(g3_opts_str(o, "lr-decay-style"), &cfg->lr_decay_style);
    cfg->lr_warmup_iters = g3_opts_int(o, "lr-warmup-iters");
    cfg->lr_warmup_samples = g3_opts_int(o, "lr-warmup-samples");
    if (g3_opts_is_set(o, "lr-warmup-fraction")) {
        cfg->lr_warmup_fraction = g3_opts_float(o, "lr-warmup-fraction");
        if (cfg->lr_warmup_fraction < 0.0) {
            g3_error("--lr-warmup-fraction must be in [0, 1] (got %g)",
                     cfg->lr_warmup_fraction);
            ok = 0;
        }
    }
    if (g3_opts_is_set(o, "lr-decay-iters")) {
        cfg->lr_decay_iters = g3_opts_int(o, "lr-decay-iters");
        if (cfg->lr_decay_iters < 1) {
            g3_error("--lr-decay-iters must be at least 1");
            ok = 0;
        }
    }
    if (g3_opts_is_set(o, "lr-decay-samples")) {
        cfg->lr_decay_samples = g3_opts_int(o, "lr-decay-samples");
        if (cfg->lr_decay_samples < 1) {
            g3_error("--lr-decay-samples must be at least 1");
            ok = 0;
        }
    }
    cfg->adamw.beta1 = g3_opts_float(o, "adam-beta1");
    cfg->adamw.beta2 = g3_opts_float(o, "adam-beta2");
    cfg->adamw.eps = g3_opts_float(o, "adam-eps");
    cfg->adamw.weight_decay = g3_opts_float(o, "weight-decay");
    cfg->adamw.clip_grad = g3_opts_float(o, "clip-grad");
    return ok;
}

/* Evaluation, logging, TensorBoard and the text sample.  OUT: cfg.  RET: 1, or 0 (logged). */
static int g3_train_flags_output(const g3_opts_t *o, g3_train_config_t *cfg)
{
    int ok = 1;

    cfg->eval_interval = g3_opts_int(o, "eval-interval");
    cfg->eval_iters = g3_opts_int(o, "eval-iters");
    cfg->eval_tasks = g3_opts_str(o, "eval-tasks");
    cfg->log_interval = g3_opts_int(o, "log-interval");
    cfg->tensorboard_dir = g3_opts_str(o, "tensorboard-dir");
    cfg->tensorboard_log_interval = g3_opts_int(o, "tensorboard-log-interval");
    cfg->log_validation_ppl = g3_opts_bool(o, "log-validation-ppl-to-tensorboard");
    cfg->log_timers = g3_opts_bool(o, "log-timers-to-tensorboard");
    cfg->log_memory = g3_opts_bool(o, "log-memory-to-tensorboard");
    if (cfg->tensorboard_log_interval < 1) {
        g3_error("--tensorboard-log-interval must be at least 1 (got %lld)",
                 (long long)cfg->tensorboard_log_interval);
        ok = 0;
    }
    if (!cfg->tensorboard_dir && (cfg->log_validation_ppl || cfg->log_timers || cfg->log_memory ||
                                  g3_opts_is_set(o, "tensorboard-log-interval"))) {
        g3_error("--tensorboard-log-interval and the --log-*-to-tensorboard flags need --tensorboard-dir DIR");
        ok = 0;
    }
    ok &= g3_train_flags_int(o, "sample-tokens", 0, &cfg->sample_tokens);
    ok &= g3_train_flags_int(o, "top-k", 0, &cfg->top_k);
    cfg->temperature = g3_opts_float(o, "temperature");
    cfg->prompt = g3_opts_str(o, "prompt");
    return ok;
}

/* The compute backend, how its tensors move between ranks, the timers.  OUT: cfg.
 * RET: 1, or 0 (logged). */
static int g3_train_flags_device(const g3_opts_t *o, g3_train_config_t *cfg)
{
    int ok = g3_train_flags_backend(o, &cfg->backend, &cfg->be_opts);

    cfg->dist_ucx = strcmp(g3_opts_str(o, "distributed-backend"), "ucx") == 0;
    cfg->timing_log_level = atoi(g3_opts_str(o, "timing-log-level"));
    if (cfg->log_timers && cfg->timing_log_level == 0) {
        g3_error("--log-timers-to-tensorboard writes the timers of --timing-log-level, which is 0 (no timers); add --timing-log-level 1 or 2");
        ok = 0;
    }
    if (g3_opts_is_set(o, "distributed-backend") && !cfg->dist_ucx &&
        (g3_be_kind(cfg->backend)->caps & G3_BE_CAP_HOST_MEMORY)) {
        g3_error("--distributed-backend nccl moves GPU tensors, and --device cpu keeps them in host memory, which always moves over UCX; drop the flag (or pass ucx), or use --device cuda");
        ok = 0;
    }
    return ok;
}

int g3_train_flags_read(const g3_opts_t *o, g3_train_config_t *cfg,
                        g3_train_layout_flags_t *lf)
{
    int ok = g3_train_flags_model(o, &cfg->model);

    ok &= g3_train_flags_parallel(o, ok, cfg, lf);
    ok &= g3_train_flags_batch(o, cfg);
    ok &= g3_train_flags_schedule(o, cfg);
    ok &= g3_train_flags_output(o, cfg);
    ok &= g3_train_flags_device(o, cfg);
    return ok;
}

int g3_train_flags_dp(int world, int tp, int pp, int *dp_p)
{
    char why[512];

    if (!g3_par_dp_size(world, tp, pp, dp_p, why, sizeof(why))) {
        g3_error("impossible layout: %s", why);
        return 0;
    }
    return 1;
}

int g3_train_flags_ckpt(const g3_opts_t *o, g3_train_config_t *cfg)
{
    int ok = 1;

    cfg->save_dir = g3_opts_str(o, "save");
    cfg->load_dir = g3_opts_str(o, "load");
    cfg->save_interval = g3_opts_int(o, "save-interval");
    cfg->exit_interval = g3_opts_int(o, "exit-interval");
    cfg->exit_duration_mins = g3_opts_float(o, "exit-duration-in-mins");
    cfg->load_fallback = g3_opts_bool(o, "load-fallback");
    cfg->no_save_optim = g3_opts_bool(o, "no-save-optim");
    cfg->no_load_optim = g3_opts_bool(o, "no-load-optim");
    cfg->async_save = g3_opts_bool(o, "async-save");
    ok &= g3_train_flags_int(o, "keep-last", 0, &cfg->keep_last);
    if (cfg->save_interval < 0 || cfg->exit_interval < 0 || !(cfg->exit_duration_mins >= 0.0)) {
        g3_error(
            "--save-interval, --exit-interval and --exit-duration-in-mins must not be negative");
        ok = 0;
    }
    if (!cfg->save_dir && (cfg->save_interval > 0 || cfg->keep_last > 0 || cfg->no_save_optim ||
                           cfg->async_save)) {
        g3_error("--save-interval, --keep-last, --no-save-optim and --async-save need --save DIR");
        ok = 0;
    }
    if (!cfg->load_dir && (cfg->load_fallback || cfg->no_load_optim)) {
        g3_error("--load-fallback and --no-load-optim need --load DIR");
        ok = 0;
    }
    return ok;
}
