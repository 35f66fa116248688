/* gpt3d backend: the table of kinds (backend.h), the options, opening a backend, and the
 * element types' host conversions. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kinds.h"
#ifdef HAVE_CUDA
#include "g3cuda.h"
#endif
#include "core/bf16.h"
#include "core/log.h"
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

/* ---- the table of kinds ---------------------------------------------------------------------- */

static const g3_be_kind_info_t *const g3_be_kinds[G3_BE_KINDS] = {
    [G3_BE_KIND_CPU] = &g3_be_cpu_kind,
    [G3_BE_KIND_CUDA] = &g3_be_cuda_kind,
};

const g3_be_kind_info_t *g3_be_kind(g3_be_kind_t kind)
{
    return (unsigned)kind < G3_BE_KINDS ? g3_be_kinds[kind] : NULL;
}

g3_status_t g3_be_kind_parse(const char *name, g3_be_kind_t *kind_p, char *why, size_t why_len)
{
    for (int k = 0; k < G3_BE_KINDS; k++)
        if (name && strcmp(name, g3_be_kinds[k]->name) == 0) {
            *kind_p = (g3_be_kind_t)k;
            return G3_OK;
        }
    snprintf(why, why_len, "compute backend '%s' is not one gpt3d knows (--device cpu or cuda)",
             name ? name : "(none)");
    return G3_ERR_UNSUPPORTED;
}

/* RET: o, or *dflt filled with the defaults when o is NULL. */
static const g3_be_opts_t *g3_be_opts_or_default(const g3_be_opts_t *o, g3_be_opts_t *dflt)
{
    if (o)
        return o;
    g3_be_opts_default(dflt);
    return dflt;
}

/* RET: the row of kind, or NULL with why filled. */
static const g3_be_kind_info_t *g3_be_row(g3_be_kind_t kind, char *why, size_t why_len)
{
    const g3_be_kind_info_t *row = g3_be_kind(kind);

    if (!row)
        snprintf(why, why_len, "compute backend kind %d is not one gpt3d knows (--device cpu or cuda)", (int)kind);
    return row;
}

/* The row of kind and the check of the options o (defaults filled) against it.
 * OUT: *row_p (NULL for a kind out of range).  RET: G3_OK, or why is filled. */
static g3_status_t g3_be_row_opts(g3_be_kind_t kind, const g3_be_opts_t *o,
                                  const g3_be_kind_info_t **row_p, char *why, size_t why_len)
{
    const g3_be_kind_info_t *row = g3_be_row(kind, why, why_len);

    *row_p = row;
    if (!row)
        return G3_ERR_UNSUPPORTED;
    return row->check_opts ? row->check_opts(o, why, why_len) : G3_OK;
}

g3_status_t g3_be_probe(g3_be_kind_t kind, const g3_be_opts_t *o, char *why, size_t why_len)
{
    const g3_be_kind_info_t *row;
    g3_be_opts_t dflt;
    g3_status_t st = g3_be_row_opts(kind, g3_be_opts_or_default(o, &dflt), &row, why, why_len);

    return st == G3_OK ? row->probe(why, why_len) : st;
}

g3_status_t g3_be_check_sizes(g3_be_kind_t kind, const g3_be_opts_t *o, int C, int NH, int HS,
                              int F, int Vp, char *why, size_t why_len)
{
    const g3_be_kind_info_t *row;
    g3_be_opts_t dflt;
    g3_status_t st;

    o = g3_be_opts_or_default(o, &dflt);
    st = g3_be_row_opts(kind, o, &row, why, why_len);
    if (st == G3_OK && row->check_sizes)
        st = row->check_sizes(o, C, NH, HS, F, Vp, why, why_len);
    return st;
}

/* The fields of be that come from its row, and its options. */
static void g3_be_fill_row(g3_backend_t *be, const g3_be_kind_info_t *row,
                           const g3_be_opts_t *o)
{
    be->kind = row;
    be->opts = *o;
    be->name = row->name;
    be->act_dtype = row->act_dtype;
    be->caps = row->caps;
    be->host_memory = (row->caps & G3_BE_CAP_HOST_MEMORY) != 0;
}

void g3_be_describe(g3_be_kind_t kind, const g3_be_opts_t *o, g3_backend_t *be)
{
    const g3_be_kind_info_t *row = g3_be_kind(kind) ? g3_be_kind(kind) : &g3_be_cpu_kind;
    g3_be_opts_t dflt;

    memset(be, 0, sizeof(*be));
    o = g3_be_opts_or_default(o, &dflt);
    g3_be_fill_row(be, row, o);
}

size_t g3_be_att_state_bytes(const g3_backend_t *be, int B, int T, int NH, int HS)
{
    return be->kind->attention_state_bytes(&be->opts, B, T, NH, HS);
}

size_t g3_be_att_scratch_bytes(const g3_backend_t *be, int B, int T, int NH, int HS)
{
    return be->kind->attention_scratch_bytes(&be->opts, B, T, NH, HS);
}

size_t g3_be_linear_state_bytes(const g3_backend_t *be, int IC, int OC)
{
    return be->kind->linear_state_bytes ? be->kind->linear_state_bytes(&be->opts, IC, OC) : 0;
}

void g3_be_print_devices(FILE *out)
{
#ifdef HAVE_CUDA
    int n = 0;
    char why[256];
    if (g3cuda_device_count(&n, why, sizeof(why)) == 0)
        fprintf(out, "cuda devices: %d\n", n);
    else
        fprintf(out, "cuda devices: none (%s)\n", why);
#else
    (void)out;
#endif
}

/* RET: G3_OK when be's optional vocabulary-parallel cross-entropy ops are there exactly when
 * its row says so (G3_BE_CAP_XENT_SHARDED: the model and plan size by the capability), else
 * G3_ERR_INTERNAL (logged). */
static g3_status_t g3_be_caps_agree(const g3_backend_t *be)
{
    const g3_backend_ops_t *op = be->ops;
    int all = op->xent_stats && op->xent_combine && op->xent_shard_bwd;
    int none = !op->xent_stats && !op->xent_combine && !op->xent_shard_bwd;
    int cap = (be->caps & G3_BE_CAP_XENT_SHARDED) != 0;

    if ((cap && all) || (!cap && none))
        return G3_OK;
    g3_error("compute backend %s: its sharded cross-entropy ops disagree with its row of the table of kinds (G3_BE_CAP_XENT_SHARDED); this is a bug in gpt3d",
             be->name);
    return G3_ERR_INTERNAL;
}

g3_status_t g3_be_open(g3_be_kind_t kind, const g3_be_opts_t *o, g3_backend_t **be_p)
{
    const g3_be_kind_info_t *row = g3_be_kind(kind);
    g3_backend_t *be = NULL;
    g3_be_opts_t dflt, opts;
    char why[768];
    g3_status_t st;

    opts = *g3_be_opts_or_default(o, &dflt);
    st = g3_be_probe(kind, &opts, why, sizeof(why));
    if (st == G3_OK && !row->open) {   /* a probe that passes a kind not built in: a bug */
        snprintf(why, sizeof(why), "compute backend %s is not built into this gpt3d", row->name);
        st = G3_ERR_UNSUPPORTED;
    }
    if (st != G3_OK) {
        g3_error("%s", why);
        return st;
    }
    st = row->open(&opts, &be);
    if (st != G3_OK)
        return st;
    g3_be_fill_row(be, row, &opts);
    st = g3_be_caps_agree(be);
    if (st != G3_OK) {
        g3_be_close(be);
        return st;
    }
    *be_p = be;
    return G3_OK;
}

void g3_be_close(g3_backend_t *be)
{
    if (be != NULL)
        be->ops->close(be);
}

g3_status_t g3_be_clip_alloc(g3_backend_t *be, double **sumsq_p, float **scale_p)
{
    void *buf = NULL;
    g3_status_t st;

    *sumsq_p = NULL;
    *scale_p = NULL;
    if (!be->ops->sumsq_acc || !be->ops->clip_scale || !be->ops->adamw_scaled)
        return G3_OK;
    st = be->ops->alloc(be, 16, "the gradient norm and clipping scale", &buf);
    if (st != G3_OK)
        return st;
    *sumsq_p = buf;
    *scale_p = (float *)((char *)buf + 8);
    return G3_OK;
}
