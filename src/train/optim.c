/* gpt3d train: AdamW and gradient clipping (see optim.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "core/log.h"
#include "train/optim.h"

static int g3_param_by_offset(const void *a, const void *b)
{
    size_t x = (*(const g3_gpt_param_t *const *)a)->offset;
    size_t y = (*(const g3_gpt_param_t *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Group the tensors into runs that are adjacent in the flat buffers (up to the 16-float
 * alignment gaps, which hold zeros that AdamW leaves at zero) and share the weight decay:
 * the model lays decayed tensors out first, so there are two runs, two passes per step. */
static g3_status_t g3_train_adamw_runs(g3_train_adamw_t *opt)
{
    const g3_gpt_t *m = opt->model;
    const g3_gpt_param_t **order = malloc(sizeof(*order) * (size_t)(m->nparams ? m->nparams : 1));

    opt->runs = calloc((size_t)(m->nparams ? m->nparams : 1), sizeof(*opt->runs));
    if (!order || !opt->runs) {
        free(order);
        g3_error("optimizer: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < m->nparams; i++)
        order[i] = &m->params[i];
    qsort(order, (size_t)m->nparams, sizeof(*order), g3_param_by_offset);
    opt->nruns = 0;
    for (int i = 0; i < m->nparams; i++) {
        const g3_gpt_param_t *p = order[i];
        g3_train_adamw_run_t *last = opt->nruns ? &opt->runs[opt->nruns - 1] : NULL;
        if (last && last->weight_decay == p->weight_decay &&
            ((last->end + 15) & ~(size_t)15) == p->offset) {
            last->end = p->offset + p->numel;
        } else {
            opt->runs[opt->nruns].begin = p->offset;
            opt->runs[opt->nruns].end = p->offset + p->numel;
            opt->runs[opt->nruns].weight_decay = p->weight_decay;
            opt->nruns++;
        }
    }
    free(order);
    return G3_OK;
}

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
    st = g3_train_adamw_runs(opt);
    if (st != G3_OK)
        goto err_free_opt;
    st = be->ops->alloc(be, bytes, "the Adam first moments", (void **)&opt->m);
    if (st != G3_OK)
        goto err_free_opt;
    st = be->ops->alloc(be, bytes, "the Adam second moments", (void **)&opt->v);
    if (st != G3_OK)
        goto err_free_m;
    be->ops->zero(be, opt->m, bytes);
    be->ops->zero(be, opt->v, bytes);
    st = g3_be_clip_alloc(be, &opt->dsumsq, &opt->dscale);
    if (st != G3_OK)
        goto err_free_v;
    *opt_p = opt;
    return G3_OK;

err_free_v:
    be->ops->free(be, opt->v);
err_free_m:
    be->ops->free(be, opt->m);
err_free_opt:
    free(opt->runs);
    free(opt);
    return st;
}

void g3_train_adamw_free(g3_train_adamw_t *opt)
{
    if (!opt)
        return;
    if (opt->dsumsq)
        opt->model->be->ops->free(opt->model->be, opt->dsumsq);
    opt->model->be->ops->free(opt->model->be, opt->v);
    opt->model->be->ops->free(opt->model->be, opt->m);
    free(opt->runs);
    free(opt);
}

double g3_train_grad_norm(g3_gpt_t *model)
{
    double ss = 0.0;
    /* the gaps between tensors in the flat buffer stay zero */
    model->be->ops->sumsq(model->be, model->g, model->numel, &ss);
    return sqrt(ss);
}

/* g3_train_adamw_step with the norm and the clipping scale in backend memory: the sum of
 * squares accumulates on the device, the scale is computed there and AdamW reads it, so the
 * gradients are not rewritten and the one host sync is the 8-byte norm download, which must
 * precede the update (a non-finite norm stops the step). */
static g3_status_t g3_train_adamw_step_dev(g3_train_adamw_t *opt, double lr,
                                           double *grad_norm_p)
{
    g3_gpt_t *m = opt->model;
    g3_backend_t *be = m->be;
    double ss = 0.0, norm;
    g3_status_t st;

    be->ops->zero(be, opt->dsumsq, sizeof(double));
    be->ops->sumsq_acc(be, opt->dsumsq, m->g, m->numel);   /* the gaps hold zeros */
    be->ops->clip_scale(be, opt->dscale, opt->dsumsq, opt->cfg.clip_grad);
    be->ops->download(be, &ss, opt->dsumsq, sizeof(double));
    st = be->ops->sync(be);
    if (st != G3_OK)
        return st;
    norm = sqrt(ss);
    *grad_norm_p = norm;
    if (!isfinite(norm))
        return G3_ERR_NUMERIC;
    opt->step++;
    for (int r = 0; r < opt->nruns; r++) {
        size_t o = opt->runs[r].begin, n = opt->runs[r].end - o;
        be->ops->adamw_scaled(be, m->w + o, m->g + o, opt->m + o, opt->v + o, n, (float)lr,
                              (float)opt->cfg.beta1, (float)opt->cfg.beta2,
                              (float)opt->cfg.eps,
                              opt->runs[r].weight_decay ? (float)opt->cfg.weight_decay : 0.0f,
                              opt->step, opt->dscale);
    }
    g3_gpt_params_refresh(m);
    return be->ops->sync(be);
}

g3_status_t g3_train_adamw_step(g3_train_adamw_t *opt, double lr, double *grad_norm_p)
{
    g3_gpt_t *m = opt->model;
    g3_backend_t *be = m->be;
    double norm;

    if (opt->grad_hook) {
        g3_status_t st = opt->grad_hook(opt->grad_hook_ctx, m, opt->step + 1);
        if (st != G3_OK)
            return st;
    }
    if (opt->dsumsq)
        return g3_train_adamw_step_dev(opt, lr, grad_norm_p);
    norm = g3_train_grad_norm(m);
    *grad_norm_p = norm;
    if (!isfinite(norm))
        return G3_ERR_NUMERIC;
    if (opt->cfg.clip_grad > 0.0) {
        double coeff = opt->cfg.clip_grad / (norm + 1e-6);
        if (coeff < 1.0)
            be->ops->scale(be, m->g, m->numel, (float)coeff);
    }
    opt->step++;
    for (int r = 0; r < opt->nruns; r++) {
        size_t o = opt->runs[r].begin, n = opt->runs[r].end - o;
        be->ops->adamw(be, m->w + o, m->g + o, opt->m + o, opt->v + o, n, (float)lr,
                       (float)opt->cfg.beta1, (float)opt->cfg.beta2, (float)opt->cfg.eps,
                       opt->runs[r].weight_decay ? (float)opt->cfg.weight_decay : 0.0f,
                       opt->step);
    }
    g3_gpt_params_refresh(m);   /* the passes' bf16 copy on CUDA; nothing on the CPU */
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
        g3_error("iteration %lld: the training loss is %s; stopping before the update (the "
                 "parameters are those of the previous iteration). Lower "
                 "--lr, raise the warm-up, or check the data", (long long)iteration,
                 isnan(loss) ? "NaN" : "infinite");
        return G3_ERR_NUMERIC;
    }
    st = g3_train_adamw_step(opt, lr, &norm);
    *grad_norm_p = norm;
    if (st == G3_ERR_NUMERIC)
        g3_error("iteration %lld: the gradient norm is %s (loss %.4f); stopping before the "
                 "update (the parameters are those of the previous iteration). Lower --lr or keep --clip-grad on", (long long)iteration,
                 isnan(norm) ? "NaN" : "infinite", loss);
    return st;
}
