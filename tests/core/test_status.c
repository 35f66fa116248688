/* Status strings and exit codes. */
#include <string.h>

#include "core/status.h"
#include "tap.h"

int main(void)
{
    int all_named = 1, distinct = 1;

    for (int s = 0; s < G3_STATUS_COUNT; s++) {
        const char *name = g3_status_string((g3_status_t)s);
        if (name == NULL || strcmp(name, "unknown status") == 0 || name[0] == '\0')
            all_named = 0;
        for (int t = 0; t < s; t++)
            if (strcmp(name, g3_status_string((g3_status_t)t)) == 0)
                distinct = 0;
    }
    tap_ok(all_named, "every status has a name");
    tap_ok(distinct, "status names are distinct");
    tap_ok(strcmp(g3_status_string(G3_OK), "success") == 0, "G3_OK is 'success'");
    tap_ok(strcmp(g3_status_string((g3_status_t)999), "unknown status") == 0,
           "out-of-range status gives 'unknown status'");
    tap_ok(strcmp(g3_status_string((g3_status_t)-1), "unknown status") == 0,
           "negative status gives 'unknown status'");
    tap_ok(g3_status_exit_code(G3_OK) == 0, "success exits 0");
    tap_ok(g3_status_exit_code(G3_ERR_USAGE) == 2, "usage error exits 2");
    tap_ok(g3_status_exit_code(G3_ERR_INTERRUPTED) == 75, "save-on-request exits 75");
    tap_ok(g3_status_exit_code(G3_ERR_TIMEOUT) == 76, "distributed timeout exits 76");
    tap_ok(g3_status_exit_code(G3_ERR_NUMERIC) == 79, "non-finite loss exits 79");
    tap_ok(g3_status_exit_code(G3_ERR_IO) == 1, "I/O error exits 1");
    return tap_exit();
}
