EXTRA_DIST += $(wildcard $(srcdir)/docs/*.md)
# The figures the documents show (docs/img; docs/training.md: the demo's loss curves by gpt3d plot).
EXTRA_DIST += docs/img/demo-loss.svg
# The example configurations the README starts a cluster run from, installed beside the
# documentation ($(docdir)/examples; `gpt3d-submit ... -- --config $(docdir)/examples/gpt-125m.conf`).
examplesdir = $(docdir)/examples
dist_examples_DATA = docs/examples/gpt-125m.conf docs/examples/gpt-tiny-cpu.conf \
	docs/examples/mtnlg-topology.conf
