/* Learning-rate schedule, batch-size ramp-up and the training plan (Megatron-LM semantics:
 * values worked out by hand from Megatron's formulas, see the comments), and how the
 * optimizer groups the parameters. */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "model/gpt.h"
#include "tap.h"
#include "train/schedule.h"
#include "train/train.h"

static void test_lr(void)
{
    g3_train_lr_sched_t s = { 1e-3, 1e-4, 100, 1100, G3_LR_DECAY_COSINE };
    g3_lr_decay_t style;

    tap_ok(g3_train_lr_at(&s, 0) == 0.0, "warm-up starts at 0 (Megatron's first update has lr 0)");
    tap_close_f(g3_train_lr_at(&s, 50), 5e-4, 1e-12, 0, "half-way through the warm-up: half the peak");
    tap_close_f(g3_train_lr_at(&s, 100), 1e-3, 1e-12, 0, "end of warm-up: the peak");
    tap_close_f(g3_train_lr_at(&s, 600), 5.5e-4, 1e-12, 0, "cosine: half-way down is (max + min) / 2");
    tap_close_f(g3_train_lr_at(&s, 350), 1e-4 + 9e-4 * 0.5 * (cos(M_PI * 0.25) + 1), 1e-12, 0,
                "cosine: a quarter of the way");
    tap_close_f(g3_train_lr_at(&s, 1100), 1e-4, 1e-12, 0, "end of decay: min-lr");
    tap_ok(g3_train_lr_at(&s, 5000) == 1e-4, "after the decay: min-lr");
    s.style = G3_LR_DECAY_LINEAR;
    tap_close_f(g3_train_lr_at(&s, 350), 1e-4 + 9e-4 * 0.75, 1e-12, 0, "linear: a quarter of the way");
    s.style = G3_LR_DECAY_CONSTANT;
    tap_ok(g3_train_lr_at(&s, 5000) == 1e-3 && g3_train_lr_at(&s, 50) == 5e-4,
           "constant: the peak after the warm-up (which still ramps)");
    s.style = G3_LR_DECAY_COSINE;
    s.warmup_samples = 0;
    tap_ok(g3_train_lr_at(&s, 0) == 1e-3, "no warm-up: the peak from the start");
    tap_ok(g3_train_lr_decay_parse("cosine", &style) == G3_OK && style == G3_LR_DECAY_COSINE &&
           g3_train_lr_decay_parse("Linear", &style) == G3_OK && style == G3_LR_DECAY_LINEAR &&
           g3_train_lr_decay_parse("exp", &style) == G3_ERR_INVALID_ARG, "decay style names");
}

static void test_rampup(void)
{
    /* start 4, +4, over 120 samples, to 16: 3 increments, one per 40 samples */
    g3_train_rampup_t r = { 4, 4, 120, 16 };
    g3_train_rampup_t none = { 0, 0, 0, 16 };
    g3_train_rampup_t mtnlg = { 32, 32, 12000000, 1920 };   /* MT-NLG's ramp, in samples */

    tap_ok(g3_train_rampup_check(&r, 4) == G3_OK, "a good ramp-up passes");
    tap_ok(g3_train_rampup_batch(&r, 0) == 4 && g3_train_rampup_batch(&r, 39) == 4,
           "first 40 samples: the start batch");
    tap_ok(g3_train_rampup_batch(&r, 40) == 8 && g3_train_rampup_batch(&r, 80) == 12 &&
           g3_train_rampup_batch(&r, 119) == 12, "one increment per 40 samples");
    tap_ok(g3_train_rampup_batch(&r, 120) == 16 && g3_train_rampup_batch(&r, 121) == 16,
           "the global batch at the end of the ramp");
    /* consumed 0..36 by 4 (10 its), 40..72 by 8 (5), 80..116 by 12 (4) = 128 > 120, then
     * (200 - 128) / 16 = 4 whole batches: 23 */
    tap_ok(g3_train_rampup_iters(&r, 200) == 23, "iterations of 200 samples with the ramp: 23 (got %lld)",
           (long long)g3_train_rampup_iters(&r, 200));
    tap_ok(g3_train_rampup_batch(&none, 12345) == 16 && g3_train_rampup_iters(&none, 200) == 12,
           "no ramp-up: the global batch, partial last batch dropped");
    tap_ok(g3_train_rampup_batch(&mtnlg, 0) == 32 &&
               g3_train_rampup_batch(&mtnlg, 12000001) == 1920 &&
               g3_train_rampup_batch(&mtnlg, 6000000) == 32 + 29 * 32,
           "MT-NLG's 32 -> 1920 ramp (59 increments over 12M samples)");

    g3_log_set_level(G3_LOG_ERROR + 0);
    tap_ok(g3_train_rampup_check(&(g3_train_rampup_t){ 32, 4, 100, 16 }, 4) == G3_ERR_INVALID_ARG,
           "a start above the global batch is refused");
    tap_ok(g3_train_rampup_check(&(g3_train_rampup_t){ 4, 8, 100, 16 }, 4) == G3_ERR_INVALID_ARG,
           "global - start not a multiple of the increment is refused");
    tap_ok(g3_train_rampup_check(&(g3_train_rampup_t){ 2, 2, 100, 16 }, 4) == G3_ERR_INVALID_ARG,
           "sizes not multiples of micro x DP are refused");
    tap_ok(g3_train_rampup_check(&(g3_train_rampup_t){ 4, 0, 100, 16 }, 4) == G3_ERR_INVALID_ARG,
           "a zero increment is refused");
}

static void base(g3_train_config_t *c)
{
    g3_train_config_defaults(c);
    c->micro_batch_size = 2;
    c->global_batch_size = 8;
    c->train_iters = 100;
    c->lr_warmup_iters = 10;
}

static void test_plan(void)
{
    g3_train_config_t c;
    g3_train_plan_t p;

    base(&c);
    tap_ok(g3_train_plan(&c, &p) == G3_OK && p.train_iters == 100 && p.global_batch_size == 8 &&
           p.lr.warmup_samples == 80 && p.lr.decay_samples == 800,
           "iterations convert to samples (x global batch), decay defaults to the run length");
    c.lr_decay_iters = 50;
    c.lr_warmup_iters = 0;
    c.lr_warmup_fraction = 0.1;
    tap_ok(g3_train_plan(&c, &p) == G3_OK && p.lr.decay_samples == 400 && p.lr.warmup_samples == 40,
           "--lr-warmup-fraction is a fraction of the decay");
    base(&c);
    c.train_iters = 0;
    c.train_samples = 1000;
    c.lr_warmup_iters = 0;
    c.lr_warmup_samples = 64;
    c.rampup[0] = 2; c.rampup[1] = 2; c.rampup[2] = 300;
    tap_ok(g3_train_plan(&c, &p) == G3_OK && p.lr.warmup_samples == 64 &&
               p.lr.decay_samples == 1000 &&
               p.train_iters == g3_train_rampup_iters(&p.rampup, 1000),
           "sample-based run with a ramp-up");
    base(&c);
    c.global_batch_size = 0;
    tap_ok(g3_train_plan(&c, &p) == G3_OK && p.global_batch_size == 2, "global batch defaults to micro x DP");

    g3_log_set_level(G3_LOG_ERROR);
    /* one edit of the base configuration each, every one refused */
#define REFUSED(edit, what)                                                   \
    do {                                                                      \
        base(&c);                                                             \
        edit;                                                                 \
        tap_ok(g3_train_plan(&c, &p) == G3_ERR_INVALID_ARG, "%s", what);      \
    } while (0)
    REFUSED(c.global_batch_size = 7, "global batch not divisible by micro x DP is refused");
    REFUSED(c.train_samples = 10, "both --train-iters and --train-samples are refused");
    REFUSED(c.train_iters = 0, "neither --train-iters nor --train-samples is refused");
    REFUSED((c.rampup[0] = 2, c.rampup[1] = 2, c.rampup[2] = 100),
            "a ramp-up with --train-iters is refused (Megatron)");
    REFUSED(c.lr_decay_samples = 100, "--lr-decay-samples with --train-iters is refused");
    REFUSED(c.lr_warmup_iters = 100, "a warm-up as long as the decay is refused");
    REFUSED(c.min_lr = 1.0, "--min-lr above --lr is refused");
    REFUSED(c.adamw.beta2 = 1.0, "--adam-beta2 1 is refused");
    REFUSED((c.train_iters = 0, c.train_samples = 5, c.lr_warmup_iters = 0),
            "fewer samples than one global batch are refused");
#undef REFUSED
}

int main(void)
{
    g3_log_set_level(G3_LOG_WARN);
    test_lr();
    test_rampup();
    test_plan();
    return tap_exit();
}
