/* gpt3d drivers: parsing a subcommand's options (args.h). */
#include "config.h"

#include "cli/args.h"
#include "core/status.h"

int g3_cli_args_parse(const g3_opt_cmd_t *cmd, int argc, char **argv, g3_opts_t **opts_p)
{
    g3_status_t st = g3_opts_parse(cmd, argc, argv, opts_p);

    if (st != G3_OK)
        return g3_status_exit_code(st);
    if (g3_opts_help_shown(*opts_p)) {
        g3_opts_free(*opts_p);
        *opts_p = NULL;
        return G3_EXIT_OK;
    }
    return G3_CLI_ARGS_GO_ON;
}
