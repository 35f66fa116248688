# tests/topo: host lists, topology.conf, the placement rules of the rank
# mapping on synthetic fat trees, and gpt3d topo (described jobs, the
# current job under mpirun, MT-NLG in under a second).
check_PROGRAMS += tests/topo/test_topo
tests_topo_test_topo_SOURCES = tests/topo/test_topo.c tests/tap.h
tests_topo_test_topo_LDADD = $(G3_TEST_LDADD)
TESTS += tests/topo/test_topo
TESTS += tests/topo/test_topo_cli.sh
EXTRA_DIST += tests/topo/test_topo_cli.sh
EXTRA_DIST += docs/examples/mtnlg-topology.conf
# Under srun --mpi=pmix on the private Slurm cluster (skips where none can start).
TESTS += tests/topo/test_topo_slurm.sh
EXTRA_DIST += tests/topo/test_topo_slurm.sh
