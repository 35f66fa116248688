#!/bin/sh
# TensorBoard event files (src/metrics/tensorboard.c), read back by an independent reader
# (tests/train/tb_read.py: struct, its own CRC-32C and protocol buffer decoder):
#   * one rank, every --log-*-to-tensorboard flag: every record's two CRCs are right, the first
#     is the file_version, and each scalar at each step equals the metrics file's value
#     (lm loss, learning rate, batch size, grad norm by iteration, samples and tokens;
#     validation loss and perplexity; iteration time, tokens/s, TFLOP/s, MFU; the timers);
#   * --tensorboard-log-interval 3 writes the per-iteration scalars every third iteration;
#   * a run stopped at iteration 4 (exit 75) whose file is then cut inside its last record is
#     read up to the cut, and the run resumed with --load adds a second file whose curve
#     goes on from iteration 5 to 10, every value still the metrics file's;
#   * a corrupted byte is caught by the reader's CRC check;
#   * TP 2 x PP 2 under mpirun: one file, written by rank 0, with the metrics' values;
#   * flag errors: exit 2 naming the flag; a directory that cannot be made: exit 1.
# (top_srcdir, top_builddir, GPT3D, MPIRUN, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_small_setup 2 --global-batch-size 4 --train-iters 10 --eval-iters 1 --eval-interval 4 --distributed-timeout-minutes 2
py=${PYTHON_REF:-/usr/bin/python3}
rd="$top_srcdir/tests/train/tb_read.py"

# train NAME [FLAGS...]: one rank, run directory $TMPD/NAME, events in $TMPD/NAME/tb
train() {
    _n=$1
    shift
    # shellcheck disable=SC2086
    run "$GPT3D" train $flags --run-dir "$TMPD/$_n" --tensorboard-dir "$TMPD/$_n/tb" "$@"
    case "$rc" in 0|75) ;; *) printf '%s\n' "$out" | tail -8 | sed 's/^/#   /' ;; esac
}
# steps DIR TAG: the steps of TAG in DIR's files, in file order, one line
steps() {
    "$py" "$rd" scalars "$1" | awk -F'\t' -v t="$2" '$1 == t { printf "%s ", $2 }'
}

train all --log-validation-ppl-to-tensorboard --timing-log-level 1 --log-timers-to-tensorboard \
    --log-memory-to-tensorboard
is "$rc" 0 "one rank with every TensorBoard flag exits 0"
is "$(find "$TMPD/all/tb" -name 'events.out.tfevents.*' | wc -l | tr -d ' ')" 1 "one events file"
like "$(basename "$TMPD"/all/tb/events.out.tfevents.*)" \
    "^events\.out\.tfevents\.[0-9]{10}\.$(hostname | sed 's/\./\\./g')\.[0-9]+\.0$" \
    "named events.out.tfevents.TIMESTAMP.HOST.PID.0"
run "$py" "$rd" records "$TMPD"/all/tb/events.out.tfevents.*
is "$rc" 0 "every record's length and data CRCs are right ($out)"
run "$py" "$rd" compare "$TMPD/all/tb" "$TMPD/all/metrics.jsonl"
is "$rc" 0 "each scalar at each step equals the metrics file's value ($(printf '%s\n' "$out" | head -n 1))"
for t in "lm loss" "lm loss vs samples" "lm loss vs tokens" learning-rate "learning-rate vs samples" \
    batch-size grad-norm "lm loss validation" "lm loss validation ppl" \
    "lm loss validation vs samples" iteration-time tokens-per-sec throughput mfu \
    forward-backward-time optimizer-time mem-max-rss-bytes; do
    like "$out" "tag: $t\$" "tag '$t' written"
done
is "$(steps "$TMPD/all/tb" "lm loss")" "1 2 3 4 5 6 7 8 9 10 " "lm loss at every iteration"
is "$(steps "$TMPD/all/tb" "lm loss vs tokens")" "128 256 384 512 640 768 896 1024 1152 1280 " \
    "lm loss vs tokens: 4 samples x 32 tokens per iteration"
is "$(steps "$TMPD/all/tb" "lm loss validation")" "4 8 10 " "validation at 4, 8 and the end"

train iv --tensorboard-log-interval 3
is "$rc" 0 "--tensorboard-log-interval 3 exits 0"
is "$(steps "$TMPD/iv/tb" "lm loss") / $(steps "$TMPD/iv/tb" "grad-norm")" "3 6 9  / 3 6 9 " \
    "the per-iteration scalars every third iteration"
is "$(steps "$TMPD/iv/tb" "iteration-time")" "1 2 3 4 5 6 7 8 9 10 " "the throughput at every progress line"
run "$py" "$rd" compare "$TMPD/iv/tb" "$TMPD/iv/metrics.jsonl"
is "$rc" 0 "... and every value the metrics file's"
is "$(printf '%s\n' "$out" | grep '^tag: ' | grep -v '^tag: iteration-time$' | grep -c -e '-time$' -e ' ppl' -e 'mem-')" 0 \
    "no perplexity, timers or memory without their flags"

# stopped at 4, the file cut inside its last record, resumed to 10
train rs --save "$TMPD/rs/ck" --exit-interval 4
is "$rc" 75 "--exit-interval 4 stops with 75"
f1=$(ls "$TMPD"/rs/tb/events.out.tfevents.*)
run "$py" "$rd" records "$f1"
n1=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) records.*/\1/p')
size=$(wc -c < "$f1")
head -c $((size - 7)) "$f1" > "$TMPD/cut" && mv "$TMPD/cut" "$f1"
run "$py" "$rd" records "$f1"
is "$rc" 0 "a file cut inside its last record is read"
like "$out" ": $((n1 - 1)) records, both CRCs of each right, cut at byte [0-9]+" \
    "... up to the cut: $((n1 - 1)) of $n1 records"
is "$(steps "$TMPD/rs/tb" "lm loss")" "1 2 3 4 " "the stopped run's curve ends at iteration 4"
train rs --save "$TMPD/rs/ck" --load "$TMPD/rs/ck"
is "$rc" 0 "the resumed run exits 0"
is "$(find "$TMPD/rs/tb" -name 'events.out.tfevents.*' | wc -l | tr -d ' ')" 2 "it adds a second file"
f2=$(find "$TMPD/rs/tb" -name 'events.out.tfevents.*' ! -path "$f1")
is "$(printf '%s\n%s\n' "$f2" "$f1" | sort | head -n 1)" "$f1" "the new file sorts after the first (TensorBoard's order)"
run "$py" "$rd" records "$f2"
is "$rc" 0 "the new file's records are right ($out)"
is "$(steps "$TMPD/rs/tb" "lm loss")" "1 2 3 4 5 6 7 8 9 10 " "one curve: 1 to 4, then 5 to 10"
run "$py" "$rd" compare "$TMPD/rs/tb" "$TMPD/rs/metrics.jsonl"
is "$rc" 0 "both files' scalars equal the (appended) metrics file's values ($(printf '%s\n' "$out" | head -n 1))"

# the reader catches a corrupted byte
cp "$f2" "$TMPD/bad"
printf 'Z' | dd of="$TMPD/bad" bs=1 seek=100 conv=notrunc 2>/dev/null
run "$py" "$rd" records "$TMPD/bad"
is "$rc" 1 "a corrupted byte fails the reader"
like "$out" "CRC is 0x[0-9a-f]{8}, not 0x[0-9a-f]{8}" "... on a CRC"

if g3_have_mpirun; then
    # shellcheck disable=SC2086
    run g3_mpirun -x OMP_NUM_THREADS -np 4 "$GPT3D" train $flags --run-dir "$TMPD/mp" \
        --tensorboard-dir "$TMPD/mp/tb" --tensor-model-parallel-size 2 \
        --pipeline-model-parallel-size 2 --log-validation-ppl-to-tensorboard
    is "$rc" 0 "TP 2 x PP 2 with --tensorboard-dir exits 0"
    is "$(find "$TMPD/mp/tb" -name 'events.out.tfevents.*' | wc -l | tr -d ' ')" 1 "one events file (rank 0)"
    run "$py" "$rd" compare "$TMPD/mp/tb" "$TMPD/mp/metrics.jsonl"
    is "$rc" 0 "TP 2 x PP 2: each scalar equals the metrics file's value ($(printf '%s\n' "$out" | head -n 1))"
else
    skip "mpirun not found: the 4-rank events file is not checked"
fi

# shellcheck disable=SC2086
run "$GPT3D" train $flags --log-timers-to-tensorboard --tensorboard-dir "$TMPD/x"
is "$rc" 2 "--log-timers-to-tensorboard without --timing-log-level: usage error"
like "$out" "add --timing-log-level 1 or 2" "... saying what to add"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --log-validation-ppl-to-tensorboard
is "$rc" 2 "a --log-*-to-tensorboard flag without --tensorboard-dir: usage error"
like "$out" "need --tensorboard-dir DIR" "... naming the flag"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --tensorboard-dir "$TMPD/x" --tensorboard-log-interval 0
is "$rc" 2 "--tensorboard-log-interval 0: usage error"
: > "$TMPD/file"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --run-dir "$TMPD/nd" --tensorboard-dir "$TMPD/file/tb"
is "$rc" 1 "a --tensorboard-dir that cannot be created: exit 1"
like "$out" "--tensorboard-dir .*/file/tb: cannot create the directory" "... naming it"

done_testing
