# tests/topo: host lists, topology.conf, the placement rules of the rank
# mapping on synthetic fat trees, and gpt3d topo (described jobs, the
# current job under mpirun, MT-NLG in under a second).
G3_C_TESTS += tests/topo/test_topo
G3_SH_TESTS += tests/topo/test_topo_cli.sh
EXTRA_DIST += docs/examples/mtnlg-topology.conf
# Under srun --mpi=pmix on the private Slurm cluster (skips where none can start).
G3_SH_TESTS += tests/topo/test_topo_slurm.sh
