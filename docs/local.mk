EXTRA_DIST += $(wildcard $(srcdir)/docs/*.md)
