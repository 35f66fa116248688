/* ckpt_synth: write or check a synthetic sharded checkpoint (tests/ckpt/synth.h)
 * for the shell tests, simulating every rank of a TP x PP x DP layout.
 *
 *   ckpt_synth save  DIR TP PP DP ITER [key=value...]
 *   ckpt_synth check DIR TP PP DP ITER [key=value...]
 * keys: L h heads f V Vp P (model shape), bf16=1, optim=0, keep=N, fallback=1,
 *       id=SAVE_ID.  Exit 0 on success; check prints the differing buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "synth.h"

int main(int argc, char **argv)
{
    synth_cfg_t c = { 4, 16, 4, 64, 50, 64, 32, G3_CKPT_F32, 1, 0 };
    g3_ckpt_save_opts_t so = { NULL, 0, 0, NULL };
    g3_ckpt_load_opts_t lo;
    int tp, pp, dp, bad = 0;
    g3_status_t st;

    memset(&lo, 0, sizeof(lo));
    if (argc < 7) {
        fprintf(stderr, "usage: ckpt_synth save|check DIR TP PP DP ITER [key=value...]\n");
        return 2;
    }
    tp = atoi(argv[3]);
    pp = atoi(argv[4]);
    dp = atoi(argv[5]);
    c.iteration = atoll(argv[6]);
    for (int i = 7; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        long v;
        if (eq == NULL) {
            fprintf(stderr, "ckpt_synth: expected key=value, got %s\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        v = atol(eq + 1);
        if (!strcmp(argv[i], "L")) c.L = (int)v;
        else if (!strcmp(argv[i], "h")) c.h = (int)v;
        else if (!strcmp(argv[i], "heads")) c.heads = (int)v;
        else if (!strcmp(argv[i], "f")) c.f = (int)v;
        else if (!strcmp(argv[i], "V")) c.V = (int)v;
        else if (!strcmp(argv[i], "Vp")) c.Vp = (int)v;
        else if (!strcmp(argv[i], "P")) c.P = (int)v;
        else if (!strcmp(argv[i], "bf16")) c.mdtype = v ? G3_CKPT_BF16 : G3_CKPT_F32;
        else if (!strcmp(argv[i], "optim")) c.optim = (int)v;
        else if (!strcmp(argv[i], "keep")) so.keep_last = (int)v;
        else if (!strcmp(argv[i], "fallback")) lo.fallback = (int)v;
        else if (!strcmp(argv[i], "id")) so.save_id = eq + 1;
        else {
            fprintf(stderr, "ckpt_synth: unknown key %s\n", argv[i]);
            return 2;
        }
    }
    g3_log_init_from_env();
    if (strcmp(argv[1], "save") == 0) {
        st = synth_save(argv[2], &c, tp, pp, dp, &so);
        if (st != G3_OK)
            fprintf(stderr, "ckpt_synth: save failed: %s\n", g3_status_string(st));
        return st == G3_OK ? 0 : 1;
    }
    if (strcmp(argv[1], "check") == 0) {
        st = synth_check(argv[2], &c, tp, pp, dp, &lo, &bad);
        if (st != G3_OK)
            fprintf(stderr, "ckpt_synth: load failed: %s\n", g3_status_string(st));
        else if (bad)
            fprintf(stderr, "ckpt_synth: %d rank(s) loaded values that differ\n", bad);
        else
            printf("ckpt_synth: iteration %lld loads bitwise under TP %d x PP %d x DP %d\n",
                   (long long)c.iteration, tp, pp, dp);
        return st == G3_OK && bad == 0 ? 0 : 1;
    }
    fprintf(stderr, "ckpt_synth: unknown mode %s\n", argv[1]);
    return 2;
}
