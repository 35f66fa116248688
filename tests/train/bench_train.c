/* Benchmark: tokens/s of full training steps (forward, backward, gradient clipping, AdamW) of
 * a GPT on the CPU backend, random tokens, no data loading, through the trainer's path: the
 * parallel engine on the one-rank (1 x 1 x 1) layout.
 *
 *   bench_train [--layers L] [--hidden C] [--heads NH] [--seq T] [--batch B] [--vocab V]
 *               [--steps N] [--warmup W] [--recompute] [--profile]
 *
 * Prints one line per step and a summary "tokens/s: X" (median over the timed steps).
 * --profile adds a per-phase breakdown (forward+output layer / backward / optimizer), timed
 * with the model's passes and the engine's step separately. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "bench.h"
#include "gpt_small.h"
#include "par_alone.h"

int main(int argc, char **argv)
{
    int L = 4, C = 256, NH = 4, T = 256, B = 4, V = 50257, steps = 10, warmup = 2;
    int recompute = 0, profile = 0;
    g3_gpt_config_t cfg;
    g3_alone_gpt_t run;
    g3_gpt_t *m;
    g3_par_adamw_config_t ocfg = { 0.9, 0.95, 1e-8, 0.1, 1.0 };
    int32_t *tok, *tgt;
    double *times, tf = 0, tb = 0, to = 0, med;

    g3_be_cpu_env(argv);   /* the trainer's OpenMP wait policy (main.c) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *dst = !strcmp(a, "--layers") ? &L : !strcmp(a, "--hidden") ? &C
                 : !strcmp(a, "--heads") ? &NH : !strcmp(a, "--seq") ? &T
                 : !strcmp(a, "--batch") ? &B : !strcmp(a, "--vocab") ? &V
                 : !strcmp(a, "--steps") ? &steps : !strcmp(a, "--warmup") ? &warmup : NULL;
        if (!strcmp(a, "--recompute")) {
            recompute = 1;
        } else if (!strcmp(a, "--profile")) {
            profile = 1;
        } else if (dst && i + 1 < argc) {
            *dst = atoi(argv[++i]);
        } else {
            fprintf(stderr, "bench_train: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    if (steps < 1 || warmup < 0) {
        fprintf(stderr, "bench_train: --steps must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    g3t_gpt_small(&cfg, L, C, NH, T, V);
    cfg.recompute_activations = recompute;
    if (g3_alone_gpt_open(&run, &cfg, B, T, 1, &ocfg, profile ? B : 0) != G3_OK)
        return 1;
    m = run.m;
    tok = malloc(sizeof(int32_t) * (size_t)B * T);
    tgt = malloc(sizeof(int32_t) * (size_t)B * T);
    times = calloc((size_t)steps, sizeof(double));
    printf("# gpt3d CPU backend: %s\n", run.be->device);
    printf("# L=%d C=%d NH=%d T=%d B=%d V=%d (padded %d) params=%lld recompute=%d\n", L, C, NH,
           T, B, V, m->Vp, (long long)g3_gpt_num_parameters(&cfg), recompute);
    for (int s = 0; s < warmup + steps; s++) {
        double t0, t1, t2, t3, loss = 0.0, norm = 0.0;
        for (int i = 0; i < B * T; i++) {
            tok[i] = (int32_t)(g3_rng_u64(1, 1, (uint64_t)s * B * T + i) % (uint64_t)V);
            tgt[i] = (int32_t)(g3_rng_u64(1, 2, (uint64_t)s * B * T + i) % (uint64_t)V);
        }
        t0 = g3_clock_now();
        if (g3_par_train_step(run.eng, tok, tgt, 1, B, 1e-4, s + 1, &loss, &norm) != G3_OK)
            return 1;
        t3 = g3_clock_now();
        t1 = t2 = t0;
        if (profile) {   /* the phases apart: the passes again, then the step as a whole */
            double t4, t5, l2 = 0.0;
            t4 = g3_clock_now();
            g3_gpt_zero_grad(m);
            if (g3_gpt_forward(m, run.acts, tok, tgt, B, T, 1.0f / (float)(B * T), &l2) != G3_OK)
                return 1;
            t5 = g3_clock_now();
            if (g3_gpt_backward(m, run.acts) != G3_OK)
                return 1;
            t1 = t0 + (t5 - t4);
            t2 = t1 + (g3_clock_now() - t5);
            if (t2 > t3)
                t2 = t3;
        }
        printf("step %2d%s: %.1f ms  loss %.4f  grad norm %.3f  %.0f tokens/s\n", s,
               s < warmup ? " (warm-up)" : "", (t3 - t0) * 1e3, loss, norm,
               B * T / (t3 - t0));
        if (s >= warmup) {
            times[s - warmup] = t3 - t0;
            tf += t1 - t0;
            tb += t2 - t1;
            to += t3 - t2;
        }
    }
    med = g3t_median(times, steps);
    if (profile)
        printf("profile (mean ms): forward+output layer %.1f  backward %.1f  clip+adamw %.1f\n",
               tf / steps * 1e3, tb / steps * 1e3, to / steps * 1e3);
    printf("median step: %.1f ms\n", med * 1e3);
    printf("model TFLOP/s: %.3f\n", g3_gpt_flops_per_step(&cfg, B, T) / med / 1e12);
    printf("tokens/s: %.1f\n", B * T / med);
    g3_alone_gpt_close(&run);
    free(tok);
    free(tgt);
    free(times);
    return 0;
}
