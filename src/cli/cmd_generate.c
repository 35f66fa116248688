/* gpt3d generate: text generation.  Not implemented in this build yet; the entry exists
 * so that "gpt3d help" lists it, and it fails honestly with exit code 1. */
#include "cli/commands.h"

int g3_cmd_generate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return g3_cmd_not_built("generate", "text generation from a checkpoint (generating from a checkpoint needs checkpoints, which are not built yet; 'gpt3d train --sample-tokens N --prompt TEXT' prints a sample from the model it has just trained)");
}
