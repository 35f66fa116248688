#!/bin/sh
# No arrow back up (docs/design.md, "Layers"): an #include from one directory of src/ into
# another points down this order, and never between two directories of the same step (they
# sit beside each other).  Lowest first:
#   0 core;  1 comm topo;  2 backend;  3 model data ckpt;  4 parallel curate metrics;  5 infer plan;
#   6 train;  7 search;  8 cli
# A new directory of src/ must be given its place here.  Includes without a directory
# ("config.h", "g3cuda.h") and src/main.c (the top) are not checked.
# (top_srcdir comes from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -eu

cd "$top_srcdir"
order="core:0 comm:1 topo:1 backend:2 model:3 data:3 ckpt:3 parallel:4 curate:4 metrics:4 infer:5 plan:5 train:6 search:7 cli:8"

level() {  # level DIR: its step, or nothing
    for e in $order; do
        if [ "${e%%:*}" = "$1" ]; then
            echo "${e#*:}"
            return
        fi
    done
}

unplaced=""
for d in src/*/; do
    d=${d#src/}
    d=${d%/}
    [ -n "$(level "$d")" ] || unplaced="$unplaced $d"
done
is "${unplaced:-none}" none "every directory of src/ has its place in the order"

bad=""
nincl=0
for f in src/*/*.c src/*/*.h; do
    from=${f#src/}
    from=${from%%/*}
    lf=$(level "$from")
    [ -n "$lf" ] || continue
    incl=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_0-9]*\)\/.*/\1/p' "$f" | sort -u)
    for to in $incl; do
        [ "$to" != "$from" ] || continue
        nincl=$((nincl + 1))
        lt=$(level "$to")
        if [ -z "$lt" ] || [ "$lt" -ge "$lf" ]; then
            bad="$bad
$f includes $to/ (step ${lt:-unknown}) from $from (step $lf)"
        fi
    done
done
is "${bad:-none}" none "no #include between directories points up or sideways ($nincl arrows checked)"
done_testing
