# tests/slurm: a private Slurm 22.05 cluster on the test machine
# (tests/slurm/cluster.sh; root, munge, slurmctld, slurmd, unshare) and the
# batch suite run on it: with a stand-in trainer (fake-train.sh, a test double
# used only here) for the many fault cases, and with the real trainer for the
# four scenarios of docs/slurm.md (test_scenarios.sh, test_recovery.sh, helpers
# in real.sh; what every test that submits asks of a run in runs.sh); the job's
# decision (sbatch/lib/job.sh, g3_job_decide) on every exit code without Slurm
# (test_decide.sh).  The cluster tests skip with the reason where a private cluster cannot start.
G3_SH_TESTS += tests/slurm/test_decide.sh tests/slurm/test_submit_cli.sh tests/slurm/test_submit_checks.sh \
	tests/slurm/test_cluster.sh tests/slurm/test_submit.sh tests/slurm/test_faults.sh \
	tests/slurm/test_scenarios.sh tests/slurm/test_recovery.sh tests/slurm/test_failures.sh
EXTRA_DIST += tests/slurm/cluster.sh tests/slurm/fake-train.sh tests/slurm/demo.sh \
	tests/slurm/real.sh tests/slurm/runs.sh tests/slurm/submit_lib.sh
