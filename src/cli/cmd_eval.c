/* gpt3d eval: evaluation.  Not implemented in this build yet; the entry exists
 * so that "gpt3d help" lists it, and it fails honestly with exit code 1. */
#include "cli/commands.h"

int g3_cmd_eval(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return g3_cmd_not_built("eval", "evaluation of a checkpoint (evaluating a checkpoint needs checkpoints, which are not built yet; 'gpt3d train --eval-iters N' reports the validation loss during and at the end of training)");
}
