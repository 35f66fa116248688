# tests/cli: the gpt3d command (help, flags, exit codes), gpt3d plan, and the example
# configurations of docs/examples.
# the plan's host-side GPU logic: the --gpu table, the local GPU's name, the ops counted
G3_C_TESTS += tests/cli/test_plan_gpu
G3_SH_TESTS += tests/cli/test_cli.sh tests/cli/test_plan.sh tests/cli/test_examples.sh \
	tests/cli/test_bounds.sh tests/cli/test_scripts.sh
# the plan's time against bench_train on this machine (a benchmark: make check-long)
LONG_TESTS += tests/cli/bench_plan.sh
# the GPU half of the calibration, run by hand on a GPU machine (docs/plan.md)
EXTRA_DIST += tests/cli/gpu_plan.sh
