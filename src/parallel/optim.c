/* gpt3d parallel: gradient reduction, global-norm clipping and AdamW under a 3D layout,
 * with the optimizer state replicated over DP or sharded (ZeRO-1).  Glossary in par.h.
 *
 * After the schedule each rank holds the gradients of its micro-batches for its tensors:
 *   1. the tied word embedding: first and last stage sum their gradients (group emb);
 *   2. DP: each segment of the flat buffer is all-reduced, or (ZeRO-1) reduce-scattered:
 *      DP rank r receives the sum of block r; the len mod DP elements left at the end of a
 *      segment are all-reduced and updated by every rank;
 *   3. the global norm: every rank adds the squares of the reduced gradients it holds and
 *      that no other rank counts (TP-replicated tensors on TP rank 0 only, the last stage's
 *      copy of the word embedding never, replicated DP state on DP rank 0 only), summed
 *      over the world;
 *   4. clip by clip / (norm + 1e-6) when that is below 1, AdamW on what the rank updates;
 *   5. ZeRO-1: all-gather the updated blocks over DP.
 * Gradients and master weights are fp32 on every backend and move on the layout's buffer
 * groups (par->buf: UCX on the host for the CPU backend, NCCL on the GPU for CUDA), in fp32;
 * with --grad-reduce-in-bf16 the DP reductions (step 2) move bf16 copies instead (cast,
 * reduce, cast back into the fp32 buffers: half the bytes, one bf16 rounding of every
 * rank's gradient and of every partial sum).
 * The word embedding is a segment of its own, so its blocks, and the order of every sum,
 * are the same on the first and on the last stage: both copies stay bitwise equal.
 * Bucketed (--ddp-bucket-size, --overlap-grad-reduce, --overlap-param-gather): step 2 runs
 * per bucket of layers on the non-blocking collectives (comm.h, one fixed algorithm), started
 * from the model's backward hook during the last micro-batch (or after the schedule without
 * overlap: the same bits), and step 5 per bucket, waited for after the step or (overlap)
 * before the bucket's first use in the next forward; docs/parallelism.md, "Buckets and
 * overlap". */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "parallel/par_internal.h"

#define G3_PAR_WTE "embedding.word_embeddings.weight"

static int g3_par_by_offset(const void *a, const void *b)
{
    size_t x = (*(const g3_gpt_param_t *const *)a)->offset;
    size_t y = (*(const g3_gpt_param_t *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* RET: 1 when this rank counts p's gradient in the global norm (at the tensor level). */
static int g3_par_counts(const g3_gpt_t *m, const g3_gpt_param_t *p)
{
    if (p->tp_dim < 0 && m->cfg.tp_rank != 0)
        return 0;   /* replicated over TP: rank 0's copy */
    if (!m->has_embedding && strcmp(p->name, G3_PAR_WTE) == 0)
        return 0;   /* the last stage's copy of the tied embedding */
    return 1;
}

/* Weight-decay runs tiling [0, numel): one AdamW call per run and piece. */
static g3_status_t g3_par_runs(const g3_gpt_t *m, g3_par_adamw_run_t **runs_p, int *n_p)
{
    const g3_gpt_param_t **order = malloc(sizeof(*order) * (size_t)(m->nparams + 1));
    g3_par_adamw_run_t *runs = calloc((size_t)m->nparams + 1, sizeof(*runs));
    int n = 0;

    if (!order || !runs) {
        free(order);
        free(runs);
        g3_error("optimizer: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < m->nparams; i++)
        order[i] = &m->params[i];
    qsort(order, (size_t)m->nparams, sizeof(*order), g3_par_by_offset);
    for (int i = 0; i < m->nparams; i++) {
        if (n > 0 && runs[n - 1].weight_decay == order[i]->weight_decay)
            continue;
        if (n > 0)
            runs[n - 1].end = order[i]->offset;
        runs[n].begin = n == 0 ? 0 : order[i]->offset;
        runs[n].weight_decay = order[i]->weight_decay;
        n++;
    }
    if (n > 0)
        runs[n - 1].end = m->numel;
    free(order);
    *runs_p = runs;
    *n_p = n;
    return G3_OK;
}

/* Megatron-LM's default bucket: max(40M, 1M x DP) elements. */
static int64_t g3_par_default_bucket(int dp)
{
    return (int64_t)1000000 * dp > 40000000 ? (int64_t)1000000 * dp : 40000000;
}

/* The buckets and their segments (bucketed reductions).  Walking the stage's layers from
 * the last, a bucket closes once it holds at least `size` elements (at most
 * G3_PAR_BUCKETS_MAX layer buckets; the last takes the rest).  The last layer bucket also
 * holds what is not in a layer (the embeddings, the final LayerNorm) and starts after the
 * whole backward; with PP > 1 the tied word embedding is a bucket of its own that starts
 * after its two copies were summed.  Each bucket's tensors form up to two ranges of the
 * flat buffer (weights first, then biases and LayerNorms): its segments.
 * OUT: o->buckets, o->nbuckets, o->seg, o->nseg (off, len, bucket). */
static g3_status_t g3_par_buckets(g3_par_engine_t *eng, int64_t size)
{
    g3_par_optim_t *o = &eng->opt;
    g3_gpt_t *m = eng->model;
    int nl = m->layer_end - m->layer_begin, nb = 1, wte_alone;
    int *lb = calloc((size_t)nl + 1, sizeof(int));
    const g3_gpt_param_t **order = malloc(sizeof(*order) * (size_t)(m->nparams + 1));
    int64_t acc = 0;

    if (!lb || !order)
        goto err_no_memory;
    wte_alone = eng->par->layout.pp > 1 && g3_gpt_param_find(m, G3_PAR_WTE) != NULL;
    for (int li = nl - 1; li >= 0; li--) {
        for (int k = 0; k < m->nparams; k++)
            if (m->params[k].layer == g3_gpt_layer_global(m, li))
                acc += (int64_t)m->params[k].numel;
        lb[li] = nb - 1;
        if (acc >= size && li > 0 && nb < G3_PAR_BUCKETS_MAX) {
            nb++;
            acc = 0;
        }
    }
    o->nbuckets = nb + wte_alone;
    o->buckets = calloc((size_t)o->nbuckets, sizeof(*o->buckets));
    o->seg = calloc(2 * (size_t)o->nbuckets + 4, sizeof(*o->seg));
    if (!o->buckets || !o->seg)
        goto err_no_memory;
    for (int b = 0; b < o->nbuckets; b++) {
        o->buckets[b].trigger = b == nb ? G3_PAR_TRIGGER_EMB : G3_PAR_TRIGGER_END;
        o->buckets[b].fwd_layer = nl;
    }
    for (int li = nl - 1; li >= 0; li--) {
        if (lb[li] < nb - 1)
            o->buckets[lb[li]].trigger = li;   /* the lowest layer of the bucket */
        o->buckets[lb[li]].fwd_layer = li;
    }
    for (int k = 0; k < m->nparams; k++)
        order[k] = &m->params[k];
    qsort(order, (size_t)m->nparams, sizeof(*order), g3_par_by_offset);
    o->nseg = 0;
    for (int k = 0; k < m->nparams; k++) {
        const g3_gpt_param_t *p = order[k];
        int b = nb - 1;
        if (p->layer >= 0 && g3_gpt_layer_local(m, p->layer) >= 0)
            b = lb[g3_gpt_layer_local(m, p->layer)];
        else if (wte_alone && strcmp(p->name, G3_PAR_WTE) == 0)
            b = nb;
        if (p->layer == -1 || p->layer == -2) {   /* the embedding, the head: first/last use */
            int use = p->layer == -1 && m->has_embedding ? -1 : nl;
            if (use < o->buckets[b].fwd_layer)
                o->buckets[b].fwd_layer = use;
        }
        if (o->nseg > 0 && o->seg[o->nseg - 1].bucket == b)
            continue;
        if (o->nseg > 0)
            o->seg[o->nseg - 1].len = p->offset - o->seg[o->nseg - 1].off;
        o->seg[o->nseg].off = k == 0 ? 0 : p->offset;
        o->seg[o->nseg].bucket = b;
        o->nseg++;
    }
    if (o->nseg > 0)
        o->seg[o->nseg - 1].len = m->numel - o->seg[o->nseg - 1].off;
    free(order);
    free(lb);
    return G3_OK;

err_no_memory:
    free(order);
    free(lb);
    free(o->buckets);
    free(o->seg);
    o->buckets = NULL;
    o->seg = NULL;
    g3_error("optimizer: out of memory for the gradient buckets");
    return G3_ERR_NO_MEMORY;
}

/* Without buckets, the segments of the flat gradient buffer: the whole of it, but the word
 * embedding alone when two stages hold it.  OUT: eng->opt.seg, nseg.  RET: G3_ERR_NO_MEMORY
 * (logged). */
static g3_status_t g3_par_segments(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_gpt_t *m = eng->model;
    const g3_gpt_param_t *wte = g3_gpt_param_find(m, G3_PAR_WTE);
    size_t cut[4], ncut = 0;

    cut[ncut++] = 0;
    if (wte && eng->par->layout.pp > 1) {
        size_t b = wte->offset, e = (wte->offset + wte->numel + 15) & ~(size_t)15;
        if (b > 0)
            cut[ncut++] = b;
        if (e < m->numel)
            cut[ncut++] = e;
    }
    cut[ncut] = m->numel;
    o->seg = calloc(ncut, sizeof(*o->seg));
    if (!o->seg) {
        g3_error("optimizer: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    o->nseg = (int)ncut;
    for (int i = 0; i < o->nseg; i++) {
        o->seg[i].off = cut[i];
        o->seg[i].len = cut[i + 1] - cut[i];
    }
    return G3_OK;
}

/* The pieces AdamW updates on this rank: each segment whole (replicated), or under ZeRO-1
 * this rank's shard of it (its reduced gradient in gshard) and the remainder the shards leave
 * (every rank updates it; DP rank 0's copy counts in the global norm, as does a replicated
 * segment's).  OUT: eng->opt.pieces[0 .. npieces). */
static void g3_par_pieces(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    const g3_par_layout_t *l = &eng->par->layout;
    g3_gpt_t *m = eng->model;

    for (int i = 0; i < o->nseg; i++) {
        const g3_par_segment_t *s = &o->seg[i];
        size_t so = s->so;
        g3_par_piece_t *p;
        if (!o->zero) {
            p = &o->pieces[o->npieces++];
            *p = (g3_par_piece_t){ s->off, s->off + s->len, m->g + s->off, o->m + so, o->v + so,
                                   l->dp_rank == 0 };
            continue;
        }
        if (s->q > 0) {
            size_t b = s->off + (size_t)l->dp_rank * s->q;
            p = &o->pieces[o->npieces++];
            *p = (g3_par_piece_t){ b, b + s->q, o->gshard + so, o->m + so, o->v + so, 1 };
        }
        if (s->rem > 0) {
            size_t b = s->off + s->q * (size_t)l->dp;
            p = &o->pieces[o->npieces++];
            *p = (g3_par_piece_t){ b, s->off + s->len, m->g + b, o->m + so + s->q,
                                   o->v + so + s->q, l->dp_rank == 0 };
        }
    }
}

g3_status_t g3_par_optim_init(g3_par_engine_t *eng, const g3_par_engine_config_t *cfg)
{
    g3_par_optim_t *o = &eng->opt;
    const g3_par_layout_t *l = &eng->par->layout;
    g3_gpt_t *m = eng->model;
    g3_backend_t *be = m->be;
    g3_status_t st;

    memset(o, 0, sizeof(*o));
    o->cfg = cfg->adamw;
    o->zero = cfg->distributed_optimizer;
    o->bf16_reduce = cfg->grad_reduce_bf16 && l->dp > 1;
    o->overlap = cfg->overlap_grad_reduce;
    o->param_overlap = cfg->overlap_param_gather && o->zero;
    o->bucketed = cfg->ddp_bucket_size > 0 || o->overlap || o->param_overlap;
    if (o->bucketed) {
        st = g3_par_buckets(eng, cfg->ddp_bucket_size > 0 ? cfg->ddp_bucket_size
                                                           : g3_par_default_bucket(l->dp));
        if (st != G3_OK)
            return st;
    } else {
        st = g3_par_segments(eng);
        if (st != G3_OK)
            return st;
    }
    for (int i = 0; i < o->nseg; i++) {
        g3_par_segment_t *s = &o->seg[i];
        s->q = o->zero ? s->len / (size_t)l->dp : 0;
        s->rem = o->zero ? s->len - s->q * (size_t)l->dp : 0;
        s->so = o->state_numel;
        o->state_numel += o->zero ? s->q + s->rem : s->len;
    }
    st = g3_par_runs(m, &o->runs, &o->nruns);
    if (st != G3_OK)
        goto err_free;
    o->pieces = calloc(2 * (size_t)o->nseg, sizeof(*o->pieces));
    if (!o->pieces) {
        g3_error("optimizer: out of memory");
        st = G3_ERR_NO_MEMORY;
        goto err_free;
    }
    st = be->ops->alloc(be, o->state_numel * sizeof(float), "the Adam first moments",
                        (void **)&o->m);
    if (st != G3_OK)
        goto err_free;
    st = be->ops->alloc(be, o->state_numel * sizeof(float), "the Adam second moments",
                        (void **)&o->v);
    if (st != G3_OK)
        goto err_free;
    if (o->zero) {
        st = be->ops->alloc(be, o->state_numel * sizeof(float),
                            "the reduced gradient shard (ZeRO-1)", (void **)&o->gshard);
        if (st != G3_OK)
            goto err_free;
        be->ops->zero(be, o->gshard, o->state_numel * sizeof(float));
    }
    be->ops->zero(be, o->m, o->state_numel * sizeof(float));
    be->ops->zero(be, o->v, o->state_numel * sizeof(float));
    if (o->bf16_reduce) {
        size_t lmax = 0, qmax = 0;
        for (int i = 0; i < o->nseg; i++) {
            lmax = o->seg[i].len > lmax ? o->seg[i].len : lmax;
            qmax = o->seg[i].q > qmax ? o->seg[i].q : qmax;
        }
        if (o->bucketed) {   /* buckets in flight together: a bf16 copy of everything */
            lmax = m->numel;
            qmax = o->state_numel;
        }
        st =
            be->ops
                ->alloc(be, (lmax ? lmax : 1) * sizeof(uint16_t),
                        "the bf16 gradients of the data-parallel reduction (--grad-reduce-in-bf16)",
                        (void **)&o->g16);
        if (st == G3_OK && o->zero)
            st = be->ops->alloc(be, (qmax ? qmax : 1) * sizeof(uint16_t),
                                "the bf16 reduced gradient shard (--grad-reduce-in-bf16)",
                                (void **)&o->s16);
        if (st != G3_OK)
            goto err_free;
    }

    st = g3_be_clip_alloc(be, &o->dsumsq, &o->dscale);
    if (st != G3_OK)
        goto err_free;

    g3_par_pieces(eng);
    return G3_OK;

err_free:
    g3_par_optim_free(eng);   /* o was zeroed first: frees what was allocated */
    return st;
}

void g3_par_optim_free(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_backend_t *be = eng->model->be;
    if (o->dsumsq)
        be->ops->free(be, o->dsumsq);
    if (o->s16)
        be->ops->free(be, o->s16);
    if (o->g16)
        be->ops->free(be, o->g16);
    if (o->gshard)
        be->ops->free(be, o->gshard);
    if (o->v)
        be->ops->free(be, o->v);
    if (o->m)
        be->ops->free(be, o->m);
    for (int i = 0; i < o->nseg; i++)
        for (int k = 0; k < 2; k++)
            g3_comm_req_free(o->seg[i].req[k]);
    free(o->pieces);
    free(o->runs);
    free(o->seg);
    free(o->buckets);
    memset(o, 0, sizeof(*o));   /* a second call (the engine's, after a failed init) is a no-op */
}

/* Step 2 for segment s with --grad-reduce-in-bf16: the segment's gradients cast to bf16,
 * all-reduced (or reduce-scattered, the tail all-reduced) in bf16 and cast back into the
 * fp32 buffers (m->g, the ZeRO-1 shard). */
static g3_status_t g3_par_reduce_bf16(g3_par_engine_t *eng, const g3_par_segment_t *s)
{
    g3_par_optim_t *o = &eng->opt;
    g3_comm_t *dpc = eng->par->buf.dp;
    g3_backend_t *be = eng->model->be;
    float *g = eng->model->g + s->off;
    size_t head = o->zero ? s->q * (size_t)eng->par->layout.dp : 0;   /* reduce-scattered */
    g3_status_t st;

    be->ops->cast(be, o->g16, G3_BE_BF16, g, G3_BE_F32, s->len);
    st = be->ops->sync(be);
    if (st == G3_OK && o->zero && s->q > 0)
        st = g3_comm_reduce_scatter(dpc, o->g16, o->s16, s->q, G3_DTYPE_BFLOAT16, G3_COMM_SUM);
    if (st == G3_OK && s->len > head)
        st = g3_comm_allreduce(dpc, o->g16 + head, o->g16 + head, s->len - head,
                               G3_DTYPE_BFLOAT16, G3_COMM_SUM);
    if (st != G3_OK)
        return st;
    if (o->zero && s->q > 0)
        be->ops->cast(be, o->gshard + s->so, G3_BE_F32, o->s16, G3_BE_BF16, s->q);
    if (s->len > head)
        be->ops->cast(be, g + head, G3_BE_F32, o->g16 + head, G3_BE_BF16, s->len - head);
    return be->ops->sync(be);
}

/* ---- bucketed reductions (non-blocking collectives) --------------------------------------- */

/* Start step 2 for segment s: non-blocking collectives ordered behind the work queued on
 * the backend (its stream; a backend without one is synced first). */
static g3_status_t g3_par_seg_start(g3_par_engine_t *eng, g3_par_segment_t *s)
{
    g3_par_optim_t *o = &eng->opt;
    g3_comm_t *dpc = eng->par->buf.dp;
    g3_backend_t *be = eng->model->be;
    float *g = eng->model->g + s->off;
    size_t head = o->zero ? s->q * (size_t)eng->par->layout.dp : 0;   /* reduce-scattered */
    g3_status_t st = G3_OK;

    if (!o->zero && eng->par->layout.dp == 1)
        return G3_OK;
    if (o->bf16_reduce) {
        uint16_t *g16 = o->g16 + s->off;
        be->ops->cast(be, g16, G3_BE_BF16, g, G3_BE_F32, s->len);
        if (!be->stream)
            st = be->ops->sync(be);
        if (st == G3_OK && o->zero && s->q > 0)
            st = g3_comm_ireduce_scatter(dpc, g16, o->s16 + s->so, s->q, G3_DTYPE_BFLOAT16,
                                         G3_COMM_SUM, be->stream, &s->req[0]);
        if (st == G3_OK && s->len > head)
            st = g3_comm_iallreduce(dpc, g16 + head, g16 + head, s->len - head,
                                    G3_DTYPE_BFLOAT16, G3_COMM_SUM, be->stream, &s->req[1]);
        return st;
    }
    if (!be->stream)
        st = be->ops->sync(be);
    if (st == G3_OK && o->zero && s->q > 0)
        st = g3_comm_ireduce_scatter(dpc, g, o->gshard + s->so, s->q, G3_DTYPE_FLOAT32,
                                     G3_COMM_SUM, be->stream, &s->req[0]);
    if (st == G3_OK && s->len > head)
        st = g3_comm_iallreduce(dpc, g + head, g + head, s->len - head, G3_DTYPE_FLOAT32,
                                G3_COMM_SUM, be->stream, &s->req[1]);
    return st;
}

/* Finish what g3_par_seg_start started: wait, and (bf16) cast back into the fp32 buffers. */
static g3_status_t g3_par_seg_wait(g3_par_engine_t *eng, g3_par_segment_t *s)
{
    g3_par_optim_t *o = &eng->opt;
    g3_backend_t *be = eng->model->be;
    size_t head = o->zero ? s->q * (size_t)eng->par->layout.dp : 0;
    int had[2] = { s->req[0] != NULL, s->req[1] != NULL };
    g3_status_t st = g3_comm_wait(s->req[0]);

    s->req[0] = NULL;
    if (st == G3_OK)
        st = g3_comm_wait(s->req[1]);
    s->req[1] = NULL;
    if (st != G3_OK || !o->bf16_reduce)
        return st;
    if (had[0])
        be->ops->cast(be, o->gshard + s->so, G3_BE_F32, o->s16 + s->so, G3_BE_BF16, s->q);
    if (had[1])
        be->ops->cast(be, eng->model->g + s->off + head, G3_BE_F32, o->g16 + s->off + head,
                      G3_BE_BF16, s->len - head);
    return G3_OK;
}

/* Start every segment of bucket b. */
static g3_status_t g3_par_bucket_start(g3_par_engine_t *eng, int b)
{
    g3_par_optim_t *o = &eng->opt;
    g3_status_t st = G3_OK;
    o->buckets[b].started = 1;
    for (int i = 0; i < o->nseg && st == G3_OK; i++)
        if (o->seg[i].bucket == b)
            st = g3_par_seg_start(eng, &o->seg[i]);
    return st;
}

/* Progress every request in flight (the host backend's rounds advance here). */
static g3_status_t g3_par_progress(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_status_t st = G3_OK;
    for (int i = 0; i < o->nseg && st == G3_OK; i++)
        for (int k = 0; k < 2 && st == G3_OK; k++)
            if (o->seg[i].req[k]) {
                int done;
                st = g3_comm_test(o->seg[i].req[k], &done);
            }
    return st;
}

g3_status_t g3_par_optim_bwd_hook(void *ctx, int li)
{
    g3_par_engine_t *eng = ctx;
    g3_par_optim_t *o = &eng->opt;
    g3_status_t st = G3_OK;

    if (!o->armed)
        return G3_OK;
    for (int b = 0; b < o->nbuckets && st == G3_OK; b++)
        if (!o->buckets[b].started && o->buckets[b].trigger == li) {
            if (li >= 0)
                g3_debug(
                    "gradient bucket %d of %d: reduction started during the backward, after layer %d",
                    b, o->nbuckets, g3_gpt_layer_global(eng->model, li));
            else
                g3_debug("gradient bucket %d of %d: reduction started at the end of the backward",
                         b, o->nbuckets);
            st = g3_par_bucket_start(eng, b);
        }
    return st == G3_OK ? g3_par_progress(eng) : st;
}

/* Step 2, bucketed: start the buckets not started yet in bucket order (all of them without
 * --overlap-grad-reduce), then wait for every segment. */
static g3_status_t g3_par_reduce_buckets(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_status_t st = G3_OK;

    for (int b = 0; b < o->nbuckets && st == G3_OK; b++)
        if (!o->buckets[b].started)
            st = g3_par_bucket_start(eng, b);
    for (int i = 0; i < o->nseg; i++) {
        g3_status_t wst = st == G3_OK ? g3_par_seg_wait(eng, &o->seg[i]) : G3_OK;
        if (st != G3_OK) {
            for (int k = 0; k < 2; k++) {
                g3_comm_req_free(o->seg[i].req[k]);
                o->seg[i].req[k] = NULL;
            }
        }
        st = st == G3_OK ? wst : st;
    }
    for (int b = 0; b < o->nbuckets; b++)
        o->buckets[b].started = 0;
    o->armed = 0;
    if (st == G3_OK)
        st = eng->model->be->ops->sync(eng->model->be);
    return st;
}

/* --overlap-param-gather: wait for the all-gathers of the buckets first read by layer li
 * (li = -1 the embedding, nl the head), then refresh the passes' copy of the weights. */
static g3_status_t g3_par_gather_wait_where(g3_par_engine_t *eng, int all, int li)
{
    g3_par_optim_t *o = &eng->opt;
    g3_status_t st = G3_OK;
    int any = 0;

    for (int b = 0; b < o->nbuckets; b++) {
        if (!o->buckets[b].gathering || (!all && o->buckets[b].fwd_layer != li))
            continue;
        o->buckets[b].gathering = 0;
        any = 1;
        if (!all)
            g3_debug(
                "parameter bucket %d of %d: all-gather waited for at its first use in the forward (local layer %d)",
                b, o->nbuckets, li);
        for (int i = 0; i < o->nseg; i++) {
            if (o->seg[i].bucket != b)
                continue;
            if (st == G3_OK)
                st = g3_comm_wait(o->seg[i].req[0]);
            else
                g3_comm_req_free(o->seg[i].req[0]);
            o->seg[i].req[0] = NULL;
        }
    }
    if (any && st == G3_OK)
        g3_gpt_params_refresh(eng->model);   /* the passes' bf16 copy on CUDA */
    return st;
}

g3_status_t g3_par_optim_fwd_hook(void *ctx, int li)
{
    g3_par_engine_t *eng = ctx;
    if (!eng->opt.param_overlap)
        return G3_OK;
    return g3_par_gather_wait_where(eng, 0, li);
}

g3_status_t g3_par_optim_gather_wait(g3_par_engine_t *eng)
{
    if (!eng->opt.param_overlap)
        return G3_OK;
    return g3_par_gather_wait_where(eng, 1, 0);
}

/* Steps 1 and 2: the embedding group, then DP. */
static g3_status_t g3_par_reduce(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_par_t *par = eng->par;
    g3_gpt_t *m = eng->model;
    const g3_gpt_param_t *wte = g3_gpt_param_find(m, G3_PAR_WTE);
    int dp = par->layout.dp;
    g3_status_t st = m->be->ops->sync(m->be);

    if (st == G3_OK && wte && g3_comm_size(par->buf.emb) > 1)
        st = g3_comm_allreduce(par->buf.emb, m->g + wte->offset, m->g + wte->offset,
                               wte->numel, G3_DTYPE_FLOAT32, G3_COMM_SUM);
    if (st == G3_OK && o->bucketed)
        return g3_par_reduce_buckets(eng);
    for (int i = 0; i < o->nseg && st == G3_OK; i++) {
        const g3_par_segment_t *s = &o->seg[i];
        if (dp == 1 && !o->zero)
            break;
        if (o->bf16_reduce) {
            st = g3_par_reduce_bf16(eng, s);
            continue;
        }
        if (!o->zero) {
            st = g3_comm_allreduce(par->buf.dp, m->g + s->off, m->g + s->off, s->len,
                                   G3_DTYPE_FLOAT32, G3_COMM_SUM);
            continue;
        }
        if (s->q > 0)
            st = g3_comm_reduce_scatter(par->buf.dp, m->g + s->off, o->gshard + s->so, s->q,
                                        G3_DTYPE_FLOAT32, G3_COMM_SUM);
        if (st == G3_OK && s->rem > 0) {
            float *r = m->g + s->off + s->q * (size_t)dp;
            st = g3_comm_allreduce(par->buf.dp, r, r, s->rem, G3_DTYPE_FLOAT32, G3_COMM_SUM);
        }
    }
    return st;
}

/* Tests: write the reduced gradients this rank holds to DIR/grads-rank<r>.bin. */
static g3_status_t g3_par_dump(g3_par_engine_t *eng)
{
    g3_par_optim_t *o = &eng->opt;
    g3_gpt_t *m = eng->model;
    char path[4200];
    float *host = malloc(sizeof(float) * (m->numel ? m->numel : 1));
    FILE *f = NULL;
    g3_status_t st;

    if (!host) {
        g3_error("gradient dump: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    st = g3_par_dump_open(eng->grad_dump_dir, "grads", eng->par->layout.world_rank, path,
                          sizeof(path), &f);
    for (int i = 0; i < o->npieces && st == G3_OK; i++) {
        const g3_par_piece_t *p = &o->pieces[i];
        m->be->ops->download(m->be, host, p->g, sizeof(float) * (p->end - p->begin));
        st = g3_par_dump_range(f, path, m, p->begin, p->end, host);
    }
    if (f) {
        g3_status_t cst = g3_par_dump_close(f, path);
        if (st == G3_OK)
            st = cst;
    }
    free(host);
    return st;
}

/* Tests: the Adam first moments of the ranges this rank owns (par.h); here beside the ranges,
 * so that the dump file primitives (dump.c) call nothing of the engine. */
g3_status_t g3_par_engine_dump_adam(g3_par_engine_t *eng, const char *dir)
{
    const g3_gpt_t *model = eng->model;
    g3_par_optim_range_t rg[G3_PAR_OPTIM_RANGES_MAX];
    int64_t *step;
    int n = g3_par_engine_optim_ranges(eng, rg, &step);
    float *host = malloc(sizeof(float) * (model->numel ? model->numel : 1));
    char path[4200];
    FILE *f = NULL;
    g3_status_t st;

    if (!host) {
        g3_error("gradient dump: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    st = g3_par_dump_open(dir, "adam_m", eng->par->layout.world_rank, path, sizeof(path),
                          &f);
    for (int i = 0; i < n && st == G3_OK; i++) {
        if (!rg[i].owner)
            continue;
        model->be->ops->download(model->be, host, rg[i].m,
                                 sizeof(float) * (rg[i].end - rg[i].begin));
        st = g3_par_dump_range(f, path, model, rg[i].begin, rg[i].end, host);
    }
    if (f && g3_par_dump_close(f, path) != G3_OK && st == G3_OK)
        st = G3_ERR_IO;
    free(host);
    return st;
}

/* The terms of the global gradient norm this rank adds, in a fixed order: for every piece of
 * the reduced gradients it owns, the part of each parameter that counts (g3_par_counts: a
 * replicated copy counts once over the world).  Calls fn on each (g (n,), backend memory). */
static void g3_par_norm_terms(g3_par_engine_t *eng,
                              void (*fn)(g3_par_engine_t *eng, const float *g, size_t n, void *ctx),
                              void *ctx)
{
    g3_par_optim_t *o = &eng->opt;
    g3_gpt_t *m = eng->model;

    for (int i = 0; i < o->npieces; i++) {
        const g3_par_piece_t *pc = &o->pieces[i];
        if (!pc->in_norm)
            continue;
        for (int k = 0; k < m->nparams; k++) {
            const g3_gpt_param_t *p = &m->params[k];
            size_t lo = p->offset > pc->begin ? p->offset : pc->begin;
            size_t hi = p->offset + p->numel < pc->end ? p->offset + p->numel : pc->end;
            if (lo >= hi || !g3_par_counts(m, p))
                continue;
            fn(eng, pc->g + (lo - pc->begin), hi - lo, ctx);
        }
    }
}

static void g3_par_norm_term_dev(g3_par_engine_t *eng, const float *g, size_t n, void *ctx)
{
    g3_backend_t *be = eng->model->be;
    (void)ctx;
    be->ops->sumsq_acc(be, eng->opt.dsumsq, g, n);
}

static void g3_par_norm_term_host(g3_par_engine_t *eng, const float *g, size_t n, void *ctx)
{
    g3_backend_t *be = eng->model->be;
    double part = 0.0;
    be->ops->sumsq(be, g, n, &part);
    *(double *)ctx += part;
}

/* Step 3 in backend memory (o->dsumsq): the same terms in the same order as g3_par_norm,
 * accumulated by the backend; the world sum is, with NCCL groups (GPU ranks), three
 * all-reduces of the device double over the tp, pp and dp groups (together the world), else
 * (the CPU backend, whose memory is the host's) the host world all-reduce of g3_par_norm.
 * Then the clipping scale on the backend (AdamW reads it there), and the norm downloaded
 * for the log and the finiteness check.  OUT: *norm_p */
static g3_status_t g3_par_norm_dev(g3_par_engine_t *eng, double *norm_p)
{
    g3_par_optim_t *o = &eng->opt;
    g3_par_t *par = eng->par;
    g3_gpt_t *m = eng->model;
    g3_backend_t *be = m->be;
    double ss = 0.0;
    g3_status_t st;

    be->ops->zero(be, o->dsumsq, sizeof(double));
    if (par->layout.world_size == 1)
        be->ops->sumsq_acc(be, o->dsumsq, m->g, m->numel);   /* g3_par_norm: one rank */
    else
        g3_par_norm_terms(eng, g3_par_norm_term_dev, NULL);
    st = be->ops->sync(be);
    if (st == G3_OK && par->dev.tp) {
        g3_comm_t *axes[3] = { par->buf.tp, par->buf.pp, par->buf.dp };
        for (int i = 0; i < 3 && st == G3_OK; i++)
            if (g3_comm_size(axes[i]) > 1)
                st = g3_comm_allreduce(axes[i], o->dsumsq, o->dsumsq, 1, G3_DTYPE_FLOAT64,
                                       G3_COMM_SUM);
    } else if (st == G3_OK) {
        st = g3_par_world_allreduce(par, o->dsumsq, 1, 0);
    }
    if (st != G3_OK)
        return st;
    be->ops->clip_scale(be, o->dscale, o->dsumsq, o->cfg.clip_grad);
    be->ops->download(be, &ss, o->dsumsq, sizeof(double));
    st = be->ops->sync(be);
    *norm_p = sqrt(ss);
    return st;
}

/* Step 3.  On one rank (the 1 x 1 x 1 layout) every element counts and the reduced
 * gradients are the model's, so the squares are summed in one pass over the flat buffer
 * (its alignment gaps hold zeros): the order of the single-rank trainer this engine
 * replaced, so one-rank results stayed bitwise the same.  OUT: *norm_p */
static g3_status_t g3_par_norm(g3_par_engine_t *eng, double *norm_p)
{
    g3_par_optim_t *o = &eng->opt;
    g3_gpt_t *m = eng->model;
    double ss = 0.0;
    g3_status_t st;

    if (o->dsumsq)
        return g3_par_norm_dev(eng, norm_p);
    if (eng->par->layout.world_size == 1)   /* one sum over the flat buffer (zero gaps) */
        m->be->ops->sumsq(m->be, m->g, m->numel, &ss);
    else
        g3_par_norm_terms(eng, g3_par_norm_term_host, &ss);
    st = m->be->ops->sync(m->be);
    if (st == G3_OK)
        st = g3_par_world_allreduce(eng->par, &ss, 1, 0);
    *norm_p = sqrt(ss);
    return st;
}

g3_status_t g3_par_optim_step(g3_par_engine_t *eng, double lr, int64_t iteration,
                              double *norm_p)
{
    g3_par_optim_t *o = &eng->opt;
    g3_par_t *par = eng->par;
    g3_gpt_t *m = eng->model;
    g3_backend_t *be = m->be;
    double norm = NAN;
    g3_status_t st;

    *norm_p = NAN;
    st = g3_par_reduce(eng);
    if (st == G3_OK && eng->grad_dump_dir && iteration == 1)
        st = g3_par_dump(eng);
    if (st == G3_OK)
        st = g3_par_norm(eng, &norm);
    if (st != G3_OK)
        return st;
    *norm_p = norm;
    if (!isfinite(norm))
        return G3_ERR_NUMERIC;
    if (o->cfg.clip_grad > 0.0 && !o->dscale) {   /* else AdamW applies *dscale */
        double coeff = o->cfg.clip_grad / (norm + 1e-6);
        if (coeff < 1.0)
            for (int i = 0; i < o->npieces; i++)
                be->ops->scale(be, o->pieces[i].g, o->pieces[i].end - o->pieces[i].begin,
                               (float)coeff);
    }
    o->step++;
    for (int i = 0; i < o->npieces; i++) {
        const g3_par_piece_t *pc = &o->pieces[i];
        for (int r = 0; r < o->nruns; r++) {
            size_t lo = o->runs[r].begin > pc->begin ? o->runs[r].begin : pc->begin;
            size_t hi = o->runs[r].end < pc->end ? o->runs[r].end : pc->end;
            size_t d = lo - pc->begin;
            float wd = o->runs[r].weight_decay ? (float)o->cfg.weight_decay : 0.0f;
            if (lo >= hi)
                continue;
            if (o->dscale)
                be->ops->adamw_scaled(be, m->w + lo, pc->g + d, pc->m + d, pc->v + d, hi - lo,
                                      (float)lr, (float)o->cfg.beta1, (float)o->cfg.beta2,
                                      (float)o->cfg.eps, wd, o->step, o->dscale);
            else
                be->ops->adamw(be, m->w + lo, pc->g + d, pc->m + d, pc->v + d, hi - lo,
                               (float)lr, (float)o->cfg.beta1, (float)o->cfg.beta2,
                               (float)o->cfg.eps, wd, o->step);
        }
    }
    st = be->ops->sync(be);
    if (st == G3_OK && o->zero && o->bucketed) {
        /* per bucket, in the order of their first forward use: the last bucket (layer 0,
         * the embedding) first */
        for (int b = o->nbuckets - 1; b >= 0 && st == G3_OK; b--) {
            for (int i = 0; i < o->nseg && st == G3_OK; i++) {
                g3_par_segment_t *s = &o->seg[i];
                if (s->bucket != b || s->q == 0)
                    continue;
                st = g3_comm_iallgather(par->buf.dp,
                                        m->w + s->off + (size_t)par->layout.dp_rank * s->q,
                                        m->w + s->off, s->q, G3_DTYPE_FLOAT32, be->stream,
                                        &s->req[0]);
            }
            o->buckets[b].gathering = 1;
        }
        if (st == G3_OK && o->param_overlap)
            return G3_OK;   /* waited for in the next forward (g3_par_optim_fwd_hook) */
        if (st == G3_OK)
            return g3_par_gather_wait_where(eng, 1, 0);
        return st;
    }
    for (int i = 0; i < o->nseg && st == G3_OK && o->zero; i++) {
        const g3_par_segment_t *s = &o->seg[i];
        if (s->q == 0)
            continue;
        st = g3_comm_allgather(par->buf.dp, m->w + s->off + (size_t)par->layout.dp_rank * s->q,
                               m->w + s->off, s->q, G3_DTYPE_FLOAT32);
    }
    if (st == G3_OK)
        g3_gpt_params_refresh(m);   /* the passes' bf16 copy on CUDA; nothing on the CPU */
    return st;
}

int g3_par_engine_optim_ranges(g3_par_engine_t *eng,
                               g3_par_optim_range_t ranges[G3_PAR_OPTIM_RANGES_MAX],
                               int64_t **step_p)
{
    g3_par_optim_t *o = &eng->opt;
    int n = 0;
    /* a piece's in_norm is exactly "this rank saves it": each element counts once */
    for (int i = 0; i < o->npieces && n < G3_PAR_OPTIM_RANGES_MAX; i++) {
        const g3_par_piece_t *p = &o->pieces[i];
        ranges[n++] = (g3_par_optim_range_t){ p->begin, p->end, p->m, p->v, p->in_norm };
    }
    *step_p = &o->step;
    return n;
}
