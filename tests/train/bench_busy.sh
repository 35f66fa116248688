#!/bin/bash
# Training speed when the CPUs are shared (issue 32.9): the step of tests/train/bench_train.sh
# (4 layers, hidden 256, 4 heads, sequence 256, micro-batch 4, GPT-2's vocabulary) with
# THREADS OpenMP threads, gpt3d with its default wait policy (gpt3d sets GOMP_SPINCOUNT, see
# src/backend/cpu_env.c), with libgomp's own default (GOMP_SPINCOUNT=300000, what
# OMP_WAIT_POLICY unset means) and with OMP_WAIT_POLICY=passive, and PyTorch
# (tests/train/bench_torch.py), in turn, ROUNDS times, while LOOPS busy loops run (each ended
# by timeout after at most an hour, and killed at the end).  Prints one line per run: the
# load average before it, tokens/s (the median step) and the CPU seconds of the whole run
# (user + system).  Not a test: run by hand, from a build directory:
#   top_builddir=. top_srcdir=.. bash ../tests/train/bench_busy.sh [LOOPS [ROUNDS [THREADS [STEPS]]]]
# For the numbers of a quiet machine on a shared one, run it with LOOPS 0 under a real-time
# priority (chrt -f 1 ...: the other jobs then wait; keep it short).
set -eu
set -o pipefail
loops=${1:-0}
rounds=${2:-2}
threads=${3:-2}
steps=${4:-4}
py=${PYTHON_REF:-/usr/bin/python3}
bench="${top_builddir:-.}/tests/train/bench_train"
shape=(--layers 4 --hidden 256 --heads 4 --seq 256 --batch 4 --vocab 50257 --steps "$steps" --warmup 1)
tf=$(mktemp)
[ -x "$bench" ] || { echo "$bench is not built (make tests/train/bench_train)" >&2; exit 1; }

pids=()
stop_loops() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -f "$tf"; }
trap stop_loops EXIT
for ((i = 0; i < loops; i++)); do
    timeout 3600 sh -c 'while :; do :; done' &
    pids+=($!)
done
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, $threads threads, $loops busy loops, $rounds rounds"
for ((r = 1; r <= rounds; r++)); do
    for v in gpt3d libgomp-default passive pytorch; do
        case $v in
        gpt3d) env=() ;;
        libgomp-default) env=(GOMP_SPINCOUNT=300000) ;;
        passive) env=(OMP_WAIT_POLICY=passive) ;;
        pytorch) env=() ;;
        esac
        if [ "$v" = pytorch ]; then
            cmd=("$py" "${top_srcdir:-..}/tests/train/bench_torch.py" "${shape[@]}" --threads "$threads")
        else
            cmd=("$bench" "${shape[@]}")
        fi
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        tok=$(/usr/bin/time -o "$tf" -f '%U %S' env OMP_NUM_THREADS="$threads" "${env[@]}" "${cmd[@]}" 2>/dev/null |
              sed -n 's/^tokens\/s: //p')
        cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$tf")
        printf 'round %d %-16s load %-16s tokens/s %8s  CPU s %6s\n' "$r" "$v" "$load" "$tok" "$cpu"
    done
done
