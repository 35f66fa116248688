# modules/: an Lmod (Lua) and a Tcl modulefile for gpt3d, filled in by make
# with the installation directories (see docs/slurm.md, "Modulefiles").
#
# Installed layout (two trees, so that each tool sees exactly one file):
#   $(datadir)/modulefiles/gpt3d/$(VERSION).lua   Lmod: module use $(datadir)/modulefiles
#   $(datadir)/modulefiles-tcl/gpt3d/$(VERSION)   Environment Modules (Tcl), or Lmod
# The build tree holds the same layout under modules/lmod and modules/tcl.

lmodgpt3ddir = $(datadir)/modulefiles/gpt3d
nodist_lmodgpt3d_DATA = modules/lmod/gpt3d/$(VERSION).lua
tclgpt3ddir = $(datadir)/modulefiles-tcl/gpt3d
nodist_tclgpt3d_DATA = modules/tcl/gpt3d/$(VERSION)

EXTRA_DIST += modules/gpt3d.lua.in modules/gpt3d.tcl.in
CLEANFILES += $(nodist_lmodgpt3d_DATA) $(nodist_tclgpt3d_DATA)

g3_modules_edit = $(SED) \
	-e 's|@VERSION[@]|$(VERSION)|g' \
	-e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@mandir[@]|$(mandir)|g' \
	-e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
	-e 's|@docdir[@]|$(docdir)|g'

# The modulefiles are remade on every make run (a cheap sed) and replaced only
# when their text changes, so "make install prefix=DIR" installs modulefiles
# that name DIR, not the configured prefix.  DESTDIR is never written into them.
modules/lmod/gpt3d/$(VERSION).lua: $(srcdir)/modules/gpt3d.lua.in g3-modules-force
	$(AM_V_GEN)$(MKDIR_P) modules/lmod/gpt3d && \
	$(g3_modules_edit) $(srcdir)/modules/gpt3d.lua.in >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

modules/tcl/gpt3d/$(VERSION): $(srcdir)/modules/gpt3d.tcl.in g3-modules-force
	$(AM_V_GEN)$(MKDIR_P) modules/tcl/gpt3d && \
	$(g3_modules_edit) $(srcdir)/modules/gpt3d.tcl.in >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

g3-modules-force:
.PHONY: g3-modules-force
