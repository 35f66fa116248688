/* MMIDIDX v1: writer/reader round trip, exact byte layout, and errors that
 * name the file and the field for hand-corrupted files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "data/indexed.h"
#include "tap.h"
#include "xorshift.h"

static char dir[] = "/tmp/g3-test-indexed-XXXXXX";
static char prefix[4096], idxp[4200], binp[4200];

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    stat(path, &sb);
    unsigned char *b = malloc((size_t)sb.st_size + 1);
    *n = fread(b, 1, (size_t)sb.st_size, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

/* Open the dataset with stderr captured; RET the status, *msg the text. */
static g3_status_t open_capture(char *msg, size_t size)
{
    char errf[4200];
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    g3_idx_t *idx = NULL;
    g3_status_t st = g3_idx_open(prefix, &idx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    g3_idx_close(idx);
    FILE *f = fopen(errf, "r");
    size_t n = fread(msg, 1, size - 1, f);
    msg[n] = '\0';
    fclose(f);
    return st;
}

/* Restore the good files, apply a corruption to the .idx (or .bin), and
 * check the status and that the message names the file and the field. */
static void corrupt_case(const unsigned char *idx, size_t ni, const unsigned char *bin, size_t nb,
                         size_t off, const void *bytes, size_t len, size_t idx_len, size_t bin_len,
                         g3_status_t want, const char *field, const char *what)
{
    unsigned char *c = malloc(ni + len);
    memcpy(c, idx, ni);
    if (bytes)
        memcpy(c + off, bytes, len);
    spit(idxp, c, idx_len ? idx_len : ni);
    spit(binp, bin, bin_len ? bin_len : nb);
    free(c);
    char msg[4096];
    g3_status_t st = open_capture(msg, sizeof(msg));
    int ok = st == want && strstr(msg, field) != NULL && strstr(msg, bin_len ? "" : idxp) != NULL;
    tap_ok(ok, "%s: %s, message names '%s'", what, g3_status_string(want), field);
    if (!ok)
        tap_diag("got %s: %s", g3_status_string(st), msg);
}

/* Write PREFIX.idx/.bin by hand: dtype code, n sequences of sizes[i] tokens, values v (as
 * int64, stored in the dtype). */
static void write_raw(int dtype, size_t itemsize, uint64_t n, const int32_t *sizes,
                      const int64_t *v)
{
    FILE *f = fopen(idxp, "wb");
    uint64_t ver = 1, d = n + 1, total = 0;
    fwrite("MMIDIDX\0\0", 1, 9, f);
    fwrite(&ver, 8, 1, f);
    fputc(dtype, f);
    fwrite(&n, 8, 1, f);
    fwrite(&d, 8, 1, f);
    fwrite(sizes, 4, n, f);
    for (uint64_t i = 0; i < n; i++) {
        int64_t ptr = (int64_t)(total * itemsize);
        fwrite(&ptr, 8, 1, f);
        total += (uint64_t)sizes[i];
    }
    for (uint64_t i = 0; i <= n; i++)
        fwrite(&i, 8, 1, f);
    fclose(f);
    f = fopen(binp, "wb");
    for (uint64_t k = 0; k < total; k++)
        fwrite(&v[k], itemsize, 1, f);   /* little-endian: the low bytes */
    fclose(f);
}

/* g3_idx_token_range and g3_idx_token_find_outside against a plain loop, for every integer
 * dtype, on sequence ranges whose lengths are not multiples of the vector width and that
 * cross the scan's 256 KiB read chunks. */
static void token_range_cases(void)
{
    static const struct { int code; size_t size; int64_t lo, hi;
    } dt[] = {
        { G3_IDX_UINT8, 1, 0, 255 },
        { G3_IDX_INT8, 1, -128, 127 },
        { G3_IDX_INT16, 2, -32768, 32767 },
        { G3_IDX_UINT16, 2, 0, 65535 },
        { G3_IDX_INT32, 4, -2147483647 - 1, 2147483647 },
        { G3_IDX_INT64, 8, -2147483647 - 1, 2147483647 },
    };
    enum { NSEQ = 7 };
    int32_t sizes[NSEQ] = { 3, 0, 131, 70001, 1, 200003, 65 };
    uint64_t total = 0, rng = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < NSEQ; i++)
        total += (uint64_t)sizes[i];
    int64_t *v = malloc(total * sizeof(int64_t));
    for (size_t t = 0; t < sizeof(dt) / sizeof(dt[0]); t++) {
        int ok = 1;
        for (uint64_t k = 0; k < total; k++) {
            g3t_xorshift64(&rng);
            /* mostly a narrow band, with the extremes planted at a few places */
            v[k] = dt[t].lo + (int64_t)(rng % 100);
        }
        v[total - 1] = dt[t].hi;                 /* the last token of the last sequence */
        v[3 + 131 + 70000] = dt[t].lo;           /* the last token of sequence 3 */
        v[3 + 131 + 70001 + 1 + 100000] = dt[t].hi - 1;
        write_raw(dt[t].code, dt[t].size, NSEQ, sizes, v);
        g3_idx_t *x = NULL;
        if (g3_idx_open(prefix, &x) != G3_OK) {
            tap_ok(0, "%s: opens", g3_idx_dtype_name(dt[t].code));
            continue;
        }
        for (uint64_t a = 0; a <= NSEQ && ok; a++)
            for (uint64_t b = a; b <= NSEQ && ok; b++) {
                int64_t lo, hi, wlo = 0, whi = -1;
                uint64_t off = 0, n = 0, seq, pos;
                int64_t val;
                for (uint64_t i = 0; i < a; i++)
                    off += (uint64_t)sizes[i];
                for (uint64_t i = a; i < b; i++)
                    n += (uint64_t)sizes[i];
                for (uint64_t k = off; k < off + n; k++) {
                    if (k == off || v[k] < wlo) wlo = v[k];
                    if (k == off || v[k] > whi) whi = v[k];
                }
                g3_idx_token_range(x, a, b, &lo, &hi);
                if (lo != wlo || hi != whi)
                    ok = 0;
                /* the first token >= whi (or the none when the range is empty) */
                int found = g3_idx_token_find_outside(x, a, b, dt[t].lo, whi, &seq, &pos, &val);
                if (n > 0 && (!found || val != whi))
                    ok = 0;
                if (n == 0 && found)
                    ok = 0;
            }
        tap_ok(ok, "%s: the token range and the first token outside a range equal a plain loop's over every sequence range",
               g3_idx_dtype_name(dt[t].code));
        g3_idx_close(x);
    }
    free(v);
}

int main(void)
{
    g3_log_set_level(G3_LOG_ERROR);
    tap_mkdtemp(dir);
    snprintf(prefix, sizeof(prefix), "%s/ds", dir);
    snprintf(idxp, sizeof(idxp), "%s.idx", prefix);
    snprintf(binp, sizeof(binp), "%s.bin", prefix);

    /* Documents of sizes 3, 0, 5, 1 (an empty one included). */
    int32_t docs[4][5] = { { 1, 2, 3 }, { 0 }, { 65535, 0, 7, 50256, 9 }, { 42 } };
    size_t lens[4] = { 3, 0, 5, 1 };
    for (int pass = 0; pass < 2; pass++) {
        g3_idx_dtype_t dt = pass == 0 ? G3_IDX_UINT16 : G3_IDX_INT32;
        g3_idx_writer_t *w;
        unlink(idxp);
        unlink(binp);
        tap_ok(g3_idx_writer_open(prefix, dt, &w) == G3_OK, "%s writer opens", g3_idx_dtype_name(dt));
        for (int d = 0; d < 4; d++)
            g3_idx_writer_add(w, docs[d], lens[d]);
        tap_ok(access(idxp, F_OK) != 0, "nothing under the final names before finish");
        tap_ok(g3_idx_writer_finish(w) == G3_OK, "writer finishes");

        size_t ni, nb;
        unsigned char *idx = slurp(idxp, &ni), *bin = slurp(binp, &nb);
        size_t item = dt == G3_IDX_UINT16 ? 2 : 4;
        tap_ok(ni == 34 + 4 * 12 + 5 * 8 && nb == 9 * item, "file sizes follow the layout (%zu, %zu)", ni, nb);
        uint64_t v, s, dcount;
        memcpy(&v, idx + 9, 8);
        memcpy(&s, idx + 18, 8);
        memcpy(&dcount, idx + 26, 8);
        tap_ok(memcmp(idx, "MMIDIDX\0\0", 9) == 0 && v == 1 && idx[17] == (dt == G3_IDX_UINT16 ? 8 : 4)
               && s == 4 && dcount == 5, "header: magic, version 1, dtype code, 4 sequences, 5 doc entries");
        int64_t ptr3, doc4;
        memcpy(&ptr3, idx + 34 + 16 + 3 * 8, 8);
        memcpy(&doc4, idx + 34 + 16 + 32 + 4 * 8, 8);
        tap_ok(ptr3 == (int64_t)(8 * item) && doc4 == 4, "pointers are byte offsets; doc_idx ends at S");

        g3_idx_t *x;
        tap_ok(g3_idx_open(prefix, &x) == G3_OK, "reader opens what the writer wrote");
        int ok = g3_idx_num_sequences(x) == 4 && g3_idx_num_documents(x) == 4;
        for (int d = 0; d < 4; d++) {
            int32_t got[5] = { -1, -1, -1, -1, -1 };
            ok = ok && g3_idx_size(x, (uint64_t)d) == (int32_t)lens[d];
            g3_idx_read(x, (uint64_t)d, 0, lens[d], got);
            ok = ok && memcmp(got, docs[d], lens[d] * 4) == 0;
        }
        int32_t mid[2];
        g3_idx_read(x, 2, 2, 2, mid);
        ok = ok && mid[0] == 7 && mid[1] == 50256;
        tap_ok(ok, "sizes and tokens read back (including offsets inside a sequence)");
        tap_ok(g3_idx_max_token_bound(x) == 65536, "max token bound is 1 + the largest id");
        g3_idx_close(x);

        if (pass == 0) {
            /* Hand-corrupted files. */
            uint64_t big = 1000;
            unsigned char bad_dtype = 9, float_dtype = 7;
            uint64_t v2 = 2;
            int64_t past = 1000, back = 0, bad_doc = 7, odd = 3;
            size_t p_off = 34 + 16, d_off = 34 + 16 + 32;
            corrupt_case(idx, ni, bin, nb, 0, "MMIDIDY", 7, 0, 0, G3_ERR_FORMAT, "magic", "wrong magic");
            corrupt_case(idx, ni, bin, nb, 9, &v2, 8, 0, 0, G3_ERR_VERSION, "version 2", "unknown version");
            corrupt_case(idx, ni, bin, nb, 17, &bad_dtype, 1, 0, 0, G3_ERR_FORMAT, "dtype code 9", "unknown dtype");
            corrupt_case(idx, ni, bin, nb, 17, &float_dtype, 1, 0, 0, G3_ERR_FORMAT, "float32", "float dtype");
            corrupt_case(idx, ni, bin, nb, 0, NULL, 0, 20, 0, G3_ERR_FORMAT, "truncated", "truncated header");
            corrupt_case(idx, ni, bin, nb, 0, NULL, 0, ni - 8, 0, G3_ERR_FORMAT, "truncated", "truncated doc_idx");
            corrupt_case(idx, ni, bin, nb, 18, &big, 8, 0, 0, G3_ERR_FORMAT, "sequence count", "sequence count too large");
            corrupt_case(idx, ni, bin, nb, p_off + 8 * 3, &past, 8, 0, 0, G3_ERR_FORMAT, "pointers[3]", "pointer past the end of .bin");
            corrupt_case(idx, ni, bin, nb, p_off + 8 * 2, &back, 8, 0, 0, G3_ERR_FORMAT, "pointers[2]", "pointer going backwards");
            corrupt_case(idx, ni, bin, nb, p_off + 8 * 1, &odd, 8, 0, 0, G3_ERR_FORMAT, "pointers[1]", "misaligned pointer");
            corrupt_case(idx, ni, bin, nb, d_off + 8 * 2, &bad_doc, 8, 0, 0, G3_ERR_FORMAT, "doc_idx[2]", "document index out of range");
            corrupt_case(idx, ni, bin, nb, 0, NULL, 0, 0, nb - 2, G3_ERR_FORMAT, "past the end", "truncated .bin");
            /* A missing .bin. */
            spit(idxp, idx, ni);
            unlink(binp);
            char msg[4096];
            tap_ok(open_capture(msg, sizeof(msg)) == G3_ERR_NOT_FOUND && strstr(msg, binp),
                   "a missing .bin is NOT_FOUND and named");
        }
        free(idx);
        free(bin);
    }
    {
        g3_idx_writer_t *w;
        int32_t big = 70000;
        g3_idx_writer_open(prefix, G3_IDX_UINT16, &w);
        tap_ok(g3_idx_writer_add(w, &big, 1) == G3_ERR_INVALID_ARG, "an id above 65535 is refused for uint16");
        g3_idx_writer_abort(w);
        tap_ok(g3_idx_dtype_for_vocab(50257) == G3_IDX_UINT16 &&
                   g3_idx_dtype_for_vocab(65500) == G3_IDX_INT32,
               "dtype choice follows Megatron (uint16 below 65500)");
    }
    token_range_cases();
    tap_rmtree(dir);
    return tap_exit();
}
