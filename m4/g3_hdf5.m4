# G3_CHECK_HDF5: the HDF5 C library (required; checkpoints).
AC_DEFUN([G3_CHECK_HDF5], [
  AC_ARG_WITH([hdf5],
    [AS_HELP_STRING([--with-hdf5@<:@=DIR@:>@], [HDF5 C library, 1.10 or later (required)])],
    [], [with_hdf5=yes])
  AS_IF([test "x$with_hdf5" = xno],
    [AC_MSG_ERROR([HDF5 is required: checkpoints are HDF5 files. Install Debian's libhdf5-dev.])])
  g3_hdf5_where=""
  AS_IF([test "x$with_hdf5" = xyes],
    [PKG_CHECK_MODULES([HDF5], [hdf5], [g3_hdf5_where="pkg-config hdf5"],
       [PKG_CHECK_MODULES([HDF5], [hdf5-serial], [g3_hdf5_where="pkg-config hdf5-serial"], [:])])],
    [G3_PKG_FROM_DIR([HDF5], [$with_hdf5]) HDF5_LIBS="$HDF5_LIBS -lhdf5" g3_hdf5_where="$with_hdf5"])
  g3_save_CPPFLAGS=$CPPFLAGS; g3_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $HDF5_CFLAGS"; LIBS="$HDF5_LIBS $LIBS"
  AC_CHECK_HEADER([hdf5.h], [], [g3_hdf5_where=""])
  AS_IF([test -n "$g3_hdf5_where"], [AC_CHECK_FUNC([H5Pset_virtual], [], [g3_hdf5_where=""])])
  CPPFLAGS=$g3_save_CPPFLAGS; LIBS=$g3_save_LIBS
  AS_IF([test -z "$g3_hdf5_where"],
    [AC_MSG_ERROR([HDF5 1.10 or later (hdf5.h and H5Pset_virtual) was not found. Install Debian's libhdf5-dev, or give --with-hdf5=DIR.])])
  AC_SUBST([HDF5_CFLAGS]) AC_SUBST([HDF5_LIBS])
  G3_SUMMARY_ADD([hdf5], [yes], [$g3_hdf5_where])
])
