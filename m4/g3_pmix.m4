# G3_CHECK_PMIX: the PMIx client library (required; rank bootstrap).
AC_DEFUN([G3_CHECK_PMIX], [
  AC_ARG_WITH([pmix],
    [AS_HELP_STRING([--with-pmix@<:@=DIR@:>@], [PMIx client library, 4.x (required)])],
    [], [with_pmix=yes])
  AS_IF([test "x$with_pmix" = xno],
    [AC_MSG_ERROR([PMIx is required: ranks bootstrap through PMIx under srun, mpirun or alone. Install Debian's libpmix-dev.])])
  g3_pmix_where=""
  AS_IF([test "x$with_pmix" = xyes],
    [PKG_CHECK_MODULES([PMIX], [pmix], [g3_pmix_where="pkg-config pmix"], [:])],
    [G3_PKG_FROM_DIR([PMIX], [$with_pmix]) PMIX_LIBS="$PMIX_LIBS -lpmix" g3_pmix_where="$with_pmix"])
  g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $PMIX_CFLAGS"; LIBS="$PMIX_LIBS $LIBS"
  AC_CHECK_HEADER([pmix.h], [], [g3_pmix_where=""])
  AS_IF([test -n "$g3_pmix_where"], [AC_CHECK_FUNC([PMIx_Init], [], [g3_pmix_where=""])])
  CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
  AS_IF([test -z "$g3_pmix_where"],
    [AC_MSG_ERROR([PMIx (pmix.h and PMIx_Init) was not found. Install Debian's libpmix-dev, or give --with-pmix=DIR.])])
  AC_SUBST([PMIX_CFLAGS]) AC_SUBST([PMIX_LIBS])
  G3_SUMMARY_ADD([pmix], [yes], [$g3_pmix_where])
])
