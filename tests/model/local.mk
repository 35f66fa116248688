# tests/model: the CPU backend's ops and the GPT model (the PyTorch reference check is in
# tests/train/test_reference.sh).
G3_C_TESTS += tests/model/test_backend_cpu tests/model/test_gpt tests/model/test_backend_table
# test_backend_cpu checks the layer norm against the kernels' plain-C reference
tests_model_test_backend_cpu_SOURCES = tests/model/test_backend_cpu.c tests/kernels/ref.c \
	tests/kernels/ref.h
