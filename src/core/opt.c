#include "core/opt.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

/* Options every subcommand accepts, after the command's own table. */
static const g3_opt_spec_t g3_opt_common[] = {
    { "help",      G3_OPT_BOOL,   NULL,   "Print this help and exit.", NULL, 0, 0, NULL },
    { "config",    G3_OPT_STRING, NULL,   "Read flags from FILE (lines 'flag = value'); the command line wins.", NULL, 0, 0, "FILE" },
    { "log-level", G3_OPT_CHOICE, "info", "Log verbosity (also GPT3D_LOG_LEVEL).", "error|warn|info|debug|trace", 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

typedef struct {
    const g3_opt_spec_t *spec;
    int     set;        /* given on the command line or in the config file */
    int     has_value;  /* set, or has a default                           */
    int64_t i;
    double  f;
    char   *s;          /* STRING / CHOICE, and the text of INT / FLOAT    */
    char  **list;       /* LIST                                            */
    int     nlist;
} g3_opt_value_t;

struct g3_opts {
    const g3_opt_cmd_t *cmd;
    g3_opt_value_t     *values;
    int                 nvalues;
    char              **pos;
    int                 npos;
    int                 help_shown;
};

static void g3_opt_value_clear(g3_opt_value_t *v)
{
    free(v->s);
    v->s = NULL;
    for (int k = 0; k < v->nlist; k++)
        free(v->list[k]);
    free(v->list);
    v->list = NULL;
    v->nlist = 0;
}

void g3_opts_free(g3_opts_t *opts)
{
    if (opts == NULL)
        return;
    for (int i = 0; i < opts->nvalues; i++)
        g3_opt_value_clear(&opts->values[i]);
    free(opts->values);
    for (int i = 0; i < opts->npos; i++)
        free(opts->pos[i]);
    free(opts->pos);
    free(opts);
}

/* ---- suggestions --------------------------------------------------------- */

static int g3_opt_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[128];

    if (la > 120 || lb > 120)
        return 1000;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *g3_opts_suggest(const char *word, const char *const *candidates, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    int limit = (int)strlen(word) / 3;

    if (limit < 2)
        limit = 2;
    for (int i = 0; i < n; i++) {
        int d = g3_opt_edit_distance(word, candidates[i]);
        /* A word that is a prefix of a flag is a plausible abbreviation. */
        if (strncmp(candidates[i], word, strlen(word)) == 0 && strlen(word) >= 3)
            d = d < 1 ? d : 1;
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

/* ---- values -------------------------------------------------------------- */

static g3_opt_value_t *g3_opt_find(const g3_opts_t *opts, const char *name)
{
    for (int i = 0; i < opts->nvalues; i++)
        if (strcmp(opts->values[i].spec->name, name) == 0)
            return &opts->values[i];
    return NULL;
}

static const char *g3_opt_type_metavar(const g3_opt_spec_t *s)
{
    if (s->metavar) return s->metavar;
    switch (s->type) {
    case G3_OPT_INT:    return "N";
    case G3_OPT_FLOAT:  return "X";
    case G3_OPT_STRING: return "STR";
    case G3_OPT_CHOICE: return s->choices;
    case G3_OPT_LIST:   return "VALUE...";
    default:            return "";
    }
}

static int g3_opt_parse_bool_text(const char *text, int *out)
{
    if (!strcasecmp(text, "true") || !strcmp(text, "1") || !strcasecmp(text, "yes") || !strcasecmp(text, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(text, "false") || !strcmp(text, "0") || !strcasecmp(text, "no") || !strcasecmp(text, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int g3_opt_choice_ok(const char *choices, const char *text)
{
    size_t n = strlen(text);
    const char *p = choices;

    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, text, n) == 0)
            return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

/* Set one scalar value from text.  where: "" or " (FILE:LINE)" for messages. */
static g3_status_t g3_opt_set_scalar(g3_opt_value_t *v, const char *text, const char *where)
{
    const g3_opt_spec_t *s = v->spec;
    char *end = NULL;

    switch (s->type) {
    case G3_OPT_INT: {
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (*text != '\0' && *end == '\0' && errno == ERANGE) {
            g3_error("--%s%s: '%s' is out of range (an integer from %lld to %lld)", s->name, where,
                     text, LLONG_MIN, LLONG_MAX);
            return G3_ERR_USAGE;
        }
        if (*text == '\0' || *end != '\0') {
            g3_error("--%s%s: '%s' is not an integer", s->name, where, text);
            return G3_ERR_USAGE;
        }
        v->i = x;
        break;
    }
    case G3_OPT_FLOAT: {
        errno = 0;
        double x = strtod(text, &end);
        if (*text == '\0' || *end != '\0') {
            g3_error("--%s%s: '%s' is not a number", s->name, where, text);
            return G3_ERR_USAGE;
        }
        if (!isfinite(x) && errno != ERANGE) {
            g3_error("--%s%s: '%s' is not a finite number (give a value of magnitude below %.1e)",
                     s->name, where, text, DBL_MAX);
            return G3_ERR_USAGE;
        }
        if (errno == ERANGE) {   /* beyond DBL_MAX, or nonzero below DBL_MIN (subnormal) */
            g3_error("--%s%s: '%s' is out of range: give 0 or a value whose magnitude is between %.1e and %.1e",
                     s->name, where, text, DBL_MIN, DBL_MAX);
            return G3_ERR_USAGE;
        }
        v->f = x;
        break;
    }
    case G3_OPT_BOOL: {
        int b;
        if (g3_opt_parse_bool_text(text, &b) != 0) {
            g3_error("--%s%s: '%s' is not true or false", s->name, where, text);
            return G3_ERR_USAGE;
        }
        v->i = b;
        break;
    }
    case G3_OPT_CHOICE:
        if (!g3_opt_choice_ok(s->choices, text)) {
            g3_error("--%s%s: '%s' is not one of %s", s->name, where, text, s->choices);
            return G3_ERR_USAGE;
        }
        break;
    case G3_OPT_STRING:
        if (*text == '\0') {
            g3_error("--%s%s: the value is empty", s->name, where);
            return G3_ERR_USAGE;
        }
        break;
    case G3_OPT_LIST:
        break;
    }
    free(v->s);
    v->s = strdup(text);
    if (v->s == NULL)
        return G3_ERR_NO_MEMORY;
    v->has_value = 1;
    return G3_OK;
}

static g3_status_t g3_opt_set_list(g3_opt_value_t *v, char **words, int n, const char *where)
{
    const g3_opt_spec_t *s = v->spec;

    if (n < s->min_args || (s->max_args > 0 && n > s->max_args)) {
        if (s->min_args == s->max_args)
            g3_error("--%s%s takes %d values (%s), got %d", s->name, where, s->min_args,
                     g3_opt_type_metavar(s), n);
        else if (s->max_args > 0)
            g3_error("--%s%s takes %d to %d values (%s), got %d", s->name, where, s->min_args,
                     s->max_args, g3_opt_type_metavar(s), n);
        else
            g3_error("--%s%s takes at least %d value%s (%s), got %d", s->name, where, s->min_args,
                     s->min_args == 1 ? "" : "s", g3_opt_type_metavar(s), n);
        return G3_ERR_USAGE;
    }
    g3_opt_value_clear(v);
    v->list = calloc((size_t)n + 1, sizeof(char *));
    if (v->list == NULL)
        return G3_ERR_NO_MEMORY;
    for (int k = 0; k < n; k++) {
        v->list[k] = strdup(words[k]);
        if (v->list[k] == NULL)
            return G3_ERR_NO_MEMORY;
        v->nlist = k + 1;
    }
    v->has_value = 1;
    return G3_OK;
}

static void g3_opt_report_unknown(const g3_opts_t *opts, const char *name, const char *where)
{
    const char **names = malloc(sizeof(char *) * (size_t)opts->nvalues);
    const char *hint = NULL;

    if (names != NULL) {
        for (int i = 0; i < opts->nvalues; i++)
            names[i] = opts->values[i].spec->name;
        hint = g3_opts_suggest(name, names, opts->nvalues);
    }
    if (hint)
        g3_error("gpt3d %s: unknown flag '--%s'%s; did you mean '--%s'? (see 'gpt3d %s --help')",
                 opts->cmd->name, name, where, hint, opts->cmd->name);
    else
        g3_error("gpt3d %s: unknown flag '--%s'%s (see 'gpt3d %s --help')",
                 opts->cmd->name, name, where, opts->cmd->name);
    free(names);
}

/* ---- config file --------------------------------------------------------- */

static char *g3_opt_trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s)) s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

static g3_status_t g3_opt_read_config(g3_opts_t *opts, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    int lineno = 0;
    g3_status_t st = G3_OK;

    if (f == NULL) {
        g3_error("--config: cannot open '%s': %s", path, strerror(errno));
        return G3_ERR_USAGE;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char where[512], *key, *val, *eq, *hash;
        g3_opt_value_t *v;

        lineno++;
        snprintf(where, sizeof(where), " (%s:%d)", path, lineno);
        if (strchr(line, '\n') == NULL && !feof(f)) {
            g3_error("--config%s: line longer than %zu bytes", where, sizeof(line) - 1);
            st = G3_ERR_USAGE;
            break;
        }
        hash = strchr(line, '#');
        if (hash) *hash = '\0';
        key = g3_opt_trim(line);
        if (*key == '\0')
            continue;
        eq = strchr(key, '=');
        if (eq == NULL) {
            g3_error("--config%s: expected 'flag = value', got '%s'", where, key);
            st = G3_ERR_USAGE;
            break;
        }
        *eq = '\0';
        val = g3_opt_trim(eq + 1);
        key = g3_opt_trim(key);
        if (strncmp(key, "--", 2) == 0)
            key += 2;
        v = g3_opt_find(opts, key);
        if (v == NULL) {
            g3_opt_report_unknown(opts, key, where);
            st = G3_ERR_USAGE;
            break;
        }
        if (!strcmp(key, "config") || !strcmp(key, "help")) {
            g3_error("--config%s: '%s' cannot be set from a config file", where, key);
            st = G3_ERR_USAGE;
            break;
        }
        if (v->spec->type == G3_OPT_LIST) {
            char *words[256];
            int n = 0;
            for (char *tok = strtok(val, " \t"); tok; tok = strtok(NULL, " \t")) {
                if (n == 256) {
                    g3_error("--config%s: more than 256 values for '%s'", where, key);
                    st = G3_ERR_USAGE;
                    goto out_close;
                }
                words[n++] = tok;
            }
            st = g3_opt_set_list(v, words, n, where);
        } else {
            st = g3_opt_set_scalar(v, val, where);
        }
        if (st != G3_OK)
            break;
        v->set = 1;
    }
out_close:
    fclose(f);
    return st;
}

/* ---- command line -------------------------------------------------------- */

static int g3_opt_is_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-' && arg[2] != '\0';
}

/* A word that starts a new flag ends a LIST; negative numbers do not. */
static int g3_opt_ends_list(const char *arg)
{
    return g3_opt_is_flag(arg) || strcmp(arg, "--") == 0;
}

static g3_status_t g3_opt_parse_argv(g3_opts_t *opts, int argc, char **argv, int pass)
{
    int only_pos = 0;

    for (int a = 0; a < argc; a++) {
        char *arg = argv[a];
        char name[256];
        const char *inline_val = NULL;
        g3_opt_value_t *v;

        if (only_pos || !g3_opt_is_flag(arg)) {
            if (strcmp(arg, "--") == 0 && !only_pos) {
                only_pos = 1;
                continue;
            }
            if (pass == 1) {
                char **grown;
                if (arg[0] == '-' && arg[1] != '\0' && !only_pos &&
                    !isdigit((unsigned char)arg[1])) {
                    g3_error("gpt3d %s: '%s' is not a flag; flags start with '--' (see 'gpt3d %s --help')",
                             opts->cmd->name, arg, opts->cmd->name);
                    return G3_ERR_USAGE;
                }
                grown = realloc(opts->pos, sizeof(char *) * (size_t)(opts->npos + 1));
                if (grown == NULL)
                    return G3_ERR_NO_MEMORY;
                opts->pos = grown;
                opts->pos[opts->npos] = strdup(arg);
                if (opts->pos[opts->npos] == NULL)
                    return G3_ERR_NO_MEMORY;
                opts->npos++;
            }
            continue;
        }
        {
            const char *body = arg + 2;
            const char *eq = strchr(body, '=');
            size_t len = eq ? (size_t)(eq - body) : strlen(body);
            if (len >= sizeof(name)) len = sizeof(name) - 1;
            memcpy(name, body, len);
            name[len] = '\0';
            if (eq) inline_val = eq + 1;
        }
        v = g3_opt_find(opts, name);
        if (v == NULL) {
            if (pass == 0) {
                g3_opt_report_unknown(opts, name, "");
                return G3_ERR_USAGE;
            }
            continue;
        }
        /* Pass 0 only looks for --config, --help and --log-level. */
        if (v->spec->type == G3_OPT_BOOL) {
            if (inline_val) {
                if (pass == 1 && g3_opt_set_scalar(v, inline_val, "") != G3_OK)
                    return G3_ERR_USAGE;
            } else if (pass == 1) {
                v->i = 1;
                v->has_value = 1;
            }
            if (pass == 0 && strcmp(name, "help") == 0)
                opts->help_shown = 1;
            v->set |= pass == 1;
            continue;
        }
        if (v->spec->type == G3_OPT_LIST) {
            int first = a + 1, n = 0;
            g3_status_t st;
            char *one[1];
            if (inline_val) {
                one[0] = (char *)inline_val;
                st = pass == 1 ? g3_opt_set_list(v, one, 1, "") : G3_OK;
            } else {
                while (first + n < argc && !g3_opt_ends_list(argv[first + n]))
                    n++;
                st = pass == 1 ? g3_opt_set_list(v, argv + first, n, "") : G3_OK;
                a += n;
            }
            if (st != G3_OK)
                return st;
            v->set |= pass == 1;
            continue;
        }
        if (inline_val == NULL) {
            if (a + 1 >= argc || g3_opt_is_flag(argv[a + 1])) {
                if (pass == 1 || !strcmp(name, "config")) {
                    g3_error("gpt3d %s: --%s needs a value (%s)", opts->cmd->name, name,
                             g3_opt_type_metavar(v->spec));
                    return G3_ERR_USAGE;
                }
                continue;
            }
            inline_val = argv[++a];
        }
        if (pass == 1 || !strcmp(name, "config") || !strcmp(name, "log-level")) {
            g3_status_t st = g3_opt_set_scalar(v, inline_val, "");
            if (st != G3_OK)
                return st;
            v->set = 1;
        }
    }
    return G3_OK;
}

g3_status_t g3_opts_parse(const g3_opt_cmd_t *cmd, int argc, char **argv, g3_opts_t **opts_p)
{
    g3_opts_t *opts = calloc(1, sizeof(*opts));
    g3_status_t st;
    int n = 0, k = 0;

    if (opts == NULL)
        return G3_ERR_NO_MEMORY;
    opts->cmd = cmd;
    for (const g3_opt_spec_t *s = cmd->specs; s && s->name; s++) n++;
    for (const g3_opt_spec_t *s = g3_opt_common; s->name; s++) n++;
    opts->values = calloc((size_t)n, sizeof(g3_opt_value_t));
    if (opts->values == NULL) {
        st = G3_ERR_NO_MEMORY;
        goto err_free_opts;
    }
    opts->nvalues = n;
    for (const g3_opt_spec_t *s = cmd->specs; s && s->name; s++) opts->values[k++].spec = s;
    for (const g3_opt_spec_t *s = g3_opt_common; s->name; s++) opts->values[k++].spec = s;

    /* Defaults. */
    for (int i = 0; i < n; i++) {
        g3_opt_value_t *v = &opts->values[i];
        if (v->spec->defval == NULL) {
            if (v->spec->type == G3_OPT_BOOL)
                v->has_value = 1; /* switches default to false */
            continue;
        }
        if (v->spec->type == G3_OPT_LIST) {
            char *buf = strdup(v->spec->defval), *words[64];
            int nw = 0;
            if (buf == NULL) { st = G3_ERR_NO_MEMORY; goto err_free_opts; }
            for (char *t = strtok(buf, " "); t && nw < 64; t = strtok(NULL, " "))
                words[nw++] = t;
            st = g3_opt_set_list(v, words, nw, " (built-in default)");
            free(buf);
        } else {
            st = g3_opt_set_scalar(v, v->spec->defval, " (built-in default)");
        }
        if (st != G3_OK) {
            st = G3_ERR_INTERNAL;
            goto err_free_opts;
        }
    }

    /* Pass 0: --help, --config and --log-level, and unknown flags. */
    st = g3_opt_parse_argv(opts, argc, argv, 0);
    if (st != G3_OK)
        goto err_free_opts;
    if (opts->help_shown) {
        g3_opts_print_help(cmd, stdout);
        *opts_p = opts;
        return G3_OK;
    }
    {
        const char *lvl = g3_opts_str(opts, "log-level");
        g3_log_level_t level;
        if (g3_opts_is_set(opts, "log-level") && g3_log_level_parse(lvl, &level) == G3_OK)
            g3_log_set_level(level);
    }
    if (g3_opts_str(opts, "config") != NULL) {
        char *path = strdup(g3_opts_str(opts, "config"));
        if (path == NULL) { st = G3_ERR_NO_MEMORY; goto err_free_opts; }
        st = g3_opt_read_config(opts, path);
        free(path);
        if (st != G3_OK)
            goto err_free_opts;
    }
    /* Pass 1: everything, overriding the config file. */
    st = g3_opt_parse_argv(opts, argc, argv, 1);
    if (st != G3_OK)
        goto err_free_opts;
    {
        const char *lvl = g3_opts_str(opts, "log-level");
        g3_log_level_t level;
        if (g3_opts_is_set(opts, "log-level") && g3_log_level_parse(lvl, &level) == G3_OK)
            g3_log_set_level(level);
    }
    if (opts->npos < cmd->min_pos || (cmd->max_pos >= 0 && opts->npos > cmd->max_pos)) {
        if (cmd->max_pos == 0)
            g3_error("gpt3d %s: unexpected argument '%s'; this command takes only flags (see 'gpt3d %s --help')",
                     cmd->name, opts->pos[0], cmd->name);
        else
            g3_error("gpt3d %s: expected %s, got %d argument%s (see 'gpt3d %s --help')",
                     cmd->name, cmd->usage ? cmd->usage : "arguments", opts->npos,
                     opts->npos == 1 ? "" : "s", cmd->name);
        st = G3_ERR_USAGE;
        goto err_free_opts;
    }
    *opts_p = opts;
    return G3_OK;

err_free_opts:
    g3_opts_free(opts);
    return st;
}

int g3_opts_help_shown(const g3_opts_t *opts) { return opts->help_shown; }

static const g3_opt_value_t *g3_opt_get(const g3_opts_t *opts, const char *name, g3_opt_type_t type)
{
    const g3_opt_value_t *v = g3_opt_find(opts, name);
    if (v == NULL || (v->spec->type != type &&
                      !(type == G3_OPT_STRING && v->spec->type == G3_OPT_CHOICE))) {
        g3_error("internal: option '--%s' %s for 'gpt3d %s'", name,
                 v == NULL ? "is not declared" : "is read with the wrong type", opts->cmd->name);
        abort();
    }
    return v;
}

int64_t g3_opts_int(const g3_opts_t *opts, const char *name)
{
    return g3_opt_get(opts, name, G3_OPT_INT)->i;
}

double g3_opts_float(const g3_opts_t *opts, const char *name)
{
    return g3_opt_get(opts, name, G3_OPT_FLOAT)->f;
}

const char *g3_opts_str(const g3_opts_t *opts, const char *name)
{
    const g3_opt_value_t *v = g3_opt_get(opts, name, G3_OPT_STRING);
    return v->has_value ? v->s : NULL;
}

int g3_opts_bool(const g3_opts_t *opts, const char *name)
{
    return (int)g3_opt_get(opts, name, G3_OPT_BOOL)->i;
}

int g3_opts_list(const g3_opts_t *opts, const char *name, char *const **values_p)
{
    const g3_opt_value_t *v = g3_opt_get(opts, name, G3_OPT_LIST);
    *values_p = v->list;
    return v->nlist;
}

int g3_opts_declared(const g3_opts_t *opts, const char *name)
{
    return g3_opt_find(opts, name) != NULL;
}

int g3_opts_is_set(const g3_opts_t *opts, const char *name)
{
    const g3_opt_value_t *v = g3_opt_find(opts, name);
    if (v == NULL) {
        g3_error("internal: option '--%s' is not declared for 'gpt3d %s'", name, opts->cmd->name);
        abort();
    }
    return v->set;
}

int g3_opts_npos(const g3_opts_t *opts) { return opts->npos; }

const char *g3_opts_pos(const g3_opts_t *opts, int i)
{
    return (i >= 0 && i < opts->npos) ? opts->pos[i] : NULL;
}

void g3_opts_write_config(const g3_opts_t *opts, FILE *out)
{
    for (int i = 0; i < opts->nvalues; i++) {
        const g3_opt_value_t *v = &opts->values[i];
        const char *name = v->spec->name;
        if (!v->has_value || !strcmp(name, "help") || !strcmp(name, "config"))
            continue;
        if (v->spec->type == G3_OPT_BOOL) {
            fprintf(out, "%s = %s\n", name, v->i ? "true" : "false");
        } else if (v->spec->type == G3_OPT_LIST) {
            fprintf(out, "%s =", name);
            for (int k = 0; k < v->nlist; k++)
                fprintf(out, " %s", v->list[k]);
            fputc('\n', out);
        } else if (v->s) {
            fprintf(out, "%s = %s\n", name, v->s);
        }
    }
}

static void g3_opt_print_spec(const g3_opt_spec_t *s, FILE *out)
{
    char left[160];

    if (s->type == G3_OPT_BOOL)
        snprintf(left, sizeof(left), "--%s", s->name);
    else
        snprintf(left, sizeof(left), "--%s %s", s->name, g3_opt_type_metavar(s));
    if (strlen(left) > 34)
        fprintf(out, "  %s\n  %-34s ", left, "");
    else
        fprintf(out, "  %-34s ", left);
    fputs(s->help ? s->help : "", out);
    if (s->defval && s->type != G3_OPT_BOOL)
        fprintf(out, " [default: %s]", s->defval);
    fputc('\n', out);
}

void g3_opts_print_help(const g3_opt_cmd_t *cmd, FILE *out)
{
    fprintf(out, "Usage: gpt3d %s [options]%s%s\n\n%s\n\nOptions:\n", cmd->name,
            cmd->usage ? " " : "", cmd->usage ? cmd->usage : "", cmd->summary);
    for (const g3_opt_spec_t *s = cmd->specs; s && s->name; s++)
        g3_opt_print_spec(s, out);
    fprintf(out, "\nCommon options:\n");
    for (const g3_opt_spec_t *s = g3_opt_common; s->name; s++)
        g3_opt_print_spec(s, out);
}
