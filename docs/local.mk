EXTRA_DIST += $(wildcard $(srcdir)/docs/*.md)
# The example configurations the README starts a cluster run from, installed beside the
# documentation ($(docdir)/examples; `gpt3d-submit ... -- --config $(docdir)/examples/gpt-125m.conf`).
examplesdir = $(docdir)/examples
dist_examples_DATA = docs/examples/gpt-125m.conf docs/examples/gpt-tiny-cpu.conf \
	docs/examples/mtnlg-topology.conf
