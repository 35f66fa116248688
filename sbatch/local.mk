# sbatch/: the Slurm batch suite: the job script of a training run and
# gpt3d-submit, which makes run directories and submits chains of jobs.
# See docs/slurm.md.
bin_SCRIPTS += sbatch/gpt3d-submit
sbatchdir = $(pkgdatadir)/sbatch
dist_sbatch_DATA = sbatch/gpt3d-train.sbatch
dist_sbatch_SCRIPTS = sbatch/gpt3d-healthcheck sbatch/gpt3d-curate.sbatch
# The batch library (docs/slurm.md): sourced by gpt3d-submit (from here) and by the job
# script and the health check (from RUN_DIR/lib, where gpt3d-submit copies
# common.sh, job.sh and healthcheck.sh).
sbatchlibdir = $(sbatchdir)/lib
dist_sbatchlib_DATA = sbatch/lib/common.sh sbatch/lib/job.sh sbatch/lib/submit.sh \
	sbatch/lib/status.sh sbatch/lib/summary.sh sbatch/lib/ablation.sh \
	sbatch/lib/healthcheck.sh sbatch/lib/curate.sh
dist_doc_DATA += docs/slurm.md docs/curation.md
EXTRA_DIST += sbatch/gpt3d-submit.in
CLEANFILES += sbatch/gpt3d-submit

# gpt3d-submit names the installation's directories.  Like the modulefiles
# (modules/local.mk) it is remade on every make run and replaced only when its
# text changes, so "make install prefix=DIR" installs one that names DIR.
# The default of --max-failures comes from the job script's site settings, so
# that the two scripts share one default (the job states of a live chain are
# in lib/common.sh, which both source); its exit codes (@G3_EXIT_NAME@) from
# gpt3d's enum (src/core/status.h).
sbatch/gpt3d-submit: $(srcdir)/sbatch/gpt3d-submit.in $(srcdir)/sbatch/gpt3d-train.sbatch $(srcdir)/src/core/status.h g3-sbatch-force
	$(AM_V_GEN)$(MKDIR_P) sbatch && \
	maxf=`$(SED) -n 's/^G3_MAX_FAILURES_DEFAULT=\([0-9][0-9]*\) .*/\1/p' $(srcdir)/sbatch/gpt3d-train.sbatch` && \
	exits=`$(SED) -n 's/^ *G3_EXIT_\([A-Z_]*\) *= *\([0-9][0-9]*\).*/-e s|@G3_EXIT_\1[@]|\2|g/p' $(srcdir)/src/core/status.h` && \
	test -n "$$maxf" && test -n "$$exits" && \
	$(SED) -e 's|@VERSION[@]|$(VERSION)|g' $$exits \
	       -e 's|@bindir[@]|$(bindir)|g' \
	       -e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
	       -e "s|@G3_MAX_FAILURES_DEFAULT[@]|$$maxf|g" \
	       $(srcdir)/sbatch/gpt3d-submit.in >$@.tmp && \
	if grep -n '@[A-Za-z_]*@' $@.tmp; then echo "$@: the names above were not substituted" >&2; rm -f $@.tmp; exit 1; fi && \
	chmod +x $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi && \
	$(MKDIR_P) sbatch/lib && \
	if test ! sbatch/lib -ef $(srcdir)/sbatch/lib; then \
	    for f in $(dist_sbatchlib_DATA); do \
	        cmp -s $(srcdir)/$$f $$f || cp -f $(srcdir)/$$f $$f || exit 1; \
	    done; \
	fi

g3-sbatch-force:
.PHONY: g3-sbatch-force

# In a build tree apart from the sources (VPATH), gpt3d-submit finds its library beside
# itself: the rule above copies sbatch/lib/ there, and clean removes the copy (never the
# sources of an in-tree build).
clean-local: g3-sbatch-clean-lib
g3-sbatch-clean-lib:
	-if test -d sbatch/lib && test ! sbatch/lib -ef $(srcdir)/sbatch/lib; then rm -rf sbatch/lib; fi
.PHONY: g3-sbatch-clean-lib
