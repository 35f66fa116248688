/* gpt3d core: reading a whole stream, the one loop behind the readers of whole files (the
 * tokenizer's files, curate's lists and reports, metrics files) and of standard input. */
#ifndef G3_CORE_FILEIO_H
#define G3_CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

/* Read f to its end into *data_p (malloc'd, NUL-terminated; *len_p bytes without the NUL).
 * Not logged: the caller names the stream.  RET: G3_OK; G3_ERR_NO_MEMORY (errno ENOMEM) or
 * G3_ERR_IO (errno the read's), nothing returned. */
g3_status_t g3_read_stream(FILE *f, char **data_p, size_t *len_p);

#endif
