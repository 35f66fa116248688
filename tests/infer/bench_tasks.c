/* Benchmark: tokens/s of task scoring (g3_task_run: rows sorted by length, micro-batches of
 * the longest row, g3_par_score) against the forward pass of the trainer's validation
 * (g3_par_eval: B x T micro-batches with the loss) on the same model, engine and micro-batch,
 * CPU backend, one rank (the 1 x 1 x 1 layout), random weights.  The two are timed in turn,
 * rep after rep, so that a machine's changing load falls on both.
 *
 *   bench_tasks --vocab-file F --merge-file F --task NAME --task-data FILE
 *               [--layers L] [--hidden C] [--heads NH] [--seq T] [--batch B] [--reps N]
 *               [--stride S]
 *
 * Prints each rep and "forward tokens/s: X  task tokens/s: Y  ratio: Y/X" (medians). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/rng.h"
#include "infer/tasks.h"
#include "model/gpt.h"
#include "bench.h"
#include "gpt_small.h"
#include "par_alone.h"

int main(int argc, char **argv)
{
    int L = 4, C = 256, NH = 4, T = 256, B = 4, reps = 5, stride = 0;
    const char *vocab = NULL, *merges = NULL, *kind = NULL, *data = NULL;
    g3_gpt_config_t cfg;
    g3_alone_gpt_t run;
    g3_bpe_t *bpe;
    g3_task_t *task;
    g3_task_spec_t spec;
    int32_t *tok, *tgt;
    double *fw, *tk, fwm, tkm;
    int64_t nmb;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *dst = !strcmp(a, "--layers") ? &L : !strcmp(a, "--hidden") ? &C
                 : !strcmp(a, "--heads") ? &NH : !strcmp(a, "--seq") ? &T
                 : !strcmp(a, "--batch") ? &B : !strcmp(a, "--reps") ? &reps
                 : !strcmp(a, "--stride") ? &stride : NULL;
        const char **sdst = !strcmp(a, "--vocab-file") ? &vocab : !strcmp(a, "--merge-file")
                 ? &merges : !strcmp(a, "--task") ? &kind : !strcmp(a, "--task-data") ? &data
                 : NULL;
        if (dst && i + 1 < argc) {
            *dst = atoi(argv[++i]);
        } else if (sdst && i + 1 < argc) {
            *sdst = argv[++i];
        } else {
            fprintf(stderr, "bench_tasks: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    if (!vocab || !merges || !kind || !data || g3_task_kind(kind) < 0 || reps < 1) {
        fprintf(stderr, "bench_tasks: needs --vocab-file, --merge-file, --task NAME and --task-data FILE\n");
        return 2;
    }
    if (g3_bpe_load(vocab, merges, &bpe) != G3_OK)
        return 1;
    g3t_gpt_small(&cfg, L, C, NH, T, g3_bpe_vocab_size(bpe));
    if (g3_alone_gpt_open(&run, &cfg, B, T, 1, NULL, 0) != G3_OK)
        return 1;
    memset(&spec, 0, sizeof(spec));
    spec.kind = (g3_task_kind_t)g3_task_kind(kind);
    spec.data = data;
    spec.stride = stride;
    if (g3_task_load(&spec, bpe, T, &task) != G3_OK)
        return 1;
    /* the forward pass over as many B x T micro-batches as the task's tokens fill */
    nmb = (g3_task_tokens(task) + (int64_t)B * T - 1) / ((int64_t)B * T);
    tok = malloc(sizeof(int32_t) * (size_t)B * T);
    tgt = malloc(sizeof(int32_t) * (size_t)B * T);
    fw = calloc((size_t)reps, sizeof(double));
    tk = calloc((size_t)reps, sizeof(double));
    if (!tok || !tgt || !fw || !tk)
        return 1;
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(g3_rng_u64(1, 1, (uint64_t)i) % (uint64_t)cfg.vocab_size);
        tgt[i] = (int32_t)(g3_rng_u64(1, 2, (uint64_t)i) % (uint64_t)cfg.vocab_size);
    }
    printf("# gpt3d CPU backend: %s\n", run.be->device);
    printf("# L=%d C=%d NH=%d T=%d B=%d V=%d (padded %d); task %s: %lld rows, %lld tokens; forward: %lld micro-batches\n",
           L, C, NH, T, B, cfg.vocab_size, run.m->Vp, g3_task_name(task),
           (long long)g3_task_rows(task), (long long)g3_task_tokens(task), (long long)nmb);
    for (int r = 0; r < reps; r++) {
        g3_infer_lm_t lm = { run.m, run.eng };
        g3_task_result_t res;
        double t0 = g3_clock_now(), s = 0.0;
        for (int64_t k = 0; k < nmb; k++)
            if (g3_par_eval(run.eng, tok, tgt, B, &s) != G3_OK)
                return 1;
        fw[r] = (double)nmb * B * T / (g3_clock_now() - t0);
        if (g3_task_run(task, &lm, B, 1, 0, NULL, &res) != G3_OK)
            return 1;
        tk[r] = res.tokens_per_s;
        printf("rep %d: forward %.1f tokens/s, task %.1f tokens/s (%.2fx)\n", r, fw[r], tk[r],
               tk[r] / fw[r]);
        fflush(stdout);
    }
    fwm = g3t_median(fw, reps);
    tkm = g3t_median(tk, reps);
    printf("forward tokens/s: %.1f  task tokens/s: %.1f  ratio: %.2f\n", fwm, tkm, tkm / fwm);
    g3_task_free(task);
    g3_alone_gpt_close(&run);
    g3_bpe_free(bpe);
    free(tok);
    free(tgt);
    free(fw);
    free(tk);
    return 0;
}
