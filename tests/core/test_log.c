/* Log levels: parsing, names, and the environment variable. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "tap.h"

int main(void)
{
    g3_log_level_t lvl = G3_LOG_INFO;

    tap_ok(g3_log_level_parse("debug", &lvl) == G3_OK && lvl == G3_LOG_DEBUG, "parse 'debug'");
    tap_ok(g3_log_level_parse("WARN", &lvl) == G3_OK && lvl == G3_LOG_WARN, "parse is case-insensitive");
    lvl = G3_LOG_TRACE;
    tap_ok(g3_log_level_parse("loud", &lvl) == G3_ERR_INVALID_ARG && lvl == G3_LOG_TRACE,
           "a bad level is rejected and the output left untouched");
    tap_ok(strcmp(g3_log_level_name(G3_LOG_ERROR), "error") == 0, "level names");

    setenv("GPT3D_LOG_LEVEL", "error", 1);
    g3_log_init_from_env();
    tap_ok(g3_log_get_level() == G3_LOG_ERROR, "GPT3D_LOG_LEVEL=error is honoured");
    tap_ok(!g3_log_enabled(G3_LOG_INFO) && g3_log_enabled(G3_LOG_ERROR), "info is filtered at level error");
    setenv("GPT3D_LOG_LEVEL", "nonsense", 1);
    g3_log_init_from_env();
    tap_ok(g3_log_get_level() == G3_LOG_ERROR, "a bad GPT3D_LOG_LEVEL keeps the previous level");
    return tap_exit();
}
