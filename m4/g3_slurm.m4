# G3_CHECK_SLURM: libslurm's hostlist API (optional; allocation parsing).
AC_DEFUN([G3_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm@<:@=DIR@:>@], [libslurm for node lists (default: use it if found)])],
    [], [with_slurm=check])
  g3_slurm_where="not requested"
  have_slurm=no
  AS_IF([test "x$with_slurm" != xno], [
    SLURM_CFLAGS=""; SLURM_LIBS="-lslurm"
    AS_CASE(["$with_slurm"], [yes|check], [], [G3_PKG_FROM_DIR([SLURM], [$with_slurm]) SLURM_LIBS="$SLURM_LIBS -lslurm"])
    g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $SLURM_CFLAGS"; LIBS="$SLURM_LIBS $LIBS"
    AC_CHECK_HEADER([slurm/slurm.h],
      [AC_CHECK_FUNC([slurm_hostlist_create], [have_slurm=yes])])
    CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
    AS_IF([test $have_slurm = yes],
      [g3_slurm_where="${with_slurm#check}"; test -z "$g3_slurm_where" -o "$g3_slurm_where" = yes && g3_slurm_where="system libslurm"],
      [g3_slurm_where="slurm/slurm.h or slurm_hostlist_create missing (Debian: libslurm-dev)"
       SLURM_CFLAGS=""; SLURM_LIBS=""
       AS_IF([test "x$with_slurm" != xcheck],
         [AC_MSG_ERROR([--with-slurm was given but libslurm was not found. Install Debian's libslurm-dev or fix the DIR.])])])
  ])
  AS_IF([test $have_slurm = yes], [AC_DEFINE([HAVE_SLURM], [1], [libslurm hostlist API available])])
  AM_CONDITIONAL([HAVE_SLURM], [test $have_slurm = yes])
  AC_SUBST([SLURM_CFLAGS]) AC_SUBST([SLURM_LIBS])
  G3_SUMMARY_ADD([slurm], [$have_slurm], [$g3_slurm_where])
])
