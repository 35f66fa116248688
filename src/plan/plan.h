/* gpt3d plan: what a model on a TP x PP x DP layout costs per rank, before anything runs:
 * parameters per pipeline stage, memory per rank (weights, gradients, optimizer state with and
 * without ZeRO-1, activations of the micro-batches 1F1B keeps in flight), FLOPs per iteration
 * and the pipeline bubble.  Arithmetic on the configuration (the activations through the
 * model's own layout code); docs/plan.md gives every formula and where it comes from.  The
 * checks of the configuration are the trainer's (g3_gpt_config_check, g3_train_plan,
 * g3_topo_map), run by search/layout.h above train; gpt3d train calls g3_plan_check_fit.
 *
 * Glossary: L layers, C hidden size (h), F ffn hidden size, NH heads (a), T sequence length
 * (s), B micro-batch (b), Vp padded vocabulary, P position embeddings, TP/PP/DP the parallel
 * sizes (t = TP), m micro-batches per iteration and DP rank (gradient-accumulation steps),
 * GBS global batch.  Sizes in bytes are doubles (they pass 2^53 only for absurd models). */
#ifndef G3_PLAN_PLAN_H
#define G3_PLAN_PLAN_H

#include <stdint.h>

#include "backend/backend.h"
#include "core/status.h"
#include "model/gpt.h"

typedef struct {
    g3_gpt_config_t model;        /* the whole model: vocab_size, tp_size, pp_size set       */
    int     dp;                   /* data-parallel size                                       */
    int64_t micro_batch;          /* B                                                        */
    int64_t global_batch;         /* GBS (after any ramp-up)                                  */
    int64_t start_batch;          /* GBS of the first iteration (ramp-up start, else GBS)     */
    int     distributed_optimizer;/* ZeRO-1: optimizer state sharded over DP                  */
    g3_be_kind_t kind;            /* --device                                                 */
    g3_be_opts_t be_opts;         /* its options (the attention's buffers depend on them)     */
    int     bf16;                 /* the kind's activations are bf16 (cuda): bf16 weights and
                                   * activations, fp32 master; else (cpu) fp32 everything.
                                   * Set with kind by g3_plan_input_backend                   */
    int     virtual_pp;           /* V: model chunks per pipeline rank, interleaved 1F1B (1)  */
    int     sequence_parallel;    /* --sequence-parallel (TP > 1)                             */
    int     ranks_per_gpu;        /* ranks sharing one GPU (--ranks-per-gpu; 1)               */
    double  fixed_bytes;          /* a device's fixed cost per process: the context, cuBLASLt,
                                   * the kernels loaded (the GPU's, measured or from gpt3d
                                   * plan's table); 0: the H100's                             */
    double  nccl_bytes;           /* what the four NCCL communicators of a rank hold on its
                                   * GPU (measured or the table's); 0: the H100's             */
    int     dist_ucx;             /* --distributed-backend ucx: no NCCL communicators         */
} g3_plan_input_t;

/* A device rank's memory beyond its tensors (docs/plan.md "Overhead"), bytes. */
typedef struct {
    double fixed;                 /* the context, cuBLASLt and its workspace, the kernels     */
    double nccl;                  /* NCCL's four communicators (none with ucx)                */
    double nccl_groups;           /* 64 MiB per group of more than one rank (NCCL's buffers)  */
    double scratch;               /* the GEMM autotuning's copy of an accumulated fp32 output
                                   * (one process only), kept in the kernels' scratch         */
    double total;
} g3_plan_overhead_t;

/* The H100's figures, for an input that gives none (MiB). */
#define G3_PLAN_FIXED_MIB 573.0
#define G3_PLAN_NCCL_MIB 1763.0

/* Activation bytes of one layer for one micro-batch, as kept for the backward pass. */
enum { G3_PLAN_ACT_NONE = 0, G3_PLAN_ACT_SELECTIVE, G3_PLAN_ACT_FULL, G3_PLAN_ACT_MODES };

typedef struct {
    int     stage;
    int     layer_begin, layer_end;   /* layers [begin, end)                                  */
    int     has_embedding, has_head;  /* word+position embeddings; final LN + output layer     */
    int64_t params;                   /* parameters one TP rank of the stage holds, exact     */
    int64_t params_held;              /* its flat-buffer elements: each tensor padded to 16   */
    int     in_flight;                /* micro-batches 1F1B keeps: min(PP - stage, m)         */
    /* model state, bytes per rank */
    double  weight_bytes;             /* the weights the passes read (bf16 or fp32)           */
    double  grad_bytes;               /* fp32 gradient accumulation buffer                    */
    double  master_bytes[2];          /* fp32 master copy (bf16 only): [replicated, ZeRO-1]   */
    double  optim_bytes[2];           /* Adam m + v (+ the reduced-gradient shard under
                                       * ZeRO-1 on the CPU): [replicated, ZeRO-1]             */
    double  state_bytes[2];           /* weights + grads + master + optimizer                 */
    /* activations, bytes per rank */
    double  act_layer_bytes;          /* one layer, one micro-batch, as kept                  */
    double  act_recompute_bytes;      /* the extra working set while one layer is recomputed  */
    double  act_extra_bytes;          /* embedding (first stage), output layer (last stage)   */
    double  act_bytes;                /* what the trainer allocates: in_flight x one
                                       * micro-batch's activations (g3_gpt_acts_estimate)     */
    double  act_set_bytes;            /* one micro-batch's set, as the model carves it        */
    double  overhead_bytes;           /* the process or CUDA context, cuBLASLt workspace,
                                       * allocator slack, communication buffers              */
    double  peak_bytes;               /* state (the chosen optimizer) + activations + overhead:
                                       * one rank                                             */
    double  gpu_bytes;                /* peak_bytes x ranks per GPU: what the GPU holds       */
} g3_plan_stage_t;

typedef struct {
    int64_t params_total;             /* g3_gpt_num_parameters: tied embedding once           */
    int64_t params_replica;           /* what the TP x PP ranks of one replica hold together  */
    int     padded_vocab;             /* Vp                                                   */
    int     ffn, positions;           /* F, P                                                 */
    int     world;                    /* TP x PP x DP                                         */
    int64_t micro_per_iter;           /* m = GBS / (B x DP)                                   */
    int64_t micro_first;              /* m of the first iteration (ramp-up)                   */
    int     recompute;                /* G3_PLAN_ACT_* in use                                 */
    double  bubble;                   /* (PP - 1) / (V m + PP - 1): idle share of an iteration */
    double  bubble_vs_compute;        /* (PP - 1) / (V m): what gpt3d train reports          */
    double  flops_iter;               /* model FLOPs of one iteration (g3_gpt_flops_per_step) */
    double  flops_token;
    double  bytes_per_param[2];       /* model state per parameter held: [replicated, ZeRO-1] */
    double  act_per_layer[G3_PLAN_ACT_MODES]; /* one layer, one micro-batch, each mode       */
    int     pp;
    g3_plan_stage_t *stages;          /* (PP)                                                 */
    int     peak_stage;               /* the stage with the largest peak_bytes               */
} g3_plan_t;

/* Set in's compute backend: kind, its options (NULL: the defaults) and what follows from
 * the kind's row (bf16).  OUT: in->kind, in->be_opts, in->bf16. */
void g3_plan_input_backend(g3_plan_input_t *in, g3_be_kind_t kind, const g3_be_opts_t *o);

/* Work out the plan of a configuration that passed the trainer's checks.
 * OUT: *plan (free with g3_plan_free).  RET: G3_ERR_INVALID_ARG (logged) when a size is
 * beyond what the counts can hold, G3_ERR_NO_MEMORY. */
g3_status_t g3_plan_compute(const g3_plan_input_t *in, g3_plan_t *plan);
void g3_plan_free(g3_plan_t *plan);

/* RET: the bytes a rank needs besides its tensors (docs/plan.md "Overhead"): a device (CUDA):
 * the context, cuBLASLt and its workspace, the kernels (in->fixed_bytes, else the H100's),
 * NCCL's communicators and buffers, the GEMM autotuning's scratch; host memory (CPU): the
 * process.  OUT: *parts (may be NULL): the same in parts (CPU: all of it in fixed). */
double g3_plan_overhead(const g3_plan_input_t *in, g3_plan_overhead_t *parts);

/* gpt3d train's check before it allocates anything: the plan of this rank's stage against
 * the memory it can have (CPU: MemAvailable and the cgroup's limit, shared by local_ranks
 * ranks on the node), for the backend kind with the trainer's options o (the attention's
 * buffers and the GEMM autotuning depend on them; NULL: the defaults).
 * RET: G3_ERR_INVALID_ARG (logged, naming the flags: exit 2) when it cannot fit;
 * g3_plan_compute's errors (logged); G3_OK otherwise (also when the memory
 * cannot be read, and for a device's memory (cuda), whose allocations say it themselves). */
g3_status_t g3_plan_check_fit(const g3_gpt_config_t *m, g3_be_kind_t kind,
                              const g3_be_opts_t *o, int dp, int64_t micro_batch,
                              int64_t global_batch, int zero, int local_ranks);

/* RET: the G3_PLAN_ACT_ mode of m's recompute flags (--recompute-activations or
 * --recompute-granularity full: FULL; selective: SELECTIVE; else NONE). */
int g3_plan_act_mode(const g3_gpt_config_t *m);

/* RET: "none", "selective", "full". */
const char *g3_plan_act_mode_name(int mode);

/* RET: what mode keeps and recomputes, e.g. "selective (the attention core recomputed)". */
const char *g3_plan_act_mode_words(int mode);

#endif
