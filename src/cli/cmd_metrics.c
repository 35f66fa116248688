/* gpt3d metrics: the records of a run's metrics file, read through the schema, as
 * tab-separated values.
 *
 *   gpt3d metrics [--event NAME] [--fields A,B,C] [--last] RUN [--where KEY=VALUE...]
 *   gpt3d metrics --schema
 *
 * RUN: a metrics.jsonl or a run directory (its metrics.jsonl).  The schema and the reading
 * are metrics/events.h's, the query metrics/query.h's; docs/training.md ("Reading the
 * metrics") has examples. */
#include "config.h"

#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/opt.h"
#include "metrics/events.h"
#include "metrics/query.h"

static const g3_opt_spec_t g3_cmd_metrics_specs[] = {
    { "event", G3_OPT_STRING, NULL, "Only the records of this event (train, eval, task, ...: --schema lists them).", NULL, 0, 0, "NAME" },
    { "where", G3_OPT_LIST, NULL, "Only the records whose fields, as printed, have these values (all of them); e.g. --where split=valid.", NULL, 1, G3_EV_QUERY_MAX, "KEY=VALUE" },
    { "fields", G3_OPT_STRING, NULL, "Print these fields, tab-separated, one line per record (NAME, NAME.MEMBER of an object such as metrics.acc, or event); default: the records' JSON lines.", NULL, 0, 0, "A,B,C" },
    { "last", G3_OPT_BOOL, NULL, "Only the last matching record.", NULL, 0, 0, NULL },
    { "schema", G3_OPT_BOOL, NULL, "Print the schema (every event's fields: type, unit, TensorBoard tag) as a markdown table and exit.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_cmd_metrics_cmd = {
    "metrics", "Print fields of a run's metrics records (train, eval, task, ...) as tab-separated values.", "RUN", 0, 1,
    g3_cmd_metrics_specs
};

int g3_cmd_metrics(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_ev_query_t q;
    char *const *where = NULL;
    int nwhere, rc = G3_EXIT_OK;
    g3_status_t st;
    int go = g3_cli_args_parse(&g3_cmd_metrics_cmd, argc, argv, &o);

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    if (g3_opts_bool(o, "schema")) {
        g3_ev_schema_markdown(stdout);
        g3_opts_free(o);
        return G3_EXIT_OK;
    }
    if (g3_opts_npos(o) != 1) {
        g3_error("gpt3d metrics: name one metrics file or run directory (see gpt3d help metrics)");
        g3_opts_free(o);
        return G3_EXIT_USAGE;
    }
    nwhere = g3_opts_is_set(o, "where") ? g3_opts_list(o, "where", &where) : 0;
    st = g3_ev_query_init(&q, g3_opts_str(o, "event"), g3_opts_str(o, "fields"), where, nwhere,
                          g3_opts_bool(o, "last"));
    if (st == G3_OK)
        st = g3_ev_query_run(&q, g3_opts_pos(o, 0), stdout);
    if (fflush(stdout) != 0 && st == G3_OK) {
        g3_error("gpt3d metrics: could not write the output");
        st = G3_ERR_IO;
    }
    if (st == G3_ERR_USAGE)
        rc = G3_EXIT_USAGE;
    else if (st != G3_OK)
        rc = G3_EXIT_FAILURE;
    g3_ev_query_free(&q);
    g3_opts_free(o);
    return rc;
}
