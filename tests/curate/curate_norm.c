/* tests/curate helper: each line of stdin (UTF-8) -> g3_curate_normalize (NFC, white space
 * collapsed; "--lower": lower-cased too) on stdout, one line each, for the comparison with
 * Python's unicodedata in test_curate_norm.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curate/curate.h"

int main(int argc, char **argv)
{
    int lower = argc > 1 && !strcmp(argv[1], "--lower");
    char *line = NULL, *out;
    size_t cap = 0, n;
    ssize_t len;

    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (g3_curate_normalize(line, (size_t)len, lower, &out, &n) != G3_OK)
            return 1;
        fwrite(out, 1, n, stdout);
        fputc('\n', stdout);
        free(out);
    }
    free(line);
    printf("%s\n", g3_curate_unicode_version());
    return 0;
}
