/* gpt3d core: the knob registry (param.h): the table made from G3_PARAMS, the cached typed
 * reads, the accessors and `gpt3d help env`. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/param.h"

#define G3_PARAM_ROW(name, var, type, dflt, min, words, meaning) \
    { var, G3_PARAM_##type, dflt, min, words, meaning, 0 },
#define G3_PARAM_HOOK_ROW(name, var, type, dflt, min, words, meaning) \
    { var, G3_PARAM_##type, dflt, min, words, meaning, 1 },
static const g3_param_info_t g3_params[G3_PARAM_COUNT] = { G3_PARAMS(G3_PARAM_ROW)
                                                               G3_PARAM_HOOKS(G3_PARAM_HOOK_ROW) };
#undef G3_PARAM_ROW
#undef G3_PARAM_HOOK_ROW

/* What each knob's text parsed to, keyed by the text (see param.h, "Reading"). */
typedef struct {
    int    read;        /* parsed at least once                                    */
    int    set;         /* the variable was set (SET: even empty)                  */
    char  *text;        /* the text parsed last (malloc'd), NULL: unset or empty   */
    double num;         /* INT, FLOAT, BOOL, SET: the value                        */
} g3_param_cache_t;

static g3_param_cache_t g3_param_cache[G3_PARAM_COUNT];
static pthread_mutex_t g3_param_lock = PTHREAD_MUTEX_INITIALIZER;

const g3_param_info_t *g3_param_info(g3_param_id_t id)
{
    return (unsigned)id < G3_PARAM_COUNT ? &g3_params[id] : NULL;
}

/* RET: a whole number >= min parsed from all of text into *v, else 0. */
static int g3_param_parse_int(const char *text, double min, double *v)
{
    char *end = NULL;
    long long n;

    errno = 0;
    n = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || (double)n < min)
        return 0;
    *v = (double)n;
    return 1;
}

/* Parse text for row r into *num; an unparsable text is reported (once per text: the
 * caller caches) and gives the default.  text NULL: the default. */
static void g3_param_parse(const g3_param_info_t *r, const char *text, double *num)
{
    double v = r->dflt;
    char *end = NULL;
    int ok = 1;

    if (text == NULL) {
        *num = r->dflt;
        return;
    }
    switch (r->type) {
    case G3_PARAM_INT:
        ok = g3_param_parse_int(text, r->min, &v);
        if (!ok)
            g3_warn("%s='%s' is not a whole number of at least %.0f; ignoring it (the default: %s)", r->var, text, r->min, r->words);
        break;
    case G3_PARAM_FLOAT:
        v = strtod(text, &end);
        ok = end != text && *end == '\0' && v > 0.0 && isfinite(v);
        if (!ok)
            g3_warn("%s='%s' is not a positive number; ignoring it (the default: %s)", r->var, text, r->words);
        break;
    case G3_PARAM_BOOL:
        ok = strcmp(text, "0") == 0 || strcmp(text, "1") == 0;
        v = ok ? (double)(text[0] == '1') : r->dflt;
        if (!ok)
            g3_warn("%s='%s' is neither 0 nor 1; ignoring it (the default: %s)", r->var, text, r->words);
        break;
    default:
        break;
    }
    *num = ok ? v : r->dflt;
}

/* The cache entry of id, brought up to date with the environment; called locked. */
static g3_param_cache_t *g3_param_read(g3_param_id_t id)
{
    const g3_param_info_t *r = &g3_params[id];
    g3_param_cache_t *c = &g3_param_cache[id];
    const char *env = getenv(r->var);
    int set = env != NULL;
    const char *text = env && *env ? env : NULL;

    if (c->read && c->set == set &&
        (text == NULL ? c->text == NULL : c->text != NULL && strcmp(c->text, text) == 0))
        return c;
    free(c->text);
    c->text = text ? strdup(text) : NULL;
    c->read = 1;
    c->set = set;
    if (r->type == G3_PARAM_SET)
        c->num = set;
    else
        g3_param_parse(r, c->text, &c->num);
    return c;
}

/* The environment's own text (the cache's copy may be replaced by a later read). */
const char *g3_param_str(g3_param_id_t id)
{
    const char *s;

    pthread_mutex_lock(&g3_param_lock);
    s = g3_param_read(id)->text ? getenv(g3_params[id].var) : NULL;
    pthread_mutex_unlock(&g3_param_lock);
    return s;
}

static double g3_param_num(g3_param_id_t id)
{
    double v;

    pthread_mutex_lock(&g3_param_lock);
    v = g3_param_read(id)->num;
    pthread_mutex_unlock(&g3_param_lock);
    return v;
}

static int64_t g3_param_int(g3_param_id_t id) { return (int64_t)g3_param_num(id); }
static double g3_param_float(g3_param_id_t id) { return g3_param_num(id); }
static int g3_param_flag(g3_param_id_t id) { return (int)g3_param_num(id); }   /* BOOL, SET */

#define G3_PARAM_GET_STR   g3_param_str
#define G3_PARAM_GET_INT   g3_param_int
#define G3_PARAM_GET_FLOAT g3_param_float
#define G3_PARAM_GET_BOOL  g3_param_flag
#define G3_PARAM_GET_SET   g3_param_flag
#define G3_PARAM_DEFINE(name, var, type, dflt, min, words, meaning) \
    G3_PARAM_RET_##type g3_param_##name(void) { return G3_PARAM_GET_##type(G3_PARAM_ID_##name); }
G3_PARAMS(G3_PARAM_DEFINE)
G3_PARAM_HOOKS(G3_PARAM_DEFINE)
#undef G3_PARAM_DEFINE

/* The rows of one kind (hook 0: knobs, 1: test and debugger hooks). */
static void g3_param_print_rows(FILE *out, int hook)
{
    for (int i = 0; i < G3_PARAM_COUNT; i++) {
        const g3_param_info_t *r = &g3_params[i];
        const char *now = getenv(r->var);

        if (r->hook != hook)
            continue;
        fprintf(out, "  %s\n      %s\n      default: %s", r->var, r->meaning, r->words);
        if (now)
            fprintf(out, "; set here: '%s'", now);
        fputc('\n', out);
    }
}

void g3_param_print(FILE *out)
{
    fprintf(out, "gpt3d reads these environment variables (unset or empty: the default):\n\n");
    g3_param_print_rows(out, 0);
    fprintf(out, "\nTest and debugger hooks (core/hook.h; not for production runs):\n\n");
    g3_param_print_rows(out, 1);
}
