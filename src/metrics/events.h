/* The metrics' one schema and one sink: every event the trainer and the evaluators emit
 * (train progress, validation, task scores, checkpoint saves and loads, the end, ...), each
 * field's name, type, unit and TensorBoard tag, written once as the table G3_EV_FIELDS below.
 *
 * One g3_ev_emit fans a record out to the metrics file (one JSON line, metrics.jsonl: the
 * event's fields in the table's order), the TensorBoard event file (metrics/tensorboard.h:
 * each field that has a tag) and the progress line on stdout where the event has one
 * (train, eval, task).  Readers read through the same table: g3_ev_file_each walks a metrics
 * file, taking each JSON line apart into the schema's fields, and
 * `gpt3d metrics` (docs/training.md, "Reading the metrics") and `gpt3d plot` use them.
 *
 * Types (the JSON a field holds):
 *   INT   an integer                               NUM   a number (its printf format), or null
 *   STR   a string                                 BOOL  true or false
 *   OBJ   an object of numbers the caller formats (the checkpoint phases: "phases":{...})
 *   MAP   an object NAME: number or null (a task's metrics and their standard errors)
 *   PAIRS an object NAME: [min, max] (the timers: min and max over the ranks)
 * Flags: OPT the field is left out when not set (a required field not set is written null);
 * TBONLY a TensorBoard value or step, not in the JSON line; FINITE its TensorBoard tags are
 * not written for a value that is not finite; PPL and TIMERS its tags are written only when
 * the sink's tb_groups has that bit (G3_EV_F_PPL: --log-validation-ppl-to-tensorboard,
 * G3_EV_F_TIMERS: --log-timers-to-tensorboard).
 * TensorBoard axes: I the tag at the record's iteration, S "TAG vs samples" at its
 * consumed_samples, K "TAG vs tokens" at its consumed_tokens (both fields of the event).  A
 * PAIRS field's tags are "NAME" followed by the field's tag, at the iteration, the max in
 * seconds (the JSON's milliseconds / 1e3).
 * Ownership: a record borrows the strings and arrays it is given until it is emitted. */
#ifndef G3_METRICS_EVENTS_H
#define G3_METRICS_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "metrics/tensorboard.h"

/* X(id, the JSON's name, written to the metrics file (0: TensorBoard only), meaning) */
#define G3_EV_KINDS(X)                                                                    \
    X(START,     "start",     1, "the run's model, batch and backend, once per job")      \
    X(TRAIN,     "train",     1, "progress every --log-interval iterations")              \
    X(ITERATION, "iteration", 0, "every --tensorboard-log-interval iterations: TensorBoard only") \
    X(EVAL,      "eval",      1, "a loss on a split: validation in training, gpt3d eval")  \
    X(TASK,      "task",      1, "a task's scores (--eval-tasks, gpt3d eval --task)")     \
    X(TIMERS,    "timers",    1, "per-operation timers (--timing-log-level)")             \
    X(SAVE,      "save",      1, "a checkpoint written (or started, --async-save)")       \
    X(COMMIT,    "commit",    1, "an asynchronous checkpoint committed")                  \
    X(LOAD,      "load",      1, "the checkpoint a run resumed from")                     \
    X(EXIT,      "exit",      1, "a stop asked for (signal, duration, interval)")         \
    X(END,       "end",       1, "the run's end")

/* X(event, id, JSON key, type, printf format, unit, flags, TensorBoard tag, axes, meaning) */
#define G3_EV_FIELDS(X)                                                                          \
    X(START, START_NUM_LAYERS, "num_layers", INT, NULL, "", 0, NULL, 0, "transformer layers")   \
    X(START, START_HIDDEN_SIZE, "hidden_size", INT, NULL, "", 0, NULL, 0, "hidden size")       \
    X(START, START_HEADS, "num_attention_heads", INT, NULL, "", 0, NULL, 0, "attention heads") \
    X(START, START_FFN, "ffn_hidden_size", INT, NULL, "", 0, NULL, 0, "MLP hidden size")       \
    X(START, START_SEQ, "seq_length", INT, NULL, "tokens", 0, NULL, 0, "sequence length")      \
    X(START, START_VOCAB, "vocab_size", INT, NULL, "", 0, NULL, 0, "vocabulary")               \
    X(START, START_PVOCAB, "padded_vocab_size", INT, NULL, "", 0, NULL, 0, "padded vocabulary") \
    X(START, START_PARAMS, "parameters", INT, NULL, "", 0, NULL, 0, "model parameters")        \
    X(START, START_MBS, "micro_batch_size", INT, NULL, "samples", 0, NULL, 0, "micro-batch")   \
    X(START, START_GBS, "global_batch_size", INT, NULL, "samples", 0, NULL, 0, "global batch") \
    X(START, START_ITERS, "train_iters", INT, NULL, "", 0, NULL, 0, "iterations to train")     \
    X(START, START_BACKEND, "backend", STR, NULL, "", 0, NULL, 0, "--device's backend")        \
    X(START, START_THREADS, "threads", INT, NULL, "", 0, NULL, 0, "compute threads per rank")  \
    X(START, START_PEAK, "peak_flops", NUM, "%.6g", "FLOP/s", 0, NULL, 0, "MFU's peak, all ranks") \
    X(TRAIN, TRAIN_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the iteration")              \
    X(TRAIN, TRAIN_ITERS, "train_iters", INT, NULL, "", 0, NULL, 0, "iterations to train")     \
    X(TRAIN, TRAIN_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, NULL, 0,               \
      "samples trained on so far")                                                              \
    X(TRAIN, TRAIN_MS, "ms_per_iter", NUM, "%.3f", "ms", 0, NULL, 0,                            \
      "mean time per iteration since the last record")                                          \
    X(TRAIN, TRAIN_SECS, "iteration_time", NUM, NULL, "s", TBONLY, "iteration-time", I,         \
      "ms_per_iter in seconds")                                                                 \
    X(TRAIN, TRAIN_LR, "lr", NUM, "%.9g", "", 0, NULL, 0, "learning rate of the iteration")     \
    X(TRAIN, TRAIN_GBS, "global_batch_size", INT, NULL, "samples", 0, NULL, 0, "its batch")     \
    X(TRAIN, TRAIN_LOSS, "loss", NUM, "%.9g", "nats/token", 0, NULL, 0,                         \
      "mean lm loss since the last record")                                                     \
    X(TRAIN, TRAIN_NORM, "grad_norm", NUM, "%.9g", "", 0, NULL, 0, "the iteration's grad norm") \
    X(TRAIN, TRAIN_TPS, "tokens_per_s", NUM, "%.3f", "tokens/s", 0, "tokens-per-sec", I,        \
      "tokens trained per second")                                                              \
    X(TRAIN, TRAIN_TFLOPS, "tflops", NUM, "%.6g", "TFLOP/s", 0, "throughput", I,                \
      "model FLOP/s of all ranks")                                                              \
    X(TRAIN, TRAIN_MFU, "mfu", NUM, "%.6g", "fraction", 0, "mfu", I, "tflops / peak_flops")     \
    X(TRAIN, TRAIN_RSS, "mem_max_rss_bytes", INT, NULL, "bytes", OPT | TBONLY,                  \
      "mem-max-rss-bytes", I, "peak resident memory (--log-memory-to-tensorboard)")             \
    X(TRAIN, TRAIN_STATE, "mem_model_state_bytes", INT, NULL, "bytes", OPT | TBONLY,            \
      "mem-model-state-bytes", I, "parameters, gradients, optimizer state")                    \
    X(TRAIN, TRAIN_ACTS, "mem_activations_bytes", INT, NULL, "bytes", OPT | TBONLY,             \
      "mem-activations-bytes", I, "activations")                                               \
    X(ITERATION, IT_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the iteration")              \
    X(ITERATION, IT_LOSS, "loss", NUM, NULL, "nats/token", 0, "lm loss", I | S | K,             \
      "the iteration's lm loss")                                                                \
    X(ITERATION, IT_LR, "lr", NUM, NULL, "", 0, "learning-rate", I | S, "learning rate")        \
    X(ITERATION, IT_GBS, "global_batch_size", INT, NULL, "samples", 0, "batch-size", I | S,     \
      "global batch")                                                                           \
    X(ITERATION, IT_NORM, "grad_norm", NUM, NULL, "", 0, "grad-norm", I | S, "grad norm")      \
    X(ITERATION, IT_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, "consumed-samples",   \
      I, "samples after the iteration")                                                         \
    X(ITERATION, IT_TOKENS, "consumed_tokens", INT, NULL, "tokens", 0, "consumed-tokens", I,    \
      "consumed_samples x seq_length")                                                          \
    X(EVAL, EVAL_SPLIT, "split", STR, NULL, "", 0, NULL, 0, "valid or test")                     \
    X(EVAL, EVAL_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the iteration (checkpoint's)")  \
    X(EVAL, EVAL_LOSS, "loss", NUM, "%.9g", "nats/token", FINITE, "lm loss validation",         \
      I | S | K, "mean token loss")                                                             \
    X(EVAL, EVAL_PPL, "ppl", NUM, "%.9g", "", FINITE | PPL, "lm loss validation ppl",           \
      I | S | K, "exp(loss); null from a loss of 700")                                          \
    X(EVAL, EVAL_FINAL, "final", BOOL, NULL, "", 0, NULL, 0, "at the end of training")          \
    X(EVAL, EVAL_NSAMPLES, "samples", INT, NULL, "samples", OPT, NULL, 0,                       \
      "samples evaluated (gpt3d eval)")                                                         \
    X(EVAL, EVAL_CKPT, "checkpoint", STR, NULL, "", OPT, NULL, 0, "the checkpoint (gpt3d eval)") \
    X(EVAL, EVAL_SAMPLES, "consumed_samples", INT, NULL, "samples", OPT | TBONLY, NULL, 0,      \
      "TensorBoard's samples axis")                                                             \
    X(EVAL, EVAL_TOKENS, "consumed_tokens", INT, NULL, "tokens", OPT | TBONLY, NULL, 0,         \
      "TensorBoard's tokens axis")                                                              \
    X(TASK, TASK_NAME, "task", STR, NULL, "", 0, NULL, 0, "the task's name")                    \
    X(TASK, TASK_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the iteration (checkpoint's)")  \
    X(TASK, TASK_N, "n", INT, NULL, "items", 0, NULL, 0, "items scored")                        \
    X(TASK, TASK_SHOTS, "num_fewshot", INT, NULL, "", 0, NULL, 0, "few-shot examples")          \
    X(TASK, TASK_TRUNC, "truncated", INT, NULL, "rows", 0, NULL, 0, "rows cut to seq_length")   \
    X(TASK, TASK_METRICS, "metrics", MAP, "%.9g", "", 0, NULL, 0, "METRIC: score")              \
    X(TASK, TASK_STDERR, "stderr", MAP, "%.9g", "", 0, NULL, 0, "METRIC: standard error")       \
    X(TASK, TASK_TPS, "tokens_per_s", NUM, "%.1f", "tokens/s", 0, NULL, 0, "scoring speed")    \
    X(TASK, TASK_FILE, "file", STR, NULL, "", 0, NULL, 0, "the task's data file")               \
    X(TASK, TASK_CKPT, "checkpoint", STR, NULL, "", OPT, NULL, 0, "the checkpoint (gpt3d eval)") \
    X(TIMERS, TIMERS_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the iteration")             \
    X(TIMERS, TIMERS_N, "iterations", INT, NULL, "", 0, NULL, 0, "iterations timed")            \
    X(TIMERS, TIMERS_LEVEL, "level", INT, NULL, "", 0, NULL, 0, "--timing-log-level")           \
    X(TIMERS, TIMERS_MS, "ms_per_iter", PAIRS, "%.6g", "ms", TIMERS, "-time", I,               \
      "TIMER: [min, max] over the ranks, per iteration")                                        \
    X(SAVE, SAVE_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the checkpoint's iteration")    \
    X(SAVE, SAVE_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, NULL, 0, "its samples")  \
    X(SAVE, SAVE_REASON, "reason", STR, NULL, "", 0, NULL, 0, "why it was saved")               \
    X(SAVE, SAVE_ASYNC, "async", BOOL, NULL, "", OPT, NULL, 0, "--async-save: started only")    \
    X(SAVE, SAVE_STALL, "stall_s", NUM, "%.6f", "s", 0, NULL, 0, "training stood still")        \
    X(SAVE, SAVE_WAIT, "wait_previous_s", NUM, "%.6f", "s", OPT, NULL, 0,                       \
      "waiting for the previous save's writer")                                                 \
    X(SAVE, SAVE_COPY, "host_copy_s", NUM, "%.6f", "s", OPT, NULL, 0, "copying to the host")    \
    X(SAVE, SAVE_PHASES, "phases", OBJ, NULL, "s", 0, NULL, 0, "PHASE: seconds")                \
    X(COMMIT, COMMIT_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the checkpoint's iteration") \
    X(COMMIT, COMMIT_ASYNC, "async", BOOL, NULL, "", 0, NULL, 0, "always true")                 \
    X(COMMIT, COMMIT_WRITER, "writer_s", NUM, "%.6f", "s", 0, NULL, 0, "the writer's wall time") \
    X(COMMIT, COMMIT_COMMIT, "commit_s", NUM, "%.6f", "s", 0, NULL, 0, "the commit")            \
    X(COMMIT, COMMIT_PHASES, "phases", OBJ, NULL, "s", 0, NULL, 0, "PHASE: seconds")            \
    X(LOAD, LOAD_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the checkpoint's iteration")    \
    X(LOAD, LOAD_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, NULL, 0, "its samples")  \
    X(LOAD, LOAD_S, "load_s", NUM, "%.6f", "s", 0, NULL, 0, "loading took")                     \
    X(LOAD, LOAD_PHASES, "phases", OBJ, NULL, "s", 0, NULL, 0, "PHASE: seconds")                \
    X(EXIT, EXIT_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the last iteration")            \
    X(EXIT, EXIT_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, NULL, 0, "its samples")  \
    X(EXIT, EXIT_REASON, "reason", STR, NULL, "", 0, NULL, 0, "exit signal, duration, interval") \
    X(END, END_ITER, "iteration", INT, NULL, "", 0, NULL, 0, "the last iteration")              \
    X(END, END_SAMPLES, "consumed_samples", INT, NULL, "samples", 0, NULL, 0, "its samples")    \
    X(END, END_LOSS, "loss", NUM, "%.9g", "nats/token", 0, NULL, 0, "the last iteration's loss") \
    X(END, END_VALID, "valid_loss", NUM, "%.9g", "nats/token", 0, NULL, 0,                      \
      "the last validation loss (null: none)")

typedef enum {
#define G3_EV_KIND_ENUM(name, json, line, doc) G3_EV_##name,
    G3_EV_KINDS(G3_EV_KIND_ENUM)
#undef G3_EV_KIND_ENUM
    G3_EV_NKINDS
} g3_ev_kind_t;

typedef enum {
#define G3_EV_FIELD_ENUM(ev, id, key, type, fmt, unit, flags, tag, axes, doc) G3_EVF_##id,
    G3_EV_FIELDS(G3_EV_FIELD_ENUM)
#undef G3_EV_FIELD_ENUM
    G3_EVF_COUNT
} g3_ev_field_id_t;

typedef enum { G3_EV_INT, G3_EV_NUM, G3_EV_STR, G3_EV_BOOL, G3_EV_OBJ, G3_EV_MAP, G3_EV_PAIRS }
    g3_ev_type_t;

enum {
    G3_EV_F_OPT = 1u << 0,      /* left out when not set                                  */
    G3_EV_F_TBONLY = 1u << 1,   /* a TensorBoard value or step only                       */
    G3_EV_F_FINITE = 1u << 2,   /* no TensorBoard tag for a value that is not finite      */
    G3_EV_F_PPL = 1u << 3,      /* tags only with --log-validation-ppl-to-tensorboard     */
    G3_EV_F_TIMERS = 1u << 4,   /* tags only with --log-timers-to-tensorboard             */
};
/* TensorBoard axes */
enum { G3_EV_AX_I = 1u << 0, G3_EV_AX_S = 1u << 1, G3_EV_AX_K = 1u << 2 };

/* One row of the schema. */
typedef struct {
    g3_ev_kind_t kind;
    const char  *key;       /* the JSON member's name                                  */
    g3_ev_type_t type;
    const char  *fmt;       /* NUM, MAP, PAIRS: the number's printf format (NULL: %.9g)   */
    const char  *unit;      /* "" for none                                              */
    unsigned     flags;     /* G3_EV_F_OPT, ...                                         */
    const char  *tb_tag;    /* NULL: none                                               */
    unsigned     tb_axes;   /* G3_EV_AX_*                                                */
    const char  *doc;
} g3_ev_field_t;

typedef struct {
    const char *name;       /* "train"                                                  */
    int         jsonl;      /* written to the metrics file (0: TensorBoard only)        */
    const char *doc;
} g3_ev_kind_info_t;

extern const g3_ev_field_t g3_ev_fields[G3_EVF_COUNT];
extern const g3_ev_kind_info_t g3_ev_kinds[G3_EV_NKINDS];

/* RET: the event kind named name, or -1. */
int g3_ev_kind_find(const char *name);

/* ---- writing ----------------------------------------------------------------------------- */

/* An object of numbers by name (MAP: v; PAIRS: v the min, v2 the max). */
typedef struct {
    int                n;
    const char *const *names;   /* (n,)                                                 */
    const double      *v;       /* (n,)                                                 */
    const double      *v2;      /* (n,) PAIRS only                                      */
} g3_ev_map_t;

typedef union {
    int64_t            i;       /* INT, BOOL                                            */
    double             d;       /* NUM                                                  */
    const char        *s;       /* STR; OBJ: the members' text without braces           */
    const g3_ev_map_t *m;       /* MAP, PAIRS                                           */
} g3_ev_val_t;

typedef struct {
    g3_ev_kind_t  kind;
    g3_ev_val_t   v[G3_EVF_COUNT];
    unsigned char set[G3_EVF_COUNT];
} g3_ev_t;

/* Where a record goes: any of the three may be NULL (nothing written there). */
typedef struct {
    FILE    *jsonl;         /* the metrics file                                          */
    g3_tb_t *tb;            /* TensorBoard                                                */
    unsigned tb_groups;     /* G3_EV_F_PPL | G3_EV_F_TIMERS: the optional tags to write  */
    FILE    *progress;      /* the progress line (stdout)                                */
} g3_ev_sink_t;

void g3_ev_init(g3_ev_t *e, g3_ev_kind_t kind);
/* Set field f (of e's kind, of the setter's type; a mismatch is logged and ignored). */
void g3_ev_int(g3_ev_t *e, g3_ev_field_id_t f, int64_t v);
void g3_ev_num(g3_ev_t *e, g3_ev_field_id_t f, double v);
void g3_ev_str(g3_ev_t *e, g3_ev_field_id_t f, const char *s);
void g3_ev_bool(g3_ev_t *e, g3_ev_field_id_t f, int v);
void g3_ev_obj(g3_ev_t *e, g3_ev_field_id_t f, const char *members);
void g3_ev_map(g3_ev_t *e, g3_ev_field_id_t f, const g3_ev_map_t *m);

/* Write e to every sink it goes to: the progress line first (if the event has one), the
 * JSON line (flushed at once: a reader follows a run as it goes), the TensorBoard tags. */
void g3_ev_emit(const g3_ev_sink_t *sink, const g3_ev_t *e);

/* ---- reading ----------------------------------------------------------------------------- */

/* A JSON line taken apart: its kind (-1: an event the schema does not know) and, for each
 * field of that kind present, its value's text in the line (strings with their quotes). */
typedef struct {
    int         kind;
    const char *event;           /* the "event" member's text (quotes included)         */
    size_t      event_len;
    const char *raw[G3_EVF_COUNT];
    size_t      raw_len[G3_EVF_COUNT];
} g3_ev_parsed_t;

/* RET: field f as a number (NaN: absent, null or not a number). */
double g3_ev_parsed_num(const g3_ev_parsed_t *p, g3_ev_field_id_t f);
/* RET: the field keyed key of p's kind as a number (NaN: absent, null, not a number). */
double g3_ev_parsed_num_key(const g3_ev_parsed_t *p, const char *key);

/* Write field f of p as text to out: a number or boolean as written, a string decoded, null
 * and an absent field as nothing, an object as "NAME=VALUE NAME=VALUE" (a PAIRS value as
 * "MIN,MAX", null as null); sub: only that member of an object (nothing if absent or null).
 * A string's tab, newline and backslash come out as \t, \n and \\ (one TSV cell).
 * RET: G3_ERR_FORMAT (a string or object that does not parse: not logged). */
g3_status_t g3_ev_parsed_text(const g3_ev_parsed_t *p, g3_ev_field_id_t f, const char *sub,
                              FILE *out);

/* Call fn on each record of the metrics file path (a run directory: its metrics.jsonl), its
 * line number and arg; a last line without its newline (a run killed while writing it) is
 * skipped.  fn returns G3_OK to go on.  RET: fn's error, G3_ERR_NOT_FOUND and G3_ERR_IO
 * (logged: the file unreadable), G3_ERR_FORMAT (logged: file and line named). */
typedef g3_status_t (*g3_ev_each_fn)(const g3_ev_parsed_t *p, const char *line, size_t len,
                                     size_t lineno, void *arg);
g3_status_t g3_ev_file_each(const char *path, g3_ev_each_fn fn, void *arg);

/* Print the schema as the markdown table of docs/training.md ("The metrics file"). */
void g3_ev_schema_markdown(FILE *out);

#endif
