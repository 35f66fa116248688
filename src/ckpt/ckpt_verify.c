/* gpt3d ckpt verify: every file present and of this format, every piece's
 * checksum, every tensor tiled exactly, the virtual datasets in place.  The checks of the
 * metadata (g3_ckpt_check_*, ckpt_check.c) are the ones every load runs too; verify adds the
 * data of the pieces no load reads and the files on disk the index does not know. */
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crc32c.h"
#include "core/log.h"

#define G3_CKPT_VERIFY_BLOCK_BYTES (64u << 20)

/* CRC-32C of a dataset's raw bytes, read in row blocks.  RET: G3_OK or FORMAT. */
static g3_status_t g3_ckpt_dataset_crc(hid_t d, hid_t type, int ndim, const int64_t *extent,
                                       size_t esz, uint32_t *crc_p)
{
    int64_t row = g3_ckpt_box_volume(ndim, extent) / extent[0];
    int64_t rows = (int64_t)(G3_CKPT_VERIFY_BLOCK_BYTES / ((size_t)row * esz));
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

/* Check one shard file: header, manifest against the index, every checksum. */
static int g3_ckpt_verify_file(const g3_ckpt_reader_t *r, size_t fi, const size_t *pidx,
                               size_t npidx, int64_t *bytes_p)
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
        if (g3_ckpt_dataset_crc(d, g3_ckpt_h5_type(dt), t->ndim, sp->extent, g3_ckpt_dtype_size(dt),
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
            faults += g3_ckpt_verify_file(r, i, &pidx[start[i]], start[i + 1] - start[i], &bytes);
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
