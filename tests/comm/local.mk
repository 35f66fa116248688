# tests/comm: collectives against a serial reference under mpirun with 1, 2,
# 4 and 8 ranks (oversubscribed), singleton mode, timeouts, error paths.
check_PROGRAMS += tests/comm/comm_check
G3_SH_TESTS += tests/comm/test_comm_single.sh tests/comm/test_comm_mpi.sh \
	tests/comm/test_staged_train.sh
# The object files of src/comm call in no circle (nm): groups -> transports -> dispatch.
G3_SH_TESTS += tests/comm/test_comm_calls.sh
