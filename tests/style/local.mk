# tests/style: the house rules a tool can check (messages whole on one line, the column
# limit, shellcheck, set -e and pipefail in test scripts, no include pointing up the layers);
# literals.py joins split messages.
G3_SH_TESTS += tests/style/test_style.sh tests/style/test_layers.sh
EXTRA_DIST += tests/style/literals.py
