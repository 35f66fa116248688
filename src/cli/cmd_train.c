/* gpt3d train: pretrain a GPT (the driver: flags, checks before any work, exit codes).
 * Flag names follow Megatron-LM; docs/training.md lists them with their defaults.
 *
 * Alone, under mpirun or under srun --mpi=pmix.  Every rank runs the same checks before any
 * work; only rank 0 shows their errors (the others keep theirs in a scratch file and show
 * them only if rank 0 passed where they failed, e.g. a file missing on their node), and
 * every rank exits with the same code.  docs/parallelism.md describes the layouts. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "ckpt/ckpt.h"
#include "cli/commands.h"
#include "cli/world.h"
#include "comm/comm.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/param.h"
#include "core/opt.h"
#include "core/status.h"
#include "data/dataset.h"
#include "data/tokid.h"
#include "infer/tasks.h"
#include "model/gpt.h"
#include "parallel/par.h"
#include "train/flags.h"
#include "train/train.h"

/* --check: gpt3d train's own flag (not gpt3d plan's, which reads the trainer's table). */
static const g3_opt_spec_t g3_train_check_spec = {
    "check", G3_OPT_STRING, NULL, "Only check, for a job of NODES nodes of RANKS_PER_NODE ranks, what gpt3d train checks before it trains (the flags, the layout, the batch arithmetic, the data and tokenizer files, the device's kernel sizes) and exit 0 or with the message and code the job would give; gpt3d-submit runs it before it creates or submits anything. --save, --load and the run directory are not touched.", NULL, 0, 0, "NODES:RANKS_PER_NODE"
};

/* The trainer's table and --check.  RET: malloc'd or NULL. */
static g3_opt_spec_t *g3_cmd_train_specs(void)
{
    size_t n = 0;
    g3_opt_spec_t *s;

    while (g3_train_opt_specs[n].name)
        n++;
    s = malloc(sizeof(*s) * (n + 2));
    if (!s)
        return NULL;
    memcpy(s, g3_train_opt_specs, sizeof(*s) * n);
    s[n] = g3_train_check_spec;
    s[n + 1] = g3_train_opt_specs[n];   /* the NULL entry */
    return s;
}

/* --check NODES:RANKS_PER_NODE.  OUT: *nodes_p, *rpn_p.  RET: 1, or 0 (logged). */
static int g3_cmd_train_check_arg(const char *arg, int *nodes_p, int *rpn_p)
{
    long long n = 0, r = 0;
    char tail = 0;

    if (sscanf(arg, "%lld:%lld%c", &n, &r, &tail) != 2 || n < 1 || r < 1 || n > 1000000 ||
        r > 4096 || n * r > INT_MAX / 4) {
        g3_error("--check '%s': give the job's nodes and ranks per node as NODES:RANKS_PER_NODE, e.g. --check 4:8", arg);
        return 0;
    }
    *nodes_p = (int)n;
    *rpn_p = (int)r;
    return 1;
}

/* The built-in corpus (gpt3d corpus) lives in ${GPT3D_DATA_DIR:-$HOME/.cache/gpt3d}/kjv. */
#define G3_KJV_PREFIX "kjv_text_document"
#define G3_KJV_VOCAB  "encoder.json"
#define G3_KJV_MERGES "vocab.bpe"

static int g3_cmd_kjv_path(char *buf, size_t len, const char *file)
{
    const char *dir = g3_param_data_dir(), *home = getenv("HOME");
    int n;
    if (dir)
        n = snprintf(buf, len, "%s/kjv/%s", dir, file);
    else
        n = snprintf(buf, len, "%s/.cache/gpt3d/kjv/%s", home && *home ? home : ".", file);
    return n > 0 && (size_t)n < len;
}

/* The sizes the --device kernels are built for (g3_be_check_sizes; gpt3d plan runs it too),
 * checked before the ranks agree so that rank 0 alone says what to change.  Reads the
 * vocabulary's size from cfg->vocab_file for the padded vocabulary.  RET: the exit code. */
static int g3_cmd_train_device_sizes(const g3_train_config_t *cfg)
{
    const g3_gpt_config_t *m = &cfg->model;
    int64_t vocab = 0, eod = 0;
    char why[1024];
    int Vp;
    g3_status_t st;

    if (!g3_be_kind(cfg->backend)->check_sizes)
        return G3_EXIT_OK;   /* any size (cpu) */
    st = g3_data_vocab_info(cfg->vocab_file, &vocab, &eod);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    if (vocab < 1 || vocab > INT_MAX)
        return G3_EXIT_OK;   /* the trainer refuses it, naming the file */
    Vp = g3_gpt_padded_vocab((int)vocab, m->make_vocab_size_divisible_by, m->tp_size);
    if (Vp < 1)
        return G3_EXIT_OK;   /* likewise */
    st = g3_be_check_sizes(cfg->backend, &cfg->be_opts, m->hidden_size, m->num_attention_heads,
                           m->hidden_size / m->num_attention_heads, g3_gpt_config_ffn(m),
                           Vp / m->tp_size, why, sizeof(why));
    if (st != G3_OK) {
        g3_error("%s", why);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

/* --exit-signal: the handler only sets the flag; the training loop looks at it at each step
 * boundary, where every rank agrees (train.c). */
static volatile sig_atomic_t g3_exit_flag;

static void g3_cmd_exit_handler(int sig)
{
    (void)sig;
    g3_exit_flag = 1;
}

static int g3_cmd_exit_signal_install(const char *name)
{
    struct sigaction sa;
    int sig = strcmp(name, "SIGUSR1") == 0 ? SIGUSR1 : strcmp(name, "SIGTERM") == 0 ? SIGTERM
                                                                                  : SIGUSR2;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = g3_cmd_exit_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, NULL) != 0) {
        g3_error("--exit-signal %s: cannot install the handler: %s", name, strerror(errno));
        return 0;
    }
    return 1;
}

/* The run's configuration as "name = value" lines (saved in checkpoints, compared on load),
 * with the model sizes that default to others written out.  RET: malloc'd text or NULL. */
static char *g3_cmd_config_text(const g3_opts_t *o, const g3_gpt_config_t *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    g3_opts_write_config(o, f);
    if (!g3_opts_is_set(o, "ffn-hidden-size"))
        fprintf(f, "ffn-hidden-size = %lld\n", m->ffn_hidden_size > 0
                                                    ? (long long)m->ffn_hidden_size
                                                    : 4 * (long long)m->hidden_size);
    if (!g3_opts_is_set(o, "max-position-embeddings"))
        fprintf(f, "max-position-embeddings = %d\n",
                m->max_position_embeddings > 0 ? m->max_position_embeddings : m->seq_length);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The files gpt3d train names that are not flags' own strings: the built-in corpus's paths and
 * the default metrics file.  cfg points into it: it lives as long as the run. */
typedef struct {
    char  vocab[4096], merge[4096], prefix[4096], metrics[4200];
    char *builtin[1];   /* { prefix } */
} g3_train_paths_t;

/* The compute backend: one this build and this node cannot run is refused before any work
 * (built without CUDA, or options it cannot honour: a usage error, 2; no usable GPU: 1).
 * RET: an exit code (logged). */
static int g3_cmd_train_check_backend(const g3_train_config_t *cfg, const g3_comm_proc_t *me,
                                  int check)
{
    const g3_be_kind_info_t *row = g3_be_kind(cfg->backend);
    int rc = g3_train_flags_probe(cfg->backend, &cfg->be_opts, check);   /* --check: elsewhere */

    if (rc != G3_EXIT_OK)
        return rc;
    if (!(row->caps & G3_BE_CAP_HOST_MEMORY) && me->size > 1 && !cfg->dist_ucx &&
        !g3_comm_backend_available(G3_COMM_BACKEND_NCCL)) {
        g3_error("--device %s with %d ranks needs NCCL (one rank per GPU, the tensor-, pipeline- and data-parallel groups on device buffers) and this gpt3d was built without it; reconfigure with --with-nccl=DIR, pass --distributed-backend ucx (through host memory), start one rank, or use --device cpu", row->name,
                 me->size);
        return G3_EXIT_USAGE;
    }
    if (cfg->distributed_optimizer && cfg->dp_size == 1 && me->rank == 0)
        g3_warn("--use-distributed-optimizer with data-parallel size 1 shards nothing");
    if (cfg->grad_reduce_bf16 && cfg->dp_size == 1 && me->rank == 0)
        g3_warn("--grad-reduce-in-bf16 with data-parallel size 1 reduces nothing");
    return G3_EXIT_OK;
}

/* Checkpoints and stopping on request (train/flags.c), the --exit-signal handler and the
 * run's configuration text.  OUT: cfg, *config_text_p (the caller frees it).
 * RET: an exit code (logged). */
static int g3_cmd_train_ckpt_setup(const g3_opts_t *o, g3_train_config_t *cfg,
                               char **config_text_p)
{
    int ok = g3_train_flags_ckpt(o, cfg);

    cfg->save_id = getenv("SLURM_JOB_ID");
    if (ok && !g3_cmd_exit_signal_install(g3_opts_str(o, "exit-signal")))
        ok = 0;
    cfg->exit_flag = &g3_exit_flag;
    if (ok) {
        *config_text_p = g3_cmd_config_text(o, &cfg->model);
        if (!*config_text_p) {
            g3_error("out of memory recording the configuration");
            ok = 0;
        }
        cfg->config_text = *config_text_p;
    }
    return ok ? G3_EXIT_OK : G3_EXIT_USAGE;
}

/* The data files (--data-path, --vocab-file, --merge-file, else the built-in corpus's) and
 * the tokenizer's identity, checked against the data's and the checkpoint's records.
 * OUT: cfg (pointing into paths), *tokenizer_json_p (the caller frees it).
 * RET: an exit code (logged). */
static int g3_cmd_train_data_setup(const g3_opts_t *o, int rank, g3_train_paths_t *paths,
                               g3_train_config_t *cfg, char **tokenizer_json_p)
{
    g3_train_data_flags_t d;
    int builtin_data, ok;
    g3_tokid_t *tid;
    char desc[512];
    g3_status_t st;

    g3_train_flags_tokenizer(o, &d);
    g3_train_flags_data(o, &d);
    builtin_data = d.data_path_count == 0;
    if (builtin_data) {
        if (!g3_cmd_kjv_path(paths->prefix, sizeof(paths->prefix), G3_KJV_PREFIX)) {
            g3_error("the built-in corpus path is too long; set GPT3D_DATA_DIR shorter");
            return G3_EXIT_USAGE;
        }
        paths->builtin[0] = paths->prefix;
        cfg->data_path_count = 1;
        cfg->data_path = paths->builtin;
    } else {
        cfg->data_path_count = d.data_path_count;
        cfg->data_path = d.data_path;
    }
    cfg->vocab_file = d.vocab_file;
    if (!cfg->vocab_file) {
        g3_cmd_kjv_path(paths->vocab, sizeof(paths->vocab), G3_KJV_VOCAB);
        cfg->vocab_file = paths->vocab;
    }
    cfg->merge_file = d.merge_file;
    if (!cfg->merge_file) {
        g3_cmd_kjv_path(paths->merge, sizeof(paths->merge), G3_KJV_MERGES);
        cfg->merge_file = paths->merge;
    }
    cfg->split = d.split;
    cfg->data_cache_path = d.data_cache_path;
    ok = g3_cli_need_file(cfg->vocab_file, "--vocab-file", !d.vocab_file);
    if (ok)
        ok = g3_cli_need_file(cfg->merge_file, "--merge-file", !d.merge_file);
    if (ok)
        ok = g3_cli_need_data(cfg->data_path, cfg->data_path_count, "--data-path", builtin_data);
    if (!ok)
        return G3_EXIT_FAILURE;
    cfg->allow_tokenizer_mismatch = d.allow_tokenizer_mismatch;
    tid = malloc(sizeof(*tid));
    st = tid ? g3_tokid_of_files(cfg->vocab_file, cfg->merge_file, tid) : G3_ERR_NO_MEMORY;
    if (st == G3_OK)
        st = g3_tokid_to_json(tid, tokenizer_json_p);
    if (st == G3_OK && rank == 0) {
        g3_tokid_describe(tid, desc, sizeof(desc));
        g3_info("tokenizer: %s", desc);
    }
    free(tid);
    if (st != G3_OK)
        return g3_status_exit_code(st) == G3_EXIT_USAGE ? G3_EXIT_USAGE : G3_EXIT_FAILURE;
    cfg->tokenizer = *tokenizer_json_p;
    return G3_EXIT_OK;
}

/* What the run writes: --save must be able to take a checkpoint (refused now, not at the first
 * save after the training it was meant to keep); the run directory and the metrics file
 * (rank 0 writes it).  OUT: cfg->metrics_file (maybe paths->metrics).
 * RET: an exit code (logged). */
static int g3_cmd_train_outputs_setup(const g3_opts_t *o, g3_train_paths_t *paths,
                                  g3_train_config_t *cfg)
{
    const char *run_dir = g3_opts_str(o, "run-dir");

    if (cfg->save_dir && g3_ckpt_save_check(cfg->save_dir) != G3_OK)
        return G3_EXIT_USAGE;
    if (!run_dir)
        run_dir = g3_opts_str(o, "save") ? g3_opts_str(o, "save") : "gpt3d-run";
    cfg->metrics_file = g3_opts_str(o, "metrics-file");
    if (!cfg->metrics_file) {
        if (g3_mkdir_p(run_dir, 0777, NULL, 0) != G3_OK) {
            g3_error("cannot create the run directory %s: %s; pass a writable --run-dir",
                     run_dir, strerror(errno));
            return G3_EXIT_FAILURE;
        }
        snprintf(paths->metrics, sizeof(paths->metrics), "%s/metrics.jsonl", run_dir);
        cfg->metrics_file = paths->metrics;
    }
    /* --tensorboard-dir: one that cannot be created is refused on every rank before work */
    if (cfg->tensorboard_dir) {
        char failed[4096];
        if (g3_mkdir_p(cfg->tensorboard_dir, 0777, failed, sizeof(failed)) != G3_OK) {
            g3_error("--tensorboard-dir %s: cannot create the directory %s: %s; pass a writable directory",
                     cfg->tensorboard_dir, failed, strerror(errno));
            return G3_EXIT_FAILURE;
        }
    }
    return G3_EXIT_OK;
}

/* Every check before any work, in order; the first that fails decides.  check: --check's
 * job (me describes it: no world), which stops before the files the job makes.  OUT: cfg,
 * *plan, *lf, *config_text_p, *tokenizer_json_p.  RET: an exit code (logged). */
static int g3_cmd_train_setup(const g3_opts_t *o, const g3_comm_proc_t *me, int check,
                          g3_train_paths_t *paths, g3_train_config_t *cfg, g3_train_plan_t *plan,
                          g3_train_layout_flags_t *lf, char **config_text_p,
                          char **tokenizer_json_p)
{
    g3_par_layout_t job;
    int rc;
    g3_status_t st;

    /* model, layout, batch and schedule flags (shared with gpt3d plan: train/flags.c) */
    if (!g3_train_flags_read(o, cfg, lf))
        return G3_EXIT_USAGE;
    /* the layout: DP = ranks / (TP x PP); a job to check: TP inside a node, as the placement
     * (g3_topo_map) requires */
    if (check && (lf->tp > me->local_size || me->local_size % lf->tp != 0)) {
        g3_error("impossible layout: TP %d does not %s the %d ranks of a node: tensor-parallel groups must stay inside one node; give a --tensor-model-parallel-size that divides the ranks per node",
                 lf->tp, lf->tp > me->local_size ? "fit in" : "divide", me->local_size);
        return G3_EXIT_USAGE;
    }
    if (!g3_train_flags_job_layout(me->size, lf, &cfg->model, &job))
        return G3_EXIT_USAGE;
    cfg->dp_size = job.dp;
    rc = g3_cmd_train_check_backend(cfg, me, check);
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_train_ckpt_setup(o, cfg, config_text_p);
    if (rc != G3_EXIT_OK)
        return rc;
    /* the model and the batch arithmetic, before touching any file */
    st = g3_gpt_config_check(&cfg->model);
    if (st == G3_OK)
        st = g3_train_plan(cfg, plan);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    rc = g3_cmd_train_data_setup(o, me->rank, paths, cfg, tokenizer_json_p);
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_train_device_sizes(cfg);
    if (rc == G3_EXIT_OK && check && cfg->eval_tasks) {
        /* --check: the --eval-tasks files, which the trainer reads before its first step */
        g3_task_set_t ts;
        memset(&ts, 0, sizeof(ts));
        st = g3_task_set_load(cfg->eval_tasks, cfg->vocab_file, cfg->merge_file,
                              cfg->model.seq_length, cfg->model.seed, &ts);
        g3_task_set_free(&ts);
        rc = g3_status_exit_code(st);
    }
    if (rc == G3_EXIT_OK && !check)   /* --check: the rest touches files the job makes */
        rc = g3_cmd_train_outputs_setup(o, paths, cfg);
    return rc;
}

/* gpt3d train --check NODES:RANKS_PER_NODE: the checks of a job of that size, alone, with no
 * world.  RET: the exit code the job would give (logged). */
static int g3_cmd_train_check_only(const g3_opts_t *o)
{
    g3_comm_proc_t job;
    g3_train_config_t cfg;
    g3_train_plan_t plan;
    g3_train_paths_t paths;
    g3_train_layout_flags_t lf;
    char *config_text = NULL, *tokenizer_json = NULL;
    int nodes, rpn, rc;

    if (!g3_cmd_train_check_arg(g3_opts_str(o, "check"), &nodes, &rpn))
        return G3_EXIT_USAGE;
    memset(&job, 0, sizeof(job));
    job.size = nodes * rpn;
    job.local_size = rpn;
    g3_train_config_defaults(&cfg);
    rc = g3_cmd_train_setup(o, &job, 1, &paths, &cfg, &plan, &lf, &config_text, &tokenizer_json);
    if (rc == G3_EXIT_OK)
        printf("gpt3d train --check: the flags pass gpt3d train's checks for %d nodes x %d ranks (TP %d x PP %d x DP %d)\n",
               nodes, rpn, lf.tp, lf.pp, cfg.dp_size);
    free(config_text);
    free(tokenizer_json);
    return rc;
}

int g3_cmd_train(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_train_config_t cfg;
    g3_train_plan_t plan;
    g3_train_result_t res;
    g3_train_paths_t paths;
    g3_train_layout_flags_t lf;
    g3_status_t st;
    int rc;
    g3_cli_world_t w;
    char *config_text = NULL, *tokenizer_json = NULL;
    g3_opt_cmd_t cmd = { "train", "Pretrain a GPT model (single rank, mpirun or srun --mpi=pmix).",
                         NULL, 0, 0, NULL };
    g3_opt_spec_t *specs = g3_cmd_train_specs();

    if (!specs) {
        g3_error("out of memory");
        return G3_EXIT_FAILURE;
    }
    cmd.specs = specs;
    st = g3_cli_world_parse(&cmd, argc, argv, &o);
    if (st != G3_OK || g3_opts_help_shown(o) || g3_opts_is_set(o, "check")) {
        rc = st != G3_OK            ? g3_status_exit_code(st)
             : g3_opts_help_shown(o) ? G3_EXIT_OK
                                     : g3_cmd_train_check_only(o);
        g3_opts_free(o);
        free(specs);
        return rc;
    }
    /* the world: which rank this is (alone: a singleton), its errors on every rank */
    rc = g3_cli_world_init(g3_train_flags_timeout_s(o), &w);
    if (rc != G3_EXIT_OK) {
        g3_opts_free(o);
        free(specs);
        return rc;
    }
    g3_train_config_defaults(&cfg);
    rc = g3_cmd_train_setup(o, w.me, 0, &paths, &cfg, &plan, &lf, &config_text, &tokenizer_json);
    /* every rank the same code; rank 0 shows the errors */
    rc = g3_cli_world_agree(&w, rc, "training");
    if (rc != G3_EXIT_OK)
        goto out;

    /* 3D parallelism: place the ranks (src/topo) and create the groups */
    rc = g3_cli_world_layout(&w, lf.tp, lf.pp, lf.topology_file);
    if (rc != G3_EXIT_OK)
        goto out;
    {
        const g3_par_layout_t *l = g3_par_layout(w.par);
        cfg.par = w.par;
        cfg.dp_rank = l->dp_rank;
        g3_par_shard(w.par, &cfg.model);   /* this rank's part of the model */
        cfg.be_opts.nthreads = w.threads;
        if (w.me->rank != 0) {   /* one voice: rank 0 writes the metrics and TensorBoard's
                                  * events (every rank has the loss, the gradient norm and
                                  * the timers' max over the ranks) */
            cfg.metrics_file = NULL;
            cfg.tensorboard_dir = NULL;
        }
    }

    st = g3_train_run(&cfg, &res);
    rc = res.resume_failed ? G3_EXIT_CKPT_LOAD : g3_status_exit_code(st);
    if (st != G3_OK && st != G3_ERR_NUMERIC && st != G3_ERR_INTERRUPTED)
        g3_cli_world_fail(&w, rc, st);   /* the other ranks may be waiting for this one */
out:
    g3_cli_world_free(&w);
    g3_opts_free(o);
    free(specs);
    free(config_text);
    free(tokenizer_json);
    return rc;
}
