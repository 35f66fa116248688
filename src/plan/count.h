/* gpt3d plan: the backend ops a micro-batch's passes queue, counted by running the model's own
 * forward and backward (g3_gpt_forward, g3_gpt_backward) on a tiny copy of the model whose
 * backend only counts (docs/plan.md "Time per iteration": the cost that does not grow with
 * the work).  Counting the passes themselves keeps one source: a change to the model or to
 * the ops a backend fills (the fused ops) changes the count.  Glossary in plan.h. */
#ifndef G3_PLAN_COUNT_H
#define G3_PLAN_COUNT_H

#include "backend/backend.h"
#include "core/status.h"
#include "model/gpt.h"
#include "plan/plan.h"

/* Ops per micro-batch (forward + backward) of a stage of nl layers in V chunks (1: plain 1F1B):
 *   V x stage + (nl - V) x layer + (first stage) emb + (last stage) head + chunks x head_chunk,
 * chunks the output layer's (g3_gpt_head_chunks).  Host syncs and the transfers the passes
 * make (upload of the tokens, download of the losses) are ops too: each pays the fixed cost
 * the calibration measures per op. */
typedef struct {
    double stage;       /* a middle stage of one layer: that layer, the syncs               */
    double layer;       /* each further layer (with full recompute, its forward again)     */
    double emb;         /* the first stage's embedding, forward and backward               */
    double head;        /* the last stage's final LayerNorm, loss download, ...            */
    double head_chunk;  /* ... and per output-layer chunk (GEMMs, cross-entropy)          */
} g3_plan_ops_t;

/* Count the ops of cfg's passes (its TP, sequence parallelism, recompute; tp_rank 0) on a
 * backend of `kind` with options o (which fused ops it fills).  OUT: *ops.
 * RET: G3_OK; G3_ERR_NO_MEMORY, or a model error (logged). */
g3_status_t g3_plan_count_ops(const g3_gpt_config_t *cfg, g3_be_kind_t kind,
                              const g3_be_opts_t *o, g3_plan_ops_t *ops);

/* The ops one forward + backward of B x T tokens of cfg as given (its sizes, one rank of its
 * layout) queues on a backend of `kind`.  OUT: *count.  RET: as g3_plan_count_ops. */
g3_status_t g3_plan_count_pass(const g3_gpt_config_t *cfg, g3_be_kind_t kind,
                               const g3_be_opts_t *o, int B, int T, double *count);

#endif
