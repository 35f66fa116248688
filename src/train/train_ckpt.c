/* gpt3d train: the training state in and out of checkpoints (src/ckpt).  See train_ckpt.h.
 * The model and the optimizer's moments go by global offsets through parallel/par_ckpt.h
 * (shared with gpt3d eval and generate); here the trainer's glue: the state scalars, the
 * asynchronous saves, the resume's checks.  Glossary: TP, PP, DP sizes; tp, pp, dp a rank's
 * coordinates. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "parallel/par_ckpt.h"
#include "train/train_ckpt.h"
#include "data/tokid.h"

/* The whole state to save after `iteration`: the tensors (host copies in t) and the scalars. */
static g3_status_t g3_train_ckpt_state(const g3_train_ckpt_t *c, g3_par_ckpt_t *t,
                                       int64_t iteration, int64_t consumed_samples, int64_t gbs,
                                       double lr, g3_ckpt_timing_t *tm, g3_ckpt_state_t **state_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL;
    int64_t seed = (int64_t)c->model->cfg.seed, T = c->model->cfg.seq_length;
    int64_t sched[1] = { consumed_samples };
    int64_t ramp[2] = { gbs, consumed_samples };
    int64_t sampler[2] = { consumed_samples, seed };
    double t0 = g3_ckpt_timing_now(tm);
    g3_status_t st;

    st = g3_par_ckpt_describe(t, c->model, 1, !cfg->no_save_optim, &state);
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
    g3_ckpt_timing_add(tm, G3_CKPT_T_DESCRIBE, &t0);
    if (st != G3_OK) {
        g3_ckpt_state_free(state);
        return st;
    }
    *state_p = state;
    return G3_OK;
}

/* A diverged run's state is never saved as if healthy: every rank looks at its host copy
 * and, with agree, all agree (collective: a rank alone must not leave the others waiting in
 * the save's collectives).  RET: G3_ERR_NUMERIC (logged by the rank that found it) or the
 * agreement's error. */
static g3_status_t g3_train_ckpt_finite(const g3_train_ckpt_t *c, const g3_par_ckpt_t *t,
                                        int64_t iteration, int agree, g3_ckpt_timing_t *tm)
{
    size_t at = 0;
    double t0 = g3_ckpt_timing_now(tm);
    const char *what = g3_par_ckpt_nonfinite(t, c->model->numel, 1, &at);
    int ok = what == NULL;
    g3_status_t st;

    g3_ckpt_timing_add(tm, G3_CKPT_T_FINITE, &t0);   /* the agreement below: in none */
    st = agree ? g3_par_ckpt_allreduce_min(c->cfg->par, &ok) : G3_OK;

    if (what)
        g3_error("not saving the checkpoint of iteration %lld: the %s hold NaN or infinity (element %zu of this rank's copy): the run diverged; the previous checkpoints are intact; lower --lr and resume from the last good checkpoint",
                 (long long)iteration, what, at);
    if (st != G3_OK)
        return st;
    return ok ? G3_OK : G3_ERR_NUMERIC;
}

/* Say once, at the staging area's first use (a save or the resume), what it is and what its
 * allocation cost (the first use's wait for it is that use's stage_alloc phase). */
static void g3_train_ckpt_stage_said(const g3_train_ckpt_t *c)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_par_ckpt_stage_t *s = c->stage;

    if (!s || !s->buf || s->announced)
        return;
    s->announced = 1;
    if (g3_par_layout(cfg->par)->world_rank != 0)
        return;
    g3_info("checkpoints: a %.1f MiB host staging area (%s) holds each save's copy of this rank's parameters and Adam moments; allocated once in %.2f s%s, reused by every save",
            (double)s->floats * 4.0 / 1048576.0,
            s->be && !c->model->be->host_memory ? "page-locked" : "plain memory", s->alloc_s,
            s->background ? " (in the background, from the start of training)" : "");
}

/* This rank's state into host memory for a save: into the trainer's staging area when it has
 * one (waiting for its background allocation if need be: stage_alloc), else into fresh
 * memory. */
static g3_status_t g3_train_ckpt_copy(const g3_train_ckpt_t *c, g3_par_ckpt_t *t,
                                      g3_ckpt_timing_t *tm)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_status_t st = g3_par_ckpt_init_staged(t, c->model, c->eng, cfg->dp_size, cfg->dp_rank,
                                             c->stage, tm);

    if (st == G3_OK)
        g3_train_ckpt_stage_said(c);
    return st;
}

static void g3_train_ckpt_save_opts(const g3_train_config_t *cfg, g3_ckpt_save_opts_t *so,
                                    g3_ckpt_timing_t *tm)
{
    memset(so, 0, sizeof(*so));
    so->timing = tm;
    so->save_id = cfg->save_id;
    so->keep_last = cfg->keep_last;
    so->no_save_optim = cfg->no_save_optim;
}

g3_status_t g3_train_ckpt_save(const g3_train_ckpt_t *c, int64_t iteration,
                               int64_t consumed_samples, int64_t gbs, double lr,
                               g3_ckpt_timing_t *tm)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL;
    g3_ckpt_save_opts_t so;
    g3_ckpt_comm_t comm = { cfg->par, g3_par_ckpt_allreduce_min };
    g3_par_ckpt_t t;
    g3_status_t st;

    st = g3_train_ckpt_copy(c, &t, tm);
    if (st != G3_OK)
        return st;
    st = g3_train_ckpt_finite(c, &t, iteration, 1, tm);
    if (st == G3_OK)
        st = g3_train_ckpt_state(c, &t, iteration, consumed_samples, gbs, lr, tm, &state);
    if (st == G3_OK) {
        g3_train_ckpt_save_opts(cfg, &so, tm);
        st = g3_ckpt_save(cfg->save_dir, state, &so, &comm);
        g3_ckpt_state_free(state);
    }
    g3_par_ckpt_free(&t);
    return st;
}

/* ---- asynchronous saves ------------------------------------------------------------------ */

struct g3_train_ckpt_async {
    g3_ckpt_async_t *writer;
    int64_t          iteration;
    int              root;       /* this rank commits (tp = pp = dp = 0) */
};

/* RET: G3_OK with *ok the minimum over the world (single rank: unchanged). */
static g3_status_t g3_train_ckpt_agree(const g3_train_config_t *cfg, int *ok)
{
    return g3_par_ckpt_allreduce_min(cfg->par, ok);
}

g3_status_t g3_train_ckpt_save_async(const g3_train_ckpt_t *c, int64_t iteration,
                                     int64_t consumed_samples, int64_t gbs, double lr,
                                     g3_ckpt_timing_t *tm, g3_train_ckpt_async_t **pending_p)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_state_t *state = NULL, *snap = NULL;
    g3_train_ckpt_async_t *a;
    g3_ckpt_save_opts_t so;
    g3_par_ckpt_t t;
    int ok, root;
    double t0;
    g3_status_t st = G3_OK, cst;

    root = c->model->cfg.tp_rank == 0 && c->model->cfg.pp_rank == 0 && cfg->dp_rank == 0;
    g3_train_ckpt_save_opts(cfg, &so, tm); /* the writer thread times itself (ckpt_async.c) */
    if (root)
        st = g3_ckpt_save_prepare(cfg->save_dir, iteration, &so);
    ok = st == G3_OK;
    if ((cst = g3_train_ckpt_agree(cfg, &ok)) != G3_OK)
        return cst;
    if (!ok)
        return st != G3_OK ? st : G3_ERR_IO;
    /* The host copy is the stall.  The writer thread owns the snapshot: with a staging area
     * the state itself, which points into it (the next save waits for this one before it
     * copies into the stage again); else a copy of the state. */
    st = g3_train_ckpt_copy(c, &t, tm);
    if (st == G3_OK) {
        st = g3_train_ckpt_finite(c, &t, iteration, 0, tm); /* agreed below with the rest */
        if (st == G3_OK)
            st = g3_train_ckpt_state(c, &t, iteration, consumed_samples, gbs, lr, tm, &state);
        t0 = g3_ckpt_timing_now(tm);
        if (st == G3_OK && t.staged) {
            snap = state;
            state = NULL;
        } else if (st == G3_OK) {
            st = g3_ckpt_state_snapshot(state, &snap);
        }
        g3_ckpt_timing_add(tm, G3_CKPT_T_PACK, &t0);   /* the snapshot (none when staged) */
        g3_ckpt_state_free(state);
        g3_par_ckpt_free(&t);
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
    if ((cst = g3_train_ckpt_agree(cfg, &ok)) != G3_OK)
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
                                       int block, int64_t *iteration_p, g3_ckpt_timing_t *tm,
                                       double *writer_s)
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
        if ((cst = g3_train_ckpt_agree(cfg, &ok)) != G3_OK)
            return cst;
        if (!ok)
            return G3_OK;
    }
    g3_train_ckpt_save_opts(cfg, &so, NULL);
    st = g3_ckpt_async_wait(a->writer, &snap);
    ok = st == G3_OK;
    if ((cst = g3_train_ckpt_agree(cfg, &ok)) != G3_OK) {
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
        so.timing = tm;
        st = g3_ckpt_commit(cfg->save_dir, snap, &so);
        so.timing = NULL;
        if (st != G3_OK)
            g3_ckpt_save_abort(cfg->save_dir, a->iteration, &so);
    }
    ok = st == G3_OK;
    if ((cst = g3_train_ckpt_agree(cfg, &ok)) != G3_OK)
        st = cst;
    else if (!ok && st == G3_OK)
        st = G3_ERR_IO;
    if (st == G3_OK) {
        *iteration_p = a->iteration;
        if (tm && writer_s) {
            g3_ckpt_timing_t w;
            g3_ckpt_async_timing(a->writer, &w, writer_s);
            for (int k = 0; k < G3_CKPT_T_COUNT; k++)
                tm->s[k] += w.s[k];
        }
    }
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
static int g3_train_ckpt_empty(const char *dir)
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

/* The checkpoint's recorded tokenizer files against the run's (data/tokid.h), as a check of
 * each candidate checkpoint of the load (ckpt.h, check_index): a record that is missing where
 * the format always writes one (version 2 on) or that does not parse means the index was
 * altered, and --load-fallback goes back past it; files that differ are the run's choice
 * (*final: an older checkpoint of the run has the same record; ctx's mismatch: the failure is
 * the run's, exit 1, not a checkpoint that cannot be loaded, 78).  A version-1 checkpoint has
 * no record: logged as unchecked.  ctx: a g3_tck_tokcheck_t. */
typedef struct {
    const g3_train_config_t *cfg;
    int                      mismatch;   /* OUT: the run's tokenizer files differ */
} g3_tck_tokcheck_t;

static g3_status_t g3_train_ckpt_check_tokenizer(void *ctx, g3_ckpt_reader_t *r, int *final)
{
    g3_tck_tokcheck_t *tc = ctx;
    const g3_train_config_t *cfg = tc->cfg;
    size_t size = 3 * G3_TOKID_PATH_MAX + 1024;
    char *text, what[G3_TOKID_PATH_MAX + 32];
    g3_tokid_t made, run;
    g3_status_t st;

    if (!cfg->tokenizer)
        return G3_OK;
    if (!g3_ckpt_reader_has(r, "tokenizer")) {
        if (g3_ckpt_reader_version(r) >= 2) {
            g3_error("checkpoint %s (format version %d) lacks state/tokenizer, which every gpt3d writing that version records: the index was altered; load another checkpoint (--load-fallback)",
                     g3_ckpt_reader_path(r), g3_ckpt_reader_version(r));
            return G3_ERR_FORMAT;
        }
        g3_info("checkpoint %s records no tokenizer (format version 1, saved by an older gpt3d): its tokenizer cannot be checked against --vocab-file/--merge-file",
                g3_ckpt_reader_path(r));
        return G3_OK;
    }
    text = malloc(size);
    if (!text)
        return G3_ERR_NO_MEMORY;
    snprintf(what, sizeof(what), "checkpoint %s", g3_ckpt_reader_path(r));
    st = g3_ckpt_reader_get_str(r, "tokenizer", text, size);
    if (st == G3_OK)
        st = g3_tokid_from_json_fix(text, strlen(text), what,
                                    "the index was altered; load another checkpoint (--load-fallback)",
                                    &made);
    if (st == G3_OK) {
        st = g3_tokid_from_json(cfg->tokenizer, strlen(cfg->tokenizer), "the run's tokenizer", &run);
        if (st == G3_OK)
            st = g3_tokid_check(&made, &run, what, cfg->allow_tokenizer_mismatch);
        *final = st != G3_OK;
        tc->mismatch = st != G3_OK;   /* the run's files, not a damaged checkpoint */
    }
    free(text);
    return st;
}

/* A status of the checkpoint itself: it cannot be read or fails a check. */
static int g3_train_ckpt_unreadable(g3_status_t st)
{
    return st == G3_ERR_FORMAT || st == G3_ERR_IO || st == G3_ERR_NOT_FOUND ||
           st == G3_ERR_VERSION;
}

g3_status_t g3_train_ckpt_load(const g3_train_ckpt_t *c, int64_t *iteration_p,
                               int64_t *consumed_p, int *loaded_p, int *unreadable_p,
                               g3_ckpt_timing_t *tm)
{
    const g3_train_config_t *cfg = c->cfg;
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_load_opts_t lo;
    g3_tck_tokcheck_t tokcheck = { c->cfg, 0 };
    g3_par_ckpt_t t;
    int64_t step = 0;
    int fresh_optim;
    double t0;
    g3_status_t st;

    *iteration_p = 0;
    *consumed_p = 0;
    *loaded_p = 0;
    *unreadable_p = 0;
    t0 = g3_ckpt_timing_now(tm);
    if (g3_train_ckpt_empty(cfg->load_dir)) {
        g3_info("--load %s: no checkpoint there yet; training starts from the initial weights",
                cfg->load_dir);
        return G3_OK;
    }
    g3_ckpt_timing_add(tm, G3_CKPT_T_OPEN, &t0);   /* looking at the directory */
    /* Into the saves' staging area when the run saves (page-locked on CUDA: both copies at
     * the bus's speed, and the memory is the saves' afterwards), else into fresh memory. */
    st = g3_par_ckpt_init_staged(&t, c->model, c->eng, cfg->dp_size, cfg->dp_rank,
                                 g3_par_ckpt_stage_scheduled(c->stage) ? c->stage : NULL, tm);
    if (st != G3_OK)
        return st;
    if (t.staged)
        g3_train_ckpt_stage_said(c);
    memset(&lo, 0, sizeof(lo));
    lo.fallback = cfg->load_fallback;
    lo.no_load_optim = cfg->no_load_optim;
    lo.optim_optional = 1;   /* a --no-save-optim checkpoint resumes with a fresh optimizer */
    lo.config_text = cfg->config_text;
    lo.check_index = g3_train_ckpt_check_tokenizer;
    lo.check_ctx = &tokcheck;
    lo.timing = tm;
    st = g3_par_ckpt_read(&t, c->model, cfg->load_dir, &lo, cfg->par, &r);
    if (st != G3_OK) {
        *unreadable_p = !tokcheck.mismatch && g3_train_ckpt_unreadable(st);
        goto out_free_copies;
    }
    t0 = g3_ckpt_timing_now(tm);
    fresh_optim = cfg->no_load_optim || !g3_ckpt_reader_has_optim(r);
    if (!cfg->no_load_optim && fresh_optim &&
        g3_par_layout(cfg->par)->world_rank == 0)
        g3_info("checkpoint %s holds no optimizer state (saved with --no-save-optim): resuming with fresh Adam moments and step 0", g3_ckpt_reader_path(r));
    if (!fresh_optim) {
        st = g3_ckpt_reader_get_i64(r, "optimizer.step", &step, 1);
        if (st != G3_OK) {
            *unreadable_p = g3_train_ckpt_unreadable(st);
            goto out_close;
        }
    }
    g3_ckpt_timing_add(tm, G3_CKPT_T_OPEN, &t0);   /* the index's scalars */
    /* the index against /state, the seed, then into the backend's buffers */
    st = g3_par_ckpt_apply(&t, c->model, r, !fresh_optim, fresh_optim ? 0 : step);
    g3_ckpt_timing_add(tm, G3_CKPT_T_H2D, &t0);
    if (st != G3_OK) {
        *unreadable_p = g3_train_ckpt_unreadable(st);
        goto out_close;
    }
    *iteration_p = g3_ckpt_reader_iteration(r);
    *consumed_p = g3_ckpt_reader_consumed_samples(r);
    *loaded_p = 1;
out_close:
    t0 = g3_ckpt_timing_now(tm);
    g3_ckpt_reader_close(r);
    g3_par_ckpt_free(&t);
    g3_ckpt_timing_add(tm, G3_CKPT_T_FREE, &t0);
    return st;
out_free_copies:
    g3_par_ckpt_free(&t);
    return st;
}
