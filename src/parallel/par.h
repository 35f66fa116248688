/* gpt3d parallel: 3D-parallel training (TP x PP x DP) on top of the model and comm layers.
 *
 * Glossary: TP, PP, DP = tensor-, pipeline- and data-parallel sizes; tp, pp, dp = a rank's
 * coordinates; B micro-batch, T sequence length, C hidden size, m micro-batches per
 * iteration and DP rank, GBS global batch; "stage" = pipeline stage; "segment" = a range
 * of the flat gradient buffer reduced over DP in one call; "shard" = a DP rank's part of a
 * segment under ZeRO-1; "bucket" = the segments of a group of layers reduced together
 * (--ddp-bucket-size, --overlap-grad-reduce).
 *
 * Layers: core <- comm, topo <- backend <- model <- parallel <- train (one rank is the
 * 1 x 1 x 1 layout: the trainer has no other path).
 * The layout (g3_par_t) comes from the topology mapping (src/topo) of the ranks the
 * launcher started; its groups are comm groups:
 *   tp   the TP ranks of one stage of one replica (Megatron's f/g all-reduces, the
 *        vocabulary-parallel embedding and cross-entropy: model/gpt_pass.c through
 *        g3_gpt_tp_comm_t);
 *   pp   the stages of one replica at one tp (activations and their gradients, 1F1B);
 *   dp   the replicas of one (tp, pp) (gradient all-reduce or ZeRO-1 reduce-scatter +
 *        all-gather);
 *   emb  the first and last stage at one (tp, dp) when PP > 1 (the tied word embedding's
 *        gradient); a group of one elsewhere;
 *   world every rank (loss, gradient norm, agreement on errors).
 * The engine (g3_par_engine_t) runs an iteration on a layout: the 1F1B schedule over the
 * micro-batches (interleaved over V model chunks per stage with
 * --virtual-pipeline-model-parallel-size; with --sequence-parallel it also sums the
 * LayerNorm gradients over TP), the gradient reductions, the global-norm clipping and the AdamW
 * step (replicated, or ZeRO-1 with --use-distributed-optimizer).  docs/parallelism.md has the
 * design and the arithmetic.
 *
 * Ownership: g3_par_init's layout borrows the world (freed by the caller after
 * g3_par_free); the engine borrows the layout and the model.  Not thread safe. */
#ifndef G3_PARALLEL_PAR_H
#define G3_PARALLEL_PAR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "comm/comm.h"
#include "core/status.h"
#include "core/timer.h"
#include "model/gpt.h"
#include "topo/topo.h"

/* ---- the layout ----------------------------------------------------------------------------- */

/* Where the job's ranks run (the trainer's layout and gpt3d topo): nodes in the order of
 * their first rank.  The caller owns the fields; g3_par_alloc_free frees them. */
typedef struct {
    int     nnodes, rpn;    /* nodes; ranks per node (the same on every node)               */
    char  **names;          /* (nnodes) host names                                          */
    char  **addrs;          /* (nnodes) SLURM_TOPOLOGY_ADDR, or NULL: no task has a switch
                             * address (SLURM_TOPOLOGY_ADDR_PATTERN naming a switch)        */
    char  **patterns;       /* (nnodes) SLURM_TOPOLOGY_ADDR_PATTERN, or NULL with addrs     */
    int    *rank_node;      /* (world) node of each rank, or NULL: block order              */
    int    *rank_local;     /* (world) local rank of each rank, or NULL                     */
} g3_par_alloc_t;

/* Gather every rank's host name, local rank and SLURM_TOPOLOGY_ADDR(_PATTERN) over PMIx
 * (collective over the world; what names the exchange in errors and timeouts).  Every rank
 * gets the whole allocation.  OUT: *a (zeroed on failure).  RET: G3_ERR_INVALID_ARG with
 * why[] when the nodes run different numbers of ranks; comm errors (logged). */
g3_status_t g3_par_alloc_gather(g3_comm_world_t *world, const char *what, g3_par_alloc_t *a,
                                char *why, size_t why_len);
void g3_par_alloc_free(g3_par_alloc_t *a);

/* The switch tree for allocation a: topology_file (a Slurm topology.conf) when given, else
 * the nodes' SLURM_TOPOLOGY_ADDR, else one flat switch; and each node's index in it.
 * where names the allocation in messages ("this job", "--nodelist").
 * OUT: *topo_p, *nodes_p ((a->nnodes) topo node indices; the caller frees both).
 * RET: G3_ERR_INVALID_ARG with why[] when a node is missing from the tree or listed twice;
 * the tree builders' errors (logged there). */
g3_status_t g3_par_alloc_topo(const g3_par_alloc_t *a, const char *topology_file,
                              const char *where, g3_topo_t **topo_p, int **nodes_p, char *why,
                              size_t why_len);

typedef struct {
    int  world_rank, world_size;
    int  tp, pp, dp;                /* sizes                                              */
    int  tp_rank, pp_rank, dp_rank; /* this rank's coordinates                            */
    int  nnodes, ranks_per_node;
    int  local_size;                /* ranks of this job on this rank's node              */
    char how[64];                   /* which mapping won (src/topo)                       */
    char hosts[256];                /* the nodes, compressed ("n[0-3]")                   */
} g3_par_layout_t;

typedef struct g3_par g3_par_t;

/* The data-parallel size of a job of `world` ranks split into TP x PP ranks per replica (the
 * one check of it: gpt3d train, eval, generate and plan call it through g3_train_flags_dp,
 * g3_par_init too).  OUT: *dp_p.  RET: 1, or 0 with why[] saying what would fit (nothing
 * logged). */
int g3_par_dp_size(int64_t world, int tp, int pp, int *dp_p, char *why, size_t why_len);

/* Place every rank of the world on a TP x PP x DP grid and create the groups.  Collective
 * over the world.  The placement of the ranks (host, local rank, SLURM_TOPOLOGY_ADDR) is
 * exchanged over PMIx; the switch tree is topology_file (a Slurm topology.conf) when given,
 * else the tasks' SLURM_TOPOLOGY_ADDR, else one flat switch; every rank computes the same
 * plan with g3_topo_map.
 * RET: G3_ERR_INVALID_ARG when the layout is impossible (the world is not a multiple of
 * TP x PP, TP does not fit in a node, nodes run different numbers of ranks): nothing is
 * logged, why[] holds one sentence saying what would fit (the same on every rank); comm
 * errors (logged).  OUT: *par_p, only on G3_OK. */
g3_status_t g3_par_init(g3_comm_world_t *world, int tp, int pp, const char *topology_file,
                        g3_par_t **par_p, char *why, size_t why_len);
void g3_par_free(g3_par_t *par);

const g3_par_layout_t *g3_par_layout(const g3_par_t *par);

/* A rank's part of the model as layout l places it: cfg's tensor- and pipeline-parallel sizes
 * and ranks (the one place they are set; l may be a job's layout planned before its ranks
 * are placed, g3_train_flags_job_layout).  OUT: cfg's four. */
void g3_par_layout_shard(const g3_par_layout_t *l, g3_gpt_config_t *cfg);
/* This rank's part of the model as the layout places it (g3_par_layout_shard of its layout).
 * OUT: cfg's four. */
void g3_par_shard(const g3_par_t *par, g3_gpt_config_t *cfg);

/* What moves a GPU backend's buffers between ranks (--distributed-backend). */
typedef enum {
    G3_PAR_DIST_NCCL = 0,   /* NCCL on the device: one rank per GPU (the default)          */
    G3_PAR_DIST_UCX         /* staged through host buffers and the UCX host collectives:
                             * several ranks may share a GPU                               */
} g3_par_dist_t;

/* Tell the layout which compute backend holds the buffers the groups move (collective over
 * the world; g3_par_engine_init calls it).  A backend whose memory is host memory (cpu)
 * uses the host groups (GPT3D_STAGED_HOST=1: staged groups over memcpy, to test the staged
 * path on the CPU; bitwise the same results).  A GPU backend (cuda) gets groups over the
 * same members (tp, pp, dp, emb): NCCL groups on the CUDA device the backend opened (one
 * rank per GPU: two ranks on one GPU are refused, naming --distributed-backend ucx), or with
 * dist G3_PAR_DIST_UCX staged groups (comm.h) that copy through the backend's page-locked
 * host buffers and reduce on the host in rank order.  Its activations travel as bf16, its
 * gradients and master weights as fp32.  The host groups stay for host data (loss, norm,
 * cross-entropy statistics on the host, the sample).
 * RET: G3_ERR_UNSUPPORTED (logged, naming the fix) when the build has no NCCL; G3_ERR_USAGE
 * (logged by world rank 0, naming --distributed-backend ucx) when ranks share a GPU under
 * NCCL; comm errors (logged). */
g3_status_t g3_par_set_backend(g3_par_t *par, const g3_backend_t *be, g3_par_dist_t dist);
/* RET: how many distinct devices (host, GPU) hold the ranks' buffers after g3_par_set_backend
 * for a GPU backend (several ranks may share one with --distributed-backend ucx); 0 for a
 * host-memory backend.  The trainer's MFU counts these GPUs' peaks. */
int g3_par_devices(const g3_par_t *par);
/* Undo g3_par_set_backend: free the groups made for the backend's buffers (NCCL communicators
 * live in the backend's CUDA context; staged groups hold page-locked buffers of the backend)
 * and move the buffers back to the host groups.  Whoever closes the backend calls this first:
 * the layout outlives the backend, and the groups must not.  Safe when none were made. */
void g3_par_drop_backend(g3_par_t *par);

/* The tensor-parallel collectives for g3_gpt_set_tp_comm.  OUT: *comm */
void g3_par_tp_comm(g3_par_t *par, g3_gpt_tp_comm_t *comm);

/* Print the layout (rank 0 calls it: one line per axis and the stages' layers) to out, and
 * the rank table (host, local rank, tp, pp, dp of every rank) at debug level. */
void g3_par_print_layout(const g3_par_t *par, const g3_gpt_config_t *cfg, FILE *out);

/* Time this rank spent in the calls of each axis's groups (host and backend-buffer groups
 * together; comm.h, g3_comm_busy), cumulative: busy[axis][kind] in seconds, axes tp, pp,
 * dp and the tied embedding's group (--timing-log-level). */
#define G3_PAR_AXES 4
void g3_par_comm_busy(const g3_par_t *par, double busy[G3_PAR_AXES][G3_COMM_STAT_COUNT]);

/* buf (n,) host doubles: summed (max = 0) or maxed over the world, in place. */
g3_status_t g3_par_world_allreduce(g3_par_t *par, double *buf, size_t n, int max);

/* ---- the training engine --------------------------------------------------------------------- */

typedef struct g3_par_engine g3_par_engine_t;

/* AdamW with global-norm gradient clipping, through the backend's adamw and sumsq ops.
 * Weight decay follows Megatron: every weight matrix and embedding decays, biases and
 * LayerNorm parameters do not (g3_gpt_param_t.weight_decay).  Clipping is Megatron's /
 * PyTorch's clip_grad_norm_: with the global L2 norm n of all gradients, gradients are
 * scaled by clip / (n + 1e-6) when that is below 1. */
typedef struct {
    double beta1;          /* --adam-beta1  (0.9)                     */
    double beta2;          /* --adam-beta2  (0.999)                   */
    double eps;            /* --adam-eps    (1e-8)                    */
    double weight_decay;   /* --weight-decay (0.01)                   */
    double clip_grad;      /* --clip-grad (1.0); 0 turns clipping off */
} g3_par_adamw_config_t;

typedef struct {
    g3_par_adamw_config_t adamw;
    int         distributed_optimizer;  /* ZeRO-1 over DP (--use-distributed-optimizer) */
    int         grad_reduce_bf16;       /* DP reductions in bf16 (--grad-reduce-in-bf16) */
    int64_t     ddp_bucket_size;        /* > 0: DP reductions per bucket of about this many
                                         * elements, in reverse layer order (--ddp-bucket-size) */
    int         overlap_grad_reduce;    /* start each bucket's reduction during the last
                                         * micro-batch's backward (--overlap-grad-reduce)   */
    int         overlap_param_gather;   /* ZeRO-1: wait for a bucket's all-gather at its first
                                         * forward use (--overlap-param-gather)              */
    int64_t     max_micro;              /* most micro-batches an iteration runs (m)      */
    const char *grad_dump_dir;          /* tests: dump the reduced gradients of step 1  */
    int         forward_only;           /* eval / generate: no optimizer state           */
    g3_par_dist_t dist_backend;         /* GPU buffers: NCCL or staged (--distributed-backend) */
    g3_timers_t *timers;                /* --timing-log-level (borrowed), or NULL           */
} g3_par_engine_config_t;

/* Memory one rank holds for its model state (see docs/parallelism.md). */
typedef struct {
    size_t numel;             /* local parameter elements (flat buffer, with alignment gaps) */
    size_t work_bytes;        /* bytes per parameter of a separate working copy (bf16 on
                               * CUDA: 2), 0 when the passes read the master weights (CPU) */
    size_t param_bytes;       /* fp32 master weights, plus the working copy if separate   */
    size_t grad_bytes;        /* fp32 gradient accumulation buffer                        */
    size_t optim_bytes;       /* Adam m and v, and (ZeRO-1) the reduced gradient shard    */
    size_t acts_bytes;        /* activations of the micro-batches in flight              */
    int    acts_sets;         /* micro-batches in flight at most (1F1B: PP - pp)          */
    double bytes_per_param;   /* (param + grad + optim) / numel                           */
    double formula;           /* 4 + 4 + 8 = 16, or 4 + 4 + 12 / DP with ZeRO-1; + work_bytes */
} g3_par_memory_t;

/* Megatron-LM's rule of the interleaved schedule: with V > 1 model chunks per stage, the
 * micro-batches of a data-parallel rank per iteration (micro) are a multiple of the pp stages.
 * The one check and its one message: the engine's (g3_par_engine_init) and gpt3d plan's
 * layouts (search/layout.c).  RET: G3_OK, or G3_ERR_INVALID_ARG (logged, naming the flags). */
g3_status_t g3_par_ilv_check(int V, int pp, int64_t micro);

/* Activations for the in-flight micro-batches of B x T, the optimizer state and the
 * communication plan for model (already built for this rank's tp/pp and given its TP
 * collectives).  OUT: *eng_p.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_par_engine_init(g3_par_t *par, g3_gpt_t *model, int B, int T,
                               const g3_par_engine_config_t *cfg, g3_par_engine_t **eng_p);
void g3_par_engine_free(g3_par_engine_t *eng);
void g3_par_engine_memory(const g3_par_engine_t *eng, g3_par_memory_t *mem);
/* Collective: gather every stage's memory and print (rank 0, to out) one line per stage:
 * the parameters each of its ranks holds and the bytes per parameter, measured and by the
 * formula.  RET: comm errors. */
g3_status_t g3_par_print_memory(g3_par_engine_t *eng, FILE *out);
const g3_par_layout_t *g3_par_engine_layout(const g3_par_engine_t *eng);
g3_par_t *g3_par_engine_par(const g3_par_engine_t *eng);   /* the layout it runs on */

/* One training iteration, collective over the world.  inputs, targets: (nmicro * B, T)
 * host, this DP rank's part of the global batch (micro-batch k = rows [k B, (k+1) B)).
 * Gradients are of the mean token loss over the global batch of gbs sequences.
 * OUT: *loss_p (that mean, the same on every rank), *grad_norm_p (global, before clipping).
 * RET: G3_ERR_NUMERIC when the loss or the norm is NaN or infinite (on every rank, logged
 * by rank 0 with `iteration`; parameters untouched), model and comm errors. */
g3_status_t g3_par_train_step(g3_par_engine_t *eng, const int32_t *inputs,
                              const int32_t *targets, int64_t nmicro, int64_t gbs, double lr,
                              int64_t iteration, double *loss_p, double *grad_norm_p);

/* Forward only over n sequences (this DP rank's part; n a multiple of B), collective.
 * OUT: *loss_sum_p, the sum of the per-token losses over every DP rank's sequences. */
g3_status_t g3_par_eval(g3_par_engine_t *eng, const int32_t *inputs, const int32_t *targets,
                        int64_t n, double *loss_sum_p);

/* Forward only over one micro-batch of n rows of T tokens (T <= the engine's T, n T <= its
 * B T: more rows when they are shorter), collective over this replica's stages; no DP
 * collective.  On the ranks whose stage holds the head (*have_p = 1) logprob and greedy
 * get g3_gpt_score's per-token values; elsewhere they are untouched.
 * inputs, targets (n, T) host.  OUT: logprob (n, T), greedy (n, T) or NULL, *have_p. */
g3_status_t g3_par_score(g3_par_engine_t *eng, const int32_t *inputs, const int32_t *targets,
                         int64_t n, int T, float *logprob, uint8_t *greedy, int *have_p);

/* Logits of the last of T tokens (one sequence) through the whole pipeline, gathered over
 * TP and sent to every stage: every rank gets the same full row.  Collective.
 * tokens (T,) host; OUT: logits (Vp,) host. */
g3_status_t g3_par_logits_last(g3_par_engine_t *eng, const int32_t *tokens, int T,
                               float *logits);

/* Wait for the parameter all-gathers still in flight (--overlap-param-gather leaves them
 * to the next forward): call before reading the parameters outside a pass (checkpoints,
 * dumps).  Collective in effect (the all-gathers); G3_OK at once when none is in flight.
 * RET: comm errors. */
g3_status_t g3_par_engine_params_ready(g3_par_engine_t *eng);

/* The pipeline bubble measured over the iterations so far on this rank: (time in the
 * schedule - time computing) / time computing, and the 1F1B formula (PP - 1) / m for the
 * last iteration's m.  OUT: both (0 without pipeline parallelism). */
void g3_par_engine_bubble(const g3_par_engine_t *eng, double *measured, double *formula);

/* The idle fraction of this stage over the iterations so far: (time in the schedule - time
 * computing) / time in the schedule, i.e. waiting for activations and gradients and passing
 * them; and the formulas for the last iteration's m: 1F1B's (PP - 1) / (m + PP - 1) and the
 * interleaved schedule's (PP - 1) / (V m + PP - 1).  OUT: all three. */
void g3_par_engine_idle(const g3_par_engine_t *eng, double *measured, double *f1, double *fv);

/* The Adam state this rank holds, for checkpoints and the equivalence tests' dumps: ranges
 * [begin, end) of the flat parameter buffer (they may span several tensors) whose moments
 * are at m, v (backend memory, (end - begin,) each).  owner: 1 when this rank is the one
 * that saves the range (ZeRO-1 shards: every DP rank its own; state replicated over DP, or
 * the last len mod DP elements of a segment under ZeRO-1: DP rank 0), so that together the
 * owners hold every element once.  OUT: ranges[0 .. RET), *step_p (the Adam step counter,
 * read and written by checkpoint loads). */
#define G3_PAR_OPTIM_RANGES_MAX 64   /* 2 per segment: bucketed, up to 2 x (2 x 13 + 4) */
typedef struct {
    size_t begin, end;
    float *m, *v;
    int    owner;
} g3_par_optim_range_t;
int g3_par_engine_optim_ranges(g3_par_engine_t *eng,
                               g3_par_optim_range_t ranges[G3_PAR_OPTIM_RANGES_MAX],
                               int64_t **step_p);

/* ---- gradient dumps (the equivalence tests) -------------------------------------------------- */

/* Write the gradient elements [begin, end) of the flat buffer of model, whose values are
 * at grad (host or backend memory, (end - begin,)), to the open dump file f as records
 * (tensor name, global shape, global element index, value); tp_rank maps local to global
 * indices.  RET: G3_ERR_IO (logged). */
g3_status_t g3_par_dump_range(FILE *f, const char *path, const g3_gpt_t *model, size_t begin,
                              size_t end, const float *grad);
/* Open DIR/<what>-rank<rank>.bin for writing ("grads", "params"), with its header;
 * DIR is created if missing.  OUT: *f_p, path (path_len). */
g3_status_t g3_par_dump_open(const char *dir, const char *what, int rank, char *path,
                             size_t path_len, FILE **f_p);
g3_status_t g3_par_dump_close(FILE *f, const char *path);
/* Every gradient (params = 0) or parameter (params = 1) this rank holds in model, as
 * DIR/grads-rank<rank>.bin or DIR/params-rank<rank>.bin. */
g3_status_t g3_par_dump_model(const char *dir, const g3_gpt_t *model, int params, int rank);
/* The Adam first moments of the ranges this rank owns (g3_par_engine_optim_ranges), as
 * DIR/adam_m-rank<world rank>.bin: together the ranks' files hold every element once. */
g3_status_t g3_par_engine_dump_adam(g3_par_engine_t *eng, const char *dir);

#endif
