/* gpt3d parallel: a rank's model and optimizer state in and out of checkpoints by global
 * offsets.  See par_ckpt.h.
 * Glossary: TP, PP, DP sizes; tp, pp, dp a rank's coordinates; "range" = a range of the flat
 * parameter buffer whose Adam moments this rank holds. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "parallel/par_ckpt.h"

void g3_par_ckpt_free(g3_par_ckpt_t *t)
{
    g3_ckpt_state_free(t->state);
    t->state = NULL;
    for (int i = 0; i < t->n; i++) {
        if (!t->staged) {
            free(t->hm[i]);
            free(t->hv[i]);
        }
        t->hm[i] = t->hv[i] = NULL;
    }
    t->n = 0;
    if (!t->staged) {
        free(t->hw);
        free(t->hs);
    }
    t->hw = NULL;   /* a second call frees nothing */
    t->hs = NULL;
}

/* RET: the floats that hold model's linear layers' backend state (0 when it has none). */
static size_t g3_par_ckpt_lstate_floats(const g3_gpt_t *model)
{
    return (model->lstate_bytes + sizeof(float) - 1) / sizeof(float);
}

size_t g3_par_ckpt_stage_floats(const g3_gpt_t *model, g3_par_engine_t *eng)
{
    g3_par_optim_range_t r[G3_PAR_OPTIM_RANGES_MAX];
    int64_t *step;
    size_t n = model->numel + g3_par_ckpt_lstate_floats(model);
    int nr = eng ? g3_par_engine_optim_ranges(eng, r, &step) : 0;

    for (int i = 0; i < nr; i++)
        n += 2 * (r[i].end - r[i].begin);
    return n;
}

/* The background allocation: the thread touches only this struct (and the backend's
 * host_alloc, safe from any thread); g3_par_ckpt_stage_join reads it after pthread_join. */
struct g3_par_ckpt_stage_bg {
    pthread_t     thread;
    g3_backend_t *be;
    size_t        floats;
    void         *buf;       /* OUT: the memory, or NULL  */
    g3_status_t   st;        /* OUT                       */
    double        alloc_s;   /* OUT: the allocation's time */
};

static void *g3_par_ckpt_stage_main(void *arg)
{
    struct g3_par_ckpt_stage_bg *bg = arg;
    double t0 = g3_clock_now();

    bg->st = bg->be->ops->host_alloc(bg->be, bg->floats * sizeof(float), &bg->buf);
    if (bg->st != G3_OK)
        bg->buf = NULL;
    bg->alloc_s = g3_clock_now() - t0;
    return NULL;
}

/* s takes buf (`floats` floats): be's host memory, or plain (be NULL), allocated in alloc_s
 * seconds, in the background or not */
static void g3_par_ckpt_stage_take(g3_par_ckpt_stage_t *s, g3_backend_t *be, void *buf,
                                   size_t floats, double alloc_s, int background)
{
    s->be = be;
    s->buf = buf;
    s->floats = floats;
    s->alloc_s = alloc_s;
    s->background = background;
}

/* Wait for the background thread (if any) and take what it made.  RET: its status. */
static g3_status_t g3_par_ckpt_stage_join(g3_par_ckpt_stage_t *s)
{
    struct g3_par_ckpt_stage_bg *bg = s->bg;
    g3_status_t st;

    if (!bg)
        return G3_OK;
    pthread_join(bg->thread, NULL);
    s->bg = NULL;
    st = bg->st;
    if (st == G3_OK)
        g3_par_ckpt_stage_take(s, bg->be, bg->buf, bg->floats, bg->alloc_s, 1);
    free(bg);
    return st;
}

static void g3_par_ckpt_stage_release(g3_par_ckpt_stage_t *s)
{
    if (!s->buf)
        return;
    if (s->be)
        s->be->ops->host_free(s->be, s->buf);
    else
        free(s->buf);
    s->buf = NULL;
    s->floats = 0;
}

void g3_par_ckpt_stage_free(g3_par_ckpt_stage_t *s)
{
    if (!s)
        return;
    g3_par_ckpt_stage_join(s);   /* a failure: nothing to free (said by the backend) */
    g3_par_ckpt_stage_release(s);
}

int g3_par_ckpt_stage_scheduled(const g3_par_ckpt_stage_t *s)
{
    return s && (s->buf || s->bg);
}

/* Give s `floats` of plain memory.  RET: G3_ERR_NO_MEMORY (not logged). */
static g3_status_t g3_par_ckpt_stage_plain(g3_par_ckpt_stage_t *s, size_t floats)
{
    double t0 = g3_clock_now();
    void *p = malloc(floats * sizeof(float));

    if (!p)
        return G3_ERR_NO_MEMORY;
    g3_par_ckpt_stage_take(s, NULL, p, floats, g3_clock_now() - t0, 0);
    return G3_OK;
}

static int g3_par_ckpt_stage_pinned(const g3_backend_t *be)
{
    return be->ops->host_alloc && be->ops->host_free;
}

void g3_par_ckpt_stage_start(g3_par_ckpt_stage_t *s, g3_backend_t *be, size_t floats)
{
    struct g3_par_ckpt_stage_bg *bg;
    int rc;

    if (s->bg || (s->buf && s->floats >= floats))
        return;
    g3_par_ckpt_stage_release(s);
    if (!g3_par_ckpt_stage_pinned(be)) {   /* lazy: the first use faults it in */
        if (g3_par_ckpt_stage_plain(s, floats) != G3_OK)
            g3_warn("checkpoints: cannot allocate the %.1f MiB host staging area for the saves yet; the first save tries again",
                    (double)floats * 4.0 / 1048576.0);
        return;
    }
    bg = calloc(1, sizeof(*bg));
    if (!bg) {
        g3_warn("checkpoints: out of memory starting the staging area's allocation; the first save allocates it");
        return;
    }
    bg->be = be;
    bg->floats = floats;
    rc = pthread_create(&bg->thread, NULL, g3_par_ckpt_stage_main, bg);
    if (rc != 0) {
        g3_warn("checkpoints: cannot start a thread to allocate the host staging area in the background (%s); the first save allocates it",
                strerror(rc));
        free(bg);
        return;
    }
    s->bg = bg;
}

g3_status_t g3_par_ckpt_stage_ready(g3_par_ckpt_stage_t *s, g3_backend_t *be, size_t floats)
{
    double t0;
    void *p = NULL;
    int failed = 0, pinned = g3_par_ckpt_stage_pinned(be) && !be->host_memory;

    /* a thread in flight: its memory, or its failure (the backend said why) */
    if (s->bg && g3_par_ckpt_stage_join(s) != G3_OK)
        failed = 1;
    if (!failed && s->buf && s->floats >= floats)
        return G3_OK;
    g3_par_ckpt_stage_release(s);
    if (!failed && !s->plain && g3_par_ckpt_stage_pinned(be)) {
        t0 = g3_clock_now();
        if (be->ops->host_alloc(be, floats * sizeof(float), &p) == G3_OK) {
            g3_par_ckpt_stage_take(s, be, p, floats, g3_clock_now() - t0, 0);
            return G3_OK;
        }
        failed = 1;
    }
    /* plain memory: the backend has no host_alloc, or instead of page-locked memory that
     * cannot be had (said once; a CPU backend's host_alloc is plain memory already) */
    if ((!failed || pinned) && g3_par_ckpt_stage_plain(s, floats) == G3_OK) {
        if (failed && !s->plain)
            g3_warn("checkpoints: no page-locked memory for the %.1f MiB host staging area (see above): the saves copy into plain memory instead, more slowly; raise the locked-memory limit (ulimit -l) or free host memory",
                    (double)floats * 4.0 / 1048576.0);
        s->plain = s->plain || failed;
        return G3_OK;
    }
    g3_error("checkpoints: cannot allocate the %.1f MiB host staging area for saving this rank's parameters and Adam moments; free host memory, or save less often",
             (double)floats * 4.0 / 1048576.0);
    return G3_ERR_NO_MEMORY;
}

g3_status_t g3_par_ckpt_allreduce_min(void *ctx, int *value)
{
    double d = -(double)*value;
    g3_status_t st = g3_par_world_allreduce((g3_par_t *)ctx, &d, 1, 1);
    if (st == G3_OK)
        *value = (int)-d;
    return st;
}

g3_status_t g3_par_ckpt_init(g3_par_ckpt_t *t, g3_gpt_t *model, g3_par_engine_t *eng,
                             int dp_size, int dp_rank)
{
    return g3_par_ckpt_init_staged(t, model, eng, dp_size, dp_rank, NULL, NULL);
}

g3_status_t g3_par_ckpt_init_staged(g3_par_ckpt_t *t, g3_gpt_t *model, g3_par_engine_t *eng,
                                    int dp_size, int dp_rank, g3_par_ckpt_stage_t *stage,
                                    g3_ckpt_timing_t *tm)
{
    const g3_gpt_config_t *mc = &model->cfg;
    g3_backend_t *be = model->be;
    double t0;
    g3_status_t st;

    memset(t, 0, sizeof(*t));
    if (mc->pp_size > 1024) {
        g3_error("checkpoints: pipeline size %d is larger than the 1024 stages supported",
                 mc->pp_size);
        return G3_ERR_UNSUPPORTED;
    }
    t->layout.tp_size = mc->tp_size;
    t->layout.pp_size = mc->pp_size;
    t->layout.dp_size = dp_size > 0 ? dp_size : 1;
    t->layout.tp = mc->tp_rank;
    t->layout.pp = mc->pp_rank;
    t->layout.dp = dp_rank;
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

    if (eng)
        t->n = g3_par_engine_optim_ranges(eng, t->r, &t->step);
    /* else the model alone (gpt3d eval, generate), loaded with no_load_optim */
    t0 = g3_ckpt_timing_now(tm);
    if (stage) {   /* the copies side by side in the stage: [w | state | m0 v0 | m1 v1 | ...] */
        float *p;
        st = g3_par_ckpt_stage_ready(stage, be, g3_par_ckpt_stage_floats(model, eng));
        if (st != G3_OK)
            return st;
        t->staged = 1;
        p = stage->buf;
        t->hw = p;
        p += model->numel;
        t->hs = model->lstate_bytes ? (uint8_t *)p : NULL;
        p += g3_par_ckpt_lstate_floats(model);
        for (int i = 0; i < t->n; i++) {
            size_t len = t->r[i].end - t->r[i].begin;
            t->hm[i] = p;
            t->hv[i] = p + len;
            p += 2 * len;
        }
    } else {
        if (!(t->hw = malloc(sizeof(float) * model->numel)))
            goto err_no_memory;
        if (model->lstate_bytes && !(t->hs = malloc(model->lstate_bytes)))
            goto err_no_memory;
        for (int i = 0; i < t->n; i++) {
            size_t len = t->r[i].end - t->r[i].begin;
            t->hm[i] = malloc(sizeof(float) * (len ? len : 1));
            t->hv[i] = malloc(sizeof(float) * (len ? len : 1));
            if (!t->hm[i] || !t->hv[i])
                goto err_no_memory;
        }
    }
    g3_ckpt_timing_add(tm, G3_CKPT_T_STAGE_ALLOC, &t0);
    st = be->ops->sync(be);
    if (st != G3_OK)
        goto err;
    be->ops->download(be, t->hw, model->w, sizeof(float) * model->numel);
    if (t->hs)
        be->ops->download(be, t->hs, model->lstate, model->lstate_bytes);
    for (int i = 0; i < t->n; i++) {
        size_t len = t->r[i].end - t->r[i].begin;
        be->ops->download(be, t->hm[i], t->r[i].m, sizeof(float) * len);
        be->ops->download(be, t->hv[i], t->r[i].v, sizeof(float) * len);
    }
    st = be->ops->sync(be);
    g3_ckpt_timing_add(tm, G3_CKPT_T_D2H, &t0);
    if (st != G3_OK)
        goto err;
    return G3_OK;

err_no_memory:
    g3_error(
        "checkpoints: out of memory for the host copy of the training state (%.1f MiB of parameters and as much again per Adam moment)",
        (double)model->numel * 4.0 / 1048576.0);
    st = G3_ERR_NO_MEMORY;
err:
    g3_par_ckpt_free(t);
    return st;
}

/* The checkpoint description of parameter p under `group` ("model", "optim/exp_avg", ...). */
static void g3_par_ckpt_tensor(const g3_gpt_t *m, const g3_gpt_param_t *p, const char *group,
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

/* The checkpoint description of linear state ls: backend_state/<name>, u8 (TP, bytes), row
 * r TP rank r's, in the file of the stage that holds its layer; optional on load. */
static void g3_par_ckpt_lstate_tensor(const g3_gpt_t *m, const g3_gpt_lstate_t *ls, char *name,
                                      size_t len, g3_ckpt_tensor_t *t)
{
    snprintf(name, len, "backend_state/%s", ls->name);
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->kind = G3_CKPT_MODEL;
    t->dtype = G3_CKPT_U8;
    t->ndim = 2;
    t->shape[0] = m->cfg.tp_size;
    t->shape[1] = (int64_t)ls->bytes;
    t->rule = g3_ckpt_rule_split(0, 1, ls->layer);
    t->optional = 1;
}

/* Add the linear layers' backend states that have bytes to state (host copies in t->hs). */
static g3_status_t g3_par_ckpt_describe_lstates(const g3_par_ckpt_t *t, const g3_gpt_t *m,
                                                g3_ckpt_state_t *state)
{
    char name[G3_CKPT_NAME_MAX];
    g3_ckpt_tensor_t ten;
    g3_status_t st = G3_OK;

    for (int i = 0; i < m->nlstates && st == G3_OK; i++) {
        const g3_gpt_lstate_t *ls = &m->lstates[i];
        if (ls->bytes == 0)
            continue;   /* no dataset: a checkpoint of a stateless kind is as before */
        g3_par_ckpt_lstate_tensor(m, ls, name, sizeof(name), &ten);
        st = g3_ckpt_state_add_local(state, &ten, m->cfg.tp_rank, m->cfg.tp_size,
                                     t->hs + ls->offset);
    }
    return st;
}

g3_status_t g3_par_ckpt_describe(const g3_par_ckpt_t *t, const g3_gpt_t *m, int saving,
                                 int with_optim, g3_ckpt_state_t **state_p)
{
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
        g3_par_ckpt_tensor(m, p, "model", name, sizeof(name), &ten);
        st = g3_ckpt_state_add_local(state, &ten, mc->tp_rank, mc->tp_size, t->hw + p->offset);
    }
    if (st == G3_OK && t->hs)
        st = g3_par_ckpt_describe_lstates(t, m, state);
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
            g3_par_ckpt_tensor(m, p, "optim/exp_avg", name, sizeof(name), &ten);
            st = g3_ckpt_state_add_local_flat(state, &ten, mc->tp_rank, mc->tp_size,
                                              (int64_t)(lo - p->offset), count,
                                              t->hm[r] + (lo - rg->begin));
            if (st != G3_OK)
                break;
            g3_par_ckpt_tensor(m, p, "optim/exp_avg_sq", name, sizeof(name), &ten);
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

/* The checks of every load (train, eval, generate) on each candidate checkpoint, before
 * and after its tensors are read, so that --load-fallback goes back past a checkpoint they
 * refuse; then the caller's own index checks. */
typedef struct {
    const g3_par_ckpt_t       *t;
    size_t                     numel;        /* parameters in t->hw               */
    int                        with_optim;
    const g3_ckpt_load_opts_t *user;
} g3_par_ckpt_checks_t;

static g3_status_t g3_par_ckpt_check_index(void *ctx, g3_ckpt_reader_t *r, int *final)
{
    const g3_par_ckpt_checks_t *c = ctx;
    static const char *const keys[] = { "data_sampler", "lr_scheduler" };
    int64_t cs = g3_ckpt_reader_consumed_samples(r), v[2] = { 0, 0 };

    /* What every gpt3d that writes format version 2 or later records: a checkpoint without
     * it was altered (a version-1 one is older than the record). */
    if (g3_ckpt_reader_version(r) >= 2 && !g3_ckpt_reader_has(r, "rng")) {
        g3_error("checkpoint %s (format version %d) lacks state/rng, which every gpt3d writing that version records: the index was altered; load another checkpoint (--load-fallback)",
                 g3_ckpt_reader_path(r), g3_ckpt_reader_version(r));
        return G3_ERR_FORMAT;
    }
    /* The index's consumed_samples decides the schedule and the data order: it must agree
     * with the checksummed copies under /state (a version-1 index has no checksum of its own). */
    for (int k = 0; k < 2; k++) {
        int n = !strcmp(keys[k], "data_sampler") ? 2 : 1;
        if (!g3_ckpt_reader_has(r, keys[k]) || g3_ckpt_reader_get_i64(r, keys[k], v, n) != G3_OK)
            continue;
        if (v[0] != cs) {
            g3_error("checkpoint %s: consumed_samples %lld in index.h5 disagrees with state/%s (%lld consumed samples): the index was altered; load another checkpoint (--load-fallback, or --load DIR/iter_NNNNNNN) or restore it", g3_ckpt_reader_path(r), (long long)cs, keys[k], (long long)v[0]);
            return G3_ERR_FORMAT;
        }
    }
    return c->user && c->user->check_index ? c->user->check_index(c->user->check_ctx, r, final)
                                           : G3_OK;
}

/* Floats per block of the finite check (64 KiB: in L2 while a thread tests it), and the
 * blocks below which one thread does it all (the threads cost more than they save). */
#define G3_PAR_CKPT_FINITE_BLOCK   16384
#define G3_PAR_CKPT_FINITE_SERIAL  64

/* RET: 1 when the bit pattern is a NaN or an infinity (every exponent bit set). */
static inline uint32_t g3_par_ckpt_bits_nonfinite(const float *x)
{
    uint32_t b;

    memcpy(&b, x, sizeof(b));
    return (b & 0x7f800000u) == 0x7f800000u;
}

/* RET: non-zero when x[0..n) holds a NaN or an infinity.  No branch in the loop: an OR of the
 * tests, which the compiler vectorizes.  x (n,) */
static uint32_t g3_par_ckpt_block_nonfinite(const float *x, size_t n)
{
    uint32_t bad = 0;

#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < n; i++)
        bad |= g3_par_ckpt_bits_nonfinite(x + i);
    return bad;
}

size_t g3_par_ckpt_first_nonfinite(const float *x, size_t n)
{
    const size_t B = G3_PAR_CKPT_FINITE_BLOCK;
    size_t nb = (n + B - 1) / B, first = nb;
    int serial = nb < G3_PAR_CKPT_FINITE_SERIAL;

    /* the first block that holds one: each thread skips its blocks after its own first */
#pragma omp parallel for schedule(static) reduction(min : first) if (!serial)
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * B, len = n - lo < B ? n - lo : B;
        if (b < first && g3_par_ckpt_block_nonfinite(x + lo, len))
            first = b;
    }
    for (size_t i = first * B; i < n; i++)   /* first == nb: none */
        if (g3_par_ckpt_bits_nonfinite(x + i))
            return i;
    return n;
}

const char *g3_par_ckpt_nonfinite(const g3_par_ckpt_t *t, size_t numel, int with_optim,
                                  size_t *at_p)
{
    size_t at = g3_par_ckpt_first_nonfinite(t->hw, numel);

    *at_p = at;
    if (at < numel)
        return "parameters";
    for (int i = 0; with_optim && i < t->n; i++) {
        size_t len = t->r[i].end - t->r[i].begin;
        if ((*at_p = g3_par_ckpt_first_nonfinite(t->hm[i], len)) < len)
            return "Adam first moments";
        if ((*at_p = g3_par_ckpt_first_nonfinite(t->hv[i], len)) < len)
            return "Adam second moments";
    }
    return NULL;
}

static g3_status_t g3_par_ckpt_check_loaded(void *ctx, g3_ckpt_reader_t *r)
{
    const g3_par_ckpt_checks_t *c = ctx;
    size_t at = 0;
    g3_ckpt_timing_t *tm = c->user ? c->user->timing : NULL;
    double t0 = g3_ckpt_timing_now(tm);
    const char *what = g3_par_ckpt_nonfinite(c->t, c->numel, c->with_optim, &at);

    g3_ckpt_timing_add(tm, G3_CKPT_T_VERIFY, &t0);   /* the values' check, beside the CRCs */

    if (what) {
        g3_error("checkpoint %s holds non-finite %s (NaN or infinity; element %zu of this rank's copy): it was saved from a run that had diverged, and resuming it cannot train; load an earlier checkpoint (--load-fallback, or --load DIR/iter_NNNNNNN)",
                 g3_ckpt_reader_path(r), what, at);
        return G3_ERR_FORMAT;
    }
    return c->user && c->user->check_loaded ? c->user->check_loaded(c->user->check_ctx, r)
                                            : G3_OK;
}

g3_status_t g3_par_ckpt_read(g3_par_ckpt_t *t, const g3_gpt_t *model, const char *dir,
                             const g3_ckpt_load_opts_t *lo, g3_par_t *par,
                             g3_ckpt_reader_t **reader_p)
{
    g3_ckpt_comm_t comm = { par, g3_par_ckpt_allreduce_min };
    g3_par_ckpt_checks_t checks = { t, model->numel, !lo->no_load_optim, lo };
    g3_ckpt_load_opts_t o = *lo;
    double t0 = g3_ckpt_timing_now(lo->timing);
    g3_status_t st;

    st = g3_par_ckpt_describe(t, model, 0, !lo->no_load_optim, &t->state);
    g3_ckpt_timing_add(lo->timing, G3_CKPT_T_DESCRIBE, &t0);
    if (st != G3_OK)
        return st;
    o.check_index = g3_par_ckpt_check_index;
    o.check_loaded = g3_par_ckpt_check_loaded;
    o.check_ctx = &checks;
    return g3_ckpt_load(dir, t->state, &o, &comm, reader_p);
}

/* Reset, in the host copy t->hs, the linear states r does not hold as this run has them
 * (absent: saved while their size was 0; or at another size or TP), said once. */
static void g3_par_ckpt_lstate_check(g3_par_ckpt_t *t, const g3_gpt_t *m, g3_ckpt_reader_t *r)
{
    char name[G3_CKPT_NAME_MAX];
    g3_ckpt_tensor_t want, got;
    int reset = 0, ti;

    for (int i = 0; t->hs && i < m->nlstates; i++) {
        const g3_gpt_lstate_t *ls = &m->lstates[i];
        if (ls->bytes == 0)
            continue;
        g3_par_ckpt_lstate_tensor(m, ls, name, sizeof(name), &want);
        ti = g3_ckpt_reader_find(r, name);
        if (ti >= 0)
            g3_ckpt_reader_tensor(r, ti, &got);
        if (ti >= 0 && got.dtype == want.dtype && got.ndim == 2 &&
            got.shape[0] == want.shape[0] && got.shape[1] == want.shape[1])
            continue;
        memset(t->hs + ls->offset, 0, ls->bytes);
        reset++;
    }
    if (reset)
        g3_warn("checkpoint %s holds no backend state of this run's size for %d of this rank's %d linear layers (it was saved by a backend without one, or under another tensor-parallel size): their per-tensor state starts fresh",
                g3_ckpt_reader_path(r), reset, m->nlstates);
}

g3_status_t g3_par_ckpt_apply(g3_par_ckpt_t *t, g3_gpt_t *model, g3_ckpt_reader_t *r,
                              int with_optim, int64_t step)
{
    g3_backend_t *be = model->be;
    int64_t seed = -1;
    g3_status_t st;

    if (g3_ckpt_reader_has(r, "rng") && g3_ckpt_reader_get_i64(r, "rng", &seed, 1) == G3_OK &&
        seed != (int64_t)model->cfg.seed)
        g3_warn(
            "checkpoint %s was trained with --seed %lld, this run has --seed %llu: the data order from here on differs from the original run's",
            g3_ckpt_reader_path(r), (long long)seed, (unsigned long long)model->cfg.seed);
    /* into the backend's buffers */
    be->ops->upload(be, model->w, t->hw, sizeof(float) * model->numel);
    g3_gpt_params_refresh(model);   /* the passes' bf16 copy on CUDA */
    if (t->hs) {
        g3_par_ckpt_lstate_check(t, model, r);
        be->ops->upload(be, model->lstate, t->hs, model->lstate_bytes);
    }
    for (int i = 0; i < t->n && with_optim; i++) {
        size_t len = t->r[i].end - t->r[i].begin;
        be->ops->upload(be, t->r[i].m, t->hm[i], sizeof(float) * len);
        be->ops->upload(be, t->r[i].v, t->hv[i], sizeof(float) * len);
    }
    st = be->ops->sync(be);
    if (st != G3_OK)
        return st;
    if (t->step)
        *t->step = step;
    return G3_OK;
}
