/* Tokenizer benchmark: encode one file with a cold word cache and print
 * MB/s (the best of REPEAT runs).  Usage: bench_bpe VOCAB MERGES FILE [REPEAT] */
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "data/bpe.h"

int main(int argc, char **argv)
{
    g3_bpe_t *bpe;
    if (argc < 4) {
        fprintf(stderr, "usage: bench_bpe VOCAB MERGES FILE [REPEAT]\n");
        return 2;
    }
    int repeat = argc > 4 ? atoi(argv[4]) : 3;
    double t0 = g3_clock_now();
    if (g3_bpe_load(argv[1], argv[2], &bpe) != G3_OK)
        return 1;
    double load = g3_clock_now() - t0;
    FILE *f = fopen(argv[3], "rb");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (fread(text, 1, (size_t)n, f) != (size_t)n)
        return 1;
    fclose(f);
    double best = 1e30;
    size_t ntok = 0;
    for (int r = 0; r < repeat; r++) {
        g3_bpe_cache_t *cache;
        g3_bpe_ids_t ids = { 0 };
        g3_bpe_cache_init(&cache);
        double t = g3_clock_now();
        if (g3_bpe_encode(bpe, cache, text, (size_t)n, &ids, NULL) != G3_OK)
            return 1;
        t = g3_clock_now() - t;
        if (t < best)
            best = t;
        ntok = ids.len;
        g3_bpe_ids_free(&ids);
        g3_bpe_cache_free(cache);
    }
    printf("gpt3d encoder: %.2f MB in %.3f s = %.2f MB/s (%zu tokens, 1 thread, cold cache; vocabulary load %.3f s)\n",
           (double)n / 1e6, best, (double)n / 1e6 / best, ntok, load);
    free(text);
    g3_bpe_free(bpe);
    return 0;
}
