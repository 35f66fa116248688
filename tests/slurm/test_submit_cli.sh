#!/bin/bash
# gpt3d-submit and gpt3d-train.sbatch without a cluster: usage errors, help,
# --dry-run, the run directory checks, and shellcheck on the suite's scripts.
# (top_srcdir and top_builddir come from make check.)
# shellcheck disable=SC2154
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/slurm/submit_lib.sh
. "$top_srcdir/tests/slurm/submit_lib.sh"
set -eo pipefail
# (A grep over a command's output that may lack the lines ends in "|| true": the results
# that follow report it; finding nothing must not end the test.)


run "$SUBMIT" --help
is "$rc" 0 "--help exits 0"
like "$out" "Usage: gpt3d-submit \[OPTIONS\] RUN_DIR" "--help shows the usage"
maxf=$(sed -n 's/^G3_MAX_FAILURES_DEFAULT=\([0-9]*\) .*/\1/p' "$top_srcdir/sbatch/gpt3d-train.sbatch")
like "$out" "progress \(default $maxf\)" "--help gives the job script's default of --max-failures ($maxf), made from one line"
is "$(grep -l '^G3_LIVE_STATES=' "$top_srcdir/sbatch/gpt3d-submit.in" "$top_srcdir/sbatch/gpt3d-train.sbatch" \
        "$top_srcdir"/sbatch/lib/*.sh | sed "s|^$top_srcdir/||")" "sbatch/lib/common.sh" \
    "the list of live job states is in one place, the library both scripts source"
is "$(cat "$top_srcdir/sbatch/gpt3d-submit.in" "$top_srcdir/sbatch/gpt3d-train.sbatch" "$top_srcdir"/sbatch/lib/*.sh |
      grep -c 'PENDING|RUNNING' || true)" "0" "... and no script spells out a list of its own"
run "$SUBMIT" --version
like "$out" "^gpt3d-submit \(gpt3d\) [0-9]+\.[0-9]+\.[0-9]+$" "--version names the version"

run "$SUBMIT"
is "$rc" 2 "no run directory is a usage error (exit 2)"
like "$out" "no run directory given" "... and says so"
run "$SUBMIT" --nodse 2 "$TMPD/r"
is "$rc" 2 "an unknown option exits 2"
like "$out" "unknown option '--nodse' \(did you mean '--nodes'\?\)" "... naming it, with a suggestion"
run "$SUBMIT" --nodes two "$TMPD/r" -- --train-iters 1
is "$rc" 2 "--nodes two exits 2"
like "$out" "--nodes 'two' is not a node count" "... naming the value"
run "$SUBMIT" --chain 0 "$TMPD/r"
is "$rc" 2 "--chain 0 exits 2"
run "$SUBMIT" --signal-seconds 70000 "$TMPD/r"
is "$rc" 2 "--signal-seconds beyond 65535 exits 2"
run "$SUBMIT" --time
is "$rc" 2 "an option without its value exits 2"
like "$out" "option --time needs a value" "... and names the option"
run submit "$TMPD/r"
is "$rc" 2 "a new run without gpt3d train flags exits 2"
like "$out" "give the gpt3d train flags after '--'" "... and says how to give them"
run submit "$TMPD/r" -- --train-iters 10 --save "$TMPD/ck"
is "$rc" 2 "--save among the train flags is refused (exit 2)"
like "$out" "leave --save, --load and --run-dir out" "... because the run directory holds the checkpoints"
run submit "$TMPD/r" -- --run-dir="$TMPD/x"
is "$rc" 2 "--run-dir among the train flags is refused (exit 2)"
run submit "$TMPD/r" -- --config "$TMPD/missing.conf"
is "$rc" 2 "a missing --config file is refused"
like "$out" "config file '$TMPD/missing.conf' \(--config\) does not exist" "... naming the file"
mkdir -p "$TMPD/notrun" && touch "$TMPD/notrun/data"
run submit "$TMPD/notrun" -- --train-iters 10
is "$rc" 1 "a non-empty directory that is not a run is refused"
like "$out" "is not empty and is not a gpt3d run" "... with the reason"
is "$(ls "$TMPD/notrun")" data "... and left as it was"
run "$SUBMIT" --status "$TMPD/notrun"
is "$rc" 1 "--status on a directory that is not a run exits 1"
run "$SUBMIT" --job-script "$TMPD/none.sbatch" --train-command x "$TMPD/r2" -- --train-iters 1
is "$rc" 1 "a missing job script is an error"
like "$out" "job script '$TMPD/none.sbatch' is missing" "... naming it"

# --dry-run creates nothing and prints the chain it would submit.
printf 'train-iters = 10\n' >"$TMPD/train.conf"
run submit --dry-run --chain 2 -N 4 -t 30 --signal-seconds 120 --sbatch-arg=--qos=high "$TMPD/dry" -- \
    --config "$TMPD/train.conf" --micro-batch-size 4
is "$rc" 0 "--dry-run exits 0"
is "$( [ -e "$TMPD/dry" ] && echo exists || echo absent)" absent "--dry-run creates nothing"
like "$out" "would create run $TMPD/dry" "--dry-run says what it would create"
first=$(printf '%s\n' "$out" | grep '^sbatch' | sed -n 1p) || true
second=$(printf '%s\n' "$out" | grep '^sbatch' | sed -n 2p) || true
like "$first" "--nodes=4 --time=30 --signal=B:USR2@120 --qos=high $TMPD/dry/gpt3d-train.sbatch $TMPD/dry\s*$" \
    "the first job gets the chain's options and the run directory"
like "$first" "--job-name=gpt3d-dry --chdir=$TMPD/dry --output=$TMPD/dry/logs/%x-%j.out --open-mode=append" \
    "jobs are named for the run and log into RUN/logs, appending"
like "$second" "--dependency=afterany:JOB1 " "the second job depends on the first (afterany)"
is "$(printf '%s\n' "$out" | grep -c '^sbatch')" 2 "--chain 2 gives two jobs"

# Elastic sizes.
run submit --dry-run --sizes 4,2 "$TMPD/el" -- --global-batch-size 8 --micro-batch-size 2
is "$rc" 0 "--sizes 4,2 with a global batch that fits both sizes is accepted"
like "$out" "--nodes=2-4 --exclusive " "--sizes asks each job for --nodes=MIN-MAX --exclusive"
run submit --dry-run --sizes 2,3 "$TMPD/el" -- --global-batch-size 8 --micro-batch-size 4
is "$rc" 2 "a size that cannot keep the global batch is refused (exit 2)"
like "$out" "at 3 nodes DP = 3, and the global batch 8 is not a multiple of micro-batch 4 x DP 3" \
    "... naming the size, DP and the batch"
printf 'global-batch-size = 12   # from the config file\nmicro-batch-size = 2\n' >"$TMPD/el.conf"
run submit --dry-run --sizes 2,3 "$TMPD/el" -- --config "$TMPD/el.conf"
is "$rc" 0 "--sizes takes the batch sizes from the --config file"
run submit --dry-run --sizes 2,4 --ntasks-per-node 4 "$TMPD/el" -- --config "$TMPD/el.conf" --tensor-model-parallel-size 3
is "$rc" 2 "a size whose ranks do not split into TP x PP groups is refused"
like "$out" "2 nodes x 4 ranks = 8 ranks" "... with the arithmetic"
run submit --dry-run --sizes 2,4 "$TMPD/el" -- --train-iters 10
is "$rc" 2 "--sizes without a global batch is refused"
like "$out" "--sizes needs --global-batch-size" "... saying what is missing"
run submit --dry-run --sizes 2,4 --nodes 4 "$TMPD/el" -- --global-batch-size 8
is "$rc" 2 "--sizes with --nodes is a usage error"
run submit --dry-run --sizes 2,x "$TMPD/el" -- --global-batch-size 8
is "$rc" 2 "--sizes 2,x is a usage error"

# Ablation tables.
printf '# name flags\nbase\nlr-high --lr 0.5  # comment\n\nshort --train-iters 10\n' >"$TMPD/abl.txt"
run submit --dry-run --ablations "$TMPD/abl.txt" --array-throttle 3 -N 2 "$TMPD/abl" -- --train-iters 20
is "$rc" 0 "--ablations --dry-run exits 0"
like "$out" "would create run $TMPD/abl/lr-high with: --train-iters 20 --lr 0.5" "... one run per variant, its flags after the common ones"
like "$out" "sbatch --parsable --array=0\\\\,1\\\\,2%3 --job-name=gpt3d-abl --chdir=$TMPD/abl --output=$TMPD/abl/logs/%x-%A_%a.out --open-mode=append --nodes=2 $TMPD/abl/gpt3d-train.sbatch $TMPD/abl" \
    "... submitted as one job array, throttled with %N"
is "$( [ -e "$TMPD/abl" ] && echo exists || echo absent)" absent "... and creates nothing"
run submit --dry-run --ablations "$TMPD/abl.txt" "$TMPD/abl" -- --tensorboard-dir "$TMPD/tb/" --tensorboard-dir=tb
like "$out" "would create run $TMPD/abl/lr-high with: --tensorboard-dir $TMPD/tb/lr-high --tensorboard-dir=tb --lr 0.5" \
    "an absolute --tensorboard-dir D becomes D/VARIANT, a relative one stays (#34)"
printf 'a --lr 1\na --lr 2\n' >"$TMPD/dup.txt"
run submit --dry-run --ablations "$TMPD/dup.txt" "$TMPD/abl" -- --train-iters 20
is "$rc" 2 "a table naming a variant twice is refused (exit 2)"
like "$out" "names the variant 'a' twice" "... naming it"
printf 'a/b --lr 1\n' >"$TMPD/bad.txt"
run submit --dry-run --ablations "$TMPD/bad.txt" "$TMPD/abl" -- --train-iters 20
is "$rc" 2 "a variant name with a slash is refused"
like "$out" "variant name 'a/b' must be letters" "... with the rule"
printf '# nothing\n\n' >"$TMPD/empty.txt"
run submit --dry-run --ablations "$TMPD/empty.txt" "$TMPD/abl" -- --train-iters 20
is "$rc" 2 "a table without variants is refused"
run submit --ablations "$TMPD/missing.txt" "$TMPD/abl" -- --train-iters 20
is "$rc" 2 "a missing table is refused"
like "$out" "ablation table '$TMPD/missing.txt' \(--ablations\) cannot be read" "... naming it"
run submit --dry-run --array-throttle 0 --ablations "$TMPD/abl.txt" "$TMPD/abl" -- --train-iters 20
is "$rc" 2 "--array-throttle 0 is a usage error"
run "$SUBMIT" --summary "$TMPD/notrun"
is "$rc" 1 "--summary on a directory that is neither a study nor a run exits 1"
like "$out" "neither an ablation directory" "... and says so"

# ---- Without a cluster: Slurm's commands replaced by stubs -----------------
# sbatch prints a new job id (and remembers it as queued); squeue reports the
# jobs of $STUB/squeue.db ("ID STATE REASON" lines; an array's tasks are
# "ARRAY_K ..."); scontrol reports TmpFS=$TMPD/nodelocal and the jobs of
# $STUB/scontrol.db ("ID key=value..." lines); scancel does nothing; column fails, as
# where it is not installed.
STUB=$TMPD/stub
mkdir -p "$STUB"
: >"$STUB/squeue.db"
: >"$STUB/scontrol.db"
echo 100 >"$STUB/next-id"
cat >"$STUB/sbatch" <<'EOS'
#!/bin/bash
set -eu
d=$(dirname "$0")
exec 7>>"$d/sbatch.lock"
flock 7
id=$(cat "$d/next-id")
echo $((id + 1)) >"$d/next-id"
echo "$id PENDING Dependency" >>"$d/squeue.db"
# A submission takes a moment on a real cluster: widen the window in which
# two gpt3d-submit could both see a new run directory.
sleep 0.2
echo "$id"
EOS
cat >"$STUB/squeue" <<'EOS'
#!/bin/bash
d=$(dirname "$0")
ids="" fmt='%i %T %r' arr=0
while [ $# -gt 0 ]; do
    case "$1" in
        -j) ids=$2; shift 2 ;;
        -o) fmt=$2; shift 2 ;;
        -r) arr=1; shift ;;
        *) shift ;;
    esac
done
while read -r id state reason; do
    [ -n "$id" ] || continue
    if [ "$id" = "$ids" ] || { [ "$arr" -eq 1 ] && [ "${id%%_*}" = "$ids" ]; }; then
        o=${fmt//%i/$id}; o=${o//%T/$state}; o=${o//%r/$reason}
        echo "$o"
    fi
done <"$d/squeue.db"
EOS
cat >"$STUB/scontrol" <<'EOS'
#!/bin/bash
d=$(dirname "$0")
case "$*" in
    "show config") echo "TmpFS                   = ${STUB_TMPFS:-/nonexistent}" ;;
    "-o show job "*) sed -n "s/^$4 //p" "$d/scontrol.db" ;;
    *) exit 1 ;;
esac
EOS
printf '#!/bin/sh\nexit 1\n' >"$STUB/column"
printf '#!/bin/sh\nexit 0\n' >"$STUB/scancel"
chmod +x "$STUB"/*
stubbed() { env PATH="$STUB:$top_builddir/src:$PATH" STUB_TMPFS="$TMPD/nodelocal" "$@"; }

# A refused submission leaves nothing behind (#14.5).
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --sizes 2,4 "$TMPD/new/deep/run" -- --train-iters 10
is "$rc" 2 "--sizes without a global batch is refused (exit 2)"
is "$( [ -e "$TMPD/new" ] && echo exists || echo absent)" absent "... and the refused submission creates no directory"
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --sizes 2,3 "$TMPD/new2" -- \
    --global-batch-size 8 --micro-batch-size 4
is "$rc" 2 "a size that cannot keep the global batch is refused"
is "$( [ -e "$TMPD/new2" ] && echo exists || echo absent)" absent "... leaving nothing behind"

# --dry-run names absolute paths, also under parents that do not exist (#14.4).
run submit --dry-run "$TMPD/none/sub/run" -- --train-iters 10
is "$rc" 0 "--dry-run with a run directory whose parents do not exist exits 0"
like "$out" "would create run $TMPD/none/sub/run " "... and names the run directory's absolute path"
like "$out" "--chdir=$TMPD/none/sub/run " "... in the jobs' --chdir too"
run sh -c "cd '$TMPD' && '$SUBMIT' --job-script '$JOB' --train-command '/bin/true train' --dry-run nowhere/../rel -- --train-iters 10"
like "$out" "would create run $TMPD/rel " "a relative run directory is resolved against the working directory"
run submit --dry-run --ablations "$TMPD/abl.txt" "$TMPD/none/abl" -- --train-iters 20
like "$out" "would create run $TMPD/none/abl/base with" "the ablation dry-run names the variants' absolute paths"
is "$( [ -e "$TMPD/none" ] && echo exists || echo absent)" absent "... and creates nothing"

# A run directory on Slurm's node-local TmpFS is refused (#14.8).
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" "$TMPD/nodelocal/run" -- --train-iters 10
is "$rc" 1 "a run directory under the cluster's TmpFS is refused"
like "$out" "is under $TMPD/nodelocal, the node-local temporary storage of this cluster \(TmpFS in slurm.conf\)" "... saying why"
is "$( [ -e "$TMPD/nodelocal" ] && echo exists || echo absent)" absent "... creating nothing"

# Two gpt3d-submit at the same moment on one new run directory: one creates the
# run and submits its chain, the other finds it (#14.2).
for i in 1 2 3 4; do
    stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --chain 2 "$TMPD/race$i" -- --train-iters 5 >"$TMPD/race$i.a" 2>&1 &
    pa=$!
    stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --chain 2 "$TMPD/race$i" -- --train-iters 5 >"$TMPD/race$i.b" 2>&1 &
    pb=$!
    wait "$pa" || true
    wait "$pb" || true
    is "$(wc -l <"$TMPD/race$i/chain") $(cat "$TMPD/race$i.a" "$TMPD/race$i.b" | grep -c 'submitted a chain of 2 jobs') $(cat "$TMPD/race$i.a" "$TMPD/race$i.b" | grep -c 'already has a chain queued or running')" \
        "2 1 1" "two gpt3d-submit at once on a new run (try $i): one chain of 2 jobs, the other submission finds it"
done

# --status and --summary without column(1), and the states of the chain.
stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --create-only "$TMPD/st" -- --train-iters 5 >/dev/null
printf 'attempt\tjob\trestart\tstart\tend\tnodes\titer_start\titer_end\texit\toutcome\tdetail\n1\t77\t0\t2026-01-01T00:00:00\t2026-01-01T00:10:00\tn[1-2]\t0\t5\t75\tcheckpointed\tcheckpoint saved on request\n' \
    >"$TMPD/st/attempts.tsv"
printf '2\t78\t0\t2026-01-01T00:11:00\t-\tn[3-4]\t5\n' >"$TMPD/st/current-attempt"
printf '77\n78\n' >"$TMPD/st/chain"
echo "78 PENDING BeginTime" >>"$STUB/squeue.db"
echo "77 JobId=77 JobState=FAILED Reason=JobLaunchFailure StdOut=$TMPD/st/logs/gpt3d-st-77.out" >>"$STUB/scontrol.db"
run stubbed "$SUBMIT" --status "$TMPD/st"
is "$rc" 0 "--status exits 0 where column(1) is missing"
hdr=$(printf '%s\n' "$out" | grep '^  attempt ') || true
row=$(printf '%s\n' "$out" | grep '^  1 ') || true
is "$(awk -v h="$hdr" -v r="$row" 'BEGIN { print index(h, "outcome") == index(r, "checkpointed") && index(h, "detail") == index(r, "checkpoint saved") }')" 1 \
    "the attempt history is aligned in columns without column(1)"
like "$out" "interrupted: attempt 2 \(job 78 on n\[3-4\] since 2026-01-01T00:11:00\) ended without recording its end; job 78 is PENDING \(BeginTime\), requeued by Slurm" \
    "an attempt whose job waits to be requeued is not reported as running (#14.7)"
is "$(printf '%s\n' "$out" | grep -c '^running:')" 0 "... and no 'running' line"
like "$out" "job 77 ended FAILED \(JobLaunchFailure\) without writing its log $TMPD/st/logs/gpt3d-st-77.out" \
    "a job that died before writing its log is named, with a hint at node-local storage (#14.8)"
like "$out" "not node-local /tmp" "... naming the likely cause"

# A chain with no job left in the queue (all cancelled, or all died at launch): --status
# says the run is not running and how to resume it; a chain whose jobs can never start
# (BadConstraints: its exclusions leave too few nodes) is stuck (#32.6, #32.2).
stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --create-only "$TMPD/gone" -- --train-iters 5 >/dev/null
printf '901\n902\n' >"$TMPD/gone/chain"
run stubbed "$SUBMIT" --status "$TMPD/gone"
like "$out" "state: +not running: no job of its chain is queued or running .*resume it from the last checkpoint with: gpt3d-submit $TMPD/gone" \
    "--status: a chain with no job queued or running is 'not running', with the command that resumes it"
echo n3 >"$TMPD/gone/excluded-nodes"
echo "902 PENDING BadConstraints" >>"$STUB/squeue.db"
run stubbed "$SUBMIT" --status "$TMPD/gone"
like "$out" "state: +stuck: the chain's jobs can never start \(902 BadConstraints: the run excludes n3, leaving too few nodes\); once the nodes are repaired, resume with: gpt3d-submit --clear-exclusions $TMPD/gone" \
    "--status: a chain whose jobs can never start is 'stuck', naming the exclusions and --clear-exclusions"
run stubbed "$SUBMIT" --clear-exclusions "$TMPD/gone"
like "$out" "cancelling jobs of the broken chain that can never start: 902" "re-running gpt3d-submit cancels the stuck job"
like "$out" "forgetting the excluded nodes n3" "... --clear-exclusions forgets the exclusions"
like "$out" "submitted a chain of 3 jobs" "... and submits a new chain"
is "$( [ -e "$TMPD/gone/excluded-nodes" ] && echo kept || echo gone)" gone "... without the excluded node"
run "$SUBMIT" --load-fallback "$TMPD/gone"
is "$rc" 2 "--load-fallback without --retry is a usage error"
like "$out" "--load-fallback goes with --retry" "... saying so"

# A variant whose array task is still held back by the throttle is a job of
# its chain (#14.3).
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --ablations "$TMPD/abl.txt" --array-throttle 1 \
    "$TMPD/study" -- --train-iters 20
arr=$(head -n 1 "$TMPD/study/array-jobs" 2>/dev/null || echo none)
like "$out" "submitted job array $arr: variants 0,1,2 of 3, at most 1 at a time" "a study is submitted (stub sbatch)"
sed -i "/^$arr /d" "$STUB/squeue.db"
printf '%s_0 RUNNING None\n%s_1 PENDING JobArrayTaskLimit\n%s_2 PENDING JobArrayTaskLimit\n' "$arr" "$arr" "$arr" >>"$STUB/squeue.db"
run stubbed "$SUBMIT" --summary "$TMPD/study"
like "$out" "lr-high +queued " "--summary: a variant whose array task is pending is queued, not 'no job'"
printf '{"event":"start","seq_length":8}\n{"event":"train","iteration":1,"consumed_samples":4,"loss":5.5}\n' \
    >"$TMPD/study/base/metrics.jsonl"
run stubbed "$SUBMIT" --summary "$TMPD/study"
like "$out" "loss curves: $TMPD/study/loss.svg" "--summary draws the variants' loss curves with gpt3d plot (#34)"
is "$(grep -c 'class="series" data-run="base"' "$TMPD/study/loss.svg" 2>/dev/null)" 1 "... the variant with metrics"
run stubbed "$SUBMIT" --status "$TMPD/study/short"
like "$out" "chain:
  ${arr}_2 PENDING JobArrayTaskLimit" "--status: the pending array task is the variant's chain"
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --ablations "$TMPD/abl.txt" --array-throttle 1 \
    "$TMPD/study" -- --train-iters 20
like "$out" "variant short has jobs queued or running; not submitting it again" "re-running the study does not submit a pending variant again"
is "$(wc -l <"$TMPD/study/array-jobs")" 1 "... and submits no second array"

# --sizes shows what each size buys: gpt3d plan per size (#20.4).
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --dry-run --sizes 2,4 "$TMPD/el" -- \
    --global-batch-size 8 --micro-batch-size 2
is "$rc" 0 "--sizes with a plan per size exits 0"
for n in 2 4; do
    js=$("$top_builddir/src/gpt3d" plan --global-batch-size 8 --micro-batch-size 2 --nodes "$n" --gpus-per-node 1 --json)
    gib=$(printf '%s' "$js" | sed -n 's/.*"peak_stage":[0-9]*,"peak_bytes":\([0-9]*\).*/\1/p' | awk '{ printf "%.2f", $1 / 1073741824 }')
    secs=$(printf '%s' "$js" | sed -n 's/.*"seconds_per_iteration":\([0-9.eE+]*\).*/\1/p' | sed -n 1p)
    if [ -n "$secs" ]; then
        like "$out" "  $n nodes: DP $n, predicted $(awk -v t="$secs" 'BEGIN { printf "%.3g", t }') s per iteration" \
            "--sizes: the plan's time per iteration at $n nodes"
    else
        like "$out" "  $n nodes: DP $n, $gib GiB peak memory per rank, .* model FLOPs per rank per iteration \(no time per iteration: name the machine with --plan-machine" \
            "--sizes: the plan's DP, memory and FLOPs at $n nodes (no --machine: no time per iteration)"
        is "$(awk -v g="$gib" 'BEGIN { print (g + 0 > 0) ? "read" : "not read" }')" read "... the test read the plan's peak ($gib GiB)"
    fi
done

# --plan-machine: the plan times each size on the machine named (#20.4)
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --dry-run --sizes 2,4 \
    --plan-machine dgx-a100 "$TMPD/el2" -- --global-batch-size 8 --micro-batch-size 2
is "$rc" 0 "--sizes with --plan-machine exits 0"
for n in 2 4; do
    js=$("$top_builddir/src/gpt3d" plan --global-batch-size 8 --micro-batch-size 2 --nodes "$n" --gpus-per-node 1 --machine dgx-a100 --json)
    secs=$(printf '%s' "$js" | sed -n 's/.*"seconds_per_iteration":\([0-9.eE+-]*\).*/\1/p' | sed -n 1p)
    like "$out" "  $n nodes: DP $n, predicted $(awk -v t="${secs:-0}" 'BEGIN { printf "%.3g", t }') s per iteration.*GiB peak memory per rank" \
        "--plan-machine dgx-a100: the plan's time per iteration at $n nodes (${secs:-none} s)"
done
run stubbed "$SUBMIT" --job-script "$JOB" --train-command "/bin/true train" --dry-run --sizes 2,4 \
    --plan-machine "$TMPD/no-such-machine" "$TMPD/el3" -- --global-batch-size 8 --micro-batch-size 2
like "$out" "2 nodes: gpt3d plan refused the flags: .*no-such-machine" "an unknown --plan-machine: the plan's own message, per size"

# The cluster tests' pre-check names the real reason it cannot start (#18.8).
if bash -c ". '$top_srcdir/tests/slurm/cluster.sh'; g3c_check" >/dev/null 2>&1; then
    printf '#!/bin/sh\necho "unshare: cannot change root filesystem propagation: Invalid argument" >&2\nexit 1\n' >"$TMPD/pre1-unshare"
    mkdir -p "$TMPD/pre1" && mv "$TMPD/pre1-unshare" "$TMPD/pre1/unshare" && chmod +x "$TMPD/pre1/unshare"
    run env PATH="$TMPD/pre1:$PATH" bash -c ". '$top_srcdir/tests/slurm/cluster.sh'; g3c_check; echo \"why=\$g3c_why\""
    like "$out" "why=unshare -m fails here: unshare: cannot change root filesystem propagation: Invalid argument" \
        "the pre-check reports unshare's own error (a chroot whose / is not a mount point)"
    mkdir -p "$TMPD/pre2"
    # shellcheck disable=SC2016  # the stub's own $a and $@
    printf '#!/bin/sh\nfor a; do case "$a" in /sys/fs/cgroup) echo sysfs; exit 0 ;; esac; done\nexec /usr/bin/stat "$@"\n' >"$TMPD/pre2/stat"
    chmod +x "$TMPD/pre2/stat"
    run env PATH="$TMPD/pre2:$PATH" bash -c ". '$top_srcdir/tests/slurm/cluster.sh'; g3c_check; echo \"rc=\$? why=\$g3c_why\""
    like "$out" "rc=1 why=no cgroup file system is mounted on /sys/fs/cgroup \(found: sysfs\); slurmd needs one" \
        "without a cgroup file system the pre-check says so (and the tests skip)"
else
    skip "a private cluster cannot start here: the pre-check's own reasons are not tried"
    skip "a private cluster cannot start here"
fi

# The per-node health check, run here as a single task without Slurm.
HC=$top_srcdir/sbatch/gpt3d-healthcheck
run env SLURMD_NODENAME=nx bash "$HC" --node-check "exit 3" "$TMPD/hc1"
is "$rc" 0 "gpt3d-healthcheck exits 0 even for a bad node (the job script reads its files)"
is "$(cat "$TMPD/hc1/nx.local")" "bad: the node check 'exit 3' exited 3" "a failing --node-check marks the node bad, with the status"
run env SLURMD_NODENAME=nx PATH=/usr/bin:/bin bash "$HC" --gpus 8 "$TMPD/hc2"
if command -v nvidia-smi >/dev/null; then
    skip "nvidia-smi is installed here: the missing-GPU case is not checked"
else
    is "$(cat "$TMPD/hc2/nx.local")" "bad: nvidia-smi is not installed, so no GPU can be seen (8 expected)" "--gpus without nvidia-smi marks the node bad"
fi
run env SLURMD_NODENAME=nx bash "$HC" --node-check true --gpt3d "$top_builddir/src/gpt3d" --timeout-minutes 0.1 "$TMPD/hc3"
is "$(cat "$TMPD/hc3/nx.local") $(cat "$TMPD/hc3/nx.comm")" "ok ok" "a healthy node: local checks and gpt3d topo pass"
run bash "$HC" --gpus x "$TMPD/hc4"
is "$rc" 2 "gpt3d-healthcheck --gpus x is a usage error"

# The job script refuses to run outside a job or without a run directory.
run bash "$JOB"
is "$rc" 1 "gpt3d-train.sbatch without arguments exits 1"
like "$out" "usage: sbatch \[OPTIONS\] gpt3d-train.sbatch RUN_DIR" "... with its usage"
run bash "$JOB" "$TMPD/notrun"
is "$rc" 1 "gpt3d-train.sbatch on a directory that is not a run exits 1"
like "$out" "not a gpt3d run directory" "... and says so"
# The job script's names for gpt3d's exit codes are the enum's (src/core/status.h), as a
# table is kept in step with its enum: every code but 1 (failure), the same values.
codes_h="" codes_job=""
while read -r name value; do
    [ "$name" != FAILURE ] || continue
    codes_h="$codes_h $name=$value"
    codes_job="$codes_job $name=$(grep '^G3_EXIT_OK=' "$top_srcdir/sbatch/lib/job.sh" | tr ' ' '\n' | sed -n "s/^G3_EXIT_$name=//p")"
done < <(sed -n 's/^ *G3_EXIT_\([A-Z_]*\) *= *\([0-9]*\).*/\1 \2/p' "$top_srcdir/src/core/status.h")
is "$codes_job" "$codes_h" "the job script's exit codes are those of src/core/status.h ($codes_h)"
run grep -c '^#SBATCH' "$JOB"
sbatch_lines=$out
run grep -Ec '^#SBATCH [^#]+ # [A-Za-z]' "$JOB"
is "$out" "$sbatch_lines" "every #SBATCH line of the job script carries a comment"
like "$(grep '^#SBATCH' "$JOB")" "--signal=B:USR2@[0-9]+" "the job script asks for the warning signal"
like "$(grep '^#SBATCH' "$JOB")" "--requeue" "the job script is requeueable"
like "$(grep '^#SBATCH' "$JOB")" "--open-mode=append" "the job script appends to its log"

# Lint the scripts with shellcheck, where it is installed.
if command -v shellcheck >/dev/null; then
    # (-P: the library the fronts source, sbatch/lib, from the build's gpt3d-submit too)
    run shellcheck -x -P "$top_srcdir/sbatch" "$JOB" "$SUBMIT" "$top_srcdir"/sbatch/lib/*.sh "$HC" \
        "$top_srcdir/tests/slurm/cluster.sh" "$top_srcdir/tests/slurm/fake-train.sh" \
        "$top_srcdir/tests/slurm/demo.sh"
    is "$rc" 0 "shellcheck finds nothing in the job script, gpt3d-submit, the health check, the cluster harness and the demo"
    [ "$rc" -eq 0 ] || diag "$out"
else
    skip "shellcheck is not installed (apt-get install shellcheck)"
fi

done_testing
