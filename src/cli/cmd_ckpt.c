/* gpt3d ckpt: checkpoint tools.  Not implemented in this build yet; the entry exists
 * so that "gpt3d help" lists it, and it fails honestly with exit code 1. */
#include "cli/commands.h"

int g3_cmd_ckpt(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return g3_cmd_not_built("ckpt", "checkpoint tools");
}
