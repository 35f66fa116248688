# tests/slurm: a private Slurm 22.05 cluster on the test machine
# (tests/slurm/cluster.sh; root, munge, slurmctld, slurmd, unshare) and the
# batch suite run on it with a stand-in trainer.  They skip with the reason
# where a private cluster cannot start.
TESTS += tests/slurm/test_cluster.sh
EXTRA_DIST += tests/slurm/cluster.sh tests/slurm/test_cluster.sh
