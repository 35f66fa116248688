# src/parallel: 3D-parallel training (g3_par_): the TP x PP x DP layout from the topology
# mapping and its comm groups, the 1F1B pipeline schedule, gradient reduction with an
# optional ZeRO-1 optimizer, and gradient dumps for the equivalence tests.
src_libgpt3d_a_SOURCES += \
	src/parallel/par.h src/parallel/par_internal.h \
	src/parallel/layout.c \
	src/parallel/engine.c \
	src/parallel/optim.c \
	src/parallel/dump.c
