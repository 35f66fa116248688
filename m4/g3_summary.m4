# G3_SUMMARY_ADD(FEATURE, YESNO, DETAIL)
# Record one row of the table configure prints at the end.
AC_DEFUN([G3_SUMMARY_ADD], [
  g3_summary_rows="${g3_summary_rows}$(printf '  %-10s %-4s %s' "$1" "$2" "$3")
"
])

# G3_SUMMARY_PRINT: print the feature table.
AC_DEFUN([G3_SUMMARY_PRINT], [
  AS_ECHO([""])
  AS_ECHO(["gpt3d $PACKAGE_VERSION configuration summary"])
  AS_ECHO(["  feature    used where found / why not"])
  AS_ECHO(["  ---------- ---- ---------------------------------------"])
  printf '%s' "$g3_summary_rows"
  AS_ECHO(["  prefix: $prefix   CC: $CC   CFLAGS: $CFLAGS"])
  AS_ECHO([""])
])

# G3_PKG_FROM_DIR(VAR, DIR, HEADER_SUBDIRS)
# Set VAR_CFLAGS / VAR_LIBS from an explicit --with-x=DIR prefix.
AC_DEFUN([G3_PKG_FROM_DIR], [
  $1_CFLAGS="-I$2/include"
  AS_IF([test -d "$2/lib64"], [$1_LIBS="-L$2/lib64 -Wl,-rpath,$2/lib64"], [$1_LIBS="-L$2/lib -Wl,-rpath,$2/lib"])
])
