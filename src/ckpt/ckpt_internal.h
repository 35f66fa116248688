/* gpt3d ckpt internals shared by the src/ckpt files (not for other layers). */
#ifndef G3_CKPT_INTERNAL_H
#define G3_CKPT_INTERNAL_H

#include <hdf5.h>
#include <limits.h>
#include <stdint.h>

#include "ckpt/ckpt.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define G3_CKPT_INDEX_NAME "index.h5"

/* ---- state --------------------------------------------------------------------------- */

typedef struct {
    g3_ckpt_tensor_t desc;              /* desc.name points to name          */
    char             name[G3_CKPT_NAME_MAX];
    g3_ckpt_piece_t *pieces;
    int              npieces, cap;
} g3_ckpt_stensor_t;

typedef enum { G3_CKPT_KV_I64 = 0, G3_CKPT_KV_F64 = 1, G3_CKPT_KV_STR = 2 } g3_ckpt_kv_type_t;

typedef struct {
    char             *key;
    g3_ckpt_kv_type_t type;
    int               n;        /* element count; string: length without NUL */
    void             *values;   /* int64_t[n], double[n] or char[n + 1]       */
} g3_ckpt_kv_t;

struct g3_ckpt_state {
    g3_ckpt_layout_t   layout;     /* layout.stage_first_layer -> stage_first */
    int               *stage_first;             /* (pp_size + 1)             */
    g3_ckpt_stensor_t *tensors;
    int                ntensors, cap;
    int64_t            iteration, consumed_samples, consumed_tokens;
    char              *config;
    g3_ckpt_kv_t      *kv;
    int                nkv;
    void             **owned;      /* snapshot copies freed with the state   */
    int                nowned;
};

/* ---- sharding rules and boxes (ckpt_box.c) ------------------------------------------- */

int64_t g3_ckpt_box_volume(int ndim, const int64_t *extent);
/* RET: 1 when the boxes intersect; OUT: the intersection. */
int g3_ckpt_box_intersect(int ndim, const int64_t *ao, const int64_t *ae,
                          const int64_t *bo, const int64_t *be, int64_t *io, int64_t *ie);
/* Does this rank write the tensor (ownership rules of the format, section 4)? */
int g3_ckpt_rank_writes(const g3_ckpt_layout_t *layout, const g3_ckpt_tensor_t *t);
/* Copy the intersection box (io, ie) from src (a box at so, se) to dst (a box
 * at dof, de), converting dtypes. */
void g3_ckpt_copy_box(int ndim, const int64_t *io, const int64_t *ie,
                      const void *src, const int64_t *so, const int64_t *se, g3_ckpt_dtype_t st,
                      void *dst, const int64_t *dof, const int64_t *de, g3_ckpt_dtype_t dt);

/* ---- element types (ckpt_dtype.c) ---------------------------------------------------- */

/* Convert n elements between float types (f32 <-> bf16, or a plain copy). */
void g3_ckpt_convert_elems(void *dst, g3_ckpt_dtype_t dt, const void *src, g3_ckpt_dtype_t st,
                           size_t n);

/* ---- HDF5 helpers -------------------------------------------------------------------- */

/* The innermost messages of HDF5's error stack (or of this thread's last HDF5 failure,
 * when a later call cleared the stack), with an errno HDF5 reports as strerror, into buf. */
const char *g3_ckpt_h5_errmsg(char *buf, size_t size);
/* HDF5 file type and memory type of a dtype (do not close them). */
hid_t g3_ckpt_h5_type(g3_ckpt_dtype_t dtype);
/* RET: 1 when dataset d holds elements of `type` in ndim dimensions equal to shape[0..ndim)
 * (its rank read before its dimensions: a damaged rank cannot overrun the caller). */
int g3_ckpt_h5_dset_matches(hid_t d, hid_t type, int ndim, const int64_t *shape);
/* Open a file read-only / create it; errors logged with path and cause. */
g3_status_t g3_ckpt_h5_open(const char *path, hid_t *file_p);
/* sealed: leave room for g3_ckpt_index_seal (the index, format version 3). */
g3_status_t g3_ckpt_h5_create(const char *path, int sealed, hid_t *file_p);
/* Format version 3: index.h5 begins with a G3_CKPT_SEAL_BYTES HDF5 user block holding the
 * file's size and the CRC-32C of the rest (ckpt_h5.c says how), so that a damaged index is
 * refused before libhdf5 parses it (HDF5 does not checksum the heap of the virtual datasets'
 * mappings).  index_seal writes the block into a closed file; index_open checks it and
 * opens the file (one without a block, versions 1 and 2, is opened as before: OUT *sealed_p
 * 0).  Errors logged naming path. */
#define G3_CKPT_SEAL_BYTES 512
g3_status_t g3_ckpt_index_seal(const char *path);
g3_status_t g3_ckpt_index_open(const char *path, hid_t *file_p, int *sealed_p);
/* A group creation property list that keeps links and attributes in the (checksummed)
 * object header; the caller closes it. */
hid_t g3_ckpt_h5_gcpl(void);
/* Create the missing parent groups of path ("a/b/c": a and a/b) with g3_ckpt_h5_gcpl.
 * RET: G3_ERR_IO (not logged: the caller names the file). */
g3_status_t g3_ckpt_h5_parents(hid_t loc, const char *path);
/* Flush and close a file written by this process.  When the flush fails (a full disk) the
 * error is logged (unless quiet: an error was logged already), the file's space is
 * released and the file closed for good.  RET: G3_OK or G3_ERR_IO. */
g3_status_t g3_ckpt_h5_close_written(hid_t file, const char *path, int quiet);
/* fsync a file or directory by path. */
g3_status_t g3_ckpt_fsync_path(const char *path, int is_dir);

g3_status_t g3_ckpt_attr_write_str(hid_t obj, const char *name, const char *value);
g3_status_t g3_ckpt_attr_write_i64(hid_t obj, const char *name, const int64_t *v, int n);
g3_status_t g3_ckpt_attr_write_i32(hid_t obj, const char *name, int32_t v);
g3_status_t g3_ckpt_attr_write_u32(hid_t obj, const char *name, uint32_t v);
/* Readers return G3_ERR_NOT_FOUND without logging when the attribute is absent,
 * G3_ERR_FORMAT (not logged) when it has the wrong class/size, G3_ERR_IO (not logged) when
 * the object's header cannot be read (a damaged file). */
g3_status_t g3_ckpt_attr_read_str(hid_t obj, const char *name, char *buf, size_t size);
g3_status_t g3_ckpt_attr_read_i64(hid_t obj, const char *name, int64_t *v, int n);
g3_status_t g3_ckpt_attr_read_i32(hid_t obj, const char *name, int32_t *v);
g3_status_t g3_ckpt_attr_read_u32(hid_t obj, const char *name, uint32_t *v);

/* Check the format / format_version root attributes of an open file: versions 1 to
 * G3_CKPT_FORMAT_VERSION are read.  Errors logged naming path.  OUT: *version_p (may be NULL) */
g3_status_t g3_ckpt_check_format(hid_t file, const char *path, const char *format, int *version_p);

/* The index's root attributes iteration, consumed_samples and consumed_tokens (int64) each
 * carry a checksum attribute "<name>_crc32c" (format version 2): the CRC-32C of the value's
 * 8 little-endian bytes. */
#define G3_CKPT_NPROGRESS 3
extern const char *const g3_ckpt_progress_names[G3_CKPT_NPROGRESS];
uint32_t g3_ckpt_progress_crc(int64_t value);

/* Select rows [r0, r0 + nr) of a dataset of extent (ndim,) in its file space fspace.
 * RET: the matching memory space (the caller closes it). */
hid_t g3_ckpt_select_rows(hid_t fspace, int ndim, const int64_t *extent, int64_t r0, int64_t nr);
/* Whole-dataset read (write == 0) or write of buf, (extent...) row-major, in
 * row blocks of about 8 MiB; each block is folded into *crc_p (if not NULL)
 * while it is in cache.  RET: G3_ERR_FORMAT (read) / G3_ERR_IO (write). */
g3_status_t g3_ckpt_dataset_io(hid_t d, hid_t type, int ndim, const int64_t *extent, size_t esz,
                               void *buf, int write, uint32_t *crc_p);
/* Compare with the dataset's crc32c attribute; errors logged naming path/name. */
g3_status_t g3_ckpt_dataset_check_crc(hid_t d, const char *name, const char *path);

/* H5Lexists of every component of "a/b/c" (H5Lexists fails when "a/b" is missing). */
int g3_ckpt_link_exists(hid_t loc, const char *path);

/* ---- tables -------------------------------------------------------------------------- */

typedef struct {            /* one row of a shard file's /manifest           */
    char    tensor[G3_CKPT_NAME_MAX];
    int32_t piece;
    char    dtype[8];
    int32_t kind, ndim;
    int64_t shape[G3_CKPT_MAX_DIMS];
    int64_t offset[G3_CKPT_MAX_DIMS];
    int64_t extent[G3_CKPT_MAX_DIMS];
    uint32_t crc32c;
    int32_t tp_dim, tp_parts, pp_layer, pad_dim;
    int64_t unpadded;
} g3_ckpt_mrow_t;

typedef struct {            /* /files                                        */
    char    name[64];
    int32_t kind, tp, pp, dp;
    int64_t npieces, nbytes;
} g3_ckpt_frow_t;

typedef struct {            /* /tensors                                      */
    char    name[G3_CKPT_NAME_MAX];
    char    dtype[8];
    int32_t kind, ndim;
    int64_t shape[G3_CKPT_MAX_DIMS];
    int32_t tp_dim, tp_parts, pp_layer, pad_dim;
    int64_t unpadded, first_piece, npieces;
} g3_ckpt_trow_t;

typedef struct {            /* /pieces                                       */
    int32_t tensor, file, piece;
    int64_t offset[G3_CKPT_MAX_DIMS];
    int64_t extent[G3_CKPT_MAX_DIMS];
    int64_t nbytes;
    uint32_t crc32c;
} g3_ckpt_prow_t;

typedef enum { G3_CKPT_TABLE_MANIFEST, G3_CKPT_TABLE_FILES, G3_CKPT_TABLE_TENSORS,
               G3_CKPT_TABLE_PIECES } g3_ckpt_table_t;
g3_status_t g3_ckpt_table_write(hid_t loc, const char *name, g3_ckpt_table_t table,
                                const void *rows, size_t nrows, const char *path);
/* OUT: *rows_p (malloc'd), *nrows_p.  Errors logged naming path. */
g3_status_t g3_ckpt_table_read(hid_t loc, const char *name, g3_ckpt_table_t table,
                               void **rows_p, size_t *nrows_p, const char *path);

/* ---- names (ckpt_name.c) ------------------------------------------------------------- */

/* FNV-1a of a tensor name, for the open-addressing name maps of the writer and reader. */
uint64_t g3_ckpt_name_hash(const char *s);
/* "model_tp00_pp000.h5" / "optim_tp00_pp000_dp000.h5" */
void g3_ckpt_shard_name(g3_ckpt_kind_t kind, int tp, int pp, int dp, char *buf, size_t size);
/* The dataset path of piece k of a tensor in a shard file: "<tensor>#<k>". */
void g3_ckpt_piece_dataset(const char *tensor, int k, char *buf, size_t size);
/* "DIR/iter_0000100.tmp-ID" */
void g3_ckpt_tmp_path(const char *dir, int64_t iteration, const char *save_id, char *buf,
                      size_t size);
const char *g3_ckpt_save_id(const g3_ckpt_save_opts_t *opts);
/* RET: 1 when name is "iter_" and 7 to 18 digits, with the number in *iteration_p. */
int g3_ckpt_parse_iter_name(const char *name, int64_t *iteration_p);

/* ---- reader -------------------------------------------------------------------------- */

struct g3_ckpt_reader {
    char            dir[PATH_MAX];         /* the iter_ directory                */
    int             version;               /* the index's format_version         */
    int64_t         iteration, consumed_samples, consumed_tokens;
    char           *config;
    int             tp_size, pp_size, dp_size, num_layers;
    int            *stage_first;           /* (pp_size + 1)                      */
    g3_ckpt_frow_t *files;
    size_t          nfiles;
    g3_ckpt_trow_t *tensors;
    size_t          ntensors;
    g3_ckpt_prow_t *pieces;
    size_t          npieces;
    g3_ckpt_kv_t   *kv;
    int             nkv;
    int            *map;                   /* tensor-name hash (built on first find) */
    size_t          mapcap;
};

/* The metadata checks of gpt3d ckpt verify that every load runs too (ckpt_check.c).
 * Each logs every fault it finds (naming the file and what is wrong) and returns their
 * number.  check_tiling: every tensor's pieces tile its shape.  check_vds: every tensor's
 * virtual dataset in the open index f maps its pieces (file, dataset, box) as the /pieces
 * table says.  check_shard: the open shard file fi's root attributes agree with the index;
 * check_manifest: its /manifest does (checksum, and each row's piece, box and checksum).
 * check_piece: an open piece dataset's crc32c attribute is the index's. */
int g3_ckpt_check_tiling(const g3_ckpt_reader_t *r);
/* check_vds on the reader's index.h5, opened for it. */
int g3_ckpt_verify_vds(const g3_ckpt_reader_t *r);
int g3_ckpt_check_shard(const g3_ckpt_reader_t *r, size_t fi, hid_t f, const char *path);
int g3_ckpt_check_manifest(const g3_ckpt_reader_t *r, size_t fi, hid_t f, const char *path);
int g3_ckpt_check_piece(const g3_ckpt_reader_t *r, const g3_ckpt_prow_t *sp, hid_t d,
                        const char *path, const char *dname);

/* ---- directories (ckpt_dir.c) -------------------------------------------------------- */

/* Remove a directory holding only files (a checkpoint directory; it refuses to descend into
 * subdirectories).  Errors logged naming the file. */
g3_status_t g3_ckpt_rmdir_flat(const char *path);

/* ---- phase timing (ckpt_timing.c) ---------------------------------------------------- */

/* The phases of the save or load this thread runs (NULL: not timed): set from the options
 * by g3_ckpt_write_shards, g3_ckpt_commit and g3_ckpt_reader_load, read by the helpers that
 * charge their time (g3_ckpt_dataset_io).  One per thread: the asynchronous writer's save
 * and the training thread's commit or load are timed apart. */
extern __thread g3_ckpt_timing_t *g3_ckpt_tm;

#endif
