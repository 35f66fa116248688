/* gpt3d train: the trainer's flags, shared by `gpt3d train` and `gpt3d plan` so that the two
 * accept the same command lines and refuse the same model sizes, batch arithmetic and
 * layouts with the same messages (docs/training.md lists the flags, docs/plan.md the plan).
 *
 * The table and the readers belong to the trainer; gpt3d plan appends its own flags to a copy
 * of the table and calls the same readers. */
#ifndef G3_TRAIN_FLAGS_H
#define G3_TRAIN_FLAGS_H

#include <stdint.h>

#include "core/opt.h"
#include "train/train.h"

/* The tail of a g3_opt_spec_t without choices, list bounds or metavar. */
#define G3_NOOPT NULL, 0, 0, NULL

/* The layout flags of every command that runs as a job of ranks (gpt3d train, eval,
 * generate, topo): one definition, so that their help cannot drift apart. */
#define G3_TRAIN_LAYOUT_SPECS \
    { "tensor-model-parallel-size", G3_OPT_INT, "1", "Tensor-parallel size (ranks splitting each layer; within a node).", G3_NOOPT }, \
    { "pipeline-model-parallel-size", G3_OPT_INT, "1", "Pipeline-parallel size (stages of layers); data-parallel size = ranks / (TP x PP).", G3_NOOPT }, \
    { "decoder-first-pipeline-num-layers", G3_OPT_INT, NULL, "Layers of the first pipeline stage (uneven split); the other stages share the rest evenly.", G3_NOOPT }, \
    { "decoder-last-pipeline-num-layers", G3_OPT_INT, NULL, "Layers of the last pipeline stage (uneven split); the other stages share the rest evenly.", G3_NOOPT }, \
    { "distributed-timeout-minutes", G3_OPT_FLOAT, "10", "Give up a collective or pipeline transfer after this long (exit 76).", G3_NOOPT }, \
    { "topology-file", G3_OPT_STRING, NULL, "Slurm topology.conf for placing the ranks (default: SLURM_TOPOLOGY_ADDR, else flat).", NULL, 0, 0, "FILE" }

/* --load-fallback, the same for loading to train and to evaluate or generate. */
#define G3_TRAIN_LOAD_FALLBACK_SPEC \
    { "load-fallback", G3_OPT_BOOL, NULL, "If the latest checkpoint cannot be loaded (corrupt, missing shard), load the previous committed one.", G3_NOOPT }

/* The compute backend's flags of every command that runs the model (gpt3d train, eval,
 * generate; g3_train_flags_backend reads them): one definition, one set of checks. */
#define G3_TRAIN_BACKEND_SPECS \
    { "device", G3_OPT_CHOICE, "cpu", "Compute backend: cpu (fp32) or cuda (bf16 activations, fp32 master weights; one GPU per rank, NCCL between them).", "cpu|cuda", 0, 0, NULL }, \
    { "attention-backend", G3_OPT_CHOICE, "auto", "Attention implementation: auto (the fastest that works here), native (gpt3d's own kernels) or cudnn (cuDNN's fused attention; --device cuda only).", "auto|native|cudnn", 0, 0, NULL }, \
    { "deterministic", G3_OPT_BOOL, NULL, "Use only kernels whose results repeat bit for bit from run to run (may be slower).", G3_NOOPT }

/* gpt3d train's options in --help order; the last entry has a NULL name. */
extern const g3_opt_spec_t g3_train_opt_specs[];

/* An int flag that must fit an int and be >= lo.  OUT: *out.  RET: 1, or 0 after logging
 * "--NAME V is out of range". */
int g3_train_flags_int(const g3_opts_t *o, const char *name, int64_t lo, int *out);
/* A --seed (the flag's, or a checkpoint's for gpt3d eval) within the data shuffles' 32 bits.
 * RET: 1, or 0 after logging "--seed V is out of range". */
int g3_train_flags_seed(int64_t seed);
/* The deepest model gpt3d builds or plans: each layer costs the model and the planner a
 * record, and 2^31 of them (a typo) made gpt3d plan count a failed 200 GB request as no
 * activations.  Megatron's largest published models have about a hundred layers. */
#define G3_TRAIN_MAX_LAYERS 65536

/* The layout flags of G3_TRAIN_LAYOUT_SPECS as given (defaults where not). */
typedef struct {
    int         tp, pp;            /* --tensor-/--pipeline-model-parallel-size             */
    int         pp_first, pp_last; /* --decoder-first/last-pipeline-num-layers; 0: even    */
    double      timeout_min;       /* --distributed-timeout-minutes (> 0)                  */
    const char *topology_file;     /* --topology-file; NULL: SLURM_TOPOLOGY_ADDR, else flat */
    int         tp_given, pp_given; /* the two sizes were given (gpt3d plan --search keeps
                                     * what was)                                           */
    int         vpp_given, sp_given; /* the interleaved schedule, --sequence-parallel given
                                      * (g3_train_flags_read)                              */
} g3_train_layout_flags_t;

/* Read the layout flags of G3_TRAIN_LAYOUT_SPECS that every job of ranks takes (gpt3d train,
 * plan, eval, generate and topo, whose tables all hold G3_TRAIN_LAYOUT_SPECS), the one reader
 * of them.  OUT: *lf.  RET: 1, or 0 after logging every bad value, naming its
 * flag. */
int g3_train_flags_layout(const g3_opts_t *o, g3_train_layout_flags_t *lf);

/* --distributed-timeout-minutes in seconds, for making the world before the flags are checked
 * (g3_train_flags_layout refuses a value that is not positive; until then 10 minutes). */
double g3_train_flags_timeout_s(const g3_opts_t *o);

/* The layout a job of `world` ranks gets from lf: DP = world / (TP x PP) (g3_par_dp_size,
 * the one check), and the model's tensor- and pipeline-parallel fields as that layout places
 * world rank 0 (g3_par_layout_shard, the one place that sets them; the job's own layout sets
 * them again for each rank), with the uneven pipeline split lf gives.  For the checks before
 * any rank is placed.  OUT: *l, m's layout fields.  RET: 1, or 0 after logging "impossible
 * layout: ..." when world is not a multiple of TP x PP. */
int g3_train_flags_job_layout(int world, const g3_train_layout_flags_t *lf, g3_gpt_config_t *m,
                              g3_par_layout_t *l);

/* The tokenizer and data flags as given: NULL (0 words) where not given, so that each command
 * chooses its default (gpt3d train: the built-in corpus's; eval and generate: the
 * checkpoint's run's, else the built-in corpus's). */
typedef struct {
    const char  *vocab_file;          /* --vocab-file                                         */
    const char  *merge_file;          /* --merge-file                                         */
    int          allow_tokenizer_mismatch; /* --allow-tokenizer-mismatch                      */
    int          data_path_count;     /* --data-path words (0: not given)                     */
    char *const *data_path;
    const char  *split;               /* --split (gpt3d train's table has a default)          */
    const char  *data_cache_path;     /* --data-cache-path                                    */
} g3_train_data_flags_t;

/* Read --vocab-file, --merge-file and --allow-tokenizer-mismatch (gpt3d train, eval,
 * generate) into d, the one reader of them.  OUT: d's three. */
void g3_train_flags_tokenizer(const g3_opts_t *o, g3_train_data_flags_t *d);

/* Read --data-path, --split and --data-cache-path (gpt3d train, eval) into d, the one reader
 * of them.  OUT: d's four. */
void g3_train_flags_data(const g3_opts_t *o, g3_train_data_flags_t *d);

/* Read the compute backend's flags (--device, --attention-backend, --deterministic): the kind
 * and its options (the other fields of be_opts are left as they are).  OUT: *kind_p,
 * be_opts.  RET: 1, or 0 after logging.  g3_train_flags_read calls it; gpt3d plan
 * --calibrate alone. */
int g3_train_flags_backend(const g3_opts_t *o, g3_be_kind_t *kind_p, g3_be_opts_t *be_opts);

/* Whether the --device kind runs here with these options (g3_be_probe: built in, options it
 * honours, a device visible), checked before any work by gpt3d train, eval and generate
 * alike; elsewhere: the job is checked from another machine (gpt3d train --check, a login
 * node without a GPU), where only the build's support counts.  RET: the exit code: 0, 2 (not
 * built in, options it cannot honour) or 1 (no usable device), logged. */
int g3_train_flags_probe(g3_be_kind_t kind, const g3_be_opts_t *be_opts, int elsewhere);

/* Read the model flags (--num-layers .. --seed), the layout flags (g3_train_flags_layout; the
 * interleaved schedule, --sequence-parallel, the data-parallel gradient flags), the batch and
 * length flags (--micro-batch-size, --global-batch-size, --rampup-batch-size, --train-iters,
 * --train-samples), the schedule and optimizer flags, the evaluation, logging and sampling
 * flags and the device flags into cfg (defaults set with g3_train_config_defaults;
 * cfg->model.vocab_size is set to 1 for the caller to fill).  The model's layout fields are
 * left to g3_train_flags_job_layout.  OUT: cfg, *lf.  RET: 1, or 0 after logging every bad
 * value once, naming its flag.  The relations between flags are checked later:
 * g3_gpt_config_check, g3_train_plan. */
int g3_train_flags_read(const g3_opts_t *o, g3_train_config_t *cfg,
                        g3_train_layout_flags_t *lf);

/* Read the checkpoint and stop-on-request flags (--save, --load, --save-interval,
 * --keep-last, --load-fallback, --no-save-optim, --no-load-optim, --async-save,
 * --exit-interval, --exit-duration-in-mins) into cfg and check how they go together
 * (--exit-signal is installed by the driver).  OUT: cfg.  RET: 1, or 0 after logging every
 * problem once, naming its flags. */
int g3_train_flags_ckpt(const g3_opts_t *o, g3_train_config_t *cfg);

/* The data-parallel size of a job of `world` ranks: world / (TP x PP) (g3_par_dp_size, the
 * one check).  OUT: *dp_p.  RET: 1, or 0 after logging "impossible layout: ..." when world
 * is not a multiple of TP x PP. */
int g3_train_flags_dp(int world, int tp, int pp, int *dp_p);

#endif
