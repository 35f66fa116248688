# G3_CHECK_NCCL: NCCL (optional; device collectives, needs CUDA).
AC_DEFUN([G3_CHECK_NCCL], [
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL for device collectives (default: use it if found)])],
    [], [with_nccl=check])
  have_nccl=no
  g3_nccl_where="not requested"
  AS_IF([test "x$with_nccl" != xno], [
    AS_IF([test $have_cuda = yes], [
      NCCL_CFLAGS=""; NCCL_LIBS="-lnccl"
      AS_CASE(["$with_nccl"], [yes|check], [],
        [AS_IF([test ! -d "$with_nccl"], [AC_MSG_ERROR([--with-nccl=$with_nccl: no such directory])])
         G3_PKG_FROM_DIR([NCCL], [$with_nccl]) NCCL_LIBS="$NCCL_LIBS -lnccl"])
      g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS $NCCL_CFLAGS"; LIBS="$CUDA_LIBS $NCCL_LIBS $LIBS"
      AC_CHECK_HEADER([nccl.h], [AC_CHECK_FUNC([ncclCommInitRank], [have_nccl=yes])])
      CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
      AS_IF([test $have_nccl = yes], [g3_nccl_where="${NCCL_CFLAGS:-$CUDA_HOME}"],
            [g3_nccl_where="nccl.h or libnccl missing"; NCCL_CFLAGS=""; NCCL_LIBS=""])
    ], [g3_nccl_where="needs CUDA"])
    AS_IF([test $have_nccl = no -a "x$with_nccl" != xcheck],
      [AC_MSG_ERROR([--with-nccl was given but NCCL is not usable: $g3_nccl_where. Install NCCL or fix the prefix.])])
  ])
  AS_IF([test $have_nccl = yes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL available])])
  AM_CONDITIONAL([HAVE_NCCL], [test $have_nccl = yes])
  AC_SUBST([NCCL_CFLAGS]) AC_SUBST([NCCL_LIBS])
  G3_SUMMARY_ADD([nccl], [$have_nccl], [$g3_nccl_where])
])
