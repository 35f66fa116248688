/* gpt3d core: option tables, command-line and config-file parsing.
 *
 * Each subcommand declares a table of g3_opt_spec_t (name, type, default,
 * help).  g3_opts_parse() accepts "--name value" and "--name=value", adds
 * the common options --help, --config FILE and --log-level LEVEL, reads the
 * config file first (lines "name = value", same names as the flags, '#'
 * comments) and lets the command line win.  Unknown flags get a "did you
 * mean" suggestion; malformed values name the flag and the value.
 *
 * Ownership: the returned g3_opts_t owns copies of every string; free it
 * with g3_opts_free().  Getters take the flag name without "--"; asking for
 * a name that is not in the table is a bug and aborts. */
#ifndef G3_CORE_OPT_H
#define G3_CORE_OPT_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

typedef enum {
    G3_OPT_INT,      /* int64, decimal                                  */
    G3_OPT_FLOAT,    /* double, finite                                  */
    G3_OPT_STRING,   /* any text                                        */
    G3_OPT_BOOL,     /* a switch: "--name" sets it; config: true/false   */
    G3_OPT_CHOICE,   /* one of the '|'-separated words in .choices      */
    G3_OPT_LIST      /* min_args..max_args words (max_args 0: unlimited) */
} g3_opt_type_t;

typedef struct {
    const char    *name;      /* flag name without the leading "--"           */
    g3_opt_type_t  type;
    const char    *defval;    /* default as text; NULL means "unset"          */
    const char    *help;      /* one sentence                                 */
    const char    *choices;   /* G3_OPT_CHOICE: "cosine|linear|constant"      */
    int            min_args;  /* G3_OPT_LIST only                             */
    int            max_args;  /* G3_OPT_LIST only; 0 = no upper bound         */
    const char    *metavar;   /* shown in --help; NULL picks one from the type */
} g3_opt_spec_t;

/* The table ends with an entry whose name is NULL. */
typedef struct {
    const char          *name;      /* "train"                                  */
    const char          *summary;   /* one line for "gpt3d help"                */
    const char          *usage;     /* positional part, e.g. "IN OUT", or NULL   */
    int                  min_pos;   /* positional argument count bounds         */
    int                  max_pos;
    const g3_opt_spec_t *specs;
} g3_opt_cmd_t;

typedef struct g3_opts g3_opts_t;

/* Parse argv[0..argc) (argv[0] is the first argument after the subcommand
 * name).  On a usage error the message is logged and G3_ERR_USAGE returned.
 * OUT: *opts_p, only on G3_OK. */
g3_status_t g3_opts_parse(const g3_opt_cmd_t *cmd, int argc, char **argv,
                          g3_opts_t **opts_p);
void g3_opts_free(g3_opts_t *opts);

/* True when --help was given: the help has been printed; exit 0. */
int g3_opts_help_shown(const g3_opts_t *opts);

int64_t     g3_opts_int(const g3_opts_t *opts, const char *name);
double      g3_opts_float(const g3_opts_t *opts, const char *name);
const char *g3_opts_str(const g3_opts_t *opts, const char *name);  /* NULL if unset */
int         g3_opts_bool(const g3_opts_t *opts, const char *name);
/* RET: number of values; OUT: *values_p (owned by opts) */
int         g3_opts_list(const g3_opts_t *opts, const char *name, char *const **values_p);
/* True when the flag came from the command line or the config file. */
int         g3_opts_is_set(const g3_opts_t *opts, const char *name);
/* Whether the command's table has the option (a reader shared by commands whose tables
 * differ asks before reading one that only some have). */
int         g3_opts_declared(const g3_opts_t *opts, const char *name);
int         g3_opts_npos(const g3_opts_t *opts);
const char *g3_opts_pos(const g3_opts_t *opts, int i);

/* Write "name = value" lines for every option that has a value, in a form
 * --config reads back (used to record a run's configuration). */
void g3_opts_write_config(const g3_opts_t *opts, FILE *out);

/* Print the --help text of a command. */
void g3_opts_print_help(const g3_opt_cmd_t *cmd, FILE *out);

/* RET: the closest name in candidates[0..n) to word, or NULL if none is
 * close enough to be a plausible typo. */
const char *g3_opts_suggest(const char *word, const char *const *candidates, int n);

#endif
