# tests/model: the CPU backend's ops and the GPT model (the PyTorch reference check is in
# tests/train/test_reference.sh).
G3_C_TESTS += tests/model/test_backend_cpu tests/model/test_gpt tests/model/test_backend_table
