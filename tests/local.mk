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
EXTRA_DIST += tests/tap.h tests/lib.sh tests/par_alone.h tests/gpt_small.h tests/bench.h tests/xorshift.h tests/torch_gpt.py tests/crc32c_ref.py

# Each directory's local.mk names every test once, in one of two lists that the end of this
# file hands to Automake:
#   G3_C_TESTS   C programs, built by make check from tests/X/test_Y.c alone (Automake's
#                default source; one with more files lists its _SOURCES), linked with LDADD;
#   G3_SH_TESTS  shell scripts, also distributed.
# Helper programs go in check_PROGRAMS, helper files in EXTRA_DIST.  The slow LONG_TESTS
# (make check-long) are distributed at the end too.
G3_C_TESTS =
G3_SH_TESTS =

include tests/core/local.mk
include tests/cli/local.mk
include tests/data/local.mk
include tests/curate/local.mk
include tests/model/local.mk
include tests/train/local.mk
include tests/metrics/local.mk
include tests/infer/local.mk
include tests/parallel/local.mk
include tests/comm/local.mk
include tests/topo/local.mk
include tests/ckpt/local.mk
include tests/backend/local.mk
include tests/gpu/local.mk
include tests/kernels/local.mk
include tests/slurm/local.mk
include tests/modules/local.mk
include tests/style/local.mk

check_PROGRAMS += $(G3_C_TESTS)
TESTS += $(G3_C_TESTS) $(G3_SH_TESTS)
EXTRA_DIST += $(G3_SH_TESTS) $(LONG_TESTS)

# The test corpus (tests/data builds it into tests/_data) and other scratch
# data go away with "make clean" so that distcleancheck passes.
clean-local:
	-rm -rf tests/_data asan

# make check-asan: a second build in ./asan with AddressSanitizer and UndefinedBehaviorSanitizer
# (CPU only; any report fails the test that triggered it), running the tests that feed gpt3d bad
# inputs: options, data files, tokenizer files, flags, checkpoints.  It reuses this build's test
# corpus.  About 10 minutes on 2 busy cores (README.md, "Building by hand").
G3_ASAN_TESTS = tests/core/test_opt tests/core/test_status \
	tests/data/test_bpe tests/data/test_indexed tests/data/test_dataset \
	tests/data/test_tokenizer.sh tests/data/test_preprocess.sh tests/data/test_megatron_index.sh \
	tests/data/test_data_checks.sh tests/data/test_tokenizer_identity.sh \
	tests/train/test_train_cli.sh tests/cli/test_cli.sh \
	tests/ckpt/test_ckpt_roundtrip tests/ckpt/test_ckpt_corrupt tests/ckpt/test_ckpt_cli.sh \
	tests/ckpt/test_ckpt_integrity.sh tests/ckpt/test_ckpt_hostile.sh tests/cli/test_bounds.sh \
	tests/slurm/test_submit_checks.sh tests/curate/test_curate_errors.sh
G3_ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
check-asan: $(check_DATA)
	@mkdir -p asan
	@if test ! -f asan/Makefile; then \
	  echo "check-asan: configuring a sanitizer build in $(abs_top_builddir)/asan"; \
	  (cd asan && $(abs_top_srcdir)/configure --without-cuda CC='$(CC)' \
	    CFLAGS='$(G3_ASAN_FLAGS)' LDFLAGS='-fsanitize=address,undefined' >configure.out) || \
	  { echo "check-asan: configure failed; see asan/configure.out and asan/config.log" >&2; exit 1; }; \
	fi
	cd asan && GPT3D_TEST_DATA='$(abs_top_builddir)/tests/_data' \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=86 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
	  $(MAKE) $(AM_MAKEFLAGS) check TESTS='$(G3_ASAN_TESTS)'
.PHONY: check-asan

check-long:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(LONG_TESTS)'
.PHONY: check-long
