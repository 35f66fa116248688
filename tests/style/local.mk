# tests/style: the house rules a tool can check (messages whole on one line, the column
# limit, shellcheck, set -e and pipefail in test scripts, no include pointing up the layers);
# no dead export, no call circle between object files, no function over 100 lines;
# literals.py joins split messages; calls.py finds the circles and the long functions.
G3_SH_TESTS += tests/style/test_style.sh tests/style/test_layers.sh tests/style/test_exports.sh \
	tests/style/test_calls.sh tests/style/test_funclen.sh tests/style/test_unicode.sh
EXTRA_DIST += tests/style/literals.py tests/style/calls.py
