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
	kernels/device.cu
G3_CUDA_LIBS += kernels/libg3cuda.a $(CUBLAS_LIBS) $(NCCL_LIBS) $(CUDA_LIBS) -lstdc++
endif
EXTRA_DIST += kernels/g3cuda.h
