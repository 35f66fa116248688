/* gpt3d core: leveled logging with a rank prefix.
 *
 * Every line goes to stderr as "[rank R/N] LEVEL: message" (the rank part is
 * omitted until g3_log_set_rank() is called with size > 1).  The level comes
 * from --log-level, else GPT3D_LOG_LEVEL, else "info". */
#ifndef G3_CORE_LOG_H
#define G3_CORE_LOG_H

#include "core/status.h"

typedef enum {
    G3_LOG_ERROR = 0,
    G3_LOG_WARN,
    G3_LOG_INFO,
    G3_LOG_DEBUG,
    G3_LOG_TRACE,
    G3_LOG_LEVEL_COUNT
} g3_log_level_t;

/* Parse "error|warn|info|debug|trace" (case-insensitive) into *level_p.
 * RET: G3_ERR_INVALID_ARG for anything else; *level_p untouched then. */
g3_status_t g3_log_level_parse(const char *name, g3_log_level_t *level_p);
const char *g3_log_level_name(g3_log_level_t level);

/* Reads GPT3D_LOG_LEVEL (core/param.h); a bad value is reported and ignored.  Defined in
 * log_env.c, apart from the rest, so that log.c does not depend on the registry. */
void g3_log_init_from_env(void);
void g3_log_set_level(g3_log_level_t level);
g3_log_level_t g3_log_get_level(void);
/* rank in [0, size); size <= 1 removes the prefix. */
void g3_log_set_rank(int rank, int size);
int g3_log_enabled(g3_log_level_t level);

void g3_log_emit(g3_log_level_t level, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define g3_error(...) g3_log_emit(G3_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define g3_warn(...)  g3_log_emit(G3_LOG_WARN,  __FILE__, __LINE__, __VA_ARGS__)
#define g3_info(...)  g3_log_emit(G3_LOG_INFO,  __FILE__, __LINE__, __VA_ARGS__)
#define g3_debug(...) g3_log_emit(G3_LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__)
#define g3_trace(...) g3_log_emit(G3_LOG_TRACE, __FILE__, __LINE__, __VA_ARGS__)

#endif
