/* gpt3d plan: counting the ops of the model's passes (see count.h).  A backend whose ops only
 * count, in host memory, runs g3_gpt_forward and g3_gpt_backward of a tiny copy of the model
 * (the same layers, tensor-parallel size, sequence parallelism and recompute; hidden 16 per
 * head, a few tokens): the passes call the same ops whatever the sizes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "plan/count.h"

typedef struct {
    double ops;
    int    copies;   /* uploads and downloads count: a device's are transfers with a fixed
                      * cost; host memory's (cpu) are copies, which the passes make per row
                      * for the vocabulary-parallel loss */
} g3_count_t;

static void g3_plan_count(g3_backend_t *be)
{
    ((g3_count_t *)be->priv)->ops += 1.0;
}

static void g3_plan_count_close(g3_backend_t *be)
{
    (void)be;
}

static g3_status_t g3_plan_count_alloc(g3_backend_t *be, size_t bytes, const char *what, void **p)
{
    (void)be;
    *p = calloc(1, bytes ? bytes : 64);
    if (!*p) {
        g3_error("gpt3d plan: out of memory counting the passes' ops (%s)", what);
        return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

static void g3_plan_count_free(g3_backend_t *be, void *p)
{
    (void)be;
    free(p);
}

static void g3_plan_count_upload(g3_backend_t *be, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    if (((g3_count_t *)be->priv)->copies)
        g3_plan_count(be);
}

static void g3_plan_count_download(g3_backend_t *be, void *dst, const void *src, size_t bytes)
{
    (void)src;
    memset(dst, 0, bytes);   /* the losses: zeros, finite */
    if (((g3_count_t *)be->priv)->copies)
        g3_plan_count(be);
}

static void g3_plan_count_zero(g3_backend_t *be, void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    g3_plan_count(be);
}

static g3_status_t g3_plan_count_sync(g3_backend_t *be)
{
    g3_plan_count(be);
    return G3_OK;
}

static void g3_plan_count_embedding_fwd(g3_backend_t *be, void *out, const int32_t *tokens,
                                        const void *wte, const void *wpe, int B, int T, int C,
                                        int v0, int V)
{
    (void)out, (void)tokens, (void)wte, (void)wpe, (void)B, (void)T, (void)C, (void)v0, (void)V;
    g3_plan_count(be);
}

static void g3_plan_count_embedding_bwd(g3_backend_t *be, float *dwte, float *dwpe,
                                        const void *dout, const int32_t *tokens, int B, int T,
                                        int C, int v0, int V)
{
    (void)dwte, (void)dwpe, (void)dout, (void)tokens, (void)B, (void)T, (void)C, (void)v0, (void)V;
    g3_plan_count(be);
}

static void g3_plan_count_layernorm_fwd(g3_backend_t *be, void *out, float *mean, float *rstd,
                                        const void *inp, const void *w, const void *b, int N, int C,
                                        float eps)
{
    (void)out, (void)mean, (void)rstd, (void)inp, (void)w, (void)b, (void)N, (void)C, (void)eps;
    g3_plan_count(be);
}

static void g3_plan_count_layernorm_bwd(g3_backend_t *be, void *dinp, float *dw, float *db,
                                        const void *dout, const void *inp, const void *w,
                                        const float *mean, const float *rstd, int N, int C)
{
    (void)dinp, (void)dw, (void)db, (void)dout, (void)inp, (void)w, (void)mean, (void)rstd;
    (void)N, (void)C;
    g3_plan_count(be);
}

static void g3_plan_count_matmul_fwd(g3_backend_t *be, void *state, void *out, const void *inp,
                                const void *w, const void *bias, int N, int IC, int OC)
{
    (void)state, (void)out, (void)inp, (void)w, (void)bias, (void)N, (void)IC, (void)OC;
    g3_plan_count(be);
}

static void g3_plan_count_matmul_bwd(g3_backend_t *be, void *state, void *dinp, float *dw,
                                float *dbias, const void *dout, const void *inp, const void *w,
                                int N, int IC, int OC)
{
    (void)state;
    (void)dinp, (void)dw, (void)dbias, (void)dout, (void)inp, (void)w, (void)N, (void)IC, (void)OC;
    g3_plan_count(be);
}

static void g3_plan_count_attention_fwd(g3_backend_t *be, void *out, void *state, const void *qkv,
                                        int B, int T, int NH, int HS)
{
    (void)out, (void)state, (void)qkv, (void)B, (void)T, (void)NH, (void)HS;
    g3_plan_count(be);
}

static void g3_plan_count_attention_bwd(g3_backend_t *be, void *dqkv, void *scratch,
                                        const void *dout, const void *out, const void *qkv,
                                        const void *state, int B, int T, int NH, int HS)
{
    (void)dqkv, (void)scratch, (void)dout, (void)out, (void)qkv, (void)state;
    (void)B, (void)T, (void)NH, (void)HS;
    g3_plan_count(be);
}

static void g3_plan_count_gelu_fwd(g3_backend_t *be, void *out, const void *inp, size_t n)
{
    (void)out, (void)inp, (void)n;
    g3_plan_count(be);
}

static void g3_plan_count_gelu_bwd(g3_backend_t *be, void *dinp, const void *inp, const void *dout,
                                   size_t n)
{
    (void)dinp, (void)inp, (void)dout, (void)n;
    g3_plan_count(be);
}

static void g3_plan_count_residual(g3_backend_t *be, void *out, const void *a, const void *b,
                                   size_t n)
{
    (void)out, (void)a, (void)b, (void)n;
    g3_plan_count(be);
}

static void g3_plan_count_scale(g3_backend_t *be, float *x, size_t n, float s)
{
    (void)x, (void)n, (void)s;
    g3_plan_count(be);
}

static void g3_plan_count_cast(g3_backend_t *be, void *dst, g3_be_dtype_t dt, const void *src,
                               g3_be_dtype_t st, size_t n)
{
    (void)dst, (void)dt, (void)src, (void)st, (void)n;
    g3_plan_count(be);
}

static void g3_plan_count_xent_fwd(g3_backend_t *be, float *losses, float *lse, const void *logits,
                                   const int32_t *targets, int N, int V)
{
    (void)losses, (void)lse, (void)logits, (void)targets, (void)N, (void)V;
    g3_plan_count(be);
}

static void g3_plan_count_xent_bwd(g3_backend_t *be, void *dlogits, const void *logits,
                                   const float *lse, const int32_t *targets, float dloss, int N,
                                   int V)
{
    (void)dlogits, (void)logits, (void)lse, (void)targets, (void)dloss, (void)N, (void)V;
    g3_plan_count(be);
}

static void g3_plan_count_xent_stats(g3_backend_t *be, float *stats, const void *logits,
                                     const int32_t *targets, int N, int V, int v0)
{
    (void)stats, (void)logits, (void)targets, (void)N, (void)V, (void)v0;
    g3_plan_count(be);
}

static void g3_plan_count_xent_combine(g3_backend_t *be, float *losses, float *lse,
                                       const float *stats, int S, const int32_t *targets, int N)
{
    (void)losses, (void)lse, (void)stats, (void)S, (void)targets, (void)N;
    g3_plan_count(be);
}

static void g3_plan_count_xent_shard_bwd(g3_backend_t *be, void *dlogits, const void *logits,
                                         const float *lse, const int32_t *targets, float dloss,
                                         int N, int V, int v0)
{
    (void)dlogits, (void)logits, (void)lse, (void)targets, (void)dloss, (void)N, (void)V, (void)v0;
    g3_plan_count(be);
}

static void g3_plan_count_adamw(g3_backend_t *be, float *p, const float *g, float *m, float *v,
                                size_t n, float lr, float b1, float b2, float eps, float wd,
                                int64_t step)
{
    (void)p, (void)g, (void)m, (void)v, (void)n, (void)lr, (void)b1, (void)b2, (void)eps;
    (void)wd, (void)step;
    g3_plan_count(be);
}

static void g3_plan_count_sumsq(g3_backend_t *be, const float *x, size_t n, double *host_out)
{
    (void)x, (void)n;
    *host_out = 0.0;
    g3_plan_count(be);
}

static void g3_plan_count_residual_layernorm_fwd(g3_backend_t *be, void *resid, void *out,
                                                 float *mean, float *rstd, const void *a,
                                                 const void *b, const void *w, const void *bias,
                                                 int N, int C, float eps)
{
    (void)resid, (void)out, (void)mean, (void)rstd, (void)a, (void)b, (void)w, (void)bias;
    (void)N, (void)C, (void)eps;
    g3_plan_count(be);
}

static void g3_plan_count_matmul_gelu_fwd(g3_backend_t *be, void *state, void *out, void *pre,
                                     const void *inp, const void *w, const void *bias, int N,
                                     int IC, int OC)
{
    (void)state, (void)out, (void)pre, (void)inp, (void)w, (void)bias, (void)N, (void)IC, (void)OC;
    g3_plan_count(be);
}

static void g3_plan_count_matmul_dgelu_bwd(g3_backend_t *be, void *state, void *dpre, float *dw,
                                      float *dbias, const void *dout, const void *inp,
                                      const void *pre, const void *w, int N, int IC, int OC)
{
    (void)state, (void)dpre, (void)dw, (void)dbias, (void)dout, (void)inp, (void)pre, (void)w;
    (void)N, (void)IC, (void)OC;
    g3_plan_count(be);
}

/* The tensor-parallel collectives: counted apart (the time model prices them on the links). */
static g3_status_t g3_plan_count_tp_sum(void *ctx, void *buf, size_t n)
{
    (void)ctx, (void)buf, (void)n;
    return G3_OK;
}

static g3_status_t g3_plan_count_tp_host(void *ctx, double *buf, size_t n, int max)
{
    (void)ctx, (void)buf, (void)n, (void)max;
    return G3_OK;
}

static g3_status_t g3_plan_count_tp_gather(void *ctx, const float *send, float *recv, size_t n)
{
    (void)ctx, (void)send, (void)recv, (void)n;
    return G3_OK;
}

static g3_status_t g3_plan_count_tp_act(void *ctx, const void *send, void *recv, size_t n)
{
    (void)ctx, (void)send, (void)recv, (void)n;
    return G3_OK;
}

/* The counting backend of kind: the row's dtype and capabilities, and the optional ops the
 * kind fills (its fused ops unless o turns them off: on by default where the buffers are a
 * device's, as g3_be_open's CUDA row does; the vocabulary-parallel cross-entropy where the
 * row says so).  OUT: *be, *ops. */
static void g3_plan_count_backend(g3_be_kind_t kind, const g3_be_opts_t *o, g3_count_t *c,
                                  g3_backend_ops_t *ops, g3_backend_t *be)
{
    memset(ops, 0, sizeof(*ops));
    g3_be_describe(kind, o, be);
    ops->close = g3_plan_count_close;
    ops->alloc = g3_plan_count_alloc;
    ops->free = g3_plan_count_free;
    ops->upload = g3_plan_count_upload;
    ops->download = g3_plan_count_download;
    ops->zero = g3_plan_count_zero;
    ops->sync = g3_plan_count_sync;
    ops->embedding_fwd = g3_plan_count_embedding_fwd;
    ops->embedding_bwd = g3_plan_count_embedding_bwd;
    ops->layernorm_fwd = g3_plan_count_layernorm_fwd;
    ops->layernorm_bwd = g3_plan_count_layernorm_bwd;
    ops->matmul_fwd = g3_plan_count_matmul_fwd;
    ops->matmul_bwd = g3_plan_count_matmul_bwd;
    ops->attention_fwd = g3_plan_count_attention_fwd;
    ops->attention_bwd = g3_plan_count_attention_bwd;
    ops->gelu_fwd = g3_plan_count_gelu_fwd;
    ops->gelu_bwd = g3_plan_count_gelu_bwd;
    ops->residual_fwd = g3_plan_count_residual;
    ops->scale = g3_plan_count_scale;
    ops->cast = g3_plan_count_cast;
    ops->xent_fwd = g3_plan_count_xent_fwd;
    ops->xent_bwd = g3_plan_count_xent_bwd;
    ops->adamw = g3_plan_count_adamw;
    ops->sumsq = g3_plan_count_sumsq;
    if (be->caps & G3_BE_CAP_XENT_SHARDED) {
        ops->xent_stats = g3_plan_count_xent_stats;
        ops->xent_combine = g3_plan_count_xent_combine;
        ops->xent_shard_bwd = g3_plan_count_xent_shard_bwd;
    }
    if (g3_be_fused_wanted(o, !(be->caps & G3_BE_CAP_HOST_MEMORY))) {
        ops->residual_layernorm_fwd = g3_plan_count_residual_layernorm_fwd;
        ops->matmul_gelu_fwd = g3_plan_count_matmul_gelu_fwd;
        ops->matmul_dgelu_bwd = g3_plan_count_matmul_dgelu_bwd;
    }
    be->ops = ops;
    c->ops = 0.0;
    c->copies = !(be->caps & G3_BE_CAP_HOST_MEMORY);
    be->priv = c;
}

g3_status_t g3_plan_count_pass(const g3_gpt_config_t *cfg, g3_be_kind_t kind,
                               const g3_be_opts_t *o, int B, int T, double *count)
{
    static const g3_gpt_tp_comm_t comm = { NULL,
                                           g3_plan_count_tp_sum,
                                           g3_plan_count_tp_host,
                                           g3_plan_count_tp_gather,
                                           g3_plan_count_tp_act,
                                           g3_plan_count_tp_act };
    g3_backend_ops_t ops;
    g3_backend_t be;
    g3_count_t c;
    g3_gpt_t *m = NULL;
    g3_gpt_acts_t *a = NULL;
    int32_t *tok = NULL;
    g3_status_t st;

    g3_plan_count_backend(kind, o, &c, &ops, &be);
    *count = 0.0;
    st = g3_gpt_init(cfg, &be, &m);
    if (st != G3_OK)
        return st;
    g3_gpt_set_tp_comm(m, &comm);
    st = g3_gpt_acts_init_chunk(m, 0, B, T, &a);
    tok = calloc((size_t)B * T, sizeof(*tok));
    if (st == G3_OK && !tok) {
        g3_error("gpt3d plan: out of memory counting the passes' ops");
        st = G3_ERR_NO_MEMORY;
    }
    if (st == G3_OK) {
        c.ops = 0.0;
        st = g3_gpt_forward(m, a, tok, tok, B, T, 1.0f, NULL);
    }
    if (st == G3_OK)
        st = g3_gpt_backward(m, a);
    if (st == G3_OK)
        *count = c.ops;
    free(tok);
    if (a)
        g3_gpt_acts_free(m, a);
    g3_gpt_free(m);
    return st;
}

/* The ops of stage `stage` of three, each of nl layers, tokens 1 x T. */
static g3_status_t g3_plan_count_stage(const g3_gpt_config_t *tiny, g3_be_kind_t kind,
                                       const g3_be_opts_t *o, int stage, int nl, int T, double *n)
{
    g3_gpt_config_t c = *tiny;
    c.num_layers = 3 * nl;
    c.pp_size = 3;
    c.pp_rank = stage;
    return g3_plan_count_pass(&c, kind, o, 1, T, n);
}

/* The counts depend on what changes the passes only: the kind and whether it fuses, TP,
 * sequence parallelism, recompute.  --search asks for the same few many times (each count
 * builds five tiny models): the last ones are kept (gpt3d plan is one thread). */
typedef struct {
    g3_be_kind_t  kind;
    int           fused, tp, sp, full, gran;
    g3_plan_ops_t ops;
} g3_count_memo_t;

#define G3_COUNT_MEMO 16
static g3_count_memo_t g3_count_memo[G3_COUNT_MEMO];
static int g3_count_nmemo;

g3_status_t g3_plan_count_ops(const g3_gpt_config_t *cfg, g3_be_kind_t kind,
                              const g3_be_opts_t *o, g3_plan_ops_t *ops)
{
    g3_gpt_config_t t = *cfg;
    double mid1 = 0, mid2 = 0, first = 0, last = 0, last2 = 0;
    g3_status_t st;
    int tp = cfg->tp_size > 0 ? cfg->tp_size : 1;
    g3_count_memo_t key;

    memset(&key, 0, sizeof(key));
    key.kind = kind;
    key.fused = g3_be_fused_wanted(o, !(g3_be_kind(kind)->caps & G3_BE_CAP_HOST_MEMORY));
    key.tp = tp;
    key.sp = cfg->sequence_parallel && tp > 1;
    key.full = cfg->recompute_activations;
    key.gran = cfg->recompute_granularity;
    for (int i = 0; i < g3_count_nmemo && i < G3_COUNT_MEMO; i++) {
        const g3_count_memo_t *k = &g3_count_memo[i];
        if (k->kind == key.kind && k->fused == key.fused && k->tp == key.tp && k->sp == key.sp &&
            k->full == key.full && k->gran == key.gran) {
            *ops = k->ops;
            return G3_OK;
        }
    }
    memset(ops, 0, sizeof(*ops));
    /* tiny: one 8-wide head per TP rank, an MLP as wide, 16 tokens per output-layer chunk
     * (32 tokens: two chunks), a vocabulary of 8 rows per TP rank; the flags that change the
     * passes kept */
    t.hidden_size = 8 * tp;
    t.num_attention_heads = tp;
    t.ffn_hidden_size = 8 * tp;
    t.seq_length = 32;
    t.max_position_embeddings = 32;
    t.vocab_size = 8 * tp;
    t.make_vocab_size_divisible_by = 1;
    t.head_chunk_tokens = 16;
    t.tp_rank = 0;
    t.pp_first_layers = 0;
    t.pp_last_layers = 0;
    t.virtual_pp_size = 0;
    st = g3_plan_count_stage(&t, kind, o, 1, 1, 16, &mid1);
    if (st == G3_OK)
        st = g3_plan_count_stage(&t, kind, o, 1, 2, 16, &mid2);
    if (st == G3_OK)
        st = g3_plan_count_stage(&t, kind, o, 0, 1, 16, &first);
    if (st == G3_OK)
        st = g3_plan_count_stage(&t, kind, o, 2, 1, 16, &last);
    if (st == G3_OK)
        st = g3_plan_count_stage(&t, kind, o, 2, 1, 32, &last2);
    if (st != G3_OK)
        return st;
    ops->stage = mid1;
    ops->layer = mid2 - mid1;
    ops->emb = first - mid1;
    ops->head_chunk = last2 - last;
    ops->head = last - mid1 - ops->head_chunk;
    key.ops = *ops;
    g3_count_memo[g3_count_nmemo++ % G3_COUNT_MEMO] = key;
    return G3_OK;
}
