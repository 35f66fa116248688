/* gpt3d backend: what the cuDNN attention path decides without cuDNN (cudnn_att.h): the
 * choice between cuDNN and the native kernels, plan keys, and the scratch sizes.  Compiled in
 * every build so that tests/backend/test_cudnn_select runs on any machine. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "backend/cudnn_att.h"

int g3_cudnn_key_eq(const g3_cudnn_key_t *a, const g3_cudnn_key_t *b)
{
    return a->B == b->B && a->T == b->T && a->NH == b->NH && a->HS == b->HS &&
           a->dir == b->dir && a->deterministic == b->deterministic;
}

int g3_cudnn_want_parse(const char *s)
{
    if (s == NULL)
        return -1;
    if (strcmp(s, "auto") == 0)
        return G3_CUDNN_WANT_AUTO;
    if (strcmp(s, "native") == 0)
        return G3_CUDNN_WANT_NATIVE;
    if (strcmp(s, "cudnn") == 0)
        return G3_CUDNN_WANT_CUDNN;
    return -1;
}

g3_status_t g3_cudnn_att_choose(g3_cudnn_want_t want, int built, const char *unavailable,
                                int *use_cudnn_p, char *why, size_t why_len)
{
    *use_cudnn_p = 0;
    if (want == G3_CUDNN_WANT_NATIVE) {
        snprintf(why, why_len, "native kernels (--attention-backend native)");
        return G3_OK;
    }
    if (!built) {
        if (want == G3_CUDNN_WANT_CUDNN) {
            snprintf(
                why, why_len,
                "--attention-backend cudnn: this gpt3d was built without cuDNN; install cuDNN 9 and reconfigure (--with-cudnn), or use --attention-backend auto or native");
            return G3_ERR_UNSUPPORTED;
        }
        snprintf(why, why_len, "native kernels (this gpt3d was built without cuDNN)");
        return G3_OK;
    }
    if (unavailable != NULL) {
        if (want == G3_CUDNN_WANT_CUDNN) {
            snprintf(
                why, why_len,
                "--attention-backend cudnn: cuDNN cannot run this attention: %s; use --attention-backend native (or auto)",
                unavailable);
            return G3_ERR_UNSUPPORTED;
        }
        snprintf(why, why_len, "native kernels (cuDNN cannot run it: %s)", unavailable);
        return G3_OK;
    }
    *use_cudnn_p = 1;
    snprintf(why, why_len, "cuDNN fused attention (--attention-backend %s)",
             want == G3_CUDNN_WANT_CUDNN ? "cudnn" : "auto");
    return G3_OK;
}

/* 256-byte rounding keeps the second buffer as aligned as the first. */
static size_t g3_cudnn_round(size_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

size_t g3_cudnn_att_scratch_bytes(int B, int T, int NH, int HS, int deterministic)
{
    size_t rows = (size_t)B * NH * T;   /* (B,NH,T) */
    size_t dq = deterministic ? 0 : g3_cudnn_round(rows * HS * sizeof(float));

    return dq + g3_cudnn_round(rows * sizeof(float));
}
