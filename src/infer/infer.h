/* gpt3d infer: running a GPT forward only.  The mean token loss over a split of the data
 * (what training's validation and `gpt3d eval` report) and text generation (training's
 * sample at the end and `gpt3d generate`).  The trainer and the two commands share this code,
 * so a checkpoint evaluated or sampled by the commands gives what the trainer reported.
 *
 * Layers: model, data, parallel ← infer ← train, cli.  The model out of a checkpoint is
 * infer/ckpt_model.h (on parallel/par_ckpt.h); nothing here parses flags.
 *
 * Glossary: B micro-batch, T sequence length (the context), V vocabulary, Vp padded
 * vocabulary, GBS global batch, DP data-parallel size. */
#ifndef G3_INFER_INFER_H
#define G3_INFER_INFER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "data/bpe.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "metrics/events.h"
#include "parallel/par.h"

/* The model a pass runs on: this rank's part of it and the engine of its layout (one rank
 * alone: the 1 x 1 x 1 layout; every rank of the world calls the same functions). */
typedef struct {
    g3_gpt_t        *model;
    g3_par_engine_t *eng;    /* the engine (it holds the activations)                  */
} g3_infer_lm_t;

/* ---- batches and evaluation -------------------------------------------------------------- */

/* Where a batch comes from and goes to.  Borrowed pointers. */
typedef struct {
    const g3_data_t *data;
    int      B, T;
    int      dp_size, dp_rank;   /* this rank reads its replica's rows (1, 0 alone) */
    int32_t *sample;             /* (T+1,) scratch                                  */
    int32_t *inputs;             /* (rows, T) the rows a call loads                 */
    int32_t *targets;            /* (rows, T)                                       */
} g3_infer_batch_t;

/* Load this replica's n rows of the global batch that starts at sample `first` of split
 * (indices modulo wrap when wrap > 0) into bt->inputs and bt->targets (n, T).  Megatron's
 * order: the batch is cut into groups of B x DP samples and DP rank d takes samples
 * [d B, (d+1) B) of each group, so its row b is sample first + (b / B) B DP + d B + b % B
 * (first + b with one replica).  RET: data errors (logged). */
g3_status_t g3_infer_batch_load(const g3_infer_batch_t *bt, g3_split_t split, uint64_t first,
                                int64_t n, uint64_t wrap);

/* The mean token loss over the first n_samples samples of split, read as global batches of
 * gbs samples (n_samples a multiple of gbs; gbs a multiple of B x DP), each sample's T
 * targets counted; the padded vocabulary takes part in the softmax, as in training.  The
 * same samples every time, so evaluations are comparable.  bt->inputs/targets hold
 * gbs / DP rows.  Collective with lm->eng.  OUT: *loss_p (the same on every rank). */
g3_status_t g3_infer_evaluate(const g3_infer_lm_t *lm, const g3_infer_batch_t *bt,
                              g3_split_t split, uint64_t n_samples, int64_t gbs,
                              double *loss_p);

/* An evaluation's record (metrics/events.h, "eval"): split, iteration, loss, its perplexity
 * (exp(loss), infinite from a loss of 700 up), final ("at the end of training").  The caller
 * adds what more it knows and emits it (the trainer: the consumed samples and tokens,
 * TensorBoard's axes). */
void g3_infer_eval_event(g3_ev_t *e, g3_split_t split, int64_t iteration, double loss, int final);

/* Emit that record to stdout (Megatron-LM's " validation loss at iteration N | lm loss
 * value: ... | lm loss PPL: ... |" between dashed lines; "test loss" for the test split) and,
 * when metrics is not NULL, to it as a JSON line (plus "samples" and "checkpoint" when
 * checkpoint is not NULL). */
void g3_infer_report_eval(FILE *metrics, g3_split_t split, int64_t iteration, double loss,
                          int final, uint64_t samples, const char *checkpoint);


/* ---- sampling and generation ------------------------------------------------------------- */

typedef struct {
    int      greedy;        /* the likeliest token (the rest is ignored); top_k 1 too      */
    double   temperature;   /* > 0: logits are divided by it                               */
    int      top_k;         /* sample among the k likeliest; 0: the whole vocabulary       */
    double   top_p;         /* then among the fewest likeliest tokens whose probability
                             * reaches top_p (nucleus); <= 0 or >= 1: off                 */
    uint64_t seed;          /* the draw of step s is g3_rng_uniform(seed, "generate", s)  */
} g3_infer_sampling_t;

/* Scratch for g3_infer_pick: (V,) candidates. */
typedef struct {
    float   v;
    int32_t id;
} g3_infer_cand_t;

/* Pick the next token from logits (Vp,) among the real vocabulary [0, V).  Greedy: the first
 * largest logit.  Otherwise the candidates sorted by logit (descending), the top_k first, the
 * nucleus, and the token where the cumulative weight exp((l - l_max) / temperature) first
 * reaches u x total, u the draw of `step`.  cand: (V,) scratch.  RET: the id. */
int32_t g3_infer_pick(const float *logits, int V, const g3_infer_sampling_t *s, uint64_t step,
                      g3_infer_cand_t *cand);

/* Called after each generated token; ids (len,) is the whole sequence so far (prompt
 * first).  A non-OK status stops the generation and is returned. */
typedef g3_status_t (*g3_infer_token_fn)(void *ctx, const int32_t *ids, size_t len);

typedef struct {
    int                 max_new_tokens;   /* stop after this many                        */
    int                 context;          /* T: the model sees the last T tokens at most  */
    int                 vocab_size;       /* V: ids are picked from [0, V)               */
    int32_t             stop_id;          /* stop when picked (not appended); -1: never  */
    g3_infer_sampling_t sampling;
    g3_infer_token_fn   on_token;         /* NULL: none                                  */
    void               *on_token_ctx;
} g3_infer_generate_opts_t;

/* Extend ids (the prompt, at least one token) by up to o->max_new_tokens tokens.  Each step
 * runs the model over the last min(len, context) tokens (a sliding window once the sequence
 * is longer than the context; no cache: a step costs a forward pass over the window).
 * Collective with lm->eng (every rank gets the same tokens).
 * OUT: ids (grown), *new_p (tokens appended), *stopped_p (1 when stop_id ended it; may be
 * NULL).  RET: model and comm errors, G3_ERR_NO_MEMORY. */
g3_status_t g3_infer_generate(const g3_infer_lm_t *lm, const g3_infer_generate_opts_t *o,
                              g3_bpe_ids_t *ids, int *new_p, int *stopped_p);

/* ---- text ---------------------------------------------------------------------------------- */

/* Encode a prompt (UTF-8) into ids, appending; an empty prompt becomes the end-of-document
 * token (or id 0 without one), as Megatron starts unconditional samples.  what names the
 * prompt in the error ("--prompt", "the prompt file x.txt").
 * RET: G3_ERR_FORMAT for invalid UTF-8 (logged with the byte offset and what to do). */
g3_status_t g3_infer_encode_prompt(const g3_bpe_t *bpe, const char *text, size_t len,
                                   const char *what, g3_bpe_ids_t *ids);

/* Decode ids (n,) into UTF-8 text: invalid UTF-8 (a character cut between tokens) becomes
 * U+FFFD as Python's errors="replace" does.  OUT: *text_p (malloc'd, NUL-terminated),
 * *len_p. */
g3_status_t g3_infer_decode_text(const g3_bpe_t *bpe, const int32_t *ids, size_t n,
                                 char **text_p, size_t *len_p);

/* Streaming the text of a growing id sequence: each call writes the new complete characters
 * of decode(ids[0..len)) to out, holding back the bytes of a character that the next tokens
 * may complete; g3_infer_stream_finish writes the rest (invalid UTF-8 as U+FFFD).  The
 * concatenated output is g3_infer_decode_text's text. */
typedef struct {
    const g3_bpe_t *bpe;
    FILE           *out;
    size_t          done_ids;    /* ids decoded into pending so far       */
    char           *pending;     /* bytes decoded, not yet written        */
    size_t          len, cap;
} g3_infer_stream_t;

void        g3_infer_stream_init(g3_infer_stream_t *s, const g3_bpe_t *bpe, FILE *out);
g3_status_t g3_infer_stream_update(g3_infer_stream_t *s, const int32_t *ids, size_t len);
g3_status_t g3_infer_stream_finish(g3_infer_stream_t *s);
void        g3_infer_stream_free(g3_infer_stream_t *s);

#endif
