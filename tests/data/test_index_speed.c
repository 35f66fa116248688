/* The sample index over 10 million documents builds (and is cached) in
 * under 10 seconds.  The dataset is synthetic: a real .idx with 10M random
 * document sizes and a sparse .bin of the matching size (the index build
 * reads only the sizes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "data/gpt_index.h"
#include "data/indexed.h"
#include "tap.h"
#include "xorshift.h"

#define NDOCS 10000000ULL

int main(void)
{
    char dir[] = "/tmp/g3-test-speed-XXXXXX", prefix[4200], path[4300];
    uint64_t rng = 0x2545F4914F6CDD1DULL, total = 0;
    g3_log_set_level(G3_LOG_WARN);
    tap_mkdtemp(dir);
    snprintf(prefix, sizeof(prefix), "%s/big_text_document", dir);

    /* Write the .idx by hand (the layout of indexed.h). */
    int32_t *sizes = malloc(NDOCS * sizeof(int32_t));
    for (uint64_t i = 0; i < NDOCS; i++) {
        g3t_xorshift64(&rng);
        sizes[i] = (int32_t)(20 + rng % 400);   /* mean ~220 tokens */
        total += (uint64_t)sizes[i];
    }
    snprintf(path, sizeof(path), "%s.idx", prefix);
    FILE *f = fopen(path, "wb");
    uint64_t v = 1, s = NDOCS, d = NDOCS + 1;
    fwrite("MMIDIDX\0\0", 1, 9, f);
    fwrite(&v, 8, 1, f);
    fputc(8, f);
    fwrite(&s, 8, 1, f);
    fwrite(&d, 8, 1, f);
    fwrite(sizes, 4, NDOCS, f);
    int64_t *buf = malloc(NDOCS * sizeof(int64_t)), p = 0;
    for (uint64_t i = 0; i < NDOCS; i++) {
        buf[i] = p;
        p += 2 * sizes[i];
    }
    fwrite(buf, 8, NDOCS, f);
    for (uint64_t i = 0; i <= NDOCS; i++)
        fwrite(&i, 8, 1, f);
    int bad = fclose(f) != 0;
    free(buf);
    snprintf(path, sizeof(path), "%s.bin", prefix);
    f = fopen(path, "wb");
    bad |= ftruncate(fileno(f), (off_t)(2 * total)) != 0;
    fclose(f);
    if (bad)
        tap_skip_all("cannot write the 10M-document test dataset in /tmp");

    double t0 = g3_clock_now();
    g3_idx_t *idx = NULL;
    tap_ok(g3_idx_open(prefix, &idx) == G3_OK, "a 10M-document dataset opens and validates");
    double t1 = g3_clock_now();
    /* Megatron's train split of 949,50,1; one epoch of 2048-token samples. */
    uint64_t b[4];
    g3_split_parse("949,50,1", NDOCS, b);
    uint64_t ntrain = (total * 949 / 1000) / 2049;
    g3_gptidx_t *gi = NULL;
    tap_ok(g3_gptidx_open(idx, "train", b[0], b[1], 2048, 1234, ntrain, NULL, 0, &gi) == G3_OK,
           "train index over %llu documents builds", (unsigned long long)(b[1] - b[0]));
    double t2 = g3_clock_now();
    tap_diag("validate %.2f s; build + cache %.2f s (%llu documents, %llu samples, %llu epochs)",
             t1 - t0, t2 - t1, (unsigned long long)(b[1] - b[0]),
             (unsigned long long)gi->num_samples, (unsigned long long)gi->num_epochs);
    tap_ok(t2 - t0 < 10.0, "open + build + cache in %.2f s (< 10 s)", t2 - t0);
    g3_gptidx_free(gi);
    gi = NULL;
    double t3 = g3_clock_now();
    tap_ok(g3_gptidx_open(idx, "train", b[0], b[1], 2048, 1234, ntrain, NULL, 0, &gi) == G3_OK
           && g3_clock_now() - t3 < 5.0, "reloading the cached index takes %.2f s", g3_clock_now() - t3);
    g3_gptidx_free(gi);
    g3_idx_close(idx);
    free(sizes);
    tap_rmtree(dir);
    return tap_exit();
}
