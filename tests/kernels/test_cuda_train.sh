#!/bin/sh
# gpt3d train --device cuda.  Everywhere: the refusal a machine without the CUDA backend gives
# (a build without CUDA: exit 2, "built without CUDA; reconfigure with --with-cuda"; a CUDA
# build on a node without a usable GPU: exit 1, the driver's reason and the fix).  With a GPU
# (nvidia-smi lists one and this build has +cuda):
#   * 50 training steps on the KJV test corpus follow the CPU's loss curve: every iteration's
#     loss within 0.1 nats of the CPU run's (bf16 activations against fp32: the curves drift
#     apart slowly; 0.1 nats is ~1% of the starting loss of 10.8);
#   * checkpoints cross backends (they hold the fp32 master weights): stop the CUDA run at
#     iteration 25, resume it on the CPU, and the losses of 26..50 are within 0.1 nats of the
#     uninterrupted CUDA run's; the same from the CPU to CUDA against the CPU run's;
#   * MT-NLG's head size 160 (hidden 320, 2 heads): 20 steps on CUDA follow the CPU's curve
#     within the same 0.1 nats;
#   * each attention backend (--attention-backend native|cudnn, the backend's default
#     until the trainer's --attention-backend reaches it): native runs 50 steps; in a +cudnn
#     build cuDNN's fused attention runs them too, says so in the log, stays within 0.01 nats
#     of the native run and 0.1 of the CPU; with --deterministic two runs of 10 steps
#     give identical losses.
# Tolerances are a first estimate written without a GPU: docs/cuda.md, Status.
# shellcheck source=tests/lib.sh disable=SC1091
. "${top_srcdir:-.}/tests/lib.sh"
set -e
GPT3D=${GPT3D:-src/gpt3d}
D=${GPT3D_TEST_DATA:-tests/_data}/kjv
g3_tmpdir

flags="--data-path $D/kjv_text_document --vocab-file $D/encoder.json --merge-file $D/vocab.bpe
 --split 98,1,1 --num-layers 2 --hidden-size 128 --num-attention-heads 4 --seq-length 128
 --micro-batch-size 4 --global-batch-size 8 --train-iters 50 --lr 1e-3 --lr-warmup-iters 5
 --lr-decay-style cosine --log-interval 1 --eval-iters 0 --eval-interval 1000"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"

features=$("$GPT3D" --version | sed -n 's/^features: //p')
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=1
fi

# --- the refusals ---------------------------------------------------------------------------
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 1 --run-dir "$TMPD/refuse" --device cuda
case "$features" in
*-cuda*)
    is "$rc" 2 "a build without CUDA refuses --device cuda with exit 2"
    like "$out" "built without CUDA; reconfigure with --with-cuda" "... saying how to get it"
    ;;
*+cuda*)
    if [ "$gpu" -eq 0 ]; then
        is "$rc" 1 "a CUDA build on a node without a usable GPU refuses --device cuda with exit 1"
        like "$out" "no usable CUDA device: .+--device cpu" "... with the driver's reason and the fix"
    else
        skip "a GPU is present: the refusals are not reachable here"
        skip "a GPU is present: the refusals are not reachable here"
    fi
    ;;
*)
    tap_result 1 "gpt3d --version lists +cuda or -cuda among its features (got '$features')"
    ;;
esac
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/bogus" --device tpu
is "$rc" 2 "--device tpu is a usage error"
like "$out" "cpu\|cuda|cpu, cuda|cpu.*cuda" "... naming the devices there are"

case "$features" in *+cuda*) ;; *) gpu=0 ;; esac
if [ "$gpu" -eq 0 ] || [ ! -f "$D/kjv_text_document.bin" ]; then
    why="no GPU here (nvidia-smi lists none) or no +cuda in this build ($features)"
    [ -f "$D/kjv_text_document.bin" ] || why="no KJV test corpus in $D"
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18; do skip "$why"; done
    done_testing
    exit
fi

# losses RUN_DIR: "iteration loss" per line from the run's metrics
losses() {
    sed -n 's/.*"event":"train","iteration":\([0-9]*\),.*"loss":\([-0-9.eE+naif]*\),.*/\1 \2/p' \
        "$1/metrics.jsonl"
}
# within A B FIRST LAST TOL: the largest |loss_A - loss_B| over iterations FIRST..LAST, and
# "ok" when it is <= TOL and every iteration is present in both
within() {
    losses "$1" >"$TMPD/a.txt"
    losses "$2" >"$TMPD/b.txt"
    awk -v f="$3" -v l="$4" -v tol="$5" '
        NR == FNR { a[$1] = $2; next }
        { b[$1] = $2 }
        END {
            worst = 0; n = 0
            for (i = f; i <= l; i++) {
                if (!(i in a) || !(i in b)) { print "missing iteration " i; exit }
                d = a[i] - b[i]; if (d < 0) d = -d
                if (d > worst || d != d) worst = d
                n++
            }
            printf "%s worst %.4f over %d iterations\n", (worst <= tol ? "ok" : "over"), worst, n
        }' "$TMPD/a.txt" "$TMPD/b.txt"
}

# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/cpu" --device cpu
is "$rc" 0 "50 steps on the CPU"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/cuda" --device cuda
is "$rc" 0 "50 steps on CUDA"
r=$(within "$TMPD/cuda" "$TMPD/cpu" 1 50 0.1)
diag "CUDA vs CPU, iterations 1-50: $r"
like "$r" "^ok" "CUDA follows the CPU loss curve within 0.1 nats for 50 steps ($r)"

# each attention backend
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/native" --device cuda --attention-backend native
is "$rc" 0 "50 steps on CUDA with the native attention kernels"
case "$features" in
*+cudnn*)
    # shellcheck disable=SC2086
    run "$GPT3D" train $flags --run-dir "$TMPD/cudnn" --device cuda --attention-backend cudnn
    is "$rc" 0 "50 steps on CUDA with cuDNN's fused attention"
    like "$out" "cuDNN fused attention" "the log says the attention ran on cuDNN"
    r=$(within "$TMPD/cudnn" "$TMPD/native" 1 50 0.01)
    diag "cuDNN vs native attention, iterations 1-50: $r"
    like "$r" "^ok" "cuDNN attention within 0.01 nats of the native kernels for 50 steps ($r)"
    r=$(within "$TMPD/cudnn" "$TMPD/cpu" 1 50 0.1)
    like "$r" "^ok" "cuDNN attention within 0.1 nats of the CPU for 50 steps ($r)"
    for i in 1 2; do
        # shellcheck disable=SC2086
        run "$GPT3D" train $flags --train-iters 10 --run-dir "$TMPD/det$i" --device cuda \
            --deterministic
        diag "deterministic run $i: $(printf '%s\n' "$out" | grep -m1 'attention' || true)"
    done
    is "$(losses "$TMPD/det1" | wc -l)" 10 "--deterministic: 10 steps"
    is "$(losses "$TMPD/det1")" "$(losses "$TMPD/det2")" \
        "--deterministic: two runs give identical losses"
    ;;
*)
    for _ in 1 2 3 4 5 6; do skip "no cuDNN in this build ($features)"; done
    ;;
esac

# checkpoints across backends: stop at 25 (exit 75), resume on the other backend
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/c2p" --save "$TMPD/c2p/ck" --exit-interval 25 \
    --device cuda
is "$rc" 75 "the CUDA run saves at iteration 25 and exits 75"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/c2p" --save "$TMPD/c2p/ck" --load "$TMPD/c2p/ck" \
    --device cpu
is "$rc" 0 "the CPU resumes the CUDA checkpoint"
r=$(within "$TMPD/c2p" "$TMPD/cuda" 26 50 0.1)
like "$r" "^ok" "CUDA -> CPU: iterations 26-50 within 0.1 nats of the CUDA run ($r)"

# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/p2c" --save "$TMPD/p2c/ck" --exit-interval 25 \
    --device cpu
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/p2c" --save "$TMPD/p2c/ck" --load "$TMPD/p2c/ck" \
    --device cuda
is "$rc" 0 "CUDA resumes the CPU checkpoint"
r=$(within "$TMPD/p2c" "$TMPD/cpu" 26 50 0.1)
like "$r" "^ok" "CPU -> CUDA: iterations 26-50 within 0.1 nats of the CPU run ($r)"

# head size 160 (the attention kernels' largest; MT-NLG's 20480 / 128)
hs160="--hidden-size 320 --num-attention-heads 2 --train-iters 20"
# shellcheck disable=SC2086
run "$GPT3D" train $flags $hs160 --run-dir "$TMPD/cpu160" --device cpu
is "$rc" 0 "head size 160: 20 steps on the CPU"
# shellcheck disable=SC2086
run "$GPT3D" train $flags $hs160 --run-dir "$TMPD/cuda160" --device cuda
is "$rc" 0 "head size 160: 20 steps on CUDA"
r=$(within "$TMPD/cuda160" "$TMPD/cpu160" 1 20 0.1)
like "$r" "^ok" "head size 160: CUDA follows the CPU loss curve within 0.1 nats ($r)"
done_testing
