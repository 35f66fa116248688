/* gpt3d plan: layouts checked with the trainer's own checks, and the search over them.  This
 * upper half of gpt3d plan (src/search) sits above train, parallel and topo (it runs their
 * checks); plan/plan.h (the arithmetic, src/plan) sits on model and the backends below train,
 * so the trainer can use it.  Glossary in plan/plan.h. */
#ifndef G3_SEARCH_LAYOUT_H
#define G3_SEARCH_LAYOUT_H

#include <stdint.h>

#include "plan/plan.h"
#include "train/flags.h"
#include "train/train.h"

/* What the flags say, before a layout is chosen. */
typedef struct {
    g3_train_config_t cfg;    /* the trainer's configuration (vocab_size set)             */
    int     nodes, rpn;       /* --nodes, --gpus-per-node; 0: not given                  */
    int     dp_flag;          /* --data-parallel-size; 0: not given                       */
    int     length_given;     /* --train-iters or --train-samples given                   */
    double  gpu_gib;          /* --gpu-memory; 0: not given                               */
    int     virtual_pp;       /* V: model chunks per pipeline rank (1: plain 1F1B): the
                               * trainer's reader's (cfg.model), varied by --search        */
    int     vpp_given;        /* V given (--search keeps it); else --search tries V       */
    int     sequence_parallel;/* --sequence-parallel (cfg.model's), varied by --search    */
    int     sp_given;         /* given: --search keeps it; else it tries both with TP > 1 */
    int     ranks_per_gpu;    /* --ranks-per-gpu: ranks sharing one GPU (1)               */
    double  fixed_bytes;      /* the GPU's fixed cost per process (0: the H100's)         */
    double  nccl_bytes;       /* its NCCL communicators' memory per rank (0: the H100's)  */
    char    gpu[32];          /* the GPU planned for (--gpu, the calibration's, the local
                               * one or h100): "" with --device cpu                       */
    char    gpu_how[256];     /* where the GPU and its fixed cost come from               */
} g3_plan_flags_t;

/* One checked layout. */
typedef struct {
    g3_plan_input_t in;
    g3_train_plan_t tplan;
    int             nodes, rpn;   /* 0: no node check was possible                         */
    g3_plan_t       plan;
} g3_plan_layout_t;

/* Run every check gpt3d train runs before its first step on TP x PP (and the ranks of f),
 * then work out the plan.  OUT: *lay (g3_plan_free(&lay->plan) on success).
 * RET: an exit code; the errors are logged with the trainer's messages. */
int g3_plan_layout(const g3_plan_flags_t *f, int tp, int pp, g3_plan_layout_t *lay);

/* Tokens and FLOPs of the whole run when its length was given (ramp-up included). */
void g3_plan_run_totals(const g3_plan_layout_t *lay, double *tokens, double *flops);

/* RET: 1 when a stage's peak fits f's --gpu-memory (always without it). */
int g3_plan_stage_fits(const g3_plan_flags_t *f, const g3_plan_t *p, const g3_plan_stage_t *st);

/* One layout --search found valid. */
typedef struct {
    int     tp, pp, dp, vpp, sp;
    int64_t m;
    double  bubble, peak;          /* peak: what the GPU holds (all ranks sharing it)       */
    int     peak_stage;
    int64_t params_rank;           /* the peak stage's parameters per rank                  */
    double  seconds;               /* predicted seconds per iteration (0: no machine given) */
    int     fits;
} g3_plan_candidate_t;

typedef struct {
    g3_plan_candidate_t *c;        /* (n,) ordered: fitting first, then by time (or bubble),
                                    * peak memory, TP, PP, V, SP                              */
    int n, checked, valid, fit;
} g3_plan_search_t;

/* Silences the checks of each candidate (their errors are why it is left out). */
typedef void (*g3_plan_quiet_fn)(void *ctx, int on);

/* Try TP in the divisors of --gpus-per-node up to 8 (or tp_given), every PP up to the layers
 * with nodes x rpn a multiple of TP x PP (or pp_given), V in 1, 2, 4, ... (or the given V)
 * where the layers split, sequence parallelism off and (TP > 1) on (or as given).  mach:
 * the machine whose time orders the rows (NULL: ordered by bubble).  OUT: *s (free with
 * g3_plan_search_free).  RET: an exit code (logged): 2 when nothing could be formed or is
 * valid, 1 when nothing fits. */
struct g3_plan_machine;
int g3_plan_search(const g3_plan_flags_t *f, int tp_given, int pp_given,
                   const struct g3_plan_machine *mach, g3_plan_quiet_fn quiet, void *quiet_ctx,
                   g3_plan_search_t *s);
void g3_plan_search_free(g3_plan_search_t *s);

#endif
