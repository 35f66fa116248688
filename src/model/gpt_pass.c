/* gpt3d model: activations, forward and backward passes, logits.  Glossary in gpt.h;
 * N = B*T tokens of the current micro-batch.  Activations ("act") have the backend's
 * act_dtype (m->esize bytes each): they are `void *` and offsets go through g3_gpt_at. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "model/gpt.h"

/* Activations of one layer for the current micro-batch. */
typedef struct {
    void  *ln1;                        /* (B,T,C) act   input_layernorm output               */
    float *ln1_mean, *ln1_rstd;        /* (B,T) (B,T)   its statistics                       */
    void  *qkv;                        /* (B,T,3C_l) act                                     */
    void  *att;                        /* attention state for backward (the backend's: CPU
                                        * (B,NH_l,T,T) probabilities); with selective
                                        * recompute one buffer shared by every layer         */
    void  *atty;                       /* (B,T,C_l) act attention output before dense        */
    void  *xmid;                       /* (B,T,C) act   residual after attention             */
    void  *ln2;                        /* (B,T,C) act                                        */
    float *ln2_mean, *ln2_rstd;        /* (B,T) (B,T)                                        */
    void  *fch;                        /* (B,T,F_l) act fc1 output (GELU input)              */
    void  *fcg;                        /* (B,T,F_l) act GELU output                          */
} g3_gpt_layer_acts_t;

struct g3_gpt_acts {
    int                  B, T;        /* capacity                                            */
    int                  cur_B, cur_T;
    int                  head_grad;   /* the last forward ran the output layer's backward    */
    int                  chunk;       /* the model chunk these activations serve            */
    int                  lo, nl;      /* its local layers [lo, lo + nl)                      */
    int                  emb, head;   /* it runs the embedding / the final LN and the head   */
    void                *base;        /* the one backend allocation everything is carved from */
    size_t               bytes;
    int32_t             *tokens;      /* (B,T) inputs                                        */
    int32_t             *targets;     /* (B,T) labels                                        */
    void                *resid;       /* (nl+1, B,T,C) act residual stream at layer boundaries
                                       * of the chunk                                        */
    int                  nsets;       /* nl, or 1 with full recompute                        */
    int                  selective;   /* recompute the attention core in backward            */
    g3_gpt_layer_acts_t *layer;       /* (nsets,)                                            */
    void                *lnf;         /* (B,T,C) act final_layernorm output (SP: gathered,
                                       * (TP n, C))                                          */
    /* sequence parallelism (SP): n = ceil(B T / TP) rows per TP rank; resid, ln1, xmid,
     * ln2, their statistics, lnf's statistics and dres hold (n, C) rows of this rank */
    void                *lnf_s;       /* (n,C) act SP: this rank's rows of lnf               */
    void                *dlnf_s;      /* (n,C) act SP: its rows of dlnf, summed over TP      */
    void                *ts;          /* (n,C) act SP: a projection reduce-scattered         */
    void                *gath;        /* (TP n, C) act SP: a LayerNorm output or dres gathered */
    float *lnf_mean, *lnf_rstd;       /* (B,T) (B,T)                                         */
    void                *dlnf;        /* (B,T,C) act gradient at the final LayerNorm's output */
    float               *losses;      /* (B,T) per-token loss                                */
    float               *lse;         /* (B,T) log-sum-exp of the logits                     */
    int                  Nc;          /* tokens per output-layer chunk                       */
    void                *logits;      /* (Nc, Vp_l) act one chunk of logits / their gradient */
    void                *tmp;         /* (B,T,C) act a projection before its residual add    */
    void                *dres;        /* (B,T,C) act gradient of the residual stream         */
    void                *d1;          /* (B,T,max(3C_l, F_l)) act gradient work space        */
    void                *d2;          /* (B,T,max(C, C_l)) act    gradient work space        */
    void                *datt;        /* attention backward scratch (CPU: (B,NH_l,T,T))      */
    float               *host_losses; /* (B,T) host copy                                     */
    /* vocabulary-parallel cross-entropy (TP > 1) */
    int32_t             *targets_local; /* (B,T) target - v0 where this rank holds it, else 0 */
    int32_t             *host_targets;  /* (B,T) host copy of the targets                     */
    double              *host_ce;       /* (3, Nc) per-token lse, sums, target logits (host)  */
    float               *host_lse;      /* (Nc,) combined log-sum-exp (host)                   */
    float               *xstats;        /* (Nc,3) this shard's statistics, or NULL: the host
                                         * path (g3_gpt_xent_tp_dev)                           */
    float               *xstats_all;    /* (TP,Nc,3) every shard's, gathered                   */
    /* scoring (g3_gpt_score): whether each target is the largest logit */
    uint8_t             *greedy_out;    /* (B,T) host, set for one forward, else NULL         */
    double              *host_gmax;     /* (2, Nc) per row the max logit and the target's     */
    float               *host_glog;     /* (Nc, Vp_l) or (Nc, 3) host logits or statistics    */
    float               *gstats;        /* (Nc, 3) backend: xent_stats' output, or NULL       */
};

/* Carving one allocation: pass 1 (base NULL) only counts, pass 2 assigns. */
typedef struct {
    char  *base;
    size_t used;
} g3_carve_t;

static void *g3_gpt_carve(g3_carve_t *cv, size_t bytes)
{
    void *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += (bytes + 63) & ~(size_t)63;
    return p;
}

/* RET: the act_dtype element `elems` elements after p. */
static void *g3_gpt_at(const g3_gpt_t *m, const void *p, size_t elems)
{
    return (char *)p + elems * m->esize;
}

/* RET: 1 when the backend computes the vocabulary-parallel cross-entropy's statistics in its
 * own memory (xent_stats, xent_combine, xent_shard_bwd: CUDA). */
static int g3_gpt_xent_dev_ops(const g3_gpt_t *m)
{
    return (m->be->caps & G3_BE_CAP_XENT_SHARDED) != 0;   /* g3_be_open checks the ops */
}

/* RET: 1 with sequence parallelism. */
static int g3_gpt_sp(const g3_gpt_t *m)
{
    return m->cfg.sequence_parallel && m->cfg.tp_size > 1;
}

/* RET: rows of a TP rank's shard of N tokens: ceil(N / TP) with SP, else N. */
static int g3_gpt_shard(const g3_gpt_t *m, int N)
{
    return g3_gpt_sp(m) ? (N + m->cfg.tp_size - 1) / m->cfg.tp_size : N;
}

/* RET: the rows of this rank's shard that hold tokens (the last ranks' shards are short
 * when TP does not divide N). */
static int g3_gpt_shard_valid(const g3_gpt_t *m, int N)
{
    int n = g3_gpt_shard(m, N), v = N - (g3_gpt_sp(m) ? m->cfg.tp_rank * n : 0);
    return v < 0 ? 0 : v > n ? n : v;
}

static void g3_gpt_acts_layout(const g3_gpt_t *m, g3_gpt_acts_t *a, g3_carve_t *cv)
{
    g3_backend_t *be = m->be;
    size_t N = (size_t)a->B * a->T, f = sizeof(float), e = m->esize;
    size_t att = g3_be_att_state_bytes(be, a->B, a->T, m->NH_l, m->HS);
    size_t datt = g3_be_att_scratch_bytes(be, a->B, a->T, m->NH_l, m->HS);
    size_t d1 = 3 * (size_t)m->C_l > (size_t)m->F_l ? 3 * (size_t)m->C_l : (size_t)m->F_l;
    size_t d2 = m->C > m->C_l ? m->C : m->C_l;
    int nl = a->nl, sp = g3_gpt_sp(m);
    /* n: rows of the sharded tensors; Np: of the full ones a reduce-scatter reads */
    size_t n = (size_t)g3_gpt_shard(m, (int)N), Np = sp ? n * m->cfg.tp_size : N;
    void *att_shared = a->selective ? g3_gpt_carve(cv, att) : NULL;

    a->tokens = g3_gpt_carve(cv, N * sizeof(int32_t));
    a->targets = g3_gpt_carve(cv, N * sizeof(int32_t));
    a->resid = g3_gpt_carve(cv, (size_t)(nl + 1) * n * m->C * e);
    for (int s = 0; s < a->nsets; s++) {
        g3_gpt_layer_acts_t *L = &a->layer[s];
        L->ln1 = g3_gpt_carve(cv, n * m->C * e);
        L->ln1_mean = g3_gpt_carve(cv, n * f);
        L->ln1_rstd = g3_gpt_carve(cv, n * f);
        L->qkv = g3_gpt_carve(cv, N * 3 * m->C_l * e);
        L->att = a->selective ? att_shared : g3_gpt_carve(cv, att);
        L->atty = g3_gpt_carve(cv, N * m->C_l * e);
        L->xmid = g3_gpt_carve(cv, n * m->C * e);
        L->ln2 = g3_gpt_carve(cv, n * m->C * e);
        L->ln2_mean = g3_gpt_carve(cv, n * f);
        L->ln2_rstd = g3_gpt_carve(cv, n * f);
        L->fch = g3_gpt_carve(cv, N * m->F_l * e);
        L->fcg = g3_gpt_carve(cv, N * m->F_l * e);
    }
    if (a->head) {
        a->lnf = g3_gpt_carve(cv, Np * m->C * e);
        a->lnf_mean = g3_gpt_carve(cv, n * f);
        a->lnf_rstd = g3_gpt_carve(cv, n * f);
        a->dlnf = g3_gpt_carve(cv, Np * m->C * e);
        a->lnf_s = sp ? g3_gpt_carve(cv, n * m->C * e) : a->lnf;
        a->dlnf_s = sp ? g3_gpt_carve(cv, n * m->C * e) : a->dlnf;
        a->losses = g3_gpt_carve(cv, N * f);
        a->lse = g3_gpt_carve(cv, N * f);
        a->logits = g3_gpt_carve(cv, (size_t)a->Nc * m->Vp_l * e);
        if (m->cfg.tp_size > 1)
            a->targets_local = g3_gpt_carve(cv, N * sizeof(int32_t));
        if (m->cfg.tp_size > 1 && g3_gpt_xent_dev_ops(m)) {
            a->xstats = g3_gpt_carve(cv, (size_t)a->Nc * 3 * f);
            a->xstats_all = g3_gpt_carve(cv, (size_t)m->cfg.tp_size * a->Nc * 3 * f);
        }
    }
    a->tmp = g3_gpt_carve(cv, Np * m->C * e);
    a->dres = g3_gpt_carve(cv, n * m->C * e);
    a->d1 = g3_gpt_carve(cv, N * d1 * e);
    a->d2 = g3_gpt_carve(cv, Np * d2 * e);
    if (sp) {
        a->ts = g3_gpt_carve(cv, n * m->C * e);
        a->gath = g3_gpt_carve(cv, Np * m->C * e);
    }
    a->datt = g3_gpt_carve(cv, datt);
}

/* The part of the model acts a serves: chunk `chunk`. */
static void g3_gpt_acts_chunk(const g3_gpt_t *m, g3_gpt_acts_t *a, int chunk)
{
    a->chunk = chunk;
    a->nl = m->chunk_nl;
    a->lo = chunk * m->chunk_nl;
    a->emb = m->has_embedding && chunk == 0;
    a->head = m->has_head && chunk == m->nchunks - 1;
}

/* How activations are kept: OUT: *nsets (layer sets), *selective. */
static void g3_gpt_recompute_mode(const g3_gpt_t *m, int nl, int *nsets, int *selective)
{
    int full = m->cfg.recompute_activations ||
               m->cfg.recompute_granularity == G3_GPT_RECOMPUTE_FULL;
    *nsets = full ? 1 : nl;
    *selective = !full && m->cfg.recompute_granularity == G3_GPT_RECOMPUTE_SELECTIVE;
}

/* Tokens per output-layer chunk: at most ~16M logits (64 MiB) per chunk, chunks of equal
 * size: big enough for efficient sgemm (K = chunk rows in the weight-gradient product), small
 * enough that the logits never exist for the whole micro-batch at once. */
static int g3_gpt_head_chunk_of(const g3_gpt_config_t *cfg, int Vp_l, int B, int T)
{
    int chunk;
    if (cfg->head_chunk_tokens > 0) {
        chunk = cfg->head_chunk_tokens;
    } else {
        size_t total = (size_t)B * T * (size_t)Vp_l, target = (size_t)16 << 20;
        size_t nchunks = (total + target - 1) / target;
        chunk = (int)(((size_t)B * T + nchunks - 1) / nchunks);
        chunk = (chunk + 15) & ~15;
    }
    if (chunk < 16)
        chunk = 16;
    return chunk < B * T ? chunk : B * T;
}

static int g3_gpt_head_chunk(const g3_gpt_t *m, int B, int T)
{
    return g3_gpt_head_chunk_of(&m->cfg, m->Vp_l, B, T);
}

int g3_gpt_head_chunks(const g3_gpt_config_t *cfg, int Vp_l, int B, int T)
{
    int chunk = g3_gpt_head_chunk_of(cfg, Vp_l, B, T);
    return (int)(((int64_t)B * T + chunk - 1) / chunk);
}

size_t g3_gpt_acts_estimate(const g3_gpt_t *m, int B, int T)
{
    g3_gpt_acts_t a;
    g3_carve_t cv = { NULL, 0 };

    memset(&a, 0, sizeof(a));
    a.B = B;
    a.T = T;
    g3_gpt_acts_chunk(m, &a, m->nchunks - 1);   /* the largest: with the head, if any */
    g3_gpt_recompute_mode(m, a.nl, &a.nsets, &a.selective);
    a.Nc = g3_gpt_head_chunk(m, B, T);
    a.layer = calloc((size_t)(a.nsets ? a.nsets : 1), sizeof(*a.layer));
    if (!a.layer)
        return (size_t)-1;
    g3_gpt_acts_layout(m, &a, &cv);
    free(a.layer);
    return cv.used;
}

g3_status_t g3_gpt_acts_init(g3_gpt_t *m, int B, int T, g3_gpt_acts_t **acts_p)
{
    return g3_gpt_acts_init_chunk(m, 0, B, T, acts_p);
}

/* Free a's host tables and a itself (its backend memory is the caller's to free). */
static void g3_gpt_acts_free_host(g3_gpt_acts_t *a)
{
    G3_FREE_ALL(a->host_gmax, a->host_glog, a->layer, a->host_losses, a->host_targets, a->host_ce,
                a->host_lse, a);
}

g3_status_t g3_gpt_acts_init_chunk(g3_gpt_t *m, int chunk, int B, int T,
                                   g3_gpt_acts_t **acts_p)
{
    g3_backend_t *be = m->be;
    g3_gpt_acts_t *a;
    g3_carve_t cv = { NULL, 0 };
    g3_status_t st;

    if (B < 1 || T < 1 || T > m->P) {
        g3_error(
            "model: activations for %d sequences of %d tokens: need B >= 1 and 1 <= T <= %d positions",
            B, T, m->P);
        return G3_ERR_INVALID_ARG;
    }
    a = calloc(1, sizeof(*a));
    if (!a)
        goto err_no_memory;
    a->B = B;
    a->T = T;
    g3_gpt_acts_chunk(m, a, chunk < 0 || chunk >= m->nchunks ? 0 : chunk);
    g3_gpt_recompute_mode(m, a->nl, &a->nsets, &a->selective);
    a->layer = calloc((size_t)(a->nsets ? a->nsets : 1), sizeof(*a->layer));
    a->host_losses = malloc(sizeof(float) * (size_t)B * T);
    if (!a->layer || !a->host_losses)
        goto err_free_acts;
    a->Nc = g3_gpt_head_chunk(m, B, T);
    if (m->cfg.tp_size > 1) {
        a->host_targets = malloc(sizeof(int32_t) * (size_t)B * T);
        a->host_ce = malloc(sizeof(double) * 3 * (size_t)a->Nc);
        a->host_lse = malloc(sizeof(float) * (size_t)a->Nc);
        if (!a->host_targets || !a->host_ce || !a->host_lse)
            goto err_free_acts;
    }
    g3_gpt_acts_layout(m, a, &cv);
    a->bytes = cv.used;
    st = be->ops->alloc(be, cv.used, "the activations", &a->base);
    if (st != G3_OK) {
        g3_gpt_acts_free_host(a);
        return st;
    }
    cv.base = a->base;
    cv.used = 0;
    g3_gpt_acts_layout(m, a, &cv);
    *acts_p = a;
    return G3_OK;

err_free_acts:
    g3_gpt_acts_free_host(a);
err_no_memory:
    g3_error("model: out of memory for the activation tables");
    return G3_ERR_NO_MEMORY;
}

void g3_gpt_acts_free(g3_gpt_t *m, g3_gpt_acts_t *a)
{
    if (!a)
        return;
    m->be->ops->free(m->be, a->base);
    if (a->gstats)
        m->be->ops->free(m->be, a->gstats);
    g3_gpt_acts_free_host(a);
}

size_t g3_gpt_acts_bytes(const g3_gpt_acts_t *a)
{
    return a->bytes;
}

void *g3_gpt_acts_input(g3_gpt_acts_t *a)
{
    return a->resid;
}

size_t g3_gpt_stage_numel(const g3_gpt_t *m, int B, int T)
{
    return (size_t)g3_gpt_shard(m, B * T) * m->C;
}

const void *g3_gpt_acts_output(const g3_gpt_t *m, const g3_gpt_acts_t *a)
{
    return g3_gpt_at(m, a->resid, (size_t)a->nl * g3_gpt_stage_numel(m, a->cur_B, a->cur_T));
}

void *g3_gpt_acts_grad(g3_gpt_acts_t *a)
{
    return a->dres;
}

/* ---- passes ---------------------------------------------------------------------------------- */

/* Sum buf (n,) over the tensor-parallel group, in place (Megatron's g in forward after a
 * row-parallel product, f in backward before a column-parallel input gradient leaves). */
static g3_status_t g3_gpt_tp_sum(g3_gpt_t *m, void *buf, size_t n)
{
    g3_status_t st;
    if (m->cfg.tp_size == 1)
        return G3_OK;
    st = m->be->ops->sync(m->be);
    if (st == G3_OK)
        st = m->tp.allreduce_sum(m->tp.ctx, buf, n);
    return st;
}

/* The two conjugate communication operators of a tensor-parallel pass (Megatron's f and g;
 * their sequence-parallel forms from Korthikanti et al. 2022).  In the forward `enter` runs
 * before a column-parallel product and `leave` after a row-parallel one; in the backward
 * each stands where its transpose stood: `enter` before a row-parallel backward, `leave`
 * after a column-parallel input gradient.
 *                 enter          leave
 *   plain TP      identity       all-reduce, in place
 *   SP            all-gather     reduce-scatter (the padding rows [N, TP n) zeroed first)
 * rows (n, C) act: this rank's rows of N tokens (all N of them under plain TP); full
 * (TP n, C) act: every rank's rows. */
typedef struct {
    /* OUT *full_p: the N rows whose share `rows` holds: rows itself, or full gathered */
    g3_status_t (*enter)(g3_gpt_t *m, const void *rows, void *full, int N,
                         const void **full_p);
    /* full's rows [0, N) summed over TP.  OUT *rows_p: this rank's rows of the sum: full
     * itself, or rows scattered */
    g3_status_t (*leave)(g3_gpt_t *m, void *full, void *rows, int N, void **rows_p);
} g3_gpt_tp_ops_t;

static g3_status_t g3_gpt_tp_enter(g3_gpt_t *m, const void *rows, void *full, int N,
                                   const void **full_p)
{
    (void)m, (void)full, (void)N;
    *full_p = rows;
    return G3_OK;
}

static g3_status_t g3_gpt_tp_leave(g3_gpt_t *m, void *full, void *rows, int N, void **rows_p)
{
    (void)rows;
    *rows_p = full;
    return g3_gpt_tp_sum(m, full, (size_t)N * m->C);
}

static g3_status_t g3_gpt_sp_gather(g3_gpt_t *m, const void *rows, void *full, int N,
                                    const void **full_p)
{
    g3_status_t st = m->be->ops->sync(m->be);
    *full_p = full;
    if (st == G3_OK)
        st = m->tp.allgather_act(m->tp.ctx, rows, full, (size_t)g3_gpt_shard(m, N) * m->C);
    return st;
}

static g3_status_t g3_gpt_sp_scatter(g3_gpt_t *m, void *full, void *rows, int N, void **rows_p)
{
    size_t n = (size_t)g3_gpt_shard(m, N), Np = n * m->cfg.tp_size;
    g3_status_t st;
    *rows_p = rows;
    if (Np > (size_t)N)
        m->be->ops->zero(m->be, g3_gpt_at(m, full, (size_t)N * m->C),
                         (Np - (size_t)N) * m->C * m->esize);
    st = m->be->ops->sync(m->be);
    if (st == G3_OK)
        st = m->tp.reduce_scatter(m->tp.ctx, full, rows, n * m->C);
    return st;
}

static const g3_gpt_tp_ops_t g3_gpt_tp_plain = {g3_gpt_tp_enter, g3_gpt_tp_leave};
static const g3_gpt_tp_ops_t g3_gpt_tp_seq = {g3_gpt_sp_gather, g3_gpt_sp_scatter};

/* RET: the operators of m's tensor-parallel mode. */
static const g3_gpt_tp_ops_t *g3_gpt_tp_ops(const g3_gpt_t *m)
{
    return g3_gpt_sp(m) ? &g3_gpt_tp_seq : &g3_gpt_tp_plain;
}

/* Check ids against the real (unpadded) vocabulary before they index anything. */
static g3_status_t g3_gpt_check_ids(const g3_gpt_t *m, const int32_t *ids, int B, int T,
                                    const char *what)
{
    for (int i = 0; i < B * T; i++) {
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size) {
            g3_error(
                "model: %s id %d at sequence %d position %d is outside the vocabulary [0, %d): the data was tokenized with another vocabulary than --vocab-file",
                what, ids[i], i / T, i % T, m->cfg.vocab_size);
            return G3_ERR_INVALID_ARG;
        }
    }
    return G3_OK;
}

/* The MLP's first product and its GeLU, fused where the backend has the op (backend.h):
 * s->fch = inp . fc1 + b, s->fcg = gelu(s->fch).  inp (N, C) act: ln2, or its gathered
 * rows under sequence parallelism. */
static void g3_gpt_fc1_gelu_fwd(g3_gpt_t *m, g3_gpt_layer_acts_t *s, const g3_gpt_layer_t *w,
                                void *state, const void *inp, int N)
{
    const g3_backend_ops_t *op = m->be->ops;

    if (op->matmul_gelu_fwd) {
        op->matmul_gelu_fwd(m->be, state, s->fcg, s->fch, inp, w->fc1_w, w->fc1_b, N, m->C,
                            m->F_l);
    } else {
        op->matmul_fwd(m->be, state, s->fch, inp, w->fc1_w, w->fc1_b, N, m->C, m->F_l);
        op->gelu_fwd(m->be, s->fcg, s->fch, (size_t)N * m->F_l);
    }
}

/* The backward of fc2 and the GeLU before it, fused where the backend has the op:
 * a->d1 = (dout . fc2) * gelu'(s->fch), fc2's gradients accumulated in g.  dout (N, C) act:
 * d resid[li+1], or its gathered rows under sequence parallelism. */
static void g3_gpt_fc2_gelu_bwd(g3_gpt_t *m, g3_gpt_acts_t *a, g3_gpt_layer_acts_t *s,
                                const g3_gpt_layer_t *w, g3_gpt_layer_t *g, void *state,
                                const void *dout, int N)
{
    const g3_backend_ops_t *op = m->be->ops;

    if (op->matmul_dgelu_bwd) {
        op->matmul_dgelu_bwd(m->be, state, a->d1, g->fc2_w, g->fc2_b, dout, s->fcg, s->fch,
                             w->fc2_w, N, m->F_l, m->C);
    } else {
        op->matmul_bwd(m->be, state, a->d1, g->fc2_w, g->fc2_b, dout, s->fcg, w->fc2_w, N,
                       m->F_l, m->C);
        op->gelu_bwd(m->be, a->d1, s->fch, a->d1, (size_t)N * m->F_l);
    }
}

/* The backward of the dense product and the attention: a->d1 = d qkv from dout, the
 * gradient of dense's output ((N, C) act: d xmid, or its gathered rows under sequence
 * parallelism); dense's gradients accumulated in g.  With selective recomputation the
 * shared attention state holds another layer's: this layer's is recomputed first. */
static void g3_gpt_attn_bwd(g3_gpt_t *m, g3_gpt_acts_t *a, g3_gpt_layer_acts_t *s,
                            const g3_gpt_layer_t *w, g3_gpt_layer_t *g, void *state,
                            const void *dout)
{
    const g3_backend_ops_t *op = m->be->ops;
    int B = a->cur_B, T = a->cur_T, N = B * T;

    op->matmul_bwd(m->be, state, a->d2, g->proj_w, g->proj_b, dout, s->atty, w->proj_w, N,
                   m->C_l, m->C);
    if (a->selective)
        op->attention_fwd(m->be, s->atty, s->att, s->qkv, B, T, m->NH_l, m->HS);
    op->attention_bwd(m->be, a->d1, a->datt, a->d2, s->atty, s->qkv, s->att, B, T, m->NH_l,
                      m->HS);
}

/* Layer li (local index) forward: resid[li] -> resid[li+1], activations in set s.
 * Tensor parallel: qkv and fc1 are column-parallel (local heads / MLP columns), dense and
 * fc2 row-parallel: their partial products are summed over the TP group (`leave`) before
 * the residual add, the bias added once (by TP rank 0) inside the sum.  The residual
 * stream x, y and the LayerNorms are this rank's nv of n rows (all N under plain TP);
 * under sequence parallelism each LayerNorm output is all-gathered (`enter`) before the
 * column-parallel product. */
static g3_status_t g3_gpt_layer_fwd(g3_gpt_t *m, g3_gpt_acts_t *a, int li,
                                    g3_gpt_layer_acts_t *s)
{
    const g3_backend_ops_t *op = m->be->ops;
    const g3_gpt_tp_ops_t *tp = g3_gpt_tp_ops(m);
    g3_backend_t *be = m->be;
    const g3_gpt_layer_t *w = &m->pt.layers[a->lo + li];
    int B = a->cur_B, T = a->cur_T, N = B * T, C = m->C;
    int n = g3_gpt_shard(m, N), nv = g3_gpt_shard_valid(m, N);
    float eps = m->cfg.layernorm_epsilon;
    void *x = g3_gpt_at(m, a->resid, (size_t)li * n * C), *y = g3_gpt_at(m, x, (size_t)n * C);
    int bias_here = m->cfg.tp_rank == 0;
    const void *in;   /* (N, C) act: a LayerNorm output, every row */
    void *sum;        /* (nv, C) act: this rank's rows of a projection summed over TP */
    g3_status_t st;

    if (nv > 0)   /* SP: a shard of padding only (fewer tokens than TP ranks): nothing to do */
        op->layernorm_fwd(be, s->ln1, s->ln1_mean, s->ln1_rstd, x, w->ln1_w, w->ln1_b, nv, C,
                          eps);
    st = tp->enter(m, s->ln1, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    op->matmul_fwd(be, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_QKV), s->qkv, in, w->qkv_w,
                   w->qkv_b, N, C, 3 * m->C_l);
    op->attention_fwd(be, s->atty, s->att, s->qkv, B, T, m->NH_l, m->HS);
    op->matmul_fwd(be, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_PROJ), a->tmp, s->atty,
                   w->proj_w, bias_here ? w->proj_b : NULL, N, m->C_l, C);
    st = tp->leave(m, a->tmp, a->ts, N, &sum);
    if (st != G3_OK)
        return st;
    if (nv > 0 && op->residual_layernorm_fwd) {   /* the optional fused ops of backend.h */
        op->residual_layernorm_fwd(be, s->xmid, s->ln2, s->ln2_mean, s->ln2_rstd, x, sum,
                                   w->ln2_w, w->ln2_b, nv, C, eps);
    } else if (nv > 0) {
        op->residual_fwd(be, s->xmid, x, sum, (size_t)nv * C);
        op->layernorm_fwd(be, s->ln2, s->ln2_mean, s->ln2_rstd, s->xmid, w->ln2_w, w->ln2_b,
                          nv, C, eps);
    }
    st = tp->enter(m, s->ln2, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    g3_gpt_fc1_gelu_fwd(m, s, w, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_FC1), in, N);
    op->matmul_fwd(be, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_FC2), a->tmp, s->fcg, w->fc2_w,
                   bias_here ? w->fc2_b : NULL, N, m->F_l, C);
    st = tp->leave(m, a->tmp, a->ts, N, &sum);
    if (st != G3_OK)
        return st;
    if (nv > 0)
        op->residual_fwd(be, y, s->xmid, sum, (size_t)nv * C);
    return G3_OK;
}

/* Layer li backward: a->dres holds this rank's rows of d resid[li+1] on entry and of
 * d resid[li] on return.  Each operator's transpose: d resid is entered (under SP
 * all-gathered) before each row-parallel backward, and the input gradients of the
 * column-parallel qkv and fc1, partial sums over the local columns, leave (summed over
 * the TP group) before the LayerNorm backward, so the replicated parameters (LayerNorms,
 * dense/fc2 biases) get the same gradient on every TP rank.  Under SP the LayerNorm
 * outputs are gathered again for the weight gradients (Megatron keeps them sharded) and
 * the LayerNorm parameters' gradients cover this rank's rows only: the engine sums them
 * over TP. */
static g3_status_t g3_gpt_layer_bwd(g3_gpt_t *m, g3_gpt_acts_t *a, int li,
                                    g3_gpt_layer_acts_t *s)
{
    const g3_backend_ops_t *op = m->be->ops;
    const g3_gpt_tp_ops_t *tp = g3_gpt_tp_ops(m);
    g3_backend_t *be = m->be;
    const g3_gpt_layer_t *w = &m->pt.layers[a->lo + li];
    g3_gpt_layer_t *g = &m->gt.layers[a->lo + li];
    int B = a->cur_B, T = a->cur_T, N = B * T, C = m->C;
    int n = g3_gpt_shard(m, N), nv = g3_gpt_shard_valid(m, N);
    void *x = g3_gpt_at(m, a->resid, (size_t)li * n * C);
    const void *in;   /* (N, C) act: d resid or a LayerNorm output, every row */
    void *dx;         /* (nv, C) act: this rank's rows of an input gradient summed over TP */
    g3_status_t st;

    /* MLP: y = xmid + fc2(gelu(fc1(ln2(xmid)))) */
    st = tp->enter(m, a->dres, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    g3_gpt_fc2_gelu_bwd(m, a, s, w, g, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_FC2), in, N);
    st = tp->enter(m, s->ln2, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    op->matmul_bwd(be, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_FC1), a->d2, g->fc1_w, g->fc1_b,
                   a->d1, in, w->fc1_w, N, C, m->F_l);
    st = tp->leave(m, a->d2, a->ts, N, &dx);
    if (st != G3_OK)
        return st;
    if (nv > 0)
        op->layernorm_bwd(be, a->dres, g->ln2_w, g->ln2_b, dx, s->xmid, w->ln2_w, s->ln2_mean,
                          s->ln2_rstd, nv, C);
    /* attention: xmid = x + dense(attn(qkv(ln1(x)))) */
    st = tp->enter(m, a->dres, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    g3_gpt_attn_bwd(m, a, s, w, g, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_PROJ), in);
    st = tp->enter(m, s->ln1, a->gath, N, &in);
    if (st != G3_OK)
        return st;
    op->matmul_bwd(be, g3_gpt_lstate(m, a->lo + li, G3_GPT_LIN_QKV), a->d2, g->qkv_w, g->qkv_b,
                   a->d1, in, w->qkv_w, N, C, 3 * m->C_l);
    st = tp->leave(m, a->d2, a->ts, N, &dx);
    if (st != G3_OK)
        return st;
    if (nv > 0)
        op->layernorm_bwd(be, a->dres, g->ln1_w, g->ln1_b, dx, x, w->ln1_w, s->ln1_mean,
                          s->ln1_rstd, nv, C);
    return G3_OK;
}

static g3_gpt_layer_acts_t *g3_gpt_set(g3_gpt_acts_t *a, int li)
{
    return &a->layer[a->nsets == 1 ? 0 : li];
}

/* Embeddings and layers: resid[0..nl] for tokens already uploaded (or resid[0] received
 * from the previous pipeline stage).  Vocabulary-parallel embedding: each TP rank looks up
 * the tokens of its rows (zeros for the others), rank 0 adds the positions, and the sum
 * over the TP group is the embedding. */
static g3_status_t g3_gpt_trunk_fwd(g3_gpt_t *m, g3_gpt_acts_t *a)
{
    int nl = a->nl;
    /* (N, C) act: every row of the lookup, summed in place (SP: reduce-scattered into resid) */
    void *emb = g3_gpt_sp(m) ? a->tmp : a->resid, *rows;
    g3_status_t st = G3_OK;
    if (a->emb && m->hooks.fwd_layer)
        st = m->hooks.fwd_layer(m->hooks.ctx, -1);
    if (st == G3_OK && a->emb) {
        m->be->ops->embedding_fwd(m->be, emb, a->tokens, m->pt.wte,
                                  m->cfg.tp_rank == 0 ? m->pt.wpe : NULL, a->cur_B, a->cur_T,
                                  m->C, m->v0, m->Vp_l);
        st = g3_gpt_tp_ops(m)->leave(m, emb, a->resid, a->cur_B * a->cur_T, &rows);
    }
    for (int li = 0; li < nl && st == G3_OK; li++) {
        if (m->hooks.fwd_layer)
            st = m->hooks.fwd_layer(m->hooks.ctx, a->lo + li);
        if (st == G3_OK)
            st = g3_gpt_layer_fwd(m, a, li, g3_gpt_set(a, li));
    }
    return st;
}

static g3_status_t g3_gpt_upload_tokens(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tokens,
                                        const int32_t *targets, int B, int T)
{
    g3_status_t st;
    /* more, shorter sequences than the capacity fit too: every buffer is sized by B T
     * tokens, and the attention's by B T T (or B T), which B' T' <= B T with T' <= T keeps */
    if (B < 1 || T < 1 || T > a->T || (size_t)B * T > (size_t)a->B * a->T) {
        g3_error("model: a micro-batch of %d x %d tokens does not fit activations for %d x %d",
                 B, T, a->B, a->T);
        return G3_ERR_INVALID_ARG;
    }
    if (!tokens && a->emb) {
        g3_error("model: the first pipeline stage needs the input tokens");
        return G3_ERR_INTERNAL;
    }
    st = tokens ? g3_gpt_check_ids(m, tokens, B, T, "input token") : G3_OK;
    if (st == G3_OK && targets)
        st = g3_gpt_check_ids(m, targets, B, T, "target token");
    if (st != G3_OK)
        return st;
    a->cur_B = B;
    a->cur_T = T;
    if (tokens)
        m->be->ops->upload(m->be, a->tokens, tokens, sizeof(int32_t) * (size_t)B * T);
    if (targets)
        m->be->ops->upload(m->be, a->targets, targets, sizeof(int32_t) * (size_t)B * T);
    if (targets && m->cfg.tp_size > 1 && a->head) {
        /* vocabulary-parallel cross-entropy: the local column of each target this rank
         * holds; 0 (a placeholder, corrected in the backward) for the others */
        int32_t *tl = a->host_targets;
        memcpy(tl, targets, sizeof(int32_t) * (size_t)B * T);
        for (int i = 0; i < B * T; i++)
            tl[i] = tl[i] >= m->v0 && tl[i] < m->v0 + m->Vp_l ? tl[i] - m->v0 : 0;
        m->be->ops->upload(m->be, a->targets_local, tl, sizeof(int32_t) * (size_t)B * T);
        memcpy(tl, targets, sizeof(int32_t) * (size_t)B * T);
    }
    return G3_OK;
}

/* g3_gpt_xent_tp (below) with the statistics in backend memory (a->xstats and the TP group's
 * all-gather): per row the shard's max, sum-exp and target logit (N, 3), gathered over the TP
 * group into (TP, N, 3) in one collective, combined into lse and the losses on every rank;
 * the gradient takes global targets and the shard's v0, so no placeholder.  The same
 * arithmetic as the host path (Megatron's max and sum-exp), without host round trips but for
 * the n losses.  OUT: losses[r0 .. r0+n) (host). */
static g3_status_t g3_gpt_xent_tp_dev(g3_gpt_t *m, g3_gpt_acts_t *a, int r0, int n, float dloss,
                                      float *losses)
{
    const g3_backend_ops_t *op = m->be->ops;
    g3_backend_t *be = m->be;
    const int32_t *tg = a->targets + r0;   /* (n,) global ids, backend memory */
    g3_status_t st;

    op->xent_stats(be, a->xstats, a->logits, tg, n, m->Vp_l, m->v0);
    st = op->sync(be);
    if (st == G3_OK)
        st = m->tp.allgather(m->tp.ctx, a->xstats, a->xstats_all, 3 * (size_t)n);
    if (st != G3_OK)
        return st;
    op->xent_combine(be, a->losses + r0, a->lse + r0, a->xstats_all, m->cfg.tp_size, tg, n);
    op->download(be, losses + r0, a->losses + r0, sizeof(float) * (size_t)n);
    if (dloss != 0.0f)
        op->xent_shard_bwd(be, a->logits, a->logits, a->lse + r0, tg, dloss, n, m->Vp_l, m->v0);
    return G3_OK;
}

/* Vocabulary-parallel cross-entropy of one chunk of n tokens from row r0 (TP > 1): the
 * logits (n, Vp_l) of this rank's vocabulary rows are in a->logits.  Each rank's
 * log-sum-exp over its rows (xent_fwd) is combined over the TP group as
 * lse = M + log sum_r exp(lse_r - M) with M the all-reduced max (the max and sum-exp
 * all-reduces of Megatron's vocab_parallel_cross_entropy, on the per-row log-sum-exp), and
 * the target's logit comes from the rank holding it (a sum with zeros elsewhere).  The full
 * logits are never gathered.  With dloss != 0 the chunk's logits become their gradient
 * (softmax - onehot) dloss, the softmax over the whole vocabulary.
 * OUT: losses[r0 .. r0+n) (host). */
static g3_status_t g3_gpt_xent_tp(g3_gpt_t *m, g3_gpt_acts_t *a, int r0, int n, float dloss,
                                  float *losses)
{
    const g3_backend_ops_t *op = m->be->ops;
    g3_backend_t *be = m->be;
    const int32_t *tg = a->host_targets + r0;
    int Vl = m->Vp_l, v0 = m->v0;
    /* sum and xt adjacent, (n,) each: one all-reduce of 2n covers both, also for a short
     * last chunk (n < Nc) */
    double *lse = a->host_ce, *sum = lse + a->Nc, *xt = sum + n;
    float *lse_f = a->host_lse;           /* (n,) this rank's, then the combined, lse */
    unsigned char elem[8];                /* one act_dtype element */
    g3_status_t st;

    op->xent_fwd(be, a->losses + r0, a->lse + r0, a->logits, a->targets_local + r0, n, Vl);
    op->download(be, lse_f, a->lse + r0, sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        float x = 0.0f;
        if (tg[i] >= v0 && tg[i] < v0 + Vl) {
            op->download(be, elem, g3_gpt_at(m, a->logits, (size_t)i * Vl + (tg[i] - v0)),
                         m->esize);
            g3_be_convert(&x, G3_BE_F32, elem, be->act_dtype, 1);
        }
        lse[i] = lse_f[i];
        xt[i] = x;
    }
    st = op->sync(be);
    if (st == G3_OK)
        st = m->tp.allreduce_host(m->tp.ctx, lse, (size_t)n, 1);   /* M: the max over ranks */
    for (int i = 0; st == G3_OK && i < n; i++)
        sum[i] = exp((double)lse_f[i] - lse[i]);
    if (st == G3_OK)   /* sum-exp and the target logits in one all-reduce */
        st = m->tp.allreduce_host(m->tp.ctx, sum, 2 * (size_t)n, 0);
    if (st != G3_OK)
        return st;
    for (int i = 0; i < n; i++) {
        double l = lse[i] + log(sum[i]);
        lse_f[i] = (float)l;
        losses[r0 + i] = (float)(l - xt[i]);
    }
    if (dloss == 0.0f)
        return G3_OK;
    op->upload(be, a->lse + r0, lse_f, sizeof(float) * (size_t)n);
    op->xent_bwd(be, a->logits, a->logits, a->lse + r0, a->targets_local + r0, dloss, n, Vl);
    /* xent_bwd subtracted dloss at the placeholder column 0 of the rows whose target another
     * rank holds: add it back (exact up to one rounding of a value in [-dloss, 0]) */
    for (int i = 0; i < n; i++) {
        if (tg[i] >= v0 && tg[i] < v0 + Vl)
            continue;
        float d;
        void *at = g3_gpt_at(m, a->logits, (size_t)i * Vl);
        op->download(be, elem, at, m->esize);
        g3_be_convert(&d, G3_BE_F32, elem, be->act_dtype, 1);
        d += dloss;
        g3_be_convert(elem, be->act_dtype, &d, G3_BE_F32, 1);
        op->upload(be, at, elem, m->esize);
    }
    return G3_OK;
}

static g3_status_t g3_gpt_logits_download(g3_gpt_t *m, float *host, const void *src, size_t n);

/* Scoring (g3_gpt_score): for the chunk of n rows from r0 whose logits (n, Vp_l) are in
 * a->logits, a->greedy_out[r0 + i] = 1 when the logit of targets[i] (host, global ids) is
 * the largest of its row over the whole padded vocabulary.  Per row this shard's max and
 * the target's logit (0 where another shard holds it): the backend's xent_stats where it
 * has one (only (n, 3) statistics leave the device), else the host scans the downloaded
 * logits; over TP the max is all-reduced with max and the target's logit with a sum.
 * RET: G3_ERR_NO_MEMORY, backend and TP communication errors. */
static g3_status_t g3_gpt_greedy_chunk(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *targets,
                                       int r0, int n)
{
    const g3_backend_ops_t *op = m->be->ops;
    g3_backend_t *be = m->be;
    int Vl = m->Vp_l, v0 = m->v0, stats = op->xent_stats != NULL;
    double *mx, *xt;
    g3_status_t st;

    if (!a->host_gmax) {
        a->host_gmax = malloc(sizeof(double) * 2 * (size_t)a->Nc);
        a->host_glog = malloc(sizeof(float) * (size_t)a->Nc * (stats ? 3 : (size_t)Vl));
        if (!a->host_gmax || !a->host_glog) {
            g3_error("model: out of memory for the scoring buffers of %d tokens", a->Nc);
            return G3_ERR_NO_MEMORY;
        }
        if (stats) {
            st = op->alloc(be, sizeof(float) * 3 * (size_t)a->Nc, "the scoring statistics",
                           (void **)&a->gstats);
            if (st != G3_OK)
                return st;
        }
    }
    mx = a->host_gmax;
    xt = mx + a->Nc;
    if (stats) {
        op->xent_stats(be, a->gstats, a->logits, a->targets + r0, n, Vl, v0);
        op->download(be, a->host_glog, a->gstats, sizeof(float) * 3 * (size_t)n);
        st = op->sync(be);
        if (st != G3_OK)
            return st;
        for (int i = 0; i < n; i++) {
            mx[i] = a->host_glog[3 * i];
            xt[i] = a->host_glog[3 * i + 2];
        }
    } else {
        st = g3_gpt_logits_download(m, a->host_glog, a->logits, (size_t)n * Vl);
        if (st == G3_OK)
            st = op->sync(be);
        if (st != G3_OK)
            return st;
        for (int i = 0; i < n; i++) {
            const float *row = a->host_glog + (size_t)i * Vl;   /* (Vp_l,) */
            float best = row[0];
            for (int j = 1; j < Vl; j++)
                best = row[j] > best ? row[j] : best;
            mx[i] = best;
            xt[i] = targets[i] >= v0 && targets[i] < v0 + Vl ? row[targets[i] - v0] : 0.0;
        }
    }
    if (m->cfg.tp_size > 1) {
        st = m->tp.allreduce_host(m->tp.ctx, mx, (size_t)n, 1);
        if (st == G3_OK)
            st = m->tp.allreduce_host(m->tp.ctx, xt, (size_t)n, 0);
        if (st != G3_OK)
            return st;
    }
    for (int i = 0; i < n; i++)
        a->greedy_out[r0 + i] = xt[i] >= mx[i];
    return G3_OK;
}

g3_status_t g3_gpt_score(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tokens,
                         const int32_t *targets, int B, int T, float *logprob, uint8_t *greedy)
{
    g3_status_t st;

    a->greedy_out = a->head ? greedy : NULL;
    st = g3_gpt_forward(m, a, tokens, a->head ? targets : NULL, B, T, 0.0f, NULL);
    a->greedy_out = NULL;
    if (st != G3_OK || !a->head)
        return st;
    for (size_t i = 0; i < (size_t)B * T; i++)
        logprob[i] = -a->host_losses[i];
    return G3_OK;
}

g3_status_t g3_gpt_forward(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tokens,
                           const int32_t *targets, int B, int T, float dloss,
                           double *loss_sum_p)
{
    const g3_backend_ops_t *op = m->be->ops;
    const g3_gpt_tp_ops_t *tp = g3_gpt_tp_ops(m);
    g3_backend_t *be = m->be;
    int N = B * T, nl = a->nl, ns = g3_gpt_shard(m, N), nv = g3_gpt_shard_valid(m, N);
    const void *lnf;   /* (N, C) act: every row of the final LayerNorm's output */
    void *dlnf;        /* (nv, C) act: this rank's rows of its gradient, summed over TP */
    g3_status_t st;
    double sum = 0.0;

    if (dloss != 0.0f && !targets && a->head) {
        g3_error("model: a training forward pass (dloss %g) needs targets", (double)dloss);
        return G3_ERR_INTERNAL;
    }
    if (g3_gpt_sp(m) && (!m->tp.reduce_scatter || !m->tp.allgather_act)) {
        g3_error("model: sequence parallelism without the reduce-scatter and all-gather of g3_gpt_tp_comm_t");
        return G3_ERR_INTERNAL;
    }
    st = g3_gpt_upload_tokens(m, a, a->emb ? tokens : NULL, a->head ? targets : NULL, B, T);
    if (st != G3_OK)
        return st;
    a->head_grad = 0;
    st = g3_gpt_trunk_fwd(m, a);
    if (st != G3_OK)
        return st;
    if (!a->head) {
        a->head_grad = dloss != 0.0f;   /* backward starts from the gradient received */
        return op->sync(be);
    }
    if (m->hooks.fwd_layer) {   /* the head: after the last local layer */
        st = m->hooks.fwd_layer(m->hooks.ctx, m->layer_end - m->layer_begin);
        if (st != G3_OK)
            return st;
    }

    /* this rank's rows (lnf_s is lnf under plain TP), then every row for the output layer */
    if (nv > 0)
        op->layernorm_fwd(be, a->lnf_s, a->lnf_mean, a->lnf_rstd,
                          g3_gpt_at(m, a->resid, (size_t)nl * ns * m->C), m->pt.lnf_w,
                          m->pt.lnf_b, nv, m->C, m->cfg.layernorm_epsilon);
    st = tp->enter(m, a->lnf_s, a->lnf, N, &lnf);
    if (st != G3_OK)
        return st;
    if (!targets)
        return op->sync(be);
    /* Output layer, chunk by chunk: logits = lnf . wte^T, loss, and (training) at once
     * dlogits = (softmax - onehot) dloss, dlnf = dlogits . wte, dwte += dlogits^T . lnf. */
    for (int r0 = 0; r0 < N; r0 += a->Nc) {
        int n = N - r0 < a->Nc ? N - r0 : a->Nc;
        const void *x = g3_gpt_at(m, lnf, (size_t)r0 * m->C);
        /* the output layer keeps no backend state (g3_gpt_lstate_t) */
        op->matmul_fwd(be, NULL, a->logits, x, m->pt.wte, NULL, n, m->C, m->Vp_l);
        if (m->cfg.tp_size > 1) {
            st = a->xstats && m->tp.allgather
                     ? g3_gpt_xent_tp_dev(m, a, r0, n, dloss, a->host_losses)
                     : g3_gpt_xent_tp(m, a, r0, n, dloss, a->host_losses);
            if (st != G3_OK)
                return st;
        } else {
            op->xent_fwd(be, a->losses + r0, a->lse + r0, a->logits, a->targets + r0, n,
                         m->Vp_l);
            if (dloss != 0.0f)
                op->xent_bwd(be, a->logits, a->logits, a->lse + r0, a->targets + r0, dloss, n,
                             m->Vp_l);
        }
        if (a->greedy_out) {
            st = g3_gpt_greedy_chunk(m, a, targets + r0, r0, n);
            if (st != G3_OK)
                return st;
        }
        if (dloss != 0.0f)
            op->matmul_bwd(be, NULL, g3_gpt_at(m, a->dlnf, (size_t)r0 * m->C), m->gt.wte,
                           NULL, a->logits, x, m->pt.wte, n, m->C, m->Vp_l);
    }
    a->head_grad = dloss != 0.0f;
    if (m->cfg.tp_size > 1) {
        /* the output layer is column-parallel over the vocabulary: sum its input gradient */
        if (dloss != 0.0f) {
            st = tp->leave(m, a->dlnf, a->dlnf_s, N, &dlnf);
            if (st != G3_OK)
                return st;
        }
    } else {
        op->download(be, a->host_losses, a->losses, sizeof(float) * (size_t)N);
    }
    st = op->sync(be);
    if (st != G3_OK)
        return st;
    for (int i = 0; i < N; i++)
        sum += a->host_losses[i];
    if (loss_sum_p)
        *loss_sum_p = sum;
    return G3_OK;
}

g3_status_t g3_gpt_backward(g3_gpt_t *m, g3_gpt_acts_t *a)
{
    const g3_backend_ops_t *op = m->be->ops;
    g3_backend_t *be = m->be;
    int N = a->cur_B * a->cur_T, nl = a->nl;
    int n = g3_gpt_shard(m, N), nv = g3_gpt_shard_valid(m, N);
    const void *dres;   /* (N, C) act: every row of d resid[0] */
    g3_status_t st = G3_OK;

    if (!a->head_grad) {
        g3_error("model: backward without a training forward pass (one with dloss != 0)");
        return G3_ERR_INTERNAL;
    }
    a->head_grad = 0;
    if (a->head) {   /* dlnf_s: this rank's rows of dlnf (dlnf itself under plain TP) */
        op->zero(be, a->dres, m->esize * (size_t)n * m->C);
        if (nv > 0)
            op->layernorm_bwd(be, a->dres, m->gt.lnf_w, m->gt.lnf_b, a->dlnf_s,
                              g3_gpt_at(m, a->resid, (size_t)nl * n * m->C), m->pt.lnf_w,
                              a->lnf_mean, a->lnf_rstd, nv, m->C);
    }   /* else dres holds the gradient the next stage sent */
    for (int li = nl - 1; li >= 0 && st == G3_OK; li--) {
        if (a->nsets == 1 && li != nl - 1)   /* the set still holds the last layer's */
            st = g3_gpt_layer_fwd(m, a, li, g3_gpt_set(a, li));   /* recompute */
        if (st == G3_OK)
            st = g3_gpt_layer_bwd(m, a, li, g3_gpt_set(a, li));
        if (st == G3_OK && m->hooks.bwd_layer)
            st = m->hooks.bwd_layer(m->hooks.ctx, a->lo + li);
    }
    if (st != G3_OK)
        return st;
    if (a->emb) {   /* every row of the gradient for the lookup's backward */
        st = g3_gpt_tp_ops(m)->enter(m, a->dres, a->gath, N, &dres);
        if (st != G3_OK)
            return st;
        op->embedding_bwd(be, m->gt.wte, m->gt.wpe, dres, a->tokens, a->cur_B, a->cur_T, m->C,
                          m->v0, m->Vp_l);
    }
    return op->sync(be);
}

/* Download n x Vp act_dtype logits from the backend into fp32 host memory (through a
 * staging buffer when act_dtype is not fp32).  RET: G3_ERR_NO_MEMORY. */
static g3_status_t g3_gpt_logits_download(g3_gpt_t *m, float *host, const void *src, size_t n)
{
    g3_backend_t *be = m->be;
    void *stage;
    g3_status_t st;

    if (be->act_dtype == G3_BE_F32) {
        be->ops->download(be, host, src, sizeof(float) * n);
        return G3_OK;
    }
    stage = malloc(m->esize * (n ? n : 1));
    if (!stage) {
        g3_error("model: out of memory for %zu logits", n);
        return G3_ERR_NO_MEMORY;
    }
    be->ops->download(be, stage, src, m->esize * n);
    st = be->ops->sync(be);
    if (st == G3_OK)
        g3_be_convert(host, G3_BE_F32, stage, be->act_dtype, n);
    free(stage);
    return st;
}

g3_status_t g3_gpt_logits(g3_gpt_t *m, g3_gpt_acts_t *a, const int32_t *tokens, int B, int T,
                          int last_only, float *logits)
{
    const g3_backend_ops_t *op = m->be->ops;
    g3_backend_t *be = m->be;
    size_t Vp = (size_t)m->Vp_l;
    g3_status_t st;
    int N = B * T;

    st = g3_gpt_forward(m, a, tokens, NULL, B, T, 0.0f, NULL);
    if (st != G3_OK)
        return st;
    if (last_only) {
        for (int b = 0; b < B && st == G3_OK; b++) {
            op->matmul_fwd(be, NULL, a->logits,
                           g3_gpt_at(m, a->lnf, ((size_t)b * T + T - 1) * m->C), m->pt.wte,
                           NULL, 1, m->C, m->Vp_l);
            st = g3_gpt_logits_download(m, logits + (size_t)b * Vp, a->logits, Vp);
        }
    } else {
        for (int r0 = 0; r0 < N && st == G3_OK; r0 += a->Nc) {
            int n = N - r0 < a->Nc ? N - r0 : a->Nc;
            op->matmul_fwd(be, NULL, a->logits, g3_gpt_at(m, a->lnf, (size_t)r0 * m->C),
                           m->pt.wte, NULL, n, m->C, m->Vp_l);
            st = g3_gpt_logits_download(m, logits + (size_t)r0 * Vp, a->logits, (size_t)n * Vp);
        }
    }
    if (st != G3_OK)
        return st;
    return op->sync(be);
}
