# src/cli: the gpt3d binary: subcommand dispatch and one driver per command.
bin_PROGRAMS += src/gpt3d
src_gpt3d_SOURCES = \
	src/main.c \
	src/cli/commands.h src/cli/args.h src/cli/args.c \
	src/cli/world.h \
	src/cli/world.c \
	src/cli/cmd_train.c \
	src/cli/cmd_tokenize.c \
	src/cli/cmd_preprocess.c \
	src/cli/cmd_corpus.c \
	src/cli/cmd_topo.c \
	src/cli/cmd_ckpt.c \
	src/cli/cmd_infer.h \
	src/cli/cmd_infer.c \
	src/cli/cmd_eval.c \
	src/cli/eval_tasks.h \
	src/cli/eval_tasks.c \
	src/cli/cmd_generate.c \
	src/cli/cmd_plan.c \
	src/cli/cmd_plot.c src/cli/cmd_metrics.c src/cli/cmd_curate.c
