/* gpt3d train: defaults and checks of the training configuration, and the plan it implies
 * (Megatron-LM's conversions between iterations and samples). */
#include "config.h"

#include <string.h>

#include "core/log.h"
#include "train/train.h"

void g3_train_config_defaults(g3_train_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    g3_gpt_config_defaults(&cfg->model);
    cfg->micro_batch_size = 1;
    cfg->dp_size = 1;
    cfg->lr = 6e-4;
    cfg->lr_warmup_fraction = -1.0;
    cfg->lr_decay_iters = -1;
    cfg->lr_decay_samples = -1;
    cfg->lr_decay_style = G3_LR_DECAY_LINEAR;
    cfg->adamw.beta1 = 0.9;
    cfg->adamw.beta2 = 0.999;
    cfg->adamw.eps = 1e-8;
    cfg->adamw.weight_decay = 0.01;
    cfg->adamw.clip_grad = 1.0;
    cfg->eval_interval = 1000;
    cfg->eval_iters = 100;
    cfg->log_interval = 10;
    cfg->tensorboard_log_interval = 1;
    cfg->top_k = 1;   /* greedy; 0 samples among all tokens */
    cfg->temperature = 1.0;
    cfg->backend = G3_BE_KIND_CPU;
    g3_be_opts_default(&cfg->be_opts);
}

/* One refusal of g3_train_plan: log the message and set the function's st (every bad flag is
 * reported before it returns). */
#define G3_FAIL(...)                 \
    do {                             \
        g3_error(__VA_ARGS__);       \
        st = G3_ERR_INVALID_ARG;     \
    } while (0)

g3_status_t g3_train_plan(const g3_train_config_t *cfg, g3_train_plan_t *plan)
{
    g3_status_t st = G3_OK;
    int64_t mdp = cfg->micro_batch_size * (cfg->dp_size > 0 ? cfg->dp_size : 1);
    int64_t gbs = cfg->global_batch_size > 0 ? cfg->global_batch_size : mdp;
    int64_t warmup, decay;
    g3_train_plan_t p;

    memset(&p, 0, sizeof(p));
    if (cfg->micro_batch_size < 1)
        G3_FAIL("--micro-batch-size must be at least 1 (got %lld)", (long long)cfg->micro_batch_size);
    if (cfg->global_batch_size < 0)
        G3_FAIL("--global-batch-size must be positive (got %lld)", (long long)cfg->global_batch_size);
    if (st != G3_OK)
        return st;
    if (gbs % mdp != 0)
        G3_FAIL(
            "--global-batch-size %lld is not divisible by --micro-batch-size %lld x data-parallel size %d = %lld: each data-parallel rank runs whole micro-batches; use a multiple of %lld",
            (long long)gbs, (long long)cfg->micro_batch_size, cfg->dp_size, (long long)mdp,
            (long long)mdp);
    if ((cfg->train_iters > 0) == (cfg->train_samples > 0))
        G3_FAIL(
            "give exactly one of --train-iters and --train-samples (a positive count) to say how long to train");
    if (cfg->train_iters < 0 || cfg->train_samples < 0)
        G3_FAIL("--train-iters and --train-samples must be positive");
    if (!(cfg->lr >= 0.0) || !(cfg->min_lr >= 0.0))
        G3_FAIL("--lr and --min-lr must be >= 0 (got %g and %g)", cfg->lr, cfg->min_lr);
    else if (cfg->min_lr > cfg->lr)
        G3_FAIL("--min-lr %g is above --lr %g: the schedule decays from --lr down to --min-lr",
                cfg->min_lr, cfg->lr);
    if (cfg->lr_warmup_iters < 0 || cfg->lr_warmup_samples < 0)
        G3_FAIL("--lr-warmup-iters and --lr-warmup-samples must be >= 0");
    if (cfg->lr_warmup_fraction >= 0.0 && (cfg->lr_warmup_iters > 0 || cfg->lr_warmup_samples > 0))
        G3_FAIL("give only one of --lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples");
    if (cfg->lr_warmup_fraction > 1.0)
        G3_FAIL("--lr-warmup-fraction must be in [0, 1] (got %g)", cfg->lr_warmup_fraction);
    if (cfg->train_iters > 0) {
        /* iteration-based: Megatron refuses the sample-based flags */
        if (cfg->lr_decay_samples >= 0 || cfg->lr_warmup_samples > 0)
            G3_FAIL(
                "--lr-decay-samples/--lr-warmup-samples go with --train-samples; with --train-iters use --lr-decay-iters/--lr-warmup-iters");
        if (cfg->rampup[0] > 0)
            G3_FAIL(
                "--rampup-batch-size needs sample-based training: give --train-samples instead of --train-iters (as Megatron-LM does)");
    } else if (cfg->train_samples > 0) {
        if (cfg->lr_decay_iters >= 0 || cfg->lr_warmup_iters > 0)
            G3_FAIL(
                "--lr-decay-iters/--lr-warmup-iters go with --train-iters; with --train-samples use --lr-decay-samples/--lr-warmup-samples");
    }
    if (cfg->lr_decay_iters == 0 || cfg->lr_decay_samples == 0)
        G3_FAIL("--lr-decay-iters/--lr-decay-samples must be positive");
    if (!(cfg->adamw.beta1 >= 0.0 && cfg->adamw.beta1 < 1.0) ||
        !(cfg->adamw.beta2 >= 0.0 && cfg->adamw.beta2 < 1.0))
        G3_FAIL("--adam-beta1 and --adam-beta2 must be in [0, 1) (got %g and %g)",
                cfg->adamw.beta1, cfg->adamw.beta2);
    if (!(cfg->adamw.eps > 0.0))
        G3_FAIL("--adam-eps must be > 0 (got %g)", cfg->adamw.eps);
    if (!(cfg->adamw.weight_decay >= 0.0))
        G3_FAIL("--weight-decay must be >= 0 (got %g)", cfg->adamw.weight_decay);
    if (!(cfg->adamw.clip_grad >= 0.0))
        G3_FAIL("--clip-grad must be >= 0 (0 turns clipping off; got %g)", cfg->adamw.clip_grad);
    if (cfg->log_interval < 1)
        G3_FAIL("--log-interval must be at least 1 (got %lld)", (long long)cfg->log_interval);
    if (cfg->eval_iters < 0 || cfg->eval_interval < 1)
        G3_FAIL("--eval-iters must be >= 0 and --eval-interval >= 1 (got %lld and %lld)",
                (long long)cfg->eval_iters, (long long)cfg->eval_interval);
    if (cfg->sample_tokens < 0 || cfg->top_k < 0 || !(cfg->temperature > 0.0))
        G3_FAIL("--sample-tokens and --top-k must be >= 0 and --temperature > 0");
    /* the samples each split's index holds (a refusal now, not an allocation that fails) */
    if (gbs > G3_TRAIN_MAX_SAMPLES)
        G3_FAIL("--global-batch-size %lld is out of range (1 .. %d)", (long long)gbs,
                G3_TRAIN_MAX_SAMPLES);
    else if (!g3_train_samples_fit("train-iters", cfg->train_iters, gbs) ||
             !g3_train_samples_fit("train-samples", cfg->train_samples, 1) ||
             !g3_train_samples_fit("eval-iters", cfg->eval_iters, gbs) ||
             !g3_train_samples_fit("rampup-batch-size", cfg->rampup[2], 1))
        st = G3_ERR_INVALID_ARG;
    if (st != G3_OK)
        return st;

    p.global_batch_size = gbs;
    p.rampup.global = gbs;
    if (cfg->rampup[0] > 0) {
        p.rampup.start = cfg->rampup[0];
        p.rampup.increment = cfg->rampup[1];
        p.rampup.ramp_samples = cfg->rampup[2];
        st = g3_train_rampup_check(&p.rampup, mdp);
        if (st != G3_OK)
            return st;
    }
    if (cfg->train_iters > 0) {
        p.train_iters = cfg->train_iters;
        decay = (cfg->lr_decay_iters > 0 ? cfg->lr_decay_iters : cfg->train_iters) * gbs;
        warmup = cfg->lr_warmup_fraction >= 0.0 ? (int64_t)(cfg->lr_warmup_fraction * decay)
                                                : cfg->lr_warmup_iters * gbs;
    } else {
        p.train_iters = g3_train_rampup_iters(&p.rampup, cfg->train_samples);
        decay = cfg->lr_decay_samples > 0 ? cfg->lr_decay_samples : cfg->train_samples;
        warmup = cfg->lr_warmup_fraction >= 0.0 ? (int64_t)(cfg->lr_warmup_fraction * decay)
                                                : cfg->lr_warmup_samples;
        if (p.train_iters < 1)
            G3_FAIL("--train-samples %lld is less than one global batch (%lld samples)",
                    (long long)cfg->train_samples, (long long)gbs);
    }
    if (warmup >= decay && cfg->lr_decay_style != G3_LR_DECAY_CONSTANT)
        G3_FAIL(
            "the learning-rate warm-up (%lld samples) must end before the decay does (%lld samples): shorten the warm-up or lengthen --lr-decay-iters/-samples",
            (long long)warmup, (long long)decay);
    if (st != G3_OK)
        return st;
    p.lr.max_lr = cfg->lr;
    p.lr.min_lr = cfg->min_lr;
    p.lr.warmup_samples = warmup;
    p.lr.decay_samples = decay;
    p.lr.style = cfg->lr_decay_style;
    *plan = p;
    return G3_OK;
}
