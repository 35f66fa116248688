#!/bin/bash
# TEST DOUBLE for "gpt3d train", used only by tests/slurm/test_submit.sh (given
# to gpt3d-submit with --train-command).  It is not part of gpt3d and is not
# installed.  It follows the contract the batch suite expects from the real
# trainer, and nothing more:
#   * --run-dir DIR: where the trainer's own files go;
#   * --save DIR / --load DIR: resume from DIR/latest ("iter_NNNNNNN", the
#     checkpoint format of docs/checkpoint-format.md) and commit checkpoints
#     there (a directory iter_NNNNNNN, then latest replaced by rename);
#   * SIGUSR2: save a checkpoint at the current iteration and exit 75;
#   * exit 0 when --train-iters iterations are done.
# Every rank runs it; rank 0 writes.  Its own flags:
#   --train-iters N          iterations of the run (required)
#   --save-interval N        also save every N iterations (default: never)
#   --seconds-per-iter S     time one iteration takes (default 0.1)
#   --fail-at ITER           exit 1 when reaching ITER ...
#   --fail-times K           ... on the first K attempts that reach it (default: always)
#   --exit-code C            the code --fail-at exits with (default 1)
#   --timeout-node NODE      with --fail-at: if a rank runs on NODE (as Slurm
#                            placed it: SLURMD_NODENAME), act out gpt3d's
#                            distributed timeout there: every other rank logs
#                            the timeout line of src/comm/comm.c (docs/comm.md)
#                            naming that rank W as the peer it waited for, W
#                            logs nothing, all exit 76
#   --pause-at ITER          after training iteration ITER (in a process that
#                            started before it) write RUN_DIR/fake-paused and
#                            wait until RUN_DIR/fake-go exists or SIGUSR2 comes,
#                            so that a test can look at a job that is surely
#                            still running, however fast or slow the machine
#   --load-fallback          a checkpoint marked damaged (a file "damaged" in its
#                            iter_ directory, put there by a test) is skipped for
#                            the newest older one that is not, with gpt3d's
#                            warning and "resumed from" lines; without the flag
#                            such a checkpoint fails the load as gpt3d's does:
#                            its checksum error line, exit 78
#   --lr X                   only shapes the fake loss (loss = 10 (1 + X) / (1 + iteration)),
#                            so that ablation variants differ
# --check NODES:RANKS_PER_NODE (what gpt3d-submit runs before it submits) checks the flags
# below for that job and exits 0 or 2 without training,
# and checks what the real trainer would: --global-batch-size G with
# --micro-batch-size M (default 4), --tensor/pipeline-model-parallel-size must
# give whole data-parallel groups and G a multiple of M x DP (exit 2 if not).
# It writes RUN_DIR/metrics.jsonl lines like gpt3d train's ("start", "train"
# events; loss = 10 / (1 + iteration)), and it appends "iter I job J nodes
# NODELIST ranks R" to RUN_DIR/iterations.log for
# every iteration it runs, and the node list of each start to
# RUN_DIR/fake-starts.log, so tests can check what ran where.
set -euo pipefail

check="" gbs="" mbs=4 tp=1 pp=1 save="" load="" run="" iters="" save_interval=0 spi=0.1 fail_at=-1 fail_times=-1 fail_code=1 timeout_node="" lr=0 pause_at=-1 load_fallback=0
while [ $# -gt 0 ]; do
    case "$1" in
        --save) save=$2; shift 2 ;;
        --load) load=$2; shift 2 ;;
        --run-dir) run=$2; shift 2 ;;
        --train-iters) iters=$2; shift 2 ;;
        --save-interval) save_interval=$2; shift 2 ;;
        --seconds-per-iter) spi=$2; shift 2 ;;
        --fail-at) fail_at=$2; shift 2 ;;
        --fail-times) fail_times=$2; shift 2 ;;
        --exit-code) fail_code=$2; shift 2 ;;
        --timeout-node) timeout_node=$2; shift 2 ;;
        --lr) lr=$2; shift 2 ;;
        --pause-at) pause_at=$2; shift 2 ;;
        --load-fallback) load_fallback=1; shift ;;
        --global-batch-size) gbs=$2; shift 2 ;;
        --micro-batch-size) mbs=$2; shift 2 ;;
        --tensor-model-parallel-size) tp=$2; shift 2 ;;
        --pipeline-model-parallel-size) pp=$2; shift 2 ;;
        --check) check=$2; shift 2 ;;
        *) echo "fake-train: unknown flag '$1'" >&2; exit 2 ;;
    esac
done
if [ -z "$check" ] && { [ -z "$save" ] || [ -z "$load" ] || [ -z "$run" ] || [ -z "$iters" ]; }; then echo "fake-train: --save, --load, --run-dir and --train-iters are required" >&2; exit 2; fi

rank=${PMIX_RANK:-${SLURM_PROCID:-0}}
ranks=${SLURM_NTASKS:-1}
if [ -n "$check" ]; then ranks=$((${check%%:*} * ${check#*:})); fi   # the job's, as gpt3d train --check

layout="dp $((ranks / (tp * pp)))"
if [ $((ranks % (tp * pp))) -ne 0 ]; then
    echo "fake-train: $ranks ranks do not split into TP $tp x PP $pp" >&2; exit 2
fi
if [ -n "$gbs" ]; then
    dp=$((ranks / (tp * pp)))
    if [ $((gbs % (mbs * dp))) -ne 0 ]; then
        echo "fake-train: global batch $gbs is not a multiple of micro-batch $mbs x DP $dp" >&2; exit 2
    fi
    layout="$layout accum $((gbs / (mbs * dp)))"
fi
if [ -n "$check" ]; then echo "fake-train: --check $check: $layout"; exit 0; fi

iter=0
if [ -f "$load/latest" ]; then
    name=$(cat "$load/latest")
    iter=$((10#${name#iter_}))
    if [ -e "$load/$name/damaged" ]; then
        # gpt3d's own lines (src/ckpt/ckpt_load.c), for the one file a test marked
        if [ "$rank" -eq 0 ]; then
            echo "[rank $rank/$ranks] error: checksum mismatch in $load/$name/model_tp00_pp000.h5, dataset model/layers.0.mlp.fc1.weight#0 (tensor model/layers.0.mlp.fc1.weight): stored crc32c 80b8c1a2, computed 0829c569: the file is corrupt; load another checkpoint (--load-fallback)" >&2
        fi
        if [ "$load_fallback" -eq 0 ]; then
            if [ "$rank" -eq 0 ]; then
                echo "[rank $rank/$ranks] error: could not load the checkpoint in $load; pass --load-fallback to load the previous committed checkpoint instead" >&2
            fi
            exit 78
        fi
        older=""
        for d in "$load"/iter_*; do
            if ! [ -d "$d" ] || [ -e "$d/damaged" ]; then continue; fi
            if [ $((10#${d##*/iter_})) -lt "$iter" ]; then older=${d##*/}; fi
        done
        if [ -z "$older" ]; then
            echo "[rank $rank/$ranks] error: --load-fallback: no committed checkpoint in $load could be loaded" >&2
            exit 78
        fi
        if [ "$rank" -eq 0 ]; then
            echo "[rank $rank/$ranks] warn: --load-fallback: checkpoint $load could not be loaded; trying $load/$older" >&2
        fi
        iter=$((10#${older#iter_}))
    fi
    if [ "$rank" -eq 0 ]; then echo " resumed from the checkpoint of iteration $iter in $load"; fi
fi

checkpoint() {  # commit a checkpoint of iteration $iter (rank 0)
    [ "$rank" -eq 0 ] || return 0
    local d
    d=$(printf 'iter_%07d' "$iter")
    mkdir -p "$save/$d"
    echo "$iter" >"$save/$d/iteration"
    printf '%s\n' "$d" >"$save/latest.tmp"
    mv "$save/latest.tmp" "$save/latest"
}

# Where Slurm placed each rank (for --timeout-node).
rank_dir=$run/fake-ranks
step_tag=${SLURM_JOB_ID:-none}.${SLURM_RESTART_COUNT:-0}
mkdir -p "$rank_dir"
echo "${SLURMD_NODENAME:-none}" >"$rank_dir/$step_tag.$rank"

stop=0
trap 'stop=1' USR2
if [ "$rank" -eq 0 ]; then
    echo '{"event":"start","seq_length":64,"train_iters":'"$iters"'}' >>"$run/metrics.jsonl"
    echo "start iter $iter job ${SLURM_JOB_ID:-none} nodes ${SLURM_JOB_NODELIST:-none} ranks $ranks $layout" >>"$run/fake-starts.log"
fi

while [ "$iter" -lt "$iters" ]; do
    if [ "$stop" -eq 1 ]; then
        checkpoint
        echo "fake-train: rank $rank: USR2: saved iteration $iter, exiting 75" >&2
        exit 75
    fi
    next=$((iter + 1))
    if [ "$next" -eq "$fail_at" ] && [ -n "$timeout_node" ]; then
        # Which rank did Slurm place on the node?  (Every rank wrote its node.)
        peer=""
        for _ in $(seq 1 50); do
            n=0
            for f in "$rank_dir"/"$step_tag".*; do
                [ -e "$f" ] || continue
                n=$((n + 1))
                read -r h <"$f"
                if [ "$h" = "$timeout_node" ]; then peer=${f##*.}; fi
            done
            [ "$n" -lt "$ranks" ] || break
            sleep 0.1
        done
        if [ -n "$peer" ]; then
            # The real message, one line, as g3_comm_log_timeout writes it.
            if [ "$rank" -ne "$peer" ]; then
                echo "[rank $rank/$ranks] error: all-reduce on group world (rank $rank of $ranks, world ranks 0-$((ranks - 1))) timed out after 3 s waiting for group rank $peer (world rank $peer) to send its data; it stopped, crashed or is stuck elsewhere (raise --distributed-timeout-minutes if it is only slow)" >&2
            fi
            exit 76
        fi
    elif [ "$next" -eq "$fail_at" ]; then
        count_file="$run/fake-failures"
        n=0
        if [ -f "$count_file" ]; then read -r n <"$count_file"; fi
        if [ "$fail_times" -lt 0 ] || [ "$n" -lt "$fail_times" ]; then
            if [ "$rank" -eq 0 ]; then echo $((n + 1)) >"$count_file"; fi
            echo "fake-train: rank $rank: failing at iteration $next (exit $fail_code)" >&2
            exit "$fail_code"
        fi
    fi
    sleep "$spi" &
    wait $! || true   # a trapped USR2 ends the wait early
    iter=$next
    if [ "$rank" -eq 0 ]; then
        echo "iter $iter job ${SLURM_JOB_ID:-none} nodes ${SLURM_JOB_NODELIST:-none} ranks $ranks" >>"$run/iterations.log"
        # The trainer's metrics line (the fields gpt3d-submit --status reads);
        # the loss is a fixed function of the iteration.
        # (No $(...) in this loop: a USR2 that lands in a command substitution
        # can make bash misparse it.)
        awk -v i="$iter" -v n="$iters" -v b="${gbs:-1}" -v s="$spi" -v lr="$lr" 'BEGIN {
            printf "{\"event\":\"train\",\"iteration\":%d,\"train_iters\":%d,\"consumed_samples\":%d,\"ms_per_iter\":%.1f,\"loss\":%.6f,\"tokens_per_s\":%.3f}\n",
                   i, n, i * b, s * 1000, 10 * (1 + lr) / (1 + i), b * 64 / s }' >>"$run/metrics.jsonl"
    fi
    if [ "$save_interval" -gt 0 ] && [ $((iter % save_interval)) -eq 0 ]; then checkpoint; fi
    if [ "$iter" -eq "$pause_at" ]; then
        if [ "$rank" -eq 0 ]; then : >"$run/fake-paused"; fi
        while [ "$stop" -eq 0 ] && ! [ -e "$run/fake-go" ]; do
            sleep 0.1 &
            wait $! || true
        done
    fi
done
checkpoint
if [ "$rank" -eq 0 ]; then
    # The final validation, as gpt3d train's "eval" event.
    awk -v i="$iter" -v lr="$lr" 'BEGIN {
        printf "{\"event\":\"eval\",\"split\":\"valid\",\"iteration\":%d,\"loss\":%.6f,\"ppl\":1,\"final\":true}\n",
               i, 11 * (1 + lr) / (1 + i) }' >>"$run/metrics.jsonl"
fi
exit 0
