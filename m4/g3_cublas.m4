# G3_CHECK_CUBLAS: cuBLAS and cuBLASLt (optional; needs CUDA).
AC_DEFUN([G3_CHECK_CUBLAS], [
  AC_ARG_WITH([cublas],
    [AS_HELP_STRING([--with-cublas], [cuBLAS/cuBLASLt GEMMs for the CUDA backend (default: use them if found)])],
    [], [with_cublas=check])
  have_cublas=no
  g3_cublas_where="not requested"
  AS_IF([test "x$with_cublas" != xno], [
    AS_IF([test $have_cuda = yes], [
      g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"; LIBS="$CUDA_LIBS -lcublasLt -lcublas $LIBS"
      AC_CHECK_HEADER([cublasLt.h], [AC_CHECK_FUNC([cublasLtMatmul], [have_cublas=yes])])
      CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
      AS_IF([test $have_cublas = yes], [g3_cublas_where="$CUDA_HOME"; CUBLAS_LIBS="-lcublasLt -lcublas"],
            [g3_cublas_where="cublasLt.h or libcublasLt missing in $CUDA_HOME"])
    ], [g3_cublas_where="needs CUDA"])
    AS_IF([test $have_cublas = no -a "x$with_cublas" != xcheck],
      [AC_MSG_ERROR([--with-cublas was given but cuBLASLt is not usable: $g3_cublas_where.])])
  ])
  AS_IF([test $have_cublas = yes], [AC_DEFINE([HAVE_CUBLAS], [1], [cuBLASLt available])])
  AM_CONDITIONAL([HAVE_CUBLAS], [test $have_cublas = yes])
  AC_SUBST([CUBLAS_LIBS])
  G3_SUMMARY_ADD([cublas], [$have_cublas], [$g3_cublas_where])
])
