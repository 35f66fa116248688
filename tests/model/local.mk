# tests/model: the CPU backend's ops and the GPT model (the PyTorch reference check is in
# tests/train/test_reference.sh).
check_PROGRAMS += tests/model/test_backend_cpu
TESTS += tests/model/test_backend_cpu
tests_model_test_backend_cpu_SOURCES = tests/model/test_backend_cpu.c tests/tap.h
tests_model_test_backend_cpu_LDADD = $(G3_TEST_LDADD)
check_PROGRAMS += tests/model/test_gpt
TESTS += tests/model/test_gpt
tests_model_test_gpt_SOURCES = tests/model/test_gpt.c tests/tap.h
tests_model_test_gpt_LDADD = $(G3_TEST_LDADD)
