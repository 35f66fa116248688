/* gpt3d train: AdamW and gradient clipping (see optim.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "core/log.h"
#include "train/optim.h"

g3_status_t g3_train_adamw_init(g3_gpt_t *model, const g3_train_adamw_config_t *cfg,
                                g3_train_adamw_t **opt_p)
{
    g3_backend_t *be = model->be;
    g3_train_adamw_t *opt;
    size_t bytes = model->numel * sizeof(float);
    g3_status_t st;

    opt = calloc(1, sizeof(*opt));
    if (!opt) {
        g3_error("optimizer: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    opt->cfg = *cfg;
    opt->model = model;
    st = be->ops->alloc(be, bytes, "the Adam first moments", (void **)&opt->m);
    if (st != G3_OK)
        goto err_free_opt;
    st = be->ops->alloc(be, bytes, "the Adam second moments", (void **)&opt->v);
    if (st != G3_OK)
        goto err_free_m;
    be->ops->zero(be, opt->m, bytes);
    be->ops->zero(be, opt->v, bytes);
    *opt_p = opt;
    return G3_OK;

err_free_m:
    be->ops->free(be, opt->m);
err_free_opt:
    free(opt);
    return st;
}

void g3_train_adamw_free(g3_train_adamw_t *opt)
{
    if (!opt)
        return;
    opt->model->be->ops->free(opt->model->be, opt->v);
    opt->model->be->ops->free(opt->model->be, opt->m);
    free(opt);
}

double g3_train_grad_norm(g3_gpt_t *model)
{
    double ss = 0.0;
    /* the gaps between tensors in the flat buffer stay zero */
    model->be->ops->sumsq(model->be, model->g, model->numel, &ss);
    return sqrt(ss);
}

g3_status_t g3_train_adamw_step(g3_train_adamw_t *opt, double lr, double *grad_norm_p)
{
    g3_gpt_t *m = opt->model;
    g3_backend_t *be = m->be;
    double norm = g3_train_grad_norm(m);

    *grad_norm_p = norm;
    if (!isfinite(norm))
        return G3_ERR_NUMERIC;
    if (opt->cfg.clip_grad > 0.0) {
        double coeff = opt->cfg.clip_grad / (norm + 1e-6);
        if (coeff < 1.0)
            be->ops->scale(be, m->g, m->numel, (float)coeff);
    }
    opt->step++;
    for (int i = 0; i < m->nparams; i++) {
        const g3_gpt_param_t *p = &m->params[i];
        be->ops->adamw(be, m->w + p->offset, m->g + p->offset, opt->m + p->offset,
                       opt->v + p->offset, p->numel, (float)lr, (float)opt->cfg.beta1,
                       (float)opt->cfg.beta2, (float)opt->cfg.eps,
                       p->weight_decay ? (float)opt->cfg.weight_decay : 0.0f, opt->step);
    }
    return be->ops->sync(be);
}

g3_status_t g3_train_step(g3_train_adamw_t *opt, g3_gpt_acts_t *acts, const int32_t *tokens,
                          const int32_t *targets, int64_t n, int B, int T, double lr,
                          int64_t iteration, double *loss_p, double *grad_norm_p)
{
    g3_gpt_t *m = opt->model;
    float dloss = (float)(1.0 / ((double)n * T));
    double loss = 0.0, norm = 0.0;
    g3_status_t st;

    g3_gpt_zero_grad(m);
    for (int64_t b0 = 0; b0 < n; b0 += B) {
        double s = 0.0;
        size_t off = (size_t)b0 * (size_t)T;
        st = g3_gpt_forward(m, acts, tokens + off, targets + off, B, T, dloss, &s);
        if (st == G3_OK)
            st = g3_gpt_backward(m, acts);
        if (st != G3_OK)
            return st;
        loss += s;
    }
    loss /= (double)n * T;
    *loss_p = loss;
    *grad_norm_p = NAN;
    if (!isfinite(loss)) {
        g3_error("iteration %lld: the training loss is %s; stopping before the update (no "
                 "checkpoint was written: checkpoints are not built into this version). Lower "
                 "--lr, raise the warm-up, or check the data", (long long)iteration,
                 isnan(loss) ? "NaN" : "infinite");
        return G3_ERR_NUMERIC;
    }
    st = g3_train_adamw_step(opt, lr, &norm);
    *grad_norm_p = norm;
    if (st == G3_ERR_NUMERIC)
        g3_error("iteration %lld: the gradient norm is %s (loss %.4f); stopping before the "
                 "update (no checkpoint was written: checkpoints are not built into this "
                 "version). Lower --lr or keep --clip-grad on", (long long)iteration,
                 isnan(norm) ? "NaN" : "infinite", loss);
    return st;
}
