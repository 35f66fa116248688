# tests/ckpt: checkpoint library and `gpt3d ckpt` tools.
check_PROGRAMS += tests/ckpt/test_ckpt_roundtrip
TESTS += tests/ckpt/test_ckpt_roundtrip
tests_ckpt_test_ckpt_roundtrip_SOURCES = tests/ckpt/test_ckpt_roundtrip.c tests/ckpt/synth.h tests/tap.h
tests_ckpt_test_ckpt_roundtrip_LDADD = $(G3_TEST_LDADD)
check_PROGRAMS += tests/ckpt/ckpt_synth
tests_ckpt_ckpt_synth_SOURCES = tests/ckpt/ckpt_synth.c tests/ckpt/synth.h
tests_ckpt_ckpt_synth_LDADD = $(G3_TEST_LDADD)
TESTS += tests/ckpt/test_ckpt_cli.sh
EXTRA_DIST += tests/ckpt/test_ckpt_cli.sh tests/ckpt/check_ckpt.py tests/ckpt/synth.py
TESTS += tests/ckpt/test_ckpt_integrity.sh
EXTRA_DIST += tests/ckpt/test_ckpt_integrity.sh tests/ckpt/edit_ckpt.py
check_PROGRAMS += tests/ckpt/test_ckpt_crash
TESTS += tests/ckpt/test_ckpt_crash
tests_ckpt_test_ckpt_crash_SOURCES = tests/ckpt/test_ckpt_crash.c tests/ckpt/synth.h tests/tap.h
tests_ckpt_test_ckpt_crash_LDADD = $(G3_TEST_LDADD)
check_PROGRAMS += tests/ckpt/test_ckpt_corrupt
TESTS += tests/ckpt/test_ckpt_corrupt
tests_ckpt_test_ckpt_corrupt_SOURCES = tests/ckpt/test_ckpt_corrupt.c tests/ckpt/synth.h tests/tap.h
tests_ckpt_test_ckpt_corrupt_LDADD = $(G3_TEST_LDADD)
# The benchmark (docs/benchmarks.md, "Checkpoints"): built by make check, not run.
check_PROGRAMS += tests/ckpt/bench_ckpt
tests_ckpt_bench_ckpt_SOURCES = tests/ckpt/bench_ckpt.c tests/ckpt/synth.h
tests_ckpt_bench_ckpt_LDADD = $(G3_TEST_LDADD)
check_PROGRAMS += tests/ckpt/test_ckpt_collective
TESTS += tests/ckpt/test_ckpt_collective
tests_ckpt_test_ckpt_collective_SOURCES = tests/ckpt/test_ckpt_collective.c tests/ckpt/synth.h tests/tap.h
tests_ckpt_test_ckpt_collective_LDADD = $(G3_TEST_LDADD)
