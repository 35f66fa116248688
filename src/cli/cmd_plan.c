/* gpt3d plan: check a model on a parallel layout with the trainer's own checks, and say what
 * it costs per rank before any job is submitted (docs/plan.md):
 *
 *   gpt3d plan --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \
 *              --seq-length 2048 --micro-batch-size 1 --global-batch-size 1536 \
 *              --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
 *              --nodes 128 --gpus-per-node 8 --device cuda --gpu-memory 80
 *   gpt3d plan ... --nodes 128 --gpus-per-node 8 --gpu-memory 80 --search
 *   gpt3d plan ... --nodes 280 --gpus-per-node 8 --machine dgx-a100 --sizes 280,350,420
 *   gpt3d plan --calibrate FILE [--device cpu|cuda]
 *
 * It takes every flag of gpt3d train (the same table, train/flags.c, read by the same code),
 * so a training command line or --config file works as it is, plus its own flags for what a
 * job would give the trainer: the ranks (--nodes x --gpus-per-node, or
 * --data-parallel-size) and the vocabulary size.  Flags that do not change the plan (the
 * learning rate, data paths, ...) are checked as the trainer checks them and otherwise
 * ignored.  This file reads the flags; the layouts, the search, the time model and the
 * report are src/plan's. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/world.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/status.h"
#include "data/dataset.h"
#include "parallel/par.h"
#include "plan/gpu.h"
#include "plan/plan.h"
#include "plan/time.h"
#include "search/layout.h"
#include "search/report.h"
#include "topo/topo.h"
#include "train/flags.h"
#include "train/train.h"

#define G3_GPT2_VOCAB 50257

/* gpt3d plan's own flags; gpt3d train's follow them (g3_train_opt_specs). */
static const g3_opt_spec_t g3_cli_plan_own_specs[] = {
    { "nodes", G3_OPT_INT, NULL, "Plan for this many nodes (with --gpus-per-node): DP = nodes x GPUs per node / (TP x PP).", G3_NOOPT },
    { "gpus-per-node", G3_OPT_INT, NULL, "Ranks (GPUs) per node; tensor-parallel groups stay inside a node.", G3_NOOPT },
    { "ranks-per-node", G3_OPT_INT, NULL, "The same as --gpus-per-node (gpt3d topo's name).", G3_NOOPT },
    { "data-parallel-size", G3_OPT_INT, NULL, "Data-parallel size DP, instead of (or checked against) --nodes x --gpus-per-node (default 1).", G3_NOOPT },
    { "vocab-size", G3_OPT_INT, NULL, "Vocabulary size before padding, instead of reading --vocab-file (default: 50257, GPT-2's, which the built-in corpus uses).", G3_NOOPT },
    { "gpu-memory", G3_OPT_FLOAT, NULL, "Memory of one GPU (or rank) in GiB: say whether each stage fits.", NULL, 0, 0, "GIB" },
    { "search", G3_OPT_BOOL, NULL, "List the valid layouts for --nodes x --gpus-per-node (TP a divisor of the GPUs per node up to 8, or the given TP; every PP, or the given PP) that fit --gpu-memory, by pipeline bubble, then memory.", G3_NOOPT },
    { "json", G3_OPT_BOOL, NULL, "Print one JSON object instead of the tables.", G3_NOOPT },
    { "ranks-per-gpu", G3_OPT_INT, NULL, "Ranks sharing one GPU (--distributed-backend ucx): the memory per GPU counts all of them (default 1).", G3_NOOPT },
    { "machine", G3_OPT_STRING, NULL, "The machine the time per iteration is for: dgx-a100, dgx-h100 (datasheet numbers, docs/plan.md) or a file written by --calibrate (default: a DGX of the --gpu with --device cuda, dgx-h100 for h100; none with cpu).", NULL, 0, 0, "NAME|FILE" },
    { "calibrate", G3_OPT_STRING, NULL, "Measure this machine (GEMM, attention, memory-bound ops, host copies, the fixed cost of an op; on a GPU its fixed memory per process and what NCCL's four communicators hold) with the --device backend, write FILE for --machine, and exit.", NULL, 0, 0, "FILE" },
    { "gpu", G3_OPT_STRING, NULL, "The GPU to plan for with --device cuda: h100, h200, a100-40gb, a100-80gb (its fixed memory per process, its memory for the fit, a DGX of it for the time; docs/plan.md). Default: a calibration's (--machine FILE), else the local GPU, else h100.", NULL, 0, 0, "NAME" },
    { "sizes", G3_OPT_STRING, NULL, "Also print the time per iteration on each of these node counts (e.g. 280,350,420) with --gpus-per-node ranks each.", NULL, 0, 0, "N,N,..." },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

/* ---- --search ------------------------------------------------------------------------------ */

static void g3_cli_plan_quiet(void *ctx, int on)
{
    g3_cli_quiet_t *q = ctx;
    if (on)
        g3_cli_quiet_begin(q, 1);
    else
        g3_cli_quiet_end(q, 0);
}

static int g3_cli_plan_search(const g3_plan_flags_t *f, int tp_given, int pp_given,
                              const g3_plan_machine_t *mc, int json)
{
    int rc;
    g3_cli_quiet_t q;
    g3_plan_search_t s;

    rc = g3_plan_search(f, tp_given, pp_given, mc, g3_cli_plan_quiet, &q, &s);
    if (rc != G3_EXIT_OK)
        return rc;
    g3_plan_print_search(f, &s, mc, json);
    g3_plan_search_free(&s);
    if (s.fit == 0) {
        g3_error("gpt3d plan --search: none of the %d valid layouts fits in --gpu-memory %g; recompute activations (--recompute-granularity full), shard the optimizer (--use-distributed-optimizer) or plan for more nodes", s.valid, f->gpu_gib);
        return G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

/* ---- the driver ------------------------------------------------------------------------------ */

/* The plan's table: its own flags, then every flag of gpt3d train; an own flag the trainer's
 * table also has (the schedule flags of issue 19, once the trainer takes them) is the
 * trainer's.  RET: malloc'd or NULL. */
static g3_opt_spec_t *g3_cli_plan_specs(void)
{
    size_t a = 0, b = 0, n = 0;
    g3_opt_spec_t *s;
    while (g3_cli_plan_own_specs[a].name)
        a++;
    while (g3_train_opt_specs[b].name)
        b++;
    s = malloc(sizeof(*s) * (a + b + 1));
    if (!s)
        return NULL;
    for (size_t i = 0; i < a; i++) {
        int dup = 0;
        for (size_t k = 0; k < b && !dup; k++)
            dup = strcmp(g3_cli_plan_own_specs[i].name, g3_train_opt_specs[k].name) == 0;
        if (!dup)
            s[n++] = g3_cli_plan_own_specs[i];
    }
    memcpy(s + n, g3_train_opt_specs, sizeof(*s) * (b + 1));
    return s;
}

/* The most ranks a plan places: each layout checked costs time and memory linear in the
 * ranks (the trainer's placement), and --search checks dozens; 2^20 ranks answer in seconds. */
#define G3_PLAN_MAX_RANKS (1 << 20)

/* --sizes 280,350,420.  OUT: sizes (at most max).  RET: the count, -1 (logged) when bad. */
static int g3_cli_plan_sizes(const char *arg, int *sizes, int max)
{
    const char *c = arg;
    int n = 0;
    while (*c) {
        char *end;
        long v = strtol(c, &end, 10);
        if (end == c || v < 1 || v > 1000000 || (*end && *end != ',') || n == max) {
            g3_error("--sizes %s: give up to %d node counts separated by commas, e.g. --sizes 280,350,420", arg, max);
            return -1;
        }
        sizes[n++] = (int)v;
        c = *end ? end + 1 : end;
    }
    if (n == 0)
        g3_error("--sizes: give node counts, e.g. --sizes 280,350,420");
    return n > 0 ? n : -1;
}

/* The schedule as the trainer's reader left it in f->cfg (V, sequence parallelism) and lf
 * (which of it was given: --search keeps what was); --ranks-per-gpu.  RET: 1, or 0
 * (logged). */
static int g3_cli_plan_schedule_flags(const g3_opts_t *o, const g3_train_layout_flags_t *lf,
                                      g3_plan_flags_t *f)
{
    int ok = 1;

    f->vpp_given = lf->vpp_given;
    f->virtual_pp = f->cfg.model.virtual_pp_size > 1 ? f->cfg.model.virtual_pp_size : 1;
    f->sequence_parallel = f->cfg.model.sequence_parallel;
    f->sp_given = lf->sp_given;
    if (g3_opts_is_set(o, "ranks-per-gpu"))
        ok &= g3_train_flags_int(o, "ranks-per-gpu", 1, &f->ranks_per_gpu);
    return ok;
}

/* --calibrate FILE: measure this machine with the --device backend (its default threads, as
 * gpt3d train uses them: OMP_NUM_THREADS).  RET: an exit code (logged). */
static int g3_cli_plan_calibrate(const g3_opts_t *o)
{
    g3_be_kind_t kind;
    g3_be_opts_t bo;

    g3_be_opts_default(&bo);
    if (!g3_train_flags_backend(o, &kind, &bo))
        return G3_EXIT_USAGE;
    return g3_status_exit_code(g3_plan_calibrate(kind, &bo, g3_opts_str(o, "calibrate")));
}

/* The ranks: --nodes, --gpus-per-node (or --ranks-per-node), --data-parallel-size,
 * --gpu-memory, and what --search and --sizes need of them.  OUT: f, *nsizes, size_nodes
 * (16).  RET: 1, or 0 after logging every problem. */
static int g3_cli_plan_ranks(const g3_opts_t *o, g3_plan_flags_t *f, int *nsizes,
                             int *size_nodes)
{
    int ok = 1, gpn = 0, rpn = 0, search = g3_opts_bool(o, "search");

    if (g3_opts_is_set(o, "nodes"))
        ok &= g3_train_flags_int(o, "nodes", 1, &f->nodes);
    if (g3_opts_is_set(o, "gpus-per-node"))
        ok &= g3_train_flags_int(o, "gpus-per-node", 1, &gpn);
    if (g3_opts_is_set(o, "ranks-per-node"))
        ok &= g3_train_flags_int(o, "ranks-per-node", 1, &rpn);
    if (g3_opts_is_set(o, "data-parallel-size"))
        ok &= g3_train_flags_int(o, "data-parallel-size", 1, &f->dp_flag);
    if (gpn && rpn && gpn != rpn) {
        g3_error("--gpus-per-node %d and --ranks-per-node %d disagree: they name the same thing; give one", gpn, rpn);
        ok = 0;
    }
    f->rpn = gpn ? gpn : rpn;
    if (ok && f->nodes && !f->rpn) {
        g3_error("--nodes %d needs --gpus-per-node G (the ranks each node runs)", f->nodes);
        ok = 0;
    }
    if (ok && (int64_t)f->nodes * f->rpn > G3_PLAN_MAX_RANKS) {
        g3_error("--nodes %d x --gpus-per-node %d = %lld ranks is more than gpt3d plans for (at most %d ranks); give fewer --nodes or --gpus-per-node", f->nodes, f->rpn,
                 (long long)f->nodes * f->rpn, G3_PLAN_MAX_RANKS);
        ok = 0;
    }
    if (g3_opts_is_set(o, "gpu-memory")) {
        f->gpu_gib = g3_opts_float(o, "gpu-memory");
        if (!(f->gpu_gib > 0.0 && f->gpu_gib < 1e9)) {
            g3_error("--gpu-memory %g: give the memory of one GPU in GiB, e.g. 80",
                     f->gpu_gib);
            ok = 0;
        }
    }
    if (search && (!f->nodes || f->dp_flag)) {
        g3_error("--search needs --nodes N and --gpus-per-node G, and derives DP itself%s",
                 f->dp_flag ? ": drop --data-parallel-size" : "");
        ok = 0;
    }
    if (g3_opts_is_set(o, "sizes")) {
        *nsizes = g3_cli_plan_sizes(g3_opts_str(o, "sizes"), size_nodes, 16);
        if (*nsizes < 0)
            ok = 0;
        else if (!f->rpn || f->dp_flag) {
            g3_error("--sizes needs --gpus-per-node G (each size is a number of nodes of G ranks) and derives DP itself%s", f->dp_flag ? ": drop --data-parallel-size" : "");
            ok = 0;
        }
        for (int i = 0; ok && i < *nsizes; i++)
            if ((int64_t)size_nodes[i] * f->rpn > G3_PLAN_MAX_RANKS) {
                g3_error("--sizes: %d nodes x --gpus-per-node %d = %lld ranks is more than gpt3d plans for (at most %d ranks); drop %d from --sizes", size_nodes[i], f->rpn,
                         (long long)size_nodes[i] * f->rpn, G3_PLAN_MAX_RANKS, size_nodes[i]);
                ok = 0;
            }
        if (*nsizes < 0)
            *nsizes = 0;
    }
    return ok;
}

/* The GPU (--device cuda): --gpu, else the calibration's (--machine FILE), else the local
 * one, else h100; its fixed memory per process: the calibration's when it measured it, else
 * the table's; and its NCCL communicators', the same way.  OUT: f->gpu, f->gpu_how,
 * f->fixed_bytes, f->nccl_bytes. */
static int g3_cli_plan_gpu(const g3_opts_t *o, const g3_plan_machine_t *mc, int file,
                           g3_plan_flags_t *f)
{
    const g3_plan_gpu_t *g = NULL;
    char local[128];
    const char *how;

    if (g3_opts_is_set(o, "gpu")) {
        g = g3_plan_gpu_find(g3_opts_str(o, "gpu"));
        if (!g)
            return 0;
        if (file && mc->gpu[0] && strcmp(mc->gpu, g->name) != 0) {
            g3_error("--machine %s was calibrated on a GPU %s, not --gpu %s: calibrate on the GPU you plan for (gpt3d plan --calibrate FILE --device cuda on it), or drop --gpu", g3_opts_str(o, "machine"), mc->gpu, g->name);
            return 0;
        }
        how = "--gpu";
    } else if (mc && mc->gpu[0]) {
        g = g3_plan_gpu_row(mc->gpu);   /* the reader took only the table's words */
        how = file ? "the calibration's GPU" : "the machine's GPU";
    } else if (g3_plan_gpu_local(G3_PLAN_GPU_PROC, local, sizeof(local)) &&
               (g = g3_plan_gpu_match(local)) != NULL) {
        how = "the local GPU";
    } else {
        g = g3_plan_gpu_row("h100");
        how = "the default: no --gpu and no local GPU gpt3d plan knows";
    }
    if (!g)
        return 0;
    snprintf(f->gpu, sizeof(f->gpu), "%s", g->name);
    f->nccl_bytes = file && mc->nccl_bytes > 0 ? mc->nccl_bytes : g->nccl_mib * 1048576.0;
    if (file && mc->fixed_bytes > 0) {
        f->fixed_bytes = mc->fixed_bytes;
        snprintf(f->gpu_how, sizeof(f->gpu_how), "%s; fixed cost measured by --calibrate%s: %.100s",
                 how, mc->nccl_bytes > 0 ? ", NCCL's too" : ", NCCL's from the table", mc->name);
    } else {
        f->fixed_bytes = g->fixed_mib * 1048576.0;
        snprintf(f->gpu_how, sizeof(f->gpu_how), "%s; fixed cost %s", how, g->fixed_how);
    }
    if (g3_opts_is_set(o, "gpu") && f->gpu_gib <= 0)
        f->gpu_gib = g->memory_gib;   /* the fit: the GPU's own memory */
    return 1;
}

/* --machine NAME|FILE, else a DGX of the GPU for --device cuda (none for cpu); and the GPU.
 * OUT: *mach, *mc_p (NULL: no machine), f's GPU.  RET: 1, or 0 (logged). */
static int g3_cli_plan_machine(const g3_opts_t *o, g3_plan_flags_t *f, g3_plan_machine_t *mach,
                               g3_plan_machine_t **mc_p)
{
    int cuda = !(g3_be_kind(f->cfg.backend)->caps & G3_BE_CAP_HOST_MEMORY), file = 0;

    *mc_p = NULL;
    if (!cuda && g3_opts_is_set(o, "gpu")) {
        g3_error("--gpu %s plans for a GPU: give --device cuda as well, or drop --gpu", g3_opts_str(o, "gpu"));
        return 0;
    }
    if (g3_opts_is_set(o, "machine")) {
        const char *name = g3_opts_str(o, "machine");
        file = strchr(name, '/') || strchr(name, '.');
        if ((file ? g3_plan_machine_read(name, mach) : g3_plan_machine_builtin(name, mach)) !=
            G3_OK)
            return 0;
        *mc_p = mach;
    }
    if (!cuda)
        return 1;
    if (!g3_cli_plan_gpu(o, *mc_p, file, f))
        return 0;
    if (!*mc_p) {
        if (g3_plan_machine_gpu(f->gpu, mach) != G3_OK)
            return 0;
        *mc_p = mach;
    }
    return 1;
}

/* The vocabulary (--vocab-size, or the --vocab-file gpt3d train would read, else GPT-2's)
 * and the default MLP size that follows from --hidden-size, checked only when the flags
 * before were good (prior).  OUT: f.  RET: 1, or 0 (logged). */
static int g3_cli_plan_model(const g3_opts_t *o, int prior, g3_plan_flags_t *f)
{
    g3_train_data_flags_t d;
    int ok = 1;

    g3_train_flags_tokenizer(o, &d);   /* the trainer's reader */
    if (g3_opts_is_set(o, "vocab-size") && d.vocab_file) {
        g3_error("give --vocab-size or --vocab-file, not both");
        ok = 0;
    } else if (d.vocab_file) {
        int64_t v = 0, eod = 0;
        if (g3_data_vocab_info(d.vocab_file, &v, &eod) != G3_OK)
            ok = 0;
        else if (v > 0x7fffffff) {
            g3_error("--vocab-file %s: %lld entries is too many", d.vocab_file, (long long)v);
            ok = 0;
        } else {
            f->cfg.model.vocab_size = (int)v;
        }
    } else if (g3_opts_is_set(o, "vocab-size")) {
        ok &= g3_train_flags_int(o, "vocab-size", 1, &f->cfg.model.vocab_size);
    } else {
        f->cfg.model.vocab_size = G3_GPT2_VOCAB;
    }
    ok = ok && prior;
    if (ok && !g3_opts_is_set(o, "ffn-hidden-size") &&
        f->cfg.model.hidden_size > 0x7fffffff / 4) {
        g3_error("--hidden-size %d is too large for the default --ffn-hidden-size (4 x hidden size overflows); give a smaller --hidden-size", f->cfg.model.hidden_size);
        ok = 0;
    }
    return ok;
}

/* One layout (TP x PP of f): checked, its plan, its time on mc and on each of --sizes, printed
 * as tables or JSON; then whether it fits --gpu-memory.  RET: an exit code (logged). */
static int g3_cli_plan_one(const g3_plan_flags_t *f, int tp, int pp,
                           const g3_plan_machine_t *mc, int json, int nsizes,
                           const int *size_nodes)
{
    g3_plan_layout_t lay, sizes[16];
    g3_plan_time_t tm, stimes[16];
    g3_plan_time_opts_t topt;
    const g3_plan_stage_t *peak;
    int rc, made = 0;

    memset(&topt, 0, sizeof(topt));
    topt.overlap_grad_reduce = f->cfg.overlap_grad_reduce;
    topt.overlap_param_gather = f->cfg.overlap_param_gather;
    topt.grad_reduce_bf16 = f->cfg.grad_reduce_bf16;
    topt.ranks_per_node = f->rpn;
    rc = g3_plan_layout(f, tp, pp, &lay);
    if (rc != G3_EXIT_OK)
        return rc;
    if (mc && g3_plan_time(&lay.in, &lay.plan, mc, &topt, &tm) != G3_OK) {
        rc = G3_EXIT_USAGE;
        goto out;
    }
    for (; made < nsizes; made++) {
        g3_plan_flags_t g = *f;
        g.nodes = size_nodes[made];
        rc = g3_plan_layout(&g, tp, pp, &sizes[made]);
        if (rc != G3_EXIT_OK)
            goto out;   /* g3_plan_layout said why */
        if (mc)
            g3_plan_time(&sizes[made].in, &sizes[made].plan, mc, &topt, &stimes[made]);
    }
    if (nsizes > 0 && !mc) {
        g3_error("--sizes prints the time per iteration of each size: give --machine dgx-a100|dgx-h100|FILE (a file from gpt3d plan --calibrate)");
        rc = G3_EXIT_USAGE;
        goto out;
    }
    if (json) {
        g3_plan_print_json(f, &lay, mc, mc ? &tm : NULL, sizes, stimes, nsizes);
    } else {
        g3_plan_print_human(f, &lay);
        if (mc)
            g3_plan_print_time(mc, &lay, &tm, sizes, stimes, nsizes);
    }
    fflush(stdout);
    rc = G3_EXIT_OK;
    peak = &lay.plan.stages[lay.plan.peak_stage];
    if (f->gpu_gib > 0 && !g3_plan_stage_fits(f, &lay.plan, peak)) {
        g3_error("stage %d needs %.2f GiB per GPU, more than --gpu-memory %g: recompute activations (--recompute-granularity full), shard the optimizer (--use-distributed-optimizer), or use more pipeline or tensor parallelism (--search lists what fits)", lay.plan.peak_stage,
                 g3_plan_gib(peak->gpu_bytes), f->gpu_gib);
        rc = G3_EXIT_FAILURE;
    }
out:
    g3_plan_free(&lay.plan);
    for (int i = 0; i < made; i++)
        g3_plan_free(&sizes[i].plan);
    return rc;
}

int g3_cmd_plan(int argc, char **argv)
{
    g3_opt_spec_t *specs = g3_cli_plan_specs();
    g3_opt_cmd_t cmd = {
        "plan",
        "Check a parallel layout against a model and print memory per rank and time per iteration.",
        NULL,
        0,
        0,
        specs
    };
    g3_opts_t *o = NULL;
    g3_plan_flags_t f;
    g3_plan_machine_t mach, *mc = NULL;
    g3_train_layout_flags_t lf;
    int ok = 1, rc = G3_EXIT_USAGE, nsizes = 0, size_nodes[16];

    if (!specs) {
        g3_error("gpt3d plan: out of memory");
        return G3_EXIT_FAILURE;
    }
    if (g3_opts_parse(&cmd, argc, argv, &o) != G3_OK)
        goto out;
    if (g3_opts_help_shown(o)) {
        rc = G3_EXIT_OK;
        goto out;
    }
    if (g3_opts_is_set(o, "calibrate")) {
        rc = g3_cli_plan_calibrate(o);
        goto out;
    }
    /* the trainer's flags, the plan's schedule flags, the ranks, the machine, the model */
    memset(&f, 0, sizeof(f));
    g3_train_config_defaults(&f.cfg);
    ok &= g3_train_flags_read(o, &f.cfg, &lf);
    ok &= g3_cli_plan_schedule_flags(o, &lf, &f);
    f.length_given = f.cfg.train_iters > 0 || f.cfg.train_samples > 0;
    ok &= g3_cli_plan_ranks(o, &f, &nsizes, size_nodes);
    if (ok)
        ok &= g3_cli_plan_machine(o, &f, &mach, &mc);
    ok &= g3_cli_plan_model(o, ok, &f);
    if (!ok)
        goto out;
    if (g3_opts_bool(o, "search"))
        rc = g3_cli_plan_search(&f, lf.tp_given ? lf.tp : 0, lf.pp_given ? lf.pp : 0, mc,
                                g3_opts_bool(o, "json"));
    else
        rc = g3_cli_plan_one(&f, lf.tp, lf.pp, mc, g3_opts_bool(o, "json"), nsizes, size_nodes);
out:
    g3_opts_free(o);
    free(specs);
    return rc;
}
