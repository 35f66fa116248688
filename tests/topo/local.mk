# tests/topo: host lists, topology.conf, the placement rules of the rank
# mapping on synthetic fat trees, and gpt3d topo (described jobs, the
# current job under mpirun, MT-NLG's planning work growing linearly with the nodes).
G3_C_TESTS += tests/topo/test_topo
G3_SH_TESTS += tests/topo/test_topo_cli.sh
EXTRA_DIST += docs/examples/mtnlg-topology.conf
# Under srun --mpi=pmix on the private Slurm cluster (skips where none can start).
G3_SH_TESTS += tests/topo/test_topo_slurm.sh
# How long MT-NLG's plan takes (a benchmark: make check-long; docs/benchmarks.md).
LONG_TESTS += tests/topo/bench_topo.sh
