/* gpt3d data: the small JSON reader the data layer needs: one value at a
 * time from a buffer, strings decoded to UTF-8 (\uXXXX escapes and
 * surrogate pairs included), everything else skipped after validation.
 *
 * Errors come back as a status plus a short static reason and the byte
 * position, so the caller can name its file and line. */
#ifndef G3_DATA_JSON_H
#define G3_DATA_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

/* A growable byte buffer. */
typedef struct {
    char  *data;
    size_t len;
    size_t cap;
} g3_buf_t;

g3_status_t g3_buf_reserve(g3_buf_t *b, size_t extra);
g3_status_t g3_buf_append(g3_buf_t *b, const void *p, size_t n);
void g3_buf_free(g3_buf_t *b);

typedef struct {
    const char *s;         /* the text: (n,) bytes                            */
    size_t      n;
    size_t      pos;       /* next byte to read                                */
    const char *why;       /* on error: what was wrong (static string)         */
    size_t      lone_surrogates;  /* \uD800-\uDFFF escapes without a partner,
                                     written as U+FFFD (counted, not an error)  */
} g3_json_t;

void g3_json_skip_ws(g3_json_t *j);
/* s[pos] must be '"'.  Appends the decoded UTF-8 to out (if not NULL). */
g3_status_t g3_json_string(g3_json_t *j, g3_buf_t *out);
/* Skip one value of any type (validating its syntax). */
g3_status_t g3_json_skip_value(g3_json_t *j);
/* Parse an integer number value into *v (fails on fractions/exponents). */
g3_status_t g3_json_int(g3_json_t *j, long long *v);

/* Iterate an object: call with *first = 1 at '{'.  RET G3_OK with the key
 * in key (cleared first) and pos at the value, or G3_ERR_NOT_FOUND at the
 * closing '}' (consumed). */
g3_status_t g3_json_object_next(g3_json_t *j, int *first, g3_buf_t *key);

/* Append the UTF-8 encoding of code point cp to out. */
g3_status_t g3_utf8_put(g3_buf_t *out, unsigned cp);

/* Read a whole file into *data_p (malloc'd, NUL-terminated; *len_p bytes without the NUL).
 * what names it in the errors ("vocabulary file": "cannot open the vocabulary file 'P': ...").
 * RET: G3_ERR_NOT_FOUND (missing), G3_ERR_IO, G3_ERR_NO_MEMORY, all logged. */
g3_status_t g3_read_file(const char *path, const char *what, char **data_p, size_t *len_p);

/* Write s (NUL-terminated UTF-8) to f as a JSON string: quotes, backslashes and control
 * characters escaped. */
void g3_json_write_string(FILE *f, const char *s);

#endif
