# tests/curate: the curation stages against Python references (tests/curate/ref.py, norm.py:
# exact Jaccard over all pairs, MinHash error, the decontamination rules, Python's NFC), the
# same bits from 1 and 8 array tasks and from 1 and 4 lsh ranks, resumption, the quality
# rules, bad inputs; the batch chain on the private Slurm cluster.  bench_curate.sh is a
# benchmark (docs/benchmarks.md), not a test.
check_PROGRAMS += tests/curate/curate_norm
G3_SH_TESTS += tests/curate/test_curate_norm.sh tests/curate/test_curate_dedup.sh \
	tests/curate/test_curate_decon.sh tests/curate/test_curate_filter.sh \
	tests/curate/test_curate_errors.sh tests/curate/test_curate_slurm.sh
EXTRA_DIST += tests/curate/ref.py tests/curate/norm.py tests/curate/bench_curate.sh \
	tests/curate/bench_corpus.py
