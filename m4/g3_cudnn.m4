# G3_CHECK_CUDNN: cuDNN >= 9 (optional; needs CUDA): the fused flash-attention engines, reached
# through cuDNN's backend graph API (src/backend/cudnn_att.c).  --with-cudnn=DIR names a prefix
# (DIR/include/cudnn.h, DIR/lib64 or DIR/lib); the default looks beside CUDA and in the system
# paths.  The version is read from cudnn_version.h (CUDNN_MAJOR), not guessed from the library.
AC_DEFUN([G3_CHECK_CUDNN], [
  AC_ARG_WITH([cudnn],
    [AS_HELP_STRING([--with-cudnn@<:@=DIR@:>@], [cuDNN >= 9 for fused attention on the CUDA backend (default: use it if found)])],
    [], [with_cudnn=check])
  have_cudnn=no
  g3_cudnn_where="not requested"
  CUDNN_CFLAGS=""; CUDNN_LIBS=""
  AS_IF([test "x$with_cudnn" != xno], [
    AS_IF([test $have_cuda = yes], [
      AS_CASE(["$with_cudnn"], [yes|check], [CUDNN_LIBS="-lcudnn"],
        [AS_IF([test ! -d "$with_cudnn"],
           [AC_MSG_ERROR([--with-cudnn=$with_cudnn: no such directory. Give the cuDNN prefix (the one holding include/cudnn.h), or --without-cudnn.])])
         G3_PKG_FROM_DIR([CUDNN], [$with_cudnn]) CUDNN_LIBS="$CUDNN_LIBS -lcudnn"])
      g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS $CUDNN_CFLAGS"; LIBS="$CUDA_LIBS $CUDNN_LIBS $LIBS"
      g3_cudnn_hdr=no
      AC_CHECK_HEADER([cudnn.h], [g3_cudnn_hdr=yes])
      AS_IF([test $g3_cudnn_hdr = yes], [
        AC_MSG_CHECKING([for cuDNN 9 or newer (CUDNN_MAJOR in cudnn_version.h)])
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cudnn.h>
#if !defined(CUDNN_MAJOR) || CUDNN_MAJOR < 9
#error cuDNN older than 9
#endif
]], [[]])], [g3_cudnn_v9=yes], [g3_cudnn_v9=no])
        AC_MSG_RESULT([$g3_cudnn_v9])
        AS_IF([test $g3_cudnn_v9 = yes],
          [AC_CHECK_FUNC([cudnnBackendCreateDescriptor], [have_cudnn=yes],
                         [g3_cudnn_where="libcudnn without cudnnBackendCreateDescriptor"])],
          [g3_cudnn_where="cudnn.h is older than cuDNN 9 (the backend graph API of 9 is needed)"])
      ], [g3_cudnn_where="cudnn.h not found"])
      AS_IF([test $have_cudnn = yes], [
        AC_COMPUTE_INT([g3_cudnn_ver], [CUDNN_VERSION], [#include <cudnn.h>], [g3_cudnn_ver=0])
        g3_cudnn_where="cuDNN $((g3_cudnn_ver / 10000)).$((g3_cudnn_ver / 100 % 100)).$((g3_cudnn_ver % 100)) ${CUDNN_CFLAGS:-in $CUDA_HOME or the system paths}"])
      CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
      AS_IF([test $have_cudnn = no], [CUDNN_CFLAGS=""; CUDNN_LIBS=""])
    ], [g3_cudnn_where="needs CUDA"])
    AS_IF([test $have_cudnn = no -a "x$with_cudnn" != xcheck],
      [AC_MSG_ERROR([--with-cudnn was given but cuDNN >= 9 is not usable: $g3_cudnn_where. Install cuDNN 9 (libcudnn9-dev-cuda-*) or fix the prefix, or use --without-cudnn.])])
  ])
  AS_IF([test $have_cudnn = yes], [AC_DEFINE([HAVE_CUDNN], [1], [cuDNN >= 9 available: fused attention])])
  AM_CONDITIONAL([HAVE_CUDNN], [test $have_cudnn = yes])
  AC_SUBST([CUDNN_CFLAGS]) AC_SUBST([CUDNN_LIBS])
  G3_SUMMARY_ADD([cudnn], [$have_cudnn], [$g3_cudnn_where])
])
