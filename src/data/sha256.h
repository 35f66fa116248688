/* gpt3d data: SHA-256 (FIPS 180-4), for the tokenizer identity (tokid.h): a digest
 * of the vocabulary and merges files that any user can reproduce with sha256sum. */
#ifndef G3_DATA_SHA256_H
#define G3_DATA_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct {
    uint32_t      h[8];
    uint64_t      len;        /* bytes hashed so far */
    unsigned char buf[64];    /* a partial block      */
    size_t        nbuf;
} g3_sha256_t;

void g3_sha256_init(g3_sha256_t *s);
void g3_sha256_update(g3_sha256_t *s, const void *data, size_t n);
/* OUT: digest (32 bytes). */
void g3_sha256_final(g3_sha256_t *s, unsigned char digest[32]);
/* The lowercase hex of a digest.  OUT: hex (65 bytes, NUL-terminated). */
void g3_sha256_hex(const unsigned char digest[32], char hex[65]);
/* SHA-256 of a whole file as hex (what sha256sum prints).  Errors are logged naming
 * the file and `what` ("vocabulary file (--vocab-file)").  OUT: hex (65 bytes). */
g3_status_t g3_sha256_file(const char *path, const char *what, char hex[65]);

#endif
