# G3_CHECK_BLAS: CBLAS from OpenBLAS (required).
# --with-blas[=pkg-config-name|DIR]  default: pkg-config openblas, then blas
AC_DEFUN([G3_CHECK_BLAS], [
  AC_ARG_WITH([blas],
    [AS_HELP_STRING([--with-blas@<:@=NAME|DIR@:>@], [CBLAS implementation: a pkg-config name (default openblas) or an install prefix (required)])],
    [], [with_blas=yes])
  AS_IF([test "x$with_blas" = xno],
    [AC_MSG_ERROR([BLAS is required: gpt3d's CPU backend runs its matrix products through CBLAS. Install Debian's libopenblas-dev.])])
  g3_blas_where=""
  AS_CASE(["$with_blas"],
    [yes], [PKG_CHECK_MODULES([BLAS], [openblas], [g3_blas_where="pkg-config openblas"],
              [PKG_CHECK_MODULES([BLAS], [blas], [g3_blas_where="pkg-config blas"], [:])])],
    [/*],  [G3_PKG_FROM_DIR([BLAS], [$with_blas]) BLAS_LIBS="$BLAS_LIBS -lopenblas" g3_blas_where="$with_blas"],
           [PKG_CHECK_MODULES([BLAS], [$with_blas], [g3_blas_where="pkg-config $with_blas"], [:])])
  g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $BLAS_CFLAGS"; LIBS="$BLAS_LIBS $LIBS"
  AC_CHECK_HEADER([cblas.h], [], [g3_blas_where=""])
  AS_IF([test -n "$g3_blas_where"], [AC_CHECK_FUNC([cblas_sgemm], [], [g3_blas_where=""])])
  AC_CHECK_FUNCS([openblas_set_num_threads openblas_get_config])
  CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
  AS_IF([test -z "$g3_blas_where"],
    [AC_MSG_ERROR([no usable CBLAS (cblas.h and cblas_sgemm) was found. Install Debian's libopenblas-dev, or point --with-blas at a pkg-config name or prefix.])])
  AC_SUBST([BLAS_CFLAGS]) AC_SUBST([BLAS_LIBS])
  G3_SUMMARY_ADD([blas], [yes], [$g3_blas_where])
])
