/* gpt3d ckpt convert: re-shard a checkpoint for another TP x PP x DP layout
 * using only the sharding rules stored in the index (no model code).  Each new
 * rank's state is built from the rules, filled by a load by global offsets,
 * and written as that rank's shards; rank 0's commit finishes the checkpoint.
 * Optimizer state gets the canonical ZeRO-1 partition: each rank-local array
 * split into DP equal flat ranges (any trainer can load any partition). */
#include "ckpt/ckpt_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"

static g3_status_t g3_ckpt_copy_meta(const g3_ckpt_reader_t *r, g3_ckpt_state_t *st)
{
    g3_status_t s = g3_ckpt_state_set_config(st, r->config);

    g3_ckpt_state_set_progress(st, r->iteration, r->consumed_samples, r->consumed_tokens);
    for (int i = 0; s == G3_OK && i < r->nkv; i++) {
        const g3_ckpt_kv_t *kv = &r->kv[i];
        if (kv->type == G3_CKPT_KV_I64)
            s = g3_ckpt_state_set_i64(st, kv->key, kv->values, kv->n);
        else if (kv->type == G3_CKPT_KV_F64)
            s = g3_ckpt_state_set_f64(st, kv->key, kv->values, kv->n);
        else
            s = g3_ckpt_state_set_str(st, kv->key, kv->values);
    }
    return s;
}

/* Build (and with bufs != NULL, allocate) the state of one new rank. */
static g3_status_t g3_ckpt_build_rank(const g3_ckpt_reader_t *r, const g3_ckpt_layout_t *l,
                                      int with_optim, g3_ckpt_state_t **st_p, void ***bufs_p,
                                      int *nbufs_p)
{
    g3_ckpt_state_t *st;
    void **bufs = calloc(r->ntensors + 1, sizeof(void *));
    int nbufs = 0;
    g3_status_t s = g3_ckpt_state_init(l, &st);

    if (s != G3_OK || bufs == NULL) {
        free(bufs);
        return s != G3_OK ? s : G3_ERR_NO_MEMORY;
    }
    s = g3_ckpt_copy_meta(r, st);
    for (size_t i = 0; s == G3_OK && i < r->ntensors; i++) {
        g3_ckpt_tensor_t t;
        int64_t n, chunk, lo, hi;
        void *buf;

        g3_ckpt_reader_tensor(r, (int)i, &t);
        if (t.kind == G3_CKPT_OPTIM && !with_optim)
            continue;
        if (!g3_ckpt_rank_writes(l, &t)) {
            /* described without pieces: every rank then writes its optim file,
             * even one that owns no optimizer element (the commit expects it) */
            if (t.kind == G3_CKPT_OPTIM)
                s = g3_ckpt_state_add(st, &t, NULL, 0);
            continue;
        }
        n = g3_ckpt_local_numel(&t, l->tp_size);
        if (n == 0) {
            s = G3_ERR_INVALID_ARG;
            break;
        }
        if (t.kind == G3_CKPT_MODEL) {
            lo = 0;
            hi = n;
        } else {
            chunk = (n + l->dp_size - 1) / l->dp_size;
            lo = (int64_t)l->dp * chunk < n ? (int64_t)l->dp * chunk : n;
            hi = lo + chunk < n ? lo + chunk : n;
        }
        buf = malloc((size_t)(hi - lo) * g3_ckpt_dtype_size(t.dtype) + 1);
        if (buf == NULL) {
            g3_error("convert: out of memory for tensor %s", t.name);
            s = G3_ERR_NO_MEMORY;
            break;
        }
        bufs[nbufs++] = buf;
        s = g3_ckpt_state_add_local_flat(st, &t, l->tp, l->tp_size, lo, hi - lo, buf);
    }
    if (s != G3_OK) {
        for (int i = 0; i < nbufs; i++)
            free(bufs[i]);
        free(bufs);
        g3_ckpt_state_free(st);
        return s;
    }
    *st_p = st;
    *bufs_p = bufs;
    *nbufs_p = nbufs;
    return G3_OK;
}

static void g3_ckpt_free_rank(g3_ckpt_state_t *st, void **bufs, int nbufs)
{
    for (int i = 0; i < nbufs; i++)
        free(bufs[i]);
    free(bufs);
    g3_ckpt_state_free(st);
}

g3_status_t g3_ckpt_convert(const char *in, const char *out, const g3_ckpt_convert_opts_t *o)
{
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_save_opts_t so = { "convert", 0, o->no_save_optim, NULL };
    g3_ckpt_state_t *root = NULL;
    void **rootbufs = NULL;
    int nrootbufs = 0, with_optim = 0, *bounds = NULL;
    char final[PATH_MAX];
    struct stat sb;
    g3_status_t st;

    if (o->tp_size < 1 || o->pp_size < 1 || o->dp_size < 1) {
        g3_error("convert: layout sizes must be at least 1 (got TP %d x PP %d x DP %d)", o->tp_size,
                 o->pp_size, o->dp_size);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_ckpt_reader_open(in, &r);
    if (st != G3_OK)
        return st;
    for (size_t i = 0; i < r->ntensors; i++)
        with_optim |= r->tensors[i].kind == G3_CKPT_OPTIM;
    with_optim &= !o->no_save_optim;
    g3_ckpt_iter_path(out, r->iteration, final, sizeof(final));
    if (stat(final, &sb) == 0) {
        g3_error("convert: %s already exists; choose an empty output directory", final);
        st = G3_ERR_INVALID_ARG;
        goto err_close_reader;
    }
    if (o->pp_size == r->pp_size) {
        bounds = malloc((size_t)(r->pp_size + 1) * sizeof(int));
        if (bounds == NULL) {
            st = G3_ERR_NO_MEMORY;
            goto err_close_reader;
        }
        memcpy(bounds, r->stage_first, (size_t)(r->pp_size + 1) * sizeof(int));
    } else if (r->num_layers % o->pp_size != 0 || r->num_layers < o->pp_size) {
        g3_error("convert: %d layers cannot be split evenly over %d pipeline stages", r->num_layers, o->pp_size);
        st = G3_ERR_INVALID_ARG;
        goto err_close_reader;
    }
    /* Every tensor must divide under the new TP before anything is written. */
    for (size_t i = 0; i < r->ntensors; i++) {
        g3_ckpt_tensor_t t;
        g3_ckpt_piece_t b[3];
        int nb;
        g3_ckpt_reader_tensor(r, (int)i, &t);
        st = g3_ckpt_tp_boxes(&t, 0, o->tp_size, b, &nb);
        if (st != G3_OK)
            goto err_close_reader;
    }
    g3_info("convert: %s (iteration %lld, TP %d x PP %d x DP %d) -> %s as TP %d x PP %d x DP %d%s",
            r->dir, (long long)r->iteration, r->tp_size, r->pp_size, r->dp_size, out, o->tp_size,
            o->pp_size, o->dp_size, with_optim ? "" : ", without optimizer state");
    st = g3_ckpt_save_prepare(out, r->iteration, &so);
    if (st != G3_OK)
        goto err_close_reader;
    for (int pp = 0; st == G3_OK && pp < o->pp_size; pp++)
        for (int dp = 0; st == G3_OK && dp < o->dp_size; dp++)
            for (int tp = 0; st == G3_OK && tp < o->tp_size; tp++) {
                g3_ckpt_layout_t l = { o->tp_size, o->pp_size,    o->dp_size, tp, pp,
                                       dp,         r->num_layers, bounds,     0 };
                g3_ckpt_state_t *rs;
                void **bufs;
                int nbufs;
                g3_ckpt_load_opts_t lo;

                memset(&lo, 0, sizeof(lo));
                st = g3_ckpt_build_rank(r, &l, with_optim, &rs, &bufs, &nbufs);
                if (st != G3_OK)
                    break;
                st = g3_ckpt_reader_load(r, rs, &lo);
                if (st == G3_OK)
                    st = g3_ckpt_write_shards(out, rs, &so);
                if (st == G3_OK && tp == 0 && pp == 0 && dp == 0) {
                    root = rs;              /* kept for the commit */
                    rootbufs = bufs;
                    nrootbufs = nbufs;
                } else {
                    g3_ckpt_free_rank(rs, bufs, nbufs);
                }
            }
    if (st == G3_OK)
        st = g3_ckpt_commit(out, root, &so);
    if (st != G3_OK) {
        g3_ckpt_save_abort(out, r->iteration, &so);
        g3_error("convert: %s was not converted", r->dir);
    }
    if (root)
        g3_ckpt_free_rank(root, rootbufs, nrootbufs);

err_close_reader:
    free(bounds);
    g3_ckpt_reader_close(r);
    return st;
}
