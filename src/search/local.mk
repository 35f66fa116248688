# src/search: gpt3d plan's upper half (prefix g3_plan_, the module's): a layout checked with
# the trainer's own checks, the search over layouts and the report.  Above train, parallel and
# topo, whose checks it runs; the arithmetic it reports is src/plan's.
src_libgpt3d_a_SOURCES += \
	src/search/layout.c src/search/layout.h \
	src/search/report.c src/search/report.h
