# tests/kernels: the CUDA kernels (kernels/) against plain-C references (ref.c).
# test_ref checks the references themselves on the CPU and runs everywhere; the kernel tests
# are built whenever nvcc is found and print "1..0 # SKIP no CUDA device: ..." without a GPU.
# G3_BENCH=1 makes each kernel test also print timings.  test_emulated.sh (make check-long)
# runs the kernels' device code on the CPU under tests/kernels/emu/shim.h.  bench_gemm (the
# cuBLASLt ceiling) and bench_gpu.sh are run by hand on a GPU machine (docs/cuda.md).
G3_C_TESTS += tests/kernels/test_ref
tests_kernels_test_ref_SOURCES = tests/kernels/test_ref.c tests/kernels/ref.c tests/kernels/ref.h
# The CUDA backend (src/backend/cuda.c) as a whole: the model against the CPU backend, and
# gpt3d train --device cuda (50 KJV steps, checkpoints across backends; the refusals without
# CUDA or a GPU run everywhere).  Built in every configuration; they SKIP what needs a GPU.
G3_C_TESTS += tests/kernels/test_gpt_cuda
G3_SH_TESTS += tests/kernels/test_cuda_train.sh
# The optional fused ops' wiring (model, optimizers) on the CPU: GPT3D_FUSED_OPS=1 must give
# bit-identical results.  Runs everywhere.
G3_C_TESTS += tests/kernels/test_fused_cpu
G3_SH_TESTS += tests/kernels/test_fused_train.sh

if HAVE_CUDA
# One test per kernel family, each with the plain-C references.
G3_C_TESTS += tests/kernels/test_elementwise tests/kernels/test_embedding \
	tests/kernels/test_layernorm tests/kernels/test_gelu tests/kernels/test_gemm \
	tests/kernels/test_attention tests/kernels/test_xent tests/kernels/test_optim
G3_KT_SOURCES = tests/kernels/ref.c tests/kernels/ref.h tests/kernels/kt.h
tests_kernels_test_elementwise_SOURCES = tests/kernels/test_elementwise.c $(G3_KT_SOURCES)
tests_kernels_test_embedding_SOURCES = tests/kernels/test_embedding.c $(G3_KT_SOURCES)
tests_kernels_test_layernorm_SOURCES = tests/kernels/test_layernorm.c $(G3_KT_SOURCES)
tests_kernels_test_gelu_SOURCES = tests/kernels/test_gelu.c $(G3_KT_SOURCES)
tests_kernels_test_gemm_SOURCES = tests/kernels/test_gemm.c $(G3_KT_SOURCES)
tests_kernels_test_attention_SOURCES = tests/kernels/test_attention.c $(G3_KT_SOURCES)
tests_kernels_test_xent_SOURCES = tests/kernels/test_xent.c $(G3_KT_SOURCES)
tests_kernels_test_optim_SOURCES = tests/kernels/test_optim.c $(G3_KT_SOURCES)
# The kernels' device code emulated on the CPU (about 2 minutes on 2 busy cores: check-long).
LONG_TESTS += tests/kernels/test_emulated.sh
if HAVE_CUBLAS
check_PROGRAMS += tests/kernels/bench_gemm
endif
endif
# test_emulated.sh is distributed in every configuration, not only where LONG_TESTS has it.
EXTRA_DIST += tests/kernels/kt.h tests/kernels/bench_gpu.sh tests/kernels/torch_gpt_bench.py \
	tests/kernels/test_emulated.sh tests/kernels/emu/shim.h tests/kernels/emu/emu_kernels.cc
# By hand (docs/cuda.md, "Split-K and bf16 outputs"): split-K with bf16 partial sums on
# test_gemm's inputs.
EXTRA_DIST += tests/kernels/gemm_splitk.py
