/* gpt3d tokenize: GPT-2 BPE on standard input.
 *
 *   gpt3d tokenize --vocab-file encoder.json --merge-file vocab.bpe < text
 *       prints the ids separated by single spaces and one final newline;
 *   gpt3d tokenize ... --decode < ids
 *       reads whitespace-separated ids and writes the bytes they stand for.
 *
 * All of stdin is one text (no line splitting), so the ids equal those of
 * the reference encoder run on the whole input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/opt.h"
#include "data/bpe.h"

static const g3_opt_spec_t g3_tokenize_specs[] = {
    { "vocab-file", G3_OPT_STRING, NULL, "GPT-2 vocabulary: encoder.json or vocab.json.", NULL, 0, 0, "FILE" },
    { "merge-file", G3_OPT_STRING, NULL, "GPT-2 merges: vocab.bpe or merges.txt.", NULL, 0, 0, "FILE" },
    { "decode",     G3_OPT_BOOL,   NULL, "Read ids on stdin and write the text they encode.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_tokenize_cmd = {
    "tokenize", "Encode stdin to GPT-2 BPE ids, or decode ids back to text.", NULL, 0, 0,
    g3_tokenize_specs
};

/* Read all of stdin.  OUT: *data_p (malloc'd), *len_p. */
static g3_status_t g3_cmd_tokenize_slurp(char **data_p, size_t *len_p)
{
    g3_status_t st = g3_read_stream(stdin, data_p, len_p);
    if (st == G3_ERR_NO_MEMORY)
        g3_error("gpt3d tokenize: out of memory reading standard input");
    else if (st != G3_OK)
        g3_error("gpt3d tokenize: cannot read standard input: %s", strerror(errno));
    return st;
}

static g3_status_t g3_cmd_tokenize_encode(const g3_bpe_t *bpe, const char *text, size_t len)
{
    g3_bpe_cache_t *cache = NULL;
    g3_bpe_ids_t ids = { 0 };
    size_t bad = 0;
    char *out = NULL;
    g3_status_t st = g3_bpe_cache_init(&cache);

    if (st != G3_OK)
        return st;
    st = g3_bpe_encode(bpe, cache, text, len, &ids, &bad);
    if (st == G3_ERR_FORMAT) {
        g3_error("gpt3d tokenize: standard input is not valid UTF-8: byte offset %zu (byte 0x%02x); fix the text or convert it (e.g. iconv -f LATIN1 -t UTF-8), or use 'gpt3d preprocess', which replaces bad bytes with U+FFFD",
                 bad, (unsigned char)text[bad]);
        goto err_free;
    }
    if (st != G3_OK) {
        g3_error("gpt3d tokenize: encoding failed: %s", g3_status_string(st));
        goto err_free;
    }
    out = malloc(ids.len * 12 + 2);
    if (!out) {
        st = G3_ERR_NO_MEMORY;
        g3_error("gpt3d tokenize: out of memory for %zu ids", ids.len);
        goto err_free;
    }
    size_t o = 0;
    for (size_t i = 0; i < ids.len; i++) {
        char tmp[12];
        int k = 0;
        uint32_t v = (uint32_t)ids.ids[i];
        do {
            tmp[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        if (i)
            out[o++] = ' ';
        while (k)
            out[o++] = tmp[--k];
    }
    out[o++] = '\n';
    if (fwrite(out, 1, o, stdout) != o || fflush(stdout) != 0) {
        g3_error("gpt3d tokenize: cannot write standard output: %s", strerror(errno));
        st = G3_ERR_IO;
    }
err_free:
    free(out);
    g3_bpe_ids_free(&ids);
    g3_bpe_cache_free(cache);
    return st;
}

static g3_status_t g3_cmd_tokenize_decode(const g3_bpe_t *bpe, const char *text, size_t len)
{
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, outlen;
    char *out = NULL;
    g3_status_t st;

    for (size_t i = 0; i < len;) {
        while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
            i++;
        if (i >= len)
            break;
        size_t start = i;
        long long v = 0;
        while (i < len && text[i] >= '0' && text[i] <= '9' && v <= INT32_MAX)
            v = v * 10 + (text[i++] - '0');
        if (i == start || v > INT32_MAX ||
            (i < len && text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r')) {
            size_t e = start, shown;
            int digits = 1;
            while (e < len && text[e] != ' ' && text[e] != '\n' && text[e] != '\t' &&
                   text[e] != '\r') {
                digits &= text[e] >= '0' && text[e] <= '9';
                e++;
            }
            shown = e - start > 64 ? 64 : e - start;   /* the whole word, up to 64 bytes */
            g3_error("gpt3d tokenize --decode: '%.*s%s' (token %zu, byte offset %zu of standard input) is not a token id%s; give non-negative integers separated by whitespace",
                     (int)shown, text + start, shown < e - start ? "..." : "", n, start,
                     digits ? " (larger than 2147483647)" : "");
            free(ids);
            return G3_ERR_INVALID_ARG;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            int32_t *p = realloc(ids, cap * sizeof(*ids));
            if (!p) {
                free(ids);
                return G3_ERR_NO_MEMORY;
            }
            ids = p;
        }
        ids[n++] = (int32_t)v;
    }
    st = g3_bpe_decode(bpe, ids, n, &out, &outlen);
    if (st == G3_OK && (fwrite(out, 1, outlen, stdout) != outlen || fflush(stdout) != 0)) {
        g3_error("gpt3d tokenize: cannot write standard output: %s", strerror(errno));
        st = G3_ERR_IO;
    }
    free(out);
    free(ids);
    return st;
}

int g3_cmd_tokenize(int argc, char **argv)
{
    g3_opts_t *opts = NULL;
    g3_bpe_t *bpe = NULL;
    char *text = NULL;
    size_t len;
    g3_status_t st = G3_OK;
    int go = g3_cli_args_parse(&g3_tokenize_cmd, argc, argv, &opts);

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    if (!g3_opts_str(opts, "vocab-file") || !g3_opts_str(opts, "merge-file")) {
        g3_error("gpt3d tokenize: --vocab-file and --merge-file are required (GPT-2's encoder.json and vocab.bpe; 'gpt3d corpus' downloads them)");
        st = G3_ERR_USAGE;
        goto err_free_opts;
    }
    if ((st = g3_bpe_load(g3_opts_str(opts, "vocab-file"), g3_opts_str(opts, "merge-file"), &bpe)) != G3_OK)
        goto err_free_opts;
    if ((st = g3_cmd_tokenize_slurp(&text, &len)) != G3_OK)
        goto err_free_bpe;
    st = g3_opts_bool(opts, "decode") ? g3_cmd_tokenize_decode(bpe, text, len)
                                      : g3_cmd_tokenize_encode(bpe, text, len);
    free(text);
err_free_bpe:
    g3_bpe_free(bpe);
err_free_opts:
    g3_opts_free(opts);
    if (st == G3_ERR_FORMAT)
        return G3_EXIT_FAILURE;
    return g3_status_exit_code(st);
}
