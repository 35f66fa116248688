# tests/gpu: check.sh, the one command that runs every GPU check on the GPU machine
# (docs/cuda.md); test_check.sh runs it here with every GPU part skipped.
G3_SH_TESTS += tests/gpu/test_check.sh
EXTRA_DIST += tests/gpu/check.sh
