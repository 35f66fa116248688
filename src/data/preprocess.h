/* gpt3d data: the preprocessing pipeline behind 'gpt3d preprocess': text or JSON lines ->
 * Megatron indexed datasets.
 *
 * For each JSON key it writes PREFIX_KEY_document.bin/.idx (named as Megatron's
 * tools/preprocess_data.py names them) and beside each pair PREFIX_KEY_document.tokenizer.json,
 * the SHA-256 digests of the two tokenizer files (tokid.h; Megatron's readers ignore it).
 * Input formats:
 *   jsonl  one JSON object per line; the document is the string under each key (blank lines
 *          are skipped);
 *   text   plain UTF-8; text_docs says what a document is: paragraph (runs of non-blank lines,
 *          separated by blank lines), line (every non-blank line) or file (the whole input);
 *   auto   jsonl when the first non-blank byte is '{', else text.
 * A UTF-8 byte order mark at the start of the input is dropped.  Invalid UTF-8 becomes U+FFFD
 * (as Python's errors="replace"), counted; empty documents are skipped (as Megatron does) and
 * counted.
 *
 * Threads: `workers` tokenizer threads take batches of whole documents in turn; the calling
 * thread writes the batches in input order, so the output does not depend on the number of
 * workers.
 *
 * Errors are logged where detected ("gpt3d preprocess: ..."); progress goes to g3_info. */
#ifndef G3_DATA_PREPROCESS_H
#define G3_DATA_PREPROCESS_H

#include <stdint.h>

#include "core/status.h"

#define G3_PRE_MAX_KEYS 64   /* JSON keys per run */

typedef enum { G3_PRE_FORMAT_AUTO, G3_PRE_FORMAT_JSONL, G3_PRE_FORMAT_TEXT } g3_pre_format_t;
typedef enum { G3_PRE_DOCS_PARAGRAPH, G3_PRE_DOCS_LINE, G3_PRE_DOCS_FILE } g3_pre_docs_t;

/* What to run; the strings are borrowed for the call. */
typedef struct g3_pre_config {
    const char      *input;          /* path, or "-" for stdin                          */
    const char      *output_prefix;
    const char      *vocab_file;     /* GPT-2 encoder.json / vocab.json                 */
    const char      *merge_file;     /* GPT-2 vocab.bpe / merges.txt                    */
    char *const     *keys;           /* (num_keys,) JSON keys; text input uses "text"   */
    int              num_keys;       /* 1 .. G3_PRE_MAX_KEYS                            */
    int              append_eod;     /* append <|endoftext|> to every document          */
    int              workers;        /* tokenizer threads, 1 .. 1024                    */
    g3_pre_format_t  format;
    g3_pre_docs_t    text_docs;      /* what one document is in plain text              */
} g3_pre_config_t;

/* What a successful run did, for the caller's summary. */
typedef struct g3_pre_counts {
    uint64_t documents;              /* documents written, all keys                     */
    uint64_t tokens;                 /* tokens written, all keys                        */
    uint64_t records;                /* input records (lines, paragraphs, objects)      */
    uint64_t skipped;                /* empty documents skipped                         */
    uint64_t replaced;               /* invalid UTF-8 sequences / lone surrogate escapes */
    uint64_t bytes_read;             /* input bytes                                     */
    double   seconds;                /* tokenizing and writing, from the first batch    */
} g3_pre_counts_t;

/* Run the pipeline.  On failure nothing is left at the output paths (the writers are
 * aborted) and the error has been logged.
 * RET: G3_OK; G3_ERR_INVALID_ARG (--append-eod without <|endoftext|> in the vocabulary,
 *      --output-prefix too long), G3_ERR_NOT_FOUND (no input), G3_ERR_IO, G3_ERR_FORMAT
 *      (bad JSON line), G3_ERR_NO_MEMORY, or the tokenizer loader's and writer's codes.
 * OUT: *counts, on success only. */
g3_status_t g3_pre_run(const g3_pre_config_t *cfg, g3_pre_counts_t *counts);

#endif
