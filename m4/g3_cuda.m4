# G3_CHECK_CUDA: nvcc and the CUDA runtime (optional; the CUDA backend).
# The .cu files are compiled whenever nvcc is found, even without a GPU.
AC_DEFUN([G3_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit (default: use it if found in PATH or /usr/local/cuda)])],
    [], [with_cuda=check])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [flags for the CUDA compiler])
  AC_ARG_VAR([CUDA_ARCH], [nvcc -gencode list (default: sm_80 and sm_90)])
  have_cuda=no
  g3_cuda_where="not requested"
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE(["$with_cuda"],
      [yes|check], [g3_cuda_dirs="/usr/local/cuda"],
      [g3_cuda_dirs="$with_cuda"
       AS_IF([test ! -d "$with_cuda"],
         [AC_MSG_ERROR([--with-cuda=$with_cuda: no such directory. Give the CUDA toolkit prefix (the one holding bin/nvcc), or --without-cuda for a CPU-only build.])])])
    AS_IF([test -z "$NVCC"], [
      AS_IF([test "x$with_cuda" = xcheck -o "x$with_cuda" = xyes],
        [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:$g3_cuda_dirs/bin])],
        [AC_PATH_PROG([NVCC], [nvcc], [], [$g3_cuda_dirs/bin])])])
    AS_IF([test -n "$NVCC"], [
      CUDA_HOME=$(dirname "$(dirname "$NVCC")")
      CUDA_CFLAGS="-I$CUDA_HOME/include"
      AS_IF([test -d "$CUDA_HOME/lib64"], [g3_cuda_lib="$CUDA_HOME/lib64"], [g3_cuda_lib="$CUDA_HOME/lib"])
      CUDA_LIBS="-L$g3_cuda_lib -Wl,-rpath,$g3_cuda_lib -lcudart"
      g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"; LIBS="$CUDA_LIBS $LIBS"
      AC_CHECK_HEADER([cuda_runtime_api.h], [AC_CHECK_FUNC([cudaMalloc], [have_cuda=yes])])
      CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
      AS_IF([test $have_cuda = yes],
        [g3_cuda_where="$NVCC ($($NVCC --version | sed -n 's/.*release \(@<:@0-9.@:>@*\).*/\1/p'))"],
        [g3_cuda_where="nvcc found but cuda_runtime_api.h/libcudart not usable"])
    ], [g3_cuda_where="nvcc not found in PATH or $g3_cuda_dirs/bin"])
    AS_IF([test $have_cuda = no -a "x$with_cuda" != xcheck],
      [AC_MSG_ERROR([--with-cuda was given but CUDA is not usable: $g3_cuda_where. Fix the prefix, or use --without-cuda for a CPU-only build.])])
  ])
  AS_IF([test -z "$CUDA_ARCH"], [CUDA_ARCH="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"])
  AS_IF([test $have_cuda = yes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA backend compiled in])])
  AM_CONDITIONAL([HAVE_CUDA], [test $have_cuda = yes])
  AC_SUBST([CUDA_HOME]) AC_SUBST([CUDA_CFLAGS]) AC_SUBST([CUDA_LIBS]) AC_SUBST([CUDA_ARCH])
  G3_SUMMARY_ADD([cuda], [$have_cuda], [$g3_cuda_where])
])
