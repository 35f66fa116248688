/* cuDNN attention, the parts that need no cuDNN (src/backend/cudnn_att_select.c): the choice
 * between cuDNN and the native kernels for every request (auto, native, cudnn) against every
 * situation (not built in, a plan that does not finalize, both plans final), the request
 * names, the plan-cache key (every field tells plans apart) and the backward's scratch sizes
 * (the fp32 dQ accumulator and softmax sum, each 256-byte rounded).  Runs in every build. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "backend/cudnn_att.h"
#include "tap.h"

static void choose(g3_cudnn_want_t want, int built, const char *unavail, g3_status_t want_st,
                   int want_use, const char *want_text, const char *label)
{
    char why[512] = "";
    int use = -1;
    g3_status_t st = g3_cudnn_att_choose(want, built, unavail, &use, why, sizeof(why));

    tap_ok(st == want_st && use == want_use && strstr(why, want_text) != NULL,
           "%s: status %d use %d, '%s'", label, (int)st, use, why);
}

int main(void)
{
    const char *bad = "operation graph: CUDNN_STATUS_NOT_SUPPORTED: head size";

    /* native: always the native kernels, whatever cuDNN could do */
    choose(G3_CUDNN_WANT_NATIVE, 1, NULL, G3_OK, 0, "native", "native, cuDNN ready");
    choose(G3_CUDNN_WANT_NATIVE, 0, "no cuDNN", G3_OK, 0, "native", "native, no cuDNN");
    /* auto: cuDNN when built and final, else native saying why */
    choose(G3_CUDNN_WANT_AUTO, 1, NULL, G3_OK, 1, "cuDNN fused attention", "auto, ready");
    choose(G3_CUDNN_WANT_AUTO, 1, bad, G3_OK, 0, "CUDNN_STATUS_NOT_SUPPORTED: head size",
           "auto, plan fails: native with cuDNN's message");
    choose(G3_CUDNN_WANT_AUTO, 0, "x", G3_OK, 0, "built without cuDNN", "auto, not built");
    /* cudnn: an error (exit 1 at the next sync) with cuDNN's message and the fix */
    choose(G3_CUDNN_WANT_CUDNN, 1, NULL, G3_OK, 1, "--attention-backend cudnn",
           "cudnn, ready");
    choose(G3_CUDNN_WANT_CUDNN, 1, bad, G3_ERR_UNSUPPORTED, 0, "head size",
           "cudnn, plan fails: error naming cuDNN's message");
    choose(G3_CUDNN_WANT_CUDNN, 1, bad, G3_ERR_UNSUPPORTED, 0, "--attention-backend native",
           "cudnn, plan fails: the fix is named");
    choose(G3_CUDNN_WANT_CUDNN, 0, NULL, G3_ERR_UNSUPPORTED, 0, "built without cuDNN",
           "cudnn, not built");

    tap_ok(g3_cudnn_want_parse("auto") == G3_CUDNN_WANT_AUTO &&
               g3_cudnn_want_parse("native") == G3_CUDNN_WANT_NATIVE &&
               g3_cudnn_want_parse("cudnn") == G3_CUDNN_WANT_CUDNN,
           "request names parse to auto 0, native 1, cudnn 2 (backend.h's g3_be_att_t)");
    tap_ok(g3_cudnn_want_parse("CUDNN") < 0 && g3_cudnn_want_parse("") < 0 &&
               g3_cudnn_want_parse(NULL) < 0 && g3_cudnn_want_parse("flash") < 0,
           "unknown request names are refused");

    {
        g3_cudnn_key_t a = { 16, 1024, 12, 64, G3_CUDNN_FWD, 0 }, b;
        int fields_differ = 1;
        tap_ok(g3_cudnn_key_eq(&a, &a), "a key equals itself");
        for (int f = 0; f < 6; f++) {
            b = a;
            switch (f) {
            case 0: b.B++; break;
            case 1: b.T++; break;
            case 2: b.NH++; break;
            case 3: b.HS += 16; break;
            case 4: b.dir = G3_CUDNN_BWD; break;
            default: b.deterministic = 1; break;
            }
            fields_differ &= !g3_cudnn_key_eq(&a, &b) && !g3_cudnn_key_eq(&b, &a);
        }
        tap_ok(fields_differ, "B, T, NH, HS, direction and determinism each name another plan");
    }

    /* B16 T1024 NH12 HS64: dQ accumulator 16*12*1024*64*4 = 50331648, sum 786432 */
    tap_ok(g3_cudnn_att_scratch_bytes(16, 1024, 12, 64, 0) == 50331648u + 786432u,
           "scratch, GPT-2 124M shape: dQ accumulator + softmax sum");
    tap_ok(g3_cudnn_att_scratch_bytes(16, 1024, 12, 64, 1) == 786432u,
           "scratch, deterministic: the softmax sum only");
    tap_ok(g3_cudnn_att_scratch_bytes(1, 3, 1, 8, 0) == 256u + 256u,
           "scratch: each buffer rounded up to 256 bytes");
    return tap_exit();
}
