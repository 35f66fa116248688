/* gpt3d backend: what the backends and their rows of the table of kinds share: the element
 * types' host conversions, the options (defaults, --attention-backend words, the fused ops)
 * and the check of options and sizes through a row's fields.
 *
 * The rows (cpu.c, cuda_kind.c) and the backends (cpu*.c, cuda.c) call this file; it names
 * no row and calls none but through the row it is given, so no call circle runs through it
 * (docs/design.md, "Backend kinds"). */
#include "config.h"

#include <string.h>

#include "backend/backend.h"
#include "core/bf16.h"
#include "core/param.h"

size_t g3_be_dtype_size(g3_be_dtype_t t)
{
    return t == G3_BE_BF16 ? 2 : 4;
}

void g3_be_convert(void *dst, g3_be_dtype_t dst_t, const void *src, g3_be_dtype_t src_t,
                   size_t n)
{
    if (dst_t == src_t) {
        if (n && dst != src)
            memmove(dst, src, n * g3_be_dtype_size(dst_t));
    } else if (dst_t == G3_BE_BF16) {
        const float *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_from_f32(s[i]);
    } else {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_to_f32(s[i]);
    }
}

/* ---- options ------------------------------------------------------------------------------- */

void g3_be_opts_default(g3_be_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->nthreads = 0;
    o->device = -1;
    o->attention = G3_BE_ATT_AUTO;
    o->fused_ops = -1;
    o->gemm_autotune = -1;
    o->deterministic = 0;
}

static const char *const g3_be_att_names[] = { "auto", "native", "cudnn" };
_Static_assert(sizeof(g3_be_att_names) / sizeof(g3_be_att_names[0]) == G3_BE_ATT_CUDNN + 1,
               "one --attention-backend word per g3_be_att_t");

const char *g3_be_att_name(g3_be_att_t att)
{
    return (unsigned)att <= G3_BE_ATT_CUDNN ? g3_be_att_names[att] : "?";
}

g3_status_t g3_be_att_parse(const char *word, g3_be_att_t *att_p)
{
    for (int i = 0; i <= G3_BE_ATT_CUDNN; i++)
        if (word && strcmp(word, g3_be_att_names[i]) == 0) {
            *att_p = (g3_be_att_t)i;
            return G3_OK;
        }
    return G3_ERR_INVALID_ARG;
}

int g3_be_fused_wanted(const g3_be_opts_t *o, int dflt)
{
    int env;

    if (o && (o->fused_ops == 0 || o->fused_ops == 1))
        return o->fused_ops;
    env = (int)g3_param_fused_ops();   /* -1: unset (or not 0 or 1, warned once) */
    return env == 0 || env == 1 ? env : dflt;
}

void g3_be_fused_keep(g3_backend_ops_t *ops, const g3_be_opts_t *o, int dflt)
{
    if (g3_be_fused_wanted(o, dflt))
        return;
    ops->residual_layernorm_fwd = NULL;
    ops->matmul_gelu_fwd = NULL;
    ops->matmul_dgelu_bwd = NULL;
    ops->sumsq_acc = NULL;
    ops->clip_scale = NULL;
    ops->adamw_scaled = NULL;
}

/* ---- a row's checks -------------------------------------------------------------------------- */

g3_status_t g3_be_row_check_opts(const g3_be_kind_info_t *row, const g3_be_opts_t *o,
                                 char *why, size_t why_len)
{
    return row->check_opts ? row->check_opts(o, why, why_len) : G3_OK;
}

g3_status_t g3_be_row_check_sizes(const g3_be_kind_info_t *row, const g3_be_opts_t *o, int C,
                                  int NH, int HS, int F, int Vp, char *why, size_t why_len)
{
    g3_status_t st = g3_be_row_check_opts(row, o, why, why_len);

    if (st == G3_OK && row->check_sizes)
        st = row->check_sizes(o, C, NH, HS, F, Vp, why, why_len);
    return st;
}
