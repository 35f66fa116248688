/* gpt3d data: Unicode class lookup over the generated range tables. */
#include "data/unicode_tables.h"

#include <pthread.h>
#include <stddef.h>

#include "core/table.h"

static unsigned char g3_ucs_bmp[0x10000];   /* class of every BMP code point */
static pthread_once_t g3_ucs_bmp_once = PTHREAD_ONCE_INIT;

static void g3_ucs_fill(const g3_ucs_range_t *r, unsigned n, g3_ucs_class_t cls)
{
    for (unsigned i = 0; i < n && r[i].lo < 0x10000; i++) {
        uint32_t hi = r[i].hi < 0x10000 ? r[i].hi : 0xFFFF;
        for (uint32_t cp = r[i].lo; cp <= hi; cp++)
            g3_ucs_bmp[cp] = (unsigned char)cls;
    }
}

static void g3_ucs_bmp_build(void)
{
    g3_ucs_fill(g3_ucs_letter, g3_ucs_letter_count, G3_UCS_LETTER);
    g3_ucs_fill(g3_ucs_number, g3_ucs_number_count, G3_UCS_NUMBER);
    g3_ucs_fill(g3_ucs_space, g3_ucs_space_count, G3_UCS_SPACE);
}

static int g3_ucs_in(const g3_ucs_range_t *r, unsigned n, uint32_t cp)
{
    return g3_table_find(r, n, sizeof(*r), offsetof(g3_ucs_range_t, hi), cp) != NULL;
}

g3_ucs_class_t g3_ucs_class(uint32_t cp)
{
    if (cp < 0x10000) {
        pthread_once(&g3_ucs_bmp_once, g3_ucs_bmp_build);
        return (g3_ucs_class_t)g3_ucs_bmp[cp];
    }
    if (g3_ucs_in(g3_ucs_letter, g3_ucs_letter_count, cp))
        return G3_UCS_LETTER;
    if (g3_ucs_in(g3_ucs_number, g3_ucs_number_count, cp))
        return G3_UCS_NUMBER;
    if (g3_ucs_in(g3_ucs_space, g3_ucs_space_count, cp))
        return G3_UCS_SPACE;
    return G3_UCS_OTHER;
}
