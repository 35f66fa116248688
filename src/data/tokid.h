/* gpt3d data: the identity of a tokenizer, the SHA-256 digests of its vocabulary and merges
 * files (sha256.h), so that data, checkpoints and runs made with different tokenizer files
 * are told apart: the same ids mean other tokens under another vocabulary, and other merges
 * (fewer, reordered) cut the same text into other ids.
 *
 * Where it is kept:
 *   - beside a dataset, PREFIX.tokenizer.json (written by 'gpt3d preprocess'; Megatron's
 *     readers look only at PREFIX.bin / PREFIX.idx and ignore it), one JSON object:
 *       {"format": "gpt3d-tokenizer", "version": 1, "name": "GPT-2 BPE",
 *        "vocab_file": "encoder.json", "vocab_sha256": "<64 hex>",
 *        "merge_file": "vocab.bpe", "merge_sha256": "<64 hex>"}
 *     (name: "GPT-2 BPE" for OpenAI's published files, else "custom"; the file names are
 *     the paths as given, for messages only: identity is the two digests);
 *   - in a checkpoint, the same JSON text as the state string "tokenizer". */
#ifndef G3_DATA_TOKID_H
#define G3_DATA_TOKID_H

#include <stddef.h>

#include "core/status.h"

#define G3_TOKID_FORMAT  "gpt3d-tokenizer"
#define G3_TOKID_VERSION 1
#define G3_TOKID_PATH_MAX 4096

typedef struct g3_tokid {
    char vocab_file[G3_TOKID_PATH_MAX];
    char vocab_sha256[65];
    char merge_file[G3_TOKID_PATH_MAX];
    char merge_sha256[65];
} g3_tokid_t;

/* The identity of two tokenizer files (both read once).  OUT: *id */
g3_status_t g3_tokid_of_files(const char *vocab_file, const char *merge_file, g3_tokid_t *id);

/* One line for logs: "GPT-2 BPE (encoder.json sha256 196139668be6..., vocab.bpe sha256
 * 1ce1664773c5...)".  OUT: buf (size bytes). */
void g3_tokid_describe(const g3_tokid_t *id, char *buf, size_t size);

/* The JSON object (one line, no newline).  OUT: *text_p (malloc'd). */
g3_status_t g3_tokid_to_json(const g3_tokid_t *id, char **text_p);
/* Parse it back; what names the source in errors ("'P.tokenizer.json'").  RET:
 * G3_ERR_FORMAT / G3_ERR_VERSION (logged).  OUT: *id */
g3_status_t g3_tokid_from_json(const char *text, size_t n, const char *what, g3_tokid_t *id);
/* The same, with fix the advice after "the record is corrupt: " (a checkpoint's record is
 * not re-made by gpt3d preprocess). */
g3_status_t g3_tokid_from_json_fix(const char *text, size_t n, const char *what, const char *fix,
                                   g3_tokid_t *id);

/* PREFIX.tokenizer.json, written atomically (temporary file + rename).  Errors are logged. */
g3_status_t g3_tokid_write_sidecar(const char *prefix, const g3_tokid_t *id);
/* Read PREFIX.tokenizer.json.  OUT: *found_p (0: there is none, *id untouched), *id.
 * RET: G3_OK, or the error (logged) for an unreadable or corrupt sidecar. */
g3_status_t g3_tokid_read_sidecar(const char *prefix, g3_tokid_t *id, int *found_p);

/* Compare what something was made with (made) with this run's files (run).  what names it
 * ("dataset 'P'", "checkpoint DIR").  Each differing file is named in one error line, or in
 * a warning when allow is set (--allow-tokenizer-mismatch).
 * RET: G3_OK when equal or allowed, else G3_ERR_FORMAT. */
g3_status_t g3_tokid_check(const g3_tokid_t *made, const g3_tokid_t *run, const char *what,
                           int allow);

#endif
