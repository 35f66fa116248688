/* gpt3d ckpt: sharded HDF5 checkpoints (format: docs/checkpoint-format.md).
 *
 * The caller describes its part of the training state: tensors (name, dtype,
 * global shape, sharding rule) and, for each, the pieces it holds (a box of the
 * global array, by offset and extent per dimension, with a pointer to its
 * row-major data), plus scalars (iteration, consumed samples, RNG, ...).
 *
 * Save (every rank, collective):
 *     g3_ckpt_save(dir, state, &save_opts, &comm)
 *   or the same in explicit phases, for callers that drive the barriers
 *   themselves (tests simulate many ranks in one process this way):
 *     rank 0: g3_ckpt_save_prepare   -> barrier ->
 *     all:    g3_ckpt_write_shards   -> all-reduce "all ok?" ->
 *     rank 0: g3_ckpt_commit (or g3_ckpt_save_abort if some rank failed)
 * Load (every rank): g3_ckpt_load(dir, state, &load_opts, &comm): each rank
 *   asks for the boxes its state describes under ITS layout, and they are read
 *   from whichever shard files hold them, whatever layout wrote them.
 *
 * Glossary: TP, PP, DP = tensor/pipeline/data-parallel sizes; tp, pp, dp = a
 * rank's coordinates; a "piece" = one box of a tensor's global array.
 *
 * Ownership: the state copies names and descriptions; it never owns the data
 * pointers of pieces (except in a snapshot, see g3_ckpt_state_snapshot).
 * Nothing here calls exit(); errors are logged once with the file, dataset
 * and cause, and returned as a g3_status_t. */
#ifndef G3_CKPT_CKPT_H
#define G3_CKPT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define G3_CKPT_FORMAT          "gpt3d-checkpoint"
#define G3_CKPT_SHARD_FORMAT    "gpt3d-checkpoint-shard"
/* Version 2: HDF5 1.8+ file format (checksummed metadata), checksums of the index's
 * iteration / consumed_samples / consumed_tokens.  Version 3: index.h5 begins with a block
 * holding its size and the checksum of the whole file.  Readers read versions 1 to 3. */
#define G3_CKPT_FORMAT_VERSION  3
#define G3_CKPT_MAX_DIMS        4
#define G3_CKPT_NAME_MAX        256   /* tensor paths, including the NUL */

typedef enum {
    G3_CKPT_F32 = 0,
    G3_CKPT_BF16,
    G3_CKPT_F16,
    G3_CKPT_F64,
    G3_CKPT_I32,
    G3_CKPT_I64,
    G3_CKPT_U8,
    G3_CKPT_DTYPE_COUNT
} g3_ckpt_dtype_t;

/* "f32", "bf16", ...; size in bytes; parse (RET: G3_ERR_INVALID_ARG if unknown). */
const char *g3_ckpt_dtype_name(g3_ckpt_dtype_t dtype);
size_t      g3_ckpt_dtype_size(g3_ckpt_dtype_t dtype);
g3_status_t g3_ckpt_dtype_parse(const char *name, g3_ckpt_dtype_t *dtype_p);

typedef enum {
    G3_CKPT_MODEL = 0,   /* one file per (tp, pp), written by dp = 0          */
    G3_CKPT_OPTIM = 1    /* one file per (tp, pp, dp): ZeRO-1 shards          */
} g3_ckpt_kind_t;

#define G3_CKPT_PP_FIRST (-1)   /* rule.pp_layer: owned by the first stage */
#define G3_CKPT_PP_LAST  (-2)   /* rule.pp_layer: owned by the last stage  */

/* How a tensor is sharded; stored in the index so that "gpt3d ckpt convert"
 * can re-shard without model code (docs/checkpoint-format.md section 4). */
typedef struct {
    int     tp_dim;    /* dimension split across TP; -1: replicated (tp 0 writes)   */
    int     tp_parts;  /* 1, or 3 for fused [q;k;v]: tp_dim seen as (parts, n/parts) */
    int     pp_layer;  /* layer index, or G3_CKPT_PP_FIRST / G3_CKPT_PP_LAST       */
    int     pad_dim;   /* dimension padded (vocabulary), or -1                      */
    int64_t unpadded;  /* true size along pad_dim (V); ignored when pad_dim < 0     */
} g3_ckpt_rule_t;

/* A rule for a tensor replicated on every TP rank of the stage holding pp_layer. */
g3_ckpt_rule_t g3_ckpt_rule_replicated(int pp_layer);
/* A rule for a tensor split along dim across TP in `parts` parts. */
g3_ckpt_rule_t g3_ckpt_rule_split(int dim, int parts, int pp_layer);

typedef struct {
    const char     *name;      /* "model/layers.0.attention.qkv.weight", < 256 bytes */
    g3_ckpt_kind_t  kind;
    g3_ckpt_dtype_t dtype;
    int             ndim;      /* 1..4 */
    int64_t         shape[G3_CKPT_MAX_DIMS];   /* global shape */
    g3_ckpt_rule_t  rule;
    /* Load only (not stored): a checkpoint that lacks the tensor, or holds it at another
     * shape or type, is loaded without it (its pieces keep the caller's values; the caller
     * asks g3_ckpt_reader_find and g3_ckpt_reader_tensor what was there). */
    int             optional;
} g3_ckpt_tensor_t;

/* One box of a tensor's global array held by this rank. */
typedef struct {
    int64_t offset[G3_CKPT_MAX_DIMS];  /* global offset of the box          */
    int64_t extent[G3_CKPT_MAX_DIMS];  /* box shape                         */
    void   *data;                      /* (extent...) row-major, tensor dtype */
} g3_ckpt_piece_t;

typedef struct {
    int tp_size, pp_size, dp_size;
    int tp, pp, dp;                    /* this rank's coordinates            */
    int num_layers;                    /* for pp_layer -> stage              */
    /* (pp_size + 1) layer boundaries: stage s holds layers [b[s], b[s+1]).
     * NULL: an even split (num_layers must be divisible by pp_size). */
    const int *stage_first_layer;
    /* Interleaved pipeline (--virtual-pipeline-model-parallel-size): V > 1 model chunks
     * per stage, stage s owning layer l when (l / (num_layers / (pp_size V))) mod pp_size
     * is s (stage_first_layer is then not used); 0 or 1: contiguous stages. */
    int vpp_size;
} g3_ckpt_layout_t;

/* ---- the state a rank saves or loads ------------------------------------ */

typedef struct g3_ckpt_state g3_ckpt_state_t;

/* RET: G3_ERR_INVALID_ARG for an inconsistent layout.  OUT: *state_p */
g3_status_t g3_ckpt_state_init(const g3_ckpt_layout_t *layout, g3_ckpt_state_t **state_p);
void        g3_ckpt_state_free(g3_ckpt_state_t *state);

/* Add a tensor and the pieces of it this rank holds (npieces may be 0: the
 * tensor is described but nothing of it is held).  Adding the same tensor
 * again appends pieces (the description must be identical).  Data pointers are
 * borrowed: they must stay valid until the save or load returns. */
g3_status_t g3_ckpt_state_add(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                              const g3_ckpt_piece_t *pieces, int npieces);

/* Add the pieces of the rank-local (TP-sharded) box [local_offset,
 * local_offset + local_extent) of a tensor, that is its ZeRO-1 range of `count`
 * elements starting at flat row-major index `flat_start` of the local box.
 * data: (count,) contiguous.  The range is stored as at most 2*ndim-1 boxes. */
g3_status_t g3_ckpt_state_add_flat(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                   const int64_t *local_offset, const int64_t *local_extent,
                                   int64_t flat_start, int64_t count, void *data);

/* Convenience for the trainer: the rank-local array of a tensor on TP rank
 * tp_rank of tp_size is the concatenation, in order, of its g3_ckpt_tp_boxes
 * (each box row-major): e.g. qkv's local (3h/TP, h) array is [q_r; k_r; v_r].
 * add_local registers the whole local array (data: all of it); add_local_flat
 * registers the ZeRO-1 range [flat_start, flat_start + count) of it (data:
 * (count,) contiguous, the rank's part of the flattened optimizer buffer). */
g3_status_t g3_ckpt_state_add_local(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                    int tp_rank, int tp_size, void *data);
g3_status_t g3_ckpt_state_add_local_flat(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                         int tp_rank, int tp_size, int64_t flat_start,
                                         int64_t count, void *data);
/* RET: elements of the rank-local array (0 with an error logged if the rule
 * does not divide). */
int64_t     g3_ckpt_local_numel(const g3_ckpt_tensor_t *tensor, int tp_size);

/* The boxes tensor `t` has on TP rank tp_rank of tp_size under its rule
 * (tp_parts boxes when split, one box when replicated).  OUT: boxes[0..*nboxes_p)
 * (capacity 3; the data pointers are NULL).  RET: G3_ERR_INVALID_ARG naming the
 * tensor when the split dimension is not divisible. */
g3_status_t g3_ckpt_tp_boxes(const g3_ckpt_tensor_t *t, int tp_rank, int tp_size,
                             g3_ckpt_piece_t boxes[3], int *nboxes_p);
/* RET: the pipeline stage that owns a tensor with rule.pp_layer under layout. */
int g3_ckpt_owner_stage(const g3_ckpt_layout_t *layout, int pp_layer);

/* Scalars and small arrays (section 7 of the format).  Saved by rank 0 into the
 * index; every rank may set them, only rank 0's are written. */
void        g3_ckpt_state_set_progress(g3_ckpt_state_t *state, int64_t iteration,
                                       int64_t consumed_samples, int64_t consumed_tokens);
/* The configuration text ("name = value" lines); copied. */
g3_status_t g3_ckpt_state_set_config(g3_ckpt_state_t *state, const char *config_text);
g3_status_t g3_ckpt_state_set_i64(g3_ckpt_state_t *state, const char *key,
                                  const int64_t *values, int n);
g3_status_t g3_ckpt_state_set_f64(g3_ckpt_state_t *state, const char *key,
                                  const double *values, int n);
g3_status_t g3_ckpt_state_set_str(g3_ckpt_state_t *state, const char *key, const char *value);

/* ---- collective operations the caller provides -------------------------- */

/* The library never talks to other ranks itself.  With comm == NULL (or a NULL
 * function) an operation is a single-process one. */
typedef struct {
    void *ctx;
    /* In place: *value becomes the minimum over all ranks.  Also a barrier. */
    g3_status_t (*allreduce_min_int)(void *ctx, int *value);
} g3_ckpt_comm_t;

/* ---- phase timing --------------------------------------------------------- */

/* Where a save's or a load's time goes: seconds per phase on the monotonic clock
 * (core/clock.h), filled by the library where a caller passes a g3_ckpt_timing_t (save
 * and load options, the asynchronous writer) and by the caller for its own phases; the
 * caller reports them.  Phases a run does not pass through stay 0; the sum is at most
 * the wall time of the operation (barriers and bookkeeping are in neither). */
typedef enum {
    /* save */
    G3_CKPT_T_WAIT,       /* the previous asynchronous save: its writer, its commit    */
    G3_CKPT_T_STAGE_ALLOC, /* host memory for the copies: waiting for the staging area's
                            * background allocation, or allocating (caller)               */
    G3_CKPT_T_DESCRIBE,   /* describing the tensors and scalars of the state (caller)   */
    G3_CKPT_T_D2H,        /* copying the parameters and moments to host memory (caller;
                           * a load: the model's values that the checkpoint does not hold) */
    G3_CKPT_T_FINITE,     /* checking the host copy for NaN and infinity (caller)       */
    G3_CKPT_T_PACK,       /* snapshots, HDF5 datasets, attributes and manifests         */
    G3_CKPT_T_CHECKSUM,   /* CRC-32C of the bytes written                               */
    G3_CKPT_T_WRITE,      /* handing the bytes to the file system (H5Dwrite, close)     */
    G3_CKPT_T_FSYNC,      /* fsync of the shard files                                   */
    G3_CKPT_T_COMMIT,     /* temporary directory, manifests, index, rename, `latest`    */
    /* load */
    G3_CKPT_T_OPEN,       /* index, plan, opening and closing shard files and datasets  */
    G3_CKPT_T_READ,       /* reading the pieces                                         */
    G3_CKPT_T_VERIFY,     /* CRC-32C not hidden behind the reads                        */
    G3_CKPT_T_CONVERT,    /* scattering re-sharded pieces, converting dtypes            */
    G3_CKPT_T_H2D,        /* copying the loaded state into the backend's buffers (caller) */
    G3_CKPT_T_FREE,       /* giving back the load's host copies, closing the index (caller) */
    G3_CKPT_T_COUNT
} g3_ckpt_phase_t;

/* Sets of phases, for g3_ckpt_timing_format. */
#define G3_CKPT_T_BIT(phase) (1u << (phase))
/* the host copy every save and load starts with: the staging area, what to copy, the copy */
#define G3_CKPT_T_HOST                                                                      \
    (G3_CKPT_T_BIT(G3_CKPT_T_STAGE_ALLOC) | G3_CKPT_T_BIT(G3_CKPT_T_DESCRIBE) |             \
     G3_CKPT_T_BIT(G3_CKPT_T_D2H))
/* the asynchronous writer thread */
#define G3_CKPT_T_WRITER                                                                    \
    (G3_CKPT_T_BIT(G3_CKPT_T_PACK) | G3_CKPT_T_BIT(G3_CKPT_T_CHECKSUM) |                    \
     G3_CKPT_T_BIT(G3_CKPT_T_WRITE) | G3_CKPT_T_BIT(G3_CKPT_T_FSYNC))
/* a synchronous save */
#define G3_CKPT_T_SAVE                                                                      \
    (G3_CKPT_T_HOST | G3_CKPT_T_BIT(G3_CKPT_T_FINITE) | G3_CKPT_T_WRITER |                  \
     G3_CKPT_T_BIT(G3_CKPT_T_COMMIT))
/* the stall of an asynchronous save (commit: creating the temporary directory) */
#define G3_CKPT_T_STALL                                                                     \
    (G3_CKPT_T_BIT(G3_CKPT_T_WAIT) | G3_CKPT_T_HOST | G3_CKPT_T_BIT(G3_CKPT_T_FINITE) |     \
     G3_CKPT_T_BIT(G3_CKPT_T_PACK) | G3_CKPT_T_BIT(G3_CKPT_T_COMMIT))
/* a load (the library's: open, read, verify, convert; the rest the caller's) */
#define G3_CKPT_T_LOAD                                                                      \
    (G3_CKPT_T_HOST | G3_CKPT_T_BIT(G3_CKPT_T_OPEN) | G3_CKPT_T_BIT(G3_CKPT_T_READ) |       \
     G3_CKPT_T_BIT(G3_CKPT_T_VERIFY) | G3_CKPT_T_BIT(G3_CKPT_T_CONVERT) |                   \
     G3_CKPT_T_BIT(G3_CKPT_T_H2D) | G3_CKPT_T_BIT(G3_CKPT_T_FREE))

typedef struct {
    double s[G3_CKPT_T_COUNT];   /* seconds per phase */
} g3_ckpt_timing_t;

/* RET: g3_clock_now() when tm is not NULL, else 0. */
double      g3_ckpt_timing_now(const g3_ckpt_timing_t *tm);
/* Charge the time since *t0 to phase (nothing when tm is NULL) and restart *t0 there. */
void        g3_ckpt_timing_add(g3_ckpt_timing_t *tm, g3_ckpt_phase_t phase, double *t0);
/* The phases in mask into buf, in the enum's order: json 0: "name 0.123, name 0.456"
 * (seconds, 3 digits); json 1: "\"name\":0.123456,\"name\":0.456789" (the members of a
 * JSON object). */
void        g3_ckpt_timing_format(const g3_ckpt_timing_t *tm, unsigned mask, int json, char *buf,
                                  size_t size);

/* ---- save ---------------------------------------------------------------- */

typedef struct {
    const char *save_id;   /* names the temporary directory; the same on every
                              rank (e.g. the Slurm job id); NULL: "0"          */
    int         keep_last; /* > 0: after the commit keep only this many        */
    int         no_save_optim; /* skip G3_CKPT_OPTIM tensors (no optim files)  */
    g3_ckpt_timing_t *timing;  /* NULL, or the phases of the save are added here */
} g3_ckpt_save_opts_t;

/* The whole save, on every rank.  RET on every rank: G3_OK when the checkpoint
 * was committed, else an error (the previous checkpoints stay as they were). */
g3_status_t g3_ckpt_save(const char *dir, const g3_ckpt_state_t *state,
                         const g3_ckpt_save_opts_t *opts, const g3_ckpt_comm_t *comm);

/* Before training, on every rank that will save: can checkpoints be written into dir?
 * Creates dir (and its parents) when missing, creates and removes a probe directory in
 * it, and refuses a `latest` that is not a regular file.  RET: G3_ERR_INVALID_ARG, logged
 * naming dir and the cause (the caller exits 2). */
g3_status_t g3_ckpt_save_check(const char *dir);
/* Phase 1, rank 0 only: create dir, remove debris, create the temporary directory. */
g3_status_t g3_ckpt_save_prepare(const char *dir, int64_t iteration,
                                 const g3_ckpt_save_opts_t *opts);
/* Phase 2, every rank: write and fsync this rank's shard files: the model file
 * of (tp, pp) when dp is 0, and the optim file of (tp, pp, dp) when the state
 * describes at least one G3_CKPT_OPTIM tensor (rank 0's state decides whether
 * the commit expects optim files from every rank, so every rank must describe
 * its optimizer tensors, even those of which it holds no element). */
g3_status_t g3_ckpt_write_shards(const char *dir, const g3_ckpt_state_t *state,
                                 const g3_ckpt_save_opts_t *opts);
/* Phase 3, rank 0 only, after every rank's phase 2 succeeded: check the shards,
 * write the index, rename into place, update `latest`, prune. */
g3_status_t g3_ckpt_commit(const char *dir, const g3_ckpt_state_t *state,
                           const g3_ckpt_save_opts_t *opts);
/* Rank 0, instead of phase 3 when some rank failed: remove the temporary directory. */
void        g3_ckpt_save_abort(const char *dir, int64_t iteration, const g3_ckpt_save_opts_t *opts);

/* ---- asynchronous save ---------------------------------------------------- */

/* Deep copy of a state whose pieces own host copies of the data, so training
 * can change the originals (device code copies device memory to host first and
 * adds host pieces).  OUT: *copy_p, freed with g3_ckpt_state_free. */
g3_status_t g3_ckpt_state_snapshot(const g3_ckpt_state_t *state, g3_ckpt_state_t **copy_p);

typedef struct g3_ckpt_async g3_ckpt_async_t;
/* Start phase 2 (g3_ckpt_write_shards) of a snapshot in a background thread;
 * takes ownership of snapshot (also when it fails: then it is freed).  Phase 1 must have
 * completed on rank 0 (and a barrier passed) before.  OUT: *async_p */
g3_status_t g3_ckpt_async_start(const char *dir, g3_ckpt_state_t *snapshot,
                                const g3_ckpt_save_opts_t *opts, g3_ckpt_async_t **async_p);
/* RET: 1 when the writer thread has finished (non-blocking). */
int         g3_ckpt_async_done(g3_ckpt_async_t *async);
/* Join the thread; RET: its write status.  The snapshot stays alive so that
 * rank 0 can pass it to g3_ckpt_commit; then call g3_ckpt_async_free. */
g3_status_t g3_ckpt_async_wait(g3_ckpt_async_t *async, const g3_ckpt_state_t **snapshot_p);
/* After g3_ckpt_async_wait: the writer thread's phases (pack, checksum, write, fsync) into
 * *tm and its wall time into *writer_s. */
void        g3_ckpt_async_timing(const g3_ckpt_async_t *async, g3_ckpt_timing_t *tm,
                                 double *writer_s);
void        g3_ckpt_async_free(g3_ckpt_async_t *async);

/* ---- load ---------------------------------------------------------------- */

typedef struct g3_ckpt_reader g3_ckpt_reader_t;

typedef struct {
    int fallback;        /* --load-fallback: if the newest checkpoint cannot be
                            loaded, try the previous committed ones            */
    int no_verify;       /* skip checksum verification (not recommended)      */
    int no_load_optim;   /* skip G3_CKPT_OPTIM tensors of the state            */
    int optim_optional;  /* a checkpoint without any optimizer tensor (saved with
                            --no-save-optim) loads its model only; the caller
                            asks g3_ckpt_reader_has_optim and starts the
                            optimizer fresh.  One with some but not all of the
                            state's optimizer tensors is still refused.       */
    /* Model-configuration check: keys (without "--") whose values must agree
     * between the checkpoint's configuration and config_text.  NULL: no check. */
    const char         *config_text;
    const char *const  *model_keys;   /* NULL-terminated; NULL: G3_CKPT_MODEL_KEYS */
    /* The caller's checks of each candidate checkpoint, on every rank: check_index after
     * the configuration check and before any tensor is read, check_loaded after the state's
     * tensors are filled.  A failure (logged by the callback) moves --load-fallback on to the
     * previous checkpoint, unless check_index sets *final (the run, not the checkpoint, is
     * at fault: an older checkpoint would fail the same way; decide it from the index alone,
     * which every rank reads the same).  NULL: none. */
    g3_status_t (*check_index)(void *ctx, g3_ckpt_reader_t *reader, int *final);
    g3_status_t (*check_loaded)(void *ctx, g3_ckpt_reader_t *reader);
    void               *check_ctx;
    g3_ckpt_timing_t   *timing;       /* NULL, or the phases of the load are added here */
} g3_ckpt_load_opts_t;

/* The keys compared by default (NULL-terminated). */
extern const char *const G3_CKPT_MODEL_KEYS[];

/* The whole load, on every rank: open `latest` under dir (or dir itself when it
 * is a checkpoint directory), check the configuration, fill every piece of the
 * state, verify checksums; all ranks agree on success through comm, and with
 * opts->fallback they move together to the previous checkpoint on failure.
 * OUT: *reader_p (optional, NULL to discard): the index of the checkpoint that
 * was loaded, for the scalars (g3_ckpt_reader_get_*). */
g3_status_t g3_ckpt_load(const char *dir, g3_ckpt_state_t *state,
                         const g3_ckpt_load_opts_t *opts, const g3_ckpt_comm_t *comm,
                         g3_ckpt_reader_t **reader_p);

/* Open one checkpoint: path is a save directory (its `latest` is used) or a
 * checkpoint directory (iter_NNNNNNN).  OUT: *reader_p */
g3_status_t g3_ckpt_reader_open(const char *path, g3_ckpt_reader_t **reader_p);
void        g3_ckpt_reader_close(g3_ckpt_reader_t *reader);
/* Fill every piece of state from this checkpoint (by global offsets). */
g3_status_t g3_ckpt_reader_load(g3_ckpt_reader_t *reader, g3_ckpt_state_t *state,
                                const g3_ckpt_load_opts_t *opts);

const char *g3_ckpt_reader_path(const g3_ckpt_reader_t *reader);     /* the iter_ directory */
int64_t     g3_ckpt_reader_iteration(const g3_ckpt_reader_t *reader);
int         g3_ckpt_reader_version(const g3_ckpt_reader_t *reader);  /* index format_version */
int64_t     g3_ckpt_reader_consumed_samples(const g3_ckpt_reader_t *reader);
int64_t     g3_ckpt_reader_consumed_tokens(const g3_ckpt_reader_t *reader);
const char *g3_ckpt_reader_config(const g3_ckpt_reader_t *reader);   /* never NULL */
/* RET: 1 when the checkpoint stores at least one G3_CKPT_OPTIM tensor. */
int         g3_ckpt_reader_has_optim(const g3_ckpt_reader_t *reader);
/* The stored layout (stage_first_layer points into the reader). */
void        g3_ckpt_reader_layout(const g3_ckpt_reader_t *reader, g3_ckpt_layout_t *layout);
/* RET: G3_ERR_NOT_FOUND (logged) when the key is absent, G3_ERR_FORMAT when it
 * has another type or n differs from the stored count.  The string is copied
 * into buf (RET G3_ERR_INVALID_ARG if it does not fit). */
g3_status_t g3_ckpt_reader_get_i64(g3_ckpt_reader_t *reader, const char *key, int64_t *values,
                                   int n);
g3_status_t g3_ckpt_reader_get_f64(g3_ckpt_reader_t *reader, const char *key, double *values,
                                   int n);
g3_status_t g3_ckpt_reader_get_str(g3_ckpt_reader_t *reader, const char *key, char *buf,
                                   size_t size);
int         g3_ckpt_reader_has(g3_ckpt_reader_t *reader, const char *key);
/* State entry i (0 <= i < count) as "key = v1, v2, ..." in buf (shortened
 * with "..." when long).  RET: buf, or NULL when i is out of range. */
int         g3_ckpt_reader_state_count(const g3_ckpt_reader_t *reader);
const char *g3_ckpt_reader_state_text(const g3_ckpt_reader_t *reader, int i, char *buf,
                                      size_t size);

/* Tensors stored in the checkpoint (for tools).  index in [0, count). */
int         g3_ckpt_reader_tensor_count(const g3_ckpt_reader_t *reader);
void g3_ckpt_reader_tensor(const g3_ckpt_reader_t *reader, int index, g3_ckpt_tensor_t *tensor);
/* RET: the row of a tensor path, or -1. */
int         g3_ckpt_reader_find(const g3_ckpt_reader_t *reader, const char *name);

/* RET: the value of "key = value" in a configuration text, copied into buf, or
 * NULL when absent. */
const char *g3_ckpt_config_get(const char *config, const char *key, char *buf, size_t size);

/* ---- directories ----------------------------------------------------------- */

/* Committed checkpoints in dir, ascending iteration.  OUT: *iters_p (malloc'd). */
g3_status_t g3_ckpt_list(const char *dir, int64_t **iters_p, int *n_p);
/* RET: G3_ERR_NOT_FOUND when dir has no `latest`.  OUT: *iteration_p */
g3_status_t g3_ckpt_latest(const char *dir, int64_t *iteration_p);
/* Remove committed checkpoints except the newest keep_last and the latest. */
g3_status_t g3_ckpt_prune(const char *dir, int keep_last, const char *save_id);
/* "DIR/iter_0000100" into buf. */
void        g3_ckpt_iter_path(const char *dir, int64_t iteration, char *buf, size_t size);

/* ---- tools ---------------------------------------------------------------- */

typedef struct {
    int tp_size, pp_size, dp_size;
    int no_save_optim;
} g3_ckpt_convert_opts_t;
/* Re-shard the checkpoint at in (save dir or iter_ dir) into a new save
 * directory out under another layout. */
g3_status_t g3_ckpt_convert(const char *in, const char *out, const g3_ckpt_convert_opts_t *opts);

/* Check every file, piece, checksum and the tiling of each tensor.  Every
 * fault is logged; RET: G3_OK only when there is none.  OUT: *nfaults_p */
g3_status_t g3_ckpt_verify(const char *path, int *nfaults_p);

typedef struct {
    g3_ckpt_dtype_t dtype;  /* G3_CKPT_F32 or G3_CKPT_BF16 */
} g3_ckpt_export_opts_t;
/* Write out/model.safetensors and out/config.json for Hugging Face GPT-2. */
g3_status_t g3_ckpt_export_hf_gpt2(const char *in, const char *out,
                                   const g3_ckpt_export_opts_t *opts);

#endif
