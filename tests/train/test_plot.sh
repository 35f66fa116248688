#!/bin/sh
# gpt3d plot (src/metrics/plot.c), checked by tests/train/plot_check.py: the SVG parses as XML,
# has one path per curve, and every point maps back to the metrics file's value:
#   * one run (its directory, or its metrics file) by iteration, samples and tokens, on a
#     linear and a log scale, both curves or one;
#   * a resumed run's metrics (an iteration logged twice): the later record is drawn;
#   * an ablation directory of gpt3d-submit (its variants file) and a directory of runs
#     without one: every run, one colour each, named in the legend;
#   * errors: a missing path, a bad metrics line (file and line named), nothing to draw.
# (top_srcdir, top_builddir, GPT3D, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_small_setup 2 --global-batch-size 4 --train-iters 8 --eval-iters 1 --eval-interval 3
py=${PYTHON_REF:-/usr/bin/python3}
pc="$top_srcdir/tests/train/plot_check.py"

# train DIR [FLAGS...]: one rank, run directory DIR
train() {
    _d=$1
    shift
    # shellcheck disable=SC2086
    run "$GPT3D" train $flags --run-dir "$_d" "$@"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -8 | sed 's/^/#   /'
}
# check SVG X CURVES NAME=METRICS... (plot_check.py): rc and out
check() {
    run "$py" "$pc" "$@"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed 's/^/#   /'
}

train "$TMPD/r1"
is "$rc" 0 "a run to plot"
m1="$TMPD/r1/metrics.jsonl"
for x in iteration samples tokens; do
    run "$GPT3D" plot --x "$x" --output "$TMPD/$x.svg" "$TMPD/r1"
    is "$rc" 0 "plot --x $x exits 0"
    check "$TMPD/$x.svg" "$x" both "r1=$m1"
    is "$rc" 0 "--x $x: two paths, every point the metrics' value"
done
run "$GPT3D" plot --log-y --curves training --output "$TMPD/log.svg" "$m1"
is "$rc" 0 "plot --log-y --curves training of a metrics file exits 0"
like "$out" "wrote .*log.svg \(1 curve\)" "... saying what it wrote"
check "$TMPD/log.svg" iteration training "$m1=$m1"
is "$rc" 0 "--log-y: one path, every point the metrics' value on the log scale"
run "$GPT3D" plot --curves validation --output - "$TMPD/r1"
is "$rc" 0 "--output - writes to stdout"
printf '%s\n' "$out" > "$TMPD/stdout.svg"
check "$TMPD/stdout.svg" iteration validation "r1=$m1"
is "$rc" 0 "... the validation curve alone"

# a resumed run: iteration 5 logged by the killed run and again after the resume
mkdir -p "$TMPD/rs"
{
    grep -v '"event":"end"' "$m1" | awk '/"iteration":6,/ { exit } { print }' |
        sed 's/"loss":\([0-9.]*\)/"loss":9.5/'
    echo '{"event":"load","iteration":4,"consumed_samples":16}'
    grep '"iteration":[5-8],' "$m1"
    printf '{"event":"train","iteration":9,"loss":1.0'
} > "$TMPD/rs/metrics.jsonl"
run "$GPT3D" plot --output "$TMPD/rs.svg" "$TMPD/rs"
is "$rc" 0 "plot of a resumed run's metrics (a last line cut) exits 0"
check "$TMPD/rs.svg" iteration both "rs=$TMPD/rs/metrics.jsonl"
is "$rc" 0 "the later record of iteration 5 is drawn, the cut line is not"

# validations between the records that give the samples: interpolated, as with a ramp-up
cat > "$TMPD/ramp.jsonl" <<'END'
{"event":"start","seq_length":16}
{"event":"train","iteration":4,"consumed_samples":8,"loss":6.0}
{"event":"eval","split":"valid","iteration":2,"loss":6.5,"ppl":665.1,"final":false}
{"event":"eval","split":"valid","iteration":6,"loss":5.5,"ppl":244.7,"final":false}
{"event":"train","iteration":8,"consumed_samples":24,"loss":5.0}
{"event":"end","iteration":8,"consumed_samples":24,"loss":5.0,"valid_loss":null}
END
run "$GPT3D" plot --x tokens --output "$TMPD/ramp.svg" "$TMPD/ramp.jsonl"
is "$rc" 0 "plot --x tokens of a run with a growing batch exits 0"
check "$TMPD/ramp.svg" tokens both "$TMPD/ramp.jsonl=$TMPD/ramp.jsonl"
is "$rc" 0 "the validations' samples interpolated between the records around them (4 at 2, 16 at 6)"

# an ablation directory: the variants file gives the runs and their order
train "$TMPD/abl/b-high" --lr 6e-3
train "$TMPD/abl/a-low" --lr 1e-3
printf 'b-high\t--lr 6e-3\na-low\t--lr 1e-3\n' > "$TMPD/abl/variants"
run "$GPT3D" plot --x samples --output "$TMPD/abl.svg" "$TMPD/abl"
is "$rc" 0 "plot of an ablation directory exits 0"
check "$TMPD/abl.svg" samples both "b-high=$TMPD/abl/b-high/metrics.jsonl" "a-low=$TMPD/abl/a-low/metrics.jsonl"
is "$rc" 0 "four paths in the variants' order, every point the metrics' value"
like "$(cat "$TMPD/abl.svg")" '<text [^>]*>b-high training</text>' "the legend names the variants"
rm "$TMPD/abl/variants"
run "$GPT3D" plot --output "$TMPD/dirs.svg" "$TMPD/abl" "$TMPD/r1"
is "$rc" 0 "plot of a directory of runs and a run exits 0"
check "$TMPD/dirs.svg" iteration both "a-low=$TMPD/abl/a-low/metrics.jsonl" "b-high=$TMPD/abl/b-high/metrics.jsonl" "r1=$m1"
is "$rc" 0 "without a variants file: the runs by name, then the next argument"
colors=$(grep -o 'class="series"[^>]*stroke="#[0-9a-f]*"' "$TMPD/dirs.svg" | sed 's/.*stroke="//' | sort -u | wc -l | tr -d ' ')
is "$colors" 3 "one colour per run"

run "$GPT3D" plot --output "$TMPD/no.svg" "$TMPD/missing"
is "$rc" 1 "a missing run: exit 1"
like "$out" "missing: no such metrics file or directory" "... naming it"
printf '{"event":"start","seq_length":32}\nnot json\n' > "$TMPD/bad.jsonl"
run "$GPT3D" plot --output "$TMPD/no.svg" "$TMPD/bad.jsonl"
is "$rc" 1 "a bad metrics line: exit 1"
like "$out" "bad.jsonl, line 2: not a JSON object" "... naming the file and line"
printf '{"event":"start","seq_length":32}\n' > "$TMPD/empty.jsonl"
run "$GPT3D" plot --output "$TMPD/no.svg" "$TMPD/empty.jsonl"
is "$rc" 1 "nothing to draw: exit 1"
like "$out" "nothing to draw" "... saying so"
run "$GPT3D" plot --x epochs "$TMPD/r1"
is "$rc" 2 "--x epochs: usage error"
run "$GPT3D" plot
is "$rc" 2 "no run: usage error"
run "$GPT3D" help plot
like "$out" "Usage: gpt3d plot .*RUN" "help plot shows the usage"

done_testing
