/* gpt3d ckpt verify: every file present and of this format, every piece's
 * checksum, every tensor tiled exactly, the virtual datasets in place.  The checks of the
 * metadata (g3_ckpt_check_*) are the ones every load runs too; verify adds the data of the
 * pieces no load reads and the files on disk the index does not know. */
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define VERIFY_BLOCK_BYTES (64u << 20)

/* CRC-32C of a dataset's raw bytes, read in row blocks.  RET: G3_OK or FORMAT. */
static g3_status_t dataset_crc(hid_t d, hid_t type, int ndim, const int64_t *extent, size_t esz,
                               uint32_t *crc_p)
{
    int64_t row = g3_ckpt_box_volume(ndim, extent) / extent[0];
    int64_t rows = (int64_t)(VERIFY_BLOCK_BYTES / ((size_t)row * esz));
    hid_t fspace = H5Dget_space(d);
    void *buf;
    uint32_t crc = 0;
    g3_status_t st = G3_OK;

    if (rows < 1)
        rows = 1;
    if (rows > extent[0])
        rows = extent[0];
    buf = malloc((size_t)(rows * row) * esz);
    if (buf == NULL) {
        H5Sclose(fspace);
        return G3_ERR_NO_MEMORY;
    }
    for (int64_t r0 = 0; st == G3_OK && r0 < extent[0]; r0 += rows) {
        int64_t nr = extent[0] - r0 < rows ? extent[0] - r0 : rows;
        hid_t mspace = g3_ckpt_select_rows(fspace, ndim, extent, r0, nr);
        if (H5Dread(d, type, mspace, fspace, H5P_DEFAULT, buf) < 0)
            st = G3_ERR_FORMAT;
        else
            crc = g3_crc32c(crc, buf, (size_t)(nr * row) * esz);
        H5Sclose(mspace);
    }
    free(buf);
    H5Sclose(fspace);
    *crc_p = crc;
    return st;
}

static int cmp_prow(const void *a, const void *b)
{
    const g3_ckpt_prow_t *x = *(const g3_ckpt_prow_t *const *)a,
                         *y = *(const g3_ckpt_prow_t *const *)b;
    for (int k = 0; k < G3_CKPT_MAX_DIMS; k++)
        if (x->offset[k] != y->offset[k])
            return x->offset[k] < y->offset[k] ? -1 : 1;
    return 0;
}

static int verify_tiling(const g3_ckpt_reader_t *r, const g3_ckpt_trow_t *t)
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
    qsort(p, (size_t)t->npieces, sizeof(*p), cmp_prow);
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
        faults += verify_tiling(r, &r->tensors[i]);
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

int g3_ckpt_check_vds(const g3_ckpt_reader_t *r, hid_t f, const char *path)
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

/* Check one shard file: header, manifest against the index, every checksum. */
static int verify_file(const g3_ckpt_reader_t *r, size_t fi, const size_t *pidx, size_t npidx,
                       int64_t *bytes_p)
{
    const g3_ckpt_frow_t *fr = &r->files[fi];
    char path[PATH_MAX + 80], msg[512];
    int faults = 0;
    hid_t f;

    snprintf(path, sizeof(path), "%s/%s", r->dir, fr->name);
    if (g3_ckpt_h5_open(path, &f) != G3_OK)
        return 1;
    if (g3_ckpt_check_format(f, path, G3_CKPT_SHARD_FORMAT, NULL) != G3_OK) {
        H5Fclose(f);
        return 1;
    }
    faults += g3_ckpt_check_shard(r, fi, f, path);
    faults += g3_ckpt_check_manifest(r, fi, f, path);
    for (size_t q = 0; q < npidx; q++) {
        const g3_ckpt_prow_t *sp = &r->pieces[pidx[q]];
        const g3_ckpt_trow_t *t;
        char dname[G3_CKPT_NAME_MAX + 16];
        g3_ckpt_dtype_t dt;
        uint32_t crc = 0;
        hid_t d;

        t = &r->tensors[sp->tensor];
        g3_ckpt_dtype_parse(t->dtype, &dt);
        g3_ckpt_piece_dataset(t->name, sp->piece, dname, sizeof(dname));
        if (!g3_ckpt_link_exists(f, dname) || (d = H5Dopen2(f, dname, H5P_DEFAULT)) < 0) {
            g3_error("verify: %s: dataset %s (tensor %s) is missing or unreadable: %s", path, dname, t->name,
                     g3_ckpt_h5_errmsg(msg, sizeof(msg)));
            faults++;
            continue;
        }
        if (!g3_ckpt_h5_dset_matches(d, g3_ckpt_h5_type(dt), t->ndim, sp->extent)) {
            g3_error("verify: %s: dataset %s has another type or shape than the index says (%s)", path,
                     dname, t->dtype);
            faults++;
            H5Dclose(d);
            continue;
        }
        faults += g3_ckpt_check_piece(r, sp, d, path, dname);
        if (dataset_crc(d, g3_ckpt_h5_type(dt), t->ndim, sp->extent, g3_ckpt_dtype_size(dt),
                        &crc) != G3_OK) {
            g3_error("verify: %s: cannot read dataset %s: %s (truncated?)", path, dname,
                     g3_ckpt_h5_errmsg(msg, sizeof(msg)));
            faults++;
        } else if (crc != sp->crc32c) {
            g3_error("verify: checksum mismatch in %s, dataset %s (tensor %s): index says %08x, data gives %08x",
                     path, dname, t->name, sp->crc32c, crc);
            faults++;
        }
        *bytes_p += sp->nbytes;
        H5Dclose(d);
    }
    H5Fclose(f);
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

g3_status_t g3_ckpt_verify(const char *path, int *nfaults_p)
{
    g3_ckpt_reader_t *r = NULL;
    int faults = 0;
    int64_t bytes = 0;

    if (g3_ckpt_reader_open(path, &r) != G3_OK) {
        *nfaults_p = 1;
        return G3_ERR_FORMAT;
    }
    /* a checkpoint of gpt3d train (its state/data_sampler, section 7 of the format) records
     * the RNG and the tokenizer from format version 2 on: one without was altered */
    for (int k = 0; r->version >= 2 && g3_ckpt_reader_has(r, "data_sampler") && k < 2; k++) {
        const char *key = k == 0 ? "rng" : "tokenizer";
        if (!g3_ckpt_reader_has(r, key)) {
            g3_error("verify: %s (format version %d, written by gpt3d train) lacks state/%s, which every gpt3d writing that version records: the index was altered",
                     r->dir, r->version, key);
            faults++;
        }
    }
    faults += g3_ckpt_check_tiling(r);
    faults += g3_ckpt_verify_vds(r);
    {   /* pieces grouped by file (counting sort) */
        size_t *start = calloc(r->nfiles + 1, sizeof(size_t)),
               *pidx = malloc((r->npieces + 1) * sizeof(size_t));
        size_t *fill = calloc(r->nfiles + 1, sizeof(size_t));
        if (start == NULL || pidx == NULL || fill == NULL) {
            free(start);
            free(pidx);
            free(fill);
            g3_ckpt_reader_close(r);
            *nfaults_p = 1;
            return G3_ERR_NO_MEMORY;
        }
        for (size_t p = 0; p < r->npieces; p++)
            start[r->pieces[p].file + 1]++;
        for (size_t i = 0; i < r->nfiles; i++)
            start[i + 1] += start[i];
        for (size_t p = 0; p < r->npieces; p++) {
            size_t fi = (size_t)r->pieces[p].file;
            pidx[start[fi] + fill[fi]++] = p;
        }
        for (size_t i = 0; i < r->nfiles; i++)
            faults += verify_file(r, i, &pidx[start[i]], start[i + 1] - start[i], &bytes);
        free(start);
        free(pidx);
        free(fill);
    }
    {   /* files on disk the index does not know are not faults, but worth a word */
        DIR *d = opendir(r->dir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            int known = e->d_name[0] == '.' || strcmp(e->d_name, G3_CKPT_INDEX_NAME) == 0;
            for (size_t i = 0; !known && i < r->nfiles; i++)
                known = strcmp(e->d_name, r->files[i].name) == 0;
            if (!known)
                g3_warn("verify: %s/%s is not part of the checkpoint", r->dir, e->d_name);
        }
        if (d)
            closedir(d);
    }
    if (faults == 0)
        g3_info("verify: %s is complete and every checksum matches (%zu files, %zu tensors, %.1f MB)",
                r->dir, r->nfiles, r->ntensors, (double)bytes / 1e6);
    else
        g3_error("verify: %s has %d fault%s", r->dir, faults, faults > 1 ? "s" : "");
    g3_ckpt_reader_close(r);
    *nfaults_p = faults;
    return faults ? G3_ERR_FORMAT : G3_OK;
}
