/* Plain-C references for the CUDA kernels (tests/kernels/): simple loops in double, written
 * from the op definitions in kernels/g3cuda.h and independent of the kernels' code.  Inputs are
 * fp32 arrays holding bf16-representable values (what the device tensors hold); outputs are
 * double unless an op's definition rounds an intermediate (the fused residual), which the
 * reference then rounds the same way.
 * Shapes as in g3cuda.h: N rows, B batch, T sequence, C hidden, NH heads, HS head size,
 * V vocabulary columns, ld row stride. */
#ifndef G3_TESTS_KERNELS_REF_H
#define G3_TESTS_KERNELS_REF_H

#include <stddef.h>
#include <stdint.h>

/* ---- bf16 and random inputs ----------------------------------------------------------------- */

/* fp32 -> bf16 bits and back: core/bf16.h (round to nearest even; NaN stays a quiet NaN). */
uint16_t ref_f2bf(float x);
float ref_bf2f(uint16_t h);
/* x rounded to the nearest bf16, as fp32. */
float ref_round_bf(float x);

/* x[i] = bf16(std * N(0,1)) from (seed, stream = what) so every test draws its own numbers;
 * OUT: x (n,) fp32, and bits (n,) bf16 when not NULL. */
void ref_randn_bf(float *x, uint16_t *bits, size_t n, float std, uint64_t seed, const char *what);
/* x[i] = std * N(0,1) in fp32 (no rounding). */
void ref_randn(float *x, size_t n, float std, uint64_t seed, const char *what);
/* tokens[i] uniform in [lo, hi). */
void ref_randint(int32_t *x, size_t n, int lo, int hi, uint64_t seed, const char *what);

void ref_to_bf(uint16_t *dst, const float *src, size_t n);
void ref_from_bf(float *dst, const uint16_t *src, size_t n);

/* ---- ops ------------------------------------------------------------------------------------- */

/* out (B,T,C)  tokens (B,T)  wte (V,C)  wpe (P,C) or NULL */
void ref_embedding_fwd(double *out, const int32_t *tokens, const float *wte, const float *wpe,
                       int B, int T, int C, int v0, int V);
/* dwte (V,C) += ; dwpe (T,C) += (NULL: skipped)  dout (B,T,C) */
void ref_embedding_bwd(double *dwte, double *dwpe, const float *dout, const int32_t *tokens,
                       int B, int T, int C, int v0, int V);

/* resid = bf16(fp32(a) + fp32(b)) (b NULL: x = a, resid untouched); out = LN(x).
 * resid (N,C) fp32 holding bf16 values  out (N,C)  mean, rstd (N,)  a, b (N,C)  w, bias (C,) */
void ref_layernorm_fwd(float *resid, double *out, double *mean, double *rstd, const float *a,
                       const float *b, const float *w, const float *bias, int N, int C,
                       double eps);
/* dinp (N,C) +=, dw, db (C,) += ; statistics recomputed from inp in double. */
void ref_layernorm_bwd(double *dinp, double *dw, double *db, const float *dout, const float *inp,
                       const float *w, int N, int C, double eps);

double ref_gelu(double x);
double ref_gelu_grad(double x);

/* D (M,N) = op(A) (M,K) . op(B) (K,N); A stored (M,K) row stride lda, or (K,M) with ta; B
 * stored (K,N) row stride ldb, or (N,K) with tb. */
void ref_gemm(double *D, const float *A, int lda, int ta, const float *B, int ldb, int tb,
              int M, int N, int K);

/* Causal attention over qkv rows [q | k | v].  out (B,T,C)  lse (B,NH,T)  qkv (B,T,3C) */
void ref_attention_fwd(double *out, double *lse, const float *qkv, int B, int T, int NH, int HS);
/* dqkv (B,T,3C) overwritten  dout (B,T,C)  qkv (B,T,3C) */
void ref_attention_bwd(double *dqkv, const float *dout, const float *qkv, int B, int T, int NH,
                       int HS);

/* Over the full vocabulary [0, V) of logits (N,ld): lse, loss = lse - x_target (0 when the
 * target is negative) and, when dlogits is not NULL, dlogits (N,V) = (softmax - onehot) dloss
 * (0 for ignored rows). */
void ref_xent(double *loss, double *lse, double *dlogits, const float *logits, int ld,
              const int32_t *targets, double dloss, int N, int V);

/* AdamW in fp32 in the order of backend.h / src/backend/cpu_ops.c (g scaled by gscale first).
 * p, g, m, v (n,) updated in place (g is not modified). */
void ref_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
               float beta2, float eps, float wd, int64_t step, float gscale);

#endif
