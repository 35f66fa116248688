# src/comm: PMIx bootstrap, blob exchange, group communicators made from a table of
# transports: host (UCX), device (NCCL) and staged (device through host, UCX).
# Depends on src/core only.  Without NCCL the table has no NCCL row.
src_libgpt3d_a_SOURCES += \
	src/comm/comm.h src/comm/comm_impl.h \
	src/comm/world.c src/comm/comm.c src/comm/group.c src/comm/ucx.c src/comm/staged.c
if HAVE_NCCL
src_libgpt3d_a_SOURCES += src/comm/nccl.c
endif

# comm_bench: gpt3d's host all-reduce next to MPI_Allreduce in one run (see
# docs/benchmarks.md).  Compiled with MPI's include flags, linked by mpicc.
if HAVE_MPICC
noinst_PROGRAMS += src/comm/comm_bench
endif
src_comm_comm_bench_CPPFLAGS = $(AM_CPPFLAGS) $(G3_MPI_CPPFLAGS)
src_comm_comm_bench_LINK = $(MPICC) $(AM_CFLAGS) $(CFLAGS) $(AM_LDFLAGS) $(LDFLAGS) -o $@
G3_MPI_CPPFLAGS = $(shell $(MPICC) --showme:compile 2>/dev/null || $(MPICC) -compile_info 2>/dev/null | cut -d' ' -f2-)
