/* gpt3d backend: causal self-attention on cuDNN's fused flash-attention engines through the
 * backend graph API of cuDNN 9 (cudnn_graph.h), in C.  See cudnn_att.h for the math and the
 * contract, docs/cuda.md ("cuDNN attention") for the design.
 *
 * The graphs are cudnn-frontend's CompositeSDPANode / CompositeSDPABackwardNode expansion
 * (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h, the causal mask of
 * diagonal_band_mask.h and the softmax of softmax.h), operation for operation and with the
 * same tensor types, so that cuDNN's pattern matcher hands them to the fused engines:
 *   - inputs and outputs bf16, byte alignment 16; every intermediate (virtual) tensor fp32,
 *     except the probabilities and dS entering a matmul (bf16) and the masks (int32 indices,
 *     a boolean comparison);
 *   - K enters as K^T = (B,NH,HS,T) by swapping its last two strides (the backward also V^T);
 *   - the scale and -inf are by-value fp32 scalars of dims (1,1,1,1), passed in the variant
 *     pack as host pointers;
 *   - the backward's D = sum(dO * O) and the fp32 dQ accumulator are non-virtual tensors the
 *     caller places in memory (the model's attention scratch), as the frontend places them in
 *     its workspace.
 * UIDs: 1..16 the tensors the variant pack names, 1000+ the virtual ones.
 *
 * Shapes: B micro-batch, T sequence, NH heads, HS head size, C = NH*HS, C3 = 3C. */
#include "config.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cudnn_att.h"
#include "core/log.h"
#include "g3cuda.h"

/* ---- building graphs: every descriptor of a graph, the first failure kept ---------------- */

#define G3_CUDNN_MAX_DESC 192
#define G3_CUDNN_MAX_OPS  40

enum {
    G3_UID_Q = 1, G3_UID_K, G3_UID_V, G3_UID_O, G3_UID_STATS, G3_UID_DO, G3_UID_DQ, G3_UID_DK,
    G3_UID_DV, G3_UID_SUM, G3_UID_DQACC, G3_UID_SCALE, G3_UID_NEGINF, G3_UID_ONE,
    G3_UID_VIRTUAL = 1000
};

typedef struct g3_cudnn_graph {
    cudnnBackendDescriptor_t desc[G3_CUDNN_MAX_DESC];   /* destroyed in reverse order */
    int                      ndesc;
    cudnnBackendDescriptor_t ops[G3_CUDNN_MAX_OPS];     /* the operations, in order     */
    int                      nops;
    cudnnBackendDescriptor_t graph;                     /* the operation graph          */
    int64_t                  next_uid;
    int64_t                  io[G3_CUDNN_MAX_OPS];      /* the non-virtual tensors' UIDs */
    int                      nio;
    cudnnStatus_t            st;                        /* first failure, and where     */
    char                     where[160];
    char                     msg[512];
} g3_cudnn_graph_t;

static int g3_cudnn_gb_fail(g3_cudnn_graph_t *g, cudnnStatus_t st, const char *where)
{
    if (g->st == CUDNN_STATUS_SUCCESS) {
        g->st = st;
        snprintf(g->where, sizeof(g->where), "%s", where);
        cudnnGetLastErrorString(g->msg, sizeof(g->msg));
    }
    return 1;
}

static cudnnBackendDescriptor_t g3_cudnn_gb_new(g3_cudnn_graph_t *g, cudnnBackendDescriptorType_t t,
                                                const char *where)
{
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t st;

    if (g->st != CUDNN_STATUS_SUCCESS)
        return NULL;
    if (g->ndesc == G3_CUDNN_MAX_DESC) {
        g3_cudnn_gb_fail(g, CUDNN_STATUS_INTERNAL_ERROR, where);
        snprintf(g->msg, sizeof(g->msg), "more than %d descriptors in one graph",
                 G3_CUDNN_MAX_DESC);
        return NULL;
    }
    st = cudnnBackendCreateDescriptor(t, &d);
    if (st != CUDNN_STATUS_SUCCESS) {
        g3_cudnn_gb_fail(g, st, where);
        return NULL;
    }
    g->desc[g->ndesc++] = d;
    return d;
}

static void g3_cudnn_gb_set(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t d,
                            cudnnBackendAttributeName_t attr, cudnnBackendAttributeType_t type,
                            int64_t n, const void *val, const char *where)
{
    cudnnStatus_t st;

    if (g->st != CUDNN_STATUS_SUCCESS || d == NULL)
        return;
    st = cudnnBackendSetAttribute(d, attr, type, n, val);
    if (st != CUDNN_STATUS_SUCCESS)
        g3_cudnn_gb_fail(g, st, where);
}

static void g3_cudnn_gb_finalize(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t d, const char *where)
{
    cudnnStatus_t st;

    if (g->st != CUDNN_STATUS_SUCCESS || d == NULL)
        return;
    st = cudnnBackendFinalize(d);
    if (st != CUDNN_STATUS_SUCCESS)
        g3_cudnn_gb_fail(g, st, where);
}

/* A 4-d tensor.  uid 0: a new virtual one. */
static cudnnBackendDescriptor_t g3_cudnn_gb_tensor(g3_cudnn_graph_t *g, int64_t uid,
                                                   cudnnDataType_t type, const int64_t dims[4],
                                                   const int64_t strides[4], bool by_value,
                                                   const char *name)
{
    cudnnBackendDescriptor_t t = g3_cudnn_gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, name);
    bool virt = uid == 0;
    int64_t align = 16, id = virt ? g->next_uid++ : uid;

    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, name);
    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, name);
    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, name);
    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, name);
    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, name);
    g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, name);
    if (by_value)
        g3_cudnn_gb_set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value,
                        name);
    g3_cudnn_gb_finalize(g, t, name);
    if (!virt && g->st == CUDNN_STATUS_SUCCESS && g->nio < G3_CUDNN_MAX_OPS)
        g->io[g->nio++] = id;
    return t;
}

/* A by-value fp32 scalar, dims (1,1,1,1). */
static cudnnBackendDescriptor_t g3_cudnn_gb_scalar(g3_cudnn_graph_t *g, int64_t uid,
                                                   const char *name)
{
    static const int64_t one[4] = { 1, 1, 1, 1 };
    return g3_cudnn_gb_tensor(g, uid, CUDNN_DATA_FLOAT, one, one, true, name);
}

static void g3_cudnn_gb_op(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t op, const char *where)
{
    g3_cudnn_gb_finalize(g, op, where);
    if (g->st != CUDNN_STATUS_SUCCESS)
        return;
    if (g->nops == G3_CUDNN_MAX_OPS) {
        g3_cudnn_gb_fail(g, CUDNN_STATUS_INTERNAL_ERROR, where);
        snprintf(g->msg, sizeof(g->msg), "more than %d operations in one graph",
                 G3_CUDNN_MAX_OPS);
        return;
    }
    g->ops[g->nops++] = op;
}

/* RET: a new operation descriptor of type t whose attributes attrs[i] are the descriptors
 * descs[i] (a NULL one left unset), for the caller to finish with g3_cudnn_gb_op. */
static cudnnBackendDescriptor_t g3_cudnn_gb_op_new(g3_cudnn_graph_t *g,
                                                   cudnnBackendDescriptorType_t t, int n,
                                                   const cudnnBackendAttributeName_t *attrs,
                                                   const cudnnBackendDescriptor_t *descs,
                                                   const char *name)
{
    cudnnBackendDescriptor_t op = g3_cudnn_gb_new(g, t, name);

    for (int i = 0; i < n; i++)
        if (descs[i])
            g3_cudnn_gb_set(g, op, attrs[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descs[i], name);
    return op;
}

/* y = mode(x [, b [, t]]) with math in prec; axis >= 0 for GEN_INDEX. */
static void g3_cudnn_gb_pointwise(g3_cudnn_graph_t *g, cudnnPointwiseMode_t mode,
                                  cudnnDataType_t prec, int64_t axis, cudnnBackendDescriptor_t x,
                                  cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                                  cudnnBackendDescriptor_t y, const char *name)
{
    static const cudnnBackendAttributeName_t attrs[] = {
        CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
        CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
        CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
    };
    cudnnBackendDescriptor_t pw = g3_cudnn_gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name);
    cudnnBackendDescriptor_t op;
    float alpha = 1.0f;

    g3_cudnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, name);
    g3_cudnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, name);
    if (axis >= 0)
        g3_cudnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, name);
    g3_cudnn_gb_finalize(g, pw, name);
    op = g3_cudnn_gb_op_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 5, attrs,
                            (cudnnBackendDescriptor_t[]){ pw, x, b, t, y }, name);
    g3_cudnn_gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha,
                    name);
    g3_cudnn_gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha,
                    name);
    g3_cudnn_gb_op(g, op, name);
}

/* c = a . b (batched over the first two dimensions), fp32 accumulation. */
static void g3_cudnn_gb_matmul(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t a,
                               cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
                               const char *name)
{
    static const cudnnBackendAttributeName_t attrs[] = {
        CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
        CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_ATTR_OPERATION_MATMUL_DESC,
    };
    cudnnBackendDescriptor_t mm = g3_cudnn_gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, name);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;

    g3_cudnn_gb_set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    g3_cudnn_gb_finalize(g, mm, name);
    g3_cudnn_gb_op(g,
                   g3_cudnn_gb_op_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, 4, attrs,
                                      (cudnnBackendDescriptor_t[]){ a, b, c, mm }, name),
                   name);
}

/* y = reduce(x) over the dimensions where y has 1, fp32. */
static void g3_cudnn_gb_reduce(g3_cudnn_graph_t *g, cudnnReduceTensorOp_t mode,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                               const char *name)
{
    static const cudnnBackendAttributeName_t attrs[] = {
        CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
        CUDNN_ATTR_OPERATION_REDUCTION_DESC,
    };
    cudnnBackendDescriptor_t rd = g3_cudnn_gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, name);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;

    g3_cudnn_gb_set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    g3_cudnn_gb_set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
                    &mode, name);
    g3_cudnn_gb_finalize(g, rd, name);
    g3_cudnn_gb_op(g,
                   g3_cudnn_gb_op_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, 3, attrs,
                                      (cudnnBackendDescriptor_t[]){ x, y, rd }, name),
                   name);
}

/* y = x seen through other strides (a transpose view). */
static void g3_cudnn_gb_reshape(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t x,
                                cudnnBackendDescriptor_t y, const char *name)
{
    static const cudnnBackendAttributeName_t attrs[] = {
        CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_ATTR_OPERATION_RESHAPE_YDESC,
    };

    g3_cudnn_gb_op(g,
                   g3_cudnn_gb_op_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, 2, attrs,
                                      (cudnnBackendDescriptor_t[]){ x, y }, name),
                   name);
}

/* A new virtual fp32 tensor y (dims, strides; named yname) = mode(x [, b]) in fp32. */
static cudnnBackendDescriptor_t g3_cudnn_gb_pw_new(g3_cudnn_graph_t *g, cudnnPointwiseMode_t mode,
                                                   cudnnBackendDescriptor_t x,
                                                   cudnnBackendDescriptor_t b,
                                                   const int64_t dims[4], const int64_t strides[4],
                                                   const char *yname, const char *name)
{
    cudnnBackendDescriptor_t y =
        g3_cudnn_gb_tensor(g, 0, CUDNN_DATA_FLOAT, dims, strides, false, yname);

    g3_cudnn_gb_pointwise(g, mode, CUDNN_DATA_FLOAT, -1, x, b, NULL, y, name);
    return y;
}

/* y = (row >= column) ? x : -inf over the last two dimensions of x (the causal mask,
 * top-left aligned: diagonal_band_mask with right bound 0). */
static cudnnBackendDescriptor_t g3_cudnn_gb_causal(g3_cudnn_graph_t *g, cudnnBackendDescriptor_t x,
                                                   const int64_t dims[4], const int64_t strides[4],
                                                   cudnnBackendDescriptor_t neg_inf)
{
    cudnnBackendDescriptor_t row =
        g3_cudnn_gb_tensor(g, 0, CUDNN_DATA_INT32, dims, strides, false, "row index");
    cudnnBackendDescriptor_t col =
        g3_cudnn_gb_tensor(g, 0, CUDNN_DATA_INT32, dims, strides, false, "column index");
    cudnnBackendDescriptor_t keep =
        g3_cudnn_gb_tensor(g, 0, CUDNN_DATA_BOOLEAN, dims, strides, false, "row >= column");
    cudnnBackendDescriptor_t y =
        g3_cudnn_gb_tensor(g, 0, CUDNN_DATA_FLOAT, dims, strides, false, "masked scores");

    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2, x, NULL, NULL, row,
                          "gen_row_index");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3, x, NULL, NULL, col,
                          "gen_col_index");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL, keep,
                          "row>=col");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, x, neg_inf, keep,
                          y, "causal select");
    return y;
}

/* The layouts, shared by both graphs. */
typedef struct {
    int64_t q[4], qs[4];        /* Q, V, dQ, dK, dV: (B,NH,T,HS) in qkv / dqkv        */
    int64_t kt[4], kts[4];      /* K^T (and V^T): (B,NH,HS,T), strides swapped        */
    int64_t os[4];              /* O, dO: (B,NH,T,HS) in (B,T,C)                      */
    int64_t s[4], ss[4];        /* scores (B,NH,T,T)                                  */
    int64_t sts[4];             /* their transpose's strides                          */
    int64_t r[4], rs[4];        /* row statistics (B,NH,T,1)                          */
    int64_t acc_s[4];           /* the dQ accumulator, (B,NH,T,HS) packed             */
    int64_t dot_s[4];           /* dO * O as cudnn-frontend lays it out (virtual)     */
} g3_cudnn_layout_t;

static void g3_cudnn_layout(const g3_cudnn_key_t *k, g3_cudnn_layout_t *l)
{
    int64_t B = k->B, T = k->T, NH = k->NH, HS = k->HS, C = NH * HS, C3 = 3 * C;

    *l = (g3_cudnn_layout_t){
        .q = { B, NH, T, HS }, .qs = { T * C3, HS, C3, 1 },
        .kt = { B, NH, HS, T }, .kts = { T * C3, HS, 1, C3 },
        .os = { T * C, HS, C, 1 },
        .s = { B, NH, T, T }, .ss = { NH * T * T, T * T, T, 1 },
        .sts = { NH * T * T, T * T, 1, T },
        .r = { B, NH, T, 1 }, .rs = { NH * T, T, 1, 1 },
        .acc_s = { NH * T * HS, T * HS, HS, 1 },
        .dot_s = { NH * T * HS, T * HS, NH * HS, 1 },
    };
}

/* The variant packs' UIDs, in the order g3_cudnn_att_fwd/bwd give their pointers: exactly the
 * graphs' non-virtual tensors (g3_cudnn_att_graph_check compares them).  The backward's last
 * one, the dQ accumulator, is absent from the deterministic graph. */
static const int64_t g3_cudnn_fwd_uids[7] = { G3_UID_Q, G3_UID_K, G3_UID_V, G3_UID_O,
                                              G3_UID_STATS, G3_UID_SCALE, G3_UID_NEGINF };
static const int64_t g3_cudnn_bwd_uids[14] = {
    G3_UID_Q,  G3_UID_K,  G3_UID_V,   G3_UID_O,     G3_UID_DO,     G3_UID_STATS, G3_UID_DQ,
    G3_UID_DK, G3_UID_DV, G3_UID_SUM, G3_UID_SCALE, G3_UID_NEGINF, G3_UID_ONE,   G3_UID_DQACC
};

/* RET: the number of UIDs in key's variant pack; *uids_p the list. */
static int g3_cudnn_pack_uids(const g3_cudnn_key_t *key, const int64_t **uids_p)
{
    if (key->dir == G3_CUDNN_FWD) {
        *uids_p = g3_cudnn_fwd_uids;
        return 7;
    }
    *uids_p = g3_cudnn_bwd_uids;
    return key->deterministic ? 13 : 14;
}

/* -inf, or the lowest float before cuDNN 9.10 (cudnn-frontend's get_negative_inf_value). */
static float g3_cudnn_neg_inf(void)
{
    return cudnnGetVersion() < 91000 ? -3.402823466e38f : -INFINITY;
}

/* The tensors both graphs read or write: Q, K^T, O, the softmax statistics, the scalars. */
typedef struct {
    cudnnBackendDescriptor_t q, kt, o, stats, scale, neg_inf;
} g3_cudnn_io_t;

static void g3_cudnn_build_io(g3_cudnn_graph_t *g, const g3_cudnn_layout_t *l, g3_cudnn_io_t *io)
{
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16;

    io->q = g3_cudnn_gb_tensor(g, G3_UID_Q, BF, l->q, l->qs, false, "Q");
    io->kt = g3_cudnn_gb_tensor(g, G3_UID_K, BF, l->kt, l->kts, false, "K^T");
    io->o = g3_cudnn_gb_tensor(g, G3_UID_O, BF, l->q, l->os, false, "O");
    io->stats = g3_cudnn_gb_tensor(g, G3_UID_STATS, CUDNN_DATA_FLOAT, l->r, l->rs, false, "Stats");
    io->scale = g3_cudnn_gb_scalar(g, G3_UID_SCALE, "attn_scale");
    io->neg_inf = g3_cudnn_gb_scalar(g, G3_UID_NEGINF, "-inf");
}

/* The forward: Q.K^T, scale, causal mask, softmax with its statistics, .V. */
static void g3_cudnn_build_fwd(g3_cudnn_graph_t *g, const g3_cudnn_layout_t *l,
                               const g3_cudnn_io_t *io)
{
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t q = io->q, kt = io->kt, o = io->o, stats = io->stats;
    cudnnBackendDescriptor_t scale = io->scale, neg_inf = io->neg_inf;
    cudnnBackendDescriptor_t v = g3_cudnn_gb_tensor(g, G3_UID_V, BF, l->q, l->qs, false, "V");
    cudnnBackendDescriptor_t s = g3_cudnn_gb_tensor(g, 0, F, l->s, l->ss, false, "S");
    cudnnBackendDescriptor_t s1, s2, max, sub, e, sum, lg, p;

    g3_cudnn_gb_matmul(g, q, kt, s, "bmm1 Q.K^T");
    s1 = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_MUL, s, scale, l->s, l->ss, "S*scale", "attn_scale");
    s2 = g3_cudnn_gb_causal(g, s1, l->s, l->ss, neg_inf);
    max = g3_cudnn_gb_tensor(g, 0, F, l->r, l->rs, false, "max");
    g3_cudnn_gb_reduce(g, CUDNN_REDUCE_TENSOR_MAX, s2, max, "softmax max");
    sub = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_SUB, s2, max, l->s, l->ss, "S-max", "softmax sub");
    e = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_EXP, sub, NULL, l->s, l->ss, "exp(S-max)",
                           "softmax exp");
    sum = g3_cudnn_gb_tensor(g, 0, F, l->r, l->rs, false, "sum exp");
    g3_cudnn_gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, sum, "softmax sum");
    lg = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_LOG, sum, NULL, l->r, l->rs, "log sum",
                            "softmax log");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_ADD, F, -1, max, lg, NULL, stats, "softmax stats");
    p = g3_cudnn_gb_tensor(g, 0, BF, l->s, l->ss, false, "P");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_DIV, F, -1, e, sum, NULL, p, "softmax div");
    g3_cudnn_gb_matmul(g, p, v, o, "bmm2 P.V");
}

/* The backward (deterministic: dQ straight from its matmul, no fp32 accumulator). */
static void g3_cudnn_build_bwd(g3_cudnn_graph_t *g, const g3_cudnn_layout_t *l,
                               const g3_cudnn_io_t *io, int deterministic)
{
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t q = io->q, kt = io->kt, o = io->o, stats = io->stats;
    cudnnBackendDescriptor_t scale = io->scale, neg_inf = io->neg_inf;
    cudnnBackendDescriptor_t vt = g3_cudnn_gb_tensor(g, G3_UID_V, BF, l->kt, l->kts, false, "V^T");
    cudnnBackendDescriptor_t dO = g3_cudnn_gb_tensor(g, G3_UID_DO, BF, l->q, l->os, false, "dO");
    cudnnBackendDescriptor_t dq = g3_cudnn_gb_tensor(g, G3_UID_DQ, BF, l->q, l->qs, false, "dQ");
    cudnnBackendDescriptor_t dk = g3_cudnn_gb_tensor(g, G3_UID_DK, BF, l->q, l->qs, false, "dK");
    cudnnBackendDescriptor_t dv = g3_cudnn_gb_tensor(g, G3_UID_DV, BF, l->q, l->qs, false, "dV");
    cudnnBackendDescriptor_t sum =
        g3_cudnn_gb_tensor(g, G3_UID_SUM, F, l->r, l->rs, false, "softmax_sum");
    cudnnBackendDescriptor_t one = g3_cudnn_gb_scalar(g, G3_UID_ONE, "one");
    cudnnBackendDescriptor_t dot, red, s, s1, s2, sm, e, pt, dp, dp1, ds, ds1, dst, kr;

    /* D = sum_HS(dO * O), times 1 (the dropout-free scale), kept for the dP - D below */
    dot = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_MUL, dO, o, l->q, l->dot_s, "dO*O", "mul_dO_O");
    red = g3_cudnn_gb_tensor(g, 0, F, l->r, l->rs, false, "sum dO*O");
    g3_cudnn_gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, dot, red, "reduce_dO_o");
    g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_MUL, F, -1, red, one, NULL, sum, "scale_dropout_inv");
    /* P = exp(S * scale - Stats) under the causal mask */
    s = g3_cudnn_gb_tensor(g, 0, F, l->s, l->ss, false, "S");
    g3_cudnn_gb_matmul(g, q, kt, s, "matmul_Q_KT");
    s1 = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_MUL, s, scale, l->s, l->ss, "S*scale",
                            "mul_s_attn_scale");
    s2 = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_SUB, s1, stats, l->s, l->ss, "S-Stats", "sub_s_m");
    sm = g3_cudnn_gb_causal(g, s2, l->s, l->ss, neg_inf);
    e = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_EXP, sm, NULL, l->s, l->ss, "P", "exp_s");
    /* dV = P^T . dO */
    pt = g3_cudnn_gb_tensor(g, 0, BF, l->s, l->sts, false, "P^T");
    g3_cudnn_gb_reshape(g, e, pt, "reshape_p");
    g3_cudnn_gb_matmul(g, pt, dO, dv, "matmul_pT_dO");
    /* dS = P * (dO . V^T - D) * scale */
    dp = g3_cudnn_gb_tensor(g, 0, F, l->s, l->ss, false, "dP");
    g3_cudnn_gb_matmul(g, dO, vt, dp, "matmul_dO_VT");
    dp1 = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_SUB, dp, sum, l->s, l->ss, "dP-D",
                             "sub_dP_softmax_sum");
    ds = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_MUL, dp1, e, l->s, l->ss, "dS", "mul_dP_exp_s");
    ds1 = g3_cudnn_gb_pw_new(g, CUDNN_POINTWISE_MUL, ds, scale, l->s, l->ss, "dS*scale",
                             "mul_dS_attn_scale");
    /* dK = dS^T . Q */
    dst = g3_cudnn_gb_tensor(g, 0, BF, l->s, l->sts, false, "dS^T");
    g3_cudnn_gb_reshape(g, ds1, dst, "reshape_dS");
    g3_cudnn_gb_matmul(g, dst, q, dk, "matmul_dST_Q");
    /* dQ = dS . K, K seen back through K^T's strides */
    {
        const int64_t kd[4] = { l->kt[0], l->kt[1], l->kt[3], l->kt[2] };
        const int64_t ks[4] = { l->kts[0], l->kts[1], l->kts[3], l->kts[2] };
        kr = g3_cudnn_gb_tensor(g, 0, BF, kd, ks, false, "K");
    }
    g3_cudnn_gb_reshape(g, kt, kr, "reshape_k");
    if (deterministic) {
        g3_cudnn_gb_matmul(g, ds1, kr, dq, "matmul_dS_K");
    } else {
        cudnnBackendDescriptor_t acc =
            g3_cudnn_gb_tensor(g, G3_UID_DQACC, F, l->q, l->acc_s, false, "dQ_accum");
        g3_cudnn_gb_matmul(g, ds1, kr, acc, "matmul_dS_K");
        g3_cudnn_gb_pointwise(g, CUDNN_POINTWISE_IDENTITY, F, -1, acc, NULL, NULL, dq,
                              "identity_dQ");
    }
}

/* Build every descriptor of key's graph; with handle (or when cuDNN finalizes without one:
 * handle NULL and try_graph) the operation graph too.  RET: 0, or 1 with g->st/where/msg. */
static int g3_cudnn_graph_build(g3_cudnn_graph_t *g, const g3_cudnn_key_t *key,
                                cudnnHandle_t handle, int try_graph)
{
    g3_cudnn_layout_t l;
    g3_cudnn_io_t io;

    memset(g, 0, sizeof(*g));
    g->next_uid = G3_UID_VIRTUAL;
    g3_cudnn_layout(key, &l);
    g3_cudnn_build_io(g, &l, &io);
    if (key->dir == G3_CUDNN_FWD)
        g3_cudnn_build_fwd(g, &l, &io);
    else
        g3_cudnn_build_bwd(g, &l, &io, key->deterministic);
    if (g->st != CUDNN_STATUS_SUCCESS || (!handle && !try_graph))
        return g->st != CUDNN_STATUS_SUCCESS;
    g->graph = g3_cudnn_gb_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    g3_cudnn_gb_set(g, g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                    g->nops, g->ops, "operation graph");
    if (handle) {
        /* deprecated in 9.19 (which no longer needs it) but required before */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        g3_cudnn_gb_set(g, g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                        &handle, "operation graph handle");
#pragma GCC diagnostic pop
    }
    g3_cudnn_gb_finalize(g, g->graph, "operation graph");
    return g->st != CUDNN_STATUS_SUCCESS;
}

static void g3_cudnn_graph_free(g3_cudnn_graph_t *g)
{
    while (g->ndesc > 0)
        cudnnBackendDestroyDescriptor(g->desc[--g->ndesc]);
}

/* why = "<where>: <status>: <cuDNN's last error>" */
static void g3_cudnn_graph_why(const g3_cudnn_graph_t *g, char *why, size_t why_len)
{
    snprintf(why, why_len, "%s: %s%s%s", g->where, cudnnGetErrorString(g->st),
             g->msg[0] ? ": " : "", g->msg);
}

long g3_cudnn_version(void)
{
    return (long)cudnnGetVersion();
}

g3_status_t g3_cudnn_att_graph_check(const g3_cudnn_key_t *key, int *nops_p,
                                     int *graph_final_p, char *why, size_t why_len)
{
    g3_cudnn_graph_t *g = malloc(sizeof(*g));
    g3_status_t st = G3_OK;

    if (g == NULL) {
        snprintf(why, why_len, "out of host memory");
        return G3_ERR_NO_MEMORY;
    }
    *graph_final_p = 0;
    if (g3_cudnn_graph_build(g, key, NULL, 0)) {
        g3_cudnn_graph_why(g, why, why_len);
        st = G3_ERR_UNSUPPORTED;
        goto out;
    }
    *nops_p = g->nops;
    {   /* the variant pack names exactly the graph's non-virtual tensors */
        const int64_t *uids;
        int n = g3_cudnn_pack_uids(key, &uids), same = n == g->nio;
        for (int i = 0; same && i < n; i++) {
            int found = 0;
            for (int j = 0; j < g->nio; j++)
                found |= g->io[j] == uids[i];
            same = found;
        }
        if (!same) {
            snprintf(why, why_len,
                     "the variant pack's %d UIDs are not the graph's %d non-virtual tensors", n,
                     g->nio);
            st = G3_ERR_INTERNAL;
            goto out;
        }
    }
    g3_cudnn_graph_free(g);
    /* again, now with the operation graph: a failure there is a fact about this cuDNN (it
     * wants a handle), reported in why, not an error in the descriptors */
    if (g3_cudnn_graph_build(g, key, NULL, 1) == 0)
        *graph_final_p = 1;
    else
        g3_cudnn_graph_why(g, why, why_len);
out:
    g3_cudnn_graph_free(g);
    free(g);
    return st;
}

/* ---- plans, the shape decisions, execution ------------------------------------------------ */

#define G3_CUDNN_PLANS  32
#define G3_CUDNN_SHAPES 16

typedef struct {
    int                      used;
    g3_cudnn_key_t           key;
    g3_cudnn_graph_t        *graph;   /* kept alive as long as the plan                    */
    cudnnBackendDescriptor_t plan;
    int64_t                  workspace;
} g3_cudnn_plan_t;

typedef struct {
    int B, T, NH, HS;
    int use[2];          /* per direction (g3_cudnn_dir_t): 1 cuDNN, 0 native */
} g3_cudnn_shape_t;

struct g3_cudnn {
    g3cuda_ctx_t    *ctx;
    cudnnHandle_t    handle;
    g3_cudnn_want_t  want;
    int              deterministic;
    g3_cudnn_plan_t  plans[G3_CUDNN_PLANS];
    int              plan_next;                 /* round-robin victim when full          */
    g3_cudnn_shape_t shapes[G3_CUDNN_SHAPES];
    int              nshapes;
    void            *workspace;                 /* cuDNN's own workspace (g3cuda_malloc) */
    size_t           workspace_bytes;
    float            scale, neg_inf, one;       /* the by-value scalars' storage         */
};

g3_status_t g3_cudnn_open(struct g3cuda_ctx *ctx, g3_cudnn_want_t want, int deterministic,
                          g3_cudnn_t **cd_p, char *why, size_t why_len)
{
    g3_cudnn_t *cd;
    cudnnStatus_t st;
    char msg[512];

    *cd_p = NULL;
    if (want == G3_CUDNN_WANT_NATIVE)
        return G3_OK;
    cd = calloc(1, sizeof(*cd));
    if (cd == NULL) {
        snprintf(why, why_len, "out of host memory for the cuDNN state");
        return G3_ERR_NO_MEMORY;
    }
    cd->ctx = ctx;
    cd->want = want;
    cd->deterministic = deterministic;
    cd->neg_inf = g3_cudnn_neg_inf();
    cd->one = 1.0f;
    st = cudnnCreate(&cd->handle);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnSetStream(cd->handle, (cudaStream_t)g3cuda_ctx_stream(ctx));
    if (st != CUDNN_STATUS_SUCCESS) {
        cudnnGetLastErrorString(msg, sizeof(msg));
        snprintf(why, why_len, "cuDNN %ld: cudnnCreate/cudnnSetStream: %s%s%s",
                 g3_cudnn_version(), cudnnGetErrorString(st), msg[0] ? ": " : "", msg);
        if (cd->handle)
            cudnnDestroy(cd->handle);
        free(cd);
        return G3_ERR_DEVICE;
    }
    g3_debug("cuDNN %ld (built against %d): handle on the CUDA backend's stream; attention %s%s",
             g3_cudnn_version(), CUDNN_VERSION,
             want == G3_CUDNN_WANT_CUDNN ? "cudnn" : "auto",
             deterministic ? ", deterministic engines only" : "");
    *cd_p = cd;
    return G3_OK;
}

static void g3_cudnn_plan_drop(g3_cudnn_plan_t *p)
{
    if (!p->used)
        return;
    cudnnBackendDestroyDescriptor(p->plan);
    g3_cudnn_graph_free(p->graph);
    free(p->graph);
    memset(p, 0, sizeof(*p));
}

void g3_cudnn_close(g3_cudnn_t *cd)
{
    if (cd == NULL)
        return;
    for (int i = 0; i < G3_CUDNN_PLANS; i++)
        g3_cudnn_plan_drop(&cd->plans[i]);
    if (cd->workspace)
        g3cuda_free(cd->ctx, cd->workspace);
    cudnnDestroy(cd->handle);
    free(cd);
}

/* RET: 1 when the engine of cfg has the non-deterministic numerical note. */
static int g3_cudnn_cfg_nondeterministic(cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t eng = NULL;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = 0, count = 0;
    int nondet = 1;   /* unknown counts as non-deterministic */

    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) !=
        CUDNN_STATUS_SUCCESS)
        return 1;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 1, &count, &eng) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                 CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                 notes) == CUDNN_STATUS_SUCCESS) {
        nondet = 0;
        for (int64_t i = 0; i < n; i++)
            if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
                nondet = 1;
    }
    cudnnBackendDestroyDescriptor(eng);
    return nondet;
}

/* Heuristics (mode A, then the fallback list), and the first engine configuration whose plan
 * finalizes.  OUT: p->plan, p->workspace.  RET: 0, or 1 with the reason in why. */
static int g3_cudnn_plan_make(g3_cudnn_t *cd, g3_cudnn_plan_t *p, char *why, size_t why_len)
{
    static const cudnnBackendHeurMode_t modes[2] = { CUDNN_HEUR_MODE_A,
                                                     CUDNN_HEUR_MODE_FALLBACK };
    g3_cudnn_graph_t *g = p->graph;
    char last[640] = "the heuristics offered no engine configuration";
    int skipped_nondet = 0;

    for (int m = 0; m < 2; m++) {
        cudnnBackendDescriptor_t heur = NULL, cfgs[64];
        int64_t n = 0;
        int ncfg = 0, found = 0;
        cudnnStatus_t st;

        st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->graph);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                          CUDNN_TYPE_HEUR_MODE, 1, &modes[m]);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnBackendFinalize(heur);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
        if (n > 64)
            n = 64;
        for (; st == CUDNN_STATUS_SUCCESS && ncfg < n; ncfg++)
            st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[ncfg]);
        if (st == CUDNN_STATUS_SUCCESS && n > 0)
            st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n, cfgs);
        if (st != CUDNN_STATUS_SUCCESS) {
            char msg[512];
            cudnnGetLastErrorString(msg, sizeof(msg));
            snprintf(last, sizeof(last), "heuristics (mode %d): %s%s%s", (int)modes[m],
                     cudnnGetErrorString(st), msg[0] ? ": " : "", msg);
        }
        for (int64_t i = 0; st == CUDNN_STATUS_SUCCESS && i < n && !found; i++) {
            cudnnBackendDescriptor_t plan = NULL;
            cudnnStatus_t ps;

            if (cd->deterministic && g3_cudnn_cfg_nondeterministic(cfgs[i])) {
                skipped_nondet++;
                continue;
            }
            ps = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
            if (ps == CUDNN_STATUS_SUCCESS)
                ps = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            if (ps == CUDNN_STATUS_SUCCESS)
                ps = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                              CUDNN_TYPE_HANDLE, 1, &cd->handle);
#pragma GCC diagnostic pop
            if (ps == CUDNN_STATUS_SUCCESS)
                ps = cudnnBackendFinalize(plan);
            if (ps == CUDNN_STATUS_SUCCESS) {
                int64_t ws = 0, cnt = 0;
                ps = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &cnt, &ws);
                if (ps == CUDNN_STATUS_SUCCESS) {
                    p->plan = plan;
                    p->workspace = ws;
                    found = 1;
                    continue;
                }
            }
            {
                char msg[512];
                cudnnGetLastErrorString(msg, sizeof(msg));
                snprintf(last, sizeof(last), "engine configuration %d of mode %d: %s%s%s",
                         (int)i, (int)modes[m], cudnnGetErrorString(ps), msg[0] ? ": " : "",
                         msg);
            }
            if (plan)
                cudnnBackendDestroyDescriptor(plan);
        }
        for (int i = 0; i < ncfg; i++)
            cudnnBackendDestroyDescriptor(cfgs[i]);
        if (heur)
            cudnnBackendDestroyDescriptor(heur);
        if (found)
            return 0;
    }
    if (skipped_nondet > 0)
        snprintf(why, why_len,
                 "%s (deterministic: %d non-deterministic engine configurations skipped)", last,
                 skipped_nondet);
    else
        snprintf(why, why_len, "%s", last);
    return 1;
}

/* RET: the plan for key, built on first use; NULL with the reason in why. */
static g3_cudnn_plan_t *g3_cudnn_plan_get(g3_cudnn_t *cd, const g3_cudnn_key_t *key, char *why,
                                          size_t why_len)
{
    g3_cudnn_plan_t fresh, *p;

    for (int i = 0; i < G3_CUDNN_PLANS; i++)
        if (cd->plans[i].used && g3_cudnn_key_eq(&cd->plans[i].key, key))
            return &cd->plans[i];
    memset(&fresh, 0, sizeof(fresh));
    fresh.key = *key;
    fresh.graph = malloc(sizeof(*fresh.graph));
    if (fresh.graph == NULL) {
        snprintf(why, why_len, "out of host memory for a cuDNN graph");
        return NULL;
    }
    if (g3_cudnn_graph_build(fresh.graph, key, cd->handle, 1)) {
        g3_cudnn_graph_why(fresh.graph, why, why_len);
        goto err_graph;
    }
    if (g3_cudnn_plan_make(cd, &fresh, why, why_len))
        goto err_graph;
    fresh.used = 1;
    p = &cd->plans[cd->plan_next];
    cd->plan_next = (cd->plan_next + 1) % G3_CUDNN_PLANS;
    g3_cudnn_plan_drop(p);
    *p = fresh;
    return p;

err_graph:
    g3_cudnn_graph_free(fresh.graph);
    free(fresh.graph);
    return NULL;
}

/* Grow cuDNN's own workspace to bytes.  RET: 0, or 1 with the error recorded in the context. */
static int g3_cudnn_workspace(g3_cudnn_t *cd, size_t bytes)
{
    void *p = NULL;

    if (bytes <= cd->workspace_bytes)
        return 0;
    if (cd->workspace) {
        g3cuda_free(cd->ctx, cd->workspace);   /* cudaFree waits for the work using it */
        cd->workspace = NULL;
        cd->workspace_bytes = 0;
    }
    if (g3cuda_malloc(cd->ctx, bytes, "the cuDNN attention workspace", &p) != 0)
        return 1;
    cd->workspace = p;
    cd->workspace_bytes = bytes;
    return 0;
}

int g3_cudnn_att_use(g3_cudnn_t *cd, int B, int T, int NH, int HS, int dir)
{
    g3_cudnn_key_t kf = { B, T, NH, HS, G3_CUDNN_FWD, 0 };
    g3_cudnn_key_t kb = { B, T, NH, HS, G3_CUDNN_BWD, cd->deterministic };
    g3_cudnn_plan_t *pf, *pb;
    g3_cudnn_shape_t *sh;
    char rf[768] = "", rb[768] = "", why[1024];
    int use = 0, use_f, use_b;
    size_t ws;
    g3_status_t st;

    for (int i = 0; i < cd->nshapes; i++) {
        sh = &cd->shapes[i];
        if (sh->B == B && sh->T == T && sh->NH == NH && sh->HS == HS)
            return sh->use[dir == G3_CUDNN_BWD];
    }
    if (g3cuda_ctx_error(cd->ctx)[0] != '\0')
        return 0;   /* a pending error: nothing runs until the sync reports it */
    pf = g3_cudnn_plan_get(cd, &kf, rf, sizeof(rf));
    pb = g3_cudnn_plan_get(cd, &kb, rb, sizeof(rb));
    /* cudnn: both directions or an error; auto: each direction on its own (the state is the
     * same log-sum-exp either way, so a native forward feeds a cuDNN backward) */
    st = g3_cudnn_att_choose(cd->want, 1, pf == NULL ? rf : pb == NULL ? rb : NULL, &use, why,
                             sizeof(why));
    if (st != G3_OK) {
        g3cuda_ctx_fail(cd->ctx, G3CUDA_ERR_CUDNN, why);
        return 0;
    }
    use_f = pf != NULL && cd->want != G3_CUDNN_WANT_NATIVE;
    use_b = pb != NULL && cd->want != G3_CUDNN_WANT_NATIVE;
    ws = (size_t)(use_f ? pf->workspace : 0);
    if (use_b && (size_t)pb->workspace > ws)
        ws = (size_t)pb->workspace;
    if ((use_f || use_b) && g3_cudnn_workspace(cd, ws))
        return 0;
    if (use_f && use_b)
        g3_info(
            "attention B=%d T=%d NH=%d HS=%d: %s; cuDNN %ld, workspace %lld + %lld bytes (forward + backward)%s",
            B, T, NH, HS, why, g3_cudnn_version(), (long long)pf->workspace,
            (long long)pb->workspace, cd->deterministic ? ", deterministic engine" : "");
    else if (use_f || use_b)
        g3_info(
            "attention B=%d T=%d NH=%d HS=%d: cuDNN fused attention for the %s only (cuDNN %ld, workspace %zu bytes); native kernels for the %s (cuDNN cannot run it: %s)",
            B, T, NH, HS, use_f ? "forward" : "backward", g3_cudnn_version(), ws,
            use_f ? "backward" : "forward", use_f ? rb : rf);
    else
        g3_info("attention B=%d T=%d NH=%d HS=%d: %s", B, T, NH, HS, why);
    if (cd->nshapes < G3_CUDNN_SHAPES) {
        sh = &cd->shapes[cd->nshapes++];
        sh->B = B, sh->T = T, sh->NH = NH, sh->HS = HS;
        sh->use[0] = use_f;
        sh->use[1] = use_b;
    }
    return dir == G3_CUDNN_BWD ? use_b : use_f;
}

/* Run key's plan with the variant pack of uids/ptrs.  Failures are recorded in the context. */
static void g3_cudnn_run(g3_cudnn_t *cd, const g3_cudnn_key_t *key, int n, const int64_t *uids,
                         void **ptrs)
{
    cudnnBackendDescriptor_t vp = NULL;
    g3_cudnn_plan_t *p;
    cudnnStatus_t st;
    char why[1024], msg[512];

    if (g3cuda_ctx_error(cd->ctx)[0] != '\0')
        return;
    p = g3_cudnn_plan_get(cd, key, why, sizeof(why));
    if (p == NULL) {
        g3cuda_ctx_fail(cd->ctx, G3CUDA_ERR_CUDNN, why);
        return;
    }
    if (g3_cudnn_workspace(cd, (size_t)p->workspace))
        return;
    st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                      n, uids);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                      1, &cd->workspace);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendFinalize(vp);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendExecute(cd->handle, p->plan, vp);
    if (st != CUDNN_STATUS_SUCCESS) {
        cudnnGetLastErrorString(msg, sizeof(msg));
        snprintf(why, sizeof(why),
                 "cuDNN attention %s B=%d T=%d NH=%d HS=%d: cudnnBackendExecute: %s%s%s",
                 key->dir == G3_CUDNN_FWD ? "forward" : "backward", key->B, key->T, key->NH,
                 key->HS, cudnnGetErrorString(st), msg[0] ? ": " : "", msg);
        g3cuda_ctx_fail(cd->ctx, G3CUDA_ERR_CUDNN, why);
    }
    if (vp)
        cudnnBackendDestroyDescriptor(vp);
}

void g3_cudnn_att_fwd(g3_cudnn_t *cd, void *out, float *lse, const void *qkv, int B, int T,
                      int NH, int HS)
{
    g3_cudnn_key_t key = { B, T, NH, HS, G3_CUDNN_FWD, 0 };
    size_t C = (size_t)NH * HS;
    const char *base = qkv;   /* bf16 elements: 2 bytes */
    const int64_t *uids;
    int n = g3_cudnn_pack_uids(&key, &uids);
    void *ptrs[7] = { (void *)base, (void *)(base + 2 * C), (void *)(base + 4 * C), out, lse,
                      &cd->scale, &cd->neg_inf };

    cd->scale = 1.0f / sqrtf((float)HS);
    g3_cudnn_run(cd, &key, n, uids, ptrs);
}

void g3_cudnn_att_bwd(g3_cudnn_t *cd, void *dqkv, void *scratch, const void *dout,
                      const void *out, const void *qkv, const float *lse, int B, int T, int NH,
                      int HS)
{
    g3_cudnn_key_t key = { B, T, NH, HS, G3_CUDNN_BWD, cd->deterministic };
    size_t C = (size_t)NH * HS;
    size_t dq_bytes = g3_cudnn_att_scratch_bytes(B, T, NH, HS, cd->deterministic) -
                      g3_cudnn_att_scratch_bytes(B, T, NH, HS, 1);
    const char *base = qkv;
    char *dbase = dqkv, *s = scratch;
    const int64_t *uids;
    int n = g3_cudnn_pack_uids(&key, &uids);
    void *ptrs[14] = { (void *)base, (void *)(base + 2 * C), (void *)(base + 4 * C),
                       (void *)out, (void *)dout, (void *)lse, dbase, dbase + 2 * C,
                       dbase + 4 * C, s + dq_bytes, &cd->scale, &cd->neg_inf, &cd->one, s };

    cd->scale = 1.0f / sqrtf((float)HS);
    /* before cuDNN 9.6 the accumulator had to be zeroed by the caller (cudnn-frontend) */
    if (!cd->deterministic && g3_cudnn_version() < 90600 &&
        g3cuda_zero(cd->ctx, s, (size_t)B * NH * T * HS * sizeof(float)) != 0)
        return;
    g3_cudnn_run(cd, &key, n, uids, ptrs);
}
