# tests/modules: the Lmod and Tcl modulefiles, loaded with Lmod (and
# Environment Modules where installed) after an install into a scratch prefix.
TESTS += tests/modules/test_modules.sh
EXTRA_DIST += tests/modules/test_modules.sh
