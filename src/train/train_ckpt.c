/* gpt3d train: the training state in and out of checkpoints (src/ckpt).  See train_ckpt.h.
 * Glossary: TP, PP, DP sizes; tp, pp, dp a rank's coordinates; "range" = a range of the flat
 * parameter buffer whose Adam moments this rank holds. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "train/train_ckpt.h"
#include "data/tokid.h"

#define G3_TCK_MAX_RANGES G3_PAR_OPTIM_RANGES_MAX

/* Host copies of what is saved or loaded (the backend's memory may be a device's). */
typedef struct {
    g3_par_optim_range_t r[G3_TCK_MAX_RANGES];   /* backend pointers                      */
    float   *hm[G3_TCK_MAX_RANGES];               /* (end - begin,) host copies of m       */
    float   *hv[G3_TCK_MAX_RANGES];               /* (end - begin,) host copies of v       */
    int      n;
    int64_t *step;
    float   *hw;                                  /* (numel,) host copy of the parameters */
    int      stage_first[1025];                   /* PP + 1 layer boundaries               */
    g3_ckpt_layout_t layout;
} g3_tck_t;

static void g3_tck_free(g3_tck_t *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->hm[i]);
        free(t->hv[i]);
    }
    free(t->hw);
}

/* The world's all-reduce (min) for the library's agreements. */
static g3_status_t g3_tck_allreduce_min(void *ctx, int *value)
{
    double d = -(double)*value;
    g3_status_t st = g3_par_world_allreduce((g3_par_t *)ctx, &d, 1, 1);
    if (st == G3_OK)
        *value = (int)-d;
    return st;
}

/* Fill t: the layout, the optimizer ranges, host copies of parameters and moments. */
static g3_status_t g3_tck_init(const g3_train_ckpt_t *c, g3_tck_t *t)
{
    const g3_train_config_t *cfg = c->cfg;
    const g3_gpt_config_t *mc = &c->model->cfg;
    g3_backend_t *be = c->model->be;
    g3_status_t st;

    memset(t, 0, sizeof(*t));
    if (mc->pp_size > 1024) {
        g3_error("checkpoints: pipeline size %d is larger than the 1024 stages supported",
                 mc->pp_size);
        return G3_ERR_UNSUPPORTED;
    }
    t->layout.tp_size = mc->tp_size;
    t->layout.pp_size = mc->pp_size;
    t->layout.dp_size = cfg->dp_size > 0 ? cfg->dp_size : 1;
    t->layout.tp = mc->tp_rank;
    t->layout.pp = mc->pp_rank;
    t->layout.dp = cfg->dp_rank;
    t->layout.num_layers = mc->num_layers;
    for (int s = 0; s < mc->pp_size; s++) {
        int b, e;
        if (!g3_gpt_stage_layers(mc, s, &b, &e)) {
            g3_error("checkpoints: cannot split %d layers over %d stages", mc->num_layers,
                     mc->pp_size);
            return G3_ERR_INVALID_ARG;
        }
        t->stage_first[s] = b;
        t->stage_first[s + 1] = e;
    }
    t->layout.stage_first_layer = t->stage_first;
    t->layout.vpp_size = mc->virtual_pp_size;   /* interleaved: chunks of every stage */

    if (c->eng)
        t->n = g3_par_engine_optim_ranges(c->eng, t->r, &t->step);
    /* else the model alone (gpt3d eval, generate), loaded with no_load_optim */
    st = be->ops->sync(be);
    if (st != G3_OK)
        return st;
    t->hw = malloc(sizeof(float) * c->model->numel);
    if (!t->hw)
        goto err_no_memory;
    be->ops->download(be, t->hw, c->model->w, sizeof(float) * c->model->numel);
    for (int i = 0; i < t->n; i++) {
        size_t len = t->r[i].end - t->r[i].begin;
        t->hm[i] = malloc(sizeof(float) * (len ? len : 1));
        t->hv[i] = malloc(sizeof(float) * (len ? len : 1));
        if (!t->hm[i] || !t->hv[i])
            goto err_no_memory;
        be->ops->download(be, t->hm[i], t->r[i].m, sizeof(float) * len);
        be->ops->download(be, t->hv[i], t->r[i].v, sizeof(float) * len);
    }
    return G3_OK;

err_no_memory:
    g3_error("checkpoints: out of memory for the host copy of the training state (%.1f MiB of "
             "parameters and as much again per Adam moment)",
             (double)c->model->numel * 4.0 / 1048576.0);
    g3_tck_free(t);
    return G3_ERR_NO_MEMORY;
}

/* The checkpoint description of parameter p under `group` ("model", "optim/exp_avg", ...). */
static void g3_tck_tensor(const g3_gpt_t *m, const g3_gpt_param_t *p, const char *group,
                          char *name, size_t len, g3_ckpt_tensor_t *t)
{
    int layer = p->layer == -1 ? G3_CKPT_PP_FIRST : p->layer == -2 ? G3_CKPT_PP_LAST : p->layer;

    snprintf(name, len, "%s/%s", group, p->name);
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->kind = strcmp(group, "model") == 0 ? G3_CKPT_MODEL : G3_CKPT_OPTIM;
    t->dtype = G3_CKPT_F32;
    t->ndim = p->ndim;
    for (int d = 0; d < p->ndim; d++)
        t->shape[d] = p->shape[d];
    t->rule = p->tp_dim < 0 ? g3_ckpt_rule_replicated(layer)
                            : g3_ckpt_rule_split(p->tp_dim, p->tp_parts, layer);
    if (strcmp(p->name, "embedding.word_embeddings.weight") == 0) {
        t->rule.pad_dim = 0;
        t->rule.unpadded = m->cfg.vocab_size;
    }
}

/* Describe this rank's state: every parameter it holds, and the Adam moments of the ranges
 * it holds (saving: only those it owns, so each element is written once). */
static g3_status_t g3_tck_describe(const g3_train_ckpt_t *c, g3_tck_t *t, int saving,
                                   int with_optim, g3_ckpt_state_t **state_p)
{
    const g3_gpt_t *m = c->model;
    const g3_gpt_config_t *mc = &m->cfg;
    g3_ckpt_state_t *state = NULL;
    char name[G3_CKPT_NAME_MAX];
    g3_ckpt_tensor_t ten;
    g3_status_t st;

    st = g3_ckpt_state_init(&t->layout, &state);
    if (st != G3_OK)
        return st;
    for (int i = 0; i < m->nparams && st == G3_OK; i++) {
        const g3_gpt_param_t *p = &m->params[i];
        g3_tck_tensor(m, p, "model", name, sizeof(name), &ten);
        st = g3_ckpt_state_add_local(state, &ten, mc->tp_rank, mc->tp_size, t->hw + p->offset);
    }
    for (int r = 0; with_optim && r < t->n && st == G3_OK; r++) {
        const g3_par_optim_range_t *rg = &t->r[r];
        /* A range this rank holds but does not own (plain data parallelism: every DP rank
         * has the moments, DP rank 0 writes them) is described with no elements, so that
         * the rank still writes its optimizer file, as the checkpoint protocol requires. */
        int empty = saving && !rg->owner;
        for (int i = 0; i < m->nparams && st == G3_OK; i++) {
            const g3_gpt_param_t *p = &m->params[i];
            size_t lo = p->offset > rg->begin ? p->offset : rg->begin;
            size_t hi = p->offset + p->numel < rg->end ? p->offset + p->numel : rg->end;
            if (lo >= hi)
                continue;   /* the range does not cover p (or only its alignment gap) */
            int64_t count = empty ? 0 : (int64_t)(hi - lo);
            g3_tck_tensor(m, p, "optim/exp_avg", name, sizeof(name), &ten);
            st = g3_ckpt_state_add_local_flat(state, &ten, mc->tp_rank, mc->tp_size,
                                              (int64_t)(lo - p->offset), count,
                                              t->hm[r] + (lo - rg->begin));
            if (st != G3_OK)
                break;
            g3_tck_tensor(m, p, "optim/exp_avg_sq", name, sizeof(name), &ten);
            st = g3_ckpt_state_add_local_flat(state, &ten, mc->tp_rank, mc->tp_size,
                                              (int64_t)(lo - p->offset), count,
                                              t->hv[r] + (lo - rg->begin));
        }
    }
    if (st != G3_OK) {
        g3_ckpt_state_free(state);
        return st;
    }
    *state_p = state;
    return G3_OK;
}

/* The whole state to save after `iteration`: the tensors (host copies in t) and the scalars. */
static g3_status_t g3_tck_state(const g3_train_ckpt_t *c, g3_tck_t *t, int64_t iteration,
                                int64_t consumed_samples, int64_t gbs, double lr,
                                g3_ckpt_state_t **state_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL;
    int64_t seed = (int64_t)c->model->cfg.seed, T = c->model->cfg.seq_length;
    int64_t sched[1] = { consumed_samples };
    int64_t ramp[2] = { gbs, consumed_samples };
    int64_t sampler[2] = { consumed_samples, seed };
    g3_status_t st;

    st = g3_tck_describe(c, t, 1, !cfg->no_save_optim, &state);
    if (st != G3_OK)
        return st;
    g3_ckpt_state_set_progress(state, iteration, consumed_samples, consumed_samples * T);
    if (cfg->config_text)
        st = g3_ckpt_state_set_config(state, cfg->config_text);
    if (st == G3_OK)
        st = g3_ckpt_state_set_i64(state, "optimizer.step", t->step, 1);
    if (st == G3_OK)
        st = g3_ckpt_state_set_f64(state, "lr", &lr, 1);
    if (st == G3_OK)
        st = g3_ckpt_state_set_i64(state, "lr_scheduler", sched, 1);
    if (st == G3_OK)
        st = g3_ckpt_state_set_i64(state, "batch_rampup", ramp, 2);
    if (st == G3_OK)
        st = g3_ckpt_state_set_i64(state, "rng", &seed, 1);
    if (st == G3_OK)
        st = g3_ckpt_state_set_i64(state, "data_sampler", sampler, 2);
    if (st == G3_OK && cfg->tokenizer)   /* which tokenizer files the model learnt ids of */
        st = g3_ckpt_state_set_str(state, "tokenizer", cfg->tokenizer);
    if (st != G3_OK) {
        g3_ckpt_state_free(state);
        return st;
    }
    *state_p = state;
    return G3_OK;
}

static void g3_tck_save_opts(const g3_train_config_t *cfg, g3_ckpt_save_opts_t *so)
{
    memset(so, 0, sizeof(*so));
    so->save_id = cfg->save_id;
    so->keep_last = cfg->keep_last;
    so->no_save_optim = cfg->no_save_optim;
}

g3_status_t g3_train_ckpt_save(const g3_train_ckpt_t *c, int64_t iteration,
                               int64_t consumed_samples, int64_t gbs, double lr)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL;
    g3_ckpt_save_opts_t so;
    g3_ckpt_comm_t comm = { cfg->par, g3_tck_allreduce_min };
    g3_tck_t t;
    g3_status_t st;

    st = g3_tck_init(c, &t);
    if (st != G3_OK)
        return st;
    st = g3_tck_state(c, &t, iteration, consumed_samples, gbs, lr, &state);
    if (st == G3_OK) {
        g3_tck_save_opts(cfg, &so);
        st = g3_ckpt_save(cfg->save_dir, state, &so, cfg->par ? &comm : NULL);
        g3_ckpt_state_free(state);
    }
    g3_tck_free(&t);
    return st;
}

/* ---- asynchronous saves ------------------------------------------------------------------ */

struct g3_train_ckpt_async {
    g3_ckpt_async_t *writer;
    int64_t          iteration;
    int              root;       /* this rank commits (tp = pp = dp = 0) */
};

/* RET: G3_OK with *ok the minimum over the world (single rank: unchanged). */
static g3_status_t g3_tck_agree(const g3_train_config_t *cfg, int *ok)
{
    return cfg->par ? g3_tck_allreduce_min(cfg->par, ok) : G3_OK;
}

g3_status_t g3_train_ckpt_save_async(const g3_train_ckpt_t *c, int64_t iteration,
                                     int64_t consumed_samples, int64_t gbs, double lr,
                                     g3_train_ckpt_async_t **pending_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL, *snap = NULL;
    g3_train_ckpt_async_t *a;
    g3_ckpt_save_opts_t so;
    g3_tck_t t;
    int ok, root;
    g3_status_t st = G3_OK, cst;

    root = c->model->cfg.tp_rank == 0 && c->model->cfg.pp_rank == 0 && cfg->dp_rank == 0;
    g3_tck_save_opts(cfg, &so);
    if (root)
        st = g3_ckpt_save_prepare(cfg->save_dir, iteration, &so);
    ok = st == G3_OK;
    if ((cst = g3_tck_agree(cfg, &ok)) != G3_OK)
        return cst;
    if (!ok)
        return st != G3_OK ? st : G3_ERR_IO;
    /* the host copy is the stall; the writer thread owns the snapshot */
    st = g3_tck_init(c, &t);
    if (st == G3_OK) {
        st = g3_tck_state(c, &t, iteration, consumed_samples, gbs, lr, &state);
        if (st == G3_OK)
            st = g3_ckpt_state_snapshot(state, &snap);
        g3_ckpt_state_free(state);
        g3_tck_free(&t);
    }
    a = calloc(1, sizeof(*a));
    if (st == G3_OK && !a) {
        g3_error("checkpoints: out of memory starting an asynchronous save");
        st = G3_ERR_NO_MEMORY;
    }
    if (st == G3_OK) {
        st = g3_ckpt_async_start(cfg->save_dir, snap, &so, &a->writer);
        snap = NULL;   /* owned by the writer now, even on failure */
    }
    ok = st == G3_OK;
    if ((cst = g3_tck_agree(cfg, &ok)) != G3_OK)
        st = cst;
    else if (!ok && st == G3_OK)
        st = G3_ERR_IO;   /* another rank failed; it said why */
    if (st != G3_OK) {
        if (a && a->writer) {
            g3_ckpt_async_wait(a->writer, NULL);
            g3_ckpt_async_free(a->writer);
        }
        free(a);
        g3_ckpt_state_free(snap);
        if (root)
            g3_ckpt_save_abort(cfg->save_dir, iteration, &so);
        return st;
    }
    a->iteration = iteration;
    a->root = root;
    *pending_p = a;
    return G3_OK;
}

g3_status_t g3_train_ckpt_async_finish(const g3_train_ckpt_t *c, g3_train_ckpt_async_t **pending_p,
                                       int block, int64_t *iteration_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_train_ckpt_async_t *a = *pending_p;
    const g3_ckpt_state_t *snap = NULL;
    g3_ckpt_save_opts_t so;
    int ok;
    g3_status_t st, cst;

    *iteration_p = -1;
    if (!a)
        return G3_OK;
    if (!block) {   /* finish only when every rank's writer is done */
        ok = g3_ckpt_async_done(a->writer);
        if ((cst = g3_tck_agree(cfg, &ok)) != G3_OK)
            return cst;
        if (!ok)
            return G3_OK;
    }
    g3_tck_save_opts(cfg, &so);
    st = g3_ckpt_async_wait(a->writer, &snap);
    ok = st == G3_OK;
    if ((cst = g3_tck_agree(cfg, &ok)) != G3_OK) {
        st = cst;
        goto out_free;
    }
    if (!ok) {
        if (a->root)
            g3_ckpt_save_abort(cfg->save_dir, a->iteration, &so);
        st = st != G3_OK ? st : G3_ERR_IO;
        goto out_free;
    }
    if (a->root) {
        st = g3_ckpt_commit(cfg->save_dir, snap, &so);
        if (st != G3_OK)
            g3_ckpt_save_abort(cfg->save_dir, a->iteration, &so);
    }
    ok = st == G3_OK;
    if ((cst = g3_tck_agree(cfg, &ok)) != G3_OK)
        st = cst;
    else if (!ok && st == G3_OK)
        st = G3_ERR_IO;
    if (st == G3_OK)
        *iteration_p = a->iteration;
out_free:
    g3_ckpt_async_free(a->writer);
    free(a);
    *pending_p = NULL;
    return st;
}

void g3_train_ckpt_async_drop(g3_train_ckpt_async_t *pending)
{
    if (!pending)
        return;
    g3_ckpt_async_wait(pending->writer, NULL);
    g3_ckpt_async_free(pending->writer);
    free(pending);
}

/* RET: 1 when dir holds no checkpoint at all (no `latest`, no index, no iter_ directory). */
static int g3_tck_empty(const char *dir)
{
    char p[PATH_MAX];
    struct stat sb;
    int64_t *iters = NULL;
    int n = 0;

    if (stat(dir, &sb) != 0 && errno == ENOENT)
        return 1;
    snprintf(p, sizeof(p), "%s/latest", dir);
    if (lstat(p, &sb) == 0)
        return 0;        /* whatever it is: the load says what is wrong with it */
    snprintf(p, sizeof(p), "%s/index.h5", dir);
    if (stat(p, &sb) == 0)
        return 0;
    if (g3_ckpt_list(dir, &iters, &n) == G3_OK && n > 0) {
        free(iters);
        return 0;
    }
    free(iters);
    return 1;
}

/* The checkpoint's recorded tokenizer files against the run's (data/tokid.h); a checkpoint
 * without a record (saved by an older gpt3d) is logged as unchecked. */
static g3_status_t g3_tck_check_tokenizer(const g3_train_config_t *cfg, g3_ckpt_reader_t *r)
{
    size_t size = 3 * G3_TOKID_PATH_MAX + 1024;
    char *text, what[G3_TOKID_PATH_MAX + 32];
    g3_tokid_t made, run;
    g3_status_t st;

    if (!g3_ckpt_reader_has(r, "tokenizer")) {
        g3_info("checkpoint %s records no tokenizer (saved by an older gpt3d): its tokenizer cannot be checked against --vocab-file/--merge-file",
                g3_ckpt_reader_path(r));
        return G3_OK;
    }
    text = malloc(size);
    if (!text)
        return G3_ERR_NO_MEMORY;
    snprintf(what, sizeof(what), "checkpoint %s", g3_ckpt_reader_path(r));
    st = g3_ckpt_reader_get_str(r, "tokenizer", text, size);
    if (st == G3_OK)
        st = g3_tokid_from_json(text, strlen(text), what, &made);
    if (st == G3_OK)
        st = g3_tokid_from_json(cfg->tokenizer, strlen(cfg->tokenizer), "the run's tokenizer", &run);
    if (st == G3_OK)
        st = g3_tokid_check(&made, &run, what, cfg->allow_tokenizer_mismatch);
    free(text);
    return st;
}

g3_status_t g3_train_ckpt_load(const g3_train_ckpt_t *c, int64_t *iteration_p,
                               int64_t *consumed_p, int *loaded_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_backend_t *be = c->model->be;
    g3_ckpt_state_t *state = NULL;
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_load_opts_t lo;
    g3_ckpt_comm_t comm = { cfg->par, g3_tck_allreduce_min };
    g3_tck_t t;
    int64_t step = 0, seed = -1;
    int fresh_optim;
    g3_status_t st;

    *iteration_p = 0;
    *consumed_p = 0;
    *loaded_p = 0;
    if (g3_tck_empty(cfg->load_dir)) {
        g3_info("--load %s: no checkpoint there yet; training starts from the initial weights",
                cfg->load_dir);
        return G3_OK;
    }
    st = g3_tck_init(c, &t);
    if (st != G3_OK)
        return st;
    st = g3_tck_describe(c, &t, 0, !cfg->no_load_optim, &state);
    if (st != G3_OK)
        goto out_free_copies;
    memset(&lo, 0, sizeof(lo));
    lo.fallback = cfg->load_fallback;
    lo.no_load_optim = cfg->no_load_optim;
    lo.optim_optional = 1;   /* a --no-save-optim checkpoint resumes with a fresh optimizer */
    lo.config_text = cfg->config_text;
    st = g3_ckpt_load(cfg->load_dir, state, &lo, cfg->par ? &comm : NULL, &r);
    if (st != G3_OK)
        goto out_free_state;
    fresh_optim = cfg->no_load_optim || !g3_ckpt_reader_has_optim(r);
    if (!cfg->no_load_optim && fresh_optim && (!cfg->par || g3_par_layout(cfg->par)->world_rank == 0))
        g3_info("checkpoint %s holds no optimizer state (saved with --no-save-optim): resuming with fresh Adam moments and step 0", g3_ckpt_reader_path(r));
    if (!fresh_optim) {
        st = g3_ckpt_reader_get_i64(r, "optimizer.step", &step, 1);
        if (st != G3_OK)
            goto out_close;
    }
    if (cfg->tokenizer) {
        st = g3_tck_check_tokenizer(cfg, r);
        if (st != G3_OK)
            goto out_close;
    }
    /* The index's consumed_samples decides the schedule and the data order: it must agree
     * with the checksummed copies under /state (a version-1 index has no checksum of its own). */
    {
        static const char *const keys[] = { "data_sampler", "lr_scheduler" };
        int64_t cs = g3_ckpt_reader_consumed_samples(r), v[2] = { 0, 0 };
        for (int k = 0; k < 2; k++) {
            int n = !strcmp(keys[k], "data_sampler") ? 2 : 1;
            if (!g3_ckpt_reader_has(r, keys[k]) || g3_ckpt_reader_get_i64(r, keys[k], v, n) != G3_OK)
                continue;
            if (v[0] != cs) {
                g3_error("checkpoint %s: consumed_samples %lld in index.h5 disagrees with state/%s (%lld consumed samples): the index was altered; load another checkpoint (--load DIR/iter_NNNNNNN) or restore it", g3_ckpt_reader_path(r), (long long)cs, keys[k], (long long)v[0]);
                st = G3_ERR_FORMAT;
                goto out_close;
            }
        }
    }
    if (g3_ckpt_reader_has(r, "rng") && g3_ckpt_reader_get_i64(r, "rng", &seed, 1) == G3_OK &&
        seed != (int64_t)c->model->cfg.seed)
        g3_warn("checkpoint %s was trained with --seed %lld, this run has --seed %llu: the data "
                "order from here on differs from the original run's", g3_ckpt_reader_path(r),
                (long long)seed, (unsigned long long)c->model->cfg.seed);
    /* into the backend's buffers */
    be->ops->upload(be, c->model->w, t.hw, sizeof(float) * c->model->numel);
    g3_gpt_params_refresh(c->model);   /* the passes' bf16 copy on CUDA */
    for (int i = 0; i < t.n && !fresh_optim; i++) {
        size_t len = t.r[i].end - t.r[i].begin;
        be->ops->upload(be, t.r[i].m, t.hm[i], sizeof(float) * len);
        be->ops->upload(be, t.r[i].v, t.hv[i], sizeof(float) * len);
    }
    st = be->ops->sync(be);
    if (st != G3_OK)
        goto out_close;
    if (t.step)
        *t.step = fresh_optim ? 0 : step;
    *iteration_p = g3_ckpt_reader_iteration(r);
    *consumed_p = g3_ckpt_reader_consumed_samples(r);
    *loaded_p = 1;
out_close:
    g3_ckpt_reader_close(r);
out_free_state:
    g3_ckpt_state_free(state);
out_free_copies:
    g3_tck_free(&t);
    return st;
}
