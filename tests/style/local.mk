# tests/style: the house rules a tool can check (messages whole on one line, the column
# limit, shellcheck, set -e and pipefail in test scripts); literals.py joins split messages.
G3_SH_TESTS += tests/style/test_style.sh
EXTRA_DIST += tests/style/literals.py
