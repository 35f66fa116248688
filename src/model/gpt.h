/* gpt3d model: a GPT-2 (token + learned position embeddings, pre-LayerNorm blocks of causal
 * multi-head attention and a GELU MLP, final LayerNorm, output layer tied to the token
 * embedding), computed through a backend's ops table (backend/backend.h).
 *
 * Glossary: B micro-batch, T sequence length, C hidden size, F ffn hidden size, L layers,
 * NH heads, HS = C/NH head size, V vocabulary, Vp padded vocabulary, P positions,
 * TP/PP tensor/pipeline-parallel sizes.  "_l" marks a tensor-parallel local size
 * (C_l = C/TP, F_l = F/TP, NH_l = NH/TP, Vp_l = Vp/TP).
 *
 * Layout.  A g3_gpt_t is the part of the model one rank holds: pipeline stage pp_rank of
 * pp_size (layers [layer_begin, layer_end), the embeddings on the first stage, the final
 * LayerNorm and loss on the last) and tensor-parallel rank tp_rank of tp_size.  Every
 * parameter has a canonical name, a global shape and a local shard (docs/checkpoint-format.md
 * lists them); initial values are drawn from core/rng.h keyed by (seed, stream of the
 * name, global element index), so every layout starts from the same model.  With
 * tp_size > 1 the passes call the tensor-parallel collectives of g3_gpt_tp_comm_t (set by
 * the 3D-parallel trainer, src/parallel): Megatron's f/g pairs around the column- and
 * row-parallel products, the vocabulary-parallel embedding and cross-entropy.  Pipeline
 * stages exchange the residual stream through g3_gpt_acts_input/output/grad.
 *
 * Memory.  Parameters and gradients are two flat backend buffers (params in table order);
 * activations of one micro-batch live in a g3_gpt_acts_t, so a pipeline schedule can keep
 * several in flight.
 *
 * Precision.  The parameters `w` are the fp32 master weights (what the optimizer updates and
 * checkpoints store) and the gradients `g` are fp32 on every backend.  The passes read the
 * parameters as `wa`, in the backend's act_dtype (backend.h): on an fp32 backend (CPU) `wa`
 * IS `w`; on a bf16 backend (CUDA) it is a bf16 working copy that g3_gpt_params_refresh casts
 * from `w` after every change of `w` (optimizer step, checkpoint load).  Activations are
 * act_dtype ("act" in shape comments); LayerNorm statistics and losses are fp32. */
#ifndef G3_MODEL_GPT_H
#define G3_MODEL_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/status.h"

typedef struct {
    int      num_layers;                 /* L (whole model)                    --num-layers */
    int      hidden_size;                /* C                                  --hidden-size */
    int      num_attention_heads;        /* NH                         --num-attention-heads */
    int      ffn_hidden_size;            /* F; 0 means 4C                  --ffn-hidden-size */
    int      seq_length;                 /* T, the longest sequence run       --seq-length */
    int      max_position_embeddings;    /* P; 0 means T         --max-position-embeddings */
    int      vocab_size;                 /* V from the tokenizer                             */
    int      make_vocab_size_divisible_by; /* Vp is a multiple of this x TP (Megatron)      */
    float    init_method_std;            /* 0.02                           --init-method-std */
    float    layernorm_epsilon;          /* 1e-5                          --layernorm-epsilon */
    uint64_t seed;                       /* --seed                                           */
    int      recompute_activations;      /* keep only layer inputs; recompute in backward
                                          * (--recompute-activations, or granularity full)  */
    int      recompute_granularity;      /* G3_GPT_RECOMPUTE_*       --recompute-granularity */
    int      tp_rank, tp_size;           /* tensor-parallel position                          */
    int      pp_rank, pp_size;           /* pipeline stage                                    */
    /* Uneven pipeline split (Megatron's --decoder-first/last-pipeline-num-layers): layers
     * of the first / last stage; 0: not given.  The other stages share the rest evenly
     * (g3_gpt_stage_layers). */
    int      pp_first_layers, pp_last_layers;
    /* Interleaved 1F1B (--virtual-pipeline-model-parallel-size V): each stage holds V chunks
     * of L / (PP V) layers; chunk c of stage r holds layers from (c PP + r) L / (PP V).
     * 0 or 1: one contiguous chunk. */
    int      virtual_pp_size;
    /* Sequence parallelism (--sequence-parallel, TP > 1): the LayerNorms, the residual
     * stream and the embedding output hold 1/TP of the tokens (rows [r n, (r+1) n) of the
     * B*T, n = ceil(B T / TP)); the TP all-reduces become reduce-scatter + all-gather. */
    int      sequence_parallel;
    int      head_chunk_tokens;          /* tokens per output-layer chunk; 0: automatic      */
} g3_gpt_config_t;

/* What the backward pass recomputes instead of keeping from the forward (Megatron's
 * --recompute-granularity): FULL keeps only each layer's input and reruns the layer (the same
 * as recompute_activations); SELECTIVE keeps everything but the attention core's saved state
 * (on the CPU backend the (B, NH, T, T) probabilities, the largest activation at long
 * sequences), which one buffer holds for all layers and backward recomputes per layer. */
enum {
    G3_GPT_RECOMPUTE_NONE = 0,
    G3_GPT_RECOMPUTE_FULL = 1,
    G3_GPT_RECOMPUTE_SELECTIVE = 2
};

/* Fill cfg with the defaults above (sizes 0: the caller sets them). */
void g3_gpt_config_defaults(g3_gpt_config_t *cfg);

/* Check a configuration before anything is allocated.  Each problem is logged once, naming
 * the flag and the fix.  RET: G3_ERR_INVALID_ARG (bad sizes), G3_ERR_UNSUPPORTED (a valid
 * layout this build cannot run). */
g3_status_t g3_gpt_config_check(const g3_gpt_config_t *cfg);

/* RET: the MLP size: ffn_hidden_size, else 4 x hidden_size (-1 when that overflows an int;
 * g3_gpt_config_check refuses it). */
int g3_gpt_config_ffn(const g3_gpt_config_t *cfg);

/* RET: the position embeddings: max_position_embeddings, else seq_length. */
int g3_gpt_config_positions(const g3_gpt_config_t *cfg);

/* RET: V padded the way Megatron does: up to a multiple of divisible_by x tp_size. */
int g3_gpt_padded_vocab(int vocab_size, int divisible_by, int tp_size);

/* The layers of pipeline stage `stage` of cfg->pp_size: [*begin, *end).  Without
 * pp_first_layers / pp_last_layers every stage gets num_layers / pp_size; with them the
 * first (last) stage gets that many and the stages in between share the remaining layers
 * evenly.  RET: 0 and nothing set when the split is impossible (g3_gpt_config_check says
 * why), else 1. */
int g3_gpt_stage_layers(const g3_gpt_config_t *cfg, int stage, int *begin, int *end);

typedef enum {
    G3_GPT_INIT_NORMAL = 0,   /* N(0, init_std^2)                                        */
    G3_GPT_INIT_ZEROS,
    G3_GPT_INIT_ONES
} g3_gpt_init_t;

/* One parameter tensor as this rank holds it. */
typedef struct {
    char          name[64];      /* canonical name: "layers.3.attention.qkv.weight"      */
    int           ndim;          /* 1 or 2                                                */
    int64_t       shape[2];      /* global shape (ndim entries)                           */
    int           tp_dim;        /* dimension split by TP; -1: replicated                 */
    int           tp_parts;      /* the split dimension is (tp_parts, size/tp_parts), each
                                  * part split by TP (3 for the fused q/k/v)              */
    int64_t       local_shape[2];
    size_t        offset;        /* first element in the flat parameter/gradient buffers   */
    size_t        numel;         /* local elements                                        */
    g3_gpt_init_t init;
    float         init_std;      /* for G3_GPT_INIT_NORMAL                                */
    int           weight_decay;  /* 0 for biases and LayerNorm (Megatron)                 */
    int           layer;         /* -1 embeddings (first stage), -2 final LN (last), N    */
} g3_gpt_param_t;

/* RET: the global (row-major, whole-tensor) element index of local element i of p as held by
 * tensor-parallel rank tp_rank: the key of its initial value, and of its place in a
 * checkpoint.  With tp_parts = 3 (qkv) the split dimension is (3, size/3) and rank r holds
 * [r*size/(3 TP), (r+1)*size/(3 TP)) of each part, stored as [q_r; k_r; v_r]. */
uint64_t g3_gpt_param_global_index(const g3_gpt_param_t *p, int tp_rank, size_t i);

/* Pointers to one layer's tensors inside a flat buffer: the parameters as the passes read them
 * (act_dtype, inside wa) or the gradients (fp32, inside g). */
typedef struct {
    void  *ln1_w, *ln1_b;        /* (C,) (C,)          input_layernorm                    */
    void  *qkv_w, *qkv_b;        /* (3C_l, C) (3C_l,)  attention.qkv: rows [q; k; v]      */
    void  *proj_w, *proj_b;      /* (C, C_l) (C,)      attention.dense (row-parallel)     */
    void  *ln2_w, *ln2_b;        /* (C,) (C,)          post_attention_layernorm           */
    void  *fc1_w, *fc1_b;        /* (F_l, C) (F_l,)    mlp.fc1 (column-parallel)          */
    void  *fc2_w, *fc2_b;        /* (C, F_l) (C,)      mlp.fc2 (row-parallel)             */
} g3_gpt_layer_t;

typedef struct {
    void           *wte;         /* (Vp_l, C)  embedding.word_embeddings (first/last stage) */
    void           *wpe;         /* (P, C)     embedding.position_embeddings (first stage)  */
    g3_gpt_layer_t *layers;      /* this stage's layers, [0, layer_end - layer_begin)       */
    void           *lnf_w, *lnf_b; /* (C,)     final_layernorm (last stage)                 */
} g3_gpt_tensors_t;

/* The linear layers of a block, in the order of their backend states (g3_gpt_lstate). */
enum {
    G3_GPT_LIN_QKV = 0,    /* attention.qkv   (column-parallel)                          */
    G3_GPT_LIN_PROJ,       /* attention.dense (row-parallel)                             */
    G3_GPT_LIN_FC1,        /* mlp.fc1         (column-parallel)                          */
    G3_GPT_LIN_FC2,        /* mlp.fc2         (row-parallel)                             */
    G3_GPT_LINS
};

/* One linear layer's per-tensor backend state as this rank holds it (backend.h: the `state`
 * of matmul_fwd / matmul_bwd, g3_be_linear_state_bytes of it; for FP8 the scales and amax
 * histories).  Opaque bytes the model allocates in one backend buffer, zeroes (the fresh
 * state), passes to the layer's products and checkpoints as backend_state/<name> when bytes
 * is not 0 (docs/checkpoint-format.md).  The output layer has none. */
typedef struct {
    char   name[64];   /* "layers.3.attention.qkv": its weight's name without ".weight"  */
    int    layer;      /* global layer                                                   */
    int    IC, OC;     /* this rank's product: in and out features                       */
    size_t offset;     /* first byte in the model's lstate buffer (64-byte aligned)      */
    size_t bytes;      /* g3_be_linear_state_bytes(be, IC, OC); 0: none                  */
} g3_gpt_lstate_t;

/* The tensor-parallel collectives the passes need when tp_size > 1 (every TP rank of a
 * stage calls them in the same order).  The model syncs its backend before each call.
 * Each returns G3_OK or the communication error (G3_ERR_TIMEOUT, G3_ERR_COMM), already
 * logged. */
typedef struct {
    void *ctx;
    /* buf (n,) act, backend memory: summed over the TP group, in place. */
    g3_status_t (*allreduce_sum)(void *ctx, void *buf, size_t n);
    /* buf (n,) host memory: max (max != 0) or sum over the TP group, in place. */
    g3_status_t (*allreduce_host)(void *ctx, double *buf, size_t n, int max);
    /* Optional (NULL: the cross-entropy statistics go through allreduce_host): send (n,)
     * fp32 backend memory of every TP rank into recv (TP, n) backend memory, rank-major. */
    g3_status_t (*allgather)(void *ctx, const float *send, float *recv, size_t n);
    /* Sequence parallelism (cfg.sequence_parallel; NULL otherwise).  Backend memory, act:
     * send (TP, n) summed over the group, block r to TP rank r's recv (n,);
     * send (n,) of every TP rank into recv (TP, n), rank-major. */
    g3_status_t (*reduce_scatter)(void *ctx, const void *send, void *recv, size_t n);
    g3_status_t (*allgather_act)(void *ctx, const void *send, void *recv, size_t n);
} g3_gpt_tp_comm_t;

/* Hooks for the data-parallel engine (src/parallel: overlapping its reductions with the
 * passes); a NULL function is not called.  li is the local layer index [0, nl).
 *   fwd_layer: before the forward of layer li reads its parameters; li = -1 before the
 *              embedding, li = nl before the final LayerNorm and the output layer;
 *   bwd_layer: after the backward of layer li has queued the accumulation of its
 *              gradients (li = nl-1 .. 0; on an asynchronous backend the work may still be
 *              queued: order behind it, e.g. with an event on the backend's stream).
 * An error stops the pass and is returned by it. */
typedef struct {
    void *ctx;
    g3_status_t (*fwd_layer)(void *ctx, int li);
    g3_status_t (*bwd_layer)(void *ctx, int li);
} g3_gpt_hooks_t;

typedef struct g3_gpt {
    g3_gpt_config_t  cfg;
    g3_gpt_hooks_t   hooks;                     /* zeroed by g3_gpt_init                  */
    g3_backend_t    *be;
    g3_gpt_tp_comm_t tp;                        /* set by g3_gpt_set_tp_comm (TP > 1)      */
    /* derived sizes */
    int              C, F, NH, HS, P, Vp;       /* global                                  */
    int              C_l, F_l, NH_l, Vp_l, v0;  /* local; v0 first vocabulary row held     */
    int              layer_begin, layer_end;    /* this stage's layers; with V > 1 chunks the
                                                 * first one's begin and begin + nl: map local
                                                 * layers with g3_gpt_layer_global           */
    int              nchunks, chunk_nl;         /* V chunks of chunk_nl local layers each    */
    int              has_embedding, has_head;
    /* parameters */
    int              nparams;
    g3_gpt_param_t  *params;                    /* (nparams,)                               */
    size_t           numel;                     /* local parameter count                    */
    float           *w;                         /* (numel,) fp32 master weights, backend mem */
    float           *g;                         /* (numel,) fp32 gradients, backend memory  */
    void            *wa;                        /* (numel,) act_dtype working copy, or w    */
    size_t           esize;                     /* bytes per act_dtype element              */
    g3_gpt_tensors_t pt;                        /* views into wa                            */
    g3_gpt_tensors_t gt;                        /* views into g                             */
    /* per-tensor backend state of the linear layers (local layer li's layer w at
     * lstates[li * G3_GPT_LINS + w]) */
    int              nlstates;                  /* nl x G3_GPT_LINS                         */
    g3_gpt_lstate_t *lstates;                   /* (nlstates,)                              */
    size_t           lstate_bytes;              /* bytes of lstate; 0: no state (none alloc) */
    void            *lstate;                    /* (lstate_bytes,) backend memory, or NULL  */
} g3_gpt_t;

/* Build the model for cfg on be and initialise its parameters (zero gradients).
 * OUT: *model_p.  RET: errors of g3_gpt_config_check, G3_ERR_NO_MEMORY. */
g3_status_t g3_gpt_init(const g3_gpt_config_t *cfg, g3_backend_t *be, g3_gpt_t **model_p);
void g3_gpt_free(g3_gpt_t *model);

/* Give a tensor-parallel model (tp_size > 1) its collectives; copied.  Must be called
 * before the first pass of such a model. */
void g3_gpt_set_tp_comm(g3_gpt_t *model, const g3_gpt_tp_comm_t *comm);

/* RET: the global index of local layer li (0 <= li < nl = nchunks x chunk_nl). */
int g3_gpt_layer_global(const g3_gpt_t *model, int li);
/* RET: the local index of global layer `layer`, or -1 when this rank does not hold it. */
int g3_gpt_layer_local(const g3_gpt_t *model, int layer);

/* RET: the backend state of linear layer w (G3_GPT_LIN_*) of local layer li, backend memory,
 * or NULL when it has none (a size of 0). */
void *g3_gpt_lstate(const g3_gpt_t *model, int li, int w);
/* Reset every linear layer's backend state to the fresh one (all zero bytes; queued). */
void g3_gpt_lstate_reset(g3_gpt_t *model);

/* RET: the parameter named name, or NULL. */
const g3_gpt_param_t *g3_gpt_param_find(const g3_gpt_t *model, const char *name);
/* Copy a parameter (its fp32 master value, or its gradient) between the backend and host
 * memory; writing refreshes the working copy of that parameter.  host: (param->numel,) */
void g3_gpt_param_read(const g3_gpt_t *model, const g3_gpt_param_t *param, int grad, float *host);
void g3_gpt_param_write(g3_gpt_t *model, const g3_gpt_param_t *param, const float *host);
void g3_gpt_zero_grad(g3_gpt_t *model);
/* Cast the master weights w into the passes' working copy wa after w changed (an optimizer
 * step, a checkpoint load); nothing to do when wa is w (fp32 backends).  Queued on the backend
 * (the next sync reports its errors). */
void g3_gpt_params_refresh(g3_gpt_t *model);

/* Model FLOPs of one training pass (forward + backward) over B sequences of T tokens of the
 * WHOLE model, recompute not counted (docs/model.md):
 *   3 * (L * (2*B*T*(4*C^2 + 2*C*F) + 4*B*T^2*C) + 2*B*T*C*Vp),
 * which is Megatron's 72*B*T*L*C^2*(1 + T/(6C) + Vp/(12*L*C)) for F = 4C. */
double g3_gpt_flops_per_step(const g3_gpt_config_t *cfg, int64_t B, int T);

/* RET: the number of parameters of the whole model (the tied output layer counted once). */
int64_t g3_gpt_num_parameters(const g3_gpt_config_t *cfg);

/* ---- activations and passes --------------------------------------------------------------- */

typedef struct g3_gpt_acts g3_gpt_acts_t;

/* Activation memory for micro-batches of up to T tokens a sequence and B T tokens in all
 * (B sequences of T tokens, or more shorter ones).
 * OUT: *acts_p.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_gpt_acts_init(g3_gpt_t *model, int B, int T, g3_gpt_acts_t **acts_p);
void g3_gpt_acts_free(g3_gpt_t *model, g3_gpt_acts_t *acts);
/* The same for model chunk `chunk` of an interleaved stage (0 <= chunk < nchunks): its
 * passes run that chunk's layers, the embedding only in chunk 0 of the first stage, the
 * head only in the last chunk of the last stage.  g3_gpt_acts_init is chunk 0. */
g3_status_t g3_gpt_acts_init_chunk(g3_gpt_t *model, int chunk, int B, int T,
                                   g3_gpt_acts_t **acts_p);
/* RET: the bytes g3_gpt_acts_init(model, B, T) would allocate. */
size_t g3_gpt_acts_estimate(const g3_gpt_t *model, int B, int T);
/* RET: how many chunks the output layer computes a micro-batch of B x T tokens in, for a
 * tensor-parallel rank's Vp_l vocabulary rows (cfg->head_chunk_tokens, else about 16 M logits
 * each): gpt3d plan counts the ops of a pass with it. */
int g3_gpt_head_chunks(const g3_gpt_config_t *cfg, int Vp_l, int B, int T);
/* RET: bytes of backend memory the activations hold. */
size_t g3_gpt_acts_bytes(const g3_gpt_acts_t *acts);

/* Pipeline stages exchange the residual stream (backend memory, (B,T,C) of the current
 * micro-batch, contiguous):
 *   input:  a stage without the embedding reads its input here; fill it (B*T*C elements of
 *           act_dtype) before g3_gpt_forward (which then takes tokens == NULL);
 *   output: after g3_gpt_forward of a stage without the head, the stage's output;
 *   grad:   a stage without the head: fill it with d(output) before g3_gpt_backward;
 *           after g3_gpt_backward of a stage without the embedding: d(input). */
void *g3_gpt_acts_input(g3_gpt_acts_t *acts);
/* RET: the elements of the residual stream of B x T tokens that stages exchange (input,
 * output, grad above): B T C, or with sequence parallelism this TP rank's
 * ceil(B T / TP) C. */
size_t g3_gpt_stage_numel(const g3_gpt_t *model, int B, int T);
const void *g3_gpt_acts_output(const g3_gpt_t *model, const g3_gpt_acts_t *acts);
void *g3_gpt_acts_grad(g3_gpt_acts_t *acts);

/* Forward pass over tokens (B,T) (host memory).  With targets (B,T) it computes the loss:
 * *loss_sum_p = sum of the B*T per-token losses (double, host).  When dloss != 0 the output
 * layer's backward runs at once, chunk by chunk, while its logits are in cache: the gradient
 * of (dloss * loss_sum) is accumulated into the output layer's parameters and kept for
 * g3_gpt_backward, which must follow before the next forward on these activations.
 * Pipeline stages: tokens are read only by the stage with the embedding (others pass NULL
 * and fill g3_gpt_acts_input first), targets and the loss only by the stage with the head;
 * a training forward of a stage without the head needs only dloss != 0.
 * RET: G3_ERR_INVALID_ARG for a token outside [0, V) (logged with its position), backend
 * and tensor-parallel communication errors. */
g3_status_t g3_gpt_forward(g3_gpt_t *model, g3_gpt_acts_t *acts, const int32_t *tokens,
                           const int32_t *targets, int B, int T, float dloss,
                           double *loss_sum_p);
/* Scoring for evaluation (src/infer/tasks): a forward pass over tokens (B,T) (host) whose
 * stage holds the head writes, per token, logprob = log softmax(logits)[target] over the
 * padded vocabulary (the negated loss of g3_gpt_forward) and, when greedy is not NULL,
 * greedy = 1 where the target's logit is the largest of the row (ties count as the
 * target's: the argmax test of Megatron's zero-shot accuracy).  Stages without the head run
 * their part and write nothing.  targets (B,T) host.  OUT: logprob (B,T), greedy (B,T).
 * RET: as g3_gpt_forward, G3_ERR_NO_MEMORY. */
g3_status_t g3_gpt_score(g3_gpt_t *model, g3_gpt_acts_t *acts, const int32_t *tokens,
                         const int32_t *targets, int B, int T, float *logprob, uint8_t *greedy);
/* Backward pass of the last forward (which had dloss != 0): accumulates every gradient. */
g3_status_t g3_gpt_backward(g3_gpt_t *model, g3_gpt_acts_t *acts);

/* Logits for tokens (B,T) (host).  last_only: only position T-1 of each sequence.
 * Under tensor parallelism these are this rank's vocabulary rows [v0, v0 + Vp_l).
 * OUT: logits (B, T, Vp_l) or (B, Vp_l) host memory, fp32 (converted from act_dtype). */
g3_status_t g3_gpt_logits(g3_gpt_t *model, g3_gpt_acts_t *acts, const int32_t *tokens, int B,
                          int T, int last_only, float *logits);

#endif
