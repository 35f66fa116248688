# src/backend: compute ops tables (g3_be_).  The CPU backend: fp32, CBLAS + OpenMP.
# The CUDA backend lives in kernels/ and fills the same table (backend/backend.h).
src_libgpt3d_a_SOURCES += \
	src/backend/backend.h \
	src/backend/cpu_internal.h \
	src/backend/cpu.c \
	src/backend/cpu_ops.c \
	src/backend/cpu_matmul.c
