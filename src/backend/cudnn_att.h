/* gpt3d backend: causal self-attention through cuDNN's fused flash-attention engines, for the
 * CUDA backend (cuda.c).  cudnn_att.c is the only file that includes cudnn.h (compiled when
 * configure found cuDNN >= 9, HAVE_CUDNN); cudnn_att_select.c holds the parts that need no
 * cuDNN (the choice between cuDNN and the native kernels, the plan keys, the sizes) and is
 * compiled everywhere, so the CPU tests cover them.
 *
 * The graphs are cudnn-frontend's SDPA expansion written in C over the backend descriptors of
 * cudnn_graph.h (docs/cuda.md, "cuDNN attention"):
 *   forward   S = Q.K^T * scale; causal mask (row >= column, else -inf); Stats = max + log sum
 *             exp(S - max); O = (exp(S - max) / sum) . V
 *   backward  D = sum(dO * O) over HS; P = exp(S - Stats); dV = P^T.dO; dS = P * (dO.V^T - D)
 *             * scale; dK = dS^T.Q; dQ = dS.K (through an fp32 accumulator unless deterministic)
 * Q, K, V are read in place from the (B,T,3C) qkv activation and dQ, dK, dV written in place
 * into dqkv, through strides; O is written as (B,T,C), where the projection reads it.  Stats is
 * the natural-log log-sum-exp of the scaled scores, (B,NH,T) fp32: exactly the state the native
 * kernels keep, so the two are interchangeable.
 *
 * Ownership: g3_cudnn_open borrows the g3cuda context (its stream and allocator) for the life
 * of the returned object, which g3_cudnn_close frees with its plans and workspace.
 * Shapes: B micro-batch, T sequence, NH heads, HS head size, C = NH*HS. */
#ifndef G3_BACKEND_CUDNN_ATT_H
#define G3_BACKEND_CUDNN_ATT_H

#include <stddef.h>

#include "core/status.h"

/* What the user asked for: the same values as backend.h's g3_be_att_t (auto, native, cudnn). */
typedef enum {
    G3_CUDNN_WANT_AUTO = 0,
    G3_CUDNN_WANT_NATIVE = 1,
    G3_CUDNN_WANT_CUDNN = 2
} g3_cudnn_want_t;

/* The two graphs. */
typedef enum {
    G3_CUDNN_FWD = 0,
    G3_CUDNN_BWD = 1
} g3_cudnn_dir_t;

/* ---- no cuDNN needed (cudnn_att_select.c) ------------------------------------------------ */

/* The key of one execution plan: a shape, a direction and the deterministic flag. */
typedef struct g3_cudnn_key {
    int B, T, NH, HS;
    int dir;             /* g3_cudnn_dir_t */
    int deterministic;   /* 1: the backward graph without the fp32 dQ accumulator */
} g3_cudnn_key_t;

/* RET: 1 when a and b name the same plan. */
int g3_cudnn_key_eq(const g3_cudnn_key_t *a, const g3_cudnn_key_t *b);

/* Decide cuDNN or the native kernels for one shape.
 * want: the request; built: 1 when this gpt3d has cuDNN; unavailable: NULL when both plans of
 * the shape finalized, else why not (cuDNN's own message, or "no cuDNN in this build").
 * OUT: *use_cudnn_p (1: cuDNN, 0: native) and the reason in why, one line for the log.
 * RET: G3_OK, or G3_ERR_UNSUPPORTED when want is cudnn and cuDNN cannot run it (why says why
 * and what to do).  Pure: no cuDNN call, no log. */
g3_status_t g3_cudnn_att_choose(g3_cudnn_want_t want, int built, const char *unavailable,
                                int *use_cudnn_p, char *why, size_t why_len);

/* RET: the request a string names ("auto", "native", "cudnn"), or -1. */
int g3_cudnn_want_parse(const char *s);

/* RET: bytes of the backward's fp32 buffers outside cuDNN's own workspace, which the CUDA
 * backend asks the model for as attention scratch (attention_scratch_bytes): the dQ
 * accumulator (B,NH,T,HS) fp32 (none when deterministic) and the softmax sum D (B,NH,T) fp32,
 * each rounded up to 256 bytes. */
size_t g3_cudnn_att_scratch_bytes(int B, int T, int NH, int HS, int deterministic);

/* ---- cuDNN (cudnn_att.c, HAVE_CUDNN only) ------------------------------------------------ */

struct g3cuda_ctx;
typedef struct g3_cudnn g3_cudnn_t;

/* RET: cuDNN's version at run time (cudnnGetVersion: 91400 for 9.14.0). */
long g3_cudnn_version(void);

/* Create every tensor and operation descriptor of one graph and finalize each, check that the
 * variant pack g3_cudnn_att_fwd/bwd pass names exactly the graph's non-virtual tensors, then
 * finalize the operation graph when cuDNN does so without a handle (cuDNN 9.19 does; earlier
 * 9.x need the handle).  Needs no GPU: a wrong attribute, type or stride fails here.
 * OUT: *nops_p the operations in the graph, *graph_final_p 1 when the operation graph itself
 * finalized.  RET: G3_OK, G3_ERR_UNSUPPORTED with cuDNN's message in why, or
 * G3_ERR_INTERNAL when the variant pack and the graph disagree. */
g3_status_t g3_cudnn_att_graph_check(const g3_cudnn_key_t *key, int *nops_p,
                                     int *graph_final_p, char *why, size_t why_len);

/* Open: a cuDNN handle on ctx's stream.  want and deterministic are the user's choice; want
 * native opens nothing (*cd_p = NULL, G3_OK).  RET: G3_OK, or G3_ERR_DEVICE with the cause in
 * why (the caller falls back under auto and stops under cudnn). */
g3_status_t g3_cudnn_open(struct g3cuda_ctx *ctx, g3_cudnn_want_t want, int deterministic,
                          g3_cudnn_t **cd_p, char *why, size_t why_len);
void g3_cudnn_close(g3_cudnn_t *cd);

/* Whether direction dir (g3_cudnn_dir_t) of this shape runs on cuDNN: the first call per shape
 * builds both plans (heuristics, then the first engine configuration that finalizes;
 * deterministic: only engines without the non-deterministic numerical note), logs once which
 * path each direction takes and why, and remembers the answer.  Under want auto each
 * direction is decided on its own (the state is the same log-sum-exp, so a native forward
 * feeds a cuDNN backward and the reverse); under want cudnn a plan that does not finalize
 * records a G3CUDA_ERR_CUDNN error in the context (reported by the next sync) and returns 0.
 * RET: 1 cuDNN, 0 native. */
int g3_cudnn_att_use(g3_cudnn_t *cd, int B, int T, int NH, int HS, int dir);

/* Queue the forward / backward on the context's stream (the direction must have passed
 * g3_cudnn_att_use).  A failure is recorded in the context.
 * out (B,T,C) bf16  lse (B,NH,T) fp32  qkv (B,T,3C) bf16
 * dqkv (B,T,3C) bf16 (overwritten)  dout, out (B,T,C) bf16  scratch of
 * g3_cudnn_att_scratch_bytes (device) */
void g3_cudnn_att_fwd(g3_cudnn_t *cd, void *out, float *lse, const void *qkv, int B, int T,
                      int NH, int HS);
void g3_cudnn_att_bwd(g3_cudnn_t *cd, void *dqkv, void *scratch, const void *dout,
                      const void *out, const void *qkv, const float *lse, int B, int T, int NH,
                      int HS);

#endif
