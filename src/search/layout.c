/* gpt3d plan: layouts checked with the trainer's own checks, and --search (see layout.h;
 * docs/plan.md).  Glossary in plan.h. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "parallel/par.h"
#include "plan/time.h"
#include "search/layout.h"
#include "topo/topo.h"

/* The trainer's layout check on nodes x rpn ranks: the placement a job would get
 * (g3_par_alloc_topo on a flat switch, g3_topo_map as g3_par_init calls it).
 * OUT: *dp_p.  RET: an exit code (logged). */
static int g3_plan_map(int nodes, int rpn, int tp, int pp, int dp, int *dp_p)
{
    g3_par_alloc_t a;
    g3_topo_t *topo = NULL;
    g3_topo_plan_t *tplan = NULL;
    int *tnodes = NULL, rc = G3_EXIT_FAILURE;
    char why[1024];
    g3_status_t st;

    memset(&a, 0, sizeof(a));
    a.names = calloc((size_t)nodes, sizeof(char *));
    if (!a.names) {
        g3_error("gpt3d plan: out of memory for %d nodes", nodes);
        return G3_EXIT_FAILURE;
    }
    a.nnodes = nodes;
    a.rpn = rpn;
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node%d", i);
        a.names[i] = strdup(name);
        if (!a.names[i]) {
            g3_error("gpt3d plan: out of memory for %d nodes", nodes);
            goto out;
        }
    }
    why[0] = '\0';
    st = g3_par_alloc_topo(&a, NULL, "the planned nodes", &topo, &tnodes, why, sizeof(why));
    if (st == G3_OK) {
        g3_topo_alloc_t alloc = { nodes, tnodes, rpn, NULL, NULL };
        st = g3_topo_map(topo, &alloc, tp, pp, dp, &tplan, why, sizeof(why));
    }
    if (st == G3_ERR_INVALID_ARG && why[0]) {
        g3_error("impossible layout: %s", why);
        rc = G3_EXIT_USAGE;
    } else if (st != G3_OK) {
        g3_error("gpt3d plan: placing the ranks failed: %s %s", g3_status_string(st), why);
        rc = g3_status_exit_code(st);
    } else {
        *dp_p = tplan->dp;
        rc = G3_EXIT_OK;
    }
out:
    g3_topo_plan_free(tplan);
    free(tnodes);
    g3_topo_free(topo);
    g3_par_alloc_free(&a);
    return rc;
}

/* The sizes the --device kernels are built for (g3_be_check_sizes, which gpt3d train runs
 * too).  RET: an exit code (logged). */
static int g3_plan_device_check(const g3_plan_flags_t *f, const g3_gpt_config_t *m)
{
    char why[1024];
    int Vp = g3_gpt_padded_vocab(m->vocab_size, m->make_vocab_size_divisible_by, m->tp_size);

    if (g3_be_check_sizes(f->cfg.backend, &f->cfg.be_opts, m->hidden_size, m->num_attention_heads,
                          m->hidden_size / m->num_attention_heads, g3_gpt_config_ffn(m),
                          Vp / m->tp_size, why, sizeof(why)) != G3_OK) {
        g3_error("%s", why);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

/* The model as a layout of the search runs it: the flags' model with the layout's V and
 * sequence parallelism, checked with the model's own checks (g3_gpt_config_check: their
 * messages, the trainer's), then the interleaved schedule's rule on its m micro-batches per
 * data-parallel rank (g3_par_ilv_check, the engine's).  RET: an exit code (logged). */
static int g3_plan_schedule_check(const g3_plan_flags_t *f, const g3_gpt_config_t *model,
                                  int64_t m)
{
    g3_gpt_config_t mc = *model;

    mc.virtual_pp_size = f->virtual_pp;
    mc.sequence_parallel = f->sequence_parallel;
    if (g3_gpt_config_check(&mc) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_par_ilv_check(f->virtual_pp, mc.pp_size, m) != G3_OK)
        return G3_EXIT_USAGE;
    return G3_EXIT_OK;
}

int g3_plan_layout(const g3_plan_flags_t *f, int tp, int pp, g3_plan_layout_t *lay)
{
    g3_train_config_t cfg = f->cfg;
    int nodes = f->nodes, rpn = f->rpn, dp = 0, rc;
    int64_t world;

    memset(lay, 0, sizeof(*lay));
    if (nodes > 0) {
        /* a job of nodes x rpn ranks: DP as gpt3d train derives it */
        world = (int64_t)nodes * rpn;
        if (world > 0x7fffffff / 4) {
            g3_error("--nodes %d x --gpus-per-node %d = %lld ranks is too many", nodes, rpn,
                     (long long)world);
            return G3_EXIT_USAGE;
        }
        if (!f->dp_flag && !g3_train_flags_dp((int)world, tp, pp, &dp))
            return G3_EXIT_USAGE;
    } else {
        dp = f->dp_flag > 0 ? f->dp_flag : 1;
        world = (int64_t)tp * pp * dp;
        if (world > 0x7fffffff / 4) {
            g3_error("TP %d x PP %d x DP %d = %lld ranks is too many", tp, pp, dp,
                     (long long)world);
            return G3_EXIT_USAGE;
        }
        if (rpn > 0) {
            if (world % rpn != 0) {
                g3_error("impossible layout: TP %d x PP %d x DP %d = %lld ranks do not fill whole nodes of --gpus-per-node %d (every node runs the same number of ranks); change the sizes, or give --nodes N to derive DP", tp, pp,
                         dp, (long long)world, rpn);
                return G3_EXIT_USAGE;
            }
            nodes = (int)(world / rpn);
        }
    }
    if (nodes > 0) {
        rc = g3_plan_map(nodes, rpn, tp, pp, f->dp_flag, &dp);
        if (rc != G3_EXIT_OK)
            return rc;
    }
    cfg.dp_size = dp;
    {
        /* the model as the layout places world rank 0 (g3_par_layout_shard sets its fields) */
        g3_par_layout_t job = { .tp = tp, .pp = pp, .dp = dp };
        g3_par_layout_shard(&job, &cfg.model);
    }
    if (g3_gpt_config_check(&cfg.model) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_plan_device_check(f, &cfg.model) != G3_EXIT_OK)
        return G3_EXIT_USAGE;
    /* the batch arithmetic; the plan needs no run length: one iteration stands in (one
     * global batch with a ramp-up, which needs sample-based training) */
    if (!f->length_given) {
        if (cfg.rampup[0] > 0)
            cfg.train_samples = cfg.rampup[2] + (cfg.global_batch_size > 0
                                                     ? cfg.global_batch_size
                                                     : cfg.micro_batch_size * dp);
        else
            cfg.train_iters = 1;
    }
    if (g3_train_plan(&cfg, &lay->tplan) != G3_OK)
        return G3_EXIT_USAGE;
    rc = g3_plan_schedule_check(f, &cfg.model,
                                lay->tplan.global_batch_size / (cfg.micro_batch_size * dp));
    if (rc != G3_EXIT_OK)
        return rc;

    lay->nodes = nodes;
    lay->rpn = rpn;
    lay->in.model = cfg.model;
    lay->in.dp = dp;
    lay->in.micro_batch = cfg.micro_batch_size;
    lay->in.global_batch = lay->tplan.global_batch_size;
    lay->in.start_batch = lay->tplan.rampup.start > 0 ? lay->tplan.rampup.start
                                                      : lay->tplan.global_batch_size;
    lay->in.distributed_optimizer = cfg.distributed_optimizer;
    g3_plan_input_backend(&lay->in, f->cfg.backend, &f->cfg.be_opts);
    lay->in.virtual_pp = f->virtual_pp > 1 ? f->virtual_pp : 1;
    lay->in.sequence_parallel = f->sequence_parallel;
    lay->in.ranks_per_gpu = f->ranks_per_gpu > 1 ? f->ranks_per_gpu : 1;
    lay->in.fixed_bytes = f->fixed_bytes;
    lay->in.nccl_bytes = f->nccl_bytes;
    lay->in.dist_ucx = f->cfg.dist_ucx;
    return g3_status_exit_code(g3_plan_compute(&lay->in, &lay->plan));
}

void g3_plan_run_totals(const g3_plan_layout_t *lay, double *tokens, double *flops)
{
    int64_t consumed = 0, T = lay->in.model.seq_length;
    int64_t it = 0, gbs = lay->tplan.global_batch_size;

    *tokens = *flops = 0.0;
    /* step by step through the ramp-up only; past it every step is the same: multiply */
    for (; it < lay->tplan.train_iters && consumed <= lay->tplan.rampup.ramp_samples &&
           lay->tplan.rampup.start > 0; it++) {
        int64_t b = g3_train_rampup_batch(&lay->tplan.rampup, consumed);
        consumed += b;
        *tokens += (double)b * T;
        *flops += g3_gpt_flops_per_step(&lay->in.model, b, (int)T);
    }
    if (it < lay->tplan.train_iters) {
        double rest = (double)(lay->tplan.train_iters - it);
        *tokens += rest * (double)gbs * T;
        *flops += rest * g3_gpt_flops_per_step(&lay->in.model, gbs, (int)T);
    }
}

int g3_plan_stage_fits(const g3_plan_flags_t *f, const g3_plan_t *p, const g3_plan_stage_t *st)
{
    (void)p;
    return f->gpu_gib <= 0.0 || st->gpu_bytes / 1073741824.0 <= f->gpu_gib;
}

/* ---- --search ------------------------------------------------------------------------------ */

/* The candidates' order: those that fit first, then by predicted seconds, bubble, peak
 * memory, TP, PP and V, ascending (each key exact in a double), then by SP. */
static int g3_plan_candidate_cmp(const void *a, const void *b)
{
    const g3_plan_candidate_t *x = a, *y = b;
    const double kx[] = { !x->fits, x->seconds, x->bubble, x->peak, x->tp, x->pp, x->vpp };
    const double ky[] = { !y->fits, y->seconds, y->bubble, y->peak, y->tp, y->pp, y->vpp };

    for (size_t i = 0; i < sizeof(kx) / sizeof(kx[0]); i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    return x->sp - y->sp;
}

void g3_plan_search_free(g3_plan_search_t *s)
{
    free(s->c);
    s->c = NULL;
}

int g3_plan_search(const g3_plan_flags_t *f, int tp_given, int pp_given,
                   const g3_plan_machine_t *mach, g3_plan_quiet_fn quiet, void *quiet_ctx,
                   g3_plan_search_t *s)
{
    int world = f->nodes * f->rpn, cap = 64;
    const g3_gpt_config_t *m = &f->cfg.model;
    g3_plan_time_opts_t topt = { f->cfg.overlap_grad_reduce, f->cfg.overlap_param_gather,
                                 f->cfg.grad_reduce_bf16, f->rpn };

    memset(s, 0, sizeof(*s));
    s->c = malloc(sizeof(*s->c) * (size_t)cap);
    if (!s->c) {
        g3_error("gpt3d plan: out of memory");
        return G3_EXIT_FAILURE;
    }
    for (int tp = 1; tp <= f->rpn && tp <= 8; tp++) {
        if (f->rpn % tp != 0 || (tp_given && tp != tp_given))
            continue;
        for (int pp = 1; pp <= m->num_layers && pp <= world / tp; pp++) {
            if (world % (tp * pp) != 0 || (pp_given && pp != pp_given))
                continue;
            for (int V = 1; V <= (pp > 1 ? 8 : 1); V *= 2) {
                if (f->vpp_given && V != (f->virtual_pp > 1 ? f->virtual_pp : 1))
                    continue;
                for (int sp = 0; sp <= 1; sp++) {
                    g3_plan_flags_t g = *f;
                    g3_plan_layout_t lay;
                    g3_plan_candidate_t *c;
                    int rc;
                    if (f->sp_given ? sp != f->sequence_parallel : (sp && tp < 2))
                        continue;
                    g.virtual_pp = V;
                    g.sequence_parallel = sp;
                    s->checked++;
                    if (quiet)
                        quiet(quiet_ctx, 1);
                    rc = g3_plan_layout(&g, tp, pp, &lay);
                    if (quiet)
                        quiet(quiet_ctx, 0);
                    if (rc != G3_EXIT_OK)
                        continue;
                    s->valid++;
                    if (s->n == cap) {
                        g3_plan_candidate_t *nc = realloc(s->c, sizeof(*s->c) * (size_t)cap * 2);
                        if (!nc) {
                            g3_plan_free(&lay.plan);
                            g3_plan_search_free(s);
                            g3_error("gpt3d plan: out of memory");
                            return G3_EXIT_FAILURE;
                        }
                        s->c = nc;
                        cap *= 2;
                    }
                    c = &s->c[s->n++];
                    memset(c, 0, sizeof(*c));
                    c->tp = tp;
                    c->pp = pp;
                    c->dp = lay.in.dp;
                    c->vpp = V;
                    c->sp = sp;
                    c->m = lay.plan.micro_per_iter;
                    c->bubble = lay.plan.bubble;
                    c->peak_stage = lay.plan.peak_stage;
                    c->peak = lay.plan.stages[lay.plan.peak_stage].gpu_bytes;
                    c->params_rank = lay.plan.stages[lay.plan.peak_stage].params;
                    c->fits = g3_plan_stage_fits(f, &lay.plan,
                                                 &lay.plan.stages[lay.plan.peak_stage]);
                    if (mach) {
                        g3_plan_time_t tm;
                        if (g3_plan_time(&lay.in, &lay.plan, mach, &topt, &tm) == G3_OK)
                            c->seconds = tm.seconds;
                    }
                    s->fit += c->fits;
                    g3_plan_free(&lay.plan);
                }
            }
        }
    }
    qsort(s->c, (size_t)s->n, sizeof(*s->c), g3_plan_candidate_cmp);
    if (s->checked == 0) {   /* nothing to check: say which flag left no candidate */
        if (tp_given && (tp_given > 8 || f->rpn % tp_given != 0))
            g3_error("gpt3d plan --search: --tensor-model-parallel-size %d leaves no layout: TP must divide --gpus-per-node %d and be at most 8 (tensor-parallel groups stay inside one node); give another TP or drop it", tp_given,
                     f->rpn);
        else if (pp_given)
            g3_error("gpt3d plan --search: --pipeline-model-parallel-size %d leaves no layout: PP must be at most --num-layers %d and TP x PP must divide the %d ranks; give another PP or drop it", pp_given, m->num_layers, world);
        else
            g3_error("gpt3d plan --search: no TP x PP divides the %d ranks; change --nodes or --gpus-per-node", world);
        return G3_EXIT_USAGE;
    }
    if (s->valid == 0) {
        g3_error("gpt3d plan --search: none of the %d layouts checked passes gpt3d train's checks; run gpt3d plan with one TP and PP to see why", s->checked);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}
