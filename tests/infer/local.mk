# tests/infer: the sampler and generation loop (C), and gpt3d eval / gpt3d generate on
# checkpoints of the real trainer, against the trainer's own numbers and a PyTorch reference.
check_PROGRAMS += tests/infer/test_sample
TESTS += tests/infer/test_sample tests/infer/test_infer.sh tests/infer/test_infer_parallel.sh
tests_infer_test_sample_SOURCES = tests/infer/test_sample.c tests/tap.h
tests_infer_test_sample_LDADD = $(G3_TEST_LDADD)
EXTRA_DIST += tests/infer/test_infer.sh tests/infer/test_infer_parallel.sh tests/infer/infer_ref.py
