/* gpt3d backend: probing, checking, describing and opening a backend of a kind, through its
 * row of the table of kinds (backend.h).
 *
 * This file names no row: it finds them with g3_be_kind (kinds.c, the only file that names
 * them) and calls them only through their fields.  The rows call shared.c, never this file,
 * so the files of src/backend call in no circle (docs/design.md, "Backend kinds"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#ifdef HAVE_CUDA
#include "g3cuda.h"
#endif
#include "core/log.h"

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
    return g3_be_row_check_opts(row, o, why, why_len);
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
    const g3_be_kind_info_t *row = g3_be_row(kind, why, why_len);
    g3_be_opts_t dflt;

    if (!row)
        return G3_ERR_UNSUPPORTED;
    return g3_be_row_check_sizes(row, g3_be_opts_or_default(o, &dflt), C, NH, HS, F, Vp, why,
                                 why_len);
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
    const g3_be_kind_info_t *row = g3_be_kind(kind);
    g3_be_opts_t dflt;

    if (!row)
        row = g3_be_kind(G3_BE_KIND_CPU);
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
