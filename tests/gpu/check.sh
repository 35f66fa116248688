#!/bin/bash
# Every GPU check of gpt3d in one command, for the GPU machine (../shared/gpu/README.md):
#
#   bash .gpu/on-device.sh bash ../src/tests/gpu/check.sh "$OUT"
#
# run in the build directory (on-device.sh's /tmp/pack/build, which exports GPT3D, top_srcdir,
# top_builddir and GPT3D_TEST_DATA).  At most 8 minutes on one H100 and 7 files in OUTDIR:
#   summary.md     pass/fail of every part first, then every number (attention TFLOP/s of
#                  both backends, tokens/s and MFU of gpt3d per attention backend and
#                  PyTorch, the top kernels of one step, checkpoint MB/s, plan vs measured)
#   kernels.log    the kernel tests (test_attention with cuDNN and the native kernels) and
#                  test_gpt_cuda
#   train.log      test_cuda_train.sh (each attention backend), test_parallel_cuda.sh and the
#                  task scores of one checkpoint on the CPU and on CUDA (train --eval-tasks)
#   bench.log      attention micro-benchmarks (G3_BENCH=only test_attention, with the
#                  system's cuDNN and with PyTorch's when it is there) and
#                  bench_gpu.sh (gpt3d per attention backend vs PyTorch, 124M mb16, 1.5B mb8)
#   ncu.csv        Nsight Compute's per-kernel time of 2 iterations of GPT-2 124M mb16
#                  (default attention, GEMM autotuning off)
#   cudnn.log      cuDNN's API log (CUDNN_LOGLEVEL_DBG=3) of our graphs and of PyTorch's cuDNN
#                  SDPA on the same shape, the head of each
#   other.log      tests/ckpt/bench_ckpt, a GPT-2 1.5B async save and resume (stall, phases,
#                  peak RSS) and tests/cli/gpu_plan.sh
# Each part runs under its own `timeout` (one hang costs only its part) inside an overall
# budget (CHECK_BUDGET seconds, default 470): a part that no longer fits is skipped and says
# so.  The correctness parts and the checkpoint benchmark run side by side first (they time
# no GPU work); the timed parts then run one at a time, the most wanted first.  Without a GPU (or with CHECK_NO_GPU=1) every GPU part is skipped and the
# summary still lists each part with its status: tests/gpu/test_check.sh runs it so, and runs
# the parts named in CHECK_CPU_PARTS anyway (eval-tasks, with EVAL_DEVICE=cpu standing in).
set -euo pipefail

out=${1:?usage: check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${top_builddir:-.}
build=$(cd "$build" && pwd)
src=${top_srcdir:-$build/..}
GPT3D=${GPT3D:-$build/src/gpt3d}
budget=${CHECK_BUDGET:-470}
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x /opt/torch/.venv/bin/python ] && PYTHON=/opt/torch/.venv/bin/python
fi
export PYTHON
start=$SECONDS
status="$out/.status"   # one "part|status|seconds|note" line per part, read into summary.md
: >"$status"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gpu=1
if [ "${CHECK_NO_GPU:-0}" = 1 ]; then
    gpu=0
    nogpu="CHECK_NO_GPU=1"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=0
    nogpu="no GPU (nvidia-smi -L lists none)"
fi

# record PART STATUS SECONDS NOTE
record() { printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" >>"$status"; }

# tap_counts LOG: "ok N, not ok M, skip K" over the TAP lines of LOG
tap_counts() {
    awk '/^ok /{ if ($0 ~ /# SKIP/) s++; else o++ } /^not ok /{ n++ }
         END { printf "ok %d, not ok %d, skip %d", o, n, s }' "$1"
}

# part NAME LIMIT LOG FUNCTION: run the exported FUNCTION under timeout (the smaller of LIMIT and what is left of
# the budget), appending to LOG; record pass (exit 0, no "not ok"), fail or timeout.
part() {
    local name=$1 limit=$2 log=$3 left t0 rc st note
    shift 3
    left=$((budget - (SECONDS - start)))
    if [ "$gpu" = 0 ] && case " ${CHECK_CPU_PARTS:-} " in *" $name "*) true ;; *) false ;; esac; then
        left=$budget   # a part run on the CPU to check its plumbing (tests/gpu/test_check.sh):
        limit=$budget  # a busy machine is slower than the GPU its limit is for
    elif [ "$gpu" = 0 ]; then
        record "$name" skip 0 "$nogpu"
        printf '== %s: skipped (%s)\n' "$name" "$nogpu" >>"$log"
        return 0
    fi
    if [ "$left" -lt 20 ]; then
        record "$name" skip 0 "time budget spent (${budget} s)"
        printf '== %s: skipped (time budget)\n' "$name" >>"$log"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    printf '== %s (limit %d s): %s\n' "$name" "$limit" "$*" >>"$log"
    t0=$SECONDS
    rc=0
    timeout --kill-after=10 "$limit" bash -c "$1" >>"$log" 2>&1 || rc=$?
    note="exit $rc"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        st=timeout
        note="killed after $limit s"
    elif [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
        st=pass
        [ "$rc" = 77 ] && st=skip
    else
        st=fail
    fi
    record "$name" "$st" $((SECONDS - t0)) "$note"
    printf '== %s: %s (%s, %d s)\n' "$name" "$st" "$note" $((SECONDS - t0)) >>"$log"
}

# ---- the parts ---------------------------------------------------------------------------

# kernel tests, one log section each; fails when any TAP line fails
kernels() {
    local rc=0 t
    for t in elementwise embedding layernorm gelu gemm attention xent optim gpt_cuda; do
        echo "-- test_$t"
        "$build/tests/kernels/test_$t" || rc=1
    done
    return $rc
}

train() {
    local rc=0
    echo "-- test_cuda_train.sh"
    bash "$src/tests/kernels/test_cuda_train.sh" || rc=1
    echo "-- test_parallel_cuda.sh"
    sh "$src/tests/parallel/test_parallel_cuda.sh" || rc=1
    return $rc
}

# the attention benchmarks with the machine's cuDNN, then with PyTorch's (9.19 on the shared
# GPU machine, 9.14 in the system's paths) when it is there
attbench() {
    local rc=0 lib
    G3_BENCH=only "$build/tests/kernels/test_attention" || rc=1
    for lib in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
        [ -f "$lib/libcudnn.so.9" ] || continue
        echo "-- test_attention with $lib"
        LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" G3_BENCH=only \
            "$build/tests/kernels/test_attention" || rc=1
    done
    return $rc
}

# cuDNN attention only (the native kernels' figures are in ../shared/gpu/results: 0.51x and
# 0.63x of PyTorch); ATTENTION="native cudnn" times both
bench() {
    ATTENTION=${ATTENTION:-cudnn} STEPS=${STEPS:-8} SKIP_KERNELS=1 bash "$src/tests/kernels/bench_gpu.sh" "$build"
}

# two iterations of GPT-2 124M mb16 (default attention) under Nsight Compute; without GEMM
# autotuning, whose timing runs would be counted as the first iteration's kernels
ncu_run() {
    local d="$GPT3D_TEST_DATA/kjv"
    GPT3D_GEMM_AUTOTUNE=0 /usr/local/cuda/bin/ncu --metrics gpu__time_duration.sum --print-summary per-kernel --csv \
        "$GPT3D" train --device cuda --data-path "$d/kjv_text_document" \
        --vocab-file "$d/encoder.json" --merge-file "$d/vocab.bpe" --num-layers 12 \
        --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 16 \
        --global-batch-size 16 --train-iters 2 --eval-iters 0 --eval-interval 1000 \
        --run-dir "$tmp/ncu"
}

# cuDNN's own log of our graphs (4 steps of a small model, cuDNN attention) and of PyTorch's
# cuDNN SDPA at the same shape; the first 1500 lines of each
cudnn_dbg() {
    local d="$GPT3D_TEST_DATA/kjv"
    CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$tmp/ours.log" \
        "$GPT3D" train --device cuda --attention-backend cudnn --data-path "$d/kjv_text_document" \
        --vocab-file "$d/encoder.json" --merge-file "$d/vocab.bpe" --num-layers 1 \
        --hidden-size 256 --num-attention-heads 4 --seq-length 256 --micro-batch-size 2 \
        --global-batch-size 2 --train-iters 1 --eval-iters 0 --eval-interval 1000 \
        --run-dir "$tmp/dbg" || true
    echo "---- gpt3d (B=2 T=256 NH=4 HS=64): $(wc -l <"$tmp/ours.log" 2>/dev/null || echo 0) lines"
    head -n 1500 "$tmp/ours.log" 2>/dev/null || true
    CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$tmp/torch.log" "$PYTHON" - <<'EOF' || true
import torch
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
           for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
torch.cuda.synchronize()
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
EOF
    echo "---- PyTorch SDPA, cuDNN backend (B=2 T=256 NH=4 HS=64): $(wc -l <"$tmp/torch.log" 2>/dev/null || echo 0) lines"
    head -n 1500 "$tmp/torch.log" 2>/dev/null || true
}

ckpt() {
    echo "-- tests/ckpt/bench_ckpt"
    "$build/tests/ckpt/bench_ckpt" "$tmp/ckpt"
}

# #27: GPT-2 1.5B mb8 with an asynchronous save at iteration 3 (the stall, the staging area's
# one-time allocation, the writer's phases), the end save, then a resume; the peak RSS of each
# (VmHWM, polled) next to the size of one checkpoint, and a plain read of it for comparison
ckpt_gpu() {
    local d="$GPT3D_TEST_DATA/kjv" c="$tmp/ck15" rc=0 pid hwm h
    set -- --device cuda --data-path "$d/kjv_text_document" --vocab-file "$d/encoder.json" \
        --merge-file "$d/vocab.bpe" --num-layers 48 --hidden-size 1600 --num-attention-heads 25 \
        --seq-length 1024 --micro-batch-size 8 --global-batch-size 8 --eval-iters 0 \
        --eval-interval 1000 --log-interval 1 --lr 6e-4
    for run in save load; do
        if [ $run = save ]; then
            "$GPT3D" train "$@" --train-iters 6 --save "$c" --save-interval 3 --async-save \
                --run-dir "$tmp/ck15-run" &
        else
            "$GPT3D" train "$@" --train-iters 7 --load "$c" --run-dir "$tmp/ck15-run2" &
        fi
        pid=$!
        hwm=0
        while kill -0 "$pid" 2>/dev/null; do
            h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
            [ -n "$h" ] && hwm=$h   # a zombie's status has no VmHWM
            sleep 0.5
        done
        wait "$pid" || rc=$?
        echo "ckpt-gpu $run: exit $rc, peak RSS $((${hwm:-0} / 1024)) MiB (VmHWM, polled every 0.5 s)"
        [ "$rc" = 0 ] || return "$rc"
    done
    echo "ckpt-gpu checkpoint size: $(du -sm "$c" | cut -f1) MiB"
    sync
    local t0 t1
    t0=$(date +%s.%N)
    find "$c" -type f -exec cat {} + >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v m="$(du -sm "$c" | cut -f1)" \
        'BEGIN { printf "ckpt-gpu plain read (cat, page cache warm): %.2f s, %.0f MB/s\n", b - a, m * 1.048576 / (b - a) }'
}

# issue 30: task scoring on the GPU.  A small GPT (GPT-2 vocabulary, KJV) trained 20 iterations
# on the CPU and saved; then one more iteration and the tasks (tests/infer/tasks_ref.py's
# synthetic LAMBADA, multiple choice, HellaSwag and WikiText, >= 200 items each) on the CPU and
# on CUDA from that checkpoint; every metric compared (accuracies within 0.05 absolute: bf16
# flips near ties; perplexities within 2 % relative).  EVAL_DEVICE=cpu stands CUDA in for a check
# of this part's plumbing on a machine without a GPU.
eval_tasks() {
    local d="$GPT3D_TEST_DATA/kjv" e="$tmp/ev" dev=${EVAL_DEVICE:-cuda} t
    mkdir -p "$e/t"
    echo "-- eval-tasks (task scores, CPU against $dev)"
    "$PYTHON" "$src/tests/infer/tasks_ref.py" make "$e/t" || return 1
    t="lambada:$e/t/lambada.jsonl,mc:$e/t/mc.jsonl,hellaswag:$e/t/hellaswag.jsonl,wikitext103:$e/t/wiki.test.tokens"
    set -- --data-path "$d/kjv_text_document" --vocab-file "$d/encoder.json" \
        --merge-file "$d/vocab.bpe" --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
        --seq-length 128 --micro-batch-size 4 --global-batch-size 8 --lr 1e-3 --eval-iters 0 \
        --eval-interval 1000 --log-interval 10 --data-cache-path "$e/cache"
    "$GPT3D" train --device cpu "$@" --train-iters 20 --save "$e/ck" --run-dir "$e/r0" >"$e/r0.log" 2>&1 ||
        { tail -5 "$e/r0.log"; return 1; }
    "$GPT3D" train --device cpu "$@" --train-iters 21 --load "$e/ck" --eval-tasks "$t" \
        --run-dir "$e/cpu" >"$e/cpu.log" 2>&1 || { tail -5 "$e/cpu.log"; return 1; }
    "$GPT3D" train --device "$dev" "$@" --train-iters 21 --load "$e/ck" --eval-tasks "$t" \
        --run-dir "$e/dev" >"$e/dev.log" 2>&1 || { tail -5 "$e/dev.log"; return 1; }
    grep ' task ' "$e/cpu.log" "$e/dev.log" | cut -c1-300
    "$PYTHON" - "$e/cpu/metrics.jsonl" "$e/dev/metrics.jsonl" "$dev" <<'EOF2'
import json, sys
def tasks(p):
    out = {}
    for l in open(p):
        r = json.loads(l)
        if r.get("event") == "task":
            out[r.get("task", r.get("name"))] = r
    return out
a, b, dev = tasks(sys.argv[1]), tasks(sys.argv[2]), sys.argv[3]
bad = 0
if not a or set(a) != set(b):
    print(f"not ok - the same tasks scored on the CPU and on {dev}: {sorted(a)} / {sorted(b)}")
    sys.exit(1)
for k in sorted(a):
    ma, mb = a[k].get("metrics", {}), b[k].get("metrics", {})
    if not ma:
        print(f"not ok - task {k}: no metrics on the CPU"); bad += 1
    for m, x in sorted(ma.items()):
        y = mb.get(m)
        if not isinstance(y, (int, float)):
            print(f"not ok - task {k} {m}: {dev} has no value"); bad += 1; continue
        if m.startswith("acc"):
            ok, lim = abs(y - x) <= 0.05, "0.05"
        else:   # loss, ppl, adjusted_ppl, token_ratio
            ok, lim = abs(y - x) <= 0.02 * abs(x), "2 %"
        print(f"{'ok' if ok else 'not ok'} - task {k} {m}: CPU {x:.6g}, {dev} {y:.6g} (within {lim})")
        bad += not ok
sys.exit(1 if bad else 0)
EOF2
}

plan() {
    local rc=0 f
    echo "-- tests/cli/gpu_plan.sh"
    sh "$src/tests/cli/gpu_plan.sh" "$tmp/plan" || rc=$?
    for f in gpu.cal memory.txt time.txt; do
        if [ -f "$tmp/plan/$f" ]; then
            echo "---- $f"
            cat "$tmp/plan/$f"
        fi
    done
    return $rc
}

# ---- run ---------------------------------------------------------------------------------
# the parts run as `bash -c NAME` under timeout: they and what they read are exported
export -f kernels train ckpt attbench bench ncu_run cudnn_dbg ckpt_gpu eval_tasks plan
export build src GPT3D tmp
{
    echo "check.sh at $(date -u '+%Y-%m-%d %H:%M UTC') in $build"
    "$GPT3D" --version 2>&1 || true
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
} >"$out/kernels.log"
: >"$out/train.log"
: >"$out/other.log"
# correctness side by side (nothing here times the GPU; the checkpoint benchmark times the disk)
part kernels 180 "$out/kernels.log" kernels &
p1=$!
part train 180 "$out/train.log" train &
p2=$!
part ckpt 120 "$out/other.log" ckpt &
p3=$!
wait "$p1" "$p2" "$p3" || true
# timed, one at a time, the most wanted first: what is left of the budget goes to the rest
: >"$out/bench.log"
part attention-bench 75 "$out/bench.log" attbench
part bench_gpu 200 "$out/bench.log" bench
: >"$out/ncu.csv"
part ckpt-gpu 120 "$out/other.log" ckpt_gpu
part eval-tasks 60 "$out/train.log" eval_tasks
part ncu 60 "$out/ncu.csv" ncu_run
: >"$out/cudnn.log"
part cudnn-log 40 "$out/cudnn.log" cudnn_dbg
part plan 120 "$out/other.log" plan

# ---- summary -----------------------------------------------------------------------------
{
    echo "# gpt3d GPU check ($(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - start)) s)"
    echo
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' || true
    "$GPT3D" --version 2>/dev/null | sed -n 's/^features: /features: /p' || true
    echo
    echo "| part | status | seconds | note |"
    echo "|---|---|---|---|"
    while IFS='|' read -r name st secs note; do
        echo "| $name | **$st** | $secs | $note |"
    done <"$status"
    echo
    echo "## Tests"
    for log in kernels train; do
        awk '/^-- /{ name = $2; seen[name] = 1 }
             /^(ok|not ok) /{ if (/^not ok/) n[name]++; else if (/# SKIP/) s[name]++; else o[name]++ }
             /^1\.\.0 # SKIP/{ all[name] = $0 }
             END { for (k in seen)
                       if (k in all) printf "- %s: %s\n", k, all[k]
                       else printf "- %s: ok %d, not ok %d, skip %d\n", k, o[k], n[k], s[k] }' \
            "$out/$log.log"
        grep '^not ok' "$out/$log.log" | head -n 20 | sed 's/^/  - /' || true
    done
    echo
    echo "## Attention (TFLOP/s; goal: cuDNN >= 250 forward, >= 150 backward at B16 T1024 NH12 HS64 and HS 160)"
    grep -E '^# bench|^# cuDNN [0-9]+ at run time|^not ok' "$out/bench.log" |
        sed 's/^# bench /- /; s/^# cuDNN/- cuDNN/' || true
    echo
    echo "## Training speed (goal: 124M >= 1.0x PyTorch, 1.5B >= 1.1x, MFU >= 45% at 1.5B)"
    sed -n '/^model  *impl/,$p' "$out/bench.log" | sed 's/^/    /' || true
    grep 'gpt3d [0-9.]*[MB]: attention' "$out/bench.log" | sed 's/^ */- /' || true
    grep '^RESULT' "$out/bench.log" | sed 's/^RESULT/- measured (model impl micro-batch tokens\/s TFLOP\/s MFU%):/' || true
    echo
    echo "## Top kernels of 2 iterations of GPT-2 124M mb16 (ncu)"
    if [ -s "$out/ncu.csv" ]; then
        "$PYTHON" - "$out/ncu.csv" <<'EOF' || true
import csv, sys
rows = {}
for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(r) < 15 or r[10] != "gpu__time_duration.sum":
        continue
    try:
        t = int(r[8]) * float(r[14].replace(",", ""))
    except ValueError:
        continue
    rows[r[3].split("(")[0]] = rows.get(r[3].split("(")[0], 0.0) + t
tot = sum(rows.values()) or 1.0
print(f"    total {tot / 2e6:.1f} ms of kernels per iteration")
for k, t in sorted(rows.items(), key=lambda x: -x[1])[:15]:
    print(f"    {100 * t / tot:5.1f}%  {t / 2e6:7.2f} ms  {k[:90]}")
EOF
    else
        echo "    (no ncu output)"
    fi
    echo
    echo "## Checkpoint benchmark and plan vs measured"
    grep -i 'MB/s\|GB/s\|median\|peak\|ms/iter\|plan' "$out/other.log" | grep -v '^ckpt-gpu' | head -n 40 | sed 's/^/    /' || true
    echo
    echo "## GPT-2 1.5B save and resume (goal: async stall <= 1 s, peak RSS <= shard + 10%)"
    grep -E '^ckpt-gpu|stalled|staging area|saved checkpoint|loaded checkpoint|resumed from|commit' "$out/other.log" |
        head -n 20 | cut -c1-400 | sed 's/^/    /' || true
    echo
    echo "## cuDNN"
    grep -m3 'attention B=\|cuDNN [0-9]' "$out/kernels.log" "$out/train.log" 2>/dev/null |
        sed 's/^/- /' || true
    grep -m2 '^----' "$out/cudnn.log" | sed 's/^/- /' || true
} >"$out/summary.md"
rm -f "$status"
echo "check.sh: $out/summary.md ($((SECONDS - start)) s)"
