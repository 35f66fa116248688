/* gpt3d drivers: the start every subcommand's main shares, parsing its options. */
#ifndef G3_CLI_ARGS_H
#define G3_CLI_ARGS_H

#include "core/opt.h"

/* g3_cli_args_parse's answer when the command goes on with its options. */
#define G3_CLI_ARGS_GO_ON (-1)

/* Parse a subcommand's options (g3_opts_parse).  OUT: *opts_p when the command goes on.
 * RET: G3_CLI_ARGS_GO_ON, or the exit code for the command to return at once: a usage
 * error's (logged) or G3_EXIT_OK after --help printed the help (the options freed). */
int g3_cli_args_parse(const g3_opt_cmd_t *cmd, int argc, char **argv, g3_opts_t **opts_p);

#endif
