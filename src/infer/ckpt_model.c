/* gpt3d infer: a trained model out of a training checkpoint (see ckpt_model.h).
 * Glossary: V vocabulary, Vp padded vocabulary, TP tensor-parallel size. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "infer/ckpt_model.h"
#include "parallel/par_ckpt.h"

#define G3_EMBEDDING "model/embedding.word_embeddings.weight"

void g3_infer_ckpt_info_free(g3_infer_ckpt_info_t *info)
{
    if (!info)
        return;
    free(info->config);
    free(info->tokenizer);
    free(info);
}

/* The integer flag `key` of the checkpoint's configuration.  def < 0: required.
 * RET: 0 (logged) when absent and required, or not a positive int. */
static int g3_infer_ckm_int(const g3_infer_ckpt_info_t *info, const char *key, int def, int *out)
{
    char buf[64], *end;
    const char *v = g3_ckpt_config_get(info->config, key, buf, sizeof(buf));
    long long x;

    if (!v) {
        if (def >= 0) {
            *out = def;
            return 1;
        }
        g3_error(
            "checkpoint %s does not record --%s in its configuration: it was not saved by gpt3d train (or by an older version); evaluate it with the trainer ('gpt3d train --load DIR ... --eval-iters N') instead",
            info->path, key);
        return 0;
    }
    errno = 0;
    x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < 0 || x > INT32_MAX) {
        g3_error(
            "checkpoint %s records --%s '%s', which is not a count: its index is damaged; check it with 'gpt3d ckpt verify %s'",
            info->path, key, v, info->path);
        return 0;
    }
    *out = (int)x;
    return 1;
}

/* The float flag `key`, or def when absent.  RET: 0 (logged) when not a number. */
static int g3_infer_ckm_float(const g3_infer_ckpt_info_t *info, const char *key, double def,
                        double *out)
{
    char buf[64], *end;
    const char *v = g3_ckpt_config_get(info->config, key, buf, sizeof(buf));
    double x;

    if (!v) {
        *out = def;
        return 1;
    }
    errno = 0;
    x = strtod(v, &end);
    if (errno || *end || end == v) {
        g3_error(
            "checkpoint %s records --%s '%s', which is not a number: its index is damaged; check it with 'gpt3d ckpt verify %s'",
            info->path, key, v, info->path);
        return 0;
    }
    *out = x;
    return 1;
}

/* Resolve dir and step into the directory to open.  OUT: path (size bytes). */
static g3_status_t g3_infer_ckm_resolve(const char *dir, int64_t step, char *path, size_t size)
{
    struct stat sb;
    char index[PATH_MAX + 16];
    int64_t *iters = NULL;
    int n = 0;

    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        g3_error(
            "--load %s: %s; pass the --save directory of a training run (or one iter_NNNNNNN directory in it)",
            dir, stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return G3_ERR_NOT_FOUND;
    }
    if (step < 0) {
        if ((size_t)snprintf(path, size, "%s", dir) >= size)
            goto err_too_long;
        return G3_OK;
    }
    snprintf(index, sizeof(index), "%s/index.h5", dir);
    if (stat(index, &sb) == 0) {
        g3_error(
            "--load %s is one checkpoint (an iter_ directory), --ckpt-step %" PRId64
            " picks one in a --save directory: pass the directory above it, or drop --ckpt-step",
            dir, step);
        return G3_ERR_INVALID_ARG;
    }
    g3_ckpt_iter_path(dir, step, path, size);
    snprintf(index, sizeof(index), "%s/index.h5", path);
    if (stat(index, &sb) == 0)
        return G3_OK;
    if (g3_ckpt_list(dir, &iters, &n) == G3_OK) {
        char list[512] = "";
        size_t used = 0;
        for (int i = 0; i < n && used + 24 < sizeof(list); i++)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%" PRId64,
                                     i ? " " : "", iters[i]);
        if (n == 0)
            g3_error(
                "--ckpt-step %" PRId64
                ": %s holds no committed checkpoint; pass the --save directory of a training run",
                step, dir);
        else
            g3_error(
                "--ckpt-step %" PRId64
                ": %s has no committed checkpoint of that iteration (it has: %s%s); pick one of those",
                step, dir, list, used + 24 >= sizeof(list) ? " ..." : "");
        free(iters);
    }
    return G3_ERR_NOT_FOUND;

err_too_long:
    g3_error("--load %s: the path is too long", dir);
    return G3_ERR_INVALID_ARG;
}

/* Fill info->model from the configuration and the stored embedding. */
static g3_status_t g3_infer_ckm_config(g3_infer_ckpt_info_t *info, g3_ckpt_reader_t *r)
{
    g3_gpt_config_t *m = &info->model;
    g3_ckpt_tensor_t emb;
    double eps;
    char buf[64], *end;
    const char *seed = g3_ckpt_config_get(info->config, "seed", buf, sizeof(buf));
    int row = g3_ckpt_reader_find(r, G3_EMBEDDING), ok = 1, vp;

    g3_gpt_config_defaults(m);
    ok &= g3_infer_ckm_int(info, "num-layers", -1, &m->num_layers);
    ok &= g3_infer_ckm_int(info, "hidden-size", -1, &m->hidden_size);
    ok &= g3_infer_ckm_int(info, "num-attention-heads", -1, &m->num_attention_heads);
    ok &= g3_infer_ckm_int(info, "seq-length", -1, &m->seq_length);
    ok &= g3_infer_ckm_int(info, "ffn-hidden-size", 0, &m->ffn_hidden_size);
    ok &= g3_infer_ckm_int(info, "max-position-embeddings", 0, &m->max_position_embeddings);
    ok &= g3_infer_ckm_float(info, "layernorm-epsilon", m->layernorm_epsilon, &eps);
    if (seed) {   /* the whole uint64 range */
        errno = 0;
        m->seed = strtoull(seed, &end, 10);
        if (errno || *end || end == seed) {
            g3_error(
                "checkpoint %s records --seed '%s', which is not a seed: its index is damaged; check it with 'gpt3d ckpt verify %s'",
                info->path, seed, info->path);
            ok = 0;
        }
    }
    if (!ok)
        return G3_ERR_FORMAT;
    m->layernorm_epsilon = (float)eps;
    if (row < 0) {
        g3_error(
            "checkpoint %s has no %s: it holds no GPT model (a checkpoint of something else?); pass a checkpoint saved by gpt3d train",
            info->path, G3_EMBEDDING);
        return G3_ERR_FORMAT;
    }
    g3_ckpt_reader_tensor(r, row, &emb);
    vp = (int)emb.shape[0];
    if (emb.ndim != 2 || emb.shape[1] != m->hidden_size || emb.rule.pad_dim != 0 ||
        emb.rule.unpadded < 1 || emb.rule.unpadded > vp) {
        g3_error(
            "checkpoint %s: %s has shape (%lld, %lld) and %lld real rows, which does not fit its configuration (--hidden-size %d): the index is damaged; check it with 'gpt3d ckpt verify %s'",
            info->path, G3_EMBEDDING, (long long)emb.shape[0], (long long)emb.shape[1],
            (long long)emb.rule.unpadded, m->hidden_size, info->path);
        return G3_ERR_FORMAT;
    }
    info->padded_vocab = vp;
    m->vocab_size = (int)emb.rule.unpadded;
    m->make_vocab_size_divisible_by = vp;   /* one rank: V padded to exactly the stored Vp */
    return g3_gpt_config_check(m);
}

g3_status_t g3_infer_ckpt_open(const char *dir, int64_t step, g3_infer_ckpt_info_t **info_p)
{
    g3_infer_ckpt_info_t *info = calloc(1, sizeof(*info));
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_layout_t lay;
    g3_status_t st;

    if (!info) {
        g3_error("out of memory opening checkpoint %s", dir);
        return G3_ERR_NO_MEMORY;
    }
    st = g3_infer_ckm_resolve(dir, step, info->path, sizeof(info->path));
    if (st != G3_OK)
        goto err_free_info;
    st = g3_ckpt_reader_open(info->path, &r);
    if (st != G3_OK)
        goto err_free_info;
    snprintf(info->path, sizeof(info->path), "%s", g3_ckpt_reader_path(r));
    info->iteration = g3_ckpt_reader_iteration(r);
    info->consumed_samples = g3_ckpt_reader_consumed_samples(r);
    info->config = strdup(g3_ckpt_reader_config(r));
    if (!info->config) {
        g3_error("out of memory reading the configuration of checkpoint %s", info->path);
        st = G3_ERR_NO_MEMORY;
        goto err_close;
    }
    info->version = g3_ckpt_reader_version(r);
    if (g3_ckpt_reader_has(r, "tokenizer")) {
        size_t size = 3 * 4096 + 1024;
        info->tokenizer = malloc(size);
        st = info->tokenizer ? g3_ckpt_reader_get_str(r, "tokenizer", info->tokenizer, size)
                             : G3_ERR_NO_MEMORY;
        if (st != G3_OK)
            goto err_close;
    }
    g3_ckpt_reader_layout(r, &lay);
    info->saved_tp = lay.tp_size;
    info->saved_pp = lay.pp_size;
    info->saved_dp = lay.dp_size;
    st = g3_infer_ckm_config(info, r);
    if (st != G3_OK)
        goto err_close;
    g3_ckpt_reader_close(r);
    *info_p = info;
    return G3_OK;

err_close:
    g3_ckpt_reader_close(r);
err_free_info:
    g3_infer_ckpt_info_free(info);
    return st;
}

g3_status_t g3_infer_ckpt_set_tp(g3_infer_ckpt_info_t *info, int tp_size)
{
    if (tp_size < 1 || info->padded_vocab % tp_size != 0) {
        g3_error(
            "checkpoint %s stores a padded vocabulary of %d rows, which %d tensor-parallel ranks cannot share evenly; use a tensor-parallel size that divides %d",
            info->path, info->padded_vocab, tp_size, info->padded_vocab);
        return G3_ERR_INVALID_ARG;
    }
    info->model.make_vocab_size_divisible_by = info->padded_vocab / tp_size;
    return G3_OK;
}

g3_status_t g3_infer_ckpt_load(g3_infer_ckpt_info_t *info, g3_gpt_t *model,
                              g3_par_t *par, int dp_size, int dp_rank,
                              g3_par_engine_t *eng, int load_fallback)
{
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_load_opts_t lo;
    g3_par_ckpt_t t;
    char dir[PATH_MAX];
    int64_t iteration, consumed;
    g3_status_t st;

    /* with a fallback, the save directory, so that the library can go back from `latest` */
    snprintf(dir, sizeof(dir), "%s", info->path);
    if (load_fallback) {
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
    }
    st = g3_par_ckpt_init(&t, model, eng, dp_size, dp_rank);
    if (st != G3_OK)
        return st;
    memset(&lo, 0, sizeof(lo));
    lo.fallback = load_fallback;
    lo.no_load_optim = 1;    /* the model alone */
    lo.optim_optional = 1;
    st = g3_par_ckpt_read(&t, model, dir, &lo, par, &r);
    if (st != G3_OK)
        goto out_free_copies;
    st = g3_par_ckpt_apply(&t, model, r, 0, 0);
    if (st != G3_OK)
        goto out_close;
    iteration = g3_ckpt_reader_iteration(r);
    consumed = g3_ckpt_reader_consumed_samples(r);
    if (iteration != info->iteration) {
        g3_warn("loaded the checkpoint of iteration %" PRId64 " instead of %" PRId64
                " (--load-fallback)", iteration, info->iteration);
        g3_ckpt_iter_path(dir, iteration, info->path, sizeof(info->path));
        info->iteration = iteration;
        info->consumed_samples = consumed;
    }
out_close:
    g3_ckpt_reader_close(r);
out_free_copies:
    g3_par_ckpt_free(&t);
    return st;
}
