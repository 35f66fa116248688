/* gpt3d infer: scoring a task's rows on the model, and the scorers of the metrics the kinds
 * report (their rows in tasks_kinds.c name them; see tasks.h).
 * Glossary: B micro-batch, T sequence length, Tb a micro-batch's length (its longest row),
 * DP data-parallel size, TP tensor-parallel size. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "infer/tasks_internal.h"
#include "metrics/events.h"

/* Rows by length, longest first (the harness's order), then by index: the same order on
 * every rank. */
static const g3_task_row_t *g3_task_sort_rows;
static int g3_task_cmp(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    int li = g3_task_sort_rows[i].len, lj = g3_task_sort_rows[j].len;
    if (li != lj)
        return li > lj ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Rank 0's progress line: micro-batches done, tokens/s, the time left at that rate. */
static void g3_task_progress(FILE *out, const g3_task_t *t, int64_t done, int64_t total,
                             double tokens, double t0)
{
    double el = g3_clock_now() - t0, eta = done > 0 ? el * (double)(total - done) / done : 0.0;
    fprintf(out, " %s: %lld/%lld micro-batches (%.0f%%) | %.1f tokens/s | elapsed %.0f s | ETA %.0f s\n",
            t->name, (long long)done, (long long)total, 100.0 * done / (total ? total : 1),
            el > 0.0 ? tokens / el : 0.0, el, eta);
    fflush(out);
}

/* Score this replica's micro-batches into t->res (zeros elsewhere), then add over the
 * world.  RET: model and comm errors, G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_score(g3_task_t *t, const g3_infer_lm_t *lm, int B, int dp_size,
                                 int dp_rank, FILE *progress, double *tokens_p)
{
    const g3_par_layout_t *l = g3_par_engine_layout(lm->eng);
    int64_t nr = t->nrows, nmb = 0, mine = 0, done = 0, cap = (int64_t)B * t->T;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(nr ? nr : 1));
    int64_t *first = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    size_t cells = (size_t)cap;
    int32_t *in = malloc(sizeof(int32_t) * cells), *tg = malloc(sizeof(int32_t) * cells);
    float *lp = malloc(sizeof(float) * cells);
    uint8_t *gr = malloc(cells);
    int greedy = t->kind->greedy;
    double t0 = g3_clock_now(), last = t0, tokens = 0.0;
    g3_status_t st = G3_OK;

    free(t->res);
    t->res = calloc((size_t)(nr ? nr : 1) * G3_TASK_R_N, sizeof(double));
    if (!order || !first || !in || !tg || !lp || !gr || !t->res) {
        g3_error("%s: out of memory for the scoring buffers", t->name);
        st = G3_ERR_NO_MEMORY;
        goto out;
    }
    for (int64_t r = 0; r < nr; r++)
        order[r] = r;
    g3_task_sort_rows = t->rows;
    qsort(order, (size_t)nr, sizeof(int64_t), g3_task_cmp);
    /* micro-batches of the training shape's B T tokens: from each row on, as many rows of
     * its length (the longest left) as fit, so that short rows share a pass */
    for (int64_t r = 0; r < nr; nmb++) {
        int64_t Tb = t->rows[order[r]].len - 1, k = cap / Tb;
        first[nmb] = r;
        r += k < nr - r ? k : nr - r;
    }
    first[nmb] = nr;
    for (int64_t k = dp_rank; k < nmb; k += dp_size)
        mine++;
    /* replica d scores the micro-batches k with k % DP == d */
    for (int64_t k = dp_rank; k < nmb && st == G3_OK; k += dp_size) {
        int64_t r0 = first[k];
        int b = (int)(first[k + 1] - r0), Tb = t->rows[order[r0]].len - 1, have = 0;
        for (int i = 0; i < b; i++) {
            const g3_task_row_t *r = &t->rows[order[r0 + i]];
            const int32_t *ids = t->ids.ids + r->off;
            for (int p = 0; p < Tb; p++) {
                int ok = p < r->len - 1;
                in[(size_t)i * Tb + p] = ok ? ids[p] : 0;   /* padding after the row: unread */
                tg[(size_t)i * Tb + p] = ok ? ids[p + 1] : 0;
            }
            tokens += r->len - 1;
        }
        st = g3_par_score(lm->eng, in, tg, b, Tb, lp, greedy ? gr : NULL, &have);
        if (st != G3_OK)
            break;
        if (have && l->tp_rank == 0) {   /* one rank of each replica's last stage */
            for (int i = 0; i < b; i++) {
                const g3_task_row_t *r = &t->rows[order[r0 + i]];
                double *o = t->res + (size_t)order[r0 + i] * G3_TASK_R_N;
                int all = 1;
                for (int p = r->from; p < r->len - 1; p++) {
                    double v = lp[(size_t)i * Tb + p];
                    o[G3_TASK_R_LP] += v;
                    o[G3_TASK_R_LP2] += v * v;
                    all &= !greedy || gr[(size_t)i * Tb + p];
                }
                o[G3_TASK_R_GREEDY] = all;
                o[G3_TASK_R_COUNT] = r->len - 1 - r->from;
            }
        }
        done++;
        if (progress && (g3_clock_now() - last >= 10.0 || done == mine)) {
            g3_task_progress(progress, t, done, mine, tokens, t0);
            last = g3_clock_now();
        }
    }
    /* the one holder of each row adds it to the zeros of the others */
    if (st == G3_OK)
        st = g3_par_world_allreduce(g3_par_engine_par(lm->eng), t->res,
                                    (size_t)nr * G3_TASK_R_N, 0);
    if (st == G3_OK)
        st = g3_par_world_allreduce(g3_par_engine_par(lm->eng), &tokens, 1, 0);
    *tokens_p = tokens;
out:
    free(order);
    free(first);
    free(in);
    free(tg);
    free(lp);
    free(gr);
    return st;
}

/* The mean of x (n,) and its standard error as the harness's mean_stderr: the sample
 * standard deviation (n - 1) over sqrt(n) (NAN for n < 2). */
static void g3_task_mean(const double *x, int64_t n, double *mean, double *se)
{
    double s = 0.0, v = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    *mean = n ? s / (double)n : NAN;
    for (int64_t i = 0; i < n; i++)
        v += (x[i] - *mean) * (x[i] - *mean);
    *se = n > 1 ? sqrt(v / (double)(n - 1)) / sqrt((double)n) : NAN;
}

static void g3_task_metric(g3_task_result_t *res, double v, double se)
{
    if (res->nmetrics >= G3_TASK_MAX_METRICS)
        return;
    res->values[res->nmetrics] = v;
    res->stderrs[res->nmetrics] = se;
    res->nmetrics++;
}

/* RET: the characters (code points) of a UTF-8 string: Python's len(). */
static double g3_task_chars(const char *s)
{
    double n = 0.0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

void g3_task_score_lambada(const g3_task_t *t, double *scratch, g3_task_result_t *res)
{
    int64_t n = t->nitems;
    double *a = scratch, *b = a + n, *c = b + n, m, se;

    for (int64_t i = 0; i < n; i++) {
        a[i] = t->res[(size_t)(2 * i) * G3_TASK_R_N + G3_TASK_R_GREEDY];
        b[i] = t->res[(size_t)(2 * i + 1) * G3_TASK_R_N + G3_TASK_R_GREEDY];
        c[i] = t->res[(size_t)(2 * i) * G3_TASK_R_N + G3_TASK_R_LP];
    }
    g3_task_mean(a, n, &m, &se);
    g3_task_metric(res, m, se);   /* acc_strict */
    g3_task_mean(b, n, &m, &se);
    g3_task_metric(res, m, se);   /* acc_nonstrict */
    /* the harness's perplexity: exp of minus the mean log-likelihood of the targets; its
     * standard error by the delta method */
    g3_task_mean(c, n, &m, &se);
    g3_task_metric(res, exp(-m), exp(-m) * se);
}

void g3_task_score_wikitext(const g3_task_t *t, double *scratch, g3_task_result_t *res)
{
    double sum = 0.0, sq = 0.0, cnt = 0.0, loss, var, ratio, se;

    (void)scratch;
    for (int64_t r = 0; r < t->nrows; r++) {
        sum -= t->res[(size_t)r * G3_TASK_R_N + G3_TASK_R_LP];
        sq += t->res[(size_t)r * G3_TASK_R_N + G3_TASK_R_LP2];
        cnt += t->res[(size_t)r * G3_TASK_R_N + G3_TASK_R_COUNT];
    }
    /* Megatron: the loss over num_tokenized_tokens - 1 targets (each scored once, so cnt),
     * ppl = exp(min(20, loss)), and the adjusted ppl with the token ratio */
    loss = sum / (double)(t->bpe_tokens - 1);
    ratio = (double)(t->bpe_tokens - 1) /
            (double)(t->orig_tokens - 1 > 0 ? t->orig_tokens - 1 : 1);
    var = cnt > 1 ? (sq - sum * sum / cnt) / (cnt - 1) : NAN;
    se = cnt > 1 ? sqrt(var > 0 ? var : 0) / sqrt(cnt) : NAN;
    res->n = (int64_t)cnt;
    g3_task_metric(res, loss, se);
    g3_task_metric(res, exp(fmin(20.0, loss)), exp(fmin(20.0, loss)) * se);
    g3_task_metric(res, exp(fmin(20.0, loss * ratio)), exp(fmin(20.0, loss * ratio)) * ratio * se);
    g3_task_metric(res, ratio, NAN);
    if ((int64_t)cnt != t->bpe_tokens - 1)
        g3_warn("%s: %lld targets scored for %lld tokens: a window was lost", t->name,
                (long long)cnt, (long long)t->bpe_tokens);
}

void g3_task_score_choices(const g3_task_t *t, double *scratch, g3_task_result_t *res)
{
    int64_t n = t->nitems, r = 0;
    double *a = scratch, *b = a + n, m, se;

    for (int64_t i = 0; i < n; i++) {
        const g3_task_item_t *it = &t->items[i];
        int best = 0, bestn = 0;
        double bv = -INFINITY, bn = -INFINITY;
        for (int k = 0; k < it->nchoices; k++, r++) {
            double ll = t->res[(size_t)r * G3_TASK_R_N + G3_TASK_R_LP];
            /* acc_norm: over the choice's length in characters (the harness's len(choice);
             * partial items: its choices are the contexts) */
            double len = g3_task_chars(it->partial ? it->ctx[k] : it->cont[k]);
            double ln = ll / (len > 0 ? len : 1.0);
            if (ll > bv) {   /* np.argmax: the first largest */
                bv = ll;
                best = k;
            }
            if (ln > bn) {
                bn = ln;
                bestn = k;
            }
        }
        a[i] = best == it->label;
        b[i] = bestn == it->label;
    }
    g3_task_mean(a, n, &m, &se);
    g3_task_metric(res, m, se);   /* acc */
    g3_task_mean(b, n, &m, &se);
    g3_task_metric(res, m, se);   /* acc_norm */
}

/* The metrics of the task's kind from t->res, named by its row.  RET: G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_metrics(const g3_task_t *t, g3_task_result_t *res)
{
    double *scratch = malloc(sizeof(double) * (size_t)(3 * t->nitems + 3));

    if (!scratch) {
        g3_error("%s: out of memory for the metrics", t->name);
        return G3_ERR_NO_MEMORY;
    }
    res->n = t->nitems;
    res->truncated = t->truncated;
    t->kind->score(t, scratch, res);
    for (int i = 0; i < res->nmetrics; i++)
        res->names[i] = t->kind->metrics[i];
    free(scratch);
    return G3_OK;
}

g3_status_t g3_task_run(g3_task_t *t, const g3_infer_lm_t *lm, int B, int dp_size, int dp_rank,
                        FILE *progress, g3_task_result_t *res)
{
    double t0 = g3_clock_now(), tokens = 0.0;
    g3_status_t st;

    memset(res, 0, sizeof(*res));
    st = g3_task_score(t, lm, B, dp_size > 0 ? dp_size : 1, dp_rank, progress, &tokens);
    if (st != G3_OK)
        return st;
    res->seconds = g3_clock_now() - t0;
    res->tokens_per_s = res->seconds > 0.0 ? tokens / res->seconds : 0.0;
    return g3_task_metrics(t, res);
}

/* A JSON number, or null (JSON has no NaN or infinity). */
static void g3_task_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

void g3_task_report(const g3_task_t *t, const g3_task_result_t *res, int64_t iteration,
                    const char *checkpoint, FILE *metrics)
{
    g3_ev_sink_t sink = { metrics, NULL, 0, stdout };
    g3_ev_map_t scores = { res->nmetrics, res->names, res->values, NULL };
    g3_ev_map_t stderrs = { res->nmetrics, res->names, res->stderrs, NULL };
    g3_ev_t e;

    g3_ev_init(&e, G3_EV_TASK);
    g3_ev_str(&e, G3_EVF_TASK_NAME, t->name);
    g3_ev_int(&e, G3_EVF_TASK_ITER, iteration);
    g3_ev_int(&e, G3_EVF_TASK_N, res->n);
    g3_ev_int(&e, G3_EVF_TASK_SHOTS, t->spec.num_fewshot);
    g3_ev_int(&e, G3_EVF_TASK_TRUNC, res->truncated);
    g3_ev_map(&e, G3_EVF_TASK_METRICS, &scores);
    g3_ev_map(&e, G3_EVF_TASK_STDERR, &stderrs);
    g3_ev_num(&e, G3_EVF_TASK_TPS, res->tokens_per_s);
    g3_ev_str(&e, G3_EVF_TASK_FILE, t->spec.data);
    g3_ev_str(&e, G3_EVF_TASK_CKPT, checkpoint);
    g3_ev_emit(&sink, &e);
}

g3_status_t g3_task_dump_rows(const g3_task_t *t, const char *path)
{
    FILE *f = fopen(path, "w");
    int ok = f != NULL;

    for (int64_t r = 0; ok && r < t->nrows; r++) {
        const g3_task_row_t *row = &t->rows[r];
        const double *o = t->res ? t->res + (size_t)r * G3_TASK_R_N : NULL;
        fprintf(f, "{\"item\":%lld,\"choice\":%d,\"from\":%d,\"truncated\":%d,\"ids\":[",
                (long long)row->item, row->choice, row->from, row->truncated);
        for (int p = 0; p < row->len; p++)
            fprintf(f, p ? ",%d" : "%d", t->ids.ids[row->off + p]);
        fprintf(f, "],\"logprob\":");
        g3_task_num(f, o ? o[G3_TASK_R_LP] : NAN);
        fprintf(f, ",\"greedy\":%d}\n", o ? (int)o[G3_TASK_R_GREEDY] : -1);
        ok = !ferror(f);
    }
    if (ok && t->detok) {   /* wikitext: the detokenized text beside, for the reference */
        char dpath[4096];
        FILE *d;
        snprintf(dpath, sizeof(dpath), "%s.detok", path);
        d = fopen(dpath, "wb");
        ok = d && fwrite(t->detok, 1, t->detok_len, d) == t->detok_len;
        if (d && fclose(d) != 0)
            ok = 0;
    }
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok) {
        g3_error("could not write the rows of %s to %s", t->name, path);
        return G3_ERR_IO;
    }
    return G3_OK;
}

g3_status_t g3_task_set_run(g3_task_set_t *set, const g3_infer_lm_t *lm, int B, int dp_size,
                            int dp_rank, int64_t iteration, int speak, FILE *metrics)
{
    for (int i = 0; i < set->n; i++) {
        g3_task_result_t res;
        g3_status_t st = g3_task_run(set->tasks[i], lm, B, dp_size, dp_rank,
                                     speak ? stdout : NULL, &res);
        if (st != G3_OK)
            return st;
        if (speak)
            g3_task_report(set->tasks[i], &res, iteration, NULL, metrics);
    }
    return G3_OK;
}
