# G3_CHECK_MPI: Open MPI's mpicc and mpirun (optional; only the reference
# benchmark compares against MPI_Allreduce, and multi-rank tests use mpirun).
AC_DEFUN([G3_CHECK_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper, for the comparison benchmark])
  AC_PATH_PROG([MPICC], [mpicc])
  AC_PATH_PROG([MPIRUN], [mpirun])
  AM_CONDITIONAL([HAVE_MPICC], [test -n "$MPICC"])
  G3_SUMMARY_ADD([mpirun], [$(test -n "$MPIRUN" && echo yes || echo no)], [${MPIRUN:-not found (Debian: openmpi-bin); multi-rank tests skip}])
])
