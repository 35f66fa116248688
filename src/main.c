/* gpt3d: the one binary.  Dispatches "gpt3d CMD ..." to a driver. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/param.h"
#include "core/status.h"

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} g3_command_t;

static const g3_command_t g3_commands[] = {
    { "train",      "Pretrain a GPT model (single rank, mpirun or srun --mpi=pmix).", g3_cmd_train },
    { "eval",       "Evaluate a checkpoint's loss on the validation or test split.",  g3_cmd_eval },
    { "generate",   "Generate text from a checkpoint.",                               g3_cmd_generate },
    { "tokenize",   "Encode stdin to GPT-2 BPE ids, or decode ids back to text.",     g3_cmd_tokenize },
    { "preprocess", "Write a Megatron indexed dataset (.bin/.idx) from text or JSON lines.", g3_cmd_preprocess },
    { "curate",     "Deduplicate, decontaminate and filter JSON-lines shards (job-array stages).", g3_cmd_curate },
    { "corpus",     "Build the built-in King James Bible corpus and GPT-2 vocabulary.", g3_cmd_corpus },
    { "topo",       "Print the rank-to-node mapping for a job or a described cluster.", g3_cmd_topo },
    { "plan",       "Check a parallel layout against a model and print memory per rank.", g3_cmd_plan },
    { "ckpt",       "Inspect, verify, convert or export checkpoints.",                g3_cmd_ckpt },
    { "plot",       "Draw the loss curves of runs or of an ablation study as an SVG.", g3_cmd_plot },
    { "metrics",    "Print fields of a run's metrics records (train, eval, task, ...) as tab-separated values.", g3_cmd_metrics },
};
#define G3_NCOMMANDS ((int)(sizeof(g3_commands) / sizeof(g3_commands[0])))

static void g3_print_version(void)
{
    printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
    printf("features: %s\n", G3_FEATURES);
    g3_be_print_devices(stdout);
}

static void g3_print_usage(FILE *out)
{
    fprintf(out, "Usage: gpt3d COMMAND [options]\n\n"
                 "3D-parallel (tensor x pipeline x data) GPT pretraining.\n\nCommands:\n");
    for (int i = 0; i < G3_NCOMMANDS; i++)
        fprintf(out, "  %-11s %s\n", g3_commands[i].name, g3_commands[i].summary);
    fprintf(out, "  %-11s %s\n", "help", "Show this list, 'gpt3d help COMMAND' for a command's flags, or 'gpt3d help env' for the environment variables.");
    fprintf(out, "\n'gpt3d --version' prints the version and the features built in.\n"
                 "Exit codes: 0 success, 1 failure, 2 usage error, 75 checkpoint saved on request\n"
                 "(requeue the job), 76 distributed timeout, 78 the checkpoint to resume from cannot be\n"
                 "loaded, 79 non-finite loss; see gpt3d(1).\n");
}

static const g3_command_t *g3_find_command(const char *name)
{
    const char *names[G3_NCOMMANDS + 1];
    const char *hint;

    for (int i = 0; i < G3_NCOMMANDS; i++) {
        if (strcmp(g3_commands[i].name, name) == 0)
            return &g3_commands[i];
        names[i] = g3_commands[i].name;
    }
    names[G3_NCOMMANDS] = "help";
    hint = g3_opts_suggest(name, names, G3_NCOMMANDS + 1);
    if (hint)
        g3_error("'%s' is not a gpt3d command; did you mean '%s'? (see 'gpt3d help')", name, hint);
    else
        g3_error("'%s' is not a gpt3d command (see 'gpt3d help')", name);
    return NULL;
}

int main(int argc, char **argv)
{
    const g3_command_t *cmd;

    g3_log_init_from_env();
    if (argc < 2) {
        g3_print_usage(stderr);
        return G3_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        g3_print_version();
        return G3_EXIT_OK;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        g3_print_usage(stdout);
        return G3_EXIT_OK;
    }
    if (!strcmp(argv[1], "help")) {
        if (argc < 3) {
            g3_print_usage(stdout);
            return G3_EXIT_OK;
        }
        if (!strcmp(argv[2], "env")) {
            g3_param_print(stdout);
            return G3_EXIT_OK;
        }
        cmd = g3_find_command(argv[2]);
        if (cmd == NULL)
            return G3_EXIT_USAGE;
        {
            char help[] = "--help";
            char *sub_argv[] = { help, NULL };
            return cmd->run(1, sub_argv);
        }
    }
    cmd = g3_find_command(argv[1]);
    if (cmd == NULL)
        return G3_EXIT_USAGE;
    /* the commands that compute: OpenMP's wait policy before they start (#32.9) */
    if (cmd->run == g3_cmd_train || cmd->run == g3_cmd_eval || cmd->run == g3_cmd_generate
        || cmd->run == g3_cmd_plan)
        g3_be_cpu_env(argv);
    return cmd->run(argc - 2, argv + 2);
}
