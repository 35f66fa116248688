/* The state a rank saves or loads: tensors with their pieces, and scalars. */
#include "ckpt/ckpt_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"

g3_status_t g3_ckpt_state_init(const g3_ckpt_layout_t *layout, g3_ckpt_state_t **state_p)
{
    const g3_ckpt_layout_t *l = layout;
    g3_ckpt_state_t *st;

    if (l->tp_size < 1 || l->pp_size < 1 || l->dp_size < 1 || l->tp < 0 || l->tp >= l->tp_size ||
        l->pp < 0 || l->pp >= l->pp_size || l->dp < 0 || l->dp >= l->dp_size) {
        g3_error("checkpoint layout: coordinates (tp %d, pp %d, dp %d) do not fit sizes TP %d x PP %d x DP %d",
                 l->tp, l->pp, l->dp, l->tp_size, l->pp_size, l->dp_size);
        return G3_ERR_INVALID_ARG;
    }
    if (l->num_layers < 0 || (l->stage_first_layer == NULL && l->pp_size > 1 &&
                              (l->num_layers < l->pp_size || l->num_layers % l->pp_size != 0))) {
        g3_error("checkpoint layout: %d layers cannot be split evenly over %d pipeline stages; pass stage_first_layer",
                 l->num_layers, l->pp_size);
        return G3_ERR_INVALID_ARG;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return G3_ERR_NO_MEMORY;
    st->stage_first = malloc((size_t)(l->pp_size + 1) * sizeof(int));
    if (st->stage_first == NULL) {
        free(st);
        return G3_ERR_NO_MEMORY;
    }
    for (int s = 0; s <= l->pp_size; s++)
        st->stage_first[s] = l->stage_first_layer ? l->stage_first_layer[s]
                                                  : s * (l->num_layers / l->pp_size);
    if (l->stage_first_layer != NULL) {
        for (int s = 0; s < l->pp_size; s++)
            if (l->stage_first_layer[s] > l->stage_first_layer[s + 1] ||
                l->stage_first_layer[0] != 0 || l->stage_first_layer[l->pp_size] != l->num_layers) {
                g3_error("checkpoint layout: stage_first_layer must rise from 0 to num_layers (%d)",
                         l->num_layers);
                free(st->stage_first);
                free(st);
                return G3_ERR_INVALID_ARG;
            }
    }
    st->layout = *l;
    st->layout.stage_first_layer = st->stage_first;
    *state_p = st;
    return G3_OK;
}

static void g3_ckpt_kv_free(g3_ckpt_kv_t *kv)
{
    free(kv->key);
    free(kv->values);
}

void g3_ckpt_state_free(g3_ckpt_state_t *state)
{
    if (state == NULL)
        return;
    for (int i = 0; i < state->ntensors; i++)
        free(state->tensors[i].pieces);
    free(state->tensors);
    for (int i = 0; i < state->nkv; i++)
        g3_ckpt_kv_free(&state->kv[i]);
    free(state->kv);
    for (int i = 0; i < state->nowned; i++)
        free(state->owned[i]);
    free(state->owned);
    free(state->config);
    free(state->stage_first);
    free(state);
}

static g3_ckpt_stensor_t *g3_ckpt_state_find(const g3_ckpt_state_t *state, const char *name)
{
    for (int i = 0; i < state->ntensors; i++)
        if (strcmp(state->tensors[i].name, name) == 0)
            return &state->tensors[i];
    return NULL;
}

static int g3_ckpt_name_ok(const char *n)
{
    size_t len = strlen(n);

    if (len == 0 || len >= G3_CKPT_NAME_MAX - 8 || n[0] == '/' || n[len - 1] == '/' || strstr(n, "//"))
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-' || *p == '/'))
            return 0;
    return 1;
}

static g3_status_t g3_ckpt_tensor_check(const g3_ckpt_tensor_t *t)
{
    const g3_ckpt_rule_t *r = &t->rule;

    if (t->name == NULL || !g3_ckpt_name_ok(t->name)) {
        g3_error("checkpoint tensor name '%s' is not allowed: use 1..%d characters from [A-Za-z0-9_.-/], groups separated by single '/'",
                 t->name ? t->name : "(null)", G3_CKPT_NAME_MAX - 9);
        return G3_ERR_INVALID_ARG;
    }
    if (t->ndim < 1 || t->ndim > G3_CKPT_MAX_DIMS) {
        g3_error("checkpoint tensor %s: %d dimensions (1..%d supported)", t->name, t->ndim, G3_CKPT_MAX_DIMS);
        return G3_ERR_INVALID_ARG;
    }
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] <= 0) {
            g3_error("checkpoint tensor %s: dimension %d has size %lld", t->name, k, (long long)t->shape[k]);
            return G3_ERR_INVALID_ARG;
        }
    if ((unsigned)t->dtype >= G3_CKPT_DTYPE_COUNT ||
        (t->kind != G3_CKPT_MODEL && t->kind != G3_CKPT_OPTIM)) {
        g3_error("checkpoint tensor %s: unknown dtype %d or kind %d", t->name, (int)t->dtype, (int)t->kind);
        return G3_ERR_INVALID_ARG;
    }
    if (r->tp_dim < -1 || r->tp_dim >= t->ndim || r->tp_parts < 1 || r->tp_parts > 3 ||
        r->pad_dim < -1 || r->pad_dim >= t->ndim || r->pp_layer < G3_CKPT_PP_LAST ||
        (r->pad_dim >= 0 && (r->unpadded <= 0 || r->unpadded > t->shape[r->pad_dim]))) {
        g3_error("checkpoint tensor %s: bad sharding rule (tp_dim %d, tp_parts %d, pp_layer %d, pad_dim %d, unpadded %lld)",
                 t->name, r->tp_dim, r->tp_parts, r->pp_layer, r->pad_dim, (long long)r->unpadded);
        return G3_ERR_INVALID_ARG;
    }
    return G3_OK;
}

static int g3_ckpt_tensor_same(const g3_ckpt_tensor_t *a, const g3_ckpt_tensor_t *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->rule.tp_dim != b->rule.tp_dim || a->rule.tp_parts != b->rule.tp_parts ||
        a->rule.pp_layer != b->rule.pp_layer || a->rule.pad_dim != b->rule.pad_dim ||
        (a->rule.pad_dim >= 0 && a->rule.unpadded != b->rule.unpadded))
        return 0;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    return 1;
}

/* Room for element n of an array *p of *cap elements of size bytes (doubling, from first).
 * RET: 0 when out of memory (*p and *cap unchanged). */
static int g3_ckpt_grow(void **p, int *cap, int n, int first, size_t size)
{
    void *q;
    int c;

    if (n < *cap)
        return 1;
    c = *cap ? 2 * *cap : first;
    q = realloc(*p, (size_t)c * size);
    if (q == NULL)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

static g3_status_t g3_ckpt_state_tensor(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *t,
                                        g3_ckpt_stensor_t **out_p)
{
    g3_ckpt_stensor_t *s;
    g3_status_t st = g3_ckpt_tensor_check(t);

    if (st != G3_OK)
        return st;
    s = g3_ckpt_state_find(state, t->name);
    if (s != NULL) {
        if (!g3_ckpt_tensor_same(&s->desc, t)) {
            g3_error("checkpoint tensor %s was added twice with different descriptions", t->name);
            return G3_ERR_INVALID_ARG;
        }
        *out_p = s;
        return G3_OK;
    }
    if (!g3_ckpt_grow((void **)&state->tensors, &state->cap, state->ntensors, 64,
                      sizeof(*state->tensors)))
        return G3_ERR_NO_MEMORY;
    s = &state->tensors[state->ntensors++];
    memset(s, 0, sizeof(*s));
    s->desc = *t;
    snprintf(s->name, sizeof(s->name), "%s", t->name);
    s->desc.name = NULL;          /* set on use: the array may move */
    for (int k = t->ndim; k < G3_CKPT_MAX_DIMS; k++)
        s->desc.shape[k] = 1;
    if (s->desc.rule.tp_parts < 1)
        s->desc.rule.tp_parts = 1;
    *out_p = s;
    return G3_OK;
}

static g3_status_t g3_ckpt_stensor_push(g3_ckpt_stensor_t *s, const g3_ckpt_piece_t *p)
{
    g3_ckpt_piece_t q = *p;

    for (int k = 0; k < G3_CKPT_MAX_DIMS; k++) {
        if (k >= s->desc.ndim) {
            q.offset[k] = 0;
            q.extent[k] = 1;
            continue;
        }
        if (q.offset[k] < 0 || q.extent[k] <= 0 || q.offset[k] + q.extent[k] > s->desc.shape[k]) {
            g3_error(
                "checkpoint tensor %s: piece [%lld, +%lld) in dimension %d lies outside the global shape %lld",
                s->name, (long long)q.offset[k], (long long)q.extent[k], k,
                (long long)s->desc.shape[k]);
            return G3_ERR_INVALID_ARG;
        }
    }
    if (q.data == NULL) {
        g3_error("checkpoint tensor %s: a piece has no data pointer", s->name);
        return G3_ERR_INVALID_ARG;
    }
    if (!g3_ckpt_grow((void **)&s->pieces, &s->cap, s->npieces, 4, sizeof(*s->pieces)))
        return G3_ERR_NO_MEMORY;
    s->pieces[s->npieces++] = q;
    return G3_OK;
}

g3_status_t g3_ckpt_state_add(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                              const g3_ckpt_piece_t *pieces, int npieces)
{
    g3_ckpt_stensor_t *s;
    g3_status_t st = g3_ckpt_state_tensor(state, tensor, &s);

    for (int i = 0; st == G3_OK && i < npieces; i++)
        st = g3_ckpt_stensor_push(s, &pieces[i]);
    return st;
}

g3_status_t g3_ckpt_state_add_flat(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                   const int64_t *local_offset, const int64_t *local_extent,
                                   int64_t flat_start, int64_t count, void *data)
{
    g3_ckpt_stensor_t *s;
    int n = tensor->ndim;
    int64_t stride[G3_CKPT_MAX_DIMS], pos, end;
    size_t esz = g3_ckpt_dtype_size(tensor->dtype);
    g3_status_t st = g3_ckpt_state_tensor(state, tensor, &s);

    if (st != G3_OK)
        return st;
    {
        int64_t v = 1;
        for (int k = n - 1; k >= 0; k--) {
            stride[k] = v;
            v *= local_extent[k];
        }
        if (flat_start < 0 || count < 0 || flat_start + count > v) {
            g3_error("checkpoint tensor %s: flat range [%lld, +%lld) exceeds the %lld elements of the local box",
                     tensor->name, (long long)flat_start, (long long)count, (long long)v);
            return G3_ERR_INVALID_ARG;
        }
    }
    pos = flat_start;
    end = flat_start + count;
    /* Take the largest box that starts at pos and stays inside [pos, end):
     * step along the outermost dimension j whose inner indices are all 0. */
    while (pos < end) {
        int64_t idx[G3_CKPT_MAX_DIMS], rem = pos, m = 0;
        int j0 = n - 1, j;
        g3_ckpt_piece_t p;

        for (int k = 0; k < n; k++) {
            idx[k] = rem / stride[k];
            rem %= stride[k];
        }
        while (j0 > 0 && idx[j0] == 0)
            j0--;
        /* j0 is the innermost dim with a non-zero index, or 0: dims after j0 are 0 */
        for (j = j0; j < n; j++) {
            int64_t avail = local_extent[j] - idx[j];
            m = (end - pos) / stride[j];
            if (m > avail)
                m = avail;
            if (m >= 1)
                break;
        }
        memset(&p, 0, sizeof(p));
        for (int k = 0; k < n; k++) {
            if (k < j) {
                p.offset[k] = local_offset[k] + idx[k];
                p.extent[k] = 1;
            } else if (k == j) {
                p.offset[k] = local_offset[k] + idx[k];
                p.extent[k] = m;
            } else {
                p.offset[k] = local_offset[k];
                p.extent[k] = local_extent[k];
            }
        }
        p.data = (char *)data + (size_t)(pos - flat_start) * esz;
        st = g3_ckpt_stensor_push(s, &p);
        if (st != G3_OK)
            return st;
        pos += m * stride[j];
    }
    return G3_OK;
}

g3_status_t g3_ckpt_state_add_local(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                    int tp_rank, int tp_size, void *data)
{
    g3_ckpt_piece_t boxes[3];
    int nb;
    size_t esz = g3_ckpt_dtype_size(tensor->dtype);
    g3_status_t st = g3_ckpt_tp_boxes(tensor, tp_rank, tp_size, boxes, &nb);
    char *p = data;

    for (int b = 0; st == G3_OK && b < nb; b++) {
        boxes[b].data = p;
        p += (size_t)g3_ckpt_box_volume(tensor->ndim, boxes[b].extent) * esz;
    }
    if (st == G3_OK)
        st = g3_ckpt_state_add(state, tensor, boxes, nb);
    return st;
}

int64_t g3_ckpt_local_numel(const g3_ckpt_tensor_t *tensor, int tp_size)
{
    g3_ckpt_piece_t boxes[3];
    int nb;
    int64_t n = 0;

    if (g3_ckpt_tp_boxes(tensor, 0, tp_size, boxes, &nb) != G3_OK)
        return 0;
    for (int b = 0; b < nb; b++)
        n += g3_ckpt_box_volume(tensor->ndim, boxes[b].extent);
    return n;
}

g3_status_t g3_ckpt_state_add_local_flat(g3_ckpt_state_t *state, const g3_ckpt_tensor_t *tensor,
                                         int tp_rank, int tp_size, int64_t flat_start,
                                         int64_t count, void *data)
{
    g3_ckpt_piece_t boxes[3];
    int nb;
    size_t esz = g3_ckpt_dtype_size(tensor->dtype);
    int64_t base = 0, end = flat_start + count;
    g3_status_t st = g3_ckpt_tp_boxes(tensor, tp_rank, tp_size, boxes, &nb);

    if (st != G3_OK)
        return st;
    {
        g3_ckpt_stensor_t *s;
        st = g3_ckpt_state_tensor(state, tensor, &s);     /* registered even when count is 0 */
    }
    for (int b = 0; st == G3_OK && b < nb; b++) {
        int64_t vol = g3_ckpt_box_volume(tensor->ndim, boxes[b].extent);
        int64_t lo = flat_start > base ? flat_start : base;
        int64_t hi = end < base + vol ? end : base + vol;
        if (hi > lo)
            st = g3_ckpt_state_add_flat(state, tensor, boxes[b].offset, boxes[b].extent, lo - base,
                                        hi - lo, (char *)data + (size_t)(lo - flat_start) * esz);
        base += vol;
    }
    if (st == G3_OK && (flat_start < 0 || count < 0 || end > base)) {
        g3_error("checkpoint tensor %s: flat range [%lld, +%lld) exceeds its %lld local elements",
                 tensor->name, (long long)flat_start, (long long)count, (long long)base);
        st = G3_ERR_INVALID_ARG;
    }
    return st;
}

void g3_ckpt_state_set_progress(g3_ckpt_state_t *state, int64_t iteration,
                                int64_t consumed_samples, int64_t consumed_tokens)
{
    state->iteration = iteration;
    state->consumed_samples = consumed_samples;
    state->consumed_tokens = consumed_tokens;
}

g3_status_t g3_ckpt_state_set_config(g3_ckpt_state_t *state, const char *config_text)
{
    char *c = strdup(config_text ? config_text : "");
    if (c == NULL)
        return G3_ERR_NO_MEMORY;
    free(state->config);
    state->config = c;
    return G3_OK;
}

static g3_status_t g3_ckpt_kv_set(g3_ckpt_state_t *state, const char *key, g3_ckpt_kv_type_t type,
                                  const void *values, int n, size_t bytes)
{
    g3_ckpt_kv_t kv, *slot = NULL;

    if (key == NULL || !g3_ckpt_name_ok(key) || strchr(key, '/') != NULL || n < 0) {
        g3_error("checkpoint state key '%s' is not allowed (use [A-Za-z0-9_.-])", key ? key : "(null)");
        return G3_ERR_INVALID_ARG;
    }
    kv.key = strdup(key);
    kv.type = type;
    kv.n = n;
    kv.values = malloc(bytes ? bytes : 1);
    if (kv.key == NULL || kv.values == NULL) {
        g3_ckpt_kv_free(&kv);
        return G3_ERR_NO_MEMORY;
    }
    memcpy(kv.values, values, bytes);
    for (int i = 0; i < state->nkv; i++)
        if (strcmp(state->kv[i].key, key) == 0) {
            slot = &state->kv[i];
            g3_ckpt_kv_free(slot);
        }
    if (slot == NULL) {
        g3_ckpt_kv_t *a = realloc(state->kv, (size_t)(state->nkv + 1) * sizeof(*a));
        if (a == NULL) {
            g3_ckpt_kv_free(&kv);
            return G3_ERR_NO_MEMORY;
        }
        state->kv = a;
        slot = &state->kv[state->nkv++];
    }
    *slot = kv;
    return G3_OK;
}

g3_status_t g3_ckpt_state_set_i64(g3_ckpt_state_t *state, const char *key, const int64_t *values,
                                  int n)
{
    return g3_ckpt_kv_set(state, key, G3_CKPT_KV_I64, values, n, (size_t)n * sizeof(int64_t));
}

g3_status_t g3_ckpt_state_set_f64(g3_ckpt_state_t *state, const char *key, const double *values,
                                  int n)
{
    return g3_ckpt_kv_set(state, key, G3_CKPT_KV_F64, values, n, (size_t)n * sizeof(double));
}

g3_status_t g3_ckpt_state_set_str(g3_ckpt_state_t *state, const char *key, const char *value)
{
    return g3_ckpt_kv_set(state, key, G3_CKPT_KV_STR, value, (int)strlen(value), strlen(value) + 1);
}

g3_status_t g3_ckpt_state_snapshot(const g3_ckpt_state_t *state, g3_ckpt_state_t **copy_p)
{
    g3_ckpt_state_t *c;
    g3_status_t st = g3_ckpt_state_init(&state->layout, &c);
    int total = 0;

    if (st != G3_OK)
        return st;
    for (int i = 0; i < state->ntensors; i++)
        total += state->tensors[i].npieces;
    c->owned = calloc((size_t)total + 1, sizeof(void *));
    if (c->owned == NULL)
        goto err_free_copy;
    for (int i = 0; i < state->ntensors; i++) {
        const g3_ckpt_stensor_t *s = &state->tensors[i];
        g3_ckpt_tensor_t t = s->desc;
        t.name = s->name;
        for (int j = 0; j < s->npieces; j++) {
            g3_ckpt_piece_t p = s->pieces[j];
            size_t bytes =
                (size_t)g3_ckpt_box_volume(t.ndim, p.extent) * g3_ckpt_dtype_size(t.dtype);
            void *buf = malloc(bytes ? bytes : 1);
            if (buf == NULL)
                goto err_free_copy;
            c->owned[c->nowned++] = buf;
            memcpy(buf, p.data, bytes);
            p.data = buf;
            if (g3_ckpt_state_add(c, &t, &p, 1) != G3_OK)
                goto err_free_copy;
        }
        if (s->npieces == 0 && g3_ckpt_state_add(c, &t, NULL, 0) != G3_OK)
            goto err_free_copy;
    }
    g3_ckpt_state_set_progress(c, state->iteration, state->consumed_samples,
                               state->consumed_tokens);
    if (g3_ckpt_state_set_config(c, state->config) != G3_OK)
        goto err_free_copy;
    for (int i = 0; i < state->nkv; i++) {
        const g3_ckpt_kv_t *kv = &state->kv[i];
        size_t bytes = kv->type == G3_CKPT_KV_STR ? (size_t)kv->n + 1
                       : (size_t)kv->n * 8;
        if (g3_ckpt_kv_set(c, kv->key, kv->type, kv->values, kv->n, bytes) != G3_OK)
            goto err_free_copy;
    }
    *copy_p = c;
    return G3_OK;

err_free_copy:
    g3_error("out of memory taking a host snapshot of the checkpoint state");
    g3_ckpt_state_free(c);
    return G3_ERR_NO_MEMORY;
}
