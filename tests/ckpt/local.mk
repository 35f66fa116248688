# tests/ckpt: checkpoint library and `gpt3d ckpt` tools.  The C programs share synth.h, a
# synthetic training state; ckpt_synth writes it for the shell tests.
G3_C_TESTS += tests/ckpt/test_ckpt_roundtrip tests/ckpt/test_ckpt_crash \
	tests/ckpt/test_ckpt_corrupt tests/ckpt/test_ckpt_collective
check_PROGRAMS += tests/ckpt/ckpt_synth
G3_SH_TESTS += tests/ckpt/test_ckpt_cli.sh tests/ckpt/test_ckpt_integrity.sh \
	tests/ckpt/test_ckpt_hostile.sh
EXTRA_DIST += tests/ckpt/ckpt_lib.sh tests/ckpt/synth.h tests/ckpt/check_ckpt.py tests/ckpt/synth.py \
	tests/ckpt/edit_ckpt.py
# The benchmark (docs/benchmarks.md, "Checkpoints"): built by make check, not run.
check_PROGRAMS += tests/ckpt/bench_ckpt
