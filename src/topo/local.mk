# src/topo: host lists, the switch tree (topology.conf, SLURM_TOPOLOGY_ADDR, scontrol),
# and the pure mapping of ranks to (tp, pp, dp).  Depends on src/core only.
src_libgpt3d_a_SOURCES += \
	src/topo/topo.h \
	src/topo/hostlist.c src/topo/tree.c src/topo/map.c src/topo/slurm.c
