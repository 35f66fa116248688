/* gpt3d eval and gpt3d generate: what the two drivers share.  The flags that name the
 * checkpoint and check the model against it, and opening the model: the checkpoint's
 * configuration (src/train/ckpt_model.h), the tokenizer files, the CPU backend, the weights.
 * One rank (docs/inference.md). */
#ifndef G3_CLI_CMD_INFER_H
#define G3_CLI_CMD_INFER_H

#include <limits.h>

#include "core/opt.h"
#include "model/gpt.h"
#include "train/ckpt_model.h"

/* The shared entries of an option table (a macro so that each command's table lists them
 * in place). */
#define G3_CLI_INFER_SPECS \
    { "load", G3_OPT_STRING, NULL, "Checkpoint to load: the --save directory of a gpt3d train run (its latest checkpoint) or one iter_NNNNNNN directory in it.", NULL, 0, 0, "DIR" }, \
    { "ckpt-step", G3_OPT_STRING, "latest", "Iteration of the checkpoint in the --load directory, or 'latest' (the one its 'latest' file names).", NULL, 0, 0, "N|latest" }, \
    { "load-fallback", G3_OPT_BOOL, NULL, "If the checkpoint cannot be loaded (corrupt, missing shard), load the previous committed one.", NULL, 0, 0, NULL }, \
    { "seq-length", G3_OPT_INT, NULL, "Tokens per sequence: the evaluation samples' length and generation's context window (default: the checkpoint's --seq-length; at most its --max-position-embeddings).", NULL, 0, 0, NULL }, \
    { "vocab-file", G3_OPT_STRING, NULL, "GPT-2 vocabulary, encoder.json or vocab.json (default: the checkpoint's run's, else the built-in corpus's).", NULL, 0, 0, "FILE" }, \
    { "merge-file", G3_OPT_STRING, NULL, "GPT-2 merges, vocab.bpe or merges.txt (default: the checkpoint's run's, else the built-in corpus's).", NULL, 0, 0, "FILE" }, \
    { "num-layers", G3_OPT_INT, NULL, "Only checked: the architecture comes from the checkpoint, a different value is refused.", NULL, 0, 0, NULL }, \
    { "hidden-size", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "num-attention-heads", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "ffn-hidden-size", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }, \
    { "max-position-embeddings", G3_OPT_INT, NULL, "Only checked against the checkpoint.", NULL, 0, 0, NULL }

typedef struct {
    const char           *what;        /* "eval", "generate": names the command in messages */
    g3_train_ckpt_info_t *info;        /* the checkpoint and its model's configuration      */
    g3_backend_t         *be;
    g3_gpt_t             *model;
    g3_gpt_acts_t        *acts;        /* (B, T)                                            */
    int                   B, T;        /* T: --seq-length or the checkpoint's               */
    char                  vocab_file[PATH_MAX + 32];
    char                  merge_file[PATH_MAX + 32];
} g3_cli_infer_t;

/* The checks before any work: --load given, the checkpoint found and readable, the model
 * flags equal to the checkpoint's, --seq-length within its positions, the tokenizer files
 * there and of the checkpoint's vocabulary size.  RET: the exit code (0 when s->info, the
 * files and T are set; the error logged otherwise). */
int g3_cli_infer_check(const g3_opts_t *o, const char *what, g3_cli_infer_t *s);

/* Then the model: the CPU backend, the model with activations for (B, T), the weights.
 * RET: the exit code. */
int g3_cli_infer_load(const g3_opts_t *o, int B, g3_cli_infer_t *s);

/* One line describing the checkpoint and the model to out. */
void g3_cli_infer_describe(const g3_cli_infer_t *s, FILE *out);

/* The checkpoint configuration's value of key, or NULL.  buf: (size,) */
const char *g3_cli_infer_ckpt_value(const g3_cli_infer_t *s, const char *key, char *buf,
                                    size_t size);

void g3_cli_infer_free(g3_cli_infer_t *s);

#endif
