/* Saving: rank-local shard files, then the index and the atomic commit on
 * rank 0 (docs/checkpoint-format.md, section 8). */
#define _GNU_SOURCE
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "core/crc32c.h"
#include "core/fs.h"
#include "core/hook.h"
#include "core/log.h"

static const char *const g3_ckpt_reserved_names[] = {
    "config", "layout", "state", "files", "tensors", "pieces", "manifest", NULL
};

/* ---- phase 1: prepare ------------------------------------------------------------- */

/* mkdir -p of a checkpoint directory; errors logged naming the directory (flag: the flag that
 * gave it, to say so, or NULL). */
static g3_status_t g3_ckpt_mkdir_p(const char *path, const char *flag)
{
    char failed[PATH_MAX];
    g3_status_t st = g3_mkdir_p(path, 0777, failed, sizeof(failed));

    if (st != G3_OK && flag)
        g3_error("%s %s cannot hold checkpoints: cannot create %s: %s; pass a directory this process can create and write",
                 flag, path, failed[0] ? failed : path, strerror(errno));
    else if (st != G3_OK)
        g3_error("cannot create checkpoint directory %s: %s", failed[0] ? failed : path,
                 strerror(errno));
    return st;
}

/* `latest` must be a regular file (or absent) for the commit's rename over it to work. */
static g3_status_t g3_ckpt_check_latest_file(const char *dir)
{
    char p[PATH_MAX + 16];
    struct stat sb;

    snprintf(p, sizeof(p), "%s/latest", dir);
    if (lstat(p, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode))
        return G3_OK;    /* the rename replaces a symbolic link itself */
    g3_error("%s is not a regular file (it is %s), so no checkpoint can be committed there: remove it (the checkpoints in %s are not touched) and rewrite it if needed, e.g. 'echo iter_0000100 > %s'",
             p, S_ISDIR(sb.st_mode) ? "a directory" : "a special file", dir, p);
    return G3_ERR_INVALID_ARG;
}

g3_status_t g3_ckpt_save_check(const char *dir)
{
    char probe[PATH_MAX], host[64] = "host";

    if (g3_ckpt_mkdir_p(dir, "--save") != G3_OK)
        return G3_ERR_INVALID_ARG;
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    /* a probe entry where the checkpoints go: iter_*.tmp-* directories are created there */
    if ((size_t)snprintf(probe, sizeof(probe), "%s/.gpt3d-probe-%s-%ld", dir, host, (long)getpid()) >= sizeof(probe)) {
        g3_error("--save %s: the path is too long", dir);
        return G3_ERR_INVALID_ARG;
    }
    if (mkdir(probe, 0777) != 0) {
        g3_error("--save %s is not writable: cannot create %s: %s; pass a directory this process can write", dir, probe,
                 strerror(errno));
        return G3_ERR_INVALID_ARG;
    }
    if (rmdir(probe) != 0) {
        g3_error("--save %s: cannot remove the probe directory %s: %s; remove it and pass a directory this process can write", dir,
                 probe, strerror(errno));
        return G3_ERR_INVALID_ARG;
    }
    return g3_ckpt_check_latest_file(dir);
}

/* Remove debris of interrupted saves and prunes. */
static g3_status_t g3_ckpt_remove_debris(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    g3_status_t st = G3_OK;

    if (d == NULL) {
        g3_error("cannot read checkpoint directory %s: %s", dir, strerror(errno));
        return G3_ERR_IO;
    }
    while ((e = readdir(d)) != NULL) {
        char p[PATH_MAX];
        int is_iter = strncmp(e->d_name, "iter_", 5) == 0;

        if (!(is_iter && (strstr(e->d_name, ".tmp-") || strstr(e->d_name, ".deleting-"))) &&
            strncmp(e->d_name, "latest.tmp-", 11) != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        g3_info("removing %s left by an interrupted checkpoint save", p);
        if (is_iter) {
            if (g3_ckpt_rmdir_flat(p) != G3_OK)
                st = G3_ERR_IO;
        } else if (unlink(p) != 0 && errno != ENOENT) {
            g3_error("cannot remove %s: %s", p, strerror(errno));
            st = G3_ERR_IO;
        }
    }
    closedir(d);
    return st;
}

static g3_status_t g3_ckpt_prepare_untimed(const char *dir, int64_t iteration,
                                           const g3_ckpt_save_opts_t *opts);

g3_status_t g3_ckpt_save_prepare(const char *dir, int64_t iteration,
                                 const g3_ckpt_save_opts_t *opts)
{
    g3_ckpt_timing_t *tm = opts ? opts->timing : NULL;
    double t0 = g3_ckpt_timing_now(tm);
    g3_status_t st = g3_ckpt_prepare_untimed(dir, iteration, opts);

    g3_ckpt_timing_add(tm, G3_CKPT_T_COMMIT, &t0);   /* the directory work of the commit */
    return st;
}

static g3_status_t g3_ckpt_prepare_untimed(const char *dir, int64_t iteration,
                                           const g3_ckpt_save_opts_t *opts)
{
    char tmp[PATH_MAX];
    g3_status_t st;

    if (iteration < 0) {
        g3_error("checkpoint iteration %lld is negative", (long long)iteration);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_ckpt_mkdir_p(dir, NULL);
    if (st == G3_OK)
        st = g3_ckpt_check_latest_file(dir);
    if (st == G3_OK)
        st = g3_ckpt_remove_debris(dir);
    if (st != G3_OK)
        return st;
    g3_ckpt_tmp_path(dir, iteration, g3_ckpt_save_id(opts), tmp, sizeof(tmp));
    if (mkdir(tmp, 0777) != 0) {
        g3_error("cannot create temporary checkpoint directory %s: %s", tmp, strerror(errno));
        return G3_ERR_IO;
    }
    return g3_ckpt_fsync_path(dir, 1);
}

void g3_ckpt_save_abort(const char *dir, int64_t iteration, const g3_ckpt_save_opts_t *opts)
{
    char tmp[PATH_MAX];

    struct stat sb;

    g3_ckpt_tmp_path(dir, iteration, g3_ckpt_save_id(opts), tmp, sizeof(tmp));
    if (stat(tmp, &sb) != 0)
        return;   /* nothing to abandon: it was renamed into place (and said so) or never made */
    g3_ckpt_rmdir_flat(tmp);
    g3_warn("checkpoint save of iteration %lld was abandoned; the previous checkpoints in %s are unchanged",
            (long long)iteration, dir);
}

/* ---- phase 2: shard files ---------------------------------------------------------- */

static g3_status_t g3_ckpt_write_attrs_common(hid_t f, const g3_ckpt_layout_t *l,
                                              const char *format, int64_t iteration)
{
    g3_status_t st = g3_ckpt_attr_write_str(f, "format", format);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "format_version", G3_CKPT_FORMAT_VERSION);
    if (st == G3_OK) st = g3_ckpt_attr_write_i64(f, "iteration", &iteration, 1);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "tensor_model_parallel_size", l->tp_size);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "pipeline_model_parallel_size", l->pp_size);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "data_parallel_size", l->dp_size);
    return st;
}

/* Write one piece as a contiguous dataset.  OUT: *crc_p */
static g3_status_t g3_ckpt_write_piece(hid_t f, const char *path, const g3_ckpt_stensor_t *s, int k,
                                       const g3_ckpt_piece_t *p, uint32_t *crc_p)
{
    const g3_ckpt_tensor_t *t = &s->desc;
    char dname[G3_CKPT_NAME_MAX + 16], msg[512];
    hsize_t dims[G3_CKPT_MAX_DIMS];
    size_t bytes = (size_t)g3_ckpt_box_volume(t->ndim, p->extent) * g3_ckpt_dtype_size(t->dtype);
    hid_t space, lcpl, dcpl, d;
    hid_t type = g3_ckpt_h5_type(t->dtype);
    uint32_t crc = 0;
    double t0 = g3_ckpt_timing_now(g3_ckpt_tm);
    g3_status_t st = G3_OK;

    for (int i = 0; i < t->ndim; i++)
        dims[i] = (hsize_t)p->extent[i];
    g3_ckpt_piece_dataset(s->name, k, dname, sizeof(dname));
    space = H5Screate_simple(t->ndim, dims, NULL);
    lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(dcpl, H5D_CONTIGUOUS);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);
    d = g3_ckpt_h5_parents(f, dname) == G3_OK
            ? H5Dcreate2(f, dname, type, space, lcpl, dcpl, H5P_DEFAULT)
            : -1;
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_PACK, &t0);   /* the checksum and write: inside */
    if (d < 0 || g3_ckpt_dataset_io(d, type, t->ndim, p->extent, g3_ckpt_dtype_size(t->dtype),
                                    p->data, 1, &crc) != G3_OK) {
        g3_error("cannot write tensor %s (piece %d, %zu bytes) to %s: %s; check free space and quota",
                 s->name, k, bytes, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        st = G3_ERR_IO;
    }
    t0 = g3_ckpt_timing_now(g3_ckpt_tm);
    if (st == G3_OK && bytes >= (4u << 20)) {
        /* Start writing this tensor to disk now, without waiting, so the disk
         * works while the next tensors are copied; the fsync at the end of the
         * file then has little left to do. */
        void *handle = NULL;
        if (H5Fget_vfd_handle(f, H5P_DEFAULT, &handle) >= 0 && handle != NULL)
            sync_file_range(*(int *)handle, 0, 0, SYNC_FILE_RANGE_WRITE);
    }
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_WRITE, &t0);
    if (st == G3_OK) {
        st = g3_ckpt_attr_write_u32(d, "crc32c", crc);
        if (st == G3_OK) st = g3_ckpt_attr_write_str(d, "dtype", g3_ckpt_dtype_name(t->dtype));
        if (st == G3_OK) st = g3_ckpt_attr_write_i64(d, "global_offset", p->offset, t->ndim);
        if (st == G3_OK) st = g3_ckpt_attr_write_i64(d, "global_shape", t->shape, t->ndim);
        if (st != G3_OK)
            g3_error("cannot write the attributes of %s in %s: %s", dname, path,
                     g3_ckpt_h5_errmsg(msg, sizeof(msg)));
    }
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    H5Sclose(space);
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_PACK, &t0);
    *crc_p = crc;
    return st;
}

static g3_status_t g3_ckpt_write_shard(const char *tmp, const g3_ckpt_state_t *state,
                                       g3_ckpt_kind_t kind)
{
    const g3_ckpt_layout_t *l = &state->layout;
    char name[64], path[PATH_MAX];
    g3_ckpt_mrow_t *rows = NULL;
    size_t nrows = 0, cap = 0;
    hid_t f;
    double t0 = g3_ckpt_timing_now(g3_ckpt_tm);
    g3_status_t st;

    g3_ckpt_shard_name(kind, l->tp, l->pp, kind == G3_CKPT_MODEL ? 0 : l->dp, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    st = g3_ckpt_h5_create(path, 0, &f);
    if (st != G3_OK)
        return st;
    st = g3_ckpt_write_attrs_common(f, l, G3_CKPT_SHARD_FORMAT, state->iteration);
    if (st == G3_OK) st = g3_ckpt_attr_write_str(f, "kind", kind == G3_CKPT_MODEL ? "model" : "optim");
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "tp", l->tp);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "pp", l->pp);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "dp", kind == G3_CKPT_MODEL ? 0 : l->dp);
    for (int i = 0; st == G3_OK && i < state->ntensors; i++) {
        const g3_ckpt_stensor_t *s = &state->tensors[i];
        g3_ckpt_tensor_t t = s->desc;

        t.name = s->name;
        if (t.kind != kind || !g3_ckpt_rank_writes(l, &t))
            continue;
        for (int k = 0; st == G3_OK && k < s->npieces; k++) {
            g3_ckpt_mrow_t *r;
            if (nrows == cap) {
                g3_ckpt_mrow_t *a;
                cap = cap ? 2 * cap : 64;
                a = realloc(rows, cap * sizeof(*a));
                if (a == NULL) {
                    st = G3_ERR_NO_MEMORY;
                    break;
                }
                rows = a;
            }
            r = &rows[nrows++];
            memset(r, 0, sizeof(*r));
            snprintf(r->tensor, sizeof(r->tensor), "%s", s->name);
            r->piece = k;
            snprintf(r->dtype, sizeof(r->dtype), "%s", g3_ckpt_dtype_name(t.dtype));
            r->kind = t.kind;
            r->ndim = t.ndim;
            memcpy(r->shape, t.shape, sizeof(r->shape));
            memcpy(r->offset, s->pieces[k].offset, sizeof(r->offset));
            memcpy(r->extent, s->pieces[k].extent, sizeof(r->extent));
            r->tp_dim = t.rule.tp_dim;
            r->tp_parts = t.rule.tp_parts;
            r->pp_layer = t.rule.pp_layer;
            r->pad_dim = t.rule.pad_dim;
            r->unpadded = t.rule.pad_dim >= 0 ? t.rule.unpadded : 0;
            g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_PACK, &t0);
            /* g3_ckpt_write_piece charges its own time */
            st = g3_ckpt_write_piece(f, path, s, k, &s->pieces[k], &r->crc32c);
            t0 = g3_ckpt_timing_now(g3_ckpt_tm);
        }
    }
    if (st == G3_OK)
        st = g3_ckpt_table_write(f, "manifest", G3_CKPT_TABLE_MANIFEST, rows, nrows, path);
    free(rows);
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_PACK, &t0);
    if (g3_ckpt_h5_close_written(f, path, st != G3_OK) != G3_OK)
        st = G3_ERR_IO;
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_WRITE, &t0);
    if (st == G3_OK)
        st = g3_ckpt_fsync_path(path, 0);
    g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_FSYNC, &t0);
    if (st == G3_OK)
        g3_hook_fault("shard-written");
    return st;
}

static int g3_ckpt_state_has_optim(const g3_ckpt_state_t *state)
{
    for (int i = 0; i < state->ntensors; i++)
        if (state->tensors[i].desc.kind == G3_CKPT_OPTIM)
            return 1;
    return 0;
}

g3_status_t g3_ckpt_write_shards(const char *dir, const g3_ckpt_state_t *state,
                                 const g3_ckpt_save_opts_t *opts)
{
    char tmp[PATH_MAX];
    struct stat sb;
    g3_status_t st = G3_OK;

    g3_ckpt_tmp_path(dir, state->iteration, g3_ckpt_save_id(opts), tmp, sizeof(tmp));
    if (stat(tmp, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        g3_error("temporary checkpoint directory %s does not exist: rank 0 must run g3_ckpt_save_prepare (with the same save id) before the shards are written",
                 tmp);
        return G3_ERR_INVALID_ARG;
    }
    g3_ckpt_tm = opts ? opts->timing : NULL;
    if (state->layout.dp == 0)
        st = g3_ckpt_write_shard(tmp, state, G3_CKPT_MODEL);
    if (st == G3_OK && g3_ckpt_state_has_optim(state) && !(opts && opts->no_save_optim))
        st = g3_ckpt_write_shard(tmp, state, G3_CKPT_OPTIM);
    g3_ckpt_tm = NULL;
    return st;
}

/* ---- phase 3: commit (rank 0) ------------------------------------------------------ */

typedef struct {          /* a piece as found in a shard manifest */
    int            file;
    g3_ckpt_mrow_t row;
    int            tensor;
} g3_ckpt_found_t;

/* Tensor-name hash table: open addressing over indices into trows. */
typedef struct {
    int   *slot;
    size_t cap;
} g3_ckpt_name_map_t;

static int g3_ckpt_map_find(const g3_ckpt_name_map_t *m, const g3_ckpt_trow_t *trows,
                            const char *name, size_t *pos_p)
{
    size_t i = g3_ckpt_name_hash(name) & (m->cap - 1);
    while (m->slot[i] >= 0) {
        if (strcmp(trows[m->slot[i]].name, name) == 0) {
            *pos_p = i;
            return m->slot[i];
        }
        i = (i + 1) & (m->cap - 1);
    }
    *pos_p = i;
    return -1;
}

static int g3_ckpt_cmp_found(const void *a, const void *b)
{
    const g3_ckpt_found_t *x = a, *y = b;
    if (x->tensor != y->tensor)
        return x->tensor < y->tensor ? -1 : 1;
    for (int k = 0; k < G3_CKPT_MAX_DIMS; k++)
        if (x->row.offset[k] != y->row.offset[k])
            return x->row.offset[k] < y->row.offset[k] ? -1 : 1;
    return 0;
}

/* Check that the pieces [0, n) of a tensor tile its shape (sorted by offset). */
static g3_status_t g3_ckpt_commit_check_tiling(const g3_ckpt_trow_t *t, const g3_ckpt_found_t *p,
                                               size_t n, const g3_ckpt_frow_t *files)
{
    int64_t total = 0, want = g3_ckpt_box_volume(t->ndim, t->shape);

    for (size_t i = 0; i < n; i++) {
        total += g3_ckpt_box_volume(t->ndim, p[i].row.extent);
        for (size_t j = i + 1;
             j < n && p[j].row.offset[0] < p[i].row.offset[0] + p[i].row.extent[0]; j++) {
            int64_t io[G3_CKPT_MAX_DIMS], ie[G3_CKPT_MAX_DIMS];
            if (g3_ckpt_box_intersect(t->ndim, p[i].row.offset, p[i].row.extent, p[j].row.offset,
                                      p[j].row.extent, io, ie)) {
                g3_error("tensor %s: pieces in %s and %s overlap at offset [%lld, %lld, ...]: two ranks saved the same elements (check the sharding rule / writer ranks)",
                         t->name, files[p[i].file].name, files[p[j].file].name, (long long)io[0],
                         (long long)(t->ndim > 1 ? io[1] : 0));
                return G3_ERR_INTERNAL;
            }
        }
    }
    if (total != want) {
        g3_error("tensor %s: the saved pieces cover %lld of its %lld elements: some rank did not save its part",
                 t->name, (long long)total, (long long)want);
        return G3_ERR_INTERNAL;
    }
    return G3_OK;
}

static g3_status_t g3_ckpt_read_manifest(const char *path, const char *fname,
                                         const g3_ckpt_frow_t *fr, const g3_ckpt_state_t *state,
                                         g3_ckpt_mrow_t **rows_p, size_t *n_p)
{
    const g3_ckpt_layout_t *l = &state->layout;
    hid_t f;
    char kind[16];
    int32_t tp = -1, pp = -1, dp = -1, tps = 0, pps = 0, dps = 0;
    int64_t it = -1;
    g3_status_t st = g3_ckpt_h5_open(path, &f);

    (void)fname;
    if (st != G3_OK) {
        if (st == G3_ERR_NOT_FOUND)
            g3_error("shard file %s is missing: rank (tp %d, pp %d, dp %d) did not write it", path,
                     fr->tp, fr->pp, fr->dp);
        return st;
    }
    st = g3_ckpt_check_format(f, path, G3_CKPT_SHARD_FORMAT, NULL);
    if (st == G3_OK) {
        g3_ckpt_attr_read_str(f, "kind", kind, sizeof(kind));
        g3_ckpt_attr_read_i32(f, "tp", &tp);
        g3_ckpt_attr_read_i32(f, "pp", &pp);
        g3_ckpt_attr_read_i32(f, "dp", &dp);
        g3_ckpt_attr_read_i32(f, "tensor_model_parallel_size", &tps);
        g3_ckpt_attr_read_i32(f, "pipeline_model_parallel_size", &pps);
        g3_ckpt_attr_read_i32(f, "data_parallel_size", &dps);
        g3_ckpt_attr_read_i64(f, "iteration", &it, 1);
        if (tp != fr->tp || pp != fr->pp || dp != fr->dp || tps != l->tp_size ||
            pps != l->pp_size || dps != l->dp_size || it != state->iteration ||
            strcmp(kind, fr->kind == G3_CKPT_MODEL ? "model" : "optim") != 0) {
            g3_error("shard file %s was written by another save (it says %s, tp %d, pp %d, dp %d of %dx%dx%d, iteration %lld; expected tp %d, pp %d, dp %d of %dx%dx%d, iteration %lld)",
                     path, kind, tp, pp, dp, tps, pps, dps, (long long)it, fr->tp, fr->pp, fr->dp,
                     l->tp_size, l->pp_size, l->dp_size, (long long)state->iteration);
            st = G3_ERR_FORMAT;
        }
    }
    if (st == G3_OK)
        st = g3_ckpt_table_read(f, "manifest", G3_CKPT_TABLE_MANIFEST, (void **)rows_p, n_p, path);
    H5Fclose(f);
    return st;
}

static g3_status_t g3_ckpt_write_state_group(hid_t idx, const g3_ckpt_state_t *state,
                                             const char *path)
{
    hid_t gcpl = g3_ckpt_h5_gcpl();
    hid_t g = H5Gcreate2(idx, "state", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    g3_status_t st = G3_OK;
    char msg[512];

    H5Pclose(gcpl);
    if (g < 0)
        return G3_ERR_IO;
    for (int i = 0; st == G3_OK && i < state->nkv; i++) {
        const g3_ckpt_kv_t *kv = &state->kv[i];
        hid_t space, ftype, mtype, d;
        size_t bytes;
        int own_type = 0;

        if (kv->type == G3_CKPT_KV_STR) {
            space = H5Screate(H5S_SCALAR);
            ftype = mtype = H5Tcopy(H5T_C_S1);
            H5Tset_size(ftype, (size_t)kv->n + 1);
            H5Tset_strpad(ftype, H5T_STR_NULLTERM);
            own_type = 1;
            bytes = (size_t)kv->n;
        } else {
            hsize_t dims = (hsize_t)kv->n;
            space = H5Screate_simple(1, &dims, NULL);
            ftype = kv->type == G3_CKPT_KV_I64 ? H5T_STD_I64LE : H5T_IEEE_F64LE;
            mtype = kv->type == G3_CKPT_KV_I64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
            bytes = (size_t)kv->n * 8;
        }
        d = H5Dcreate2(g, kv->key, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 ||
            (bytes > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, kv->values) < 0) ||
            g3_ckpt_attr_write_u32(d, "crc32c", g3_crc32c(0, kv->values, bytes)) != G3_OK) {
            g3_error("cannot write state/%s to %s: %s", kv->key, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
            st = G3_ERR_IO;
        }
        if (d >= 0)
            H5Dclose(d);
        if (own_type)
            H5Tclose(ftype);
        H5Sclose(space);
    }
    H5Gclose(g);
    return st;
}

static g3_status_t g3_ckpt_write_vds(hid_t idx, const g3_ckpt_trow_t *t, const g3_ckpt_found_t *p,
                                     size_t n, const g3_ckpt_frow_t *files, const char *path)
{
    hsize_t dims[G3_CKPT_MAX_DIMS];
    hid_t vspace, dcpl, lcpl, d;
    g3_ckpt_dtype_t dtype;
    g3_status_t st = G3_OK;
    char msg[512];

    g3_ckpt_dtype_parse(t->dtype, &dtype);
    for (int k = 0; k < t->ndim; k++)
        dims[k] = (hsize_t)t->shape[k];
    vspace = H5Screate_simple(t->ndim, dims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    for (size_t i = 0; i < n; i++) {
        hsize_t off[G3_CKPT_MAX_DIMS], ext[G3_CKPT_MAX_DIMS];
        char dname[G3_CKPT_NAME_MAX + 16];
        hid_t sspace;

        for (int k = 0; k < t->ndim; k++) {
            off[k] = (hsize_t)p[i].row.offset[k];
            ext[k] = (hsize_t)p[i].row.extent[k];
        }
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, off, NULL, ext, NULL);
        sspace = H5Screate_simple(t->ndim, ext, NULL);
        g3_ckpt_piece_dataset(t->name, p[i].row.piece, dname, sizeof(dname));
        if (H5Pset_virtual(dcpl, vspace, files[p[i].file].name, dname, sspace) < 0)
            st = G3_ERR_IO;
        H5Sclose(sspace);
    }
    H5Sselect_all(vspace);
    lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (st == G3_OK && g3_ckpt_h5_parents(idx, t->name) != G3_OK)
        st = G3_ERR_IO;
    d = st == G3_OK
            ? H5Dcreate2(idx, t->name, g3_ckpt_h5_type(dtype), vspace, lcpl, dcpl, H5P_DEFAULT)
            : -1;
    if (d < 0 || g3_ckpt_attr_write_str(d, "dtype", t->dtype) != G3_OK) {
        g3_error("cannot write the virtual dataset of %s in %s: %s", t->name, path,
                 g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        st = G3_ERR_IO;
    }
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(vspace);
    return st;
}

/* Writes the index's /config: the run's configuration text and its CRC32C.
 * RET: G3_OK, or G3_ERR_IO (the caller logs HDF5's message). */
static g3_status_t g3_ckpt_index_write_config(hid_t f, const g3_ckpt_state_t *state)
{
    g3_status_t st;
    const char *cfg = state->config ? state->config : "";
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    hid_t d;
    H5Tset_size(t, strlen(cfg) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    d = H5Dcreate2(f, "config", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, cfg) < 0)
        st = G3_ERR_IO;
    else
        st = g3_ckpt_attr_write_u32(d, "crc32c", g3_crc32c(0, cfg, strlen(cfg) + 1));
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(s);
    H5Tclose(t);
    return st;
}

/* Writes the index's /layout: TP, PP, DP sizes, the layer count and each stage's first
 * layer.  RET: G3_OK, or G3_ERR_IO (the caller logs HDF5's message). */
static g3_status_t g3_ckpt_index_write_layout(hid_t f, const g3_ckpt_state_t *state)
{
    const g3_ckpt_layout_t *l = &state->layout;
    g3_status_t st = G3_OK;
    int64_t *bounds;
    hid_t gcpl = g3_ckpt_h5_gcpl();
    hid_t g = H5Gcreate2(f, "layout", H5P_DEFAULT, gcpl, H5P_DEFAULT);

    H5Pclose(gcpl);
    bounds = malloc((size_t)(l->pp_size + 1) * sizeof(int64_t));
    if (g < 0 || bounds == NULL)
        st = G3_ERR_IO;
    for (int s = 0; st == G3_OK && s <= l->pp_size; s++)
        bounds[s] = state->stage_first[s];
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(g, "tensor_model_parallel_size", l->tp_size);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(g, "pipeline_model_parallel_size", l->pp_size);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(g, "data_parallel_size", l->dp_size);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(g, "num_layers", l->num_layers);
    if (st == G3_OK)
        st = g3_ckpt_attr_write_i64(g, "pipeline_stage_first_layer", bounds, l->pp_size + 1);
    if (g >= 0)
        H5Gclose(g);
    free(bounds);
    return st;
}

/* The rows of the index's /pieces table from the pieces found in the shards.
 * OUT: *prows_p (calloc'ed, nfound rows).  RET: G3_OK, or G3_ERR_NO_MEMORY. */
static g3_status_t g3_ckpt_index_prows(const g3_ckpt_found_t *found, size_t nfound,
                                       g3_ckpt_prow_t **prows_p)
{
    g3_ckpt_prow_t *prows = calloc(nfound ? nfound : 1, sizeof(*prows));
    if (prows == NULL)
        return G3_ERR_NO_MEMORY;
    for (size_t i = 0; i < nfound; i++) {
        g3_ckpt_dtype_t dt;
        prows[i].tensor = found[i].tensor;
        prows[i].file = found[i].file;
        prows[i].piece = found[i].row.piece;
        memcpy(prows[i].offset, found[i].row.offset, sizeof(prows[i].offset));
        memcpy(prows[i].extent, found[i].row.extent, sizeof(prows[i].extent));
        g3_ckpt_dtype_parse(found[i].row.dtype, &dt);
        prows[i].nbytes = g3_ckpt_box_volume(found[i].row.ndim, found[i].row.extent) *
                          (int64_t)g3_ckpt_dtype_size(dt);
        prows[i].crc32c = found[i].row.crc32c;
    }
    *prows_p = prows;
    return G3_OK;
}

static g3_status_t g3_ckpt_write_index(const char *tmp, const g3_ckpt_state_t *state,
                                       const g3_ckpt_frow_t *files, size_t nfiles,
                                       const g3_ckpt_trow_t *trows, size_t ntensors,
                                       const g3_ckpt_found_t *found, size_t nfound)
{
    char path[PATH_MAX + 80], created[32], writer[64];
    g3_ckpt_prow_t *prows = NULL;
    time_t now = time(NULL);
    struct tm tmv;
    hid_t f;
    g3_status_t st;

    snprintf(path, sizeof(path), "%s/%s", tmp, G3_CKPT_INDEX_NAME);
    st = g3_ckpt_h5_create(path, 1, &f);
    if (st != G3_OK)
        return st;
    gmtime_r(&now, &tmv);
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tmv);
    snprintf(writer, sizeof(writer), "%s %s", PACKAGE_NAME, PACKAGE_VERSION);
    st = g3_ckpt_attr_write_str(f, "format", G3_CKPT_FORMAT);
    if (st == G3_OK) st = g3_ckpt_attr_write_i32(f, "format_version", G3_CKPT_FORMAT_VERSION);
    if (st == G3_OK) st = g3_ckpt_attr_write_i64(f, "iteration", &state->iteration, 1);
    if (st == G3_OK) st = g3_ckpt_attr_write_i64(f, "consumed_samples", &state->consumed_samples, 1);
    if (st == G3_OK) st = g3_ckpt_attr_write_i64(f, "consumed_tokens", &state->consumed_tokens, 1);
    for (int i = 0; st == G3_OK && i < G3_CKPT_NPROGRESS; i++) {   /* format version 2 */
        const int64_t v[G3_CKPT_NPROGRESS] = { state->iteration, state->consumed_samples,
                                               state->consumed_tokens };
        char name[64];
        snprintf(name, sizeof(name), "%s_crc32c", g3_ckpt_progress_names[i]);
        st = g3_ckpt_attr_write_u32(f, name, g3_ckpt_progress_crc(v[i]));
    }
    if (st == G3_OK) st = g3_ckpt_attr_write_str(f, "writer", writer);
    if (st == G3_OK) st = g3_ckpt_attr_write_str(f, "created", created);
    if (st == G3_OK)
        st = g3_ckpt_index_write_config(f, state);
    if (st == G3_OK)
        st = g3_ckpt_index_write_layout(f, state);
    if (st != G3_OK) {
        char msg[512];
        g3_error("cannot write the metadata of %s: %s", path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
    }
    if (st == G3_OK)
        st = g3_ckpt_write_state_group(f, state, path);
    if (st == G3_OK)
        st = g3_ckpt_index_prows(found, nfound, &prows);
    if (st == G3_OK) st = g3_ckpt_table_write(f, "files", G3_CKPT_TABLE_FILES, files, nfiles, path);
    if (st == G3_OK) st = g3_ckpt_table_write(f, "tensors", G3_CKPT_TABLE_TENSORS, trows, ntensors, path);
    if (st == G3_OK) st = g3_ckpt_table_write(f, "pieces", G3_CKPT_TABLE_PIECES, prows, nfound, path);
    free(prows);
    for (size_t t = 0; st == G3_OK && t < ntensors; t++)
        st = g3_ckpt_write_vds(f, &trows[t], &found[trows[t].first_piece], (size_t)trows[t].npieces,
                               files, path);
    if (g3_ckpt_h5_close_written(f, path, st != G3_OK) != G3_OK)
        st = G3_ERR_IO;
    if (st == G3_OK)
        st = g3_ckpt_index_seal(path);
    if (st == G3_OK)
        st = g3_ckpt_fsync_path(path, 0);
    return st;
}

static g3_status_t g3_ckpt_commit_rename(const char *dir, const char *tmp, const char *final)
{
    if (rename(tmp, final) == 0)
        return g3_ckpt_fsync_path(dir, 1);
    if (errno == ENOTEMPTY || errno == EEXIST) {
        /* The same iteration was saved before: swap atomically, then remove the
         * old copy, which now carries the temporary name. */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            g3_status_t st = g3_ckpt_fsync_path(dir, 1);
            g3_info("replaced the existing checkpoint %s", final);
            if (st == G3_OK)
                st = g3_ckpt_rmdir_flat(tmp);
            return st;
        }
        g3_error("checkpoint %s already exists and this file system cannot swap directories atomically (%s): remove it or save to another directory",
                 final, strerror(errno));
        return G3_ERR_IO;
    }
    g3_error("cannot rename %s to %s: %s", tmp, final, strerror(errno));
    return G3_ERR_IO;
}

/* Point DIR/latest at iteration (a new file renamed over it).  Errors logged once, saying that
 * the checkpoint ckpt (committed) is not the one latest names. */
static g3_status_t g3_ckpt_write_latest(const char *dir, int64_t iteration, const char *save_id,
                                        const char *ckpt)
{
    char tmp[PATH_MAX], final[PATH_MAX], line[64];
    int fd;
    size_t len;

    snprintf(tmp, sizeof(tmp), "%s/latest.tmp-%s", dir, save_id);
    snprintf(final, sizeof(final), "%s/latest", dir);
    len = (size_t)snprintf(line, sizeof(line), "iter_%07lld\n", (long long)iteration);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || write(fd, line, len) != (ssize_t)len || fsync(fd) != 0) {
        g3_error("checkpoint %s is complete but %s/latest was not updated: cannot write %s: %s; it still names the previous checkpoint; load the new one with --load %s",
                 ckpt, dir, tmp, strerror(errno), ckpt);
        if (fd >= 0)
            close(fd);
        return G3_ERR_IO;
    }
    close(fd);
    g3_hook_fault("latest-written");
    if (rename(tmp, final) != 0) {
        g3_error("checkpoint %s is complete but %s/latest was not updated: cannot rename %s to %s: %s; it still names the previous checkpoint; load the new one with --load %s",
                 ckpt, dir, tmp, final, strerror(errno), ckpt);
        return G3_ERR_IO;
    }
    return g3_ckpt_fsync_path(dir, 1);
}

/* The index's tables, gathered by a commit from the shard manifests. */
typedef struct {
    g3_ckpt_frow_t  *files;       /* (nfiles) one row per shard file                       */
    size_t           nfiles;
    g3_ckpt_found_t *found;       /* (nfound) every piece; sorted by tensor, then offset   */
    size_t           nfound, capfound;
    g3_ckpt_trow_t  *trows;       /* (ntensors) one row per distinct tensor name           */
    size_t           ntensors, captensors;
} g3_ckpt_commit_tables_t;

static void g3_ckpt_commit_tables_free(g3_ckpt_commit_tables_t *c)
{
    free(c->found);
    free(c->trows);
    free(c->files);
}

/* The shard files the layout writes: model shards per (pp, tp), optimizer shards per
 * (pp, tp, dp) when with_optim. */
static g3_status_t g3_ckpt_commit_list_files(const g3_ckpt_layout_t *l, int with_optim,
                                             g3_ckpt_commit_tables_t *c)
{
    size_t fi = 0;

    c->nfiles = (size_t)l->tp_size * l->pp_size * (with_optim ? 1 + (size_t)l->dp_size : 1);
    c->files = calloc(c->nfiles, sizeof(*c->files));
    if (c->files == NULL)
        return G3_ERR_NO_MEMORY;
    for (int kind = 0; kind < (with_optim ? 2 : 1); kind++)
        for (int pp = 0; pp < l->pp_size; pp++)
            for (int tp = 0; tp < l->tp_size; tp++)
                for (int dp = 0; dp < (kind == G3_CKPT_MODEL ? 1 : l->dp_size); dp++) {
                    g3_ckpt_frow_t *fr = &c->files[fi++];
                    g3_ckpt_shard_name((g3_ckpt_kind_t)kind, tp, pp, dp, fr->name,
                                       sizeof(fr->name));
                    fr->kind = kind;
                    fr->tp = tp;
                    fr->pp = pp;
                    fr->dp = dp;
                }
    return G3_OK;
}

/* Every shard's manifest, read from tmp into c->found (and each file's piece count and bytes). */
static g3_status_t g3_ckpt_commit_gather_manifests(const char *tmp, const g3_ckpt_state_t *state,
                                                   g3_ckpt_commit_tables_t *c)
{
    for (size_t i = 0; i < c->nfiles; i++) {
        char path[PATH_MAX + 80];
        g3_ckpt_mrow_t *rows = NULL;
        size_t n = 0;
        g3_status_t st;

        snprintf(path, sizeof(path), "%s/%s", tmp, c->files[i].name);
        st = g3_ckpt_read_manifest(path, c->files[i].name, &c->files[i], state, &rows, &n);
        if (st != G3_OK)
            return st;
        c->files[i].npieces = (int64_t)n;
        if (c->nfound + n > c->capfound) {
            g3_ckpt_found_t *a;
            c->capfound = (c->nfound + n) * 2 + 64;
            a = realloc(c->found, c->capfound * sizeof(*a));
            if (a == NULL) {
                free(rows);
                return G3_ERR_NO_MEMORY;
            }
            c->found = a;
        }
        for (size_t j = 0; j < n; j++) {
            g3_ckpt_found_t *pc = &c->found[c->nfound++];
            g3_ckpt_dtype_t dt;
            pc->file = (int)i;
            pc->row = rows[j];
            pc->row.tensor[G3_CKPT_NAME_MAX - 1] = '\0';
            pc->tensor = -1;
            if (g3_ckpt_dtype_parse(rows[j].dtype, &dt) == G3_OK)
                c->files[i].nbytes += g3_ckpt_box_volume(rows[j].ndim, rows[j].extent) *
                                      (int64_t)g3_ckpt_dtype_size(dt);
        }
        free(rows);
    }
    return G3_OK;
}

/* A new /tensors row described by the piece p, whose name is not in the table yet.
 * RET: G3_OK with *t_p its row. */
static g3_status_t g3_ckpt_commit_add_tensor(g3_ckpt_commit_tables_t *c, const g3_ckpt_found_t *p,
                                             int *t_p)
{
    const g3_ckpt_mrow_t *r = &p->row;
    const char *slash = strchr(r->tensor, '/');
    size_t first = slash ? (size_t)(slash - r->tensor) : strlen(r->tensor);
    g3_ckpt_trow_t *tr;
    g3_ckpt_dtype_t dt;
    g3_status_t st = G3_OK;

    for (int k = 0; g3_ckpt_reserved_names[k]; k++)
        if (strlen(g3_ckpt_reserved_names[k]) == first &&
            strncmp(r->tensor, g3_ckpt_reserved_names[k], first) == 0) {
            g3_error("tensor name %s uses the reserved index name '%s': put tensors in a group such as model/ or optim/",
                     r->tensor, g3_ckpt_reserved_names[k]);
            st = G3_ERR_INVALID_ARG;
        }
    if (g3_ckpt_dtype_parse(r->dtype, &dt) != G3_OK || r->ndim < 1 || r->ndim > G3_CKPT_MAX_DIMS) {
        g3_error("shard %s: tensor %s has a bad dtype '%s' or %d dimensions", c->files[p->file].name,
                 r->tensor, r->dtype, r->ndim);
        st = G3_ERR_FORMAT;
    }
    if (st != G3_OK)
        return st;
    if (c->ntensors == c->captensors) {
        g3_ckpt_trow_t *a;
        c->captensors = c->captensors ? 2 * c->captensors : 64;
        a = realloc(c->trows, c->captensors * sizeof(*a));
        if (a == NULL)
            return G3_ERR_NO_MEMORY;
        c->trows = a;
    }
    tr = &c->trows[c->ntensors];
    memset(tr, 0, sizeof(*tr));
    snprintf(tr->name, sizeof(tr->name), "%s", r->tensor);
    snprintf(tr->dtype, sizeof(tr->dtype), "%s", r->dtype);
    tr->kind = r->kind;
    tr->ndim = r->ndim;
    memcpy(tr->shape, r->shape, sizeof(tr->shape));
    tr->tp_dim = r->tp_dim;
    tr->tp_parts = r->tp_parts;
    tr->pp_layer = r->pp_layer;
    tr->pad_dim = r->pad_dim;
    tr->unpadded = r->unpadded;
    *t_p = (int)c->ntensors++;
    return G3_OK;
}

/* RET: 1 when a manifest row describes the tensor as its /tensors row does. */
static int g3_ckpt_commit_same_tensor(const g3_ckpt_trow_t *tr, const g3_ckpt_mrow_t *r)
{
    return strcmp(tr->dtype, r->dtype) == 0 && tr->ndim == r->ndim && tr->kind == r->kind &&
           memcmp(tr->shape, r->shape, sizeof(tr->shape)) == 0 && tr->tp_dim == r->tp_dim &&
           tr->tp_parts == r->tp_parts && tr->pp_layer == r->pp_layer &&
           tr->pad_dim == r->pad_dim && tr->unpadded == r->unpadded;
}

/* One /tensors row per distinct name; descriptions must agree. */
static g3_status_t g3_ckpt_commit_describe_tensors(g3_ckpt_commit_tables_t *c)
{
    g3_ckpt_name_map_t map = { NULL, 64 };
    g3_status_t st = G3_OK;

    while (map.cap < 2 * c->nfound + 2)
        map.cap *= 2;
    map.slot = malloc(map.cap * sizeof(int));
    if (map.slot == NULL)
        return G3_ERR_NO_MEMORY;
    memset(map.slot, 0xff, map.cap * sizeof(int));
    for (size_t i = 0; st == G3_OK && i < c->nfound; i++) {
        const g3_ckpt_mrow_t *r = &c->found[i].row;
        size_t pos;
        int t = g3_ckpt_map_find(&map, c->trows, r->tensor, &pos);

        if (t < 0) {
            st = g3_ckpt_commit_add_tensor(c, &c->found[i], &t);
            if (st == G3_OK)
                map.slot[pos] = t;
        } else if (!g3_ckpt_commit_same_tensor(&c->trows[t], r)) {
            g3_error("tensor %s is described differently in %s than in an earlier shard (dtype, shape or sharding rule): the ranks disagree about the model",
                     r->tensor, c->files[c->found[i].file].name);
            st = G3_ERR_INTERNAL;
        }
        if (st == G3_OK)
            c->found[i].tensor = t;
    }
    free(map.slot);
    return st;
}

/* Sort the pieces by tensor, then offset; point each tensor row at its pieces and
 * check that they tile it. */
static g3_status_t g3_ckpt_commit_tile(g3_ckpt_commit_tables_t *c)
{
    g3_status_t st = G3_OK;

    if (c->nfound > 1)
        qsort(c->found, c->nfound, sizeof(*c->found), g3_ckpt_cmp_found);
    for (size_t i = 0, t = 0; st == G3_OK && t < c->ntensors; t++) {
        size_t j = i;
        while (j < c->nfound && c->found[j].tensor == (int)t)
            j++;
        c->trows[t].first_piece = (int64_t)i;
        c->trows[t].npieces = (int64_t)(j - i);
        st = g3_ckpt_commit_check_tiling(&c->trows[t], &c->found[i], j - i, c->files);
        i = j;
    }
    return st;
}

/* The index into tmp, then tmp made durable. */
static g3_status_t g3_ckpt_commit_write_index(const char *tmp, const g3_ckpt_state_t *state,
                                              const g3_ckpt_commit_tables_t *c)
{
    g3_status_t st =
        g3_ckpt_write_index(tmp, state, c->files, c->nfiles, c->trows, c->ntensors, c->found,
                            c->nfound);

    if (st != G3_OK)
        return st;
    g3_hook_fault("index-written");
    return g3_ckpt_fsync_path(tmp, 1);
}

/* After the commit: say what was saved, and prune with --keep-last.  The checkpoint
 * is committed: a failed prune is worth a warning only. */
static void g3_ckpt_commit_report_prune(const char *dir, const char *final,
                                        const g3_ckpt_commit_tables_t *c,
                                        const g3_ckpt_save_opts_t *opts, const char *sid)
{
    int64_t bytes = 0;

    for (size_t i = 0; i < c->nfiles; i++)
        bytes += c->files[i].nbytes;
    g3_info("saved checkpoint %s (%zu tensors, %zu files, %.1f MB)", final, c->ntensors, c->nfiles,
            (double)bytes / 1e6);
    if (opts && opts->keep_last > 0 && g3_ckpt_prune(dir, opts->keep_last, sid) != G3_OK)
        g3_warn("--keep-last %d: pruning old checkpoints in %s failed; they are still there",
                opts->keep_last, dir);
}

static g3_status_t g3_ckpt_commit_untimed(const char *dir, const g3_ckpt_state_t *state,
                                          const g3_ckpt_save_opts_t *opts);

g3_status_t g3_ckpt_commit(const char *dir, const g3_ckpt_state_t *state,
                           const g3_ckpt_save_opts_t *opts)
{
    g3_ckpt_timing_t *tm = opts ? opts->timing : NULL;
    double t0 = g3_ckpt_timing_now(tm);
    g3_status_t st = g3_ckpt_commit_untimed(dir, state, opts);

    g3_ckpt_timing_add(tm, G3_CKPT_T_COMMIT, &t0);
    return st;
}

static g3_status_t g3_ckpt_commit_untimed(const char *dir, const g3_ckpt_state_t *state,
                                          const g3_ckpt_save_opts_t *opts)
{
    const char *sid = g3_ckpt_save_id(opts);
    char tmp[PATH_MAX], final[PATH_MAX];
    int with_optim = g3_ckpt_state_has_optim(state) && !(opts && opts->no_save_optim);
    g3_ckpt_commit_tables_t c;
    g3_status_t st;

    memset(&c, 0, sizeof(c));
    g3_ckpt_tmp_path(dir, state->iteration, sid, tmp, sizeof(tmp));
    g3_ckpt_iter_path(dir, state->iteration, final, sizeof(final));
    st = g3_ckpt_commit_list_files(&state->layout, with_optim, &c);
    if (st != G3_OK)
        return st;
    st = g3_ckpt_commit_gather_manifests(tmp, state, &c);
    if (st == G3_OK)
        st = g3_ckpt_commit_describe_tensors(&c);
    if (st == G3_OK)
        st = g3_ckpt_commit_tile(&c);
    if (st == G3_OK)
        st = g3_ckpt_commit_write_index(tmp, state, &c);
    if (st == G3_OK)
        st = g3_ckpt_commit_rename(dir, tmp, final);
    if (st != G3_OK) {
        g3_error("checkpoint %s was not committed; %s/latest still names the previous checkpoint", final, dir);
        goto err_free_tables;
    }
    g3_hook_fault("renamed");
    st = g3_ckpt_write_latest(dir, state->iteration, sid, final);
    if (st != G3_OK)
        goto err_free_tables;
    g3_hook_fault("latest-renamed");
    g3_ckpt_commit_report_prune(dir, final, &c, opts, sid);

err_free_tables:
    g3_ckpt_commit_tables_free(&c);
    return st;
}

/* ---- the whole save ---------------------------------------------------------------- */

static g3_status_t g3_ckpt_all_ok(const g3_ckpt_comm_t *comm, int *ok)
{
    if (comm == NULL || comm->allreduce_min_int == NULL)
        return G3_OK;
    return comm->allreduce_min_int(comm->ctx, ok);
}

g3_status_t g3_ckpt_save(const char *dir, const g3_ckpt_state_t *state,
                         const g3_ckpt_save_opts_t *opts, const g3_ckpt_comm_t *comm)
{
    const g3_ckpt_layout_t *l = &state->layout;
    int root = l->tp == 0 && l->pp == 0 && l->dp == 0;
    int ok = 1;
    g3_status_t st = G3_OK, cst;

    if (root)
        st = g3_ckpt_save_prepare(dir, state->iteration, opts);
    ok = st == G3_OK;
    if ((cst = g3_ckpt_all_ok(comm, &ok)) != G3_OK)
        return cst;
    if (!ok)
        return st != G3_OK ? st : G3_ERR_IO;
    st = g3_ckpt_write_shards(dir, state, opts);
    ok = st == G3_OK;
    if ((cst = g3_ckpt_all_ok(comm, &ok)) != G3_OK)
        return cst;
    if (!ok) {
        if (root)
            g3_ckpt_save_abort(dir, state->iteration, opts);
        return st != G3_OK ? st : G3_ERR_IO;
    }
    if (root) {
        st = g3_ckpt_commit(dir, state, opts);
        if (st != G3_OK)
            g3_ckpt_save_abort(dir, state->iteration, opts);
    }
    ok = st == G3_OK;
    if ((cst = g3_ckpt_all_ok(comm, &ok)) != G3_OK)
        return cst;
    return ok ? G3_OK : (st != G3_OK ? st : G3_ERR_IO);
}
