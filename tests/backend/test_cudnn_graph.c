/* cuDNN attention graphs without a GPU (src/backend/cudnn_att.c): every tensor and operation
 * descriptor of the forward, the backward and the deterministic backward is created and
 * FINALIZED for head sizes 64, 80, 128, 160 and T from 64 to 4096, so a wrong attribute, type
 * or stride fails here rather than on a GPU.  cuDNN 9.19 also finalizes the operation graph
 * without a handle (earlier 9.x want one: then that step is reported, not failed); the
 * heuristics and the execution plan need the GPU (tests/kernels/test_attention).
 * Expected operation counts follow cudnn-frontend's composite SDPA expansion: forward 14
 * (2 matmuls, scale, 4 for the causal mask, 7 for the softmax with its statistics), backward
 * 22 (21 deterministic: dQ without the fp32 accumulator and its identity copy). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "backend/cudnn_att.h"
#include "tap.h"

static void check(int B, int T, int NH, int HS, int dir, int det, int want_ops)
{
    g3_cudnn_key_t k = { B, T, NH, HS, dir, det };
    char why[1024] = "";
    int nops = -1, final = -1;
    const char *name = dir == G3_CUDNN_FWD ? "forward" : det ? "backward (deterministic)"
                                                              : "backward";
    g3_status_t st = g3_cudnn_att_graph_check(&k, &nops, &final, why, sizeof(why));

    tap_ok(st == G3_OK && nops == want_ops,
           "%s B=%d T=%d NH=%d HS=%d: every descriptor finalized, %d operations%s%s", name, B, T,
           NH, HS, nops, st == G3_OK ? "" : ": ", st == G3_OK ? "" : why);
    if (st != G3_OK)
        return;
    if (g3_cudnn_version() >= 91900)
        tap_ok(final == 1, "%s B=%d T=%d NH=%d HS=%d: operation graph finalized without a handle%s%s",
               name, B, T, NH, HS, final ? "" : ": ", final ? "" : why);
    else
        tap_diag("cuDNN %ld: operation graph %s without a handle%s%s", g3_cudnn_version(),
                 final ? "finalized" : "not finalized", final ? "" : ": ", final ? "" : why);
}

int main(void)
{
    static const int shapes[][4] = {
        { 16, 1024, 12, 64 },   /* GPT-2 124M */
        { 2, 64, 2, 80 },
        { 4, 4096, 16, 128 },
        { 1, 2048, 16, 160 },   /* MT-NLG's head size */
        { 1, 200, 3, 64 },      /* T not a multiple of 64 */
    };

    tap_diag("cuDNN %ld at run time", g3_cudnn_version());
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const int *s = shapes[i];
        check(s[0], s[1], s[2], s[3], G3_CUDNN_FWD, 0, 14);
        check(s[0], s[1], s[2], s[3], G3_CUDNN_BWD, 0, 22);
        check(s[0], s[1], s[2], s[3], G3_CUDNN_BWD, 1, 21);
    }
    /* the check can fail: a shape no tensor can have is refused with cuDNN's message */
    {
        g3_cudnn_key_t k = { -1, 64, 2, 64, G3_CUDNN_FWD, 0 };
        char why[1024] = "";
        int nops = 0, final = 0;
        g3_status_t st = g3_cudnn_att_graph_check(&k, &nops, &final, why, sizeof(why));
        tap_ok(st == G3_ERR_UNSUPPORTED && strstr(why, "CUDNN_STATUS") != NULL,
               "B=-1 is refused by a descriptor's finalize: '%s'", why);
    }
    return tap_exit();
}
