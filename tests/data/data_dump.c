/* A helper for the data shell tests (not a test itself).
 *
 *   data_dump check PREFIX
 *       open and validate PREFIX.idx/.bin; print "ok S D DTYPE" (exit 0) or
 *       the reader's error (exit 1)
 *   data_dump write PREFIX uint16|int32 < lines
 *       write a dataset, one document per input line of token ids
 *   data_dump samples SPLIT FIRST COUNT SEQ_LENGTH SEED N_TRAIN N_VALID N_TEST
 *                     SPLITSTR CACHE_DIR|- DATA_PATH...
 *       open the GPT dataset through the public g3_data API and print
 *       samples FIRST..FIRST+COUNT-1 of SPLIT (train|valid|test), one per
 *       line, then "N <samples in split>"
 *   data_dump shuffle SEED N
 *       g3_np_shuffle_i64 of 0..N-1 (numpy RandomState(SEED).shuffle), one
 *       per line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "data/dataset.h"
#include "data/gpt_index.h"
#include "data/indexed.h"

static int cmd_check(const char *prefix)
{
    g3_idx_t *idx;
    if (g3_idx_open(prefix, &idx) != G3_OK)
        return 1;
    printf("ok %llu %llu %s\n", (unsigned long long)g3_idx_num_sequences(idx),
           (unsigned long long)g3_idx_num_documents(idx) + 1, g3_idx_dtype_name(g3_idx_dtype(idx)));
    g3_idx_close(idx);
    return 0;
}

static int cmd_write(const char *prefix, const char *dtype)
{
    g3_idx_writer_t *w;
    char *line = NULL;
    size_t cap = 0;
    int32_t *ids = NULL;
    size_t n, idcap = 0;
    if (g3_idx_writer_open(prefix, strcmp(dtype, "int32") == 0 ? G3_IDX_INT32 : G3_IDX_UINT16, &w) != G3_OK)
        return 1;
    while (getline(&line, &cap, stdin) >= 0) {
        char *p = line, *end;
        n = 0;
        for (;;) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            if (n == idcap) {
                idcap = idcap ? 2 * idcap : 1024;
                ids = realloc(ids, idcap * sizeof(*ids));
            }
            ids[n++] = (int32_t)v;
            p = end;
        }
        if (g3_idx_writer_add(w, ids, n) != G3_OK) {
            g3_idx_writer_abort(w);
            return 1;
        }
    }
    free(line);
    free(ids);
    return g3_idx_writer_finish(w) == G3_OK ? 0 : 1;
}

static int cmd_samples(int argc, char **argv)
{
    g3_data_config_t cfg;
    g3_data_t *d;
    g3_split_t split;
    if (argc < 11) {
        fprintf(stderr, "usage: data_dump samples SPLIT FIRST COUNT SEQ SEED NT NV NTEST SPLITSTR CACHE DATA...\n");
        return 2;
    }
    split = !strcmp(argv[0], "train") ? G3_SPLIT_TRAIN : !strcmp(argv[0], "valid") ? G3_SPLIT_VALID : G3_SPLIT_TEST;
    uint64_t first = strtoull(argv[1], NULL, 10), count = strtoull(argv[2], NULL, 10);
    memset(&cfg, 0, sizeof(cfg));
    cfg.seq_length = strtoll(argv[3], NULL, 10);
    cfg.seed = strtoull(argv[4], NULL, 10);
    cfg.num_samples[0] = strtoull(argv[5], NULL, 10);
    cfg.num_samples[1] = strtoull(argv[6], NULL, 10);
    cfg.num_samples[2] = strtoull(argv[7], NULL, 10);
    cfg.split = argv[8];
    cfg.cache_dir = strcmp(argv[9], "-") ? argv[9] : NULL;
    cfg.data_path_count = argc - 10;
    cfg.data_path = argv + 10;
    if (g3_data_open(&cfg, &d) != G3_OK)
        return 1;
    int32_t *tok = malloc((size_t)(cfg.seq_length + 1) * sizeof(int32_t));
    for (uint64_t i = first; i < first + count; i++) {
        if (g3_data_get(d, split, i, tok) != G3_OK) {
            g3_data_close(d);
            return 1;
        }
        for (int64_t k = 0; k <= cfg.seq_length; k++)
            printf(k ? " %d" : "%d", tok[k]);
        printf("\n");
    }
    printf("N %llu\n", (unsigned long long)g3_data_num_samples(d, split));
    free(tok);
    g3_data_close(d);
    return 0;
}

static int cmd_shuffle(const char *seed, const char *count)
{
    uint64_t n = strtoull(count, NULL, 10);
    int64_t *a = malloc((n ? n : 1) * sizeof(int64_t));
    g3_mt19937_t mt;
    for (uint64_t i = 0; i < n; i++)
        a[i] = (int64_t)i;
    g3_mt19937_seed(&mt, (uint32_t)strtoul(seed, NULL, 10));
    g3_np_shuffle_i64(&mt, a, n);
    for (uint64_t i = 0; i < n; i++)
        printf("%lld\n", (long long)a[i]);
    free(a);
    return 0;
}

int main(int argc, char **argv)
{
    g3_log_init_from_env();
    if (argc >= 3 && !strcmp(argv[1], "check"))
        return cmd_check(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "write"))
        return cmd_write(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "shuffle"))
        return cmd_shuffle(argv[2], argv[3]);
    if (argc >= 2 && !strcmp(argv[1], "samples"))
        return cmd_samples(argc - 2, argv + 2);
    fprintf(stderr, "usage: data_dump check|write|samples ...\n");
    return 2;
}
