# kernels/: CUDA C, one op per file with its launcher.  Compiled whenever nvcc
# is found, even on a machine without a GPU, so that CI proves they build.
SUFFIXES += .cu
NVCC_COMPILE = $(NVCC) $(CUDA_ARCH) -O3 -std=c++17 -Xcompiler -fPIC,-Wall \
	-I$(top_srcdir)/src -I$(top_srcdir)/kernels -I$(top_builddir) $(NCCL_CFLAGS) $(NVCCFLAGS)
.cu.o:
	$(AM_V_GEN)$(NVCC_COMPILE) -c -o $@ $<

G3_CUDA_LIBS =
if HAVE_CUDA
noinst_LIBRARIES += kernels/libg3cuda.a
kernels_libg3cuda_a_SOURCES = \
	kernels/g3cuda.h \
	kernels/g3cuda_internal.cuh \
	kernels/xent_row.cuh \
	kernels/device.cu \
	kernels/ctx.cu \
	kernels/cast.cu \
	kernels/residual.cu \
	kernels/scale.cu \
	kernels/embedding_fwd.cu \
	kernels/embedding_bwd.cu \
	kernels/layernorm_fwd.cu \
	kernels/layernorm_bwd.cu \
	kernels/gelu_fwd.cu \
	kernels/gelu_bwd.cu \
	kernels/bias_bwd.cu \
	kernels/gemm.cu \
	kernels/attention_tile.cuh \
	kernels/attention_fwd.cu \
	kernels/attention_bwd.cu \
	kernels/xent_partial.cu \
	kernels/xent_finish.cu \
	kernels/xent_grad.cu \
	kernels/xent_fused.cu \
	kernels/adamw.cu \
	kernels/sumsq.cu \
	kernels/clip_scale.cu
# The suffix rule tracks no header dependencies: every kernel depends on the shared headers.
$(kernels_libg3cuda_a_OBJECTS): $(top_srcdir)/kernels/g3cuda.h \
	$(top_srcdir)/kernels/g3cuda_internal.cuh $(top_srcdir)/kernels/xent_row.cuh \
	$(top_srcdir)/kernels/attention_tile.cuh
G3_CUDA_LIBS += kernels/libg3cuda.a $(CUDNN_LIBS) $(CUBLAS_LIBS) $(NCCL_LIBS) $(CUDA_LIBS) -lstdc++
endif
EXTRA_DIST += kernels/g3cuda.h kernels/g3cuda_internal.cuh kernels/xent_row.cuh \
	kernels/attention_tile.cuh
