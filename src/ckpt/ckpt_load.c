/* Loading by global offsets: each rank asks for the boxes its state describes
 * and gets them from whichever shard files hold them, whatever layout wrote
 * them.  Every piece read is verified against its CRC-32C. */
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/crc32c.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"

/* The load's phases go to the caller's g3_ckpt_timing_t (opts->timing, through g3_ckpt_tm). */
static double g3_ckpt_load_timing_now(void)
{
    return g3_ckpt_timing_now(g3_ckpt_tm);
}

static void g3_ckpt_load_timing_add(g3_ckpt_phase_t phase, double *t0)
{
    g3_ckpt_timing_add(g3_ckpt_tm, phase, t0);
}

#define G3_CKPT_LOAD_BLOCK_BYTES (64u << 20)   /* streaming buffer for partial reads */

const char *const G3_CKPT_MODEL_KEYS[] = {
    "num-layers", "hidden-size", "num-attention-heads", "ffn-hidden-size",
    "max-position-embeddings", NULL
};

/* ---- opening an index ------------------------------------------------------------- */

void g3_ckpt_reader_close(g3_ckpt_reader_t *r)
{
    if (r == NULL)
        return;
    G3_FREE_ALL(r->config, r->stage_first, r->files, r->tensors, r->pieces);
    for (int i = 0; i < r->nkv; i++) {
        free(r->kv[i].key);
        free(r->kv[i].values);
    }
    free(r->kv);
    free(r->map);
    free(r);
}

typedef struct {
    g3_ckpt_reader_t *r;
    const char       *path;
    g3_status_t       st;
} g3_ckpt_kv_iter_t;

static herr_t g3_ckpt_read_state_entry(hid_t g, const char *name, const H5L_info_t *info,
                                       void *data)
{
    g3_ckpt_kv_iter_t *it = data;
    g3_ckpt_reader_t *r = it->r;
    g3_ckpt_kv_t kv = { NULL, G3_CKPT_KV_I64, 0, NULL };
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT), t, s;
    H5T_class_t cls;
    size_t bytes = 0;
    uint32_t crc = 0;
    herr_t rc = -1;

    (void)info;
    if (d < 0)
        goto err_report;
    t = H5Dget_type(d);
    cls = H5Tget_class(t);
    s = H5Dget_space(d);
    kv.n = (int)H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    if (cls == H5T_STRING && H5Tis_variable_str(t) <= 0) {
        size_t sz = H5Tget_size(t);
        kv.type = G3_CKPT_KV_STR;
        kv.values = calloc(sz + 1, 1);
        if (kv.values)
            rc = H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, kv.values);
        kv.n = (int)strlen(kv.values ? kv.values : "");
        bytes = (size_t)kv.n;
    } else if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
        kv.type = cls == H5T_INTEGER ? G3_CKPT_KV_I64 : G3_CKPT_KV_F64;
        kv.values = malloc((size_t)kv.n * 8 + 1);
        if (kv.values && kv.n > 0)
            rc = H5Dread(d, cls == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, H5S_ALL,
                         H5S_ALL, H5P_DEFAULT, kv.values);
        else if (kv.values)
            rc = 0;
        bytes = (size_t)kv.n * 8;
    }
    H5Tclose(t);
    if (rc < 0 || g3_ckpt_attr_read_u32(d, "crc32c", &crc) != G3_OK)
        goto err_close;
    H5Dclose(d);
    if (g3_crc32c(0, kv.values, bytes) != crc) {
        g3_error("%s: state/%s fails its checksum (stored %08x, computed %08x): the index is corrupt; load another checkpoint (--load-fallback)",
                 it->path, name, crc, g3_crc32c(0, kv.values, bytes));
        free(kv.values);
        it->st = G3_ERR_FORMAT;
        return -1;
    }
    kv.key = strdup(name);
    {
        g3_ckpt_kv_t *a = realloc(r->kv, (size_t)(r->nkv + 1) * sizeof(*a));
        if (a == NULL || kv.key == NULL) {
            free(kv.key);
            free(kv.values);
            it->st = G3_ERR_NO_MEMORY;
            return -1;
        }
        r->kv = a;
        r->kv[r->nkv++] = kv;
    }
    return 0;

err_close:
    H5Dclose(d);
err_report:
    free(kv.values);
    g3_error("%s: cannot read state/%s (an unsupported type or a damaged file)", it->path, name);
    it->st = G3_ERR_FORMAT;
    return -1;
}

/* Read the index's progress attributes (iteration, consumed samples and tokens) into r and,
 * from format version 2, check each against its checksum.  RET: G3_ERR_FORMAT (logged). */
static g3_status_t g3_ckpt_read_progress(hid_t f, g3_ckpt_reader_t *r, const char *path)
{
    if (g3_ckpt_attr_read_i64(f, "iteration", &r->iteration, 1) != G3_OK ||
        g3_ckpt_attr_read_i64(f, "consumed_samples", &r->consumed_samples, 1) != G3_OK ||
        g3_ckpt_attr_read_i64(f, "consumed_tokens", &r->consumed_tokens, 1) != G3_OK) {
        g3_error("%s lacks its iteration / consumed_samples / consumed_tokens attributes: the index is damaged", path);
        return G3_ERR_FORMAT;
    }
    /* Version 2 checksums each of them (version 1 did not: nothing to check). */
    for (int i = 0; r->version >= 2 && i < G3_CKPT_NPROGRESS; i++) {
        const int64_t v[G3_CKPT_NPROGRESS] = { r->iteration, r->consumed_samples,
                                               r->consumed_tokens };
        char name[64];
        uint32_t want = 0;
        snprintf(name, sizeof(name), "%s_crc32c", g3_ckpt_progress_names[i]);
        if (g3_ckpt_attr_read_u32(f, name, &want) != G3_OK) {
            g3_error("%s lacks the %s attribute (format version %d): the index is damaged; load another checkpoint (--load-fallback)",
                     path, name, r->version);
            return G3_ERR_FORMAT;
        }
        if (want != g3_ckpt_progress_crc(v[i])) {
            g3_error(
                "%s: root attribute %s (%lld) fails its checksum (stored crc32c %08x, computed %08x): the index was altered; load another checkpoint (--load-fallback)",
                path, g3_ckpt_progress_names[i], (long long)v[i], want, g3_ckpt_progress_crc(v[i]));
            return G3_ERR_FORMAT;
        }
    }
    return G3_OK;
}

/* Read the index's /config dataset (a fixed-length string, checksummed) into r->config.
 * RET: G3_ERR_FORMAT (logged). */
static g3_status_t g3_ckpt_read_config(hid_t f, g3_ckpt_reader_t *r, const char *path)
{
    g3_status_t st = G3_OK;
    char msg[512];
    hid_t d = H5Dopen2(f, "config", H5P_DEFAULT), t;
    size_t sz;

    if (d < 0) {
        g3_error("%s has no /config dataset: the index is damaged", path);
        return G3_ERR_FORMAT;
    }
    if (g3_ckpt_dataset_check_crc(d, "config", path) != G3_OK) {
        H5Dclose(d);
        return G3_ERR_FORMAT;
    }
    t = H5Dget_type(d);
    sz = H5Tget_size(t);
    r->config = calloc(sz + 1, 1);
    if (r->config == NULL || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) > 0 ||
        H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->config) < 0) {
        g3_error("%s: cannot read /config: %s", path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        st = G3_ERR_FORMAT;
    }
    H5Tclose(t);
    H5Dclose(d);
    return st;
}

/* Read the index's /layout group (the parallel sizes, the layer count and each pipeline
 * stage's first layer) into r.  RET: G3_ERR_FORMAT (logged). */
static g3_status_t g3_ckpt_read_layout(hid_t f, g3_ckpt_reader_t *r, const char *path)
{
    int32_t v32;
    int64_t *bounds = NULL;
    g3_status_t st;
    hid_t g = H5Gopen2(f, "layout", H5P_DEFAULT);

    if (g < 0) {
        g3_error("%s has no /layout group: the index is damaged", path);
        return G3_ERR_FORMAT;
    }
    st = g3_ckpt_attr_read_i32(g, "tensor_model_parallel_size", &v32);
    r->tp_size = v32;
    if (st == G3_OK) st = g3_ckpt_attr_read_i32(g, "pipeline_model_parallel_size", &v32);
    r->pp_size = v32;
    if (st == G3_OK) st = g3_ckpt_attr_read_i32(g, "data_parallel_size", &v32);
    r->dp_size = v32;
    if (st == G3_OK) st = g3_ckpt_attr_read_i32(g, "num_layers", &v32);
    r->num_layers = v32;
    if (st == G3_OK && (r->pp_size < 1 || r->pp_size > 1 << 20 || r->tp_size < 1 || r->dp_size < 1))
        st = G3_ERR_FORMAT;
    if (st == G3_OK) {
        bounds = malloc((size_t)(r->pp_size + 1) * sizeof(int64_t));
        r->stage_first = malloc((size_t)(r->pp_size + 1) * sizeof(int));
        if (bounds == NULL || r->stage_first == NULL)
            st = G3_ERR_NO_MEMORY;
        else
            st = g3_ckpt_attr_read_i64(g, "pipeline_stage_first_layer", bounds, r->pp_size + 1);
        for (int s = 0; st == G3_OK && s <= r->pp_size; s++)
            r->stage_first[s] = (int)bounds[s];
    }
    free(bounds);
    H5Gclose(g);
    if (st != G3_OK) {
        g3_error("%s: the /layout attributes are missing or damaged", path);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* Read the index's /files, /tensors and /pieces tables into r and check that they agree
 * (file names plain, dtypes and ranks known, every reference in range) before anything
 * trusts them.  RET: G3_ERR_FORMAT (logged), the table reader's errors. */
static g3_status_t g3_ckpt_read_tables(hid_t f, g3_ckpt_reader_t *r, const char *path)
{
    void *rows;
    size_t n;
    g3_status_t st = g3_ckpt_table_read(f, "files", G3_CKPT_TABLE_FILES, &rows, &n, path);

    if (st != G3_OK)
        return st;
    r->files = rows;
    r->nfiles = n;
    st = g3_ckpt_table_read(f, "tensors", G3_CKPT_TABLE_TENSORS, &rows, &n, path);
    if (st != G3_OK)
        return st;
    r->tensors = rows;
    r->ntensors = n;
    st = g3_ckpt_table_read(f, "pieces", G3_CKPT_TABLE_PIECES, &rows, &n, path);
    if (st != G3_OK)
        return st;
    r->pieces = rows;
    r->npieces = n;
    /* The tables must be consistent before anything trusts them. */
    for (size_t i = 0; i < r->nfiles; i++) {
        r->files[i].name[sizeof(r->files[i].name) - 1] = '\0';
        if (strchr(r->files[i].name, '/') != NULL || r->files[i].name[0] == '\0' ||
            r->files[i].name[0] == '.')
            st = G3_ERR_FORMAT;
    }
    for (size_t i = 0; st == G3_OK && i < r->ntensors; i++) {
        g3_ckpt_trow_t *t = &r->tensors[i];
        g3_ckpt_dtype_t dt;
        t->name[sizeof(t->name) - 1] = '\0';
        t->dtype[sizeof(t->dtype) - 1] = '\0';
        if (g3_ckpt_dtype_parse(t->dtype, &dt) != G3_OK || t->ndim < 1 ||
            t->ndim > G3_CKPT_MAX_DIMS || t->first_piece < 0 || t->npieces < 0 ||
            (size_t)(t->first_piece + t->npieces) > r->npieces)
            st = G3_ERR_FORMAT;
    }
    for (size_t i = 0; st == G3_OK && i < r->npieces; i++) {
        const g3_ckpt_prow_t *p = &r->pieces[i];
        if (p->tensor < 0 || (size_t)p->tensor >= r->ntensors || p->file < 0 ||
            (size_t)p->file >= r->nfiles)
            st = G3_ERR_FORMAT;
    }
    if (st != G3_OK)
        g3_error("%s: the /files, /tensors and /pieces tables contradict each other: the index is damaged", path);
    return st;
}

/* Read the index's optional /state group (the trainer's key/value entries) into r.
 * RET: G3_ERR_FORMAT or an entry reader's error (logged). */
static g3_status_t g3_ckpt_read_state(hid_t f, g3_ckpt_reader_t *r, const char *path)
{
    g3_status_t st = G3_OK;

    if (H5Lexists(f, "state", H5P_DEFAULT) > 0) {
        g3_ckpt_kv_iter_t it = { r, path, G3_OK };
        hid_t g = H5Gopen2(f, "state", H5P_DEFAULT);
        if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, g3_ckpt_read_state_entry,
                                &it) < 0) {
            if (it.st == G3_OK)
                g3_error("%s: cannot read /state", path);
            st = it.st != G3_OK ? it.st : G3_ERR_FORMAT;
        }
        if (g >= 0)
            H5Gclose(g);
    }
    return st;
}

static g3_status_t g3_ckpt_read_index(g3_ckpt_reader_t *r, const char *path)
{
    hid_t f;
    int sealed = 0;
    g3_status_t st = g3_ckpt_index_open(path, &f, &sealed);

    if (st != G3_OK)
        return st;
    st = g3_ckpt_check_format(f, path, G3_CKPT_FORMAT, &r->version);
    if (st != G3_OK)
        goto err_close_file;
    if (r->version >= 3 && !sealed) {
        g3_error("%s says format version %d but lacks the checksum block that version writes at its start: the index is damaged; load another checkpoint (--load-fallback)",
                 path, r->version);
        st = G3_ERR_FORMAT;
        goto err_close_file;
    }
    if ((st = g3_ckpt_read_progress(f, r, path)) != G3_OK
        || (st = g3_ckpt_read_config(f, r, path)) != G3_OK
        || (st = g3_ckpt_read_layout(f, r, path)) != G3_OK
        || (st = g3_ckpt_read_tables(f, r, path)) != G3_OK)
        goto err_close_file;
    st = g3_ckpt_read_state(f, r, path);

err_close_file:
    H5Fclose(f);
    return st;
}

g3_status_t g3_ckpt_reader_open(const char *path, g3_ckpt_reader_t **reader_p)
{
    g3_ckpt_reader_t *r;
    char index[PATH_MAX + 16];
    struct stat sb;
    g3_status_t st;

    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return G3_ERR_NO_MEMORY;
    snprintf(index, sizeof(index), "%s/%s", path, G3_CKPT_INDEX_NAME);
    if (stat(index, &sb) == 0) {
        snprintf(r->dir, sizeof(r->dir), "%s", path);
    } else {
        int64_t it;
        st = g3_ckpt_latest(path, &it);
        if (st == G3_ERR_NOT_FOUND) {
            int64_t *iters = NULL;
            int n = 0;
            if (stat(path, &sb) != 0) {
                g3_error("checkpoint directory %s: %s", path, strerror(errno));
            } else if (g3_ckpt_list(path, &iters, &n) == G3_OK && n > 0) {
                char names[160] = "", newest[PATH_MAX];
                size_t len = 0;
                for (int i = n - 1; i >= 0 && i >= n - 4; i--)
                    len += (size_t)snprintf(names + len, sizeof(names) - len, "%siter_%07lld", len ? ", " : "",
                                            (long long)iters[i]);
                g3_ckpt_iter_path(path, iters[n - 1], newest, sizeof(newest));
                g3_error("%s has no 'latest' file but holds %d committed checkpoint%s (%s%s): resume from the newest with --load %s (or --load-fallback), or restore the file: echo iter_%07lld > %s/latest",
                         path, n, n > 1 ? "s" : "", names, n > 4 ? ", ..." : "", newest, (long long)iters[n - 1], path);
            } else {
                g3_error("%s holds no checkpoint: it has neither a 'latest' file nor an %s (pass the directory given to --save, or an iter_NNNNNNN directory in it)",
                         path, G3_CKPT_INDEX_NAME);
            }
            free(iters);
        }
        if (st != G3_OK) {
            free(r);
            return st;
        }
        g3_ckpt_iter_path(path, it, r->dir, sizeof(r->dir));
        snprintf(index, sizeof(index), "%s/%s", r->dir, G3_CKPT_INDEX_NAME);
        if (stat(r->dir, &sb) != 0) {
            g3_error("%s/latest names %s, which does not exist (removed by hand?); load with --load-fallback to use an older checkpoint",
                     path, r->dir);
            free(r);
            return G3_ERR_NOT_FOUND;
        }
    }
    st = g3_ckpt_read_index(r, index);
    if (st == G3_OK) {
        /* An iter_ directory holds the checkpoint of its name's iteration: two swapped or
         * renamed directories would resume one iteration's counters with another's weights. */
        char base[PATH_MAX];
        size_t len;
        int64_t named;
        snprintf(base, sizeof(base), "%s", r->dir);
        for (len = strlen(base); len > 1 && base[len - 1] == '/'; len--)
            base[len - 1] = '\0';
        if (g3_ckpt_parse_iter_name(strrchr(base, '/') ? strrchr(base, '/') + 1 : base, &named) &&
            named != r->iteration) {
            g3_error("checkpoint %s holds iteration %lld (its index.h5) but its directory is named for iteration %lld: checkpoint directories were renamed or swapped; give them back their names (iter_%07lld) or load another checkpoint (--load-fallback)",
                     r->dir, (long long)r->iteration, (long long)named, (long long)r->iteration);
            st = G3_ERR_FORMAT;
        }
    }
    if (st != G3_OK) {
        g3_ckpt_reader_close(r);
        return st;
    }
    *reader_p = r;
    return G3_OK;
}

/* ---- accessors --------------------------------------------------------------------- */

const char *g3_ckpt_reader_path(const g3_ckpt_reader_t *r) { return r->dir; }
int64_t g3_ckpt_reader_iteration(const g3_ckpt_reader_t *r) { return r->iteration; }
int g3_ckpt_reader_version(const g3_ckpt_reader_t *r) { return r->version; }
int64_t g3_ckpt_reader_consumed_samples(const g3_ckpt_reader_t *r) { return r->consumed_samples; }
int64_t g3_ckpt_reader_consumed_tokens(const g3_ckpt_reader_t *r) { return r->consumed_tokens; }
const char *g3_ckpt_reader_config(const g3_ckpt_reader_t *r) { return r->config ? r->config : ""; }

int g3_ckpt_reader_has_optim(const g3_ckpt_reader_t *r)
{
    for (size_t i = 0; i < r->ntensors; i++)
        if (r->tensors[i].kind == G3_CKPT_OPTIM)
            return 1;
    return 0;
}

void g3_ckpt_reader_layout(const g3_ckpt_reader_t *r, g3_ckpt_layout_t *l)
{
    memset(l, 0, sizeof(*l));
    l->tp_size = r->tp_size;
    l->pp_size = r->pp_size;
    l->dp_size = r->dp_size;
    l->num_layers = r->num_layers;
    l->stage_first_layer = r->stage_first;
}

int g3_ckpt_reader_tensor_count(const g3_ckpt_reader_t *r) { return (int)r->ntensors; }

void g3_ckpt_reader_tensor(const g3_ckpt_reader_t *r, int i, g3_ckpt_tensor_t *t)
{
    const g3_ckpt_trow_t *row = &r->tensors[i];
    memset(t, 0, sizeof(*t));
    t->name = row->name;
    t->kind = (g3_ckpt_kind_t)row->kind;
    g3_ckpt_dtype_parse(row->dtype, &t->dtype);
    t->ndim = row->ndim;
    memcpy(t->shape, row->shape, sizeof(t->shape));
    for (int k = t->ndim; k < G3_CKPT_MAX_DIMS; k++)
        t->shape[k] = 1;
    t->rule.tp_dim = row->tp_dim;
    t->rule.tp_parts = row->tp_parts;
    t->rule.pp_layer = row->pp_layer;
    t->rule.pad_dim = row->pad_dim;
    t->rule.unpadded = row->unpadded;
}

static const g3_ckpt_kv_t *g3_ckpt_kv_find(const g3_ckpt_reader_t *r, const char *key)
{
    for (int i = 0; i < r->nkv; i++)
        if (strcmp(r->kv[i].key, key) == 0)
            return &r->kv[i];
    return NULL;
}

int g3_ckpt_reader_has(g3_ckpt_reader_t *r, const char *key)
{
    return g3_ckpt_kv_find(r, key) != NULL;
}

int g3_ckpt_reader_state_count(const g3_ckpt_reader_t *r)
{
    return r->nkv;
}

const char *g3_ckpt_reader_state_text(const g3_ckpt_reader_t *r, int i, char *buf, size_t size)
{
    const g3_ckpt_kv_t *kv;
    size_t len;

    if (i < 0 || i >= r->nkv || size < 16)
        return NULL;
    kv = &r->kv[i];
    len = (size_t)snprintf(buf, size, "%s = ", kv->key);
    if (kv->type == G3_CKPT_KV_STR) {
        snprintf(buf + len, size - len, "\"%s\"", (const char *)kv->values);
    } else {
        for (int k = 0; k < kv->n && len + 24 < size; k++) {
            if (kv->type == G3_CKPT_KV_I64)
                len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "",
                                        (long long)((const int64_t *)kv->values)[k]);
            else
                len += (size_t)snprintf(buf + len, size - len, "%s%.17g", k ? ", " : "",
                                        ((const double *)kv->values)[k]);
            if (k + 1 < kv->n && len + 24 >= size) {
                snprintf(buf + len, size - len, ", ...");
                break;
            }
        }
    }
    return buf;
}

static g3_status_t g3_ckpt_kv_get(g3_ckpt_reader_t *r, const char *key, g3_ckpt_kv_type_t type,
                                  int n, const g3_ckpt_kv_t **kv_p)
{
    static const char *const tn[] = { "int64", "float64", "string" };
    const g3_ckpt_kv_t *kv = g3_ckpt_kv_find(r, key);

    if (kv == NULL) {
        g3_error("checkpoint %s has no state entry '%s' (saved by an older gpt3d or another program?)",
                 r->dir, key);
        return G3_ERR_NOT_FOUND;
    }
    if (kv->type != type || (type != G3_CKPT_KV_STR && kv->n != n)) {
        g3_error("checkpoint %s: state entry '%s' is %d x %s, expected %d x %s", r->dir, key, kv->n,
                 tn[kv->type], n, tn[type]);
        return G3_ERR_FORMAT;
    }
    *kv_p = kv;
    return G3_OK;
}

/* A numeric entry (int64 or float64: 8 bytes a value) of n values, copied to values. */
static g3_status_t g3_ckpt_kv_get_num(g3_ckpt_reader_t *r, const char *key,
                                      g3_ckpt_kv_type_t type, int n, void *values)
{
    const g3_ckpt_kv_t *kv;
    g3_status_t st = g3_ckpt_kv_get(r, key, type, n, &kv);

    _Static_assert(sizeof(int64_t) == 8 && sizeof(double) == 8, "8-byte state values");
    if (st == G3_OK)
        memcpy(values, kv->values, (size_t)n * 8);
    return st;
}

g3_status_t g3_ckpt_reader_get_i64(g3_ckpt_reader_t *r, const char *key, int64_t *values, int n)
{
    return g3_ckpt_kv_get_num(r, key, G3_CKPT_KV_I64, n, values);
}

g3_status_t g3_ckpt_reader_get_f64(g3_ckpt_reader_t *r, const char *key, double *values, int n)
{
    return g3_ckpt_kv_get_num(r, key, G3_CKPT_KV_F64, n, values);
}

g3_status_t g3_ckpt_reader_get_str(g3_ckpt_reader_t *r, const char *key, char *buf, size_t size)
{
    const g3_ckpt_kv_t *kv;
    g3_status_t st = g3_ckpt_kv_get(r, key, G3_CKPT_KV_STR, 0, &kv);
    if (st != G3_OK)
        return st;
    if ((size_t)kv->n + 1 > size) {
        g3_error("checkpoint %s: state entry '%s' (%d bytes) does not fit a %zu-byte buffer", r->dir, key,
                 kv->n, size);
        return G3_ERR_INVALID_ARG;
    }
    memcpy(buf, kv->values, (size_t)kv->n + 1);
    return G3_OK;
}

/* ---- loading tensors ---------------------------------------------------------------- */

typedef struct {            /* one (stored piece, wanted piece) intersection */
    int              file;  /* row in r->files (the sort key: one open per file) */
    size_t           src;   /* row in r->pieces                             */
    g3_ckpt_dtype_t  sdt;
    g3_ckpt_dtype_t  ddt;
    int              ndim;
    const g3_ckpt_piece_t *dst;
    int64_t          io[G3_CKPT_MAX_DIMS], ie[G3_CKPT_MAX_DIMS];
    const char      *tensor;
} g3_ckpt_work_t;

static int g3_ckpt_cmp_work(const void *a, const void *b)
{
    const g3_ckpt_work_t *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

static int g3_ckpt_dtype_pair_ok(g3_ckpt_dtype_t a, g3_ckpt_dtype_t b)
{
    return a == b || (a == G3_CKPT_F32 && b == G3_CKPT_BF16) ||
           (a == G3_CKPT_BF16 && b == G3_CKPT_F32);
}

static void g3_ckpt_shape_str(int ndim, const int64_t *s, char *buf, size_t size)
{
    size_t len = 0;
    len += (size_t)snprintf(buf + len, size - len, "(");
    for (int k = 0; k < ndim && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "", (long long)s[k]);
    if (len < size)
        snprintf(buf + len, size - len, ")");
}

/* The stored tensor that state tensor s loads from, checked against it: present, of a
 * convertible dtype, of the same shape (a padded dimension may differ).  OUT: *row_p, *sdt
 * (its stored dtype).  RET: G3_OK, G3_ERR_NOT_FOUND, G3_ERR_INVALID_ARG (logged). */
static g3_status_t g3_ckpt_plan_match(g3_ckpt_reader_t *r, const g3_ckpt_stensor_t *s,
                                      const g3_ckpt_trow_t **row_p, g3_ckpt_dtype_t *sdt)
{
    const g3_ckpt_tensor_t *t = &s->desc;
    const g3_ckpt_trow_t *row;
    int ti, same;
    char a[96], b[96];

    ti = g3_ckpt_reader_find(r, s->name);
    if (ti < 0) {
        if (t->kind == G3_CKPT_OPTIM)
            g3_error("checkpoint %s has no optimizer tensor %s (saved with --no-save-optim?): pass --no-load-optim to start the optimizer fresh",
                     r->dir, s->name);
        else
            g3_error("checkpoint %s has no tensor %s: it was saved from a different model", r->dir, s->name);
        return G3_ERR_NOT_FOUND;
    }
    row = &r->tensors[ti];
    g3_ckpt_dtype_parse(row->dtype, sdt);
    if (!g3_ckpt_dtype_pair_ok(*sdt, t->dtype)) {
        g3_error("checkpoint %s: tensor %s is stored as %s but the run wants %s (only f32 <-> bf16 is converted)",
                 r->dir, s->name, row->dtype, g3_ckpt_dtype_name(t->dtype));
        return G3_ERR_INVALID_ARG;
    }
    same = row->ndim == t->ndim;
    for (int k = 0; same && k < t->ndim; k++) {
        if (row->shape[k] == t->shape[k])
            continue;
        /* a padded dimension may differ as long as the real rows agree */
        if (!(k == t->rule.pad_dim && k == row->pad_dim && row->unpadded == t->rule.unpadded))
            same = 0;
    }
    if (!same) {
        g3_ckpt_shape_str(row->ndim, row->shape, a, sizeof(a));
        g3_ckpt_shape_str(t->ndim, t->shape, b, sizeof(b));
        g3_error("checkpoint %s: tensor %s has shape %s but this run's model has %s: the model configuration differs from the checkpoint's",
                 r->dir, s->name, a, b);
        return G3_ERR_INVALID_ARG;
    }
    *row_p = row;
    return G3_OK;
}

/* Appends to *work_p (nwork items, room for cap) one read per stored piece of row that
 * overlaps piece d of state tensor s, and checks that they cover all of d that the stored
 * tensor has.  RET: G3_OK, G3_ERR_FORMAT (logged), G3_ERR_NO_MEMORY (*work_p kept). */
static g3_status_t g3_ckpt_plan_piece(const g3_ckpt_reader_t *r, const g3_ckpt_stensor_t *s,
                                      const g3_ckpt_trow_t *row, g3_ckpt_dtype_t sdt,
                                      const g3_ckpt_piece_t *d, g3_ckpt_work_t **work_p,
                                      size_t *nwork, size_t *cap)
{
    const g3_ckpt_tensor_t *t = &s->desc;
    int64_t want = 1, got = 0;

    /* elements of this piece that exist in the checkpoint */
    for (int k = 0; k < t->ndim; k++) {
        int64_t hi = d->offset[k] + d->extent[k];
        if (hi > row->shape[k])
            hi = row->shape[k];
        want *= hi > d->offset[k] ? hi - d->offset[k] : 0;
    }
    for (int64_t p = row->first_piece; p < row->first_piece + row->npieces; p++) {
        const g3_ckpt_prow_t *sp = &r->pieces[p];
        g3_ckpt_work_t w;
        if (!g3_ckpt_box_intersect(t->ndim, sp->offset, sp->extent, d->offset, d->extent, w.io,
                                   w.ie))
            continue;
        w.src = (size_t)p;
        w.file = sp->file;
        w.sdt = sdt;
        w.ddt = t->dtype;
        w.ndim = t->ndim;
        w.dst = d;
        w.tensor = s->name;
        got += g3_ckpt_box_volume(t->ndim, w.ie);
        if (*nwork == *cap) {
            g3_ckpt_work_t *n2;
            size_t grown = *cap ? 2 * *cap : 256;
            n2 = realloc(*work_p, grown * sizeof(*n2));
            if (n2 == NULL)
                return G3_ERR_NO_MEMORY;
            *work_p = n2;
            *cap = grown;
        }
        (*work_p)[(*nwork)++] = w;
    }
    if (got != want) {
        g3_error("checkpoint %s: tensor %s: the stored pieces cover %lld of the %lld elements requested at offset [%lld, ...]: the checkpoint is incomplete; run 'gpt3d ckpt verify'",
                 r->dir, s->name, (long long)got, (long long)want, (long long)d->offset[0]);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* RET: 1 when row ti of r's index (-1: absent) holds the tensor t at its dtype and shape:
 * what an optional tensor (ckpt.h) is loaded from. */
static int g3_ckpt_optional_fits(const g3_ckpt_reader_t *r, int ti, const g3_ckpt_tensor_t *t)
{
    const g3_ckpt_trow_t *row = ti >= 0 ? &r->tensors[ti] : NULL;
    g3_ckpt_dtype_t sdt;

    if (!row || g3_ckpt_dtype_parse(row->dtype, &sdt) != G3_OK || sdt != t->dtype ||
        row->ndim != t->ndim)
        return 0;
    for (int k = 0; k < t->ndim; k++)
        if (row->shape[k] != t->shape[k])
            return 0;
    return 1;
}

/* Match the state's tensors to the index and list the work.  No data is read. */
static g3_status_t g3_ckpt_plan_load(g3_ckpt_reader_t *r, g3_ckpt_state_t *state,
                                     const g3_ckpt_load_opts_t *opts, g3_ckpt_work_t **work_p,
                                     size_t *nwork_p)
{
    g3_ckpt_work_t *work = NULL;
    size_t nwork = 0, cap = 0;
    g3_status_t st = G3_OK, pst;
    int skip_optim =
        opts && (opts->no_load_optim || (opts->optim_optional && !g3_ckpt_reader_has_optim(r)));

    for (int i = 0; i < state->ntensors; i++) {
        g3_ckpt_stensor_t *s = &state->tensors[i];
        const g3_ckpt_trow_t *row;
        g3_ckpt_dtype_t sdt;

        if (s->npieces == 0 || (s->desc.kind == G3_CKPT_OPTIM && skip_optim))
            continue;
        if (s->desc.optional &&
            !g3_ckpt_optional_fits(r, g3_ckpt_reader_find(r, s->name), &s->desc))
            continue;   /* the caller keeps its values (ckpt.h) */
        if ((pst = g3_ckpt_plan_match(r, s, &row, &sdt)) != G3_OK) {
            st = pst;
            continue;
        }
        for (int j = 0; j < s->npieces; j++) {
            pst = g3_ckpt_plan_piece(r, s, row, sdt, &s->pieces[j], &work, &nwork, &cap);
            if (pst == G3_ERR_NO_MEMORY) {
                free(work);
                return G3_ERR_NO_MEMORY;
            }
            if (pst != G3_OK)
                st = pst;
        }
    }
    if (st != G3_OK) {
        free(work);
        return st;
    }
    if (nwork > 1)
        qsort(work, nwork, sizeof(*work), g3_ckpt_cmp_work);
    *work_p = work;
    *nwork_p = nwork;
    return G3_OK;
}

/* Raw reads go in 2 MiB blocks: large enough for the kernel's read-ahead, small
 * enough that the checksum thread finds each block still in the CPU's cache
 * (8 and 16 MiB measured slower, 1 MiB no better). */
#define G3_CKPT_RAW_BLOCK_BYTES (2u << 20)

/* Where a piece's bytes lie in its file, when HDF5 would hand them over
 * unchanged: a contiguous, unfiltered dataset of exactly nbytes, in a file
 * opened with the default (sec2) driver.  Reading it with its own type does no
 * conversion, so pread of those bytes is what H5Dread returns, without HDF5's
 * per-call work.  RET: 1 with *fd_p and *addr_p set, 0 when H5Dread must do it. */
static int g3_ckpt_raw_extent(hid_t f, hid_t d, size_t nbytes, int *fd_p, off_t *addr_p)
{
    haddr_t addr = H5Dget_offset(d);
    hid_t dcpl, fapl;
    void *handle = NULL;
    int ok;

    if (addr == HADDR_UNDEF || H5Dget_storage_size(d) != (hsize_t)nbytes)
        return 0;
    dcpl = H5Dget_create_plist(d);
    ok = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0 &&
         H5Pget_external_count(dcpl) == 0;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    fapl = ok ? H5Fget_access_plist(f) : -1;
    ok = ok && fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (!ok || H5Fget_vfd_handle(f, H5P_DEFAULT, &handle) < 0 || handle == NULL)
        return 0;
    *fd_p = *(int *)handle;
    *addr_p = (off_t)addr;
    return 1;
}

/* The checksum of a raw read, computed by a second thread that follows the
 * reads block by block: the kernel's copy into buf and the CRC-32C of what is
 * already there then run side by side instead of one after the other. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    const char     *buf;
    size_t          ready;      /* bytes of buf read so far (under mu)        */
    int             stop;       /* no more reads will come (under mu)         */
    uint32_t        crc;        /* over buf[0, checked); the thread's own     */
} g3_ckpt_crc_follow_t;

static void *g3_ckpt_crc_follow_main(void *arg)
{
    g3_ckpt_crc_follow_t *c = arg;
    size_t checked = 0;

    for (;;) {
        size_t ready;
        int stop;
        pthread_mutex_lock(&c->mu);
        while (c->ready == checked && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        ready = c->ready;
        stop = c->stop;
        pthread_mutex_unlock(&c->mu);
        if (ready > checked) {
            c->crc = g3_crc32c(c->crc, c->buf + checked, ready - checked);
            checked = ready;
        } else if (stop) {
            return NULL;
        }
    }
}

static void g3_ckpt_crc_follow_post(g3_ckpt_crc_follow_t *c, size_t ready, int stop)
{
    pthread_mutex_lock(&c->mu);
    c->ready = ready;
    c->stop = stop;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Read nbytes at addr of fd into buf in G3_CKPT_RAW_BLOCK_BYTES blocks, folding them
 * into *crc_p (if not NULL): in a second thread when there are several blocks,
 * else after the read.  RET: 0, or errno (EIO for end of file: the file is
 * truncated). */
static int g3_ckpt_raw_read(int fd, off_t addr, size_t nbytes, void *buf, uint32_t *crc_p)
{
    g3_ckpt_crc_follow_t c;
    pthread_t th;
    int threaded = 0, e = 0;
    size_t done = 0;
    double t0 = g3_ckpt_load_timing_now();

    if (crc_p && nbytes > G3_CKPT_RAW_BLOCK_BYTES) {
        memset(&c, 0, sizeof(c));
        c.buf = buf;
        c.crc = *crc_p;
        threaded = pthread_mutex_init(&c.mu, NULL) == 0;
        if (threaded && pthread_cond_init(&c.cv, NULL) != 0) {
            pthread_mutex_destroy(&c.mu);
            threaded = 0;
        }
        if (threaded && pthread_create(&th, NULL, g3_ckpt_crc_follow_main, &c) != 0) {
            pthread_cond_destroy(&c.cv);
            pthread_mutex_destroy(&c.mu);
            threaded = 0;
        }
    }
    while (e == 0 && done < nbytes) {
        size_t want = nbytes - done < G3_CKPT_RAW_BLOCK_BYTES ? nbytes - done
                                                              : G3_CKPT_RAW_BLOCK_BYTES;
        ssize_t n = pread(fd, (char *)buf + done, want, addr + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO;
            break;
        }
        done += (size_t)n;
        if (threaded)
            g3_ckpt_crc_follow_post(&c, done, 0);
    }
    g3_ckpt_load_timing_add(G3_CKPT_T_READ, &t0);
    if (threaded) {
        g3_ckpt_crc_follow_post(&c, done, 1);
        pthread_join(th, NULL);
        pthread_cond_destroy(&c.cv);
        pthread_mutex_destroy(&c.mu);
        *crc_p = c.crc;
    } else if (crc_p && e == 0) {
        *crc_p = g3_crc32c(*crc_p, buf, nbytes);
    }
    g3_ckpt_load_timing_add(G3_CKPT_T_VERIFY, &t0);
    return e;
}

/* One stored piece being read: its dataset, open, and where its bytes lie. */
typedef struct {
    const g3_ckpt_prow_t *sp;           /* its row in r->pieces                     */
    const g3_ckpt_trow_t *t;            /* its tensor's row in r->tensors           */
    const char *fpath;                  /* the shard file                           */
    char        dname[G3_CKPT_NAME_MAX + 16];
    hid_t       d, fspace;
    hid_t       type;                   /* the stored dtype's HDF5 type             */
    size_t      esz;                    /* its element size                         */
    size_t      nbytes;                 /* the whole piece                          */
    hsize_t     dims[G3_CKPT_MAX_DIMS];
    int         raw, fd;                /* raw: pread of fd at addr, not H5Dread    */
    off_t       addr;
    uint32_t   *crc;                    /* running CRC-32C; NULL when not verifying */
} g3_ckpt_piece_read_t;

/* The one message for a piece that cannot be read.  e: the errno of a raw read
 * (EIO: the file ends early), or 0 after an HDF5 read, whose error stack says why. */
static void g3_ckpt_piece_read_error(const g3_ckpt_piece_read_t *p, int e)
{
    char msg[512];
    const char *why = e == 0     ? g3_ckpt_h5_errmsg(msg, sizeof(msg))
                      : e == EIO ? "the file ends before the dataset's data"
                                 : strerror(e);

    g3_error("cannot read %s from %s: %s (truncated or damaged file?)", p->dname, p->fpath, why);
}

/* Open the piece's dataset and check it against the index.  RET: G3_OK with p->d
 * and p->fspace open (the caller closes them), else both closed. */
static g3_status_t g3_ckpt_piece_open(g3_ckpt_reader_t *r, hid_t f, g3_ckpt_piece_read_t *p)
{
    int ndim = p->t->ndim, ok;
    char msg[512];

    g3_ckpt_piece_dataset(p->t->name, p->sp->piece, p->dname, sizeof(p->dname));
    if (!g3_ckpt_link_exists(f, p->dname)) {
        g3_error("%s has no dataset %s (tensor %s): the shard does not match the index; run 'gpt3d ckpt verify'",
                 p->fpath, p->dname, p->t->name);
        return G3_ERR_FORMAT;
    }
    p->d = H5Dopen2(f, p->dname, H5P_DEFAULT);
    if (p->d < 0) {
        g3_error("cannot open %s in %s: %s", p->dname, p->fpath, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        return G3_ERR_FORMAT;
    }
    p->fspace = H5Dget_space(p->d);
    ok = g3_ckpt_h5_dset_matches(p->d, p->type, ndim, p->sp->extent);
    if (ok)   /* the rank matched: the dimensions fit p->dims */
        H5Sget_simple_extent_dims(p->fspace, p->dims, NULL);
    if (!ok) {
        g3_error("dataset %s in %s has another shape or type than the index says (%s): the file is foreign or damaged",
                 p->dname, p->fpath, p->t->dtype);
        goto err_close_dataset;
    }
    if (g3_ckpt_check_piece(r, p->sp, p->d, p->fpath, p->dname) != 0)
        goto err_close_dataset;
    return G3_OK;

err_close_dataset:
    H5Sclose(p->fspace);
    H5Dclose(p->d);
    return G3_ERR_FORMAT;
}

/* Read path 1: the whole piece into dst with pread, its bytes lying unchanged in the file. */
static g3_status_t g3_ckpt_piece_read_raw(const g3_ckpt_piece_read_t *p, void *dst, double *t0)
{
    int e = g3_ckpt_raw_read(p->fd, p->addr, p->nbytes, dst, p->crc);

    if (e != 0) {
        g3_ckpt_piece_read_error(p, e);
        return G3_ERR_FORMAT;
    }
    *t0 = g3_ckpt_load_timing_now();
    return G3_OK;
}

/* Read path 2: the whole piece into dst with HDF5. */
static g3_status_t g3_ckpt_piece_read_h5(const g3_ckpt_piece_read_t *p, void *dst, double *t0)
{
    if (g3_ckpt_dataset_io(p->d, p->type, p->t->ndim, p->sp->extent, p->esz, dst, 0, p->crc) !=
        G3_OK) {
        g3_ckpt_piece_read_error(p, 0);
        return G3_ERR_FORMAT;
    }
    *t0 = g3_ckpt_load_timing_now();   /* g3_ckpt_dataset_io charged the read and the checksum */
    return G3_OK;
}

/* Rows [r0, r0 + nr) of the piece (row_elems elements each) into buf, folded into the CRC. */
static g3_status_t g3_ckpt_piece_read_rows(const g3_ckpt_piece_read_t *p, int64_t r0, int64_t nr,
                                           int64_t row_elems, void *buf, double *t0)
{
    hsize_t off[G3_CKPT_MAX_DIMS] = { 0 }, cnt[G3_CKPT_MAX_DIMS];
    hid_t mspace;
    herr_t rc;

    if (p->raw) {        /* rows [r0, r0 + nr) are bytes [r0, r0 + nr) * row of the piece */
        size_t rowb = (size_t)row_elems * p->esz;
        int e = g3_ckpt_raw_read(p->fd, p->addr + (off_t)((size_t)r0 * rowb), (size_t)nr * rowb,
                                 buf, p->crc);
        if (e != 0) {
            g3_ckpt_piece_read_error(p, e);
            return G3_ERR_FORMAT;
        }
        *t0 = g3_ckpt_load_timing_now();
        return G3_OK;
    }
    for (int k = 0; k < p->t->ndim; k++)
        cnt[k] = p->dims[k];
    off[0] = (hsize_t)r0;
    cnt[0] = (hsize_t)nr;
    H5Sselect_hyperslab(p->fspace, H5S_SELECT_SET, off, NULL, cnt, NULL);
    mspace = H5Screate_simple(p->t->ndim, cnt, NULL);
    rc = H5Dread(p->d, p->type, mspace, p->fspace, H5P_DEFAULT, buf);
    if (rc < 0)
        g3_ckpt_piece_read_error(p, 0);   /* before H5Sclose: it reads HDF5's error stack */
    H5Sclose(mspace);
    if (rc < 0)
        return G3_ERR_FORMAT;
    g3_ckpt_load_timing_add(G3_CKPT_T_READ, t0);
    if (p->crc)
        *p->crc = g3_crc32c(*p->crc, buf, (size_t)(nr * row_elems) * p->esz);
    g3_ckpt_load_timing_add(G3_CKPT_T_VERIFY, t0);
    return G3_OK;
}

/* Read path 3: the piece in blocks of whole rows (G3_CKPT_LOAD_BLOCK_BYTES), each block
 * scattered to the work items w[0..n) that want part of it. */
static g3_status_t g3_ckpt_piece_read_blocks(const g3_ckpt_piece_read_t *p, const g3_ckpt_work_t *w,
                                             size_t n, double *t0)
{
    const g3_ckpt_prow_t *sp = p->sp;
    int ndim = p->t->ndim;
    int64_t row_elems = g3_ckpt_box_volume(ndim, sp->extent) / sp->extent[0];
    int64_t rows = (int64_t)(G3_CKPT_LOAD_BLOCK_BYTES / ((size_t)row_elems * p->esz));
    g3_status_t st = G3_OK;
    void *buf;

    if (rows < 1)
        rows = 1;
    if (rows > sp->extent[0])
        rows = sp->extent[0];
    buf = malloc((size_t)(rows * row_elems) * p->esz);
    if (buf == NULL) {
        g3_error("out of memory reading %s from %s", p->dname, p->fpath);
        return G3_ERR_NO_MEMORY;
    }
    for (int64_t r0 = 0; st == G3_OK && r0 < sp->extent[0]; r0 += rows) {
        int64_t nr = sp->extent[0] - r0 < rows ? sp->extent[0] - r0 : rows;
        int64_t bo[G3_CKPT_MAX_DIMS], be[G3_CKPT_MAX_DIMS];

        st = g3_ckpt_piece_read_rows(p, r0, nr, row_elems, buf, t0);
        if (st != G3_OK)
            break;
        for (int k = 0; k < ndim; k++) {
            bo[k] = sp->offset[k];
            be[k] = sp->extent[k];
        }
        bo[0] = sp->offset[0] + r0;
        be[0] = nr;
        for (size_t i = 0; i < n; i++) {
            int64_t io[G3_CKPT_MAX_DIMS], ie[G3_CKPT_MAX_DIMS];
            if (!g3_ckpt_box_intersect(ndim, w[i].io, w[i].ie, bo, be, io, ie))
                continue;
            g3_ckpt_copy_box(ndim, io, ie, buf, bo, be, w[i].sdt, w[i].dst->data, w[i].dst->offset,
                             w[i].dst->extent, w[i].ddt);
        }
        g3_ckpt_load_timing_add(G3_CKPT_T_CONVERT, t0);
    }
    free(buf);
    return st;
}

/* Read one stored piece (all of it), check its CRC, scatter to the work items
 * w[0..n) that need it. */
static g3_status_t g3_ckpt_load_piece(g3_ckpt_reader_t *r, hid_t f, const char *fpath,
                                      const g3_ckpt_work_t *w, size_t n, int verify)
{
    g3_ckpt_piece_read_t p;
    uint32_t crc = 0;
    double t0 = g3_ckpt_load_timing_now();
    g3_status_t st;
    int direct;

    memset(&p, 0, sizeof(p));
    p.sp = &r->pieces[w[0].src];
    p.t = &r->tensors[p.sp->tensor];
    p.fpath = fpath;
    p.type = g3_ckpt_h5_type(w[0].sdt);
    p.esz = g3_ckpt_dtype_size(w[0].sdt);
    p.nbytes = (size_t)g3_ckpt_box_volume(p.t->ndim, p.sp->extent) * p.esz;
    p.crc = verify ? &crc : NULL;
    st = g3_ckpt_piece_open(r, f, &p);
    if (st != G3_OK)
        return st;
    g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
    /* Direct read: one reader wants exactly this box in the same dtype. */
    direct = n == 1 && w[0].sdt == w[0].ddt;
    for (int k = 0; direct && k < p.t->ndim; k++)
        direct = w[0].io[k] == p.sp->offset[k] && w[0].ie[k] == p.sp->extent[k] &&
                 w[0].dst->offset[k] == p.sp->offset[k] && w[0].dst->extent[k] == p.sp->extent[k];
    p.raw = g3_ckpt_raw_extent(f, p.d, p.nbytes, &p.fd, &p.addr);
    if (direct && p.raw)
        st = g3_ckpt_piece_read_raw(&p, w[0].dst->data, &t0);
    else if (direct)
        st = g3_ckpt_piece_read_h5(&p, w[0].dst->data, &t0);
    else
        st = g3_ckpt_piece_read_blocks(&p, w, n, &t0);
    if (st == G3_OK && verify && crc != p.sp->crc32c) {
        g3_error("checksum mismatch in %s, dataset %s (tensor %s): stored crc32c %08x, computed %08x: the file is corrupt; load another checkpoint (--load-fallback)",
                 fpath, p.dname, p.t->name, p.sp->crc32c, crc);
        st = G3_ERR_FORMAT;
    }
    H5Sclose(p.fspace);
    H5Dclose(p.d);
    g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
    return st;
}

static g3_status_t g3_ckpt_open_shard(g3_ckpt_reader_t *r, int file, hid_t *f_p, char *path,
                                      size_t size)
{
    const g3_ckpt_frow_t *fr = &r->files[file];
    g3_status_t st;

    snprintf(path, size, "%s/%s", r->dir, fr->name);
    st = g3_ckpt_h5_open(path, f_p);
    if (st == G3_ERR_NOT_FOUND)
        g3_error("checkpoint %s is incomplete: shard file %s is missing", r->dir, fr->name);
    if (st != G3_OK)
        return st;
    {   /* the pieces are read front to back: let the kernel read ahead further */
        void *handle = NULL;
        if (H5Fget_vfd_handle(*f_p, H5P_DEFAULT, &handle) >= 0 && handle != NULL)
            posix_fadvise(*(int *)handle, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    st = g3_ckpt_check_format(*f_p, path, G3_CKPT_SHARD_FORMAT, NULL);
    if (st == G3_OK && g3_ckpt_check_shard(r, (size_t)file, *f_p, path) != 0)
        st = G3_ERR_FORMAT;
    if (st != G3_OK)
        H5Fclose(*f_p);
    return st;
}

/* What verify checks of the index before any data: every tensor tiled exactly, and (on the
 * first rank: the index is the same for all, and a parallel file system is spared one open
 * and stat per rank and file) the virtual datasets and every shard file present.  The shard
 * files a rank reads are checked as they are read (check_shard, check_piece, check_manifest). */
static g3_status_t g3_ckpt_check_index(const g3_ckpt_reader_t *r, const g3_ckpt_state_t *state)
{
    const g3_ckpt_layout_t *l = &state->layout;
    int first = l->tp == 0 && l->pp == 0 && l->dp == 0;
    int faults = g3_ckpt_check_tiling(r), missing = 0;

    if (first)
        faults += g3_ckpt_verify_vds(r);
    for (size_t i = 0; first && i < r->nfiles; i++) {
        char p[PATH_MAX + 80];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/%s", r->dir, r->files[i].name);
        if (stat(p, &sb) != 0) {
            g3_error("checkpoint %s is incomplete: shard file %s is missing (%s)", r->dir, r->files[i].name,
                     strerror(errno));
            missing++;
        }
    }
    return faults ? G3_ERR_FORMAT : missing ? G3_ERR_NOT_FOUND : G3_OK;
}

g3_status_t g3_ckpt_reader_load(g3_ckpt_reader_t *r, g3_ckpt_state_t *state,
                                const g3_ckpt_load_opts_t *opts)
{
    g3_ckpt_work_t *work = NULL;
    size_t nwork = 0;
    int verify = !(opts && opts->no_verify);
    g3_ckpt_timing_t *outer = g3_ckpt_tm;
    double t0;
    g3_status_t st;

    g3_ckpt_tm = opts ? opts->timing : NULL;
    t0 = g3_ckpt_load_timing_now();
    st = g3_ckpt_check_index(r, state);
    hid_t f = -1;
    int cur_file = -1;
    char fpath[PATH_MAX + 80];

    if (st == G3_OK)
        st = g3_ckpt_plan_load(r, state, opts, &work, &nwork);
    g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
    if (st != G3_OK) {
        g3_ckpt_tm = outer;
        return st;
    }
    /* Work is sorted by file, then stored piece: each file is opened once. */
    for (size_t i = 0; st == G3_OK && i < nwork;) {
        size_t j = i;
        int file = r->pieces[work[i].src].file;

        while (j < nwork && work[j].src == work[i].src)
            j++;
        if (file != cur_file) {
            /* The manifest is written last, so it lies at the end of the file: checked
             * after the pieces, the reads go front to back (a cold cache's read-ahead). */
            if (f >= 0 && g3_ckpt_check_manifest(r, (size_t)cur_file, f, fpath) != 0) {
                st = G3_ERR_FORMAT;
                break;
            }
            t0 = g3_ckpt_load_timing_now();
            if (f >= 0)
                H5Fclose(f);
            f = -1;
            cur_file = -1;
            g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
            st = g3_ckpt_open_shard(r, file, &f, fpath, sizeof(fpath));
            g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
            if (st != G3_OK)
                break;
            cur_file = file;
        }
        st = g3_ckpt_load_piece(r, f, fpath, &work[i], j - i, verify);
        i = j;
    }
    if (st == G3_OK && f >= 0 && g3_ckpt_check_manifest(r, (size_t)cur_file, f, fpath) != 0)
        st = G3_ERR_FORMAT;
    t0 = g3_ckpt_load_timing_now();
    if (f >= 0)
        H5Fclose(f);
    g3_ckpt_load_timing_add(G3_CKPT_T_OPEN, &t0);
    free(work);
    g3_ckpt_tm = outer;
    return st;
}

/* ---- configuration check ------------------------------------------------------------- */

const char *g3_ckpt_config_get(const char *config, const char *key, char *buf, size_t size)
{
    size_t klen = strlen(key);
    const char *p = config;

    while (p && *p) {
        const char *eol = strchr(p, '\n'), *q = p, *v;
        size_t len;

        if (eol == NULL)
            eol = p + strlen(p);
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q + 2 < eol && q[0] == '-' && q[1] == '-')
            q += 2;
        if ((size_t)(eol - q) > klen && strncmp(q, key, klen) == 0) {
            v = q + klen;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (v < eol && *v == '=') {
                v++;
                while (v < eol && (*v == ' ' || *v == '\t'))
                    v++;
                len = (size_t)(eol - v);
                while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\r'))
                    len--;
                if (len >= size)
                    len = size - 1;
                memcpy(buf, v, len);
                buf[len] = '\0';
                return buf;
            }
        }
        p = *eol ? eol + 1 : eol;
    }
    return NULL;
}

static g3_status_t g3_ckpt_config_compare(const char *ckpt_config, const char *run_config,
                                          const char *const *keys, const char *what)
{
    int bad = 0;

    if (keys == NULL)
        keys = G3_CKPT_MODEL_KEYS;
    for (int i = 0; keys[i]; i++) {
        char a[256], b[256];
        const char *va = g3_ckpt_config_get(ckpt_config ? ckpt_config : "", keys[i], a, sizeof(a));
        const char *vb = g3_ckpt_config_get(run_config ? run_config : "", keys[i], b, sizeof(b));
        if ((va == NULL && vb == NULL) || (va && vb && strcmp(va, vb) == 0))
            continue;
        g3_error("model configuration mismatch: checkpoint %s has --%s %s but this run has --%s %s",
                 what, keys[i], va ? va : "(unset)", keys[i], vb ? vb : "(unset)");
        bad++;
    }
    if (bad)
        g3_error("%d model setting%s differ from checkpoint %s: use the checkpoint's values, or start without --load",
                 bad, bad > 1 ? "s" : "", what);
    return bad ? G3_ERR_INVALID_ARG : G3_OK;
}

/* ---- the whole load ------------------------------------------------------------------ */

g3_status_t g3_ckpt_load(const char *dir, g3_ckpt_state_t *state, const g3_ckpt_load_opts_t *opts,
                         const g3_ckpt_comm_t *comm, g3_ckpt_reader_t **reader_p)
{
    int64_t *iters = NULL, latest = -1;
    int n = 0, ncand = 0, is_ckpt_dir;
    char (*cand)[PATH_MAX] = malloc(64 * sizeof(*cand));
    char index[PATH_MAX + 16];
    struct stat sb;
    g3_status_t st = G3_ERR_NOT_FOUND;
    int fallback = opts && opts->fallback;

    if (cand == NULL)
        return G3_ERR_NO_MEMORY;
    snprintf(index, sizeof(index), "%s/%s", dir, G3_CKPT_INDEX_NAME);
    is_ckpt_dir = stat(index, &sb) == 0;
    /* Candidates: the checkpoint `latest` names (or dir itself), then with
     * --load-fallback the older committed ones, newest first. */
    if (is_ckpt_dir || !fallback) {
        snprintf(cand[ncand++], PATH_MAX, "%s", dir);
    } else {
        int have_latest = g3_ckpt_latest(dir, &latest) == G3_OK;
        if (g3_ckpt_list(dir, &iters, &n) != G3_OK)
            n = 0;
        if (have_latest)
            snprintf(cand[ncand++], PATH_MAX, "%s", dir);
        for (int i = n - 1; i >= 0 && ncand < 64; i--)
            if (!have_latest || iters[i] < latest)
                g3_ckpt_iter_path(dir, iters[i], cand[ncand++], PATH_MAX);
        free(iters);
        if (ncand == 0) {
            g3_error("--load %s: no committed checkpoint found", dir);
            free(cand);
            return G3_ERR_NOT_FOUND;
        }
    }
    for (int c = 0; c < ncand; c++) {
        g3_ckpt_reader_t *r = NULL;
        int ok, final = 0;

        g3_ckpt_timing_t *tm = opts ? opts->timing : NULL;
        double t0 = g3_ckpt_timing_now(tm);

        st = g3_ckpt_reader_open(cand[c], &r);
        g3_ckpt_timing_add(tm, G3_CKPT_T_OPEN, &t0);
        if (st == G3_OK && opts && opts->config_text)
            st = g3_ckpt_config_compare(r->config, opts->config_text, opts->model_keys, r->dir);
        if (st == G3_OK && opts && opts->check_index)
            st = opts->check_index(opts->check_ctx, r, &final);
        if (st == G3_OK)
            st = g3_ckpt_reader_load(r, state, opts);
        if (st == G3_OK && opts && opts->check_loaded)
            st = opts->check_loaded(opts->check_ctx, r);
        ok = st == G3_OK;
        if (comm && comm->allreduce_min_int) {
            g3_status_t cst = comm->allreduce_min_int(comm->ctx, &ok);
            if (cst != G3_OK) {
                g3_ckpt_reader_close(r);
                free(cand);
                return cst;
            }
            if (!ok && st == G3_OK) {
                st = G3_ERR_IO;   /* another rank failed; it logged why */
                g3_info("another rank could not load %s (it says why)", r ? r->dir : cand[c]);
            }
        }
        if (ok) {
            g3_info("loaded checkpoint %s (iteration %lld)", r->dir, (long long)r->iteration);
            if (reader_p)
                *reader_p = r;
            else
                g3_ckpt_reader_close(r);
            free(cand);
            return G3_OK;
        }
        g3_ckpt_reader_close(r);
        if (st == G3_ERR_INVALID_ARG || final)
            break;       /* the run disagrees with the model: older checkpoints will too */
        if (!fallback) {
            g3_error("could not load the checkpoint in %s; pass --load-fallback to load the previous committed checkpoint instead",
                     dir);
            break;
        }
        if (c + 1 < ncand)
            g3_warn("--load-fallback: checkpoint %s could not be loaded; trying %s", cand[c], cand[c + 1]);
        else
            g3_error("--load-fallback: no committed checkpoint in %s could be loaded", dir);
    }
    free(cand);
    return st;
}
