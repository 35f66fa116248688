#!/bin/bash
# The files of src/comm call in no circle (docs/design.md, "Transports"): from the object
# files' symbols, A -> B when A uses a symbol that B defines; the graph must have no cycle.
# The dispatch (comm.c) and the bootstrap (world.c) use no transport's symbol.
# (top_srcdir, top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -euo pipefail

dir="$top_builddir/src/comm"
objs=()
for o in "$dir"/*.o; do
    case "$o" in *comm_bench*) ;; *) objs+=("$o") ;; esac
done
if [ "${#objs[@]}" -lt 4 ] || ! command -v nm >/dev/null 2>&1; then
    skip_all "no src/comm objects or no nm"
fi

# edges "A B": A's undefined symbols defined in B
edges=$(for a in "${objs[@]}"; do
    for b in "${objs[@]}"; do
        [ "$a" = "$b" ] && continue
        if comm -12 <(nm -u "$a" | awk '{print $NF}' | sort -u) \
                    <(nm --defined-only -g "$b" | awk '{print $NF}' | sort -u) | grep -q .; then
            echo "$(basename "$a" .o) $(basename "$b" .o)"
        fi
    done
done)
diag "calls: $(echo "$edges" | tr '\n' ';')"

cycle=$(echo "$edges" | tsort 2>&1 >/dev/null || true)
is "$cycle" "" "no cycle among the object files of src/comm"
like "$edges" "group (ucx|staged)" "the groups reach the transports (through the table)"
unlike "$edges" "(comm|world) (ucx|nccl|staged|group)" \
    "the dispatch and the bootstrap call no transport and no group creation"
done_testing
