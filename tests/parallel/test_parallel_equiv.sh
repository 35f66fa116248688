#!/bin/sh
# 3D-parallel training trains the same model as one rank: for a small GPT, the same seed
# and data, every layout with TP, PP, DP in {1, 2} and TP 1 x PP 4 x DP 2 (under mpirun,
# oversubscribed) gives the one-rank loss curve within 1e-5 relative over 20 iterations,
# the same gradients after the first step within 1e-5 (whole tensors assembled from every
# rank's shards by global index, replicated copies bitwise equal), the same validation
# loss; parameters replicated over TP/DP (and the tied embedding on the first and last
# stage) stay bitwise equal; the Adam state, read back tensor by tensor from the ranks'
# slices (what checkpoints will save), covers every element.  Also ZeRO-1, an uneven pipeline split, recomputation, the
# batch ramp-up under DP, the layout and bytes-per-parameter lines, and the text sample
# through the pipeline.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/parallel/par_lib.sh
. "$top_srcdir/tests/parallel/par_lib.sh"
set -e

g3_need_mpirun
# ---- a corpus: 400 short verses, a byte-level vocabulary of 261 entries (par_corpus)
par_setup

# --make-vocab-size-divisible-by 6 pads 261 to 264 with TP 1 and with TP 2 (a multiple of
# 6 x TP), so every layout has the same model.  Global batch 16, micro-batch 2: 8, 4 or 2
# micro-batches per replica, enough for the 1F1B steady state.
par_flags 4 --global-batch-size 16 --train-iters 20 --eval-iters 2

par_train ref 0
is "$rc" 0 "the one-rank reference run exits 0"

for layout in "tp2 2 $T 2" "pp2 2 $P 2" "dp2 2" "tp2pp2 4 $T 2 $P 2" "tp2dp2 4 $T 2" \
              "pp2dp2 4 $P 2" "tp2pp2dp2 8 $T 2 $P 2" "pp4dp2 8 $P 4"; do
    # shellcheck disable=SC2086
    set -- $layout
    name=$1 np=$2
    shift 2
    par_train "$name" "$np" "$@"
    is "$rc" 0 "$name: $np ranks exit 0"
    par_compare "$name" ref
done
like "$out" 'layout: TP 1 x PP 4 x DP 2 = 8 ranks on 1 node x 8' "the layout is printed at start"
like "$out" 'pipeline 4 stages: 0:\[0,1\) 1:\[1,2\) 2:\[2,3\) 3:\[3,4\); data parallel 2' "... with the stages' layers"
like "$out" 'memory per rank: params 4 \+ grads 4 \+ Adam m 4 \+ v 4 = 16\.00 bytes per parameter held' \
    "bytes per parameter without ZeRO: 16"
like "$out" 'stage 3: 0\.[0-9]+M parameters held, 16\.00 bytes each: [0-9.]+ MiB model state; [0-9.]+ MiB activations for 1 micro-batch in flight' \
    "... measured on every stage (the last keeps 1 micro-batch in flight)"
like "$out" 'stage 0: 0\.[0-9]+M parameters held, 16\.00 bytes each: [0-9.]+ MiB model state; [0-9.]+ MiB activations for 4 micro-batches in flight' \
    "... the first stage keeps PP = 4 micro-batches in flight"
like "$out" "pipeline bubble on rank 0 \(stage 0\): [0-9.]+% .*\(p - 1\) / m = 75\.0%" "the pipeline bubble is reported against (p - 1)/m"
like "$out" ' rank +node \(local rank\) +pipeline stage +tensor slice +data-parallel replica' \
    "the layout has a line per rank (#32.8)"
like "$out" '  [0-7] +[^ ]+ \([0-7]\) +3: layers \[3,4\) +all \(TP 1\) +1 of 2' \
    "... naming its node and local rank, stage and layers, tensor slice, replica"
is "$(printf '%s\n' "$out" | grep -cE '^ +[0-7] +[^ ]+ \([0-7]\) +[0-3]: layers ')" 8 "... one line for each of the 8 ranks"
cpus=$(getconf _NPROCESSORS_ONLN)
if [ "$cpus" -lt 8 ]; then   # (par_lib.sh: one OpenMP thread per rank)
    like "$out" "waiting, most of it for a CPU \(8 ranks x 1 thread share $cpus CPUs here, so this is not the pipeline's bubble\)" \
        "8 ranks on $cpus CPUs: the bubble line says the waits are mostly for a CPU (#32.8)"
    like "$out" "per rank: 1 thread x" "... one thread a rank, in the singular"
else
    like "$out" "of the compute time idle or passing activations" "8 ranks on $cpus CPUs: the bubble line is the pipeline's"
    like "$out" "per rank: 1 thread x" "one thread a rank, in the singular"
fi

# ---- ZeRO-1: the same model; bytes per parameter 4 + 4 + 12 / DP
par_train zero_dp2 2 --use-distributed-optimizer
is "$rc" 0 "zero_dp2: exits 0"
like "$out" 'params 4 \+ grads 4 \+ \(Adam m 4 \+ v 4 \+ reduced gradient 4\) / DP = 14\.00 bytes per parameter held' \
    "ZeRO-1 over DP 2: 4 + 4 + 12/2 = 14 bytes per parameter"
like "$out" 'stage 0: 0\.[0-9]+M parameters held, 14\.00 bytes each' "... as measured"
par_compare zero_dp2 ref
par_train zero_tp2pp2dp2 8 "$T" 2 "$P" 2 --use-distributed-optimizer --sample-tokens 12 --prompt "And God"
is "$rc" 0 "zero_tp2pp2dp2: exits 0"
par_compare zero_tp2pp2dp2 ref
like "$out" 'sample \(greedy, 12 tokens after a 7-token prompt\):' "the text sample runs through the pipeline"
par_train zero_pp4dp2 8 "$P" 4 --use-distributed-optimizer --recompute-activations
is "$rc" 0 "zero_pp4dp2 with recomputed activations: exits 0"
par_compare zero_pp4dp2 ref

# ---- an uneven split: 2 layers on the first of 3 stages, 1 on each other
par_train uneven 3 "$P" 3 --decoder-first-pipeline-num-layers 2
is "$rc" 0 "uneven: PP 3 with --decoder-first-pipeline-num-layers 2 exits 0"
like "$out" 'pipeline 3 stages: 0:\[0,2\) 1:\[2,3\) 2:\[3,4\)' "uneven: the first stage holds 2 layers"
par_compare uneven ref

# ---- the batch ramp-up under DP 2 (4 -> 16 sequences) against the same ramp on one rank
flags_save=$flags
flags=$(printf '%s\n' "$flags" | sed 's/--train-iters 20//; s/--lr-warmup-iters 2//')
par_train ramp_ref 0 --train-samples 256 --rampup-batch-size 4 4 64
is "$rc" 0 "ramp-up on one rank exits 0"
par_train ramp_dp2 2 --train-samples 256 --rampup-batch-size 4 4 64
is "$rc" 0 "ramp-up under DP 2 exits 0"
# shellcheck disable=SC2046
set -- $(par_maxdiff "$TMPD/ramp_ref.jsonl" "$TMPD/ramp_dp2.jsonl" loss train rel)
if [ "$#" -eq 2 ] && par_within "$1" 1e-5; then
    tap_result 0 "ramp-up under DP 2: the loss curve of one rank ($2 iterations, max rel $1)"
else
    tap_result 1 "ramp-up under DP 2: the loss curve of one rank ($*)"
fi
like "$(grep '"iteration":1,' "$TMPD/ramp_dp2.jsonl")" '"global_batch_size":4,' "ramp-up: the first batch is 4 = micro x DP"
flags=$flags_save

done_testing
