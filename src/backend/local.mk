# src/backend: compute ops tables (g3_be_): the table of kinds (kinds.c, kinds.h), opening a
# kind through it (backend.c), what the rows share (shared.c).  The CPU backend: fp32, CBLAS +
# OpenMP.  The CUDA backend (cuda.c, bf16 activations) calls the kernels of kernels/ and is
# compiled only when configure found CUDA (HAVE_CUDA); its row of the table (cuda_kind.c) is
# in every build.
src_libgpt3d_a_SOURCES += \
	src/backend/backend.c src/backend/backend.h src/backend/kinds.c src/backend/kinds.h \
	src/backend/shared.c src/backend/cuda_kind.c \
	src/backend/cpu.c src/backend/cpu_ops.c src/backend/cpu_matmul.c src/backend/cpu_internal.h \
	src/backend/cpu_env.c src/backend/cudnn_att.h src/backend/cudnn_att_select.c
if HAVE_CUDA
src_libgpt3d_a_SOURCES += src/backend/cuda.c
endif
# cuDNN's fused attention (configure found cuDNN >= 9): the only file that includes cudnn.h.
if HAVE_CUDNN
src_libgpt3d_a_SOURCES += src/backend/cudnn_att.c
endif
