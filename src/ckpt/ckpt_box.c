/* Checkpoint sharding: the rules that say which rank writes a tensor and which boxes of it a
 * tensor-parallel rank holds, and the box arithmetic of a load (intersections, copies). */
#include "ckpt/ckpt_internal.h"

#include <string.h>

#include "core/log.h"

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

/* Row-major strides in elements of a box of extent e. */
static void g3_ckpt_box_strides(int ndim, const int64_t *e, int64_t *stride)
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

    g3_ckpt_box_strides(ndim, se, ss);
    g3_ckpt_box_strides(ndim, de, ds);
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
