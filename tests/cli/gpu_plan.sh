#!/bin/sh
# The GPU half of gpt3d plan's calibration (docs/plan.md "On a GPU"), run on the GPU machine:
#
#   bash ../shared/gpu/pack.sh
#   device run, carry [".gpu"]:  bash .gpu/on-device.sh sh ../src/tests/cli/gpu_plan.sh "$OUT"
#
# writes into OUTDIR (default .):
#   gpu.cal     gpt3d plan --calibrate --device cuda (format 2): GEMM rates up to 4096^3, the
#               fused attention, memory-bound ops, the fixed cost of an op ("op") and of a
#               process's memory ("fixed", through NVML: the context, cuBLASLt, the kernels),
#               what NCCL's four communicators add ("nccl", and in its comment what each of
#               the four added: per communicator or once), the GPU ("gpu"); the links keep
#               the DGX H100 numbers (one GPU)
#   memory.txt  for each shape of issue 20's H100 table (issue 29's five H200 rows are among
#               them): the peak of nvidia-smi's memory.used (100 ms samples) over 3
#               iterations, the trainer's "memory:" line and the plan's peak, one row each, in
#               tests/cli/test_plan.sh's row format; appended: "| plan_cal=MiB" (the plan with
#               gpu.cal's measured fixed memory), "err=%" and "err_cal=%" (plan against peak)
#   time.txt    the trainer's ms per iteration next to the plan's with gpu.cal; appended:
#               "err=%", "ops=N" (ops per iteration the plan counted), "fixed_ms=" (their
#               fixed cost at gpu.cal's op) and "exposed_ms=" (what of it the plan finds not
#               hidden behind the GPU's work)
#   attribution.txt  GPT-2 124M at micro-batch 1 trained (3 iterations) as it is and with one
#               part of the process's memory beyond its tensors taken away each: no NCCL
#               communicators (--distributed-backend ucx), no GEMM autotuning
#               (GPT3D_GEMM_AUTOTUNE=0: its scratch), the native attention (no cuDNN handle,
#               no dQ accumulator); each with nvidia-smi's peak, the plan's peak with the same
#               flags and gpu.cal, and the difference from the first row: what each part
#               holds, measured (docs/plan.md "Overhead")
# Without a GPU it says so and exits 77 (skip).
set -eu
out=${1:-.}
GPT3D=${GPT3D:-src/gpt3d}
D=${GPT3D_TEST_DATA:-tests/_data}/kjv
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu_plan.sh: no GPU (nvidia-smi -L lists none)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

"$GPT3D" plan --calibrate "$out/gpu.cal" --device cuda

data="--data-path $D/kjv_text_document --vocab-file $D/encoder.json --merge-file $D/vocab.bpe --split 98,1,1"
: > "$out/memory.txt"
: > "$out/time.txt"
while read -r L H A B R; do
    rg=""
    [ "$R" = none ] || rg="--recompute-granularity $R"
    shape="--num-layers $L --hidden-size $H --num-attention-heads $A --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size $B --global-batch-size $B $rg"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$tmp/mem" &
    smi=$!
    # shellcheck disable=SC2086
    "$GPT3D" train --device cuda $shape $data --train-iters 3 --log-interval 1 --eval-iters 0 \
        --run-dir "$tmp/run" > "$tmp/log" 2>&1 || { kill "$smi"; wait "$smi" || true; cat "$tmp/log"; exit 1; }
    kill "$smi"
    wait "$smi" || true
    peak=$(sort -n "$tmp/mem" | tail -1)
    line=$(sed -n 's/.*memory: \(.*\)$/\1/p' "$tmp/log")
    # (The plan's JSON is captured before it is read: this is sh, without pipefail, where a
    # failing plan at the head of a pipeline would leave an empty number behind, not stop.)
    # shellcheck disable=SC2086
    js=$("$GPT3D" plan --device cuda $shape --json)
    planned=$(printf '%s\n' "$js" | sed -n 's/.*"peak_bytes":\([0-9.e+]*\).*/\1/p' | tail -1)
    mib=$(awk -v p="$planned" 'BEGIN { printf "%.0f", p / 1048576 }')
    ms=$(sed -n 's/.*"ms_per_iter":\([0-9.e+-]*\),.*/\1/p' "$tmp/run/metrics.jsonl" | tail -1)
    # shellcheck disable=SC2086
    js=$("$GPT3D" plan --device cuda $shape --machine "$out/gpu.cal" --json)
    ps=$(printf '%s\n' "$js" | sed -n 's/.*"seconds_per_iteration":\([0-9.e+-]*\),.*/\1/p')
    cal=$(printf '%s\n' "$js" | sed -n 's/.*"peak_bytes":\([0-9.e+]*\).*/\1/p' | tail -1)
    ops=$(printf '%s\n' "$js" | sed -n 's/.*"ops_per_iteration":\([0-9.e+-]*\),.*/\1/p')
    fx=$(printf '%s\n' "$js" | sed -n 's/.*"fixed_seconds":\([0-9.e+-]*\),.*/\1/p')
    ex=$(printf '%s\n' "$js" | sed -n 's/.*"exposed_seconds":\([0-9.e+-]*\),.*/\1/p')
    calmib=$(awk -v p="$cal" 'BEGIN { printf "%.0f", p / 1048576 }')
    echo "$L $H $A $B $R $peak plan=$mib trainer: $line | plan_cal=$calmib $(awk -v a="$mib" -v b="$calmib" -v p="$peak" 'BEGIN { printf "err=%+.1f%% err_cal=%+.1f%%", 100 * (a - p) / p, 100 * (b - p) / p }')" >> "$out/memory.txt"
    pms=$(awk -v s="$ps" 'BEGIN { printf "%.1f", s * 1000 }')
    echo "$L $H $A $B $R measured_ms=$ms plan_ms=$pms $(awk -v a="$pms" -v m="$ms" -v o="$ops" -v f="$fx" -v x="$ex" 'BEGIN { printf "err=%+.1f%% ops=%d fixed_ms=%.2f exposed_ms=%.2f", 100 * (a - m) / m, o, f * 1000, x * 1000 }')" >> "$out/time.txt"
    rm -rf "$tmp/run"
done <<'ROWS'
12 768 12 1 none
12 768 12 4 none
12 768 12 8 none
12 768 12 16 none
12 768 12 16 selective
12 768 12 16 full
48 1600 25 1 none
48 1600 25 4 none
48 1600 25 8 none
48 1600 25 8 selective
48 1600 25 8 full
48 1600 25 16 full
ROWS
# what each part of the memory beyond the tensors holds: the same run without it
: > "$out/attribution.txt"
shape="--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 1"
first=""
while read -r name envs flags; do
    [ "$flags" = - ] && flags=""
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$tmp/mem" &
    smi=$!
    rc=0
    # shellcheck disable=SC2086
    env $envs "$GPT3D" train --device cuda $shape $flags $data --train-iters 3 --log-interval 1 \
        --eval-iters 0 --run-dir "$tmp/run" > "$tmp/log" 2>&1 || rc=$?
    kill "$smi"
    wait "$smi" || true
    if [ "$rc" != 0 ]; then   # one variant failing leaves the others to measure
        echo "$name failed (exit $rc): $(tail -1 "$tmp/log")" >> "$out/attribution.txt"
        rm -rf "$tmp/run"
        continue
    fi
    peak=$(sort -n "$tmp/mem" | tail -1)
    # shellcheck disable=SC2086
    js=$(env $envs "$GPT3D" plan --device cuda $shape $flags --machine "$out/gpu.cal" --json)
    planned=$(printf '%s\n' "$js" | sed -n 's/.*"peak_bytes":\([0-9.e+]*\).*/\1/p' | tail -1)
    mib=$(awk -v p="$planned" 'BEGIN { printf "%.0f", p / 1048576 }')
    [ -n "$first" ] || first=$peak
    echo "$name peak=$peak plan=$mib less_than_default=$((first - peak)) $(awk -v a="$mib" -v p="$peak" 'BEGIN { printf "err=%+.1f%%", 100 * (a - p) / p }')" >> "$out/attribution.txt"
    rm -rf "$tmp/run"
done <<'VARIANTS'
default GPT3D_GEMM_AUTOTUNE=1 -
no-nccl GPT3D_GEMM_AUTOTUNE=1 --distributed-backend ucx
no-autotune GPT3D_GEMM_AUTOTUNE=0 -
native-attention GPT3D_GEMM_AUTOTUNE=1 --attention-backend native
VARIANTS
cat "$out/gpu.cal" "$out/memory.txt" "$out/time.txt" "$out/attribution.txt"
