/* Checkpoint helpers: dtypes, sharding rules, boxes, element copies, names. */
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bf16.h"
#include "core/clock.h"
#include "core/log.h"

__thread g3_ckpt_timing_t *g3_ckpt_tm;

/* ---- phase timing ---------------------------------------------------------------------- */

static const char *const phase_names[G3_CKPT_T_COUNT] = {
    [G3_CKPT_T_WAIT] = "wait", [G3_CKPT_T_STAGE_ALLOC] = "stage_alloc",
    [G3_CKPT_T_DESCRIBE] = "describe", [G3_CKPT_T_D2H] = "d2h",
    [G3_CKPT_T_FINITE] = "finite", [G3_CKPT_T_PACK] = "pack", [G3_CKPT_T_CHECKSUM] = "checksum",
    [G3_CKPT_T_WRITE] = "write", [G3_CKPT_T_FSYNC] = "fsync", [G3_CKPT_T_COMMIT] = "commit",
    [G3_CKPT_T_OPEN] = "open", [G3_CKPT_T_READ] = "read", [G3_CKPT_T_VERIFY] = "verify",
    [G3_CKPT_T_CONVERT] = "convert", [G3_CKPT_T_H2D] = "h2d", [G3_CKPT_T_FREE] = "free",
};

const char *g3_ckpt_phase_name(g3_ckpt_phase_t phase)
{
    return (int)phase >= 0 && phase < G3_CKPT_T_COUNT ? phase_names[phase] : "?";
}

double g3_ckpt_timing_now(const g3_ckpt_timing_t *tm)
{
    return tm ? g3_clock_now() : 0;
}

void g3_ckpt_timing_add(g3_ckpt_timing_t *tm, g3_ckpt_phase_t phase, double *t0)
{
    double t1;

    if (tm == NULL)
        return;
    t1 = g3_clock_now();
    if (t1 > *t0)
        tm->s[phase] += t1 - *t0;
    *t0 = t1;
}

double g3_ckpt_timing_sum(const g3_ckpt_timing_t *tm, unsigned mask)
{
    double sum = 0;

    for (int k = 0; k < G3_CKPT_T_COUNT; k++)
        if (mask & G3_CKPT_T_BIT(k))
            sum += tm->s[k];
    return sum;
}

void g3_ckpt_timing_format(const g3_ckpt_timing_t *tm, unsigned mask, int json, char *buf,
                           size_t size)
{
    size_t used = 0;
    const char *sep = "";

    if (size == 0)
        return;
    buf[0] = '\0';
    for (int k = 0; k < G3_CKPT_T_COUNT && used < size; k++) {
        int n;

        if (!(mask & G3_CKPT_T_BIT(k)))
            continue;
        n = json ? snprintf(buf + used, size - used, "%s\"%s\":%.6f", sep, phase_names[k], tm->s[k])
                 : snprintf(buf + used, size - used, "%s%s %.3f", sep, phase_names[k], tm->s[k]);
        if (n < 0)
            break;
        used += (size_t)n;
        sep = json ? "," : ", ";
    }
}

/* Kept in step with g3_ckpt_dtype_t by the static assertions below. */
static const char *const dtype_names[] = {
    [G3_CKPT_F32] = "f32", [G3_CKPT_BF16] = "bf16", [G3_CKPT_F16] = "f16",
    [G3_CKPT_F64] = "f64", [G3_CKPT_I32] = "i32", [G3_CKPT_I64] = "i64", [G3_CKPT_U8] = "u8",
};
static const size_t dtype_sizes[] = {
    [G3_CKPT_F32] = 4, [G3_CKPT_BF16] = 2, [G3_CKPT_F16] = 2,
    [G3_CKPT_F64] = 8, [G3_CKPT_I32] = 4, [G3_CKPT_I64] = 8, [G3_CKPT_U8] = 1,
};
_Static_assert(sizeof(dtype_names) / sizeof(dtype_names[0]) == G3_CKPT_DTYPE_COUNT, "dtype_names");
_Static_assert(sizeof(dtype_sizes) / sizeof(dtype_sizes[0]) == G3_CKPT_DTYPE_COUNT, "dtype_sizes");

const char *g3_ckpt_dtype_name(g3_ckpt_dtype_t dtype)
{
    return (unsigned)dtype < G3_CKPT_DTYPE_COUNT ? dtype_names[dtype] : "?";
}

size_t g3_ckpt_dtype_size(g3_ckpt_dtype_t dtype)
{
    return (unsigned)dtype < G3_CKPT_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

g3_status_t g3_ckpt_dtype_parse(const char *name, g3_ckpt_dtype_t *dtype_p)
{
    for (int i = 0; i < G3_CKPT_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0) {
            *dtype_p = (g3_ckpt_dtype_t)i;
            return G3_OK;
        }
    return G3_ERR_INVALID_ARG;
}

g3_ckpt_rule_t g3_ckpt_rule_replicated(int pp_layer)
{
    g3_ckpt_rule_t r = { -1, 1, pp_layer, -1, 0 };
    return r;
}

g3_ckpt_rule_t g3_ckpt_rule_split(int dim, int parts, int pp_layer)
{
    g3_ckpt_rule_t r = { dim, parts, pp_layer, -1, 0 };
    return r;
}

int g3_ckpt_owner_stage(const g3_ckpt_layout_t *layout, int pp_layer)
{
    if (pp_layer == G3_CKPT_PP_FIRST)
        return 0;
    if (pp_layer == G3_CKPT_PP_LAST || layout->pp_size <= 1)
        return layout->pp_size - 1;
    if (layout->vpp_size > 1 && layout->num_layers >= layout->pp_size * layout->vpp_size)
        return (pp_layer / (layout->num_layers / (layout->pp_size * layout->vpp_size))) %
               layout->pp_size;
    if (layout->stage_first_layer != NULL) {
        for (int s = 0; s < layout->pp_size; s++)
            if (pp_layer < layout->stage_first_layer[s + 1])
                return s;
        return layout->pp_size - 1;
    }
    return pp_layer / (layout->num_layers / layout->pp_size);
}

int g3_ckpt_rank_writes(const g3_ckpt_layout_t *layout, const g3_ckpt_tensor_t *t)
{
    if (g3_ckpt_owner_stage(layout, t->rule.pp_layer) != layout->pp)
        return 0;
    if (t->rule.tp_dim < 0 && layout->tp != 0)
        return 0;
    if (t->kind == G3_CKPT_MODEL && layout->dp != 0)
        return 0;
    return 1;
}

g3_status_t g3_ckpt_tp_boxes(const g3_ckpt_tensor_t *t, int tp_rank, int tp_size,
                             g3_ckpt_piece_t boxes[3], int *nboxes_p)
{
    int d = t->rule.tp_dim, parts = t->rule.tp_parts > 0 ? t->rule.tp_parts : 1;
    int64_t part, local;

    memset(boxes, 0, 3 * sizeof(boxes[0]));
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < G3_CKPT_MAX_DIMS; k++)
            boxes[i].extent[k] = k < t->ndim ? t->shape[k] : 1;
    if (d < 0 || tp_size <= 1) {
        *nboxes_p = 1;
        return G3_OK;
    }
    if (d >= t->ndim || parts > 3) {
        g3_error("tensor %s: bad sharding rule (tp_dim %d, tp_parts %d) for %d dimensions",
                 t->name, d, parts, t->ndim);
        return G3_ERR_INVALID_ARG;
    }
    if (t->shape[d] % parts != 0 || (t->shape[d] / parts) % tp_size != 0) {
        g3_error("tensor %s: dimension %d of size %lld (in %d parts) is not divisible by tensor-model-parallel size %d",
                 t->name, d, (long long)t->shape[d], parts, tp_size);
        return G3_ERR_INVALID_ARG;
    }
    part = t->shape[d] / parts;
    local = part / tp_size;
    for (int i = 0; i < parts; i++) {
        boxes[i].offset[d] = i * part + tp_rank * local;
        boxes[i].extent[d] = local;
    }
    *nboxes_p = parts;
    return G3_OK;
}

int64_t g3_ckpt_box_volume(int ndim, const int64_t *extent)
{
    int64_t v = 1;
    for (int k = 0; k < ndim; k++)
        v *= extent[k];
    return v;
}

int g3_ckpt_box_intersect(int ndim, const int64_t *ao, const int64_t *ae,
                          const int64_t *bo, const int64_t *be, int64_t *io, int64_t *ie)
{
    for (int k = 0; k < ndim; k++) {
        int64_t lo = ao[k] > bo[k] ? ao[k] : bo[k];
        int64_t hi = ao[k] + ae[k] < bo[k] + be[k] ? ao[k] + ae[k] : bo[k] + be[k];
        if (hi <= lo)
            return 0;
        io[k] = lo;
        ie[k] = hi - lo;
    }
    return 1;
}

uint64_t g3_ckpt_name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ---- element conversion ------------------------------------------------------------ */

void g3_ckpt_convert_elems(void *dst, g3_ckpt_dtype_t dt, const void *src, g3_ckpt_dtype_t st,
                           size_t n)
{
    if (dt == st) {
        memcpy(dst, src, n * g3_ckpt_dtype_size(dt));
    } else if (dt == G3_CKPT_F32 && st == G3_CKPT_BF16) {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_to_f32(s[i]);
    } else if (dt == G3_CKPT_BF16 && st == G3_CKPT_F32) {
        const float *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = g3_bf16_from_f32(s[i]);
    }
    /* other pairs are refused before any data is read */
}

/* Row-major strides in elements of a box of extent e. */
static void box_strides(int ndim, const int64_t *e, int64_t *stride)
{
    int64_t s = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        stride[k] = s;
        s *= e[k];
    }
}

void g3_ckpt_copy_box(int ndim, const int64_t *io, const int64_t *ie,
                      const void *src, const int64_t *so, const int64_t *se, g3_ckpt_dtype_t st,
                      void *dst, const int64_t *dof, const int64_t *de, g3_ckpt_dtype_t dt)
{
    int64_t ss[G3_CKPT_MAX_DIMS], ds[G3_CKPT_MAX_DIMS], idx[G3_CKPT_MAX_DIMS] = { 0 };
    size_t sz_s = g3_ckpt_dtype_size(st), sz_d = g3_ckpt_dtype_size(dt);
    int last = ndim - 1;
    int64_t run = ie[last];

    box_strides(ndim, se, ss);
    box_strides(ndim, de, ds);
    /* merge trailing dimensions that are whole in both boxes into one run */
    while (last > 0 && ie[last] == se[last] && ie[last] == de[last]) {
        last--;
        run *= ie[last];
    }
    for (;;) {
        int64_t so_el = 0, do_el = 0;
        for (int k = 0; k < last; k++) {
            so_el += (io[k] + idx[k] - so[k]) * ss[k];
            do_el += (io[k] + idx[k] - dof[k]) * ds[k];
        }
        so_el += (io[last] - so[last]) * ss[last];
        do_el += (io[last] - dof[last]) * ds[last];
        g3_ckpt_convert_elems((char *)dst + do_el * sz_d, dt, (const char *)src + so_el * sz_s, st,
                              (size_t)run);
        /* advance the multi-index over dims [0, last) */
        int k = last - 1;
        while (k >= 0) {
            if (++idx[k] < ie[k])
                break;
            idx[k] = 0;
            k--;
        }
        if (k < 0)
            break;
    }
}

/* ---- names ----------------------------------------------------------------------------- */

void g3_ckpt_shard_name(g3_ckpt_kind_t kind, int tp, int pp, int dp, char *buf, size_t size)
{
    if (kind == G3_CKPT_MODEL)
        snprintf(buf, size, "model_tp%02d_pp%03d.h5", tp, pp);
    else
        snprintf(buf, size, "optim_tp%02d_pp%03d_dp%03d.h5", tp, pp, dp);
}

void g3_ckpt_piece_dataset(const char *tensor, int k, char *buf, size_t size)
{
    snprintf(buf, size, "%s#%d", tensor, k);
}

void g3_ckpt_iter_path(const char *dir, int64_t iteration, char *buf, size_t size)
{
    snprintf(buf, size, "%s/iter_%07lld", dir, (long long)iteration);
}

void g3_ckpt_tmp_path(const char *dir, int64_t iteration, const char *save_id, char *buf,
                      size_t size)
{
    snprintf(buf, size, "%s/iter_%07lld.tmp-%s", dir, (long long)iteration, save_id);
}

const char *g3_ckpt_save_id(const g3_ckpt_save_opts_t *opts)
{
    return opts != NULL && opts->save_id != NULL && opts->save_id[0] != '\0' ? opts->save_id : "0";
}

int g3_ckpt_parse_iter_name(const char *name, int64_t *iteration_p)
{
    const char *p;
    int64_t v = 0;

    if (strncmp(name, "iter_", 5) != 0)
        return 0;
    p = name + 5;
    if (strlen(p) < 7 || strlen(p) > 18)
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    *iteration_p = v;
    return 1;
}

/* Remove a directory holding only files (a checkpoint directory); refuses to
 * descend into subdirectories, so it never deletes anything else by accident. */
g3_status_t g3_ckpt_rmdir_flat(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[PATH_MAX];
    g3_status_t st = G3_OK;

    if (d == NULL) {
        if (errno == ENOENT)
            return G3_OK;
        g3_error("cannot open directory %s to remove it: %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        if (unlink(p) != 0 && errno != ENOENT) {
            g3_error("cannot remove %s: %s", p, strerror(errno));
            st = G3_ERR_IO;
        }
    }
    closedir(d);
    if (st == G3_OK && rmdir(path) != 0 && errno != ENOENT) {
        g3_error("cannot remove directory %s: %s", path, strerror(errno));
        st = G3_ERR_IO;
    }
    return st;
}
