/* gpt3d core: the log level from GPT3D_LOG_LEVEL (log.h, g3_log_init_from_env).  Apart from
 * log.c because it reads the knob registry (param.c), which itself logs through log.c: this
 * file sits above both, so neither includes the other's header. */
#include "config.h"

#include "core/log.h"
#include "core/param.h"

void g3_log_init_from_env(void)
{
    const char *env = g3_param_log_level();
    g3_log_level_t level;

    if (env == NULL)
        return;
    if (g3_log_level_parse(env, &level) != G3_OK) {
        g3_warn("GPT3D_LOG_LEVEL='%s' is not a log level; use one of error, warn, info, debug, trace (keeping '%s')",
                env, g3_log_level_name(g3_log_get_level()));
        return;
    }
    g3_log_set_level(level);
}
