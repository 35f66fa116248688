/* Option parsing: forms, types, defaults, lists, config files, errors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/opt.h"
#include "tap.h"

static const g3_opt_spec_t specs[] = {
    { "micro-batch-size",  G3_OPT_INT,    "1",      "Micro batch.", NULL, 0, 0, NULL },
    { "global-batch-size", G3_OPT_INT,    NULL,     "Global batch.", NULL, 0, 0, NULL },
    { "lr",                G3_OPT_FLOAT,  "0.0001", "Learning rate.", NULL, 0, 0, NULL },
    { "save",              G3_OPT_STRING, NULL,     "Save dir.", NULL, 0, 0, "DIR" },
    { "recompute-activations", G3_OPT_BOOL, NULL,   "Recompute.", NULL, 0, 0, NULL },
    { "lr-decay-style",    G3_OPT_CHOICE, "cosine", "Decay.", "cosine|linear|constant", 0, 0, NULL },
    { "rampup-batch-size", G3_OPT_LIST,   NULL,     "Ramp-up.", NULL, 3, 3, "START INCR SAMPLES" },
    { "data-path",         G3_OPT_LIST,   NULL,     "Data.", NULL, 1, 0, "[W] PREFIX..." },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};
static const g3_opt_cmd_t cmd = { "test", "A test command.", NULL, 0, 0, specs };
static const g3_opt_cmd_t cmd_pos = { "conv", "Two positionals.", "IN OUT", 2, 2, specs };

static g3_status_t parse(const g3_opt_cmd_t *c, g3_opts_t **o, int argc, ...)
{
    char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    return g3_opts_parse(c, argc, argv, o);
}

int main(void)
{
    g3_opts_t *o = NULL;
    char *const *list;
    char cfg[] = "/tmp/g3-test-opt-XXXXXX";
    int fd;
    FILE *f;

    g3_log_set_level(G3_LOG_ERROR);  /* the expected errors are still printed */

    tap_ok(parse(&cmd, &o, 0) == G3_OK, "no arguments parse");
    tap_ok(g3_opts_int(o, "micro-batch-size") == 1, "integer default");
    tap_ok(g3_opts_float(o, "lr") == 0.0001, "float default");
    tap_ok(g3_opts_str(o, "save") == NULL, "unset string is NULL");
    tap_ok(!g3_opts_bool(o, "recompute-activations"), "switch defaults to false");
    tap_ok(strcmp(g3_opts_str(o, "lr-decay-style"), "cosine") == 0, "choice default");
    tap_ok(!g3_opts_is_set(o, "micro-batch-size"), "default is not 'set'");
    g3_opts_free(o);

    tap_ok(parse(&cmd, &o, 7, "--micro-batch-size", "4", "--lr=3e-4", "--save", "/x",
                 "--recompute-activations", "--lr-decay-style=linear") == G3_OK,
           "space and '=' forms parse");
    tap_ok(g3_opts_int(o, "micro-batch-size") == 4 && g3_opts_float(o, "lr") == 3e-4,
           "values read back");
    tap_ok(strcmp(g3_opts_str(o, "save"), "/x") == 0 && g3_opts_bool(o, "recompute-activations")
           && strcmp(g3_opts_str(o, "lr-decay-style"), "linear") == 0, "string, switch, choice");
    tap_ok(g3_opts_is_set(o, "micro-batch-size"), "given flag is 'set'");
    g3_opts_free(o);

    tap_ok(parse(&cmd, &o, 4, "--micro-batch-size", "2", "--micro-batch-size", "8") == G3_OK
           && g3_opts_int(o, "micro-batch-size") == 8, "the last occurrence wins");
    g3_opts_free(o);

    tap_ok(parse(&cmd, &o, 8, "--rampup-batch-size", "32", "32", "1000", "--data-path", "0.3", "A",
                 "0.7") == G3_OK, "list flags parse");
    tap_ok(g3_opts_list(o, "rampup-batch-size", &list) == 3 && !strcmp(list[2], "1000"),
           "fixed-size list");
    tap_ok(g3_opts_list(o, "data-path", &list) == 3 && !strcmp(list[1], "A"), "open-ended list");
    g3_opts_free(o);

    o = NULL;
    tap_ok(parse(&cmd, &o, 3, "--rampup-batch-size", "32", "32") == G3_ERR_USAGE && o == NULL,
           "a short fixed list is rejected and nothing is returned");
    tap_ok(parse(&cmd, &o, 1, "--data-path") == G3_ERR_USAGE, "an empty list is rejected");
    tap_ok(parse(&cmd, &o, 2, "--micro-batch-size", "four") == G3_ERR_USAGE, "non-integer rejected");
    tap_ok(parse(&cmd, &o, 2, "--micro-batch-size", "4x") == G3_ERR_USAGE, "trailing junk rejected");
    tap_ok(parse(&cmd, &o, 2, "--micro-batch-size", "99999999999999999999999") == G3_ERR_USAGE,
           "integer overflow rejected");
    tap_ok(parse(&cmd, &o, 2, "--lr", "nan") == G3_ERR_USAGE, "NaN rejected");
    tap_ok(parse(&cmd, &o, 2, "--lr", "") == G3_ERR_USAGE, "empty float rejected");
    tap_ok(parse(&cmd, &o, 2, "--lr-decay-style", "cosin") == G3_ERR_USAGE, "bad choice rejected");
    tap_ok(parse(&cmd, &o, 1, "--save") == G3_ERR_USAGE, "missing value rejected");
    tap_ok(parse(&cmd, &o, 2, "--save", "--lr") == G3_ERR_USAGE, "a flag is not taken as a value");
    tap_ok(parse(&cmd, &o, 2, "--micro-batch-sise", "4") == G3_ERR_USAGE, "unknown flag rejected");
    tap_ok(parse(&cmd, &o, 1, "-x") == G3_ERR_USAGE, "single-dash flag rejected");
    tap_ok(parse(&cmd, &o, 1, "stray") == G3_ERR_USAGE, "positional rejected where none allowed");
    tap_ok(parse(&cmd, &o, 1, "--recompute-activations=maybe") == G3_ERR_USAGE, "bad switch value rejected");

    tap_ok(parse(&cmd_pos, &o, 3, "in", "--lr", "0.5") == G3_ERR_USAGE, "too few positionals rejected");
    tap_ok(parse(&cmd_pos, &o, 4, "in", "--lr", "0.5", "out") == G3_OK
           && g3_opts_npos(o) == 2 && !strcmp(g3_opts_pos(o, 1), "out"), "positionals between flags");
    g3_opts_free(o);
    tap_ok(parse(&cmd_pos, &o, 3, "in", "--", "--odd-name") == G3_OK
           && !strcmp(g3_opts_pos(o, 1), "--odd-name"), "'--' ends flags");
    g3_opts_free(o);

    {
        const char *names[] = { "micro-batch-size", "global-batch-size", "lr" };
        const char *s = g3_opts_suggest("micro-batch-sise", names, 3);
        tap_ok(s && !strcmp(s, "micro-batch-size"), "suggestion for a typo");
        tap_ok(g3_opts_suggest("zzzzzzzz", names, 3) == NULL, "no suggestion for nonsense");
        s = g3_opts_suggest("global-batch", names, 3);
        tap_ok(s && !strcmp(s, "global-batch-size"), "suggestion for an abbreviation");
    }

    /* Config file: values, comments, list, command line wins. */
    fd = mkstemp(cfg);
    f = fdopen(fd, "w");
    fprintf(f, "# a comment\n\nmicro-batch-size = 6\n--lr = 0.5  # trailing comment\n"
               "recompute-activations = true\ndata-path = 0.5 A 0.5 B\n");
    fclose(f);
    tap_ok(parse(&cmd, &o, 4, "--config", cfg, "--lr", "0.25") == G3_OK, "config file parses");
    tap_ok(g3_opts_int(o, "micro-batch-size") == 6, "config value used");
    tap_ok(g3_opts_float(o, "lr") == 0.25, "command line wins over config");
    tap_ok(g3_opts_bool(o, "recompute-activations"), "config switch");
    tap_ok(g3_opts_list(o, "data-path", &list) == 4 && !strcmp(list[3], "B"), "config list");
    {
        char buf[4096] = "";
        FILE *mem = fmemopen(buf, sizeof(buf), "w");
        g3_opts_write_config(o, mem);
        fclose(mem);
        tap_ok(strstr(buf, "micro-batch-size = 6\n") && strstr(buf, "data-path = 0.5 A 0.5 B\n")
               && strstr(buf, "lr = 0.25\n"), "write_config records the effective values");
    }
    g3_opts_free(o);

    f = fopen(cfg, "w");
    fprintf(f, "micro-batch-sise = 6\n");
    fclose(f);
    tap_ok(parse(&cmd, &o, 2, "--config", cfg) == G3_ERR_USAGE, "unknown key in config rejected");
    f = fopen(cfg, "w");
    fprintf(f, "micro-batch-size 6\n");
    fclose(f);
    tap_ok(parse(&cmd, &o, 2, "--config", cfg) == G3_ERR_USAGE, "config line without '=' rejected");
    f = fopen(cfg, "w");
    fprintf(f, "lr = fast\n");
    fclose(f);
    tap_ok(parse(&cmd, &o, 2, "--config", cfg) == G3_ERR_USAGE, "bad config value rejected");
    unlink(cfg);
    tap_ok(parse(&cmd, &o, 2, "--config", cfg) == G3_ERR_USAGE, "missing config file rejected");

    {
        char buf[8192] = "";
        FILE *mem = fmemopen(buf, sizeof(buf), "w");
        g3_opts_print_help(&cmd, mem);
        fclose(mem);
        tap_ok(strstr(buf, "--micro-batch-size N") && strstr(buf, "[default: cosine]")
               && strstr(buf, "--config FILE"), "help lists flags, defaults and common options");
    }
    return tap_exit();
}
