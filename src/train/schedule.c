/* gpt3d train: learning-rate schedule and batch-size ramp-up (Megatron-LM semantics). */
#include "config.h"

#include <math.h>
#include <strings.h>

#include "core/log.h"
#include "train/schedule.h"

g3_status_t g3_train_lr_decay_parse(const char *name, g3_lr_decay_t *style_p)
{
    if (!strcasecmp(name, "constant"))
        *style_p = G3_LR_DECAY_CONSTANT;
    else if (!strcasecmp(name, "linear"))
        *style_p = G3_LR_DECAY_LINEAR;
    else if (!strcasecmp(name, "cosine"))
        *style_p = G3_LR_DECAY_COSINE;
    else
        return G3_ERR_INVALID_ARG;
    return G3_OK;
}

double g3_train_lr_at(const g3_train_lr_sched_t *s, int64_t samples)
{
    double r, coeff;

    if (s->warmup_samples > 0 && samples <= s->warmup_samples)
        return s->max_lr * (double)samples / (double)s->warmup_samples;
    if (s->style == G3_LR_DECAY_CONSTANT)
        return s->max_lr;
    if (samples > s->decay_samples)
        return s->min_lr;
    r = (double)(samples - s->warmup_samples) / (double)(s->decay_samples - s->warmup_samples);
    if (r < 0.0)
        r = 0.0;
    if (r > 1.0)
        r = 1.0;
    coeff = s->style == G3_LR_DECAY_LINEAR ? 1.0 - r : 0.5 * (cos(M_PI * r) + 1.0);
    return s->min_lr + coeff * (s->max_lr - s->min_lr);
}

g3_status_t g3_train_rampup_check(const g3_train_rampup_t *r, int64_t mdp)
{
    if (r->start <= 0 || r->increment <= 0 || r->ramp_samples < 0) {
        g3_error(
            "--rampup-batch-size %lld %lld %lld: the start batch size and the increment must be positive and the ramp-up samples not negative",
            (long long)r->start, (long long)r->increment, (long long)r->ramp_samples);
        return G3_ERR_INVALID_ARG;
    }
    if (r->start > r->global) {
        g3_error(
            "--rampup-batch-size starts at %lld, above --global-batch-size %lld: the ramp-up grows the batch towards the global batch size",
            (long long)r->start, (long long)r->global);
        return G3_ERR_INVALID_ARG;
    }
    if ((r->global - r->start) % r->increment != 0) {
        g3_error(
            "--rampup-batch-size %lld %lld %lld: --global-batch-size %lld minus the start (%lld) is not a multiple of the increment %lld",
            (long long)r->start, (long long)r->increment, (long long)r->ramp_samples,
            (long long)r->global, (long long)(r->global - r->start), (long long)r->increment);
        return G3_ERR_INVALID_ARG;
    }
    if (r->start % mdp != 0 || r->increment % mdp != 0) {
        g3_error(
            "--rampup-batch-size %lld %lld %lld: the start and the increment must be multiples of --micro-batch-size x data-parallel size = %lld, so that every batch size on the way splits into whole micro-batches",
            (long long)r->start, (long long)r->increment, (long long)r->ramp_samples,
            (long long)mdp);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

int64_t g3_train_rampup_batch(const g3_train_rampup_t *r, int64_t samples)
{
    int64_t increments;
    double per_increment;

    if (r->start <= 0 || r->start == r->global || samples > r->ramp_samples)
        return r->global;
    increments = (r->global - r->start) / r->increment;
    per_increment = (double)r->ramp_samples / (double)increments;
    return r->start + (int64_t)((double)samples / per_increment) * r->increment;
}

int g3_train_samples_fit(const char *count_flag, int64_t count, int64_t batch)
{
    if (batch <= 1 && count > G3_TRAIN_MAX_SAMPLES) {
        g3_error("--%s %lld is out of range (1 .. %d samples: gpt3d builds a split's sample index in memory, about 20 bytes a sample)",
                 count_flag, (long long)count, G3_TRAIN_MAX_SAMPLES);
        return 0;
    }
    if (batch > 1 && count > G3_TRAIN_MAX_SAMPLES / batch) {
        g3_error("--%s %lld x --global-batch-size %lld = %.4g samples is more than gpt3d reads from one split (at most %d: its sample index is built in memory, about 20 bytes a sample); lower --%s or --global-batch-size",
                 count_flag, (long long)count, (long long)batch, (double)count * (double)batch,
                 G3_TRAIN_MAX_SAMPLES, count_flag);
        return 0;
    }
    return 1;
}

int64_t g3_train_rampup_iters(const g3_train_rampup_t *r, int64_t train_samples)
{
    int64_t consumed = 0, iters = 0;

    if (r->start > 0 && r->start != r->global) {
        while (consumed <= r->ramp_samples) {
            consumed += g3_train_rampup_batch(r, consumed);
            iters++;
        }
    }
    if (train_samples > consumed)
        iters += (train_samples - consumed) / r->global;
    return iters;
}
