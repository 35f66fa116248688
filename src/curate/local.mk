# src/curate: training-data curation (exact and MinHash LSH deduplication, decontamination,
# quality filters) as job-array stages behind 'gpt3d curate'.  Depends on core, comm (the lsh
# ranks) and data (JSON, Unicode classes).  See docs/curation.md.
src_libgpt3d_a_SOURCES += \
	src/curate/curate.h src/curate/curate_internal.h \
	src/curate/nfc_tables.c src/curate/nfc_tables.h src/curate/norm.c \
	src/curate/io.c src/curate/minhash.c src/curate/minhash.h src/curate/lsh.c \
	src/curate/dedup.c src/curate/decon.c src/curate/filter.c \
	src/curate/flags.c src/curate/flags.h
EXTRA_DIST += scripts/gen-unicode-tables.py scripts/ucd-json-to-txt.py
