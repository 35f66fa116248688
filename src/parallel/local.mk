# src/parallel: 3D-parallel training (g3_par_): the TP x PP x DP layout from the topology
# mapping and its comm groups, the 1F1B pipeline schedule, gradient reduction with an
# optional ZeRO-1 optimizer, gradient dumps for the equivalence tests, and a rank's model and
# optimizer state in and out of checkpoints by global offsets (par_ckpt, on src/ckpt).
src_libgpt3d_a_SOURCES += \
	src/parallel/par.h src/parallel/par_internal.h \
	src/parallel/layout.c \
	src/parallel/engine.c \
	src/parallel/optim.c \
	src/parallel/dump.c \
	src/parallel/par_ckpt.c src/parallel/par_ckpt.h
