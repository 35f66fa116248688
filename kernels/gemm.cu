/* Matrix products through cuBLASLt: bf16 A and B, fp32 accumulation (CUBLAS_COMPUTE_32F),
 * bf16 or fp32 D, optional bias / GELU(+aux) / dGELU epilogues.  The operand types are
 * explicit in g3cuda_gemm_t; FP8 ones (and scales) are refused until FP8 is built.
 *
 * Row-major to column-major: a row-major D (M,N) is the column-major D^T (N x M), and
 * D^T = op(B)^T op(A)^T, so cuBLASLt is called with our B as its "A" and our A as its "B",
 * m = N, n = M, k = K.  A bias over D's columns (N,) is a bias over cuBLASLt's rows, which is
 * what its BIAS epilogue broadcasts.
 *
 * Plans (descriptors + the algorithm) are cached in the context per shape, transposes,
 * leading dimensions, D type, epilogue and pointer alignments (the heuristic depends on them);
 * 64 entries, replaced round-robin.  A model has a dozen distinct shapes.  The algorithm is
 * the heuristic's first, or with autotuning (g3cuda.h) the fastest of its first
 * G3CUDA_GEMM_CANDIDATES, timed once per plan on the first call's operands: the heuristic's
 * first choice for GPT-2 1.5B's fc shape runs at 837 TFLOP/s on an H200, the best of 8 at 935
 * (bench_gemm). */
#include <stdio.h>
#include <string.h>

#include "g3cuda_internal.cuh"

#ifdef HAVE_CUBLAS

/* Largest power of two (<= 256) dividing the address: what cuBLASLt may assume. */
static int g3_gemm_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int al = 256;
    if (p == NULL)
        return 256;
    while (al > 1 && a % (uintptr_t)al != 0)
        al >>= 1;
    return al;
}

/* RET: whether epilogue e reads or writes aux. */
static int g3_gemm_has_aux(g3cuda_epilogue_t e)
{
    return e == G3CUDA_EPI_GELU_AUX || e == G3CUDA_EPI_BIAS_GELU_AUX || e == G3CUDA_EPI_DGELU;
}

static cublasLtEpilogue_t g3_gemm_lt_epilogue(g3cuda_epilogue_t e)
{
    switch (e) {
    case G3CUDA_EPI_BIAS:          return CUBLASLT_EPILOGUE_BIAS;
    case G3CUDA_EPI_GELU_AUX:      return CUBLASLT_EPILOGUE_GELU_AUX;
    case G3CUDA_EPI_BIAS_GELU_AUX: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case G3CUDA_EPI_DGELU:         return CUBLASLT_EPILOGUE_DGELU;
    case G3CUDA_EPI_BGRAD:         return CUBLASLT_EPILOGUE_BGRADB;   /* Lt's B is our A */
    default:                       return CUBLASLT_EPILOGUE_DEFAULT;
    }
}

static cublasStatus_t g3_desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                  const void *v, size_t n)
{
    return cublasLtMatmulDescSetAttribute(d, attr, v, n);
}

static cublasStatus_t g3_pref_set(cublasLtMatmulPreference_t p,
                                  cublasLtMatmulPreferenceAttributes_t attr, const void *v,
                                  size_t n)
{
    return cublasLtMatmulPreferenceSetAttribute(p, attr, v, n);
}

/* Point the epilogue at this call's bias and aux (a cached plan keeps the alignment, not the
 * addresses). */
static cublasStatus_t g3_gemm_set_pointers(cublasLtMatmulDesc_t op, const g3cuda_gemm_t *g)
{
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (g->epilogue == G3CUDA_EPI_BIAS || g->epilogue == G3CUDA_EPI_BIAS_GELU_AUX)
        s = g3_desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof(g->bias));
    if (g->epilogue == G3CUDA_EPI_BGRAD)
        s = g3_desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->dbias, sizeof(g->dbias));
    if (s == CUBLAS_STATUS_SUCCESS && g3_gemm_has_aux(g->epilogue))
        s = g3_desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux, sizeof(g->aux));
    return s;
}

/* OUT: *splits (CUBLASLT_ALGO_CONFIG_SPLITK_NUM) and *scheme (its cublasLtReductionScheme_t) of
 * algo, 1 and 0 when cuBLASLt does not say. */
static void g3_gemm_splitk_of(const cublasLtMatmulAlgo_t *algo, int32_t *splits,
                              uint32_t *scheme)
{
    size_t n = 0;
    *splits = 1;
    *scheme = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splits,
                                             sizeof(*splits), &n) != CUBLAS_STATUS_SUCCESS)
        *splits = 1;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, scheme,
                                             sizeof(*scheme), &n) != CUBLAS_STATUS_SUCCESS)
        *scheme = 0;
}

/* Time each candidate on g's operands (D, and the aux output of a GELU_AUX epilogue, are
 * scratch here: the real call rewrites them; an fp32 D that is accumulated into is saved and
 * put back) and keep the fastest in p->algo.  A candidate that fails is passed over; nothing
 * here records an error unless the stream itself fails. */
static void g3_gemm_tune(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g, g3cuda_gemm_plan_t *p,
                         const cublasLtMatmulHeuristicResult_t *res, int count)
{
    size_t esz = g->d_type == G3CUDA_F32 ? 4 : 2, dbytes = (size_t)g->M * g->ldd * esz;
    void *save = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float best = -1.0f, first = -1.0f;
    int besti = 0;
    char note[320];

    if (g->beta != 0.0f) {
        if (dbytes > G3CUDA_GEMM_TUNE_SAVE_MAX)
            return;
        save = g3cuda_scratch(ctx, dbytes, "gemm autotuning");
        if (save == NULL ||
            cudaMemcpyAsync(save, g->D, dbytes, cudaMemcpyDeviceToDevice, ctx->stream) !=
                cudaSuccess)
            return;
    }
    if (g3_gemm_set_pointers(p->op, g) != CUBLAS_STATUS_SUCCESS ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
        goto out;
    for (int i = 0; i < count; i++) {
        int ok = 1;
        float ms = 0.0f;
        for (int r = 0; r < 7 && ok; r++) {
            if (r == 2)
                cudaEventRecord(e0, ctx->stream);
            ok = cublasLtMatmul(ctx->lt, p->op, &g->alpha, g->B, p->a, g->A, p->b, &g->beta,
                                g->D, p->d, g->D, p->d, &res[i].algo, ctx->workspace,
                                ctx->workspace_bytes, ctx->stream) == CUBLAS_STATUS_SUCCESS;
        }
        cudaEventRecord(e1, ctx->stream);
        if (cudaEventSynchronize(e1) != cudaSuccess)
            break;
        if (!ok || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
            continue;
        ms /= 5.0f;
        if (i == 0)
            first = ms;
        if (best < 0.0f || ms < best) {
            best = ms;
            besti = i;
        }
    }
    p->algo = res[besti].algo;
    if (ctx->log && best > 0.0f) {
        int32_t splits;
        uint32_t scheme;
        g3_gemm_splitk_of(&p->algo, &splits, &scheme);
        snprintf(
            note, sizeof(note),
            "gemm M=%d N=%d K=%d (trans_a %d, trans_b %d, %s D, epilogue %d): algorithm %d of %d (split-K %d, reduction scheme %u), %.1f TFLOP/s (the heuristic's first: %.1f)",
            g->M, g->N, g->K, g->trans_a, g->trans_b, g->d_type == G3CUDA_F32 ? "fp32" : "bf16",
            (int)g->epilogue, besti, count, (int)splits, (unsigned)scheme,
            2e-9 * g->M * g->N * (double)g->K / best,
            first > 0.0f ? 2e-9 * g->M * g->N * (double)g->K / first : 0.0);
        ctx->log(note);
    }
out:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (save)
        cudaMemcpyAsync(g->D, save, dbytes, cudaMemcpyDeviceToDevice, ctx->stream);
    cudaGetLastError();   /* a candidate's launch failure is not the caller's error */
}

/* RET: the CUDA type of a g3cuda element type. */
static cudaDataType_t g3_gemm_cuda_type(g3cuda_dtype_t t)
{
    switch (t) {
    case G3CUDA_F32:      return CUDA_R_32F;
    case G3CUDA_FP8_E4M3: return CUDA_R_8F_E4M3;
    case G3CUDA_FP8_E5M2: return CUDA_R_8F_E5M2;
    default:              return CUDA_R_16BF;
    }
}

/* The matmul descriptor of g: compute type, transposes, epilogue and its pointers.
 * OUT: p->op.  RET: cuBLASLt's status (what failed in *what). */
static cublasStatus_t g3_gemm_plan_desc(const g3cuda_gemm_t *g, g3cuda_gemm_plan_t *p,
                                        const char **what)
{
    cublasOperation_t opa = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;   /* Lt's A is our B */
    cublasOperation_t opb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;   /* Lt's B is our A */
    cublasLtEpilogue_t epi = g3_gemm_lt_epilogue(g->epilogue);
    int64_t ldaux = g->ldaux;
    cudaDataType_t bgrad_type = CUDA_R_32F;
    cublasStatus_t s;

    *what = "cublasLtMatmulDescCreate";
    s = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    *what = "setting the transposes and the epilogue";
    s = g3_desc_set(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_desc_set(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_desc_set(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    if (s == CUBLAS_STATUS_SUCCESS && g3_gemm_has_aux(g->epilogue))
        s = g3_desc_set(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldaux, sizeof(ldaux));
    if (s == CUBLAS_STATUS_SUCCESS && g->epilogue == G3CUDA_EPI_BGRAD)
        s = g3_desc_set(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bgrad_type,
                        sizeof(bgrad_type));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_gemm_set_pointers(p->op, g);
    return s;
}

/* The matrix layouts of g.  Lt's A is our B, stored (K,N) row-major = N x K column-major, or
 * with trans_b (N,K) = K x N; Lt's B is our A, stored (M,K) = K x M, or with trans_a (K,M) =
 * M x K.  OUT: p->a, p->b, p->d.  RET: cuBLASLt's status. */
static cublasStatus_t g3_gemm_plan_layouts(const g3cuda_gemm_t *g, g3cuda_gemm_plan_t *p)
{
    cublasStatus_t s;

    s = cublasLtMatrixLayoutCreate(&p->a, g3_gemm_cuda_type(g->b_type),
                                   g->trans_b ? g->K : g->N, g->trans_b ? g->N : g->K, g->ldb);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&p->b, g3_gemm_cuda_type(g->a_type),
                                       g->trans_a ? g->M : g->K, g->trans_a ? g->K : g->M,
                                       g->lda);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&p->d, g3_gemm_cuda_type(g->d_type), g->N, g->M, g->ldd);
    return s;
}

/* The heuristic's preferences for g: workspace, alignments, and split-K for a bf16 D only
 * with fp32 partial sums: OUTPUT_TYPE stores each partial in bf16 and INPLACE adds them in
 * the bf16 output buffer, an extra rounding per piece (tests/kernels/gemm_splitk.py: 8 bf16
 * partials of K = 3072 reproduce test_gemm's autotuned dGELU failure on an H100 to the bit;
 * docs/cuda.md, "Split-K and bf16 outputs").  NONE (no split) is 0, in every mask.
 * RET: cuBLASLt's status. */
static cublasStatus_t g3_gemm_plan_pref(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g,
                                        cublasLtMatmulPreference_t pref)
{
    uint64_t ws = ctx->workspace_bytes;
    uint32_t al_a = (uint32_t)g3_gemm_align(g->B), al_b = (uint32_t)g3_gemm_align(g->A);
    uint32_t al_d = (uint32_t)g3_gemm_align(g->D);
    uint32_t red_mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    cublasStatus_t s;

    s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof(al_d));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof(al_d));
    if (s == CUBLAS_STATUS_SUCCESS && g->d_type == G3CUDA_BF16)
        s = g3_pref_set(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red_mask,
                        sizeof(red_mask));
    return s;
}

/* Destroy what a plan holds (p zeroed). */
static void g3_gemm_plan_destroy(g3cuda_gemm_plan_t *p)
{
    if (p->d)
        cublasLtMatrixLayoutDestroy(p->d);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->op)
        cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof(*p));
}

/* Build the descriptors for g, ask the heuristic for the best algorithm.  OUT: *p on success.
 * RET: 0; or the error recorded; or, when quiet and cuBLASLt refuses g (no algorithm, or an
 * attribute it does not take), -1 with nothing recorded. */
static int g3_gemm_plan_make(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g, g3cuda_gemm_plan_t *p,
                             int quiet)
{
    int rc = -1, count = 0;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res[G3CUDA_GEMM_CANDIDATES];
    cublasStatus_t s;
    const char *what;

    memset(p, 0, sizeof(*p));
    s = g3_gemm_plan_desc(g, p, &what);
    if (s != CUBLAS_STATUS_SUCCESS)
        goto err_lt;
    what = "cublasLtMatrixLayoutCreate";
    s = g3_gemm_plan_layouts(g, p);
    if (s != CUBLAS_STATUS_SUCCESS)
        goto err_lt;
    what = "setting the heuristic's preferences";
    s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = g3_gemm_plan_pref(ctx, g, pref);
    if (s != CUBLAS_STATUS_SUCCESS)
        goto err_lt;
    what = "cublasLtMatmulAlgoGetHeuristic";
    s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->a, p->b, p->d, p->d, pref,
                                       ctx->gemm_autotune ? G3CUDA_GEMM_CANDIDATES : 1, res,
                                       &count);
    if (s != CUBLAS_STATUS_SUCCESS)
        goto err_lt;
    if (count == 0) {
        if (quiet)
            goto err_destroy;
        rc = g3cuda_fail(
            ctx, G3CUDA_ERR_CUBLAS,
            "gemm M=%d N=%d K=%d (trans_a %d, trans_b %d, lda %d, ldb %d, ldd %d, epilogue %d): cuBLASLt has no algorithm for it on %s",
            g->M, g->N, g->K, g->trans_a, g->trans_b, g->lda, g->ldb, g->ldd, (int)g->epilogue,
            ctx->name);
        goto err_destroy;
    }
    p->algo = res[0].algo;
    cublasLtMatmulPreferenceDestroy(pref);
    if (ctx->gemm_autotune && count > 1)
        g3_gemm_tune(ctx, g, p, res, count);
    return 0;

err_lt:
    if (quiet)   /* e.g. an epilogue attribute this cuBLASLt does not take */
        goto err_destroy;
    rc = g3cuda_fail(ctx, G3CUDA_ERR_CUBLAS, "gemm M=%d N=%d K=%d: %s: %s", g->M, g->N, g->K,
                     what, cublasLtGetStatusString(s));
err_destroy:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    g3_gemm_plan_destroy(p);
    return rc;
}

static void g3_gemm_key(const g3cuda_gemm_t *g, int key[G3CUDA_GEMM_KEY])
{
    int k = 0;
    memset(key, 0, sizeof(int) * G3CUDA_GEMM_KEY);
    key[k++] = g->M;
    key[k++] = g->N;
    key[k++] = g->K;
    key[k++] = g->trans_a;
    key[k++] = g->trans_b;
    key[k++] = g->lda;
    key[k++] = g->ldb;
    key[k++] = g->ldd;
    key[k++] = (int)g->a_type;
    key[k++] = (int)g->b_type;
    key[k++] = (int)g->d_type;
    key[k++] = (int)g->epilogue;
    key[k++] = g3_gemm_has_aux(g->epilogue) ? g->ldaux : 0;
    key[k++] = g3_gemm_align(g->A);
    key[k++] = g3_gemm_align(g->B);
    key[k++] = g3_gemm_align(g->D);
    key[k++] = g3_gemm_align(g->epilogue == G3CUDA_EPI_BGRAD ? (const void *)g->dbias
                                                              : (const void *)g->bias);
    key[k++] = g3_gemm_align(g->aux);
}

/* RET: g's cached plan, made on first use (a key cuBLASLt has no algorithm for is cached as
 * such); NULL with the error recorded, or when quiet with nothing recorded for "none". */
static g3cuda_gemm_plan_t *g3_gemm_plan_get(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g,
                                            int quiet)
{
    int key[G3CUDA_GEMM_KEY];
    g3cuda_gemm_plan_t fresh, *p = NULL;
    cublasStatus_t s;
    int rc;

    g3_gemm_key(g, key);
    for (int i = 0; i < G3CUDA_GEMM_CACHE && p == NULL; i++)
        if (ctx->gemm_plans[i].used && memcmp(ctx->gemm_plans[i].key, key, sizeof(key)) == 0)
            p = &ctx->gemm_plans[i];
    if (p != NULL) {
        if (p->none) {
            if (!quiet)
                g3cuda_fail(
                    ctx, G3CUDA_ERR_CUBLAS,
                    "gemm M=%d N=%d K=%d (epilogue %d): cuBLASLt has no algorithm for it on %s",
                    g->M, g->N, g->K, (int)g->epilogue, ctx->name);
            return NULL;
        }
        s = g3_gemm_set_pointers(p->op, g);
        if (s != CUBLAS_STATUS_SUCCESS) {
            g3cuda_fail(ctx, G3CUDA_ERR_CUBLAS,
                        "gemm M=%d N=%d K=%d: setting the epilogue pointers: %s", g->M, g->N,
                        g->K, cublasLtGetStatusString(s));
            return NULL;
        }
        return p;
    }
    rc = g3_gemm_plan_make(ctx, g, &fresh, quiet);
    if (rc > 0)
        return NULL;
    p = &ctx->gemm_plans[ctx->gemm_next];
    ctx->gemm_next = (ctx->gemm_next + 1) % G3CUDA_GEMM_CACHE;
    if (p->used && !p->none) {
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->d);
        cublasLtMatmulDescDestroy(p->op);
    }
    *p = fresh;   /* zeroed by plan_make when there is none */
    memcpy(p->key, key, sizeof(key));
    p->used = 1;
    p->none = rc < 0;
    return p->none ? NULL : p;
}

#endif /* HAVE_CUBLAS */

/* RET: why g's types and scales are not ones g3cuda_gemm runs today (in buf), or NULL:
 * bf16 A and B, a bf16 or fp32 D, no FP8 scales (g3cuda.h). */
static const char *g3_gemm_unsupported(const g3cuda_gemm_t *g, char *buf, size_t len)
{
    if (g->a_type != G3CUDA_BF16 || g->b_type != G3CUDA_BF16 ||
        (g->d_type != G3CUDA_F32 && g->d_type != G3CUDA_BF16))
        snprintf(buf, len, "gemm M=%d N=%d K=%d: operand types A %d, B %d, D %d are not a combination this gpt3d runs (A and B bf16, D bf16 or fp32; FP8 is not built yet)", g->M, g->N, g->K, (int)g->a_type, (int)g->b_type, (int)g->d_type);
    else if (g->a_scale || g->b_scale || g->d_scale || g->amax_d)
        snprintf(buf, len, "gemm M=%d N=%d K=%d: scale or amax pointers are for FP8 operands, which this gpt3d does not run yet", g->M, g->N, g->K);
    else
        return NULL;
    return buf;
}

/* RET: why g is not a product g3cuda_gemm takes (in buf), or NULL. */
static const char *g3_gemm_bad(const g3cuda_gemm_t *g, char *buf, size_t len)
{
    if (g->M <= 0 || g->N <= 0 || g->K <= 0)
        snprintf(buf, len, "gemm: bad shape M=%d N=%d K=%d", g->M, g->N, g->K);
    else if (g->A == NULL || g->B == NULL || g->D == NULL)
        snprintf(buf, len, "gemm M=%d N=%d K=%d: NULL matrix", g->M, g->N, g->K);
    else if (g->lda < (g->trans_a ? g->M : g->K) || g->ldb < (g->trans_b ? g->K : g->N) ||
             g->ldd < g->N)
        snprintf(
            buf, len,
            "gemm M=%d N=%d K=%d: a leading dimension is shorter than its row (lda %d, ldb %d, ldd %d)",
            g->M, g->N, g->K, g->lda, g->ldb, g->ldd);
    else if ((unsigned)g->a_type > G3CUDA_FP8_E5M2 || (unsigned)g->b_type > G3CUDA_FP8_E5M2 ||
             (unsigned)g->d_type > G3CUDA_FP8_E5M2)
        snprintf(buf, len, "gemm: unknown operand dtype (A %d, B %d, D %d)", (int)g->a_type,
                 (int)g->b_type, (int)g->d_type);
    else if (g->epilogue != G3CUDA_EPI_NONE && g->epilogue != G3CUDA_EPI_BGRAD &&
             g->d_type != G3CUDA_BF16)
        snprintf(buf, len, "gemm M=%d N=%d K=%d: epilogue %d needs a bf16 D", g->M, g->N, g->K,
                 (int)g->epilogue);
    else if ((g->epilogue == G3CUDA_EPI_BIAS || g->epilogue == G3CUDA_EPI_BIAS_GELU_AUX) &&
             g->bias == NULL)
        snprintf(buf, len, "gemm M=%d N=%d K=%d: bias epilogue without a bias", g->M, g->N,
                 g->K);
    else if (g->epilogue == G3CUDA_EPI_BGRAD && g->dbias == NULL)
        snprintf(buf, len, "gemm M=%d N=%d K=%d: BGRAD epilogue without dbias", g->M, g->N,
                 g->K);
    else if (g3_gemm_has_aux(g->epilogue) &&
             (g->aux == NULL || g->ldaux < g->N || g->ldaux % 8 != 0))
        snprintf(
            buf, len,
            "gemm M=%d N=%d K=%d: GELU epilogue needs aux with ldaux >= N and a multiple of 8 (ldaux %d)",
            g->M, g->N, g->K, g->ldaux);
    else
        return NULL;
    return buf;
}

extern "C" int g3cuda_gemm_offered(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g)
{
    char msg[320];

    if (G3CUDA_PENDING(ctx) || g3_gemm_bad(g, msg, sizeof(msg)) != NULL ||
        g3_gemm_unsupported(g, msg, sizeof(msg)) != NULL)
        return 0;
#ifdef HAVE_CUBLAS
    return g3_gemm_plan_get(ctx, g, 1) != NULL;
#else
    return 0;
#endif
}

extern "C" int g3cuda_gemm(g3cuda_ctx_t *ctx, const g3cuda_gemm_t *g)
{
    char msg[320];

    if (G3CUDA_PENDING(ctx))
        return ctx->err;
    if (g3_gemm_bad(g, msg, sizeof(msg)) != NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_ARG, "%s", msg);
    if (g3_gemm_unsupported(g, msg, sizeof(msg)) != NULL)
        return g3cuda_fail(ctx, G3CUDA_ERR_UNSUPPORTED, "%s", msg);
#ifdef HAVE_CUBLAS
    {
        g3cuda_gemm_plan_t *p = g3_gemm_plan_get(ctx, g, 0);
        cublasStatus_t s;

        if (p == NULL)
            return ctx->err;
        s = cublasLtMatmul(ctx->lt, p->op, &g->alpha, g->B, p->a, g->A, p->b, &g->beta, g->D,
                           p->d, g->D, p->d, &p->algo, ctx->workspace, ctx->workspace_bytes,
                           ctx->stream);
        if (s != CUBLAS_STATUS_SUCCESS)
            return g3cuda_fail(ctx, G3CUDA_ERR_CUBLAS, "gemm M=%d N=%d K=%d: cublasLtMatmul: %s",
                               g->M, g->N, g->K, cublasLtGetStatusString(s));
        return 0;
    }
#else
    return g3cuda_fail(
        ctx, G3CUDA_ERR_CUBLAS,
        "gemm: this gpt3d was built without cuBLASLt (configure found no cublasLt.h / libcublasLt)");
#endif
}
