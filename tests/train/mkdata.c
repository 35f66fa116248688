/* Test helper: turn a text file (one document per line) into a Megatron indexed dataset with
 * the GPT-2 tokenizer of VOCAB/MERGES, an end-of-document token after each document.
 *
 *   mkdata VOCAB MERGES TEXT PREFIX        writes PREFIX.bin and PREFIX.idx
 *   mkdata --byte-vocab VOCAB MERGES       writes a small GPT-2-style vocabulary (the 256
 *                                          byte tokens, 4 merged ones, <|endoftext|>: 261
 *                                          ids) and its merges file */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "data/bpe.h"
#include "data/indexed.h"

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for 256 + n. */
static int byte_vocab(const char *vocab, const char *merges)
{
    FILE *f = fopen(vocab, "w");
    int n = 0;
    if (!f) {
        perror(vocab);
        return 1;
    }
    fprintf(f, "{");
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        int cp = printable ? b : 256 + n++;
        fprintf(f, "%s\"\\u%04x\": %d", b ? ", " : "", cp, b);
    }
    /* a few merges (the tokenizer wants at least one): " t", "he", " the", "an" */
    fprintf(
        f,
        ", \"\\u0120t\": 256, \"he\": 257, \"\\u0120the\": 258, \"an\": 259, \"<|endoftext|>\": 260}\n");
    if (fclose(f) != 0)
        return 1;
    f = fopen(merges, "w");
    if (!f) {
        perror(merges);
        return 1;
    }
    fprintf(f, "#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t he\na n\n");
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    g3_bpe_t *bpe;
    g3_bpe_cache_t *cache;
    g3_idx_writer_t *w;
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;

    if (argc == 4 && !strcmp(argv[1], "--byte-vocab"))
        return byte_vocab(argv[2], argv[3]);
    if (argc != 5) {
        fprintf(stderr, "usage: mkdata VOCAB MERGES TEXT PREFIX | mkdata --byte-vocab VOCAB MERGES\n");
        return 2;
    }
    if (g3_bpe_load(argv[1], argv[2], &bpe) != G3_OK || g3_bpe_cache_init(&cache) != G3_OK)
        return 1;
    f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    if (g3_idx_writer_open(argv[4], g3_idx_dtype_for_vocab(g3_bpe_vocab_size(bpe)), &w) != G3_OK)
        return 1;
    while ((len = getline(&line, &cap, f)) > 0) {
        g3_bpe_ids_t ids = { 0 };
        int32_t eod = g3_bpe_eod_id(bpe);
        if (g3_bpe_encode(bpe, cache, line, (size_t)len, &ids, NULL) != G3_OK)
            return 1;
        if (eod >= 0) {
            if (ids.len == ids.cap) {
                ids.ids = realloc(ids.ids, sizeof(int32_t) * (ids.cap + 1));
                ids.cap++;
            }
            ids.ids[ids.len++] = eod;
        }
        if (g3_idx_writer_add(w, ids.ids, ids.len) != G3_OK)
            return 1;
        g3_bpe_ids_free(&ids);
    }
    free(line);
    fclose(f);
    if (g3_idx_writer_finish(w) != G3_OK)
        return 1;
    g3_bpe_cache_free(cache);
    g3_bpe_free(bpe);
    return 0;
}
