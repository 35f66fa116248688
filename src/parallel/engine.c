/* gpt3d parallel: the training engine: activation sets, the 1F1B pipeline schedule,
 * forward-only evaluation and generation through the pipeline.  Glossary in par.h.
 *
 * Point-to-point messages between neighbouring stages are blocking (a large send waits for
 * its receive).  Megatron's combined "send forward, receive backward" and "send backward,
 * receive forward" are two blocking calls here, ordered by the parity of the stage: even
 * stages send first, odd stages receive first, so the two halves of every pair meet (a
 * schedule where every stage sends first deadlocks as soon as two messages cross).
 * The activations move on the layout's buffer groups (par->buf: host groups for the CPU
 * backend, NCCL groups on the GPU for CUDA) in the backend's activation type (fp32 or bf16,
 * par->act); the model syncs its backend at the end of every pass, so a send never reads a
 * tensor still being computed, and a receive has landed before the next pass starts. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "parallel/par_internal.h"

static int g3_par_ilv_csets(int pp, int V, int64_t mmax, int r);
static g3_status_t g3_par_sp_bwd_hook(void *ctx, int li);

#define G3_PAR_TAG_FWD 1   /* activations, stage s -> s+1        */
#define G3_PAR_TAG_BWD 2   /* their gradients, stage s+1 -> s    */

g3_status_t g3_par_ilv_check(int V, int pp, int64_t micro)
{
    if (V > 1 && pp > 0 && micro % pp != 0) {
        g3_error("--virtual-pipeline-model-parallel-size %d: the interleaved schedule needs the number of micro-batches per data-parallel rank (%lld = --global-batch-size / (--micro-batch-size x DP)) to be a multiple of --pipeline-model-parallel-size %d (the rule of Megatron-LM); change the batch sizes", V, (long long)micro, pp);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

g3_status_t g3_par_engine_init(g3_par_t *par, g3_gpt_t *model, int B, int T,
                               const g3_par_engine_config_t *cfg, g3_par_engine_t **eng_p)
{
    const g3_par_layout_t *l = &par->layout;
    g3_par_engine_t *eng;
    int64_t inflight = l->pp - l->pp_rank;   /* 1F1B: warm-up PP - pp - 1, plus one */
    g3_status_t st;

    if (model->cfg.tp_size != l->tp || model->cfg.pp_size != l->pp ||
        model->cfg.tp_rank != l->tp_rank || model->cfg.pp_rank != l->pp_rank) {
        g3_error(
            "parallel engine: the model was built for tp %d/%d pp %d/%d but this rank is tp %d/%d pp %d/%d",
            model->cfg.tp_rank, model->cfg.tp_size, model->cfg.pp_rank, model->cfg.pp_size,
            l->tp_rank, l->tp, l->pp_rank, l->pp);
        return G3_ERR_INTERNAL;
    }
    /* the groups that carry this backend's buffers (NCCL for a GPU backend) */
    st = g3_par_set_backend(par, model->be, cfg->dist_backend);
    if (st != G3_OK)
        return st;
    eng = calloc(1, sizeof(*eng));
    if (!eng) {
        g3_error("parallel engine: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    eng->par = par;
    eng->model = model;
    eng->B = B;
    eng->T = T;
    eng->grad_dump_dir = cfg->grad_dump_dir;
    eng->timers = cfg->timers;
    eng->nchunks = model->nchunks > 1 ? model->nchunks : 1;
    eng->sp = model->cfg.sequence_parallel && l->tp > 1;
    if (!cfg->forward_only && g3_par_ilv_check(eng->nchunks, l->pp, cfg->max_micro) != G3_OK) {
        free(eng);
        return G3_ERR_INVALID_ARG;
    }
    if (eng->nchunks > 1 && !cfg->forward_only) {
        eng->csets = g3_par_ilv_csets(l->pp, eng->nchunks, cfg->max_micro, l->pp_rank);
        eng->max_micro = cfg->max_micro;
    } else {
        eng->csets = (int)(cfg->max_micro < inflight ? cfg->max_micro : inflight);
    }
    if (eng->csets < 1)
        eng->csets = 1;
    eng->nsets = eng->csets * eng->nchunks;
    eng->sets = calloc((size_t)eng->nsets, sizeof(*eng->sets));
    if (!eng->sets) {
        free(eng);
        g3_error("parallel engine: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    for (int i = 0; i < eng->nsets; i++) {
        st = g3_gpt_acts_init_chunk(model, i / eng->csets, B, T, &eng->sets[i]);
        if (st != G3_OK)
            goto err_free_sets;
    }
    if (!cfg->forward_only) {
        st = g3_par_optim_init(eng, cfg);
        if (st != G3_OK)
            goto err_free_sets;
        if (eng->opt.bucketed) {   /* the passes tell the optimizer where they are */
            model->hooks.ctx = eng;
            model->hooks.bwd_layer = !eng->opt.overlap ? NULL
                                     : eng->sp ? g3_par_sp_bwd_hook : g3_par_optim_bwd_hook;
            model->hooks.fwd_layer = eng->opt.param_overlap ? g3_par_optim_fwd_hook : NULL;
        }
    }
    *eng_p = eng;
    return G3_OK;

err_free_sets:
    g3_par_engine_free(eng);   /* eng was zeroed: frees what was made */
    return st;
}

void g3_par_engine_free(g3_par_engine_t *eng)
{
    if (!eng)
        return;
    if (eng->model->hooks.ctx == eng)
        memset(&eng->model->hooks, 0, sizeof(eng->model->hooks));
    g3_par_optim_free(eng);
    free(eng->ilv_ops);
    for (int i = 0; i < eng->nsets; i++)
        if (eng->sets[i])
            g3_gpt_acts_free(eng->model, eng->sets[i]);
    free(eng->sets);
    free(eng);
}

void g3_par_engine_memory(const g3_par_engine_t *eng, g3_par_memory_t *mem)
{
    const g3_par_optim_t *o = &eng->opt;
    size_t f = sizeof(float);
    int dp = eng->par->layout.dp;

    memset(mem, 0, sizeof(*mem));
    mem->numel = eng->model->numel;
    /* the fp32 master weights, plus the working copy when it is a separate buffer (bf16) */
    mem->work_bytes = eng->model->wa != (void *)eng->model->w ? eng->model->esize : 0;
    mem->param_bytes = mem->numel * (f + mem->work_bytes);
    mem->grad_bytes = mem->numel * f;
    mem->optim_bytes = o->state_numel * f * (o->zero ? 3 : 2);
    for (int i = 0; i < eng->nsets; i++)
        mem->acts_bytes += g3_gpt_acts_bytes(eng->sets[i]);
    mem->acts_sets = eng->nsets;
    mem->bytes_per_param = mem->numel ? (double)(mem->param_bytes + mem->grad_bytes +
                                                 mem->optim_bytes) / (double)mem->numel : 0.0;
    mem->formula = (double)mem->work_bytes + (o->zero ? 8.0 + 12.0 / dp : 16.0);
}

g3_status_t g3_par_print_memory(g3_par_engine_t *eng, FILE *out)
{
    const g3_par_layout_t *l = &eng->par->layout;
    g3_par_memory_t mem;
    double *v = calloc(4 * (size_t)l->pp, sizeof(double)); /* per stage: numel, state, acts, sets */
    g3_status_t st;

    if (!v) {
        g3_error("out of memory");
        return G3_ERR_NO_MEMORY;
    }
    g3_par_engine_memory(eng, &mem);
    if (l->tp_rank == 0 && l->dp_rank == 0) {
        double *s = v + 4 * l->pp_rank;
        s[0] = (double)mem.numel;
        s[1] = (double)(mem.param_bytes + mem.grad_bytes + mem.optim_bytes);
        s[2] = (double)mem.acts_bytes;
        s[3] = mem.acts_sets;
    }
    st = g3_par_world_allreduce(eng->par, v, 4 * (size_t)l->pp, 0);
    if (st == G3_OK && l->world_rank == 0) {
        if (mem.work_bytes)
            fprintf(
                out,
                "  memory per rank: working copy %zu + master weights 4 + grads 4 + %s = %.2f bytes per parameter held\n",
                mem.work_bytes,
                eng->opt.zero ? "(Adam m 4 + v 4 + reduced gradient 4) / DP" : "Adam m 4 + v 4",
                mem.formula);
        else
            fprintf(
                out,
                "  memory per rank: params 4 + grads 4 + %s = %.2f bytes per parameter held (the fp32 parameters are the master weights)\n",
                eng->opt.zero ? "(Adam m 4 + v 4 + reduced gradient 4) / DP" : "Adam m 4 + v 4",
                mem.formula);
        if (eng->opt.bucketed)
            fprintf(
                out,
                "  data-parallel reduction: %d gradient buckets on stage %d (%d segments), %s%s\n",
                eng->opt.nbuckets, l->pp_rank, eng->opt.nseg,
                eng->opt.overlap ? "overlapped with the last micro-batch's backward"
                                 : "after the backward",
                eng->opt.param_overlap ? "; parameter all-gathers waited for in the next forward"
                                       : "");
        for (int s = 0; s < l->pp; s++) {
            const double *x = v + 4 * s;
            if (eng->nchunks > 1)   /* interleaved: sets of 1/V of the stage's layers */
                fprintf(out, "    stage %d: %.3fM parameters held, %.2f bytes each: %.1f MiB model state; %.1f MiB activations for %d (model chunk, micro-batch) pairs in flight over %d chunks\n",
                        s, x[0] / 1e6, x[0] > 0 ? x[1] / x[0] : 0.0, x[1] / 1048576.0,
                        x[2] / 1048576.0, (int)x[3], eng->nchunks);
            else
                fprintf(
                    out,
                    "    stage %d: %.3fM parameters held, %.2f bytes each: %.1f MiB model state; %.1f MiB activations for %d micro-batch%s in flight\n",
                    s, x[0] / 1e6, x[0] > 0 ? x[1] / x[0] : 0.0, x[1] / 1048576.0, x[2] / 1048576.0,
                    (int)x[3], (int)x[3] == 1 ? "" : "es");
        }
    }
    free(v);
    return st;
}

const g3_par_layout_t *g3_par_engine_layout(const g3_par_engine_t *eng)
{
    return &eng->par->layout;
}

g3_par_t *g3_par_engine_par(const g3_par_engine_t *eng)
{
    return eng->par;
}

g3_status_t g3_par_engine_params_ready(g3_par_engine_t *eng)
{
    return g3_par_optim_gather_wait(eng);
}

void g3_par_engine_bubble(const g3_par_engine_t *eng, double *measured, double *formula)
{
    int pp = eng->par->layout.pp;
    *measured = eng->t_compute > 0.0 ? (eng->t_sched - eng->t_compute) / eng->t_compute : 0.0;
    *formula = eng->last_m > 0 ? (double)(pp - 1) / (double)(eng->nchunks * eng->last_m) : 0.0;
}

void g3_par_engine_idle(const g3_par_engine_t *eng, double *measured, double *f1, double *fv)
{
    double p = eng->par->layout.pp, m = (double)eng->last_m, V = eng->nchunks;
    *measured = eng->t_sched > 0.0 ? (eng->t_sched - eng->t_compute) / eng->t_sched : 0.0;
    *f1 = m > 0 ? (p - 1) / (m + p - 1) : 0.0;
    *fv = m > 0 ? (p - 1) / (V * m + p - 1) : 0.0;
}

/* ---- the pieces of a schedule ---------------------------------------------------------------- */

typedef struct {
    g3_par_engine_t *eng;
    const int32_t   *inputs, *targets;   /* (m B, T) host                                    */
    float            dloss;
    double           loss_sum;           /* last stage: sum of its micro-batches' token losses */
    int64_t          m;                  /* micro-batches of the iteration                    */
} g3_par_run_t;

static g3_gpt_acts_t *g3_par_set(g3_par_engine_t *eng, int64_t k)
{
    return eng->sets[k % eng->csets];
}

/* The set of micro-batch k of chunk c. */
static g3_gpt_acts_t *g3_par_cset(g3_par_engine_t *eng, int c, int64_t k)
{
    return eng->sets[c * eng->csets + k % eng->csets];
}

/* RET: elements of the residual stream of a micro-batch (what stages exchange). */
static size_t g3_par_act_numel(const g3_par_engine_t *eng)
{
    return g3_gpt_stage_numel(eng->model, eng->B, eng->T);   /* SP: this TP rank's rows */
}

static g3_status_t g3_par_fwd_chunk(g3_par_run_t *r, int c, int64_t k)
{
    g3_par_engine_t *eng = r->eng;
    g3_gpt_t *m = eng->model;
    size_t off = (size_t)k * eng->B * eng->T;
    double s = 0.0, t0 = g3_clock_now();
    g3_status_t st;

    g3_timers_start(eng->timers, G3_TIMER_FORWARD);
    st = g3_gpt_forward(m, g3_par_cset(eng, c, k), m->has_embedding ? r->inputs + off : NULL,
                        m->has_head ? r->targets + off : NULL, eng->B, eng->T, r->dloss, &s);
    g3_timers_stop(eng->timers, G3_TIMER_FORWARD);
    eng->t_compute += g3_clock_now() - t0;
    if (m->has_head)
        r->loss_sum += s;
    return st;
}

/* Sequence parallelism: each TP rank's LayerNorm gradients cover its rows of the tokens;
 * sum them over the TP group (Megatron's allreduce of the sequence-parallel grads) once
 * they are complete: local layer li's (li >= 0) or the final LayerNorm's (li < 0). */
static g3_status_t g3_par_sp_ln_reduce(g3_par_engine_t *eng, int li)
{
    g3_gpt_t *m = eng->model;
    g3_status_t st = m->be->ops->sync(m->be);
    for (int i = 0; i < m->nparams && st == G3_OK; i++) {
        const g3_gpt_param_t *p = &m->params[i];
        if (!strstr(p->name, "layernorm") ||
            (li >= 0 ? p->layer != g3_gpt_layer_global(m, li) : p->layer != -2))
            continue;
        st = g3_comm_allreduce(eng->par->buf.tp, m->g + p->offset, m->g + p->offset, p->numel,
                               G3_DTYPE_FLOAT32, G3_COMM_SUM);
    }
    return st;
}

/* The model's backward hook when the LayerNorm gradients of SP must be summed before the
 * overlapped DP reduction reads them: on the last micro-batch, sum layer li's, then let
 * the optimizer start its buckets. */
static g3_status_t g3_par_sp_bwd_hook(void *ctx, int li)
{
    g3_par_engine_t *eng = ctx;
    g3_status_t st = G3_OK;
    if (eng->opt.armed)
        st = g3_par_sp_ln_reduce(eng, li);
    return st == G3_OK ? g3_par_optim_bwd_hook(ctx, li) : st;
}

static g3_status_t g3_par_fwd(g3_par_run_t *r, int64_t k)
{
    return g3_par_fwd_chunk(r, 0, k);
}

static g3_status_t g3_par_bwd_chunk(g3_par_run_t *r, int c, int64_t k)
{
    g3_par_optim_t *o = &r->eng->opt;
    double t0 = g3_clock_now();
    g3_status_t st;

    /* --overlap-grad-reduce: the last micro-batch's backward of each chunk starts the
     * buckets its layers complete; chunk 0's, the last of all, ends the backward */
    o->armed = o->overlap && k == r->m - 1;
    g3_timers_start(r->eng->timers, G3_TIMER_BACKWARD);
    st = g3_gpt_backward(r->eng->model, g3_par_cset(r->eng, c, k));
    if (st == G3_OK && o->armed && c == 0 && r->eng->sp && r->eng->model->has_head)
        st = g3_par_sp_ln_reduce(r->eng, -1);   /* before the bucket of the final LN starts */
    if (st == G3_OK && o->armed && c == 0)
        st = g3_par_optim_bwd_hook(r->eng, G3_PAR_TRIGGER_END);
    g3_timers_stop(r->eng->timers, G3_TIMER_BACKWARD);
    r->eng->t_compute += g3_clock_now() - t0;
    return st;
}

static g3_status_t g3_par_bwd(g3_par_run_t *r, int64_t k)
{
    return g3_par_bwd_chunk(r, 0, k);
}

/* Micro-batch k's transfer with a neighbouring stage: send 1 sends, 0 receives; fwd 1 moves
 * the activations (to the next stage, from the previous one), 0 their gradient (to the
 * previous stage, from the next one).  A stage without that neighbour does nothing. */
static g3_status_t g3_par_p2p(g3_par_engine_t *eng, int64_t k, int send, int fwd)
{
    const g3_par_layout_t *l = &eng->par->layout;
    g3_gpt_acts_t *a = g3_par_set(eng, k);
    int peer = l->pp_rank + (send == fwd ? 1 : -1), tag = fwd ? G3_PAR_TAG_FWD : G3_PAR_TAG_BWD;
    void *buf = !fwd ? g3_gpt_acts_grad(a)   /* the output is only read (sent) */
                : send ? (void *)g3_gpt_acts_output(eng->model, a) : g3_gpt_acts_input(a);

    if (peer < 0 || peer >= l->pp)
        return G3_OK;
    if (send)
        return g3_comm_send(eng->par->buf.pp, buf, g3_par_act_numel(eng), eng->par->act, peer,
                            tag);
    return g3_comm_recv(eng->par->buf.pp, buf, g3_par_act_numel(eng), eng->par->act, peer, tag);
}
#define g3_par_send_fwd(eng, k) g3_par_p2p(eng, k, 1, 1)
#define g3_par_recv_fwd(eng, k) g3_par_p2p(eng, k, 0, 1)
#define g3_par_send_bwd(eng, k) g3_par_p2p(eng, k, 1, 0)
#define g3_par_recv_bwd(eng, k) g3_par_p2p(eng, k, 0, 0)

/* Send micro-batch ks one way and receive micro-batch kr the other way: fwd 1 sends ks's
 * output forward and receives kr's output gradient, fwd 0 sends ks's input gradient back and
 * receives kr's input.  Even stages send first and odd ones receive first, so that
 * neighbours' blocking calls pair up. */
static g3_status_t g3_par_send_recv(g3_par_engine_t *eng, int64_t ks, int64_t kr, int fwd)
{
    int send_first = eng->par->layout.pp_rank % 2 == 0;
    g3_status_t st = send_first ? g3_par_p2p(eng, ks, 1, fwd) : g3_par_p2p(eng, kr, 0, !fwd);

    if (st != G3_OK)
        return st;
    return send_first ? g3_par_p2p(eng, kr, 0, !fwd) : g3_par_p2p(eng, ks, 1, fwd);
}

/* Megatron's forward_backward_pipelining_without_interleaving over m micro-batches:
 *   warm-up:    w = min(PP - pp - 1, m) forwards, each sent on;
 *   steady:     m - w times one forward, then one backward (1F1B);
 *   cool-down:  the w backwards left.
 * At most w + 1 micro-batches are in flight on a stage; set k % nsets holds micro-batch k
 * (its previous user, k - nsets, finished its backward before, in FIFO order). */
static g3_status_t g3_par_1f1b(g3_par_run_t *r, int64_t m)
{
    g3_par_engine_t *eng = r->eng;
    const g3_par_layout_t *l = &eng->par->layout;
    int64_t w = l->pp - l->pp_rank - 1 < m ? l->pp - l->pp_rank - 1 : m, rem = m - w;
    g3_status_t st = G3_OK;

    for (int64_t i = 0; i < w && st == G3_OK; i++) {
        st = g3_par_recv_fwd(eng, i);
        if (st == G3_OK)
            st = g3_par_fwd(r, i);
        if (st == G3_OK)
            st = g3_par_send_fwd(eng, i);
    }
    if (st == G3_OK && rem > 0)
        st = g3_par_recv_fwd(eng, w);
    for (int64_t i = 0; i < rem && st == G3_OK; i++) {
        int64_t kf = w + i, kb = i;
        st = g3_par_fwd(r, kf);
        if (st == G3_OK)
            st = g3_par_send_recv(eng, kf, kb, 1);
        if (st == G3_OK)
            st = g3_par_bwd(r, kb);
        if (st == G3_OK)
            st = i == rem - 1 ? g3_par_send_bwd(eng, kb)
                              : g3_par_send_recv(eng, kb, kf + 1, 0);
    }
    for (int64_t i = 0; i < w && st == G3_OK; i++) {
        int64_t kb = rem + i;
        st = g3_par_recv_bwd(eng, kb);
        if (st == G3_OK)
            st = g3_par_bwd(r, kb);
        if (st == G3_OK)
            st = g3_par_send_bwd(eng, kb);
    }
    return st;
}

/* ---- interleaved 1F1B (--virtual-pipeline-model-parallel-size V > 1) ------------------------
 *
 * Megatron's forward_backward_pipelining_with_interleaving: stage r runs V m forwards and V m
 * backwards of (chunk, micro-batch) pairs.  Forward number i is chunk (i mod PP V) / PP of
 * micro-batch (i / PP V) PP + i mod PP (PP micro-batches through chunk 0, then the same
 * through chunk 1, ...); backward number i the same with the chunks in reverse order.
 * Warm-up: 2 (PP - r - 1) + (V - 1) PP forwards (all of them when m = PP), then one forward
 * and one backward alternately, then the backwards left.  Chunk c of stage r is virtual
 * stage c PP + r: its output goes to stage r + 1, from the last stage to stage 0's next
 * chunk, so the transfers form a ring.
 *
 * Megatron overlaps the transfers with batched non-blocking send/receive pairs; our
 * point-to-point calls block, and a ring of blocking calls deadlocks unless every stage
 * orders them the same way.  So every rank simulates the compute order of every stage in
 * rounds (one compute op per stage per round, then every transfer whose receive buffer is
 * free), and runs its own part of that one global sequence of events: each transfer is
 * matched on both sides at the same place of the sequence, hence no cycle of waits.  The
 * buffers: micro-batch k of chunk c uses set c csets + k mod csets; a transfer into it
 * waits until micro-batch k - csets of the chunk finished its backward; a backward waits
 * until the input gradient its set holds from micro-batch k - csets has left. */

typedef struct g3_par_ilv_op {
    char    op;      /* 'F', 'B' compute; 'S', 'R' send / receive                        */
    char    fwd;     /* S/R: activations (1) or their gradients (0)                      */
    int     c;       /* the chunk of this rank the op touches                            */
    int64_t k;       /* micro-batch                                                       */
    int     peer;    /* S/R: the other stage                                              */
} g3_par_ilv_op_t;

/* Compute op i (0 <= i < 2 V m) of stage r, in Megatron's order.  OUT: *fwd, *c, *k */
static void g3_par_ilv_compute(int pp, int V, int64_t m, int r, int64_t i, int *fwd, int *c,
                               int64_t *k)
{
    int64_t total = (int64_t)V * m, w, j;
    w = m == pp ? total : 2 * (int64_t)(pp - r - 1) + (int64_t)(V - 1) * pp;
    if (w > total)
        w = total;
    if (i < w) {
        *fwd = 1;
        j = i;
    } else if (i < w + 2 * (total - w)) {
        *fwd = (i - w) % 2 == 0;
        j = *fwd ? w + (i - w) / 2 : (i - w) / 2;
    } else {
        *fwd = 0;
        j = i - w - (total - w);
    }
    *c = (int)((j % ((int64_t)pp * V)) / pp);
    if (!*fwd)
        *c = V - 1 - *c;
    *k = (j / ((int64_t)pp * V)) * pp + j % pp;
}

/* RET: the most micro-batches of one chunk in flight (forward done, backward not) on
 * stage r over the compute order for m micro-batches. */
static int64_t g3_par_ilv_inflight(int pp, int V, int64_t m, int r)
{
    int64_t *fl = calloc((size_t)V, sizeof(int64_t)), most = 1;
    if (!fl)
        return m;
    for (int64_t i = 0; i < 2 * (int64_t)V * m; i++) {
        int fwd, c;
        int64_t k;
        g3_par_ilv_compute(pp, V, m, r, i, &fwd, &c, &k);
        fl[c] += fwd ? 1 : -1;
        if (fl[c] > most)
            most = fl[c];
    }
    free(fl);
    return most;
}

/* RET: the activation sets per chunk of stage r for iterations of up to mmax
 * micro-batches: the most micro-batches of one chunk in flight, for mmax and for m = PP
 * (all forwards first). */
static int g3_par_ilv_csets(int pp, int V, int64_t mmax, int r)
{
    int64_t a = g3_par_ilv_inflight(pp, V, mmax, r), b = g3_par_ilv_inflight(pp, V, pp, r);
    return (int)(a > b ? a : b);
}

/* Room for `need` ops in *ops_p (capacity *cap_p), doubled when short.
 * RET: G3_OK, or G3_ERR_NO_MEMORY (logged; *ops_p left as it was). */
static g3_status_t g3_par_ilv_reserve(g3_par_ilv_op_t **ops_p, int64_t *cap_p, int64_t need)
{
    g3_par_ilv_op_t *grown;

    if (need <= *cap_p)
        return G3_OK;
    grown = realloc(*ops_p, sizeof(**ops_p) * (size_t)(*cap_p * 2));
    if (!grown) {
        g3_error("pipeline schedule: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    *ops_p = grown;
    *cap_p *= 2;
    return G3_OK;
}

/* The simulation of every stage's compute order and transfers, in rounds. */
typedef struct g3_par_ilv_sim {
    int              pp, V, me;
    int64_t          m;
    char            *fdone, *bdone, *in, *gin, *gleft;   /* (PP, V, m): 1 done / arrived / left */
    int64_t         *pos;     /* (PP): each stage's next compute op                          */
    int64_t         *pend;    /* transfers produced, not yet delivered: (from, chunk at the   */
    int64_t          npend;   /*   sender, k, fwd), npend of them                             */
    int             *cs;      /* (PP): sets per chunk, by stage                               */
    g3_par_ilv_op_t *ops;     /* this rank's part of the sequence: nops ops, room for cap     */
    int64_t          nops, cap;
} g3_par_ilv_sim_t;

/* Index of (stage r, chunk c, micro-batch k) into the per-op flags. */
static size_t g3_par_ilv_ix(const g3_par_ilv_sim_t *s, int r, int c, int64_t k)
{
    return ((size_t)r * s->V + (size_t)c) * (size_t)s->m + (size_t)k;
}

/* Appends op o (fwd, chunk c, micro-batch k, peer p) to this rank's part (room reserved). */
static void g3_par_ilv_emit(g3_par_ilv_sim_t *s, char o, int fwd, int c, int64_t k, int p)
{
    g3_par_ilv_op_t *op = &s->ops[s->nops++];
    op->op = o;
    op->fwd = (char)fwd;
    op->c = c;
    op->k = k;
    op->peer = p;
}

/* Frees the simulation's state but its ops. */
static void g3_par_ilv_sim_free(g3_par_ilv_sim_t *s)
{
    free(s->fdone);
    free(s->bdone);
    free(s->in);
    free(s->gin);
    free(s->gleft);
    free(s->pos);
    free(s->pend);
    free(s->cs);
}

/* Allocates the simulation of n = PP V m compute ops of each direction and the sets per
 * chunk of every stage.  RET: G3_OK, or G3_ERR_NO_MEMORY (logged; free with
 * g3_par_ilv_sim_free and free(s->ops)). */
static g3_status_t g3_par_ilv_sim_init(g3_par_ilv_sim_t *s, int pp, int V, int64_t m,
                                       int64_t mmax, int me, size_t n)
{
    size_t mx = (size_t)V * m;

    memset(s, 0, sizeof(*s));
    s->pp = pp;
    s->V = V;
    s->m = m;
    s->me = me;
    s->fdone = calloc(n, 1);
    s->bdone = calloc(n, 1);
    s->in = calloc(n, 1);
    s->gin = calloc(n, 1);
    s->gleft = calloc(n, 1);
    s->pos = calloc((size_t)pp, sizeof(int64_t));
    s->cap = 8 * (int64_t)mx + 16;
    s->pend = malloc(sizeof(int64_t) * 4 * (size_t)(2 * n + 1));
    s->ops = malloc(sizeof(*s->ops) * (size_t)s->cap);
    s->cs = malloc(sizeof(int) * (size_t)pp);
    if (!s->fdone || !s->bdone || !s->in || !s->gin || !s->gleft || !s->pos || !s->pend ||
        !s->ops || !s->cs) {
        g3_error("pipeline schedule: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    for (int r = 0; r < pp; r++)
        s->cs[r] = g3_par_ilv_csets(pp, V, mmax, r);
    return G3_OK;
}

/* One round of compute: each stage runs its next compute op if its input (or gradient) has
 * arrived and its set is free, queueing the transfer it produces.  RET: whether any ran. */
static int g3_par_ilv_compute_round(g3_par_ilv_sim_t *s, int64_t *todo)
{
    int pp = s->pp, nv = s->pp * s->V, progress = 0;
    int64_t mx = (int64_t)s->V * s->m;
    const int *cs = s->cs;

    for (int r = 0; r < pp; r++) {
        int fwd, c;
        int64_t k;
        size_t ix;
        if (s->pos[r] >= 2 * mx)
            continue;
        g3_par_ilv_compute(pp, s->V, s->m, r, s->pos[r], &fwd, &c, &k);
        ix = g3_par_ilv_ix(s, r, c, k);
        if (fwd) {
            if (c * pp + r > 0 && !s->in[ix])
                continue;
            if (k >= cs[r] && !s->bdone[g3_par_ilv_ix(s, r, c, k - cs[r])])
                continue;   /* its set still holds micro-batch k - cs[r] */
        } else {
            if (c * pp + r < nv - 1 && !s->gin[ix])
                continue;
            if (c * pp + r > 0 && k >= cs[r] && !s->gleft[g3_par_ilv_ix(s, r, c, k - cs[r])])
                continue;
        }
        (fwd ? s->fdone : s->bdone)[ix] = 1;
        if (r == s->me)
            g3_par_ilv_emit(s, fwd ? 'F' : 'B', fwd, c, k, -1);
        if (fwd ? c * pp + r < nv - 1 : c * pp + r > 0) {
            int64_t *e = s->pend + 4 * s->npend++;
            e[0] = r; e[1] = c; e[2] = k; e[3] = fwd;
        }
        s->pos[r]++;
        (*todo)--;
        progress = 1;
    }
    return progress;
}

/* Delivers every queued transfer whose receive buffer is free, in queue order, emitting
 * this rank's sends and receives; sets *progress when any is delivered.
 * RET: G3_OK, or G3_ERR_NO_MEMORY (logged). */
static g3_status_t g3_par_ilv_deliver(g3_par_ilv_sim_t *s, int *progress)
{
    int pp = s->pp;
    const int *cs = s->cs;
    g3_status_t st;

    for (int64_t i = 0; i < s->npend; i++) {
        int64_t *e = s->pend + 4 * i;
        int from = (int)e[0], c = (int)e[1], fwd = (int)e[3];
        int64_t k = e[2];
        int to = fwd ? (from + 1) % pp : (from + pp - 1) % pp;
        int tc = fwd ? (from == pp - 1 ? c + 1 : c) : (from == 0 ? c - 1 : c);
        if (fwd && k >= cs[to] && !s->bdone[g3_par_ilv_ix(s, to, tc, k - cs[to])])
            continue;   /* the receiving set still holds micro-batch k - cs[to] */
        if (fwd)
            s->in[g3_par_ilv_ix(s, to, tc, k)] = 1;
        else {
            s->gin[g3_par_ilv_ix(s, to, tc, k)] = 1;
            s->gleft[g3_par_ilv_ix(s, from, c, k)] = 1;
        }
        st = g3_par_ilv_reserve(&s->ops, &s->cap, s->nops + 2);
        if (st != G3_OK)
            return st;
        if (from == s->me)
            g3_par_ilv_emit(s, 'S', fwd, c, k, to);
        if (to == s->me)
            g3_par_ilv_emit(s, 'R', fwd, tc, k, from);
        memmove(e, e + 4, sizeof(int64_t) * 4 * (size_t)(s->npend - i - 1));
        s->npend--;
        i--;
        *progress = 1;
    }
    return G3_OK;
}

/* The global event sequence's part for stage `me` for m micro-batches, every stage having
 * the sets of g3_par_ilv_csets(mmax).  OUT: *ops_p (malloc'ed), *nops_p.
 * RET: G3_ERR_NO_MEMORY, G3_ERR_INTERNAL when the rounds stop progressing (a bug). */
static g3_status_t g3_par_ilv_program(int pp, int V, int64_t m, int64_t mmax, int me,
                                      g3_par_ilv_op_t **ops_p, int64_t *nops_p)
{
    size_t n = (size_t)pp * V * m;
    int64_t todo = 2 * (int64_t)n;
    g3_par_ilv_sim_t s;
    g3_status_t st = g3_par_ilv_sim_init(&s, pp, V, m, mmax, me, n);

    while (todo > 0 && st == G3_OK) {
        int progress = g3_par_ilv_compute_round(&s, &todo);
        st = g3_par_ilv_deliver(&s, &progress);
        if (st != G3_OK)
            break;
        st = g3_par_ilv_reserve(&s.ops, &s.cap, s.nops + 2 * pp + 2);
        if (st != G3_OK)
            break;
        if (!progress) {
            g3_error("pipeline schedule: the interleaved schedule of %lld micro-batches over %d stages x %d chunks stopped progressing (a bug)", (long long)m, pp, V);
            st = G3_ERR_INTERNAL;
        }
    }
    g3_par_ilv_sim_free(&s);
    if (st != G3_OK) {
        free(s.ops);
        return st;
    }
    *ops_p = s.ops;
    *nops_p = s.nops;
    return G3_OK;
}

static g3_status_t g3_par_interleaved(g3_par_run_t *r, int64_t m)
{
    g3_par_engine_t *eng = r->eng;
    const g3_par_layout_t *l = &eng->par->layout;
    g3_par_ilv_op_t *ops;
    int64_t nops;
    g3_status_t st = G3_OK;

    if (m % l->pp != 0) {
        g3_error("--virtual-pipeline-model-parallel-size %d: this iteration has %lld micro-batches per data-parallel rank, not a multiple of --pipeline-model-parallel-size %d (the rule of Megatron-LM); change the batch sizes (--rampup-batch-size steps too)", eng->nchunks, (long long)m, l->pp);
        return G3_ERR_INVALID_ARG;
    }
    if (!eng->ilv_ops || eng->ilv_m != m) {   /* the program of this m, kept for the next */
        free(eng->ilv_ops);
        eng->ilv_ops = NULL;
        st = g3_par_ilv_program(l->pp, eng->nchunks, m, eng->max_micro, l->pp_rank,
                                &eng->ilv_ops, &eng->ilv_nops);
        eng->ilv_m = m;
    }
    ops = eng->ilv_ops;
    nops = st == G3_OK ? eng->ilv_nops : 0;
    for (int64_t i = 0; i < nops && st == G3_OK; i++) {
        const g3_par_ilv_op_t *o = &ops[i];
        g3_gpt_acts_t *a = g3_par_cset(eng, o->c, o->k);
        switch (o->op) {
        case 'F':
            st = g3_par_fwd_chunk(r, o->c, o->k);
            break;
        case 'B':
            st = g3_par_bwd_chunk(r, o->c, o->k);
            break;
        case 'S':
            st = o->fwd ? g3_comm_send(eng->par->buf.pp, g3_gpt_acts_output(eng->model, a),
                                       g3_par_act_numel(eng), eng->par->act, o->peer,
                                       G3_PAR_TAG_FWD)
                        : g3_comm_send(eng->par->buf.pp, g3_gpt_acts_grad(a),
                                       g3_par_act_numel(eng), eng->par->act, o->peer,
                                       G3_PAR_TAG_BWD);
            break;
        default:
            st = g3_comm_recv(eng->par->buf.pp, o->fwd ? g3_gpt_acts_input(a)
                                                       : g3_gpt_acts_grad(a),
                              g3_par_act_numel(eng), eng->par->act, o->peer,
                              o->fwd ? G3_PAR_TAG_FWD : G3_PAR_TAG_BWD);
            break;
        }
    }
    if (st == G3_OK && g3_log_enabled(G3_LOG_DEBUG)) {
        /* the compute order of this stage, for tests and docs */
        char line[4096];
        size_t len = 0;
        line[0] = '\0';
        for (int64_t i = 0; i < nops && len + 24 < sizeof(line); i++)
            if (ops[i].op == 'F' || ops[i].op == 'B')
                len += (size_t)snprintf(line + len, sizeof(line) - len, " %c%d.%lld",
                                        ops[i].op, ops[i].c, (long long)ops[i].k);
        g3_debug("pipeline schedule of stage %d:%s", l->pp_rank, line);
    }
    return st;
}

/* The sum of the last stages' token losses over the world (TP rank 0 of each last stage
 * contributes, so each sequence counts once).  OUT: *sum_p */
static g3_status_t g3_par_loss_sum(g3_par_engine_t *eng, double local, double *sum_p)
{
    const g3_par_layout_t *l = &eng->par->layout;
    double v = l->pp_rank == l->pp - 1 && l->tp_rank == 0 ? local : 0.0;
    g3_status_t st = g3_par_world_allreduce(eng->par, &v, 1, 0);
    *sum_p = v;
    return st;
}

g3_status_t g3_par_train_step(g3_par_engine_t *eng, const int32_t *inputs,
                              const int32_t *targets, int64_t nmicro, int64_t gbs, double lr,
                              int64_t iteration, double *loss_p, double *grad_norm_p)
{
    g3_par_run_t r = { eng, inputs, targets, (float)(1.0 / ((double)gbs * eng->T)), 0.0,
                       nmicro };
    double t0, loss = NAN, norm = NAN, sum;
    g3_status_t st;

    *loss_p = NAN;
    *grad_norm_p = NAN;
    g3_gpt_zero_grad(eng->model);
    t0 = g3_clock_now();
    g3_timers_start(eng->timers, G3_TIMER_FWD_BWD);
    st = eng->nchunks > 1 ? g3_par_interleaved(&r, nmicro) : g3_par_1f1b(&r, nmicro);
    g3_timers_stop(eng->timers, G3_TIMER_FWD_BWD);
    eng->t_sched += g3_clock_now() - t0;
    eng->last_m = nmicro;
    if (st == G3_OK && eng->sp && !eng->opt.overlap) {   /* SP: every LayerNorm over TP */
        for (int li = 0; li < eng->model->layer_end - eng->model->layer_begin && st == G3_OK;
             li++)
            st = g3_par_sp_ln_reduce(eng, li);
        if (st == G3_OK && eng->model->has_head)
            st = g3_par_sp_ln_reduce(eng, -1);
    }
    if (st == G3_OK)
        st = g3_par_loss_sum(eng, r.loss_sum, &sum);
    if (st != G3_OK)
        return st;
    loss = sum / ((double)gbs * eng->T);
    *loss_p = loss;
    if (!isfinite(loss)) {
        if (eng->par->layout.world_rank == 0)
            g3_error(
                "iteration %lld: the training loss is %s; stopping before the update (the parameters are those of the previous iteration). Lower --lr, raise the warm-up, or check the data",
                (long long)iteration, isnan(loss) ? "NaN" : "infinite");
        return G3_ERR_NUMERIC;
    }
    g3_timers_start(eng->timers, G3_TIMER_OPTIMIZER);
    st = g3_par_optim_step(eng, lr, iteration, &norm);
    g3_timers_stop(eng->timers, G3_TIMER_OPTIMIZER);
    *grad_norm_p = norm;
    if (st == G3_ERR_NUMERIC && eng->par->layout.world_rank == 0)
        g3_error(
            "iteration %lld: the gradient norm is %s (loss %.4f); stopping before the update (the parameters are those of the previous iteration). Lower --lr or keep --clip-grad on",
            (long long)iteration, isnan(norm) ? "NaN" : "infinite", loss);
    return st;
}

/* Forward only: receive the input of chunk c (nothing on virtual stage 0) into a. */
static g3_status_t g3_par_chunk_recv(g3_par_engine_t *eng, int c, g3_gpt_acts_t *a, size_t n)
{
    const g3_par_layout_t *l = &eng->par->layout;
    if (c == 0 && l->pp_rank == 0)
        return G3_OK;
    return g3_comm_recv(eng->par->buf.pp, g3_gpt_acts_input(a), n, eng->par->act,
                        (l->pp_rank + l->pp - 1) % l->pp, G3_PAR_TAG_FWD);
}

/* Forward only: send chunk c's output on (nothing from the last virtual stage). */
static g3_status_t g3_par_chunk_send(g3_par_engine_t *eng, int c, g3_gpt_acts_t *a, size_t n)
{
    const g3_par_layout_t *l = &eng->par->layout;
    if (c == eng->nchunks - 1 && l->pp_rank == l->pp - 1)
        return G3_OK;
    return g3_comm_send(eng->par->buf.pp, g3_gpt_acts_output(eng->model, a), n, eng->par->act,
                        (l->pp_rank + 1) % l->pp, G3_PAR_TAG_FWD);
}

g3_status_t g3_par_eval(g3_par_engine_t *eng, const int32_t *inputs, const int32_t *targets,
                        int64_t n, double *loss_sum_p)
{
    g3_par_run_t r = { eng, inputs, targets, 0.0f, 0.0, 0 };
    g3_status_t st = G3_OK;
    int64_t m = n / eng->B;

    /* forward only, one micro-batch at a time through the stages (each chunk's set 0):
     * stage by stage, and with V chunks from the last stage back to the first's next one */
    for (int64_t k = 0; k < m && st == G3_OK; k++)
        for (int c = 0; c < eng->nchunks && st == G3_OK; c++) {
            size_t off = (size_t)k * eng->B * eng->T;
            g3_gpt_t *md = eng->model;
            g3_gpt_acts_t *a = g3_par_cset(eng, c, 0);
            double s = 0.0;
            st = g3_par_chunk_recv(eng, c, a, g3_par_act_numel(eng));
            if (st == G3_OK)
                st = g3_gpt_forward(md, a, md->has_embedding ? inputs + off : NULL,
                                    md->has_head ? targets + off : NULL, eng->B, eng->T, 0.0f,
                                    &s);
            if (st == G3_OK && md->has_head && c == eng->nchunks - 1)
                r.loss_sum += s;
            if (st == G3_OK)
                st = g3_par_chunk_send(eng, c, a, g3_par_act_numel(eng));
        }
    if (st == G3_OK)
        st = g3_par_loss_sum(eng, r.loss_sum, loss_sum_p);
    return st;
}

g3_status_t g3_par_score(g3_par_engine_t *eng, const int32_t *inputs, const int32_t *targets,
                         int64_t n, int T, float *logprob, uint8_t *greedy, int *have_p)
{
    g3_gpt_t *md = eng->model;
    size_t nact;
    g3_status_t st = G3_OK;

    *have_p = md->has_head;
    if (n < 1 || T < 1 || T > eng->T || n * T > (int64_t)eng->B * eng->T) {
        g3_error("engine: scoring %lld rows of %d tokens with activations for %d x %d",
                 (long long)n, T, eng->B, eng->T);
        return G3_ERR_INTERNAL;
    }
    /* one micro-batch through the stages, g3_par_eval's order */
    nact = g3_gpt_stage_numel(md, (int)n, T);
    for (int c = 0; c < eng->nchunks && st == G3_OK; c++) {
        g3_gpt_acts_t *a = g3_par_cset(eng, c, 0);
        st = g3_par_chunk_recv(eng, c, a, nact);
        if (st == G3_OK)
            st = g3_gpt_score(md, a, md->has_embedding ? inputs : NULL,
                              md->has_head ? targets : NULL, (int)n, T, logprob, greedy);
        if (st == G3_OK)
            st = g3_par_chunk_send(eng, c, a, nact);
    }
    return st;
}

g3_status_t g3_par_logits_last(g3_par_engine_t *eng, const int32_t *tokens, int T,
                               float *logits)
{
    const g3_par_layout_t *l = &eng->par->layout;
    g3_gpt_t *m = eng->model;
    g3_gpt_acts_t *a = eng->sets[0];
    size_t nact = g3_gpt_stage_numel(m, 1, T);
    float *local = NULL;
    g3_status_t st = G3_OK;

    /* interleaved: every chunk but the one with the head, through the ring of stages */
    for (int c = 0; c < eng->nchunks - 1 && st == G3_OK; c++) {
        a = g3_par_cset(eng, c, 0);
        st = g3_par_chunk_recv(eng, c, a, nact);
        if (st == G3_OK)
            st = g3_gpt_forward(m, a, m->has_embedding ? tokens : NULL, NULL, 1, T, 0.0f, NULL);
        if (st == G3_OK)
            st = g3_par_chunk_send(eng, c, a, nact);
    }
    a = g3_par_cset(eng, eng->nchunks - 1, 0);
    if (st == G3_OK && (l->pp_rank > 0 || eng->nchunks > 1))
        st = g3_comm_recv(eng->par->buf.pp, g3_gpt_acts_input(a), nact, eng->par->act,
                          (l->pp_rank + l->pp - 1) % l->pp, G3_PAR_TAG_FWD);
    if (st != G3_OK)
        return st;
    if (!m->has_head) {
        st = g3_gpt_forward(m, a, m->has_embedding ? tokens : NULL, NULL, 1, T, 0.0f, NULL);
        if (st == G3_OK)
            st = g3_comm_send(eng->par->buf.pp, g3_gpt_acts_output(m, a), nact, eng->par->act,
                              l->pp_rank + 1, G3_PAR_TAG_FWD);
    } else {
        /* this rank's vocabulary rows, gathered over TP in rank order: the whole row */
        local = l->tp > 1 ? malloc(sizeof(float) * (size_t)m->Vp_l) : logits;
        if (!local) {
            g3_error("generate: out of memory");
            return G3_ERR_NO_MEMORY;
        }
        st = g3_gpt_logits(m, a, m->has_embedding ? tokens : NULL, 1, T, 1, local);
        if (st == G3_OK && l->tp > 1)
            st = g3_comm_allgather(eng->par->tp, local, logits, (size_t)m->Vp_l,
                                   G3_DTYPE_FLOAT32);
        if (local != logits)
            free(local);
    }
    if (st == G3_OK && l->pp > 1)
        st = g3_comm_broadcast(eng->par->pp, logits, (size_t)m->Vp, G3_DTYPE_FLOAT32,
                               l->pp - 1);
    return st;
}
