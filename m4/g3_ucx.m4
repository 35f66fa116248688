# G3_CHECK_UCX: UCX's ucp layer (required; host collectives).
AC_DEFUN([G3_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx@<:@=DIR@:>@], [UCX (ucp) for host communication (required)])],
    [], [with_ucx=yes])
  AS_IF([test "x$with_ucx" = xno],
    [AC_MSG_ERROR([UCX is required: host collectives run over UCX. Install Debian's libucx-dev.])])
  g3_ucx_where=""
  AS_IF([test "x$with_ucx" = xyes],
    [PKG_CHECK_MODULES([UCX], [ucx], [g3_ucx_where="pkg-config ucx"], [:])],
    [G3_PKG_FROM_DIR([UCX], [$with_ucx]) UCX_LIBS="$UCX_LIBS -lucp -luct -lucs" g3_ucx_where="$with_ucx"])
  g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"; LIBS="$UCX_LIBS $LIBS"
  AC_CHECK_HEADER([ucp/api/ucp.h], [], [g3_ucx_where=""])
  AS_IF([test -n "$g3_ucx_where"], [AC_CHECK_FUNC([ucp_worker_create], [], [g3_ucx_where=""])])
  CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
  AS_IF([test -z "$g3_ucx_where"],
    [AC_MSG_ERROR([UCX (ucp/api/ucp.h and ucp_worker_create) was not found. Install Debian's libucx-dev, or give --with-ucx=DIR.])])
  AC_SUBST([UCX_CFLAGS]) AC_SUBST([UCX_LIBS])
  G3_SUMMARY_ADD([ucx], [yes], [$g3_ucx_where])
])
