/* gpt3d data: GPT datasets over one or a blend of indexed datasets (see
 * dataset.h for the contract, docs/data.md for the rules). */
#include "data/dataset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/param.h"
#include "data/bpe.h"
#include "data/gpt_index.h"
#include "data/indexed.h"
#include "data/tokid.h"

typedef struct {
    g3_idx_t    *idx;
    double       weight;                       /* normalised to sum 1    */
    g3_gptidx_t *split[G3_SPLIT_COUNT];        /* NULL: not built        */
} g3_data_source_t;

struct g3_data {
    int               num_sources;
    g3_data_source_t *sources;                 /* (num_sources,)          */
    int64_t           seq_length;
    uint64_t          num_samples[G3_SPLIT_COUNT];
    /* Blends only: for global sample i of a split, the source and the
     * sample within it.  (num_samples[s],) each. */
    uint16_t         *blend_source[G3_SPLIT_COUNT];
    uint64_t         *blend_sample[G3_SPLIT_COUNT];
    int64_t           max_token_bound;
};

const char *g3_split_name(g3_split_t split)
{
    switch (split) {
    case G3_SPLIT_TRAIN: return "train";
    case G3_SPLIT_VALID: return "valid";
    case G3_SPLIT_TEST:  return "test";
    default:             return "unknown";
    }
}

/* Parse the --data-path words.  OUT: *n_p, *prefixes_p (pointers into
 * words), *weights_p (malloc'd, normalised). */
static g3_status_t g3_data_parse_paths(int count, char *const *words, int *n_p,
                                       const char ***prefixes_p, double **weights_p)
{
    const char **prefixes;
    double *weights, sum = 0;
    int n;

    if (count < 1 || !words) {
        g3_error("--data-path is required: a dataset prefix (PREFIX.bin/PREFIX.idx), or weight/prefix pairs like '0.3 A 0.7 B'");
        return G3_ERR_INVALID_ARG;
    }
    if (count == 1) {
        n = 1;
    } else if (count % 2 != 0) {
        g3_error("--data-path has %d words; a blend is weight/prefix pairs ('0.3 A 0.7 B'), a single dataset is one prefix",
                 count);
        return G3_ERR_INVALID_ARG;
    } else {
        n = count / 2;
    }
    if (n > 65535) {
        g3_error("--data-path blends %d datasets; at most 65535 are supported", n);
        return G3_ERR_INVALID_ARG;
    }
    prefixes = calloc((size_t)n, sizeof(*prefixes));
    weights = calloc((size_t)n, sizeof(*weights));
    if (!prefixes || !weights) {
        free(prefixes);
        free(weights);
        return G3_ERR_NO_MEMORY;
    }
    if (count == 1) {
        prefixes[0] = words[0];
        weights[0] = 1;
        sum = 1;
    }
    for (int i = 0; count > 1 && i < n; i++) {
        char *end;
        errno = 0;
        weights[i] = strtod(words[2 * i], &end);
        if (end == words[2 * i] || *end || errno || !isfinite(weights[i]) || weights[i] <= 0) {
            g3_error("--data-path: '%s' (word %d) is not a positive weight; a blend is weight/prefix pairs like '0.3 A 0.7 B'",
                     words[2 * i], 2 * i + 1);
            free(prefixes);
            free(weights);
            return G3_ERR_INVALID_ARG;
        }
        prefixes[i] = words[2 * i + 1];
        sum += weights[i];
    }
    for (int i = 0; i < n; i++)
        weights[i] /= sum;
    *n_p = n;
    *prefixes_p = prefixes;
    *weights_p = weights;
    return G3_OK;
}

/* Megatron's build_blending_indices: sample i goes to the source whose
 * realised count lags weight * i the most (ties: the lowest index). */
static g3_status_t g3_data_blend(g3_data_t *d, g3_split_t s, const uint64_t *avail)
{
    uint64_t N = d->num_samples[s];
    int K = d->num_sources;
    uint64_t *count = calloc((size_t)K, sizeof(uint64_t));
    d->blend_source[s] = malloc((N ? N : 1) * sizeof(uint16_t));
    d->blend_sample[s] = malloc((N ? N : 1) * sizeof(uint64_t));
    if (!count || !d->blend_source[s] || !d->blend_sample[s]) {
        free(count);
        g3_error("out of memory for the %s blend of %llu samples", g3_split_name(s), (unsigned long long)N);
        return G3_ERR_NO_MEMORY;
    }
    for (uint64_t i = 0; i < N; i++) {
        double t = i > 1 ? (double)i : 1.0;
        int best = 0;
        double best_err = d->sources[0].weight * t - (double)count[0];
        for (int k = 1; k < K; k++) {
            double err = d->sources[k].weight * t - (double)count[k];
            if (err > best_err) {
                best_err = err;
                best = k;
            }
        }
        d->blend_source[s][i] = (uint16_t)best;
        d->blend_sample[s][i] = count[best]++;
    }
    for (int k = 0; k < K; k++) {
        if (count[k] > avail[k]) {
            g3_error("internal: the %s blend takes %llu samples from '%s', which has %llu",
                     g3_split_name(s), (unsigned long long)count[k],
                     g3_idx_prefix(d->sources[k].idx), (unsigned long long)avail[k]);
            free(count);
            return G3_ERR_INTERNAL;
        }
    }
    free(count);
    return G3_OK;
}

/* The largest id a dtype can hold. */
static int64_t g3_data_dtype_max(int dtype)
{
    switch (dtype) {
    case G3_IDX_UINT8:  return UINT8_MAX;
    case G3_IDX_INT8:   return INT8_MAX;
    case G3_IDX_INT16:  return INT16_MAX;
    case G3_IDX_UINT16: return UINT16_MAX;
    case G3_IDX_INT32:  return INT32_MAX;
    default:            return INT64_MAX;
    }
}

/* The dtype must be able to hold every id of the vocabulary: uint8 data with GPT-2's 50257
 * ids is a changed dtype byte or a dataset made for another tokenizer, never right. */
static g3_status_t g3_data_check_dtype(const g3_data_config_t *cfg, const g3_idx_t *idx)
{
    int dt = g3_idx_dtype(idx);
    if (cfg->vocab_size <= 0 || g3_data_dtype_max(dt) >= cfg->vocab_size - 1)
        return G3_OK;
    g3_error("indexed dataset '%s.idx': its dtype byte (offset 17) is %d (%s), which holds ids up to %lld, but the vocabulary%s%s has %lld ids: the dtype byte was changed or the data was made for another tokenizer; a dataset for this vocabulary has dtype %d (%s): re-run 'gpt3d preprocess' with this vocabulary",
             g3_idx_prefix(idx), dt, g3_idx_dtype_name(dt), (long long)g3_data_dtype_max(dt),
             cfg->vocab_file ? " " : "", cfg->vocab_file ? cfg->vocab_file : "",
             (long long)cfg->vocab_size, g3_idx_dtype_for_vocab(cfg->vocab_size),
             g3_idx_dtype_name(g3_idx_dtype_for_vocab(cfg->vocab_size)));
    return G3_ERR_FORMAT;
}

/* Every token of a split's documents in [0, vocab_size): the range comes with the sample
 * index (computed when it was built, cached with it); only a bad range reads the data again,
 * to name the first bad token. */
static g3_status_t g3_data_check_tokens(const g3_data_config_t *cfg, const g3_idx_t *idx,
                                        const g3_gptidx_t *gi, const char *split_name)
{
    uint64_t seq = 0, pos = 0;
    int64_t v = gi->token_min < 0 ? gi->token_min : gi->token_max;

    if (cfg->vocab_size <= 0 || (gi->token_min >= 0 && gi->token_max < cfg->vocab_size))
        return G3_OK;
    g3_idx_token_find_outside(idx, gi->doc_first, gi->doc_end, 0, cfg->vocab_size, &seq, &pos, &v);
    g3_error("indexed dataset '%s.bin': token id %lld (sequence %llu, position %llu, in the %s split) is outside the vocabulary%s%s of %lld ids [0, %lld): the data is corrupt or was made with another tokenizer; re-run 'gpt3d preprocess' with this vocabulary",
             g3_idx_prefix(idx), (long long)v, (unsigned long long)seq, (unsigned long long)pos,
             split_name, cfg->vocab_file ? " " : "", cfg->vocab_file ? cfg->vocab_file : "",
             (long long)cfg->vocab_size, (long long)cfg->vocab_size);
    return G3_ERR_FORMAT;
}

/* Opens split s of every source (its share of the blend when there are several) and blends
 * them into d; a split that some source leaves empty is warned about and left unused. */
static g3_status_t g3_data_open_split(const g3_data_config_t *cfg, const char *split,
                                      const double *weights, g3_split_t s, g3_data_t *d)
{
    uint64_t want = cfg->num_samples[s];
    uint64_t *av = NULL;
    int n = d->num_sources;
    int usable = 1;
    g3_status_t st = G3_OK;
    if (want == 0)
        return G3_OK;
    av = calloc((size_t)n, sizeof(uint64_t));
    if (!av)
        return G3_ERR_NO_MEMORY;
    for (int i = 0; i < n && usable; i++) {
        g3_idx_t *idx = d->sources[i].idx;
        uint64_t b[4], T = 0;
        if ((st = g3_split_parse(split, g3_idx_num_sequences(idx), b)) != G3_OK)
            goto err_free_av;
        for (uint64_t k = b[s]; k < b[s + 1]; k++)
            T += (uint64_t)g3_idx_size(idx, k);
        if (b[s + 1] <= b[s] || T < 2) {
            g3_warn("the %s split of '%s' is empty (--split %s over %llu documents gives it %llu documents, %llu tokens); %s samples are not available",
                    g3_split_name(s), g3_idx_prefix(idx), split,
                    (unsigned long long)g3_idx_num_sequences(idx),
                    (unsigned long long)(b[s + 1] - b[s]), (unsigned long long)T,
                    g3_split_name(s));
            usable = 0;
            break;
        }
        /* Blends ask each source for its share plus 0.5% (Megatron). */
        uint64_t ask = n == 1 ? want : (uint64_t)ceil((double)want * weights[i] * 1.005);
        if (ask == 0)
            ask = 1;
        st = g3_gptidx_open(idx, g3_split_name(s), b[s], b[s + 1], cfg->seq_length, cfg->seed,
                            ask, cfg->cache_dir, cfg->vocab_size > 0, &d->sources[i].split[s]);
        if (st == G3_OK)
            st = g3_data_check_tokens(cfg, idx, d->sources[i].split[s], g3_split_name(s));
        if (st != G3_OK)
            goto err_free_av;
        av[i] = d->sources[i].split[s]->num_samples;
    }
    if (!usable) {
        for (int i = 0; i < n; i++) {
            g3_gptidx_free(d->sources[i].split[s]);
            d->sources[i].split[s] = NULL;
        }
    } else if (n == 1) {
        d->num_samples[s] = av[0];
    } else {
        d->num_samples[s] = want;
        st = g3_data_blend(d, s, av);
    }
err_free_av:
    free(av);
    return st;
}

g3_status_t g3_data_open(const g3_data_config_t *cfg, g3_data_t **data_p)
{
    const char **prefixes = NULL;
    double *weights = NULL;
    const char *split = cfg->split ? cfg->split : "969,30,1";
    g3_status_t st;
    g3_data_t *d;
    int n;

    if (cfg->seq_length < 1) {
        g3_error("--seq-length must be at least 1 (got %lld)", (long long)cfg->seq_length);
        return G3_ERR_INVALID_ARG;
    }
    if (cfg->seed > 0xffffffffULL) {
        g3_error("--seed %llu is too large: the data shuffles use numpy's 32-bit seeding (as Megatron does); give a seed below 4294967296",
                 (unsigned long long)cfg->seed);
        return G3_ERR_INVALID_ARG;
    }
    if ((st = g3_data_parse_paths(cfg->data_path_count, cfg->data_path, &n, &prefixes, &weights)) !=
        G3_OK)
        return st;
    d = calloc(1, sizeof(*d));
    if (!d) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_parse;
    }
    d->seq_length = cfg->seq_length;
    d->max_token_bound = -1;
    d->sources = calloc((size_t)n, sizeof(*d->sources));
    if (!d->sources) {
        st = G3_ERR_NO_MEMORY;
        goto err_close;
    }
    d->num_sources = n;
    for (int i = 0; i < n; i++) {
        d->sources[i].weight = weights[i];
        if ((st = g3_idx_open(prefixes[i], &d->sources[i].idx)) != G3_OK)
            goto err_close;
        if ((st = g3_data_check_dtype(cfg, d->sources[i].idx)) != G3_OK)
            goto err_close;
    }

    for (int s = 0; s < G3_SPLIT_COUNT; s++)
        if ((st = g3_data_open_split(cfg, split, weights, (g3_split_t)s, d)) != G3_OK)
            goto err_close;
    free(prefixes);
    free(weights);
    *data_p = d;
    return G3_OK;

err_close:
    g3_data_close(d);
err_free_parse:
    free(prefixes);
    free(weights);
    return st;
}

g3_status_t g3_data_get(const g3_data_t *d, g3_split_t split, uint64_t i, int32_t *tokens)
{
    if ((unsigned)split >= G3_SPLIT_COUNT || i >= d->num_samples[split]) {
        g3_error("%s sample %llu requested, but the %s split has %llu samples%s",
                 g3_split_name(split), (unsigned long long)i, g3_split_name(split),
                 (unsigned long long)((unsigned)split < G3_SPLIT_COUNT ? d->num_samples[split] : 0),
                 (unsigned)split < G3_SPLIT_COUNT && d->num_samples[split] == 0
                     ? " (it was not built: ask g3_data_open for samples of it, and check --split)" : "");
        return G3_ERR_INVALID_ARG;
    }
    if (d->num_sources == 1) {
        g3_gptidx_get(d->sources[0].split[split], d->sources[0].idx, i, tokens);
    } else {
        const g3_data_source_t *src = &d->sources[d->blend_source[split][i]];
        g3_gptidx_get(src->split[split], src->idx, d->blend_sample[split][i], tokens);
    }
    return G3_OK;
}

uint64_t g3_data_num_samples(const g3_data_t *d, g3_split_t split)
{
    return (unsigned)split < G3_SPLIT_COUNT ? d->num_samples[split] : 0;
}

int64_t g3_data_max_token_bound(const g3_data_t *d)
{
    g3_data_t *m = (g3_data_t *)d;   /* a lazily filled cache */
    if (m->max_token_bound < 0) {
        int64_t mx = 0;
        for (int i = 0; i < d->num_sources; i++) {
            int64_t b = g3_idx_max_token_bound(d->sources[i].idx);
            if (b > mx)
                mx = b;
        }
        m->max_token_bound = mx;
    }
    return m->max_token_bound;
}

void g3_data_close(g3_data_t *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->num_sources; i++) {
        for (int s = 0; s < G3_SPLIT_COUNT; s++)
            g3_gptidx_free(d->sources[i].split[s]);
        g3_idx_close(d->sources[i].idx);
    }
    for (int s = 0; s < G3_SPLIT_COUNT; s++) {
        free(d->blend_source[s]);
        free(d->blend_sample[s]);
    }
    free(d->sources);
    free(d);
}

g3_status_t g3_data_check_tokenizer(int count, char *const *words, const g3_tokid_t *run,
                                    int allow)
{
    const char **prefixes = NULL;
    double *weights = NULL;
    g3_status_t st, worst = G3_OK;
    int n;

    if ((st = g3_data_parse_paths(count, words, &n, &prefixes, &weights)) != G3_OK)
        return st;
    for (int i = 0; i < n; i++) {
        g3_tokid_t made;
        int found = 0;
        char what[G3_TOKID_PATH_MAX + 32];
        st = g3_tokid_read_sidecar(prefixes[i], &made, &found);
        if (st == G3_OK && !found) {
            g3_info("dataset '%s' has no '%s.tokenizer.json' (made by Megatron's tools or an older gpt3d): its tokenizer cannot be checked against --vocab-file/--merge-file",
                    prefixes[i], prefixes[i]);
            continue;
        }
        if (st == G3_OK) {
            snprintf(what, sizeof(what), "dataset '%s'", prefixes[i]);
            st = g3_tokid_check(&made, run, what, allow);
        }
        if (st != G3_OK && worst == G3_OK)
            worst = st;
    }
    free(prefixes);
    free(weights);
    return worst;
}

g3_status_t g3_data_vocab_info(const char *vocab_file, int64_t *vocab_size_p, int64_t *eod_id_p)
{
    return g3_bpe_vocab_info(vocab_file, vocab_size_p, eod_id_p);
}

g3_status_t g3_data_corpus_dir(char *buf, size_t size)
{
    const char *data_dir = g3_param_data_dir(), *home = getenv("HOME");
    int n;
    if (data_dir)
        n = snprintf(buf, size, "%s/kjv", data_dir);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/gpt3d/kjv", home);
    else
        return G3_ERR_NOT_FOUND;
    return n > 0 && (size_t)n < size ? G3_OK : G3_ERR_INVALID_ARG;
}
