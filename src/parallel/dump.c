/* gpt3d parallel: gradient (and parameter) dumps for the equivalence tests
 * (tests/parallel/grad_check).
 *
 * File DIR/grads-rank<RRRRR>.bin (params-rank<RRRRR>.bin), little-endian:
 *   header   "gpt3d-grad-dump\n" (16 bytes), u32 version (1), u32 world rank
 *   records  u32 name length, name bytes, u32 ndim, i64 shape[2] (global),
 *            u64 count, u64 index[count] (global row-major element index), f32 value[count]
 * A record holds the elements of one tensor that the rank holds in a range of its flat
 * buffer; a checker puts them at their global indices, whatever the layout was. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "parallel/par.h"

#define G3_DUMP_MAGIC   "gpt3d-grad-dump\n"
#define G3_DUMP_VERSION 1u

g3_status_t g3_par_dump_open(const char *dir, const char *what, int rank, char *path,
                             size_t path_len, FILE **f_p)
{
    uint32_t head[2] = { G3_DUMP_VERSION, (uint32_t)rank };
    FILE *f;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        g3_error("gradient dump: cannot create the directory %s: %s", dir, strerror(errno));
        return G3_ERR_IO;
    }
    snprintf(path, path_len, "%s/%s-rank%05d.bin", dir, what, rank);
    f = fopen(path, "wb");
    if (!f) {
        g3_error("gradient dump: cannot create %s: %s; pass an existing, writable directory",
                 path, strerror(errno));
        return G3_ERR_IO;
    }
    if (fwrite(G3_DUMP_MAGIC, 1, 16, f) != 16 || fwrite(head, sizeof(head), 1, f) != 1) {
        g3_error("gradient dump: cannot write %s: %s", path, strerror(errno));
        fclose(f);
        return G3_ERR_IO;
    }
    *f_p = f;
    return G3_OK;
}

g3_status_t g3_par_dump_close(FILE *f, const char *path)
{
    if (fclose(f) != 0) {
        g3_error("gradient dump: cannot finish writing %s: %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    return G3_OK;
}

g3_status_t g3_par_dump_range(FILE *f, const char *path, const g3_gpt_t *m, size_t begin,
                              size_t end, const float *grad)
{
    for (int k = 0; k < m->nparams; k++) {
        const g3_gpt_param_t *p = &m->params[k];
        size_t lo = p->offset > begin ? p->offset : begin;
        size_t hi = p->offset + p->numel < end ? p->offset + p->numel : end;
        uint32_t nlen = (uint32_t)strlen(p->name), ndim = (uint32_t)p->ndim;
        uint64_t count, *idx;
        int ok;

        if (lo >= hi)
            continue;
        count = hi - lo;
        idx = malloc(sizeof(uint64_t) * count);
        if (!idx) {
            g3_error("gradient dump: out of memory");
            return G3_ERR_NO_MEMORY;
        }
        for (uint64_t i = 0; i < count; i++)
            idx[i] = g3_gpt_param_global_index(p, m->cfg.tp_rank, lo - p->offset + i);
        ok = fwrite(&nlen, 4, 1, f) == 1 && fwrite(p->name, 1, nlen, f) == nlen &&
             fwrite(&ndim, 4, 1, f) == 1 && fwrite(p->shape, 8, 2, f) == 2 &&
             fwrite(&count, 8, 1, f) == 1 && fwrite(idx, 8, count, f) == count &&
             fwrite(grad + (lo - begin), 4, count, f) == count;
        free(idx);
        if (!ok) {
            g3_error("gradient dump: cannot write %s: %s", path, strerror(errno));
            return G3_ERR_IO;
        }
    }
    return G3_OK;
}

g3_status_t g3_par_dump_model(const char *dir, const g3_gpt_t *m, int params, int rank)
{
    float *host = malloc(sizeof(float) * (m->numel ? m->numel : 1));
    char path[4200];
    FILE *f;
    g3_status_t st;

    if (!host) {
        g3_error("gradient dump: out of memory");
        return G3_ERR_NO_MEMORY;
    }
    st = g3_par_dump_open(dir, params ? "params" : "grads", rank, path, sizeof(path), &f);
    if (st == G3_OK) {
        m->be->ops->download(m->be, host, params ? m->w : m->g, sizeof(float) * m->numel);
        st = g3_par_dump_range(f, path, m, 0, m->numel, host);
        if (g3_par_dump_close(f, path) != G3_OK && st == G3_OK)
            st = G3_ERR_IO;
    }
    free(host);
    return st;
}
