/* gpt3d train: AdamW with global-norm gradient clipping over a model's parameters, through
 * the backend's adamw and sumsq ops (so it runs wherever the model does).
 *
 * Weight decay follows Megatron: every weight matrix and embedding decays, biases and
 * LayerNorm parameters do not (g3_gpt_param_t.weight_decay).  Clipping is Megatron's /
 * PyTorch's clip_grad_norm_: with the global L2 norm n of all gradients, gradients are scaled
 * by clip / (n + 1e-6) when that is below 1. */
#ifndef G3_TRAIN_OPTIM_H
#define G3_TRAIN_OPTIM_H

#include <stdint.h>

#include "core/status.h"
#include "model/gpt.h"

typedef struct {
    double beta1;          /* --adam-beta1  (0.9)                     */
    double beta2;          /* --adam-beta2  (0.999)                   */
    double eps;            /* --adam-eps    (1e-8)                    */
    double weight_decay;   /* --weight-decay (0.01)                   */
    double clip_grad;      /* --clip-grad (1.0); 0 turns clipping off */
} g3_train_adamw_config_t;

/* Tensors adjacent in the flat buffers with the same weight decay, updated in one pass. */
typedef struct {
    size_t begin, end;     /* element range in the flat buffers */
    int    weight_decay;
} g3_train_adamw_run_t;

typedef struct {
    g3_train_adamw_config_t cfg;
    g3_gpt_t *model;
    g3_train_adamw_run_t *runs;   /* (nruns,) */
    int       nruns;
    float    *m;           /* (model->numel,) first moments, backend memory  */
    float    *v;           /* (model->numel,) second moments, backend memory */
    int64_t   step;        /* updates done (bias correction)                 */
    /* The norm and clipping scale in backend memory when the backend has sumsq_acc,
     * clip_scale and adamw_scaled (g3_be_clip_alloc, backend.h); NULL otherwise. */
    double   *dsumsq;      /* (1,) fp64, backend memory                      */
    float    *dscale;      /* (1,) fp32, backend memory (inside dsumsq's allocation) */
    /* Called by g3_train_adamw_step with the complete gradients, before the norm and the
     * clipping (tests dump them); NULL: none.  step: the update about to be done. */
    g3_status_t (*grad_hook)(void *ctx, g3_gpt_t *model, int64_t step);
    void     *grad_hook_ctx;
} g3_train_adamw_t;

/* OUT: *opt_p with zero moments.  RET: G3_ERR_NO_MEMORY. */
g3_status_t g3_train_adamw_init(g3_gpt_t *model, const g3_train_adamw_config_t *cfg,
                                g3_train_adamw_t **opt_p);
void g3_train_adamw_free(g3_train_adamw_t *opt);

/* RET: the global L2 norm of the model's gradients. */
double g3_train_grad_norm(g3_gpt_t *model);

/* Clip, then one AdamW update at learning rate lr.
 * OUT: *grad_norm_p, the norm before clipping.
 * RET: G3_ERR_NUMERIC when the norm is NaN or infinite: nothing is updated then. */
g3_status_t g3_train_adamw_step(g3_train_adamw_t *opt, double lr, double *grad_norm_p);

/* One training iteration over a global batch held in host memory: zero the gradients, run
 * forward and backward over its micro-batches of B sequences (gradients of the mean token
 * loss over all n sequences), then clip and update at learning rate lr.
 * tokens, targets: (n, T) host; n a multiple of B.
 * OUT: *loss_p (mean token loss), *grad_norm_p (before clipping).
 * RET: G3_ERR_NUMERIC when the loss or the gradient norm is NaN or infinite (logged with
 * `iteration`; the parameters are left as they were), model/backend errors. */
g3_status_t g3_train_step(g3_train_adamw_t *opt, g3_gpt_acts_t *acts, const int32_t *tokens,
                          const int32_t *targets, int64_t n, int B, int T, double lr,
                          int64_t iteration, double *loss_p, double *grad_norm_p);

#endif
