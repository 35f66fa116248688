/* gpt3d model: configuration checks, the parameter table, initialisation, FLOP counts.
 * The passes are in gpt_pass.c.  Glossary in gpt.h. */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/rng.h"
#include "model/gpt.h"

void g3_gpt_config_defaults(g3_gpt_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->make_vocab_size_divisible_by = 128;
    cfg->init_method_std = 0.02f;
    cfg->layernorm_epsilon = 1e-5f;
    cfg->seed = 1234;
    cfg->tp_size = 1;
    cfg->pp_size = 1;
}

int g3_gpt_padded_vocab(int vocab_size, int divisible_by, int tp_size)
{
    int64_t multiple = (int64_t)divisible_by * tp_size;
    int64_t after = vocab_size;
    if (multiple > 1)
        after = (after + multiple - 1) / multiple * multiple;
    return after > 0x7fffffff ? -1 : (int)after;
}

int g3_gpt_config_ffn(const g3_gpt_config_t *cfg)
{
    if (cfg->ffn_hidden_size > 0)
        return cfg->ffn_hidden_size;
    /* 4 x hidden; a hidden size too large for that is refused by g3_gpt_config_check */
    return cfg->hidden_size > INT_MAX / 4 ? -1 : 4 * cfg->hidden_size;
}

int g3_gpt_config_positions(const g3_gpt_config_t *cfg)
{
    return cfg->max_position_embeddings > 0 ? cfg->max_position_embeddings : cfg->seq_length;
}

/* Layers per stage.  OUT: *first, *last (layers of the first and last stage), *mid (of
 * each stage in between).  RET: 0 when the split does not work out. */
static int g3_gpt_split(const g3_gpt_config_t *cfg, int *first, int *mid, int *last)
{
    int P = cfg->pp_size, L = cfg->num_layers;
    int f = cfg->pp_first_layers, l = cfg->pp_last_layers;
    int nmid = P - (f > 0) - (l > 0), rest = L - (f > 0 ? f : 0) - (l > 0 ? l : 0);

    if (P < 1 || f < 0 || l < 0 || L < 1)
        return 0;
    if (P == 1) {
        *first = *mid = *last = L;
        return f == 0 && l == 0;
    }
    if (nmid == 0) {
        if (rest != 0)
            return 0;
        *mid = 0;
    } else {
        if (rest < nmid || rest % nmid != 0)
            return 0;
        *mid = rest / nmid;
    }
    *first = f > 0 ? f : *mid;
    *last = l > 0 ? l : *mid;
    return 1;
}

int g3_gpt_stage_layers(const g3_gpt_config_t *cfg, int stage, int *begin, int *end)
{
    int first, mid, last, b;

    if (stage < 0 || stage >= cfg->pp_size || !g3_gpt_split(cfg, &first, &mid, &last))
        return 0;
    if (cfg->pp_size == 1) {
        *begin = 0;
        *end = cfg->num_layers;
        return 1;
    }
    b = stage == 0 ? 0 : first + (stage - 1) * mid;
    *begin = b;
    *end = b + (stage == 0 ? first : stage == cfg->pp_size - 1 ? last : mid);
    return 1;
}

/* One check of g3_gpt_config_check: when cond is false, log the message and set the
 * function's st (every failed check is reported before it returns). */
#define G3_REQUIRE(cond, ...)             \
    do {                                  \
        if (!(cond)) {                    \
            g3_error(__VA_ARGS__);        \
            st = G3_ERR_INVALID_ARG;      \
        }                                 \
    } while (0)

g3_status_t g3_gpt_config_check(const g3_gpt_config_t *cfg)
{
    g3_status_t st = G3_OK;
    int F = g3_gpt_config_ffn(cfg), P = g3_gpt_config_positions(cfg);

    G3_REQUIRE(cfg->num_layers >= 1, "--num-layers must be at least 1 (got %d)", cfg->num_layers);
    G3_REQUIRE(cfg->hidden_size >= 1, "--hidden-size must be at least 1 (got %d)", cfg->hidden_size);
    G3_REQUIRE(cfg->num_attention_heads >= 1, "--num-attention-heads must be at least 1 (got %d)",
               cfg->num_attention_heads);
    G3_REQUIRE(cfg->seq_length >= 1, "--seq-length must be at least 1 (got %d)", cfg->seq_length);
    if (cfg->ffn_hidden_size <= 0 && cfg->hidden_size > INT_MAX / 4)
        G3_REQUIRE(
            0,
            "--hidden-size %d is too large for the default --ffn-hidden-size (4 x hidden would exceed %d); pass --ffn-hidden-size or a smaller --hidden-size",
            cfg->hidden_size, INT_MAX);
    else
        G3_REQUIRE(F >= 1, "--ffn-hidden-size must be at least 1 (got %d)", F);
    G3_REQUIRE(cfg->vocab_size >= 1, "the vocabulary size must be at least 1 (got %d)",
               cfg->vocab_size);
    G3_REQUIRE(cfg->make_vocab_size_divisible_by >= 1,
               "--make-vocab-size-divisible-by must be at least 1 (got %d)",
               cfg->make_vocab_size_divisible_by);
    G3_REQUIRE(isfinite(cfg->init_method_std) && cfg->init_method_std >= 0.0f,
               "--init-method-std must be a finite number >= 0 (got %g)",
               (double)cfg->init_method_std);
    G3_REQUIRE(isfinite(cfg->layernorm_epsilon) && cfg->layernorm_epsilon > 0.0f,
               "--layernorm-epsilon must be a finite number > 0 (got %g)",
               (double)cfg->layernorm_epsilon);
    G3_REQUIRE(cfg->tp_size >= 1 && cfg->tp_rank >= 0 && cfg->tp_rank < cfg->tp_size,
               "tensor-parallel rank %d of size %d is not a valid position", cfg->tp_rank,
               cfg->tp_size);
    G3_REQUIRE(cfg->pp_size >= 1 && cfg->pp_rank >= 0 && cfg->pp_rank < cfg->pp_size,
               "pipeline rank %d of size %d is not a valid position", cfg->pp_rank,
               cfg->pp_size);
    if (st != G3_OK)
        return st;
    G3_REQUIRE(
        cfg->hidden_size % cfg->num_attention_heads == 0,
        "--hidden-size %d is not divisible by --num-attention-heads %d: every head gets hidden-size / heads channels; choose sizes where the heads divide the hidden size",
        cfg->hidden_size, cfg->num_attention_heads);
    G3_REQUIRE(
        cfg->seq_length <= P,
        "--seq-length %d is longer than --max-position-embeddings %d: the model has no position embedding beyond %d; raise --max-position-embeddings or shorten --seq-length",
        cfg->seq_length, P, P);
    G3_REQUIRE(
        cfg->num_attention_heads % cfg->tp_size == 0,
        "--num-attention-heads %d is not divisible by --tensor-model-parallel-size %d: each tensor-parallel rank computes whole heads; use a tensor-parallel size that divides the number of heads",
        cfg->num_attention_heads, cfg->tp_size);
    G3_REQUIRE(
        cfg->hidden_size % cfg->tp_size == 0,
        "--hidden-size %d is not divisible by --tensor-model-parallel-size %d: the attention output projection is split by columns across the tensor-parallel ranks; use a tensor-parallel size that divides the hidden size",
        cfg->hidden_size, cfg->tp_size);
    G3_REQUIRE(
        F % cfg->tp_size == 0,
        "--ffn-hidden-size %d is not divisible by --tensor-model-parallel-size %d: the MLP is split by columns across the tensor-parallel ranks; use a tensor-parallel size that divides it",
        F, cfg->tp_size);
    G3_REQUIRE(
        cfg->pp_first_layers >= 0 && cfg->pp_last_layers >= 0,
        "--decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers must be at least 1 when given");
    if (st == G3_OK && cfg->pp_size == 1 && (cfg->pp_first_layers > 0 || cfg->pp_last_layers > 0)) {
        g3_error(
            "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers split the layers between pipeline stages: they need --pipeline-model-parallel-size above 1; drop them");
        st = G3_ERR_INVALID_ARG;
    } else if (st == G3_OK && cfg->pp_first_layers == 0 && cfg->pp_last_layers == 0) {
        G3_REQUIRE(
            cfg->num_layers % cfg->pp_size == 0 && cfg->num_layers >= cfg->pp_size,
            "--num-layers %d is not divisible by --pipeline-model-parallel-size %d: every stage gets the same number of layers; change one of them, or give the first/last stage its own count with --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers",
            cfg->num_layers, cfg->pp_size);
    } else if (st == G3_OK) {
        int first, mid, last;
        int given = (cfg->pp_first_layers > 0) + (cfg->pp_last_layers > 0);
        G3_REQUIRE(
            g3_gpt_split(cfg, &first, &mid, &last),
            "--num-layers %d cannot be split over %d pipeline stages with --decoder-first-pipeline-num-layers %d and --decoder-last-pipeline-num-layers %d: the %d layers left must divide evenly, at least one each, over the %d other stage(s) (the rule of Megatron-LM); change the counts so they do",
            cfg->num_layers, cfg->pp_size, cfg->pp_first_layers, cfg->pp_last_layers,
            cfg->num_layers - cfg->pp_first_layers - cfg->pp_last_layers, cfg->pp_size - given);
    }
    G3_REQUIRE(!cfg->sequence_parallel || cfg->tp_size > 1,
               "--sequence-parallel shards the LayerNorms and the residual stream over the tensor-parallel ranks: it needs --tensor-model-parallel-size above 1; drop it");
    if (st == G3_OK && cfg->virtual_pp_size > 1) {
        G3_REQUIRE(cfg->pp_size > 1,
                   "--virtual-pipeline-model-parallel-size %d (or --num-layers-per-virtual-pipeline-stage) interleaves the chunks of several pipeline stages: it needs --pipeline-model-parallel-size above 1; drop it",
                   cfg->virtual_pp_size);
        G3_REQUIRE(cfg->pp_first_layers == 0 && cfg->pp_last_layers == 0,
                   "--virtual-pipeline-model-parallel-size cannot be combined with --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers (every model chunk has the same number of layers); drop one of them");
        G3_REQUIRE(cfg->num_layers % ((int64_t)cfg->pp_size * cfg->virtual_pp_size) == 0,
                   "--num-layers %d is not divisible by --pipeline-model-parallel-size %d x --virtual-pipeline-model-parallel-size %d: every model chunk gets the same number of layers (the rule of Megatron-LM); change one of them",
                   cfg->num_layers, cfg->pp_size, cfg->virtual_pp_size);
    }
    G3_REQUIRE(g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by,
                                   cfg->tp_size) > 0,
               "the padded vocabulary (%d rounded up to a multiple of %d x %d) is too large",
               cfg->vocab_size, cfg->make_vocab_size_divisible_by, cfg->tp_size);
    return st;
}

/* ---- parameter table ------------------------------------------------------------------------ */

typedef struct {
    g3_gpt_param_t *params;
    int             n, cap;
    size_t          numel;
    int             tp_rank, tp_size;
} g3_gpt_table_t;

/* Add a parameter; its local shape follows from the split.  RET: its index or -1. */
static int g3_gpt_table_add(g3_gpt_table_t *t, const char *name, int ndim, int64_t d0,
                            int64_t d1, int tp_dim, int tp_parts, g3_gpt_init_t init,
                            float std, int wd, int layer)
{
    g3_gpt_param_t *p;

    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        g3_gpt_param_t *np = realloc(t->params, sizeof(*np) * (size_t)cap);
        if (!np)
            return -1;
        t->params = np;
        t->cap = cap;
    }
    p = &t->params[t->n];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = ndim == 2 ? d1 : 1;
    p->local_shape[0] = p->shape[0];
    p->local_shape[1] = p->shape[1];
    p->tp_dim = tp_dim;
    p->tp_parts = tp_parts;
    if (tp_dim >= 0)
        p->local_shape[tp_dim] /= t->tp_size;
    p->numel = (size_t)(p->local_shape[0] * p->local_shape[1]);
    /* keep every tensor 64-byte aligned in the flat buffers */
    p->offset = t->numel;
    t->numel += (p->numel + 15) & ~(size_t)15;
    p->init = init;
    p->init_std = std;
    p->weight_decay = wd;
    p->layer = layer;
    return t->n++;
}

uint64_t g3_gpt_param_global_index(const g3_gpt_param_t *p, int tp_rank, size_t i)
{
    int64_t lc = p->local_shape[1];
    int64_t r = (int64_t)(i / (size_t)lc), c = (int64_t)(i % (size_t)lc);

    if (p->tp_dim >= 0) {
        int64_t *x = p->tp_dim == 0 ? &r : &c;
        int64_t part_local = p->local_shape[p->tp_dim] / p->tp_parts;
        int64_t part_global = p->shape[p->tp_dim] / p->tp_parts;
        int64_t part = *x / part_local;
        *x = part * part_global + (int64_t)tp_rank * part_local + *x % part_local;
    }
    return (uint64_t)(r * p->shape[1] + c);
}

static void g3_gpt_fill(const g3_gpt_param_t *p, uint64_t seed, int tp_rank, float *host)
{
    uint64_t stream = g3_rng_stream_from_name(p->name);
    long n = (long)p->numel;

    switch (p->init) {
    case G3_GPT_INIT_ZEROS:
        memset(host, 0, sizeof(float) * p->numel);
        break;
    case G3_GPT_INIT_ONES:
        for (long i = 0; i < n; i++)
            host[i] = 1.0f;
        break;
    case G3_GPT_INIT_NORMAL:
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            host[i] = p->init_std *
                      g3_rng_normal(seed, stream, g3_gpt_param_global_index(p, tp_rank, (size_t)i));
        break;
    }
}

int g3_gpt_layer_global(const g3_gpt_t *m, int li)
{
    if (m->nchunks <= 1)
        return m->layer_begin + li;
    return ((li / m->chunk_nl) * m->cfg.pp_size + m->cfg.pp_rank) * m->chunk_nl +
           li % m->chunk_nl;
}

int g3_gpt_layer_local(const g3_gpt_t *m, int layer)
{
    int vs;
    if (m->nchunks <= 1)
        return layer >= m->layer_begin && layer < m->layer_end ? layer - m->layer_begin : -1;
    if (layer < 0 || layer >= m->cfg.num_layers)
        return -1;
    vs = layer / m->chunk_nl;   /* virtual stage c PP + r */
    if (vs % m->cfg.pp_size != m->cfg.pp_rank)
        return -1;
    return (vs / m->cfg.pp_size) * m->chunk_nl + layer % m->chunk_nl;
}

static g3_status_t g3_gpt_build_table(g3_gpt_t *m)
{
    const g3_gpt_config_t *cfg = &m->cfg;
    g3_gpt_table_t t = { .tp_rank = cfg->tp_rank, .tp_size = cfg->tp_size };
    float std = cfg->init_method_std;
    /* Megatron's scaled init for the two projections that feed the residual stream */
    float std_out = std / sqrtf(2.0f * (float)cfg->num_layers);
    char name[64];
    int ok = 1;

#define G3_ADD(...) ok &= g3_gpt_table_add(&t, __VA_ARGS__) >= 0
    if (m->has_embedding || m->has_head)
        G3_ADD("embedding.word_embeddings.weight", 2, m->Vp, m->C, 0, 1, G3_GPT_INIT_NORMAL,
               std, 1, -1);
    if (m->has_embedding)
        G3_ADD("embedding.position_embeddings.weight", 2, m->P, m->C, -1, 1,
               G3_GPT_INIT_NORMAL, std, 1, -1);
    for (int li = 0; li < m->layer_end - m->layer_begin; li++) {
        int l = g3_gpt_layer_global(m, li);
#define G3_NAME(suffix) (snprintf(name, sizeof(name), "layers.%d.%s", l, suffix), name)
        G3_ADD(G3_NAME("input_layernorm.weight"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ONES, 0, 0, l);
        G3_ADD(G3_NAME("input_layernorm.bias"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ZEROS, 0, 0, l);
        G3_ADD(G3_NAME("attention.qkv.weight"), 2, 3 * m->C, m->C, 0, 3, G3_GPT_INIT_NORMAL,
               std, 1, l);
        G3_ADD(G3_NAME("attention.qkv.bias"), 1, 3 * m->C, 0, 0, 3, G3_GPT_INIT_ZEROS, 0, 0, l);
        G3_ADD(G3_NAME("attention.dense.weight"), 2, m->C, m->C, 1, 1, G3_GPT_INIT_NORMAL,
               std_out, 1, l);
        G3_ADD(G3_NAME("attention.dense.bias"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ZEROS, 0, 0, l);
        G3_ADD(G3_NAME("post_attention_layernorm.weight"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ONES,
               0, 0, l);
        G3_ADD(G3_NAME("post_attention_layernorm.bias"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ZEROS,
               0, 0, l);
        G3_ADD(G3_NAME("mlp.fc1.weight"), 2, m->F, m->C, 0, 1, G3_GPT_INIT_NORMAL, std, 1, l);
        G3_ADD(G3_NAME("mlp.fc1.bias"), 1, m->F, 0, 0, 1, G3_GPT_INIT_ZEROS, 0, 0, l);
        G3_ADD(G3_NAME("mlp.fc2.weight"), 2, m->C, m->F, 1, 1, G3_GPT_INIT_NORMAL, std_out, 1, l);
        G3_ADD(G3_NAME("mlp.fc2.bias"), 1, m->C, 0, -1, 1, G3_GPT_INIT_ZEROS, 0, 0, l);
#undef G3_NAME
    }
    if (m->has_head) {
        G3_ADD("final_layernorm.weight", 1, m->C, 0, -1, 1, G3_GPT_INIT_ONES, 0, 0, -2);
        G3_ADD("final_layernorm.bias", 1, m->C, 0, -1, 1, G3_GPT_INIT_ZEROS, 0, 0, -2);
    }
#undef G3_ADD
    if (!ok) {
        free(t.params);
        g3_error("model: out of memory building the parameter table");
        return G3_ERR_NO_MEMORY;
    }
    /* Lay the flat buffers out with every decayed tensor first, then the rest (biases,
     * LayerNorm): the optimizer then updates each group in one pass. */
    t.numel = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < t.n; i++)
            if (t.params[i].weight_decay == pass) {
                t.params[i].offset = t.numel;
                t.numel += (t.params[i].numel + 15) & ~(size_t)15;
            }
    m->params = t.params;
    m->nparams = t.n;
    m->numel = t.numel;
    return G3_OK;
}

/* Point the tensor views of one flat buffer (working params or grads) at its tensors; the
 * buffer has esize-byte elements. */
static void g3_gpt_bind(g3_gpt_t *m, void *base, size_t esize, g3_gpt_tensors_t *v)
{
    int i = 0, nl = m->layer_end - m->layer_begin;
#define G3_NEXT() ((char *)base + m->params[i++].offset * esize)
    if (m->has_embedding || m->has_head)
        v->wte = G3_NEXT();
    if (m->has_embedding)
        v->wpe = G3_NEXT();
    for (int l = 0; l < nl; l++) {
        g3_gpt_layer_t *L = &v->layers[l];
        L->ln1_w = G3_NEXT();
        L->ln1_b = G3_NEXT();
        L->qkv_w = G3_NEXT();
        L->qkv_b = G3_NEXT();
        L->proj_w = G3_NEXT();
        L->proj_b = G3_NEXT();
        L->ln2_w = G3_NEXT();
        L->ln2_b = G3_NEXT();
        L->fc1_w = G3_NEXT();
        L->fc1_b = G3_NEXT();
        L->fc2_w = G3_NEXT();
        L->fc2_b = G3_NEXT();
    }
    if (m->has_head) {
        v->lnf_w = G3_NEXT();
        v->lnf_b = G3_NEXT();
    }
#undef G3_NEXT
}

/* The sizes of cfg's model on this rank (m->cfg set): global, local, this stage's layers. */
static void g3_gpt_sizes(g3_gpt_t *m)
{
    const g3_gpt_config_t *cfg = &m->cfg;

    m->C = cfg->hidden_size;
    m->F = g3_gpt_config_ffn(cfg);
    m->NH = cfg->num_attention_heads;
    m->HS = m->C / m->NH;
    m->P = g3_gpt_config_positions(cfg);
    m->Vp = g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by,
                                cfg->tp_size);
    m->C_l = m->C / cfg->tp_size;
    m->F_l = m->F / cfg->tp_size;
    m->NH_l = m->NH / cfg->tp_size;
    m->Vp_l = m->Vp / cfg->tp_size;
    m->v0 = cfg->tp_rank * m->Vp_l;
    m->nchunks = cfg->virtual_pp_size > 1 ? cfg->virtual_pp_size : 1;
    if (m->nchunks > 1) {   /* interleaved: chunk c holds virtual stage c PP + pp_rank */
        m->chunk_nl = cfg->num_layers / (cfg->pp_size * m->nchunks);
        m->layer_begin = cfg->pp_rank * m->chunk_nl;
        m->layer_end = m->layer_begin + m->nchunks * m->chunk_nl;
    } else {
        g3_gpt_stage_layers(cfg, cfg->pp_rank, &m->layer_begin, &m->layer_end);
        m->chunk_nl = m->layer_end - m->layer_begin;
    }
    m->has_embedding = cfg->pp_rank == 0;
    m->has_head = cfg->pp_rank == cfg->pp_size - 1;
    m->cfg.ffn_hidden_size = m->F;
    m->cfg.max_position_embeddings = m->P;
}

/* The table of the linear layers' backend states, sized by m->be's row, and their buffer
 * (allocated and zeroed only when some state has bytes).  RET: G3_ERR_NO_MEMORY (logged). */
static g3_status_t g3_gpt_lstate_init(g3_gpt_t *m)
{
    static const char *const what[G3_GPT_LINS] = { "attention.qkv", "attention.dense",
                                                   "mlp.fc1", "mlp.fc2" };
    int nl = m->layer_end - m->layer_begin;
    /* in and out features of each product on this rank (backend.h's IC, OC) */
    int ic[G3_GPT_LINS] = { m->C, m->C_l, m->C, m->F_l };
    int oc[G3_GPT_LINS] = { 3 * m->C_l, m->C, m->F_l, m->C };
    size_t total = 0;

    m->nlstates = nl * G3_GPT_LINS;
    m->lstates = calloc((size_t)m->nlstates + 1, sizeof(*m->lstates));
    if (!m->lstates) {
        g3_error("model: out of memory for the table of the linear layers' backend states");
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < m->nlstates; i++) {
        g3_gpt_lstate_t *ls = &m->lstates[i];
        int w = i % G3_GPT_LINS;
        ls->layer = g3_gpt_layer_global(m, i / G3_GPT_LINS);
        snprintf(ls->name, sizeof(ls->name), "layers.%d.%s", ls->layer, what[w]);
        ls->IC = ic[w];
        ls->OC = oc[w];
        ls->bytes = g3_be_linear_state_bytes(m->be, ic[w], oc[w]);
        ls->offset = total;
        total += (ls->bytes + 63) & ~(size_t)63;
    }
    m->lstate_bytes = total;
    if (total == 0)
        return G3_OK;
    if (m->be->ops->alloc(m->be, total, "the linear layers' backend state", &m->lstate) !=
        G3_OK)
        return G3_ERR_NO_MEMORY;
    g3_gpt_lstate_reset(m);
    return G3_OK;
}

void *g3_gpt_lstate(const g3_gpt_t *m, int li, int w)
{
    const g3_gpt_lstate_t *ls = &m->lstates[li * G3_GPT_LINS + w];

    return ls->bytes ? (char *)m->lstate + ls->offset : NULL;
}

void g3_gpt_lstate_reset(g3_gpt_t *m)
{
    if (m->lstate_bytes)
        m->be->ops->zero(m->be, m->lstate, m->lstate_bytes);
}

/* The flat buffers of the parameters, their gradients and (bf16 backends) their working copy,
 * and the views into them.  RET: G3_ERR_NO_MEMORY (logged; what was allocated is freed). */
static g3_status_t g3_gpt_buffers(g3_gpt_t *m)
{
    g3_backend_t *be = m->be;
    size_t nl = (size_t)(m->layer_end - m->layer_begin);
    g3_status_t st;

    m->pt.layers = calloc(nl + 1, sizeof(g3_gpt_layer_t));
    m->gt.layers = calloc(nl + 1, sizeof(g3_gpt_layer_t));
    if (!m->pt.layers || !m->gt.layers) {
        g3_error("model: out of memory");
        return G3_ERR_NO_MEMORY;   /* the caller frees the views */
    }
    st = be->ops->alloc(be, m->numel * sizeof(float), "the model parameters", (void **)&m->w);
    if (st != G3_OK)
        return st;
    st = be->ops->alloc(be, m->numel * sizeof(float), "the parameter gradients",
                        (void **)&m->g);
    if (st != G3_OK)
        goto err_free_w;
    if (be->act_dtype == G3_BE_F32) {
        m->wa = m->w;
    } else {
        st = be->ops->alloc(be, m->numel * m->esize, "the working copy of the parameters",
                            &m->wa);
        if (st != G3_OK)
            goto err_free_g;
    }
    g3_gpt_bind(m, m->wa, m->esize, &m->pt);
    g3_gpt_bind(m, m->g, sizeof(float), &m->gt);
    return G3_OK;

err_free_g:
    be->ops->free(be, m->g);
err_free_w:
    be->ops->free(be, m->w);
    m->w = m->g = NULL;
    return st;
}

/* Draw every parameter's initial value into the master weights, refresh the working copy,
 * zero the gradients.  RET: G3_ERR_NO_MEMORY (logged), backend errors. */
static g3_status_t g3_gpt_init_values(g3_gpt_t *m)
{
    g3_backend_t *be = m->be;
    size_t host_n = 0;
    float *host;

    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].numel > host_n)
            host_n = m->params[i].numel;
    host = malloc(sizeof(float) * (host_n ? host_n : 1));
    if (!host) {
        g3_error("model: out of memory for %zu floats of initialisation buffer", host_n);
        return G3_ERR_NO_MEMORY;
    }
    be->ops->zero(be, m->w, m->numel * sizeof(float));  /* alignment gaps too */
    for (int i = 0; i < m->nparams; i++) {
        g3_gpt_fill(&m->params[i], m->cfg.seed, m->cfg.tp_rank, host);
        be->ops->upload(be, m->w + m->params[i].offset, host, sizeof(float) * m->params[i].numel);
    }
    free(host);
    g3_gpt_params_refresh(m);
    g3_gpt_zero_grad(m);
    return be->ops->sync(be);
}

/* Free the backend buffers g3_gpt_buffers and g3_gpt_lstate_init allocated. */
static void g3_gpt_free_buffers(g3_gpt_t *m)
{
    if (m->lstate)
        m->be->ops->free(m->be, m->lstate);
    if (m->wa != m->w)
        m->be->ops->free(m->be, m->wa);
    m->be->ops->free(m->be, m->g);
    m->be->ops->free(m->be, m->w);
}

g3_status_t g3_gpt_init(const g3_gpt_config_t *cfg, g3_backend_t *be, g3_gpt_t **model_p)
{
    g3_status_t st;
    g3_gpt_t *m;

    st = g3_gpt_config_check(cfg);
    if (st != G3_OK)
        return st;
    m = calloc(1, sizeof(*m));
    if (!m) {
        g3_error("model: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    m->cfg = *cfg;
    m->be = be;
    g3_gpt_sizes(m);
    m->esize = g3_be_dtype_size(be->act_dtype);
    if (be->ops->check_model) {
        st = be->ops->check_model(be, m->C, m->NH, m->HS, m->F, m->Vp_l);
        if (st != G3_OK)
            goto err_free_model;
    }
    st = g3_gpt_build_table(m);
    if (st != G3_OK)
        goto err_free_model;
    st = g3_gpt_buffers(m);
    if (st != G3_OK)
        goto err_free_table;
    st = g3_gpt_lstate_init(m);
    if (st == G3_OK)
        st = g3_gpt_init_values(m);
    if (st != G3_OK)
        goto err_free_buffers;
    *model_p = m;
    return G3_OK;

err_free_buffers:
    g3_gpt_free_buffers(m);
err_free_table:
    free(m->pt.layers);
    free(m->gt.layers);
    free(m->lstates);
    free(m->params);
err_free_model:
    free(m);
    return st;
}

void g3_gpt_free(g3_gpt_t *m)
{
    if (!m)
        return;
    g3_gpt_free_buffers(m);
    G3_FREE_ALL(m->pt.layers, m->gt.layers, m->lstates, m->params, m);
}

void g3_gpt_set_tp_comm(g3_gpt_t *m, const g3_gpt_tp_comm_t *comm)
{
    m->tp = *comm;
}

const g3_gpt_param_t *g3_gpt_param_find(const g3_gpt_t *m, const char *name)
{
    for (int i = 0; i < m->nparams; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return &m->params[i];
    return NULL;
}

void g3_gpt_param_read(const g3_gpt_t *m, const g3_gpt_param_t *p, int grad, float *host)
{
    m->be->ops->download(m->be, host, (grad ? m->g : m->w) + p->offset, sizeof(float) * p->numel);
}

void g3_gpt_param_write(g3_gpt_t *m, const g3_gpt_param_t *p, const float *host)
{
    m->be->ops->upload(m->be, m->w + p->offset, host, sizeof(float) * p->numel);
    if (m->wa != m->w)
        m->be->ops->cast(m->be, (char *)m->wa + p->offset * m->esize, m->be->act_dtype,
                         m->w + p->offset, G3_BE_F32, p->numel);
}

void g3_gpt_params_refresh(g3_gpt_t *m)
{
    if (m->wa != m->w)
        m->be->ops->cast(m->be, m->wa, m->be->act_dtype, m->w, G3_BE_F32, m->numel);
}

void g3_gpt_zero_grad(g3_gpt_t *m)
{
    m->be->ops->zero(m->be, m->g, m->numel * sizeof(float));
}

double g3_gpt_flops_per_step(const g3_gpt_config_t *cfg, int64_t B, int T)
{
    double C = cfg->hidden_size, F = g3_gpt_config_ffn(cfg), L = cfg->num_layers;
    double Vp = g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by,
                                    cfg->tp_size);
    double bt = (double)B * T;
    double layer = 2.0 * bt * (4.0 * C * C + 2.0 * C * F) + 4.0 * (double)B * T * (double)T * C;
    return 3.0 * (L * layer + 2.0 * bt * C * Vp);
}

int64_t g3_gpt_num_parameters(const g3_gpt_config_t *cfg)
{
    int64_t C = cfg->hidden_size, F = g3_gpt_config_ffn(cfg), L = cfg->num_layers;
    int64_t Vp = g3_gpt_padded_vocab(cfg->vocab_size, cfg->make_vocab_size_divisible_by,
                                     cfg->tp_size);
    int64_t layer = 4 * C + (3 * C * C + 3 * C) + (C * C + C) + (F * C + F) + (C * F + C);
    return Vp * C + (int64_t)g3_gpt_config_positions(cfg) * C + L * layer + 2 * C;
}
