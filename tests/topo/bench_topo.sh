#!/bin/sh
# Benchmark: how long gpt3d topo takes to plan MT-NLG (TP 8 x PP 35, 8 ranks per node) on
# 280, 350 and 420 nodes of docs/examples/mtnlg-topology.conf: the median of 5 runs each,
# in milliseconds (docs/benchmarks.md, "gpt3d topo").  The test (test_topo_cli.sh) checks
# the work done instead; this is where the time is measured, on a quiet machine.
#   tests/topo/bench_topo.sh [GPT3D]      (default: the build's src/gpt3d)
# (top_srcdir and top_builddir come from make check-long.)
# shellcheck disable=SC2154
set -e
here=$(cd "$(dirname "$0")" && pwd)
src=${top_srcdir:-$here/../..}
g3=${1:-${GPT3D:-${top_builddir:-$src/build}/src/gpt3d}}
[ -x "$g3" ] || { echo "bench_topo: $g3 is not built; give the gpt3d to time" >&2; exit 2; }
echo "1..3"
k=0
for n in 280 350 420; do
    k=$((k + 1))
    times=""
    for _ in 1 2 3 4 5; do
        start=$(date +%s%N)
        "$g3" topo --nodelist "dgx[0000-$(printf %04d $((n - 1)))]" --ranks-per-node 8 \
            --topology-file "$src/docs/examples/mtnlg-topology.conf" \
            --tensor-model-parallel-size 8 --pipeline-model-parallel-size 35 --summary >/dev/null
        times="$times $(( ($(date +%s%N) - start) / 1000000 ))"
    done
    med=$(echo "$times" | tr ' ' '\n' | grep . | sort -n | sed -n 3p)
    echo "ok $k - MT-NLG on $n nodes ($((n * 8)) ranks): median $med ms of 5 runs (${times# })"
done
