/* Checkpoint element types: their names and sizes, and the conversions a load makes
 * between them (f32 <-> bf16). */
#include "ckpt/ckpt_internal.h"

#include <string.h>

#include "core/bf16.h"

/* Kept in step with g3_ckpt_dtype_t by the static assertions below. */
static const char *const g3_ckpt_dtype_names[] = {
    [G3_CKPT_F32] = "f32", [G3_CKPT_BF16] = "bf16", [G3_CKPT_F16] = "f16",
    [G3_CKPT_F64] = "f64", [G3_CKPT_I32] = "i32", [G3_CKPT_I64] = "i64", [G3_CKPT_U8] = "u8",
};
static const size_t g3_ckpt_dtype_sizes[] = {
    [G3_CKPT_F32] = 4, [G3_CKPT_BF16] = 2, [G3_CKPT_F16] = 2,
    [G3_CKPT_F64] = 8, [G3_CKPT_I32] = 4, [G3_CKPT_I64] = 8, [G3_CKPT_U8] = 1,
};
_Static_assert(sizeof(g3_ckpt_dtype_names) / sizeof(g3_ckpt_dtype_names[0]) == G3_CKPT_DTYPE_COUNT,
               "g3_ckpt_dtype_names: one entry per g3_ckpt_dtype_t");
_Static_assert(sizeof(g3_ckpt_dtype_sizes) / sizeof(g3_ckpt_dtype_sizes[0]) == G3_CKPT_DTYPE_COUNT,
               "g3_ckpt_dtype_sizes: one entry per g3_ckpt_dtype_t");

const char *g3_ckpt_dtype_name(g3_ckpt_dtype_t dtype)
{
    return (unsigned)dtype < G3_CKPT_DTYPE_COUNT ? g3_ckpt_dtype_names[dtype] : "?";
}

size_t g3_ckpt_dtype_size(g3_ckpt_dtype_t dtype)
{
    return (unsigned)dtype < G3_CKPT_DTYPE_COUNT ? g3_ckpt_dtype_sizes[dtype] : 0;
}

g3_status_t g3_ckpt_dtype_parse(const char *name, g3_ckpt_dtype_t *dtype_p)
{
    for (int i = 0; i < G3_CKPT_DTYPE_COUNT; i++)
        if (strcmp(name, g3_ckpt_dtype_names[i]) == 0) {
            *dtype_p = (g3_ckpt_dtype_t)i;
            return G3_OK;
        }
    return G3_ERR_INVALID_ARG;
}

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
