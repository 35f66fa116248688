# src/comm: PMIx bootstrap, blob exchange, group communicators with a host
# (UCX) and a device (NCCL) backend.  Depends on src/core only.
src_libgpt3d_a_SOURCES += \
	src/comm/comm.h src/comm/comm_impl.h \
	src/comm/world.c src/comm/comm.c src/comm/ucx.c
if HAVE_NCCL
src_libgpt3d_a_SOURCES += src/comm/nccl.c
endif
