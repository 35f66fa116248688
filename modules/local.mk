# modules/: Lmod and Tcl modulefiles.
