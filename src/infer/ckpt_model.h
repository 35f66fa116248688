/* gpt3d infer: a trained model out of a training checkpoint, without its optimizer (for
 * gpt3d eval and gpt3d generate).
 *
 * The model's architecture comes from the checkpoint itself: the run's flags saved in the
 * index ("name = value" lines, docs/checkpoints.md) and the stored shape of the word
 * embeddings (the padded vocabulary Vp; the real one V is its rule's `unpadded`).  The
 * weights are loaded by global offsets through parallel/par_ckpt.h (as the trainer resumes),
 * so a checkpoint saved under any TP x PP x DP layout loads into this process's layout.
 *
 * Two steps, so that a caller can check its flags against the checkpoint before it pays
 * for the model: g3_infer_ckpt_open reads the index (cheap), the caller builds the
 * model from info->model (setting its own tp/pp position) and g3_infer_ckpt_load
 * fills it. */
#ifndef G3_INFER_CKPT_MODEL_H
#define G3_INFER_CKPT_MODEL_H

#include <limits.h>
#include <stdint.h>

#include "core/status.h"
#include "model/gpt.h"
#include "parallel/par.h"

typedef struct {
    char            path[PATH_MAX];  /* the iter_NNNNNNN directory                        */
    int64_t         iteration;       /* the checkpoint's                                  */
    int64_t         consumed_samples;
    char           *config;          /* the training run's flags, "name = value" lines     */
    char           *tokenizer;       /* its state/tokenizer record (data/tokid.h), or NULL */
    int             version;         /* the index's format version                        */
    int             saved_tp, saved_pp, saved_dp;   /* the layout that wrote it           */
    int             padded_vocab;    /* Vp as stored                                      */
    /* The architecture: sizes, seq_length, layernorm epsilon, seed, V, and
     * make_vocab_size_divisible_by = Vp, so that one rank pads V to the stored Vp (a
     * TP-rank model must use Vp / TP: g3_infer_ckpt_set_tp). */
    g3_gpt_config_t model;
} g3_infer_ckpt_info_t;

/* Find and open a checkpoint.  dir: a --save directory or one iter_NNNNNNN directory in it;
 * step: the iteration to open (its iter_ directory in dir), or -1 for the one `latest`
 * names (or dir itself).  Errors name the directory and what to do: no such directory, no
 * checkpoint in it (no `latest`, no iter_ directory: name the --save directory of a run),
 * no checkpoint of that step (the steps there are listed), a damaged index, a checkpoint
 * without the model's configuration.  OUT: *info_p (free with g3_infer_ckpt_info_free). */
g3_status_t g3_infer_ckpt_open(const char *dir, int64_t step, g3_infer_ckpt_info_t **info_p);
void g3_infer_ckpt_info_free(g3_infer_ckpt_info_t *info);

/* Keep the stored Vp on tp_size tensor-parallel ranks: info->model's
 * make_vocab_size_divisible_by becomes Vp / tp_size (its tensor-parallel size is the
 * layout's: g3_par_layout_shard).  RET: G3_ERR_INVALID_ARG (logged) when Vp is not divisible
 * by tp_size. */
g3_status_t g3_infer_ckpt_set_tp(g3_infer_ckpt_info_t *info, int tp_size);

/* Load the weights of info's checkpoint into model (built from info->model with this rank's
 * position), the optimizer state not read.  par, dp_size, dp_rank: the layout (one rank
 * alone: its 1 x 1 x 1 layout, 1, 0); eng: the 3D-parallel engine of model or NULL.
 * Collective with par.  Checksums are verified; load_fallback: if the checkpoint cannot be
 * loaded, load the previous committed one of its directory (info->iteration and path then
 * say which).
 * RET: load errors (logged, naming the file and the dataset). */
g3_status_t g3_infer_ckpt_load(g3_infer_ckpt_info_t *info, g3_gpt_t *model,
                              g3_par_t *par, int dp_size, int dp_rank,
                              g3_par_engine_t *eng, int load_fallback);

#endif
