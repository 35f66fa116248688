/* gpt3d train: configuration checks, the training loop, evaluation, progress and metrics,
 * and the text sample at the end.  Glossary: B micro-batch, T sequence length, GBS global
 * batch, DP data-parallel size. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/hook.h"
#include "core/log.h"
#include "data/bpe.h"
#include "data/dataset.h"
#include "data/tokid.h"
#include "infer/infer.h"
#include "infer/tasks.h"
#include "parallel/par.h"
#include "plan/plan.h"
#include "train/train.h"
#include "ckpt/ckpt.h"
#include "metrics/events.h"
#include "metrics/tensorboard.h"
#include "parallel/par_ckpt.h"
#include "train/train_ckpt.h"
#include "train/timing.h"

/* ---- the run ------------------------------------------------------------------------------- */

typedef struct {
    const g3_train_config_t *cfg;
    g3_train_plan_t          plan;
    g3_backend_t            *be;
    g3_gpt_t                *model;
    g3_par_engine_t         *eng;       /* schedule and optimizer (one rank: 1 x 1 x 1) */
    const g3_par_layout_t   *layout;    /* cfg->par's                                  */
    g3_train_timing_t       *timing;    /* --timing-log-level, or NULL                 */
    g3_data_t               *data;
    FILE                    *metrics;
    g3_tb_t                 *tb;        /* --tensorboard-dir, or NULL                  */
    g3_ev_sink_t             sink;      /* the metrics file and TensorBoard (events.h) */
    int                      T, B;
    int32_t                 *sample;    /* (T+1,) one token window                     */
    int32_t                 *inputs;    /* (GBS/DP, T) this rank's part of a batch     */
    int32_t                 *targets;   /* (GBS/DP, T)                                 */
    double                   peak;      /* FLOP/s of every rank together (MFU)         */
    g3_par_ckpt_stage_t      stage;     /* the saves' host staging area (par_ckpt.h)   */
    g3_task_set_t            tasks;     /* --eval-tasks (n 0: none)                    */
} g3_train_t;

/* Emit e to the metrics file and TensorBoard (progress: also its progress line on stdout). */
static void g3_train_emit(g3_train_t *tr, const g3_ev_t *e, int progress)
{
    g3_ev_sink_t sink = tr->sink;
    sink.progress = progress ? stdout : NULL;
    g3_ev_emit(&sink, e);
}

/* What the trainer's saves and resume move (train_ckpt.h). */
static g3_train_ckpt_t g3_train_ckpt(g3_train_t *tr)
{
    g3_train_ckpt_t c = { tr->cfg, tr->model, tr->eng, &tr->stage };
    return c;
}

/* This rank's n samples of the global batch that starts at sample `first` of split into
 * tr->inputs and tr->targets (n, T): g3_infer_batch_load, Megatron's order. */
static g3_infer_batch_t g3_train_batcher(const g3_train_t *tr)
{
    g3_infer_batch_t bt = { tr->data, tr->B, tr->T,
                            tr->cfg->dp_size > 0 ? tr->cfg->dp_size : 1, tr->cfg->dp_rank,
                            tr->sample, tr->inputs, tr->targets };
    return bt;
}

static g3_status_t g3_train_batch(g3_train_t *tr, g3_split_t split, uint64_t first,
                                    int64_t n, uint64_t wrap)
{
    g3_infer_batch_t bt = g3_train_batcher(tr);
    return g3_infer_batch_load(&bt, split, first, n, wrap);
}

/* Mean token loss over the first eval_iters global batches of the validation split (the same
 * samples every time, so evaluations are comparable).  OUT: *loss_p */
static g3_status_t g3_train_evaluate(g3_train_t *tr, double *loss_p)
{
    g3_infer_lm_t lm = { tr->model, tr->eng };
    g3_infer_batch_t bt = g3_train_batcher(tr);
    uint64_t n = (uint64_t)tr->cfg->eval_iters * (uint64_t)tr->plan.global_batch_size;
    return g3_infer_evaluate(&lm, &bt, G3_SPLIT_VALID, n, tr->plan.global_batch_size, loss_p);
}

/* The validation loss of iteration `iter` (after `consumed` samples): stdout, the metrics
 * file, and TensorBoard's "lm loss validation" (with --log-validation-ppl-to-tensorboard its
 * "ppl", the metrics file's value), each also "vs samples" and "vs tokens". */
static void g3_train_report_eval(g3_train_t *tr, int64_t iter, int64_t consumed,
                                   double loss, int final)
{
    g3_ev_t e;

    g3_infer_eval_event(&e, G3_SPLIT_VALID, iter, loss, final);
    g3_ev_int(&e, G3_EVF_EVAL_SAMPLES, consumed);
    g3_ev_int(&e, G3_EVF_EVAL_TOKENS, consumed * tr->T);
    g3_train_emit(tr, &e, 1);
}

/* Every --tensorboard-log-interval iterations: the iteration's own values (Megatron-LM's
 * training_log tags), on the iteration axis and on the consumed samples' and tokens'. */
static void g3_train_tb_iteration(g3_train_t *tr, int64_t it, int64_t consumed,
                                    int64_t gbs, double lr, double loss, double norm)
{
    g3_ev_t e;

    if (!tr->tb || it % tr->cfg->tensorboard_log_interval != 0)
        return;
    g3_ev_init(&e, G3_EV_ITERATION);
    g3_ev_int(&e, G3_EVF_IT_ITER, it);
    g3_ev_num(&e, G3_EVF_IT_LOSS, loss);
    g3_ev_num(&e, G3_EVF_IT_LR, lr);
    g3_ev_int(&e, G3_EVF_IT_GBS, gbs);
    g3_ev_num(&e, G3_EVF_IT_NORM, norm);
    g3_ev_int(&e, G3_EVF_IT_SAMPLES, consumed);
    g3_ev_int(&e, G3_EVF_IT_TOKENS, consumed * tr->T);
    g3_train_emit(tr, &e, 0);
}

/* With --log-memory-to-tensorboard, this rank's memory in the progress record e. */
static void g3_train_memory(g3_train_t *tr, g3_ev_t *e)
{
    struct rusage ru;
    g3_par_memory_t mem;

    if (!tr->tb || !tr->cfg->log_memory)
        return;
    g3_par_engine_memory(tr->eng, &mem);
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        g3_ev_int(e, G3_EVF_TRAIN_RSS, (int64_t)ru.ru_maxrss * 1024);
    g3_ev_int(e, G3_EVF_TRAIN_STATE, (int64_t)(mem.param_bytes + mem.grad_bytes + mem.optim_bytes));
    g3_ev_int(e, G3_EVF_TRAIN_ACTS, (int64_t)mem.acts_bytes);
}

/* --eval-tasks at iteration iter: every task scored on this replica's share, rank 0
 * reporting (stdout and the metrics file, "event":"task"). */
static g3_status_t g3_train_tasks(g3_train_t *tr, int64_t iter)
{
    g3_infer_lm_t lm = { tr->model, tr->eng };
    if (tr->tasks.n == 0)
        return G3_OK;
    return g3_task_set_run(&tr->tasks, &lm, tr->B, tr->cfg->dp_size > 0 ? tr->cfg->dp_size : 1,
                           tr->cfg->dp_rank, iter, tr->layout->world_rank == 0, tr->metrics);
}

/* Generate cfg->sample_tokens tokens after cfg->prompt and print the text: greedy, or top-k
 * with temperature, the draws keyed by (seed, "generate", step) (src/infer). */
static g3_status_t g3_train_sample(g3_train_t *tr)
{
    const g3_train_config_t *cfg = tr->cfg;
    g3_infer_lm_t lm = { tr->model, tr->eng };
    g3_infer_generate_opts_t go;
    g3_bpe_t *bpe = NULL;
    g3_bpe_ids_t ids = { 0 };
    char *text = NULL;
    size_t text_len = 0, prompt_len;
    int made = 0;
    g3_status_t st;

    st = g3_bpe_load(cfg->vocab_file, cfg->merge_file, &bpe);
    if (st != G3_OK)
        return st;
    st = g3_infer_encode_prompt(bpe, cfg->prompt ? cfg->prompt : "",
                                cfg->prompt ? strlen(cfg->prompt) : 0, "--prompt", &ids);
    if (st != G3_OK)
        goto out;
    prompt_len = ids.len;
    memset(&go, 0, sizeof(go));
    go.max_new_tokens = cfg->sample_tokens;
    go.context = tr->T;
    go.vocab_size = tr->model->cfg.vocab_size;   /* the real vocabulary: padded ids never */
    go.stop_id = -1;
    go.sampling.greedy = cfg->top_k == 1;   /* 0: no top-k filtering (Megatron-LM's meaning) */
    go.sampling.temperature = cfg->temperature;
    go.sampling.top_k = cfg->top_k;
    go.sampling.seed = cfg->model.seed;
    st = g3_infer_generate(&lm, &go, &ids, &made, NULL);
    if (st != G3_OK)
        goto out;
    st = g3_infer_decode_text(bpe, ids.ids, ids.len, &text, &text_len);
    if (st != G3_OK)
        goto out;
    if (cfg->top_k == 1)
        printf("sample (greedy, %d tokens after a %zu-token prompt):\n", cfg->sample_tokens,
               prompt_len);
    else
        printf("sample (top-k %d, temperature %g, %d tokens after a %zu-token prompt):\n",
               cfg->top_k, cfg->temperature, cfg->sample_tokens, prompt_len);
    fwrite(text, 1, text_len, stdout);
    printf("\n");
    fflush(stdout);
out:
    free(text);
    g3_bpe_ids_free(&ids);
    g3_bpe_free(bpe);
    return st;
}

static void g3_train_close(g3_train_t *tr)
{
    if (tr->metrics && fclose(tr->metrics) != 0)
        g3_warn("could not finish writing the metrics file %s: %s", tr->cfg->metrics_file,
                strerror(errno));
    g3_tb_close(tr->tb);
    g3_data_close(tr->data);
    g3_task_set_free(&tr->tasks);
    g3_train_timing_free(tr->timing);
    g3_par_engine_free(tr->eng);
    g3_gpt_free(tr->model);
    g3_par_ckpt_stage_free(&tr->stage);   /* the backend's memory: before closing it */
    g3_par_drop_backend(tr->cfg->par);   /* its groups use the backend: before closing it */
    g3_be_close(tr->be);
    free(tr->sample);
    free(tr->inputs);
    free(tr->targets);
}

/* RET: MemAvailable of /proc/meminfo in bytes, 0 when unknown. */
static size_t g3_train_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    size_t kb = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* Before the big allocations, say clearly when they cannot fit (instead of being killed by
 * the kernel later).  Only the CPU backend allocates host memory. */
static g3_status_t g3_train_check_memory(g3_train_t *tr)
{
    size_t acts = g3_gpt_acts_estimate(tr->model, tr->B, tr->T);
    size_t adam = 2 * tr->model->numel * sizeof(float);
    size_t avail = g3_train_mem_available();

    {
        /* 1F1B keeps up to PP - pp micro-batches in flight; ZeRO-1 keeps m, v and the
         * reduced gradient for 1/DP of the parameters.  Ranks on one node share it. */
        const g3_par_layout_t *l = tr->layout;
        int64_t m = tr->plan.global_batch_size / (tr->B * (int64_t)l->dp);
        int64_t sets = l->pp - l->pp_rank < m ? l->pp - l->pp_rank : m;
        acts *= (size_t)(sets > 0 ? sets : 1);
        if (tr->cfg->distributed_optimizer)
            adam = 3 * tr->model->numel * sizeof(float) / (size_t)l->dp;
        avail /= (size_t)(l->local_size > 0 ? l->local_size : 1);
    }

    if (!tr->be->host_memory || avail == 0 || acts + adam <= avail)
        return G3_OK;
    g3_error(
        "training needs %.2f GiB more memory (activations of %d x %d tokens: %.2f GiB, Adam moments: %.2f GiB) but only %.2f GiB is available: lower --micro-batch-size or --seq-length, or add --recompute-activations",
        (double)(acts + adam) / 1073741824.0, tr->B, tr->T, (double)acts / 1073741824.0,
        (double)adam / 1073741824.0, (double)avail / 1073741824.0);
    return G3_ERR_NO_MEMORY;
}

/* The data: the datasets' recorded tokenizer files against the run's, the splits with the
 * samples the run needs (vocab: the vocabulary's size, every token id is checked against it),
 * and the batch buffers.  OUT: tr->data, tr->sample, tr->inputs, tr->targets.
 * RET: the first error (logged). */
static g3_status_t g3_train_open_data(g3_train_t *tr, const g3_train_config_t *cfg,
                                        const g3_gpt_config_t *mcfg, int64_t vocab)
{
    g3_data_config_t dcfg;
    g3_status_t st;

    if (cfg->tokenizer) {   /* the datasets' recorded tokenizer files against the run's */
        g3_tokid_t run;
        st = g3_tokid_from_json(cfg->tokenizer, strlen(cfg->tokenizer), "the run's tokenizer", &run);
        if (st == G3_OK)
            st = g3_data_check_tokenizer(cfg->data_path_count, cfg->data_path, &run,
                                         cfg->allow_tokenizer_mismatch);
        if (st != G3_OK)
            return st;
    }
    memset(&dcfg, 0, sizeof(dcfg));
    dcfg.data_path_count = cfg->data_path_count;
    dcfg.data_path = cfg->data_path;
    dcfg.split = cfg->split;
    dcfg.seq_length = tr->T;
    dcfg.seed = mcfg->seed;
    dcfg.num_samples[G3_SPLIT_TRAIN] =
        (uint64_t)(cfg->train_samples > 0 ? cfg->train_samples
                                          : tr->plan.train_iters * tr->plan.global_batch_size);
    dcfg.num_samples[G3_SPLIT_VALID] =
        (uint64_t)(cfg->eval_iters * tr->plan.global_batch_size);
    dcfg.cache_dir = cfg->data_cache_path;
    dcfg.vocab_size = vocab;   /* every dtype and token id checked against it at open */
    dcfg.vocab_file = cfg->vocab_file;
    st = g3_data_open(&dcfg, &tr->data);
    if (st != G3_OK)
        return st;
    if (g3_data_num_samples(tr->data, G3_SPLIT_TRAIN) < dcfg.num_samples[G3_SPLIT_TRAIN]) {
        g3_error(
            "the train split has %llu samples of %d tokens, fewer than the %llu the run needs; change --split or add data",
            (unsigned long long)g3_data_num_samples(tr->data, G3_SPLIT_TRAIN), tr->T,
            (unsigned long long)dcfg.num_samples[G3_SPLIT_TRAIN]);
        return G3_ERR_INVALID_ARG;
    }
    {
        size_t rows = (size_t)(tr->plan.global_batch_size / (cfg->dp_size > 0 ? cfg->dp_size : 1));
        tr->sample = malloc(sizeof(int32_t) * ((size_t)tr->T + 1));
        tr->inputs = malloc(sizeof(int32_t) * rows * (size_t)tr->T);
        tr->targets = malloc(sizeof(int32_t) * rows * (size_t)tr->T);
    }
    if (!tr->sample || !tr->inputs || !tr->targets) {
        g3_error("out of memory for the batch buffers");
        return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

/* Everything before the first iteration: the order puts the cheap checks first. */
static g3_status_t g3_train_open(g3_train_t *tr, const g3_train_config_t *cfg,
                                   g3_gpt_config_t *mcfg)
{
    int64_t vocab = 0, eod = 0;
    g3_status_t st;

    if (!cfg->par) {
        g3_error("the trainer needs a layout (one rank: g3_par_init's 1 x 1 x 1)");
        return G3_ERR_INTERNAL;
    }
    tr->layout = g3_par_layout(cfg->par);
    st = g3_train_plan(cfg, &tr->plan);
    if (st != G3_OK)
        return st;
    st = g3_data_vocab_info(cfg->vocab_file, &vocab, &eod);
    if (st != G3_OK)
        return st;
    mcfg->vocab_size = (int)vocab;
    st = g3_gpt_config_check(mcfg);
    if (st != G3_OK)
        return st;
    /* before anything big is allocated: gpt3d plan's estimate against the memory there is */
    st = g3_plan_check_fit(mcfg, cfg->backend, &cfg->be_opts, cfg->dp_size, cfg->micro_batch_size,
                           tr->plan.global_batch_size, cfg->distributed_optimizer,
                           tr->layout->local_size);
    if (st != G3_OK)
        return st;
    tr->T = mcfg->seq_length;
    tr->B = (int)cfg->micro_batch_size;

    st = g3_train_open_data(tr, cfg, mcfg, vocab);
    if (st != G3_OK)
        return st;
    if (cfg->eval_tasks) {   /* the task files read before any work: a bad one stops the run */
        st = g3_task_set_load(cfg->eval_tasks, cfg->vocab_file, cfg->merge_file, tr->T,
                              mcfg->seed, &tr->tasks);
        if (st != G3_OK)
            return st;
    }
    if (cfg->metrics_file) {
        /* a resumed run (--load) appends to the metrics of the runs before it */
        tr->metrics = fopen(cfg->metrics_file, cfg->load_dir ? "a" : "w");
        if (!tr->metrics) {
            g3_error("cannot create the metrics file %s: %s; pass a writable --metrics-file",
                     cfg->metrics_file, strerror(errno));
            return G3_ERR_IO;
        }
    }
    if (cfg->tensorboard_dir) {   /* a new events file, also for a resumed run */
        st = g3_tb_open(cfg->tensorboard_dir, &tr->tb);
        if (st != G3_OK)
            return st;
    }
    tr->sink.jsonl = tr->metrics;
    tr->sink.tb = tr->tb;
    tr->sink.tb_groups =
        (cfg->log_validation_ppl ? G3_EV_F_PPL : 0u) | (cfg->log_timers ? G3_EV_F_TIMERS : 0u);
    st = g3_be_open(cfg->backend, &cfg->be_opts, &tr->be);
    if (st == G3_OK)
        st = g3_train_timing_init(cfg->timing_log_level, tr->be, cfg->par, &tr->timing);
    if (st != G3_OK)
        return st;
    st = g3_gpt_init(mcfg, tr->be, &tr->model);
    if (st != G3_OK)
        return st;
    st = g3_train_check_memory(tr);
    if (st != G3_OK)
        return st;
    {
        g3_par_engine_config_t ecfg;
        g3_gpt_tp_comm_t tpc;
        memset(&ecfg, 0, sizeof(ecfg));
        ecfg.adamw = cfg->adamw;
        ecfg.distributed_optimizer = cfg->distributed_optimizer;
        ecfg.grad_reduce_bf16 = cfg->grad_reduce_bf16;
        ecfg.ddp_bucket_size = cfg->ddp_bucket_size;
        ecfg.overlap_grad_reduce = cfg->overlap_grad_reduce;
        ecfg.overlap_param_gather = cfg->overlap_param_gather;
        ecfg.max_micro = tr->plan.global_batch_size / (tr->B * (int64_t)cfg->dp_size);
        ecfg.grad_dump_dir = cfg->grad_dump_dir;
        ecfg.dist_backend = cfg->dist_ucx ? G3_PAR_DIST_UCX : G3_PAR_DIST_NCCL;
        ecfg.timers = g3_train_timing_timers(tr->timing);
        g3_par_tp_comm(cfg->par, &tpc);
        g3_gpt_set_tp_comm(tr->model, &tpc);
        st = g3_par_engine_init(cfg->par, tr->model, tr->B, tr->T, &ecfg, &tr->eng);
    }
    /* The saves' staging area: pinning it takes seconds per GiB, so it is allocated in the
     * background from here on; the resume and the first save wait for what is left of it. */
    if (st == G3_OK && cfg->save_dir)
        g3_par_ckpt_stage_start(&tr->stage, tr->be,
                                g3_par_ckpt_stage_floats(tr->model, tr->eng));
    return st;
}

/* The run's "start" record: the model, the batch, the backend. */
static void g3_train_start_event(g3_train_t *tr, const g3_gpt_config_t *m)
{
    g3_ev_t e;

    g3_ev_init(&e, G3_EV_START);
    g3_ev_int(&e, G3_EVF_START_NUM_LAYERS, m->num_layers);
    g3_ev_int(&e, G3_EVF_START_HIDDEN_SIZE, m->hidden_size);
    g3_ev_int(&e, G3_EVF_START_HEADS, m->num_attention_heads);
    g3_ev_int(&e, G3_EVF_START_FFN, tr->model->F);
    g3_ev_int(&e, G3_EVF_START_SEQ, m->seq_length);
    g3_ev_int(&e, G3_EVF_START_VOCAB, m->vocab_size);
    g3_ev_int(&e, G3_EVF_START_PVOCAB, tr->model->Vp);
    g3_ev_int(&e, G3_EVF_START_PARAMS, g3_gpt_num_parameters(m));
    g3_ev_int(&e, G3_EVF_START_MBS, tr->cfg->micro_batch_size);
    g3_ev_int(&e, G3_EVF_START_GBS, tr->plan.global_batch_size);
    g3_ev_int(&e, G3_EVF_START_ITERS, tr->plan.train_iters);
    g3_ev_str(&e, G3_EVF_START_BACKEND, tr->be->name);
    g3_ev_int(&e, G3_EVF_START_THREADS, tr->be->nthreads);
    g3_ev_num(&e, G3_EVF_START_PEAK, tr->peak);
    g3_train_emit(tr, &e, 0);
}

/* The peak of the whole job: for a GPU backend the device's peak times the distinct devices
 * (ranks sharing a GPU with --distributed-backend ucx do not add to it); for the CPU the
 * backend's per-thread peak times the threads of every rank, at most the CPUs of each node
 * (ranks sharing cores do not add to it). */
static double g3_train_peak(const g3_train_t *tr)
{
    const g3_par_layout_t *l;
    double per_thread, threads;
    long ncpu;

    l = tr->layout;
    if (l->world_size == 1 || tr->be->nthreads < 1)
        return tr->be->peak_flops;
    if (!tr->be->host_memory && g3_par_devices(tr->cfg->par) > 0)
        return tr->be->peak_flops * g3_par_devices(tr->cfg->par);
    per_thread = tr->be->peak_flops / tr->be->nthreads;
    threads = (double)tr->be->nthreads * l->ranks_per_node;
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > 0 && threads > (double)ncpu)
        threads = (double)ncpu;
    return per_thread * threads * l->nnodes;
}

static void g3_train_banner(g3_train_t *tr, const g3_gpt_config_t *m)
{
    const g3_train_config_t *cfg = tr->cfg;
    size_t state = tr->model->numel * sizeof(float) * 4;   /* params, grads, m, v */
    g3_par_memory_t mem;

    printf(
        "gpt3d train: GPT %d layers, hidden %d, %d heads, ffn %d, sequence %d, vocabulary %d (padded %d): %.2fM parameters\n",
        m->num_layers, m->hidden_size, m->num_attention_heads, tr->model->F, m->seq_length,
        m->vocab_size, tr->model->Vp, (double)g3_gpt_num_parameters(m) / 1e6);
    printf(
        "  batches: micro %lld, global %lld%s, %lld iterations; lr %g -> %g (%s decay over %lld samples, warm-up %lld samples)\n",
        (long long)cfg->micro_batch_size, (long long)tr->plan.global_batch_size,
        tr->plan.rampup.start > 0 ? " (ramping up)" : "", (long long)tr->plan.train_iters,
        tr->plan.lr.max_lr, tr->plan.lr.min_lr,
        tr->plan.lr.style == G3_LR_DECAY_COSINE   ? "cosine"
        : tr->plan.lr.style == G3_LR_DECAY_LINEAR ? "linear"
                                                  : "constant",
        (long long)tr->plan.lr.decay_samples, (long long)tr->plan.lr.warmup_samples);
    if (tr->layout->world_size > 1) {
        g3_par_print_layout(cfg->par, m, stdout);
        printf("  backend %s: %s%s\n", tr->be->name, tr->be->device,
               m->recompute_activations ? "; activations recomputed per layer" : "");
        if (g3_par_print_memory(tr->eng, stdout) != G3_OK)
            g3_warn("could not gather the memory of every stage");
    } else {   /* one rank: no layout to show */
        g3_par_engine_memory(tr->eng, &mem);
        printf("  backend %s: %s; memory: %.1f MiB model state, %.1f MiB activations%s\n",
               tr->be->name, tr->be->device, (double)state / 1048576.0,
               (double)mem.acts_bytes / 1048576.0,
               m->recompute_activations ? " (recomputed per layer)" : "");
    }
    tr->peak = g3_train_peak(tr);
    if (tr->layout->world_size > 1)
        printf("  MFU is measured against %.1f GFLOP/s: %d node%s x %.1f GFLOP/s (per rank: %s)\n",
               tr->peak / 1e9, g3_par_layout(cfg->par)->nnodes,
               g3_par_layout(cfg->par)->nnodes == 1 ? "" : "s",
               tr->peak / g3_par_layout(cfg->par)->nnodes / 1e9, tr->be->peak_how);
    else
        printf("  MFU is measured against %.1f GFLOP/s (%s)\n", tr->be->peak_flops / 1e9,
               tr->be->peak_how);
    fflush(stdout);
    g3_train_start_event(tr, m);
}

/* The longest list of phases a log line or a metrics record gets. */
#define G3_TRAINER_PHASES_MAX 512

/* An asynchronous save of iteration `it` was committed: say where the writer thread's time
 * went (tm: its phases and the commit's; writer_s: its wall time), on stdout and in the
 * metrics file ("event":"commit"). */
static void g3_train_committed(g3_train_t *tr, int64_t it, const g3_ckpt_timing_t *tm,
                                 double writer_s)
{
    char ph[G3_TRAINER_PHASES_MAX], js[G3_TRAINER_PHASES_MAX];
    g3_ev_t e;

    g3_ckpt_timing_format(tm, G3_CKPT_T_WRITER, 0, ph, sizeof(ph));
    g3_ckpt_timing_format(tm, G3_CKPT_T_WRITER, 1, js, sizeof(js));
    printf(" committed the asynchronous checkpoint of iteration %lld: writer %.3f s (%s), commit %.3f s\n",
           (long long)it, writer_s, ph, tm->s[G3_CKPT_T_COMMIT]);
    fflush(stdout);
    g3_ev_init(&e, G3_EV_COMMIT);
    g3_ev_int(&e, G3_EVF_COMMIT_ITER, it);
    g3_ev_bool(&e, G3_EVF_COMMIT_ASYNC, 1);
    g3_ev_num(&e, G3_EVF_COMMIT_WRITER, writer_s);
    g3_ev_num(&e, G3_EVF_COMMIT_COMMIT, tm->s[G3_CKPT_T_COMMIT]);
    g3_ev_obj(&e, G3_EVF_COMMIT_PHASES, js);
    g3_train_emit(tr, &e, 0);
}

/* A "save" record: a checkpoint of iteration it (consumed samples), why, the stall and its
 * phases (js: JSON members). */
static void g3_train_save_event(g3_ev_t *e, int64_t it, int64_t consumed, const char *why,
                                  double stall_s, const char *js)
{
    g3_ev_init(e, G3_EV_SAVE);
    g3_ev_int(e, G3_EVF_SAVE_ITER, it);
    g3_ev_int(e, G3_EVF_SAVE_SAMPLES, consumed);
    g3_ev_str(e, G3_EVF_SAVE_REASON, why);
    g3_ev_num(e, G3_EVF_SAVE_STALL, stall_s);
    g3_ev_obj(e, G3_EVF_SAVE_PHASES, js);
}

/* Save a checkpoint after iteration `it` and say how long training stood still for it. */
static g3_status_t g3_train_save(g3_train_t *tr, int64_t it, int64_t consumed, int64_t gbs,
                                   double lr, const char *why)
{
    g3_train_ckpt_t c = g3_train_ckpt(tr);
    g3_ckpt_timing_t tm;
    char ph[G3_TRAINER_PHASES_MAX], js[G3_TRAINER_PHASES_MAX];
    double t0 = g3_clock_now(), dt;
    g3_ev_t e;
    g3_status_t st = g3_par_engine_params_ready(tr->eng);   /* all-gathers */

    memset(&tm, 0, sizeof(tm));
    g3_timers_start(g3_train_timing_timers(tr->timing), G3_TIMER_CKPT);
    if (st == G3_OK)
        st = g3_train_ckpt_save(&c, it, consumed, gbs, lr, &tm);
    g3_timers_stop(g3_train_timing_timers(tr->timing), G3_TIMER_CKPT);

    dt = g3_clock_now() - t0;
    if (st != G3_OK)
        return st;   /* logged once, where it failed */
    g3_ckpt_timing_format(&tm, G3_CKPT_T_SAVE, 0, ph, sizeof(ph));
    g3_ckpt_timing_format(&tm, G3_CKPT_T_SAVE, 1, js, sizeof(js));
    printf(" saved checkpoint at iteration %8lld to %s (%s): training stalled %.3f s (%s)\n",
           (long long)it, tr->cfg->save_dir, why, dt, ph);
    fflush(stdout);
    g3_train_save_event(&e, it, consumed, why, dt, js);
    g3_train_emit(tr, &e, 0);
    return G3_OK;
}

/* --async-save: start writing the checkpoint of iteration `it` in the background (after the
 * previous asynchronous save, if any, is committed) and say how long training stood still. */
static g3_status_t g3_train_save_async(g3_train_t *tr, g3_train_ckpt_async_t **pending,
                                         int64_t it, int64_t consumed, int64_t gbs, double lr)
{
    g3_train_ckpt_t c = g3_train_ckpt(tr);
    g3_ckpt_timing_t tm, prev;
    char ph[G3_TRAINER_PHASES_MAX], js[G3_TRAINER_PHASES_MAX], stage[96] = "";
    double t0 = g3_clock_now(), t1, dt, writer_s = 0, stage_s;
    int64_t done;
    g3_ev_t e;
    g3_status_t st;

    memset(&tm, 0, sizeof(tm));
    memset(&prev, 0, sizeof(prev));
    st = g3_train_ckpt_async_finish(&c, pending, 1, &done, &prev, &writer_s);
    t1 = g3_clock_now();   /* t1 - t0: waiting for the previous save's writer, its commit */
    tm.s[G3_CKPT_T_WAIT] = t1 - t0;

    if (st == G3_OK)
        st = g3_par_engine_params_ready(tr->eng);   /* --overlap-param-gather's all-gathers */
    g3_timers_start(g3_train_timing_timers(tr->timing), G3_TIMER_CKPT);
    if (st == G3_OK)
        st = g3_train_ckpt_save_async(&c, it, consumed, gbs, lr, &tm, pending);
    g3_timers_stop(g3_train_timing_timers(tr->timing), G3_TIMER_CKPT);
    dt = g3_clock_now() - t0;
    if (st != G3_OK)
        return st;   /* logged once, where it failed */
    if (done >= 0)
        g3_train_committed(tr, done, &prev, writer_s);
    g3_ckpt_timing_format(&tm, G3_CKPT_T_STALL, 0, ph, sizeof(ph));
    g3_ckpt_timing_format(&tm, G3_CKPT_T_STALL, 1, js, sizeof(js));
    /* the first save's wait for the staging area (once per run) said apart from the copy */
    stage_s = tm.s[G3_CKPT_T_STAGE_ALLOC];
    if (stage_s >= 0.0005)
        snprintf(stage, sizeof(stage),
                 ", %.3f s of it waiting for the staging area's one-time allocation", stage_s);
    if (done >= 0)
        printf(
            " started an asynchronous save of iteration %8lld to %s: training stalled %.3f s (%.3f s waiting for the previous save to finish writing, %.3f s host copy%s; %s)\n",
            (long long)it, tr->cfg->save_dir, dt, t1 - t0, dt - (t1 - t0), stage, ph);
    else
        printf(
            " started an asynchronous save of iteration %8lld to %s: training stalled %.3f s (host copy%s; %s)\n",
            (long long)it, tr->cfg->save_dir, dt, stage, ph);
    fflush(stdout);
    g3_train_save_event(&e, it, consumed, "save interval", dt, js);
    g3_ev_bool(&e, G3_EVF_SAVE_ASYNC, 1);
    g3_ev_num(&e, G3_EVF_SAVE_WAIT, t1 - t0);
    g3_ev_num(&e, G3_EVF_SAVE_COPY, dt - (t1 - t0));
    g3_train_emit(tr, &e, 0);
    return G3_OK;
}

/* Commit a pending asynchronous save: block = 0 only if every rank's writer is done. */
static g3_status_t g3_train_async_poll(g3_train_t *tr, g3_train_ckpt_async_t **pending,
                                         int block, int64_t *saved_it)
{
    g3_train_ckpt_t c = g3_train_ckpt(tr);
    g3_ckpt_timing_t tm;
    double writer_s = 0;
    int64_t done;
    g3_status_t st;

    if (!*pending)
        return G3_OK;
    memset(&tm, 0, sizeof(tm));
    st = g3_train_ckpt_async_finish(&c, pending, block, &done, &tm, &writer_s);
    if (st != G3_OK)
        return st;   /* logged once, where it failed */
    if (done >= 0) {
        *saved_it = done;
        g3_train_committed(tr, done, &tm, writer_s);
    }
    return G3_OK;
}

/* At a step boundary: has a stop been asked for (signal, run time; every rank agrees
 * through a max over the world), or does --exit-interval stop here?  OUT: *why_p */
static g3_status_t g3_train_exit_requested(g3_train_t *tr, int64_t it, double t_start,
                                             const char **why_p)
{
    const g3_train_config_t *cfg = tr->cfg;
    double req[2] = { 0.0, 0.0 };
    g3_status_t st = G3_OK;

    *why_p = NULL;
    if (!cfg->exit_flag && cfg->exit_duration_mins <= 0.0 && cfg->exit_interval <= 0)
        return G3_OK;
    req[0] = cfg->exit_flag && *cfg->exit_flag ? 1.0 : 0.0;
    req[1] = cfg->exit_duration_mins > 0.0 &&
             (g3_clock_now() - t_start) / 60.0 >= cfg->exit_duration_mins ? 1.0 : 0.0;
    st = g3_par_world_allreduce(cfg->par, req, 2, 1);
    if (st != G3_OK)
        return st;
    if (req[0] > 0.0)
        *why_p = "exit signal";
    else if (req[1] > 0.0)
        *why_p = "exit duration";
    else if (cfg->exit_interval > 0 && it % cfg->exit_interval == 0)
        *why_p = "exit interval";
    return G3_OK;
}

/* The progress statistics since the last progress line. */
typedef struct {
    double  t_sum, loss_sum, flops_sum;
    int64_t n_iters, tokens;
} g3_trainer_stats_t;

/* --load: resume from the latest checkpoint if there is one.  OUT: *start_it_p, *consumed_p,
 * *saved_it_p and res's counts when one was loaded (else left as they were); res's
 * resume_failed when the checkpoint itself could not be read or verified. */
static g3_status_t g3_train_resume(g3_train_t *tr, int64_t *start_it_p,
                                     int64_t *consumed_p, int64_t *saved_it_p,
                                     g3_train_result_t *res)
{
    const g3_train_config_t *cfg = tr->cfg;
    g3_train_ckpt_t c = g3_train_ckpt(tr);
    int loaded = 0, unreadable = 0;
    g3_ckpt_timing_t tm;
    char ph[G3_TRAINER_PHASES_MAX], js[G3_TRAINER_PHASES_MAX];
    double t0 = g3_clock_now(), dt;
    g3_ev_t e;
    g3_status_t st;

    memset(&tm, 0, sizeof(tm));
    st = g3_train_ckpt_load(&c, start_it_p, consumed_p, &loaded, &unreadable, &tm);
    dt = g3_clock_now() - t0;

    res->resume_failed = st != G3_OK && unreadable;
    if (st != G3_OK || !loaded)
        return st;
    *saved_it_p = *start_it_p;
    res->iterations = *start_it_p;
    res->consumed_samples = *consumed_p;
    g3_ckpt_timing_format(&tm, G3_CKPT_T_LOAD, 0, ph, sizeof(ph));
    g3_ckpt_timing_format(&tm, G3_CKPT_T_LOAD, 1, js, sizeof(js));
    printf(" resumed from the checkpoint of iteration %lld in %s (consumed samples %lld): loaded in %.3f s (%s)\n",
           (long long)*start_it_p, cfg->load_dir, (long long)*consumed_p, dt, ph);
    fflush(stdout);
    g3_ev_init(&e, G3_EV_LOAD);
    g3_ev_int(&e, G3_EVF_LOAD_ITER, *start_it_p);
    g3_ev_int(&e, G3_EVF_LOAD_SAMPLES, *consumed_p);
    g3_ev_num(&e, G3_EVF_LOAD_S, dt);
    g3_ev_obj(&e, G3_EVF_LOAD_PHASES, js);
    g3_train_emit(tr, &e, 0);
    if (*start_it_p > tr->plan.train_iters)
        g3_warn("the checkpoint is at iteration %lld, beyond --train-iters %lld: nothing to train",
                (long long)*start_it_p, (long long)tr->plan.train_iters);
    return G3_OK;
}

/* The progress line of iteration `it` (stdout and the metrics file) over the iterations
 * since the last one; resets the statistics. */
static g3_status_t g3_train_progress(g3_train_t *tr, int64_t it, int64_t consumed,
                                       int64_t gbs, double lr, double norm,
                                       g3_trainer_stats_t *sx)
{
    g3_ev_t e;
    g3_status_t st;

    double ms = sx->t_sum / sx->n_iters * 1e3, tps = sx->tokens / sx->t_sum;
    double fl = sx->flops_sum / sx->t_sum, mfu = fl / tr->peak;

    g3_ev_init(&e, G3_EV_TRAIN);
    g3_ev_int(&e, G3_EVF_TRAIN_ITER, it);
    g3_ev_int(&e, G3_EVF_TRAIN_ITERS, tr->plan.train_iters);
    g3_ev_int(&e, G3_EVF_TRAIN_SAMPLES, consumed);
    g3_ev_num(&e, G3_EVF_TRAIN_MS, ms);
    g3_ev_num(&e, G3_EVF_TRAIN_SECS, sx->t_sum / sx->n_iters);
    g3_ev_num(&e, G3_EVF_TRAIN_LR, lr);
    g3_ev_int(&e, G3_EVF_TRAIN_GBS, gbs);
    g3_ev_num(&e, G3_EVF_TRAIN_LOSS, sx->loss_sum / sx->n_iters);
    g3_ev_num(&e, G3_EVF_TRAIN_NORM, norm);
    g3_ev_num(&e, G3_EVF_TRAIN_TPS, tps);
    g3_ev_num(&e, G3_EVF_TRAIN_TFLOPS, fl / 1e12);
    g3_ev_num(&e, G3_EVF_TRAIN_MFU, mfu);
    g3_train_memory(tr, &e);
    g3_train_emit(tr, &e, 1);
    st = g3_train_timing_report(tr->timing, it, sx->n_iters, stdout, &tr->sink);
    memset(sx, 0, sizeof(*sx));
    return st;
}

/* A stop asked for at iteration `it` (why): commit or write its checkpoint (with --save),
 * say so.  RET: G3_ERR_INTERRUPTED, or the save's error. */
static g3_status_t g3_train_stop(g3_train_t *tr, g3_train_ckpt_async_t **pending,
                                   int64_t it, int64_t consumed, int64_t gbs, double lr,
                                   const char *why, int64_t *saved_it)
{
    const g3_train_config_t *cfg = tr->cfg;
    g3_ev_t e;
    g3_status_t st = g3_train_async_poll(tr, pending, 1, saved_it);

    if (st != G3_OK)
        return st;
    if (cfg->save_dir && *saved_it != it) {
        st = g3_train_save(tr, it, consumed, gbs, lr, why);
        if (st != G3_OK)
            return st;
    } else if (!cfg->save_dir) {
        g3_warn("stopping at iteration %lld (%s) without --save: nothing was saved",
                (long long)it, why);
    }
    printf(" stopping at iteration %lld (%s): exit %d so that the job is requeued\n", (long long)it,
           why, g3_status_exit_code(G3_ERR_INTERRUPTED));
    fflush(stdout);
    g3_ev_init(&e, G3_EV_EXIT);
    g3_ev_int(&e, G3_EVF_EXIT_ITER, it);
    g3_ev_int(&e, G3_EVF_EXIT_SAMPLES, consumed);
    g3_ev_str(&e, G3_EVF_EXIT_REASON, why);
    g3_train_emit(tr, &e, 0);
    return G3_ERR_INTERRUPTED;
}

/* After the update of iteration `it` (not the last): validation, interval saves, and a stop
 * asked for.  RET: G3_ERR_INTERRUPTED when stopping (saved as asked), errors. */
static g3_status_t g3_train_between(g3_train_t *tr, g3_train_ckpt_async_t **pending,
                                      int64_t it, int64_t consumed, int64_t gbs, double lr,
                                      int have_valid, double t_start, int64_t *saved_it)
{
    const g3_train_config_t *cfg = tr->cfg;
    const char *why;
    g3_status_t st;

    if (have_valid && it % cfg->eval_interval == 0) {
        double vl;
        st = g3_train_evaluate(tr, &vl);
        if (st != G3_OK)
            return st;
        g3_train_report_eval(tr, it, consumed, vl, 0);
    }
    if (it % cfg->eval_interval == 0) {
        st = g3_train_tasks(tr, it);
        if (st != G3_OK)
            return st;
    }
    st = g3_train_async_poll(tr, pending, 0, saved_it);
    if (st != G3_OK)
        return st;
    if (cfg->save_dir && cfg->save_interval > 0 && it % cfg->save_interval == 0) {
        if (cfg->async_save) {
            st = g3_train_save_async(tr, pending, it, consumed, gbs, lr);
        } else {
            st = g3_train_save(tr, it, consumed, gbs, lr, "save interval");
            *saved_it = it;
        }
        if (st != G3_OK)
            return st;
    }
    g3_hook_stop_after(it);   /* GPT3D_DEBUG_STOP_AFTER_ITERATION (core/hook.h) */
    st = g3_train_exit_requested(tr, it, t_start, &why);
    if (st != G3_OK || !why)
        return st;
    return g3_train_stop(tr, pending, it, consumed, gbs, lr, why, saved_it);
}

/* After the last iteration: the last checkpoint, the final validation, the tests' dumps, the
 * pipeline bubble, the sample and the metrics' end line.  res: filled as far as training
 * got; OUT: res->valid_loss. */
static g3_status_t g3_train_finish(g3_train_t *tr, g3_train_ckpt_async_t **pending,
                                     int64_t start_it, int64_t saved_it, int64_t last_gbs,
                                     double last_lr, int have_valid, g3_train_result_t *res)
{
    const g3_train_config_t *cfg = tr->cfg;
    g3_ev_t e;
    g3_status_t st = g3_train_async_poll(tr, pending, 1, &saved_it);

    if (st != G3_OK)
        return st;
    if (cfg->save_dir && res->iterations > saved_it && res->iterations > start_it) {
        st = g3_train_save(tr, res->iterations, res->consumed_samples, last_gbs, last_lr,
                             "end of training");
        if (st != G3_OK)
            return st;
    }
    if (have_valid) {
        st = g3_train_evaluate(tr, &res->valid_loss);
        if (st != G3_OK)
            return st;
        g3_train_report_eval(tr, res->iterations, res->consumed_samples, res->valid_loss, 1);
    }
    st = g3_train_tasks(tr, res->iterations);
    if (st != G3_OK)
        return st;
    if (cfg->grad_dump_dir) {   /* tests: the parameters at the end, every rank */
        st = g3_par_engine_params_ready(tr->eng);
        if (st == G3_OK)
            st = g3_par_dump_model(cfg->grad_dump_dir, tr->model, 1, tr->layout->world_rank);
        if (st == G3_OK)
            st = g3_par_engine_dump_adam(tr->eng, cfg->grad_dump_dir);
        if (st != G3_OK)
            return st;
    }
    if (tr->layout->pp > 1) {
        double bubble, formula;
        const g3_par_layout_t *l = tr->layout;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        /* ranks outnumbering the CPUs wait for a CPU, and the engine cannot tell that from
         * the pipeline's idle time (#32.8): say so instead of a bubble of 800% */
        int shared = ncpu > 0 && (long)tr->be->nthreads * l->ranks_per_node > ncpu;
        g3_par_engine_bubble(tr->eng, &bubble, &formula);
        if (shared)
            printf(
                "pipeline bubble on rank 0 (stage 0): %.1f%% of the compute time waiting, most of it for a CPU (%d rank%s x %d thread%s share %ld CPU%s here, so this is not the pipeline's bubble); 1F1B's (p - 1) / m = %.1f%%\n",
                100.0 * bubble, l->ranks_per_node, l->ranks_per_node == 1 ? "" : "s",
                tr->be->nthreads, tr->be->nthreads == 1 ? "" : "s", ncpu, ncpu == 1 ? "" : "s",
                100.0 * formula);
        else
            printf(
                "pipeline bubble on rank 0 (stage 0): %.1f%% of the compute time idle or passing activations; 1F1B's (p - 1) / m = %.1f%%\n",
                100.0 * bubble, 100.0 * formula);
        {
            double idle, f1, fv;
            g3_par_engine_idle(tr->eng, &idle, &f1, &fv);
            printf("pipeline idle fraction of stage 0: measured %.4f; 1F1B (p - 1) / (m + p - 1) = %.4f; interleaved (p - 1) / (V m + p - 1) = %.4f (V = %d)%s\n",
                   idle, f1, fv, tr->model->nchunks,
                   shared ? "; the measured fraction includes the waits for a CPU" : "");
        }
    }
    if (cfg->sample_tokens > 0) {
        st = g3_train_sample(tr);
        if (st != G3_OK)
            return st;
    }
    g3_ev_init(&e, G3_EV_END);
    g3_ev_int(&e, G3_EVF_END_ITER, res->iterations);
    g3_ev_int(&e, G3_EVF_END_SAMPLES, res->consumed_samples);
    g3_ev_num(&e, G3_EVF_END_LOSS, res->last_loss);
    g3_ev_num(&e, G3_EVF_END_VALID, res->valid_loss);
    g3_train_emit(tr, &e, 0);
    return G3_OK;
}

/* A non-finite loss or norm stopped the run: say where to resume from (rank 0). */
static void g3_train_numeric_hint(const g3_train_t *tr)
{
    const g3_train_config_t *cfg = tr->cfg;
    const char *dir = cfg->save_dir ? cfg->save_dir : cfg->load_dir;
    int64_t last;

    if (!dir || (tr->layout && tr->layout->world_rank != 0))
        return;
    if (g3_ckpt_latest(dir, &last) == G3_OK)
        g3_info(
            "the last committed checkpoint is iteration %lld in %s: resume from it with --load %s once the cause is fixed",
            (long long)last, dir, dir);
    else
        g3_info("no checkpoint was committed in %s", dir);
}

g3_status_t g3_train_run(const g3_train_config_t *cfg, g3_train_result_t *result_p)
{
    g3_train_t tr;
    g3_gpt_config_t mcfg = cfg->model;
    g3_train_result_t res = { 0, 0, NAN, NAN, 0 };
    int64_t consumed = 0, mdp = cfg->micro_batch_size * (cfg->dp_size > 0 ? cfg->dp_size : 1);
    g3_trainer_stats_t sx = { 0.0, 0.0, 0.0, 0, 0 };
    int have_valid;
    int64_t start_it = 0, saved_it = -1, last_gbs = 0;
    g3_train_ckpt_async_t *pending = NULL;
    double last_lr = 0.0, t_start = g3_clock_now();
    g3_status_t st;

    memset(&tr, 0, sizeof(tr));
    tr.cfg = cfg;
    st = g3_train_open(&tr, cfg, &mcfg);
    if (st != G3_OK)
        goto out;
    g3_train_banner(&tr, &mcfg);
    if (cfg->load_dir) {
        /* a damaged or missing checkpoint stays damaged: res.resume_failed makes the driver
         * say so with its own exit code (not so a run that disagrees with it) */
        st = g3_train_resume(&tr, &start_it, &consumed, &saved_it, &res);
        if (st != G3_OK)
            goto out;
    }
    have_valid = cfg->eval_iters > 0 && g3_data_num_samples(tr.data, G3_SPLIT_VALID) > 0;
    if (cfg->eval_iters > 0 && !have_valid)
        g3_warn("the validation split is empty (--split %s): no validation loss will be reported",
                cfg->split ? cfg->split : "969,30,1");

    for (int64_t it = start_it + 1; it <= tr.plan.train_iters; it++) {
        int64_t gbs = g3_train_rampup_batch(&tr.plan.rampup, consumed);
        int64_t nmicro = gbs / mdp;
        double lr = g3_train_lr_at(&tr.plan.lr, consumed);
        double t0 = g3_clock_now(), iter_loss = 0.0, norm = 0.0;

        /* this replica's part of the global batch */
        g3_timers_start(g3_train_timing_timers(tr.timing), G3_TIMER_DATA);
        st = g3_train_batch(&tr, G3_SPLIT_TRAIN, (uint64_t)consumed, nmicro * tr.B, 0);
        g3_timers_stop(g3_train_timing_timers(tr.timing), G3_TIMER_DATA);
        if (st == G3_OK)
            st = g3_par_train_step(tr.eng, tr.inputs, tr.targets, nmicro, gbs, lr, it,
                                   &iter_loss, &norm);
        if (st != G3_OK)
            goto out;
        sx.t_sum += g3_clock_now() - t0;
        consumed += gbs;
        last_gbs = gbs;
        last_lr = lr;
        res.iterations = it;
        res.consumed_samples = consumed;
        res.last_loss = iter_loss;
        sx.loss_sum += iter_loss;
        sx.flops_sum += g3_gpt_flops_per_step(&mcfg, gbs, tr.T);
        sx.tokens += gbs * tr.T;
        sx.n_iters++;
        g3_train_tb_iteration(&tr, it, consumed, gbs, lr, iter_loss, norm);

        if (it % cfg->log_interval == 0 || it == tr.plan.train_iters)
            st = g3_train_progress(&tr, it, consumed, gbs, lr, norm, &sx);
        if (st != G3_OK)
            goto out;
        if (it != tr.plan.train_iters)
            st = g3_train_between(&tr, &pending, it, consumed, gbs, lr, have_valid, t_start,
                                    &saved_it);
        else   /* the last: g3_train_finish saves */
            st = g3_train_async_poll(&tr, &pending, 0, &saved_it);
        if (st != G3_OK)
            goto out;
    }
    st = g3_train_finish(&tr, &pending, start_it, saved_it, last_gbs, last_lr,
                           have_valid, &res);
out:
    g3_train_ckpt_async_drop(pending);   /* only after an error: not committed */
    if (st == G3_ERR_NUMERIC)
        g3_train_numeric_hint(&tr);
    g3_train_close(&tr);
    if (result_p)
        *result_p = res;
    return st;
}
