# src/data: the GPT-2 BPE tokenizer, Megatron indexed datasets (MMIDIDX v1),
# the preprocessing pipeline behind gpt3d preprocess, the GPT sample index
# (Megatron semantics) and weighted blends.
# Depends on core only.  See docs/data.md.
src_libgpt3d_a_SOURCES += \
	src/data/unicode_tables.c src/data/unicode_tables.h src/data/unicode.c \
	src/data/json.c src/data/json.h \
	src/data/bpe.c src/data/bpe.h
EXTRA_DIST += scripts/data-gen-unicode.js
src_libgpt3d_a_SOURCES += src/data/indexed.c src/data/indexed.h
src_libgpt3d_a_SOURCES += src/data/sha256.c src/data/sha256.h src/data/tokid.c src/data/tokid.h
src_libgpt3d_a_SOURCES += \
	src/data/gpt_index.c src/data/gpt_index.h \
	src/data/dataset.c src/data/dataset.h
src_libgpt3d_a_SOURCES += src/data/preprocess.c src/data/preprocess.h
