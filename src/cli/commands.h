/* gpt3d subcommand drivers.  Each takes the arguments after its own name
 * (argv[0] is the first flag) and RETURNs the process exit code (see
 * g3_exit_code_t in core/status.h).  Drivers are the only code that decides
 * to stop the process. */
#ifndef G3_CLI_COMMANDS_H
#define G3_CLI_COMMANDS_H

int g3_cmd_train(int argc, char **argv);
int g3_cmd_tokenize(int argc, char **argv);
int g3_cmd_preprocess(int argc, char **argv);
int g3_cmd_corpus(int argc, char **argv);
int g3_cmd_topo(int argc, char **argv);
int g3_cmd_ckpt(int argc, char **argv);
int g3_cmd_eval(int argc, char **argv);
int g3_cmd_generate(int argc, char **argv);
int g3_cmd_plan(int argc, char **argv);
int g3_cmd_plot(int argc, char **argv);
int g3_cmd_metrics(int argc, char **argv);
int g3_cmd_curate(int argc, char **argv);

#endif
