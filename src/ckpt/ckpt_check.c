/* gpt3d ckpt: the checks of a checkpoint's metadata that every load and gpt3d ckpt verify
 * run (ckpt_internal.h lists them), and the index's tensor lookup they share with the reader.
 * The load (ckpt_load.c) and verify (ckpt_verify.c) both call this file, which calls
 * neither. */
#include "ckpt/ckpt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

int g3_ckpt_reader_find(const g3_ckpt_reader_t *cr, const char *name)
{
    g3_ckpt_reader_t *r = (g3_ckpt_reader_t *)cr;   /* the map is a cache */
    size_t i;

    if (r->map == NULL) {
        size_t cap = 64;
        while (cap < 2 * r->ntensors + 2)
            cap *= 2;
        r->map = malloc(cap * sizeof(int));
        if (r->map == NULL) {                      /* fall back to a scan */
            for (size_t t = 0; t < r->ntensors; t++)
                if (strcmp(r->tensors[t].name, name) == 0)
                    return (int)t;
            return -1;
        }
        memset(r->map, 0xff, cap * sizeof(int));
        r->mapcap = cap;
        for (size_t t = 0; t < r->ntensors; t++) {
            i = g3_ckpt_name_hash(r->tensors[t].name) & (cap - 1);
            while (r->map[i] >= 0)
                i = (i + 1) & (cap - 1);
            r->map[i] = (int)t;
        }
    }
    i = g3_ckpt_name_hash(name) & (r->mapcap - 1);
    while (r->map[i] >= 0) {
        if (strcmp(r->tensors[r->map[i]].name, name) == 0)
            return r->map[i];
        i = (i + 1) & (r->mapcap - 1);
    }
    return -1;
}

static int g3_ckpt_cmp_prow(const void *a, const void *b)
{
    const g3_ckpt_prow_t *x = *(const g3_ckpt_prow_t *const *)a,
                         *y = *(const g3_ckpt_prow_t *const *)b;
    for (int k = 0; k < G3_CKPT_MAX_DIMS; k++)
        if (x->offset[k] != y->offset[k])
            return x->offset[k] < y->offset[k] ? -1 : 1;
    return 0;
}

static int g3_ckpt_verify_tiling(const g3_ckpt_reader_t *r, const g3_ckpt_trow_t *t)
{
    const g3_ckpt_prow_t **p = malloc((size_t)(t->npieces + 1) * sizeof(*p));
    int64_t total = 0, want = g3_ckpt_box_volume(t->ndim, t->shape);
    int faults = 0;

    if (p == NULL) {
        g3_error("out of memory checking the tiling of tensor %s in %s", t->name, r->dir);
        return 1;
    }
    for (int64_t i = 0; i < t->npieces; i++)
        p[i] = &r->pieces[t->first_piece + i];
    qsort(p, (size_t)t->npieces, sizeof(*p), g3_ckpt_cmp_prow);
    for (int64_t i = 0; i < t->npieces; i++) {
        for (int k = 0; k < t->ndim; k++)
            if (p[i]->offset[k] < 0 || p[i]->extent[k] <= 0 ||
                p[i]->offset[k] + p[i]->extent[k] > t->shape[k]) {
                g3_error("checkpoint %s: tensor %s: a piece in %s lies outside the tensor's shape: the index is damaged", r->dir, t->name,
                         r->files[p[i]->file].name);
                faults++;
                break;
            }
        total += g3_ckpt_box_volume(t->ndim, p[i]->extent);
        for (int64_t j = i + 1;
             j < t->npieces && p[j]->offset[0] < p[i]->offset[0] + p[i]->extent[0]; j++) {
            int64_t io[G3_CKPT_MAX_DIMS], ie[G3_CKPT_MAX_DIMS];
            if (g3_ckpt_box_intersect(t->ndim, p[i]->offset, p[i]->extent, p[j]->offset,
                                      p[j]->extent, io, ie)) {
                g3_error("checkpoint %s: tensor %s: pieces in %s and %s overlap: the index is damaged", r->dir, t->name, r->files[p[i]->file].name,
                         r->files[p[j]->file].name);
                faults++;
            }
        }
    }
    if (total != want) {
        g3_error("checkpoint %s: tensor %s: its pieces hold %lld of %lld elements: the checkpoint is incomplete",
                 r->dir, t->name, (long long)total, (long long)want);
        faults++;
    }
    free(p);
    return faults;
}

int g3_ckpt_check_tiling(const g3_ckpt_reader_t *r)
{
    int faults = 0;

    for (size_t i = 0; i < r->ntensors; i++)
        faults += g3_ckpt_verify_tiling(r, &r->tensors[i]);
    return faults;
}

/* ---- checks shared by verify and every load ------------------------------------------------ */

int g3_ckpt_check_shard(const g3_ckpt_reader_t *r, size_t fi, hid_t f, const char *path)
{
    const g3_ckpt_frow_t *fr = &r->files[fi];
    char kind[16] = "";
    int32_t tp = -1, pp = -1, dp = -1;
    int64_t it = -1;
    int faults = 0;

    g3_ckpt_attr_read_str(f, "kind", kind, sizeof(kind));
    g3_ckpt_attr_read_i32(f, "tp", &tp);
    g3_ckpt_attr_read_i32(f, "pp", &pp);
    g3_ckpt_attr_read_i32(f, "dp", &dp);
    g3_ckpt_attr_read_i64(f, "iteration", &it, 1);
    if (it != r->iteration) {
        g3_error("shard file %s belongs to iteration %lld but the index is for iteration %lld: it was copied from another checkpoint",
                 path, (long long)it, (long long)r->iteration);
        return 1;
    }
    if (tp != fr->tp || pp != fr->pp || dp != fr->dp ||
        strcmp(kind, fr->kind == G3_CKPT_MODEL ? "model" : "optim") != 0) {
        g3_error("%s says it is %s (tp %d, pp %d, dp %d); the index expects %s (tp %d, pp %d, dp %d): the file was renamed or altered",
                 path, kind, tp, pp, dp, fr->kind == G3_CKPT_MODEL ? "model" : "optim", fr->tp, fr->pp, fr->dp);
        faults++;
    }
    return faults;
}

int g3_ckpt_check_manifest(const g3_ckpt_reader_t *r, size_t fi, hid_t f, const char *path)
{
    g3_ckpt_mrow_t *rows = NULL;
    size_t nrows = 0, nidx = 0;
    unsigned char *seen = NULL;
    int faults = 0;

    if (g3_ckpt_table_read(f, "manifest", G3_CKPT_TABLE_MANIFEST, (void **)&rows, &nrows, path) != G3_OK)
        return 1;
    seen = calloc(r->npieces + 1, 1);
    if (seen == NULL) {
        free(rows);
        g3_error("out of memory checking the manifest of %s", path);
        return faults + 1;
    }
    for (size_t p = 0; p < r->npieces; p++)
        nidx += (size_t)r->pieces[p].file == fi;
    /* Each manifest row is one piece of the index in this file, with the same box and checksum. */
    for (size_t i = 0; i < nrows && faults < 8; i++) {
        g3_ckpt_mrow_t *m = &rows[i];
        int ti, found = 0;

        m->tensor[sizeof(m->tensor) - 1] = '\0';
        ti = g3_ckpt_reader_find(r, m->tensor);
        for (int64_t p = ti < 0 ? 0 : r->tensors[ti].first_piece;
             ti >= 0 && p < r->tensors[ti].first_piece + r->tensors[ti].npieces; p++) {
            const g3_ckpt_prow_t *sp = &r->pieces[p];
            int same = 1;
            if ((size_t)sp->file != fi || sp->piece != m->piece)
                continue;
            found = 1;
            for (int k = 0; k < r->tensors[ti].ndim && k < G3_CKPT_MAX_DIMS; k++)
                same = same && sp->offset[k] == m->offset[k] && sp->extent[k] == m->extent[k];
            if (!same || sp->crc32c != m->crc32c || seen[p]) {
                g3_error("%s: the manifest's row for %s piece %d disagrees with the index (box or checksum): the file was altered",
                         path, m->tensor, (int)m->piece);
                faults++;
            }
            seen[p] = 1;
            break;
        }
        if (!found) {
            g3_error("%s: the manifest lists %s piece %d, which the index does not place in this file: the file was altered or comes from another checkpoint",
                     path, m->tensor, (int)m->piece);
            faults++;
        }
    }
    if (nrows != nidx) {
        g3_error("%s lists %zu pieces in its manifest but the index has %zu for it: the file was altered or comes from another checkpoint", path, nrows, nidx);
        faults++;
    }
    free(seen);
    free(rows);
    return faults;
}

int g3_ckpt_check_piece(const g3_ckpt_reader_t *r, const g3_ckpt_prow_t *sp, hid_t d,
                        const char *path, const char *dname)
{
    uint32_t attr_crc = 0;

    (void)r;
    if (g3_ckpt_attr_read_u32(d, "crc32c", &attr_crc) != G3_OK) {
        g3_error("%s: dataset %s has no readable crc32c attribute: the file is damaged", path, dname);
        return 1;
    }
    if (attr_crc != sp->crc32c) {
        g3_error("%s: dataset %s carries crc32c attribute %08x but the index says %08x: the file or the index was altered",
                 path, dname, attr_crc, sp->crc32c);
        return 1;
    }
    return 0;
}

static int g3_ckpt_check_vds(const g3_ckpt_reader_t *r, hid_t f, const char *path)
{
    int faults = 0;

    for (size_t i = 0; i < r->ntensors && faults < 8; i++) {
        const g3_ckpt_trow_t *t = &r->tensors[i];
        hid_t d, dcpl;
        size_t count = 0;
        g3_ckpt_dtype_t dt;
        int ok;

        if (!g3_ckpt_link_exists(f, t->name) || (d = H5Dopen2(f, t->name, H5P_DEFAULT)) < 0) {
            g3_error("%s has no readable virtual dataset /%s: the index is damaged", path, t->name);
            faults++;
            continue;
        }
        g3_ckpt_dtype_parse(t->dtype, &dt);
        ok = g3_ckpt_h5_dset_matches(d, g3_ckpt_h5_type(dt), t->ndim, t->shape);
        dcpl = H5Dget_create_plist(d);
        ok = ok && dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL &&
             H5Pget_virtual_count(dcpl, &count) >= 0 && count == (size_t)t->npieces;
        /* mapping k is piece first_piece + k: its file, its dataset, its box */
        for (size_t k = 0; ok && k < count; k++) {
            const g3_ckpt_prow_t *sp = &r->pieces[t->first_piece + (int64_t)k];
            char want[G3_CKPT_NAME_MAX + 16], got[G3_CKPT_NAME_MAX + 16];
            hsize_t lo[G3_CKPT_MAX_DIMS], hi[G3_CKPT_MAX_DIMS];
            hid_t vs;
            ssize_t n = H5Pget_virtual_filename(dcpl, k, got, sizeof(got));
            ok = n > 0 && (size_t)n < sizeof(got) && strcmp(got, r->files[sp->file].name) == 0;
            g3_ckpt_piece_dataset(t->name, sp->piece, want, sizeof(want));
            n = ok ? H5Pget_virtual_dsetname(dcpl, k, got, sizeof(got)) : -1;
            ok = ok && n > 0 && (size_t)n < sizeof(got) && strcmp(got, want) == 0;
            vs = ok ? H5Pget_virtual_vspace(dcpl, k) : -1;
            ok = ok && vs >= 0 && H5Sget_select_bounds(vs, lo, hi) >= 0;
            for (int j = 0; ok && j < t->ndim; j++)
                ok = (int64_t)lo[j] == sp->offset[j] &&
                     (int64_t)hi[j] == sp->offset[j] + sp->extent[j] - 1;
            if (vs >= 0)
                H5Sclose(vs);
        }
        if (!ok) {
            g3_error("%s: /%s is not the virtual dataset of its %lld pieces (type, shape, source file, source dataset or box differ from the index): the index is damaged",
                     path, t->name, (long long)t->npieces);
            faults++;
        }
        if (dcpl >= 0)
            H5Pclose(dcpl);
        H5Dclose(d);
    }
    return faults;
}

int g3_ckpt_verify_vds(const g3_ckpt_reader_t *r)
{
    char path[PATH_MAX + 16];
    hid_t f;
    int faults, sealed;

    snprintf(path, sizeof(path), "%s/%s", r->dir, G3_CKPT_INDEX_NAME);
    if (g3_ckpt_index_open(path, &f, &sealed) != G3_OK)
        return 1;
    faults = g3_ckpt_check_vds(r, f, path);
    H5Fclose(f);
    return faults;
}
