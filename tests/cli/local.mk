TESTS += tests/cli/test_cli.sh
EXTRA_DIST += tests/cli/test_cli.sh
TESTS += tests/cli/test_plan.sh
EXTRA_DIST += tests/cli/test_plan.sh
TESTS += tests/cli/test_examples.sh
EXTRA_DIST += tests/cli/test_examples.sh
# the plan's time against bench_train on this machine (a benchmark: make check-long)
LONG_TESTS += tests/cli/bench_plan.sh
EXTRA_DIST += tests/cli/bench_plan.sh tests/cli/gpu_plan.sh
