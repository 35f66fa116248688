/* The GPT dataset through its public API (data/dataset.h): samples are the
 * same for DP = 1, 2, 4 and across a resume, blends stay within one sample
 * of their weights, the index cache is reused, rebuilt when stale or
 * corrupt, and bad configurations are refused.  Exactness against
 * Megatron's algorithm is tests/data/test_megatron_index.sh. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "data/dataset.h"
#include "data/indexed.h"
#include "tap.h"
#include "xorshift.h"

#define SEQ 32

static char dir[] = "/tmp/g3-test-dataset-XXXXXX";
static char pa[4096], pb[4096];

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    return g3t_xorshift64(&rng);
}

/* Documents with random sizes (some empty); token = base + position. */
static void make_dataset(const char *prefix, int ndocs, int32_t base)
{
    g3_idx_writer_t *w;
    int32_t buf[400];
    g3_idx_writer_open(prefix, G3_IDX_UINT16, &w);
    for (int d = 0; d < ndocs; d++) {
        size_t n = rnd() % 10 == 0 ? 0 : 1 + rnd() % 300;
        for (size_t i = 0; i < n; i++)
            buf[i] = (int32_t)((base + d * 7 + (int)i) % 60000);
        g3_idx_writer_add(w, buf, n);
    }
    g3_idx_writer_finish(w);
}

static g3_data_t *open_data(int npaths, char **paths, uint64_t ntrain, const char *split)
{
    g3_data_config_t cfg;
    g3_data_t *d = NULL;
    memset(&cfg, 0, sizeof(cfg));
    cfg.data_path_count = npaths;
    cfg.data_path = paths;
    cfg.split = split;
    cfg.seq_length = SEQ;
    cfg.seed = 1234;
    cfg.num_samples[G3_SPLIT_TRAIN] = ntrain;
    cfg.num_samples[G3_SPLIT_VALID] = 50;
    cfg.num_samples[G3_SPLIT_TEST] = 10;
    if (g3_data_open(&cfg, &d) != G3_OK)
        return NULL;
    return d;
}

static int count_cache_files(void)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dd)))
        n += strstr(e->d_name, ".g3ix") != NULL && strstr(e->d_name, ".tmp") == NULL;
    closedir(dd);
    return n;
}

static int find_cache(const char *needle, char *out, size_t size)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(dd)))
        if (strstr(e->d_name, needle) && strstr(e->d_name, ".g3ix")) {
            snprintf(out, size, "%s/%s", dir, e->d_name);
            found = 1;
        }
    closedir(dd);
    return found;
}

int main(void)
{
    g3_log_set_level(G3_LOG_ERROR);
    tap_mkdtemp(dir);
    snprintf(pa, sizeof(pa), "%s/a_text_document", dir);
    snprintf(pb, sizeof(pb), "%s/b_text_document", dir);
    make_dataset(pa, 400, 0);
    make_dataset(pb, 300, 30000);

    const uint64_t N = 3000;   /* > one epoch: several epochs are built */
    const int GBS = 16, ITERS = (int)(N / 16);
    char *single[1] = { pa };
    int32_t *ref = malloc(N * (SEQ + 1) * sizeof(int32_t));

    /* Reference: DP = 1 reads global samples 0..N-1 in order. */
    g3_data_t *d = open_data(1, single, N, "90,8,2");
    if (!tap_ok(d != NULL, "single dataset opens"))
        return tap_exit();
    tap_ok(g3_data_num_samples(d, G3_SPLIT_TRAIN) >= N, "train split has the samples asked for (%llu)",
           (unsigned long long)g3_data_num_samples(d, G3_SPLIT_TRAIN));
    tap_ok(g3_data_num_samples(d, G3_SPLIT_VALID) >= 50 &&
               g3_data_num_samples(d, G3_SPLIT_TEST) >= 10,
           "valid and test splits are built");
    int ok = 1;
    for (uint64_t i = 0; i < N; i++)
        ok = ok && g3_data_get(d, G3_SPLIT_TRAIN, i, ref + i * (SEQ + 1)) == G3_OK;
    tap_ok(ok, "every sample reads");
    {
        int in_range = 1;
        for (uint64_t i = 0; i < N * (SEQ + 1); i++)
            in_range = in_range && ref[i] >= 0 && ref[i] < 60000;
        tap_ok(in_range, "tokens are the dataset's tokens");
        int32_t t[SEQ + 1];
        tap_ok(g3_data_get(d, G3_SPLIT_TRAIN, g3_data_num_samples(d, G3_SPLIT_TRAIN), t) ==
                   G3_ERR_INVALID_ARG,
               "an index past the end is refused");
    }
    g3_data_close(d);
    tap_ok(count_cache_files() == 3, "one cache file per split beside the data");
    char train_cache[4400];
    tap_ok(find_cache("a_text_document_train_3000ns_32sl_1234s_0-", train_cache, sizeof(train_cache)),
           "the cache name carries split, samples, seq length, seed and document range");

    /* DP = 1, 2, 4: each rank opens the data itself (as separate processes
     * would) and reads its slice of every global batch; put together, the
     * global batches equal the reference. */
    for (int dp = 2; dp <= 4; dp *= 2) {
        int32_t *got = calloc(N * (SEQ + 1), sizeof(int32_t));
        int same = 1;
        for (int r = 0; r < dp; r++) {
            g3_data_t *dr = open_data(1, single, N, "90,8,2");
            const int per_rank = GBS / dp, mbs = 2;
            for (int it = 0; it < ITERS && dr; it++) {
                uint64_t consumed = (uint64_t)it * GBS;
                for (int m = 0; m < per_rank / mbs; m++)
                    for (int k = 0; k < mbs; k++) {
                        uint64_t j = (uint64_t)(r * per_rank + m * mbs + k);
                        g3_data_get(dr, G3_SPLIT_TRAIN, consumed + j,
                                    got + (consumed + j) * (SEQ + 1));
                    }
            }
            g3_data_close(dr);
        }
        same = memcmp(got, ref, (size_t)ITERS * GBS * (SEQ + 1) * sizeof(int32_t)) == 0;
        tap_ok(same, "DP = %d ranks see exactly the DP = 1 global batches", dp);
        free(got);
    }

    /* Resume: a new process from consumed_samples = 1200 continues with
     * the samples the uninterrupted run saw. */
    {
        g3_data_t *dr = open_data(1, single, N, "90,8,2");
        int32_t t[SEQ + 1];
        int same = dr != NULL;
        for (uint64_t i = 1200; i < N && same; i++)
            same = g3_data_get(dr, G3_SPLIT_TRAIN, i, t) == G3_OK
                   && memcmp(t, ref + i * (SEQ + 1), sizeof(t)) == 0;
        tap_ok(same, "resuming at consumed_samples = 1200 continues the same sequence");
        g3_data_close(dr);
    }

    /* The cache is reused (not rewritten) when nothing changed. */
    {
        struct stat before, after;
        stat(train_cache, &before);
        sleep(1);
        g3_data_t *dr = open_data(1, single, N, "90,8,2");
        stat(train_cache, &after);
        tap_ok(dr && before.st_mtime == after.st_mtime && before.st_ino == after.st_ino,
               "an unchanged dataset reuses its cache");
        g3_data_close(dr);
    }
    /* A corrupt cache is rebuilt, with the same samples. */
    {
        FILE *f = fopen(train_cache, "r+b");
        fseek(f, 200, SEEK_SET);
        fputc(0x5A, f);
        fclose(f);
        g3_data_t *dr = open_data(1, single, N, "90,8,2");
        int32_t t[SEQ + 1];
        int same = dr != NULL;
        for (uint64_t i = 0; i < N && same; i += 7)
            same = g3_data_get(dr, G3_SPLIT_TRAIN, i, t) == G3_OK &&
                   memcmp(t, ref + i * (SEQ + 1), sizeof(t)) == 0;
        tap_ok(same, "a corrupted cache file is detected (checksum) and rebuilt identically");
        g3_data_close(dr);
    }
    /* A changed dataset makes the cache stale. */
    {
        make_dataset(pa, 400, 5);   /* same document count, other sizes and tokens */
        g3_data_t *dr = open_data(1, single, N, "90,8,2");
        int32_t t[SEQ + 1];
        int differs = 0;
        for (uint64_t i = 0; i < 50 && dr; i++) {
            g3_data_get(dr, G3_SPLIT_TRAIN, i, t);
            differs |= memcmp(t, ref + i * (SEQ + 1), sizeof(t)) != 0;
        }
        tap_ok(dr && differs, "after the dataset changes, the stale cache is rebuilt from the new data");
        g3_data_close(dr);
    }

    /* Blend 0.3 A + 0.7 B: every prefix within one sample of the weights. */
    {
        char w1[] = "0.3", w2[] = "0.7";
        char *blend[4] = { w1, pa, w2, pb };
        const uint64_t NB = 5000;
        g3_data_t *db = open_data(4, blend, NB, "90,8,2");
        if (tap_ok(db != NULL, "a two-dataset blend opens")) {
            tap_ok(g3_data_num_samples(db, G3_SPLIT_TRAIN) == NB, "the blend has exactly the samples asked for");
            uint64_t from_a = 0;
            double worst = 0;
            int32_t t[SEQ + 1];
            for (uint64_t i = 0; i < NB; i++) {
                g3_data_get(db, G3_SPLIT_TRAIN, i, t);
                /* A's tokens are < 3200, B's >= 30000. */
                int is_a = t[0] < 30000;
                from_a += (uint64_t)is_a;
                double err = (double)from_a - 0.3 * (double)(i + 1);
                if (err < 0)
                    err = -err;
                if (err > worst)
                    worst = err;
            }
            tap_ok(worst <= 1.0, "blend shares stay within one sample of 0.3/0.7 (worst %.3f)", worst);
        }
        g3_data_close(db);
        char w3[] = "0";
        char *zero[4] = { w3, pa, w2, pb };
        tap_ok(open_data(4, zero, 10, NULL) == NULL, "a zero weight is refused");
        char *odd[3] = { w1, pa, w2 };
        tap_ok(open_data(3, odd, 10, NULL) == NULL, "an odd number of --data-path words is refused");
    }

    /* Configuration errors and empty splits. */
    {
        tap_ok(open_data(1, single, 10, "1,2,3,4") == NULL, "a four-part --split is refused");
        tap_ok(open_data(1, single, 10, "a,b") == NULL, "a non-numeric --split is refused");
        tap_ok(open_data(1, single, 10, "0,0,0") == NULL, "an all-zero --split is refused");
        char missing[4200];
        snprintf(missing, sizeof(missing), "%s/nope", dir);
        char *mp[1] = { missing };
        tap_ok(open_data(1, mp, 10, NULL) == NULL, "a missing prefix is refused");
        g3_data_t *de = open_data(1, single, 10, "100,0,0");
        tap_ok(de && g3_data_num_samples(de, G3_SPLIT_VALID) == 0 &&
                   g3_data_num_samples(de, G3_SPLIT_TRAIN) >= 10,
               "an empty valid split gives 0 valid samples, not an error");
        int32_t t[SEQ + 1];
        tap_ok(de && g3_data_get(de, G3_SPLIT_VALID, 0, t) == G3_ERR_INVALID_ARG, "reading an empty split is refused");
        g3_data_close(de);
        g3_data_config_t cfg;
        g3_data_t *dx = NULL;
        memset(&cfg, 0, sizeof(cfg));
        cfg.data_path_count = 1;
        cfg.data_path = single;
        cfg.seq_length = SEQ;
        cfg.seed = 1ULL << 33;
        cfg.num_samples[0] = 10;
        tap_ok(g3_data_open(&cfg, &dx) == G3_ERR_INVALID_ARG, "a seed above 2^32 - 1 is refused");
    }
    {
        int64_t vs, eod;
        const char *data = getenv("GPT3D_TEST_DATA");
        char vocab[4200];
        snprintf(vocab, sizeof(vocab), "%s/kjv/encoder.json", data ? data : ".");
        tap_ok(data && g3_data_vocab_info(vocab, &vs, &eod) == G3_OK && vs == 50257 && eod == 50256,
               "g3_data_vocab_info: 50257 tokens, eod 50256");
    }
    free(ref);
    tap_rmtree(dir);
    return tap_exit();
}
