/* gpt3d infer: batches of a split and the mean token loss over them (see infer.h).
 * Glossary: B micro-batch, T sequence length, GBS global batch, DP data-parallel size. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "data/json.h"
#include "infer/infer.h"
#include "metrics/events.h"

g3_status_t g3_infer_batch_load(const g3_infer_batch_t *bt, g3_split_t split, uint64_t first,
                                int64_t n, uint64_t wrap)
{
    int64_t B = bt->B, DP = bt->dp_size > 0 ? bt->dp_size : 1, d = bt->dp_rank;
    size_t T = (size_t)bt->T;

    for (int64_t b = 0; b < n; b++) {
        uint64_t pos = (uint64_t)((b / B) * B * DP + d * B + b % B);
        uint64_t idx = wrap ? (first + pos) % wrap : first + pos;
        g3_status_t st = g3_data_get(bt->data, split, idx, bt->sample);
        if (st != G3_OK)
            return st;
        memcpy(bt->inputs + (size_t)b * T, bt->sample, sizeof(int32_t) * T);
        memcpy(bt->targets + (size_t)b * T, bt->sample + 1, sizeof(int32_t) * T);
    }
    return G3_OK;
}

g3_status_t g3_infer_evaluate(const g3_infer_lm_t *lm, const g3_infer_batch_t *bt,
                              g3_split_t split, uint64_t n_samples, int64_t gbs,
                              double *loss_p)
{
    uint64_t avail = g3_data_num_samples(bt->data, split);
    double sum = 0.0;

    /* each replica its slice of each global batch, through the pipeline; one rank alone a
     * micro-batch per call, so that its losses add up in the order they always did */
    int64_t DP = bt->dp_size > 0 ? bt->dp_size : 1;
    int64_t rows = g3_par_engine_layout(lm->eng)->world_size == 1 ? bt->B : gbs / DP;
    for (uint64_t first = 0; first < n_samples; first += (uint64_t)(rows * DP)) {
        double s = 0.0;
        g3_status_t st = g3_infer_batch_load(bt, split, first, rows, avail);
        if (st == G3_OK)
            st = g3_par_eval(lm->eng, bt->inputs, bt->targets, rows, &s);
        if (st != G3_OK)
            return st;
        if (!isfinite(s)) {   /* a mean over NaN is no measurement */
            g3_error("eval: the loss of samples %llu.. is NaN or infinite: the checkpoint's weights are not usable (saved from a diverged run?); load an earlier checkpoint",
                     (unsigned long long)first);
            return G3_ERR_FORMAT;
        }
        sum += s;
    }
    *loss_p = sum / ((double)n_samples * bt->T);
    return G3_OK;
}

static double g3_infer_ppl(double loss)
{
    return loss < 700.0 ? exp(loss) : INFINITY;
}

void g3_infer_eval_event(g3_ev_t *e, g3_split_t split, int64_t iteration, double loss, int final)
{
    g3_ev_init(e, G3_EV_EVAL);
    g3_ev_str(e, G3_EVF_EVAL_SPLIT, g3_split_name(split));
    g3_ev_int(e, G3_EVF_EVAL_ITER, iteration);
    g3_ev_num(e, G3_EVF_EVAL_LOSS, loss);
    g3_ev_num(e, G3_EVF_EVAL_PPL, g3_infer_ppl(loss));
    g3_ev_bool(e, G3_EVF_EVAL_FINAL, final);
}

void g3_infer_report_eval(FILE *metrics, g3_split_t split, int64_t iteration, double loss,
                          int final, uint64_t samples, const char *checkpoint)
{
    g3_ev_sink_t sink = { metrics, NULL, 0, stdout };
    g3_ev_t e;

    g3_infer_eval_event(&e, split, iteration, loss, final);
    if (checkpoint) {
        g3_ev_int(&e, G3_EVF_EVAL_NSAMPLES, (int64_t)samples);
        g3_ev_str(&e, G3_EVF_EVAL_CKPT, checkpoint);
    }
    g3_ev_emit(&sink, &e);
}
