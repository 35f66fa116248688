/* gpt3d core: leveled logging (log.h).  It reads no knob itself (log_env.c does, for
 * GPT3D_LOG_LEVEL): the knob registry logs through this file. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>

static const char *const g3_log_names[] = {
    [G3_LOG_ERROR] = "error",
    [G3_LOG_WARN]  = "warn",
    [G3_LOG_INFO]  = "info",
    [G3_LOG_DEBUG] = "debug",
    [G3_LOG_TRACE] = "trace",
};
_Static_assert(sizeof(g3_log_names) / sizeof(g3_log_names[0]) == G3_LOG_LEVEL_COUNT,
               "g3_log_names must have one entry per level");

static g3_log_level_t g3_log_level = G3_LOG_INFO;
static int g3_log_rank = 0;
static int g3_log_size = 1;
static pthread_mutex_t g3_log_lock = PTHREAD_MUTEX_INITIALIZER;

g3_status_t g3_log_level_parse(const char *name, g3_log_level_t *level_p)
{
    for (int i = 0; i < G3_LOG_LEVEL_COUNT; i++) {
        if (name != NULL && strcasecmp(name, g3_log_names[i]) == 0) {
            *level_p = (g3_log_level_t)i;
            return G3_OK;
        }
    }
    return G3_ERR_INVALID_ARG;
}

const char *g3_log_level_name(g3_log_level_t level)
{
    return (unsigned)level < G3_LOG_LEVEL_COUNT ? g3_log_names[level] : "?";
}

void g3_log_set_level(g3_log_level_t level) { g3_log_level = level; }
g3_log_level_t g3_log_get_level(void) { return g3_log_level; }
int g3_log_enabled(g3_log_level_t level) { return level <= g3_log_level; }

void g3_log_set_rank(int rank, int size)
{
    g3_log_rank = rank;
    g3_log_size = size;
}

void g3_log_emit(g3_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    char prefix[64] = "";
    va_list ap;

    if (level > g3_log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (g3_log_size > 1)
        snprintf(prefix, sizeof(prefix), "[rank %d/%d] ", g3_log_rank, g3_log_size);

    /* One fprintf per line so lines from threads do not interleave. */
    pthread_mutex_lock(&g3_log_lock);
    if (g3_log_level >= G3_LOG_DEBUG)
        fprintf(stderr, "%s%s: %s (%s:%d)\n", prefix, g3_log_names[level], msg, file, line);
    else if (level == G3_LOG_INFO)
        fprintf(stderr, "%s%s\n", prefix, msg);
    else
        fprintf(stderr, "%s%s: %s\n", prefix, g3_log_names[level], msg);
    fflush(stderr);
    pthread_mutex_unlock(&g3_log_lock);
}
