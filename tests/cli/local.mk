TESTS += tests/cli/test_cli.sh
EXTRA_DIST += tests/cli/test_cli.sh
TESTS += tests/cli/test_plan.sh
EXTRA_DIST += tests/cli/test_plan.sh
TESTS += tests/cli/test_examples.sh
EXTRA_DIST += tests/cli/test_examples.sh
