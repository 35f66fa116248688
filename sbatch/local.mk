# sbatch/: the Slurm batch suite: the job script of a training run and
# gpt3d-submit, which makes run directories and submits chains of jobs.
# See docs/slurm.md.
bin_SCRIPTS += sbatch/gpt3d-submit
sbatchdir = $(pkgdatadir)/sbatch
dist_sbatch_DATA = sbatch/gpt3d-train.sbatch
dist_sbatch_SCRIPTS = sbatch/gpt3d-healthcheck sbatch/gpt3d-curate.sbatch
dist_doc_DATA += docs/slurm.md docs/curation.md
EXTRA_DIST += sbatch/gpt3d-submit.in
CLEANFILES += sbatch/gpt3d-submit

# gpt3d-submit names the installation's directories.  Like the modulefiles
# (modules/local.mk) it is remade on every make run and replaced only when its
# text changes, so "make install prefix=DIR" installs one that names DIR.
# The job states of a live chain and the default of --max-failures come from
# the job script, so that the two scripts share one list and one default.
sbatch/gpt3d-submit: $(srcdir)/sbatch/gpt3d-submit.in $(srcdir)/sbatch/gpt3d-train.sbatch g3-sbatch-force
	$(AM_V_GEN)$(MKDIR_P) sbatch && \
	live=`$(SED) -n 's/^G3_LIVE_STATES="\([A-Z_ ]*\)"$$/\1/p' $(srcdir)/sbatch/gpt3d-train.sbatch` && \
	maxf=`$(SED) -n 's/^G3_MAX_FAILURES_DEFAULT=\([0-9][0-9]*\) .*/\1/p' $(srcdir)/sbatch/gpt3d-train.sbatch` && \
	test -n "$$live" && test -n "$$maxf" && \
	$(SED) -e 's|@VERSION[@]|$(VERSION)|g' \
	       -e 's|@bindir[@]|$(bindir)|g' \
	       -e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
	       -e "s|@G3_LIVE_STATES[@]|$$live|g" \
	       -e "s|@G3_MAX_FAILURES_DEFAULT[@]|$$maxf|g" \
	       $(srcdir)/sbatch/gpt3d-submit.in >$@.tmp && \
	chmod +x $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

g3-sbatch-force:
.PHONY: g3-sbatch-force
