/* gpt3d eval and gpt3d generate: what the two drivers share.  The flags that name the
 * checkpoint and check the model against it, the layout, and opening the model: the
 * checkpoint's configuration (src/infer/ckpt_model.h), the tokenizer files, the compute
 * backend (--device, chosen, checked and opened as gpt3d train does: train/flags.h), the
 * weights.  Alone, or under mpirun / srun --mpi=pmix with the trainer's world,
 * layout and 3D-parallel engine (src/cli/world.h, src/parallel/par.h): every rank runs the
 * checks, rank 0 alone speaks (docs/inference.md). */
#ifndef G3_CLI_CMD_INFER_H
#define G3_CLI_CMD_INFER_H

#include <limits.h>

#include "cli/world.h"
#include "core/opt.h"
#include "infer/ckpt_model.h"
#include "infer/infer.h"
#include "model/gpt.h"
#include "train/flags.h"

/* The shared entries of an option table (a macro so that each command's table lists them
 * in place). */
#define G3_CLI_INFER_SPECS \
    { "load", G3_OPT_STRING, NULL, "Checkpoint to load: the --save directory of a gpt3d train run (its latest checkpoint) or one iter_NNNNNNN directory in it.", NULL, 0, 0, "DIR" }, \
    { "ckpt-step", G3_OPT_STRING, "latest", "Iteration of the checkpoint in the --load directory, or 'latest' (the one its 'latest' file names).", NULL, 0, 0, "N|latest" }, \
    G3_TRAIN_LOAD_FALLBACK_SPEC, \
    { "seq-length", G3_OPT_INT, NULL, "Tokens per sequence: the evaluation samples' length and generation's context window (default: the checkpoint's --seq-length; at most its --max-position-embeddings).", NULL, 0, 0, NULL }, \
    { "vocab-file", G3_OPT_STRING, NULL, "GPT-2 vocabulary, encoder.json or vocab.json (default: the checkpoint's run's, else the built-in corpus's).", NULL, 0, 0, "FILE" }, \
    { "merge-file", G3_OPT_STRING, NULL, "GPT-2 merges, vocab.bpe or merges.txt (default: the checkpoint's run's, else the built-in corpus's).", NULL, 0, 0, "FILE" }, \
    { "allow-tokenizer-mismatch", G3_OPT_BOOL, NULL, "Go on although the checkpoint's recorded tokenizer files differ from --vocab-file/--merge-file (a warning instead of an error).", G3_NOOPT }, \
    { "num-layers", G3_OPT_INT, NULL, "Only checked: the architecture comes from the checkpoint, a different value is refused.", NULL, 0, 0, NULL }, \
    { "hidden-size", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "num-attention-heads", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "ffn-hidden-size", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "max-position-embeddings", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    G3_TRAIN_BACKEND_SPECS, \
    G3_TRAIN_LAYOUT_SPECS

typedef struct {
    const char           *what;        /* "eval", "generate": names the command in messages */
    g3_cli_world_t        w;           /* the world and (TP x PP x DP > 1) the layout       */
    int                   tp, pp, dp;  /* the layout's sizes (1, 1, 1 alone)                */
    g3_train_layout_flags_t lf;        /* the layout flags (the trainer's reader)           */
    g3_train_data_flags_t tok;         /* the tokenizer flags as given (the trainer's reader) */
    int                   rank;        /* world rank: 0 speaks                              */
    g3_infer_ckpt_info_t *info;        /* the checkpoint and its model's configuration      */
    g3_be_kind_t          kind;        /* --device                                          */
    g3_be_opts_t          be_opts;     /* --attention-backend, --deterministic; the threads */
    g3_backend_t         *be;
    g3_gpt_t             *model;       /* this rank's part of it                            */
    g3_par_engine_t      *eng;         /* the trainer's engine on the layout (alone: 1x1x1) */
    int                   B, T;        /* T: --seq-length or the checkpoint's               */
    char                  vocab_file[PATH_MAX + 32];
    char                  merge_file[PATH_MAX + 32];
} g3_cli_infer_t;

/* Parse argv (ranks other than 0 quietly) into *o_p.  RET: the exit code. */
int g3_cli_infer_parse(const g3_opt_cmd_t *cmd, int argc, char **argv, g3_opts_t **o_p);

/* The world, then the checks before any work (every rank; ranks other than 0 quiet until
 * g3_cli_infer_agree): the layout flags (the trainer's reader, into s->lf), the backend flags
 * (the trainer's reader and probe, into s->kind and s->be_opts: a --device this build or
 * machine cannot run is refused with the trainer's message and code), --load given, the
 * checkpoint found and readable, the model flags equal to the checkpoint's, --seq-length
 * within its positions, the tokenizer files there and of the checkpoint's vocabulary size,
 * the layout (--tensor-model-parallel-size, --pipeline-model-parallel-size) dividing the
 * job's ranks and the model, the model's sizes ones the --device kernels run (the trainer's
 * messages); max_dp: the most data-parallel replicas the command can use (generate: 1).
 * RET: the exit code (0 when s->info, the files, T and the layout's sizes are set; the
 * error logged otherwise).  s is set up for g3_cli_infer_free either way. */
int g3_cli_infer_check(const g3_opts_t *o, const char *what, int max_dp, g3_cli_infer_t *s);

/* Every rank passes its exit code of the checks (collective when the world was made); ends
 * the quiet.  RET: the job's exit code. */
int g3_cli_infer_agree(g3_cli_infer_t *s, int rc);

/* Then the model: the layout (alone: none), the --device backend, this rank's part of the
 * model with activations for (B, T) (the engine's with a layout), the weights, re-sharded
 * from the checkpoint's layout.  Collective.  RET: the exit code. */
int g3_cli_infer_load(const g3_opts_t *o, int B, g3_cli_infer_t *s);

/* The model a pass runs on (g3_infer_evaluate, g3_infer_generate). */
g3_infer_lm_t g3_cli_infer_lm(const g3_cli_infer_t *s);

/* After an error during the work (st): end the job when other ranks may wait on this one.
 * RET: st's exit code. */
int g3_cli_infer_fail(g3_cli_infer_t *s, g3_status_t st);

/* One line describing the checkpoint, the model and (with one) the layout to out. */
void g3_cli_infer_describe(const g3_cli_infer_t *s, FILE *out);

/* The checkpoint configuration's value of key, or NULL.  buf: (size,) */
const char *g3_cli_infer_ckpt_value(const g3_cli_infer_t *s, const char *key, char *buf,
                                    size_t size);

void g3_cli_infer_free(g3_cli_infer_t *s);

#endif
