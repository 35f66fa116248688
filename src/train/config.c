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

/* The batch sizes, the run's length and the learning-rate flags and how they go together.
 * gbs: the global batch; mdp: micro batch x DP.  RET: 1, or 0 after logging every problem. */
static int g3_train_check_length(const g3_train_config_t *cfg, int64_t gbs, int64_t mdp)
{
    int ok = 1;

    if (gbs % mdp != 0) {
        g3_error(
            "--global-batch-size %lld is not divisible by --micro-batch-size %lld x data-parallel size %d = %lld: each data-parallel rank runs whole micro-batches; use a multiple of %lld",
            (long long)gbs, (long long)cfg->micro_batch_size, cfg->dp_size, (long long)mdp,
            (long long)mdp);
        ok = 0;
    }
    if ((cfg->train_iters > 0) == (cfg->train_samples > 0)) {
        g3_error(
            "give exactly one of --train-iters and --train-samples (a positive count) to say how long to train");
        ok = 0;
    }
    if (cfg->train_iters < 0 || cfg->train_samples < 0) {
        g3_error("--train-iters and --train-samples must be positive");
        ok = 0;
    }
    if (!(cfg->lr >= 0.0) || !(cfg->min_lr >= 0.0)) {
        g3_error("--lr and --min-lr must be >= 0 (got %g and %g)", cfg->lr, cfg->min_lr);
        ok = 0;
    } else if (cfg->min_lr > cfg->lr) {
        g3_error("--min-lr %g is above --lr %g: the schedule decays from --lr down to --min-lr",
                 cfg->min_lr, cfg->lr);
        ok = 0;
    }
    if (cfg->lr_warmup_iters < 0 || cfg->lr_warmup_samples < 0) {
        g3_error("--lr-warmup-iters and --lr-warmup-samples must be >= 0");
        ok = 0;
    }
    if (cfg->lr_warmup_fraction >= 0.0 &&
        (cfg->lr_warmup_iters > 0 || cfg->lr_warmup_samples > 0)) {
        g3_error("give only one of --lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples");
        ok = 0;
    }
    if (cfg->lr_warmup_fraction > 1.0) {
        g3_error("--lr-warmup-fraction must be in [0, 1] (got %g)", cfg->lr_warmup_fraction);
        ok = 0;
    }
    if (cfg->train_iters > 0) {
        /* iteration-based: Megatron refuses the sample-based flags */
        if (cfg->lr_decay_samples >= 0 || cfg->lr_warmup_samples > 0) {
            g3_error(
                "--lr-decay-samples/--lr-warmup-samples go with --train-samples; with --train-iters use --lr-decay-iters/--lr-warmup-iters");
            ok = 0;
        }
        if (cfg->rampup[0] > 0) {
            g3_error(
                "--rampup-batch-size needs sample-based training: give --train-samples instead of --train-iters (as Megatron-LM does)");
            ok = 0;
        }
    } else if (cfg->train_samples > 0) {
        if (cfg->lr_decay_iters >= 0 || cfg->lr_warmup_iters > 0) {
            g3_error(
                "--lr-decay-iters/--lr-warmup-iters go with --train-iters; with --train-samples use --lr-decay-samples/--lr-warmup-samples");
            ok = 0;
        }
    }
    if (cfg->lr_decay_iters == 0 || cfg->lr_decay_samples == 0) {
        g3_error("--lr-decay-iters/--lr-decay-samples must be positive");
        ok = 0;
    }
    return ok;
}

/* AdamW, the logging and evaluation intervals, the text sample, and the sample counts each
 * split's index will hold (a refusal now, not an allocation that fails).  gbs: the global
 * batch.  RET: 1, or 0 after logging every problem. */
static int g3_train_check_rest(const g3_train_config_t *cfg, int64_t gbs)
{
    int ok = 1;

    if (!(cfg->adamw.beta1 >= 0.0 && cfg->adamw.beta1 < 1.0) ||
        !(cfg->adamw.beta2 >= 0.0 && cfg->adamw.beta2 < 1.0)) {
        g3_error("--adam-beta1 and --adam-beta2 must be in [0, 1) (got %g and %g)",
                 cfg->adamw.beta1, cfg->adamw.beta2);
        ok = 0;
    }
    if (!(cfg->adamw.eps > 0.0)) {
        g3_error("--adam-eps must be > 0 (got %g)", cfg->adamw.eps);
        ok = 0;
    }
    if (!(cfg->adamw.weight_decay >= 0.0)) {
        g3_error("--weight-decay must be >= 0 (got %g)", cfg->adamw.weight_decay);
        ok = 0;
    }
    if (!(cfg->adamw.clip_grad >= 0.0)) {
        g3_error("--clip-grad must be >= 0 (0 turns clipping off; got %g)", cfg->adamw.clip_grad);
        ok = 0;
    }
    if (cfg->log_interval < 1) {
        g3_error("--log-interval must be at least 1 (got %lld)", (long long)cfg->log_interval);
        ok = 0;
    }
    if (cfg->eval_iters < 0 || cfg->eval_interval < 1) {
        g3_error("--eval-iters must be >= 0 and --eval-interval >= 1 (got %lld and %lld)",
                 (long long)cfg->eval_iters, (long long)cfg->eval_interval);
        ok = 0;
    }
    if (cfg->sample_tokens < 0 || cfg->top_k < 0 || !(cfg->temperature > 0.0)) {
        g3_error("--sample-tokens and --top-k must be >= 0 and --temperature > 0");
        ok = 0;
    }
    if (gbs > G3_TRAIN_MAX_SAMPLES) {
        g3_error("--global-batch-size %lld is out of range (1 .. %d)", (long long)gbs,
                 G3_TRAIN_MAX_SAMPLES);
        ok = 0;
    } else if (!g3_train_samples_fit("train-iters", cfg->train_iters, gbs) ||
               !g3_train_samples_fit("train-samples", cfg->train_samples, 1) ||
               !g3_train_samples_fit("eval-iters", cfg->eval_iters, gbs) ||
               !g3_train_samples_fit("rampup-batch-size", cfg->rampup[2], 1)) {
        ok = 0;
    }
    return ok;
}

g3_status_t g3_train_plan(const g3_train_config_t *cfg, g3_train_plan_t *plan)
{
    g3_status_t st;
    int64_t mdp = cfg->micro_batch_size * (cfg->dp_size > 0 ? cfg->dp_size : 1);
    int64_t gbs = cfg->global_batch_size > 0 ? cfg->global_batch_size : mdp;
    int64_t warmup, decay;
    int ok = 1;
    g3_train_plan_t p;

    memset(&p, 0, sizeof(p));
    if (cfg->micro_batch_size < 1) {
        g3_error("--micro-batch-size must be at least 1 (got %lld)", (long long)cfg->micro_batch_size);
        ok = 0;
    }
    if (cfg->global_batch_size < 0) {
        g3_error("--global-batch-size must be positive (got %lld)", (long long)cfg->global_batch_size);
        ok = 0;
    }
    if (!ok)
        return G3_ERR_INVALID_ARG;
    ok &= g3_train_check_length(cfg, gbs, mdp);
    ok &= g3_train_check_rest(cfg, gbs);
    if (!ok)
        return G3_ERR_INVALID_ARG;

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
        if (p.train_iters < 1) {
            g3_error("--train-samples %lld is less than one global batch (%lld samples)",
                     (long long)cfg->train_samples, (long long)gbs);
            ok = 0;
        }
    }
    if (warmup >= decay && cfg->lr_decay_style != G3_LR_DECAY_CONSTANT) {
        g3_error(
            "the learning-rate warm-up (%lld samples) must end before the decay does (%lld samples): shorten the warm-up or lengthen --lr-decay-iters/-samples",
            (long long)warmup, (long long)decay);
        ok = 0;
    }
    if (!ok)
        return G3_ERR_INVALID_ARG;
    p.lr.max_lr = cfg->lr;
    p.lr.min_lr = cfg->min_lr;
    p.lr.warmup_samples = warmup;
    p.lr.decay_samples = decay;
    p.lr.style = cfg->lr_decay_style;
    *plan = p;
    return G3_OK;
}
