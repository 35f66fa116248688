# tests/: TAP tests mirroring src/, run by "make check" through Automake's
# TAP driver.  Slow scenarios go in LONG_TESTS ("make check-long").
TEST_EXTENSIONS = .sh
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
SH_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	GPT3D='$(abs_top_builddir)/src/gpt3d'; export GPT3D; \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	PYTHON_REF='$(PYTHON_REF)'; export PYTHON_REF; \
	NODE='$(NODE)'; export NODE; \
	MPIRUN='$(MPIRUN)'; export MPIRUN; \
	GPT3D_TEST_DATA="$${GPT3D_TEST_DATA:-$(abs_top_builddir)/tests/_data}"; export GPT3D_TEST_DATA;
EXTRA_DIST += tests/tap.h tests/lib.sh tests/par_alone.h

G3_TEST_LDADD = $(G3_LIBS) $(G3_CUDA_LIBS) $(G3_EXTERNAL_LIBS)

include tests/core/local.mk
include tests/cli/local.mk
include tests/data/local.mk
include tests/model/local.mk
include tests/train/local.mk
include tests/infer/local.mk
include tests/parallel/local.mk
include tests/comm/local.mk
include tests/topo/local.mk
include tests/ckpt/local.mk
include tests/kernels/local.mk
include tests/slurm/local.mk
include tests/modules/local.mk

# The test corpus (tests/data builds it into tests/_data) and other scratch
# data go away with "make clean" so that distcleancheck passes.
clean-local:
	-rm -rf tests/_data

check-long:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(LONG_TESTS)'
.PHONY: check-long
