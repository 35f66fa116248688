/* gpt3d train: the training loop on a 3D-parallel layout (src/parallel; one rank alone is
 * the 1 x 1 x 1 layout).
 *
 * An iteration consumes one global batch (possibly ramping up): the rank runs
 * global_batch / (micro_batch x DP) micro-batches forward and backward, accumulating
 * gradients of the mean token loss over the global batch, clips the global gradient norm and
 * takes one AdamW step at the scheduled learning rate.  Progress goes to stdout (one line per
 * --log-interval, Megatron's fields plus throughput) and to a JSON-lines metrics file;
 * validation runs every --eval-interval iterations and at the end. */
#ifndef G3_TRAIN_TRAIN_H
#define G3_TRAIN_TRAIN_H

#include <signal.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/status.h"
#include "model/gpt.h"
#include "parallel/par.h"
#include "train/schedule.h"

typedef struct {
    g3_gpt_config_t model;              /* vocab_size is read from vocab_file by g3_train_run */
    /* batches */
    int64_t  micro_batch_size;          /* --micro-batch-size                                 */
    int64_t  global_batch_size;         /* --global-batch-size; 0: micro x DP                 */
    int64_t  rampup[3];                 /* --rampup-batch-size START INCR SAMPLES; [0]=0: off */
    int      dp_size;                   /* data-parallel replicas                             */
    int      dp_rank;                   /* this rank's replica: it reads its slice of every
                                         * global batch (Megatron's order, see train.c)       */
    /* length: exactly one of the two */
    int64_t  train_iters;               /* --train-iters                                      */
    int64_t  train_samples;             /* --train-samples                                    */
    /* learning rate; -1 marks "not given" for the optional counts */
    double   lr, min_lr;                /* --lr --min-lr                                      */
    int64_t  lr_warmup_iters;           /* --lr-warmup-iters (0)                              */
    int64_t  lr_warmup_samples;         /* --lr-warmup-samples (0)                            */
    double   lr_warmup_fraction;        /* --lr-warmup-fraction; < 0: not given               */
    int64_t  lr_decay_iters;            /* --lr-decay-iters; -1: the training length          */
    int64_t  lr_decay_samples;          /* --lr-decay-samples; -1: the training length        */
    g3_lr_decay_t lr_decay_style;       /* --lr-decay-style                                   */
    g3_par_adamw_config_t adamw;
    /* evaluation and logging */
    int64_t  eval_interval;             /* --eval-interval                                    */
    int64_t  eval_iters;                /* --eval-iters (0: no validation)                    */
    const char *eval_tasks;             /* --eval-tasks NAME:FILE[:K],...; NULL: none         */
    int64_t  log_interval;              /* --log-interval                                     */
    const char *metrics_file;           /* --metrics-file; NULL: none                         */
    const char *tensorboard_dir;        /* --tensorboard-dir; NULL: none (metrics/tensorboard.h;
                                         * only the rank writing the metrics has it)          */
    int64_t  tensorboard_log_interval;  /* --tensorboard-log-interval (1)                     */
    int      log_validation_ppl;        /* --log-validation-ppl-to-tensorboard                */
    int      log_timers;                /* --log-timers-to-tensorboard (the timing report)    */
    int      log_memory;                /* --log-memory-to-tensorboard                        */
    /* data */
    int          data_path_count;       /* --data-path words                                  */
    char *const *data_path;
    const char  *split;                 /* --split                                            */
    const char  *vocab_file;            /* --vocab-file                                       */
    const char  *merge_file;            /* --merge-file                                       */
    const char  *data_cache_path;       /* --data-cache-path; NULL: beside the data           */
    const char  *tokenizer;             /* the identity of vocab_file + merge_file, JSON
                                         * (data/tokid.h): checked against each dataset's
                                         * record and the checkpoint's, saved in checkpoints;
                                         * NULL: neither checked nor saved                    */
    int          allow_tokenizer_mismatch; /* --allow-tokenizer-mismatch: warn, go on        */
    /* a text sample at the end */
    int          sample_tokens;         /* --sample-tokens (0: none)                          */
    int          top_k;                 /* --top-k (1: greedy; 0: all tokens)                 */
    double       temperature;           /* --temperature                                      */
    const char  *prompt;                /* --prompt                                           */
    /* compute */
    g3_be_kind_t backend;               /* --device (G3_BE_KIND_CPU)                          */
    g3_be_opts_t be_opts;               /* its options: --attention-backend, --deterministic;
                                         * nthreads 0: OpenMP's default                       */
    /* 3D parallelism: the layout (src/parallel; one rank alone: 1 x 1 x 1), required;
     * the model config carries this rank's tp/pp position */
    struct g3_par *par;
    int          distributed_optimizer; /* --use-distributed-optimizer (ZeRO-1 over DP)      */
    int          grad_reduce_bf16;      /* --grad-reduce-in-bf16 (DP reductions in bf16)      */
    int64_t      ddp_bucket_size;       /* --ddp-bucket-size (0: one reduction per segment)   */
    int          overlap_grad_reduce;   /* --overlap-grad-reduce                              */
    int          overlap_param_gather;  /* --overlap-param-gather (ZeRO-1)                    */
    const char  *grad_dump_dir;         /* tests: dump the gradients of iteration 1 here     */
    int          dist_ucx;              /* --distributed-backend ucx: GPU buffers staged
                                         * through host memory (else NCCL)                    */
    int          timing_log_level;      /* --timing-log-level 0|1|2 (core/timer.h)            */
    /* checkpoints (src/train/train_ckpt.c, docs/checkpoints.md) */
    const char  *save_dir;              /* --save; NULL: none                                */
    const char  *load_dir;              /* --load; NULL: none; no checkpoint there: start    */
    int64_t      save_interval;         /* --save-interval (0: only at the end)              */
    int          keep_last;             /* --keep-last (0: keep all)                         */
    int          load_fallback;         /* --load-fallback                                   */
    int          no_save_optim;         /* --no-save-optim                                   */
    int          no_load_optim;         /* --no-load-optim                                   */
    const char  *save_id;               /* names save temporaries (Slurm job id); NULL: "0"  */
    int          async_save;            /* --async-save: interval saves written by a thread  */
    const char  *config_text;           /* the run's flags as "name = value" lines           */
    /* stopping on request: save (with --save) and return G3_ERR_INTERRUPTED (exit 75) */
    volatile sig_atomic_t *exit_flag;   /* set by the --exit-signal handler; NULL: none      */
    double       exit_duration_mins;    /* --exit-duration-in-mins (0: none)                 */
    int64_t      exit_interval;         /* --exit-interval (0: none)                         */
} g3_train_config_t;

/* Set every field to its default (the flag defaults in docs/training.md). */
void g3_train_config_defaults(g3_train_config_t *cfg);

/* What a configuration means in samples and iterations (Megatron's conversions). */
typedef struct {
    int64_t             train_iters;        /* iterations the run takes                       */
    int64_t             global_batch_size;  /* the final global batch size                    */
    g3_train_rampup_t   rampup;
    g3_train_lr_sched_t lr;                 /* warm-up and decay in samples                   */
} g3_train_plan_t;

/* Check the training flags (the model's are checked by g3_gpt_config_check) and derive the
 * plan.  Every problem is logged once, naming the flag.  RET: G3_ERR_INVALID_ARG. */
g3_status_t g3_train_plan(const g3_train_config_t *cfg, g3_train_plan_t *plan);

typedef struct {
    int64_t iterations;          /* iterations completed                          */
    int64_t consumed_samples;
    double  last_loss;           /* training loss of the last iteration           */
    double  valid_loss;          /* final validation loss; NaN if none was run    */
    int     resume_failed;       /* 1: the --load checkpoint could not be read or
                                  * verified (corrupt, missing file): a driver exits
                                  * G3_EXIT_CKPT_LOAD, as retrying cannot help   */
} g3_train_result_t;

/* Run the whole training.  RET: G3_ERR_NUMERIC when a loss or gradient norm becomes NaN or
 * infinite (logged with the iteration; the parameters are not updated with it), data, model
 * and I/O errors.  OUT: *result_p (may be NULL), filled as far as training got. */
g3_status_t g3_train_run(const g3_train_config_t *cfg, g3_train_result_t *result_p);

#endif
