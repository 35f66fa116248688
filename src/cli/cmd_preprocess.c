/* gpt3d preprocess: text or JSON lines -> Megatron indexed dataset.
 *
 *   gpt3d preprocess --input corpus.jsonl --output-prefix out/corpus \
 *       --vocab-file encoder.json --merge-file vocab.bpe [--json-keys text] \
 *       [--append-eod] [--workers N]
 *
 * writes out/corpus_text_document.bin/.idx (one pair per JSON key, named as
 * Megatron's tools/preprocess_data.py names them) and beside each pair
 * out/corpus_text_document.tokenizer.json, the SHA-256 digests of the two
 * tokenizer files (data/tokid.h; Megatron's readers ignore it).  The input
 * formats, documents and threads are described in data/preprocess.h, which
 * runs the pipeline; this driver checks the flags and prints the summary. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/opt.h"
#include "data/preprocess.h"

static const g3_opt_spec_t g3_cmd_pre_specs[] = {
    { "input",          G3_OPT_STRING, NULL, "Input file: JSON lines or plain UTF-8 text ('-' for stdin).", NULL, 0, 0, "FILE" },
    { "output-prefix",  G3_OPT_STRING, NULL, "Output prefix: writes PREFIX_KEY_document.bin/.idx.", NULL, 0, 0, "PREFIX" },
    { "vocab-file",     G3_OPT_STRING, NULL, "GPT-2 vocabulary: encoder.json or vocab.json.", NULL, 0, 0, "FILE" },
    { "merge-file",     G3_OPT_STRING, NULL, "GPT-2 merges: vocab.bpe or merges.txt.", NULL, 0, 0, "FILE" },
    { "json-keys",      G3_OPT_LIST,   "text", "JSON keys to extract; one output dataset per key.", NULL, 1, 0, "KEY" },
    { "append-eod",     G3_OPT_BOOL,   NULL, "Append <|endoftext|> to every document.", NULL, 0, 0, NULL },
    { "workers",        G3_OPT_INT,    "0", "Tokenizer threads (0: one per online CPU).", NULL, 0, 0, "N" },
    { "input-format",   G3_OPT_CHOICE, "auto", "Input format.", "auto|jsonl|text", 0, 0, NULL },
    { "text-docs",      G3_OPT_CHOICE, "paragraph", "Plain text: what one document is.", "paragraph|line|file", 0, 0, NULL },
    { "tokenizer-type", G3_OPT_CHOICE, "GPT2BPETokenizer", "Accepted for Megatron compatibility.", "GPT2BPETokenizer", 0, 0, NULL },
    { "dataset-impl",   G3_OPT_CHOICE, "mmap", "Accepted for Megatron compatibility.", "mmap", 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_cmd_pre_cmd = {
    "preprocess", "Write a Megatron indexed dataset (.bin/.idx) from text or JSON lines.", NULL, 0, 0,
    g3_cmd_pre_specs
};

int g3_cmd_preprocess(int argc, char **argv)
{
    g3_opts_t *opts = NULL;
    g3_pre_config_t cfg;
    g3_pre_counts_t c;
    char *const *keys;
    g3_status_t st = G3_OK;
    int go = g3_cli_args_parse(&g3_cmd_pre_cmd, argc, argv, &opts);

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    memset(&cfg, 0, sizeof(cfg));
    cfg.input = g3_opts_str(opts, "input");
    cfg.output_prefix = g3_opts_str(opts, "output-prefix");
    cfg.vocab_file = g3_opts_str(opts, "vocab-file");
    cfg.merge_file = g3_opts_str(opts, "merge-file");
    if (!cfg.input || !cfg.output_prefix || !cfg.vocab_file || !cfg.merge_file) {
        g3_error("gpt3d preprocess: --input, --output-prefix, --vocab-file and --merge-file are required (see 'gpt3d preprocess --help')");
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    cfg.num_keys = g3_opts_list(opts, "json-keys", &keys);
    cfg.keys = keys;
    if (cfg.num_keys > G3_PRE_MAX_KEYS) {
        g3_error("gpt3d preprocess: at most %d --json-keys", G3_PRE_MAX_KEYS);
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    int64_t workers = g3_opts_int(opts, "workers");
    if (workers < 0 || workers > 1024) {
        g3_error("gpt3d preprocess: --workers %lld is out of range (0 = one per CPU, up to 1024)", (long long)workers);
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    if (workers == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        workers = ncpu > 0 ? ncpu : 1;
    }
    cfg.workers = (int)workers;
    cfg.append_eod = g3_opts_bool(opts, "append-eod");
    const char *fmt = g3_opts_str(opts, "input-format");
    cfg.format = !strcmp(fmt, "jsonl") ? G3_PRE_FORMAT_JSONL
                 : !strcmp(fmt, "text") ? G3_PRE_FORMAT_TEXT : G3_PRE_FORMAT_AUTO;
    const char *tdocs = g3_opts_str(opts, "text-docs");
    cfg.text_docs = !strcmp(tdocs, "line") ? G3_PRE_DOCS_LINE
                    : !strcmp(tdocs, "file") ? G3_PRE_DOCS_FILE : G3_PRE_DOCS_PARAGRAPH;

    st = g3_pre_run(&cfg, &c);
    if (st == G3_OK) {
        g3_info(
            "preprocess: wrote %llu document%s, %llu token%s from %llu record%s, %.1f MB in %.2f s (%.2f MB/s); %llu empty document%s skipped",
            (unsigned long long)c.documents, c.documents == 1 ? "" : "s",
            (unsigned long long)c.tokens, c.tokens == 1 ? "" : "s",
            (unsigned long long)c.records, c.records == 1 ? "" : "s",
            (double)c.bytes_read / 1e6, c.seconds,
            (double)c.bytes_read / 1e6 / (c.seconds > 0 ? c.seconds : 1e-9),
            (unsigned long long)c.skipped, c.skipped == 1 ? "" : "s");
        if (c.replaced)
            g3_warn("preprocess: '%s' had %llu invalid UTF-8 sequences or lone surrogate escapes; each was replaced by U+FFFD",
                    cfg.input, (unsigned long long)c.replaced);
    }
    g3_opts_free(opts);
    if (st == G3_ERR_FORMAT || st == G3_ERR_NOT_FOUND || st == G3_ERR_IO)
        return G3_EXIT_FAILURE;
    return g3_status_exit_code(st);
}
