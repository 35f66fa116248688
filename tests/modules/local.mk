# tests/modules: the Lmod and Tcl modulefiles, loaded with Lmod (and
# Environment Modules where installed) after an install into a scratch prefix.
G3_SH_TESTS += tests/modules/test_modules.sh
