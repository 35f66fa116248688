#!/bin/sh
# gpt3d train end to end on a small synthetic corpus (a byte-level GPT-2-style vocabulary made
# by tests/train/mkdata): progress lines and metrics, the loss going down, validation, the text
# sample; then every bad input the issue lists gets one clear error before any work.
# (top_srcdir, top_builddir, GPT3D come from make check; run sets rc and out.  The flag
# strings $data, $model ... are split into words on purpose: SC2086.)
# shellcheck disable=SC2154,SC2086
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
D="$TMPD/data"

# ---- a corpus: 400 short verses from five templates
g3_byte_corpus "$D" mixed5 400
data=$g3_data
model="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --make-vocab-size-divisible-by 8"

# ---- a short run
run "$GPT3D" train $data $model --micro-batch-size 4 --global-batch-size 8 --train-iters 40 \
    --lr 3e-3 --lr-warmup-iters 4 --lr-decay-style cosine --min-lr 3e-4 --log-interval 10 \
    --eval-interval 20 --eval-iters 2 --sample-tokens 24 --prompt "And God" --top-k 5 \
    --run-dir "$TMPD/run"
is "$rc" 0 "a 40-iteration run exits 0"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -20 | sed 's/^/#   /'
like "$out" 'vocabulary 261 \(padded 264\)' "the banner reports the vocabulary and its padding"
like "$out" ' iteration +10/ +40 \| consumed samples: +80 \| elapsed time per iteration \(ms\): [0-9.]+ \| learning rate: [0-9.E+-]+ \| global batch size: +8 \| lm loss: [0-9.E+-]+ \| grad norm: [0-9.]+ \| tokens/s: [0-9]+ \| TFLOP/s: [0-9.]+ \| MFU: [0-9.]+% \|' \
    "progress lines carry iteration/total, samples, ms, lr, batch, loss, grad norm, tokens/s, TFLOP/s, MFU"
like "$out" 'validation loss at iteration 20 \| lm loss value: ' "validation runs at --eval-interval"
like "$out" 'validation loss at the end of training, iteration 40 \| lm loss value: [0-9.E+-]+ \| lm loss PPL' \
    "the final validation loss is printed"
like "$out" 'sample \(top-k 5, temperature 1, 24 tokens after a [0-9]+-token prompt\):' "a text sample follows"
text=$(printf '%s\n' "$out" | sed -n '/^sample (/{n;p;}')
like "$text" '^And God' "the sample starts with the prompt"
distinct=$(printf '%s' "${text#And God}" | fold -w1 | sort -u | wc -l)
ok=$([ "$distinct" -ge 5 ] && echo 0 || echo 1)
is "$ok" 0 "the generated text is not one repeated token ($distinct distinct characters: '${text#And God}')"
first=$(printf '%s\n' "$out" | sed -n 's/.*iteration  *10\/.*lm loss: \([0-9.E+-]*\) .*/\1/p')
last=$(printf '%s\n' "$out" | sed -n 's/.*iteration  *40\/.*lm loss: \([0-9.E+-]*\) .*/\1/p')
ok=$(awk -v a="$first" -v b="$last" 'BEGIN { print (b < a - 1.0) ? 0 : 1 }')
is "$ok" 0 "the training loss falls by more than 1 nat (iterations 1-10: $first, 31-40: $last)"

m="$TMPD/run/metrics.jsonl"
is "$("$GPT3D" metrics "$m" --event train --fields iteration | wc -l | tr -d ' ')" 4 \
    "metrics: one train record per progress line"
is "$("$GPT3D" metrics "$m" --event eval --fields iteration | wc -l | tr -d ' ')" 2 \
    "metrics: the two validation runs"
like "$(head -n 1 "$m")" '"event":"start".*"padded_vocab_size":264' "metrics: a start record with the model"
like "$(grep '"iteration":40,' "$m" | head -n 1)" '"consumed_samples":320,"ms_per_iter":[0-9.]+,"lr":[0-9.e-]+,"global_batch_size":8,"loss":[0-9.]+,"grad_norm":[0-9.]+,"tokens_per_s":[0-9.]+,"tflops":[0-9.e-]+,"mfu":[0-9.e-]+' \
    "metrics: the same fields as the progress line"
like "$(tail -n 1 "$m")" '"event":"end".*"valid_loss":[0-9.]+' "metrics: an end record with the validation loss"
py=${PYTHON_REF:-/usr/bin/python3}
if ! "$py" -c 'import json' >/dev/null 2>&1; then
    skip "no Python to parse JSON with"
elif "$py" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$m"; then
    tap_result 0 "metrics: every line is valid JSON"
else
    tap_result 1 "metrics: every line is valid JSON"
fi

# ---- the same run with a ramp-up, sample-based, recomputing activations
run "$GPT3D" train $data $model --micro-batch-size 2 --global-batch-size 8 --train-samples 96 \
    --rampup-batch-size 2 2 32 --lr-warmup-samples 8 --recompute-activations --log-interval 1 \
    --eval-iters 1 --metrics-file "$TMPD/ramp.jsonl" --sample-tokens 8 --top-k 0 --temperature 0.9
is "$rc" 0 "a sample-based run with --rampup-batch-size and --recompute-activations exits 0"
like "$out" 'sample \(top-k 0, temperature 0.9, 8 tokens after' "--top-k 0 samples among all tokens (Megatron-LM's meaning), not greedily"
like "$out" 'iteration +1/ +[0-9]+ \| consumed samples: +2 \|.*global batch size: +2 \|' "the ramp starts at 2"
like "$out" 'global batch size: +4 \|' "... grows by 2"
like "$(printf '%s\n' "$out" | grep ' iteration  *[0-9]*/' | tail -n 1)" 'global batch size: +8 \|' "... and ends at the global batch"

# ---- a NaN loss (attention scores overflow) or gradient norm (LayerNorm variance overflows)
# stops training with the iteration and exit code 79
run "$GPT3D" train $data $model --micro-batch-size 2 --train-iters 3 --init-method-std 1e18 \
    --eval-iters 0 --run-dir "$TMPD/nan"
is "$rc" 79 "a NaN loss exits 79"
like "$out" 'iteration 1: the training loss is NaN; stopping before the update' \
    "the error names the iteration"
run "$GPT3D" train $data $model --micro-batch-size 2 --train-iters 3 --init-method-std 1e25 \
    --eval-iters 0 --run-dir "$TMPD/nan"
is "$rc" 79 "a NaN gradient norm exits 79"
like "$out" 'iteration 1: the gradient norm is NaN \(loss [0-9.]+\); stopping before the update' \
    "the error names the iteration"

# ---- bad input: one clear error, before any work
expect() {  # expect CODE REGEX WHAT ARGS...
    code=$1 re=$2 what=$3
    shift 3
    run "$GPT3D" train "$@"
    is "$rc" "$code" "$what: exit $code"
    like "$out" "$re" "$what: the message says what to fix"
    is "$(printf '%s\n' "$out" | grep -c '^error')" 1 "$what: exactly one error"
}
expect 2 'hidden-size 64 is not divisible by --num-attention-heads 5' "hidden not divisible by heads" \
    $data --num-layers 2 --hidden-size 64 --num-attention-heads 5 --train-iters 1
expect 2 'hidden-size 1073741824 is too large for the default --ffn-hidden-size .*pass --ffn-hidden-size' \
    "a hidden size whose default FFN size (4 x hidden) overflows" \
    $data --num-layers 1 --hidden-size 1073741824 --num-attention-heads 1 --train-iters 1
expect 2 'seq-length 128 is longer than --max-position-embeddings 64' "sequence longer than positions" \
    $data $model --seq-length 128 --max-position-embeddings 64 --train-iters 1
expect 2 'global-batch-size 10 is not divisible by --micro-batch-size 4' "global batch not divisible" \
    $data $model --micro-batch-size 4 --global-batch-size 10 --train-iters 1
expect 2 'exactly one of --train-iters and --train-samples' "no training length" $data $model
expect 1 "$D/nothing.bin does not exist" "missing data" \
    --data-path "$D/nothing" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" $model --train-iters 1
expect 1 "$D/novocab.json does not exist" "missing vocabulary" \
    --data-path "$D/verses" --vocab-file "$D/novocab.json" --merge-file "$D/merges.txt" $model --train-iters 1
GPT3D_DATA_DIR="$TMPD/empty" expect 1 "built-in KJV corpus is missing .*run 'gpt3d corpus'" \
    "missing built-in corpus" $model --train-iters 1
expect 2 "impossible layout: the job's 1 rank cannot be split into --tensor-model-parallel-size 2" \
    "TP 2 on one rank" $data $model --train-iters 1 --tensor-model-parallel-size 2
expect 2 "impossible layout: the job's 1 rank cannot be split into --tensor-model-parallel-size 65536 x --pipeline-model-parallel-size 65536 = 4294967296 ranks" \
    "TP x PP past an int (no division by zero)" $data $model --train-iters 1 \
    --tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536
expect 2 'save-interval, --keep-last, --no-save-optim and --async-save need --save DIR' "--save-interval without --save" \
    $data $model --train-iters 1 --save-interval 1 --load "$TMPD/ck"
expect 2 'rampup-batch-size needs sample-based training' "ramp-up with --train-iters" \
    $data $model --train-iters 5 --rampup-batch-size 4 4 100
expect 2 '--seed -1 is out of range \(0 \.\. 4294967295\)' "a negative --seed (#21.4)" \
    $data $model --train-iters 1 --seed -1
expect 2 '--seed 4294967296 is out of range' "a --seed past 32 bits" $data $model --train-iters 1 --seed 4294967296
expect 2 'this run needs [0-9.]+ GiB per rank .*--micro-batch-size [0-9]+ x --seq-length 2147483647' \
    "--seq-length 2147483647 (no overflow: the memory estimate refuses it before anything is allocated)" \
    $data $model --seq-length 2147483647 --max-position-embeddings 2147483647 --train-iters 1 --eval-iters 0 --run-dir "$TMPD/big"
expect 2 'this run needs [0-9.]+ GiB per rank .*lower --micro-batch-size' "--micro-batch-size and --global-batch-size 1000000000: refused at once (#21.4)" \
    $data $model --micro-batch-size 1000000000 --global-batch-size 1000000000 --train-iters 1 --eval-iters 0 --run-dir "$TMPD/big"
expect 2 'this run needs [0-9.]+ GiB per rank .* lower --micro-batch-size' "more memory than the machine has (gpt3d plan's estimate, before allocating)" \
    $data $model --micro-batch-size 65536 --train-iters 1 --eval-iters 0 --run-dir "$TMPD/big"
if [ ! -e "$TMPD/ck" ]; then tap_result 0 "nothing was written for the refused runs"; else
    tap_result 1 "nothing was written for the refused runs"; fi

done_testing
