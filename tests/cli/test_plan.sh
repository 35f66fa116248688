#!/bin/sh
# gpt3d plan: parameter counts of published models (GPT-2 124M, GPT-3 175B, MT-NLG 530B),
# the same count and FLOPs as a real one-iteration gpt3d train, memory per stage against a
# hand computation, the activation formula of Korthikanti et al. 2022, the pipeline bubble,
# --gpu-memory, --search, --json, and every invalid layout refused with the trainer's message.
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir

PY=""
for p in "${PYTHON_REF:-}" python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1; then PY=$p; break; fi
done

# jget JSON PYTHON-EXPRESSION-ON-j: one value of a JSON document (integers printed exactly)
jget() {
    printf '%s' "$1" | "$PY" -c 'import json, sys
j = json.load(sys.stdin)
v = eval(sys.argv[1])
print(int(v) if isinstance(v, float) and v == int(v) and abs(v) < 2**63 else v)' "$2"
}

align() { echo $(( ($1 + 15) / 16 * 16 )); }

# ---- GPT-2 124M: the exact count, unpadded and with Megatron's padding
gpt2="--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024"
run "$GPT3D" plan $gpt2 --make-vocab-size-divisible-by 1
is "$rc" 0 "gpt2 124M: exit 0"
like "$out" 'parameters: 124,439,808 ' "gpt2 124M with vocabulary 50257 unpadded: 124,439,808 parameters"
run "$GPT3D" plan $gpt2
like "$out" 'vocabulary 50257 \(padded 50304: a multiple of 128 x TP 1\)' "gpt2: Megatron pads 50257 to 50304"
like "$out" 'parameters: 124,475,904 ' "gpt2 padded: 124,439,808 + 47 x 768 = 124,475,904"

# ---- GPT-3 175B on 128 nodes x 8: the count by hand (L (12 h^2 + 13 h) + (Vp + P) h + 2 h)
gpt3="--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --micro-batch-size 1 --global-batch-size 1536"
run "$GPT3D" plan $gpt3 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
    --nodes 128 --gpus-per-node 8 --device cuda
is "$rc" 0 "gpt3 175B on TP 8 x PP 16 x DP 8: exit 0"
h=12288
want=$(( 96 * (12 * h * h + 13 * h) + (51200 + 2048) * h + 2 * h ))
like "$out" "parameters: $(printf '%s' "$want" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') \\(174.62B" \
    "gpt3 175B: $want parameters (vocabulary padded to 51200)"
like "$out" 'layout: TP 8 x PP 16 x DP 8 = 1024 ranks on 128 nodes x 8' "gpt3: DP derived from the nodes"
like "$out" 'micro 1 x DP 8 x 192 micro-batches' "gpt3: 1536 / (1 x 8) = 192 gradient-accumulation steps"
like "$out" '15 / 207 = 7\.25% of an iteration' "gpt3: bubble (PP-1)/(m+PP-1) = 15/207"
like "$out" '\(PP - 1\) / m = 7\.81% of the compute time' "gpt3: and (PP-1)/m as gpt3d train reports it"

# ---- MT-NLG 530B: TP 8, PP 35, DP 8 on 280 nodes x 8.  Its hidden size 20480 (head size 160)
# is within the CUDA kernels (hidden at most 24576, head sizes 32-160): --device cuda plans it;
# the counts are checked on --device cpu
mtnlg="--num-layers 105 --hidden-size 20480 --num-attention-heads 128 --seq-length 2048 --micro-batch-size 1 --global-batch-size 1920"
run "$GPT3D" plan $mtnlg --tensor-model-parallel-size 8 --pipeline-model-parallel-size 35 \
    --nodes 280 --gpus-per-node 8
is "$rc" 0 "mt-nlg 530B (cpu): exit 0"
like "$out" 'parameters: 529,600,819,200 \(529\.60B' "mt-nlg: 529.6B parameters (the published 530B)"
like "$out" 'TP 8 x PP 35 x DP 8 = 2240 ranks on 280 nodes x 8' "mt-nlg: DP 8 on 280 nodes"
like "$out" '34 / 274 = 12\.41%' "mt-nlg: bubble 34 / (240 + 34)"
run "$GPT3D" plan $mtnlg --device cuda --tensor-model-parallel-size 8 --pipeline-model-parallel-size 35 \
    --nodes 280 --gpus-per-node 8
is "$rc" 0 "mt-nlg on --device cuda: exit 0 (hidden 20480 and head size 160 are compiled)"
like "$out" 'peak: stage 0, 122\.05 GiB' "... bf16 per-rank memory: 122.05 GiB at stage 0"
run "$GPT3D" plan --num-layers 2 --hidden-size 24584 --num-attention-heads 1 --device cuda
is "$rc" 2 "hidden 24584 on --device cuda: exit 2 (gpt3d train would refuse it)"
like "$out" 'error: --device cuda: hidden size 24584 is more than 24576' "... the message names the hidden size and the limit"
run "$GPT3D" plan --num-layers 96 --hidden-size 12288 --num-attention-heads 64 --seq-length 2048 \
    --device cuda --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --nodes 128 --gpus-per-node 8
is "$rc" 2 "head size 192 on --device cuda: exit 2"
like "$out" 'error: --device cuda: head size 192 \(--hidden-size / --num-attention-heads\) is not one the flash-attention kernels are compiled for \(32, 64, 80, 96, 128, 160\)' \
    "... the message names the head size and the sizes compiled"
run "$GPT3D" plan $mtnlg --device cuda --nodes 280 --gpus-per-node 8 --search
is "$rc" 0 "mt-nlg --search on --device cuda: exit 0"
like "$out" '65 layouts checked, 8 valid for gpt3d train' "... 8 of the 65 layouts pass the CUDA size checks"

# ---- GPT-3 175B on --device cuda (bf16): memory per rank, what fits, --search
gpt3c="$gpt3 --device cuda"
run "$GPT3D" plan $gpt3c --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
    --nodes 128 --gpus-per-node 8 --gpu-memory 80
is "$rc" 0 "gpt3 on TP 8 x PP 16 without recompute fits 80 GiB: exit 0"
like "$out" 'stage 0, 76\.[0-9]+ GiB; fits in 80 GiB per rank' "gpt3 without recompute: stage 0 keeps 16 micro-batches (~77 GiB)"
run "$GPT3D" plan $gpt3c --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
    --nodes 128 --gpus-per-node 8 --gpu-memory 60
is "$rc" 1 "gpt3 without recompute does not fit 60 GiB: exit 1"
like "$out" 'does NOT fit in 60 GiB per rank' "gpt3: says it does not fit"
like "$out" 'error: stage 0 needs 76\.[0-9]+ GiB per rank, more than --gpu-memory 60: recompute' \
    "gpt3: the error says what to do"
run "$GPT3D" plan $gpt3c --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \
    --nodes 128 --gpus-per-node 8 --gpu-memory 60 --recompute-granularity full
is "$rc" 0 "gpt3 with full recompute fits 60 GiB: exit 0"
like "$out" 'fits in 60 GiB per rank \(16 of 16 stages fit' "gpt3 with full recompute: every stage fits"

run "$GPT3D" plan $gpt3c --nodes 128 --gpus-per-node 8 --gpu-memory 80 \
    --recompute-granularity full --search
is "$rc" 0 "gpt3 --search: exit 0"
like "$out" '28 layouts checked, 23 valid for gpt3d train, 6 fit in the memory per rank' \
    "gpt3 --search: 23 valid layouts (PP divides 96, heads and 1024 / TP), 6 fit"
first=$(printf '%s\n' "$out" | sed -n '/TP   PP/{n;p;}' | awk '{print $1, $2, $3, $4}')
is "$first" "8 8 16 96" "gpt3 --search: TP 8 x PP 8 x DP 16 first (the smallest bubble)"
run "$GPT3D" plan $gpt3c --nodes 128 --gpus-per-node 8 --gpu-memory 20 --search
is "$rc" 1 "--search where nothing fits: exit 1"
like "$out" 'none of the 23 valid layouts fits in --gpu-memory 20' "--search says none fits"
run "$GPT3D" plan $gpt3c --nodes 128 --gpus-per-node 8 --search --tensor-model-parallel-size 4
is "$rc" 0 "--search with a given TP: exit 0"
rows=$(printf '%s\n' "$out" | awk '/TP   PP/{t=1; next} t && /^ +[0-9]/{print $1}' | sort -u | tr '\n' ' ')
is "$rows" "4 " "--search with --tensor-model-parallel-size 4 lists only TP 4"
# a vocabulary padded to 4 x TP: only at TP 4 is a rank's share (12568 rows) a multiple of 8
run "$GPT3D" plan $gpt3c --nodes 128 --gpus-per-node 8 --search --make-vocab-size-divisible-by 4
rows=$(printf '%s\n' "$out" | awk '/TP   PP/{t=1; next} t && /^ +[0-9]/{print $1}' | sort -u | tr '\n' ' ')
is "$rows" "4 " "--search leaves out the layouts the CUDA kernels cannot run (vocabulary rows per rank)"
run "$GPT3D" plan $gpt3c --nodes 128 --gpus-per-node 8 --search --tensor-model-parallel-size 16
is "$rc" 2 "--search with a TP beyond the node: exit 2"
like "$out" '--tensor-model-parallel-size 16 leaves no layout: TP must divide --gpus-per-node 8 and be at most 8' \
    "... says why no layout was checked"
run "$GPT3D" plan $gpt3c --nodes 1073741824 --gpus-per-node 8 --search
is "$rc" 2 "--nodes x --gpus-per-node past an int: exit 2"
like "$out" '--nodes 1073741824 x --gpus-per-node 8 = 8589934592 ranks is too many' "... naming both flags"

# ---- the activation formula: s b h (34 + 5 a s / h) at TP 1, (10 + 24/t + 5as/(ht)) at TP t
if [ -n "$PY" ]; then
    run "$GPT3D" plan $gpt3 --device cuda --json
    is "$rc" 0 "gpt3 --json: exit 0"
    s=2048; h=12288
    is "$(jget "$out" 'j["act_per_layer"]["none"]')" "$(( s * h * (34 + 5 * 96 * s / h) ))" \
        "bf16 activations per layer at TP 1: s b h (34 + 5 a s / h)"
    run "$GPT3D" plan $gpt3 --device cuda --json --tensor-model-parallel-size 8
    is "$(jget "$out" 'j["act_per_layer"]["none"]')" "$(( s * h * (10 + 3 + 10) ))" \
        "at TP 8: s b h (10 + 24/8 + 5 a s / (8 h))"
    is "$(jget "$out" 'j["act_per_layer"]["selective"]')" "$(( s * h * 13 ))" \
        "selective recompute at TP 8: s b h (10 + 24/8)"
    is "$(jget "$out" 'j["act_per_layer"]["full"]')" "$(( 2 * s * h ))" "full recompute: 2 s b h"
    run "$GPT3D" plan $gpt3 --json --tensor-model-parallel-size 8
    is "$(jget "$out" 'j["act_per_layer"]["none"]')" "$(( s * h * 18 + s * h * 6 + 9 * 96 * s * s / 8 ))" \
        "fp32 (cpu) at TP 8: s b h (18 + 48/8) + 9 a s^2 b / 8"
else
    skip "no python3 to read --json"
fi

# ---- memory per stage against a hand computation: TP 2 x PP 2 x DP 2 on the CPU (fp32)
# L 4, h 40, a 4, F 160, s 32, b 2, V 100 padded to 104 (multiple of 4 x TP 2), GBS 16: m 4
small="--num-layers 4 --hidden-size 40 --num-attention-heads 4 --seq-length 32 --vocab-size 100 --make-vocab-size-divisible-by 4 --micro-batch-size 2 --global-batch-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --data-parallel-size 2"
if [ -n "$PY" ]; then
    run "$GPT3D" plan $small --json
    is "$rc" 0 "small TP 2 x PP 2 x DP 2: exit 0"
    j=$out
    c=40; f=160; t=2; s=32; b=2; a=4
    # one layer of one TP rank: 4 LayerNorm vectors, qkv, dense, fc1, fc2 (weights + biases)
    layer_exact=$(( 4 * c + 3 * c * c / t + 3 * c / t + c * c / t + c + f * c / t + f / t + c * f / t + c ))
    layer_held=$(( 4 * $(align $c) + $(align $((3 * c * c / t))) + $(align $((3 * c / t))) + $(align $((c * c / t))) + $(align $c) + $(align $((f * c / t))) + $(align $((f / t))) + $(align $((c * f / t))) + $(align $c) ))
    s0=$(( 2 * layer_exact + 104 / t * c + 32 * c ))
    s1=$(( 2 * layer_exact + 104 / t * c + 2 * c ))
    h0=$(( 2 * layer_held + $(align $((104 / t * c))) + $(align $((32 * c))) ))
    h1=$(( 2 * layer_held + $(align $((104 / t * c))) + 2 * $(align $c) ))
    is "$(jget "$j" 'j["stages"][0]["params"]')" "$s0" "stage 0: 2 layers + word rows 52 x 40 + positions 32 x 40 = $s0"
    is "$(jget "$j" 'j["stages"][1]["params"]')" "$s1" "stage 1: 2 layers + its copy of the word rows + final LN = $s1"
    is "$(jget "$j" 'j["stages"][0]["params_held"]')" "$h0" "stage 0 held with 16-float alignment: $h0"
    is "$(jget "$j" 'j["stages"][1]["state_bytes"]')" "$(( 16 * h1 ))" "stage 1 state: 16 B per parameter held"
    is "$(jget "$j" 'j["stages"][1]["state_bytes_zero1"]')" "$(( 14 * h1 ))" "stage 1 state with ZeRO-1 over DP 2: 8 + 12/2 = 14 B"
    is "$(jget "$j" 'j["params_replica"]')" "$(( t * (s0 + s1) ))" "one replica holds TP x (stage 0 + stage 1)"
    # fp32 activations of one layer: s b (18 h + (16 h + 8 F) / t) + 9 a s^2 b / t
    act=$(( s * b * (18 * c + (16 * c + 8 * f) / t) + 9 * a * s * s * b / t ))
    is "$(jget "$j" 'j["act_per_layer"]["none"]')" "$act" "fp32 activations of one layer: $act bytes"
    # stage 0 keeps min(PP - 0, m) = 2 micro-batches, + the embedding dropout mask s b h each
    is "$(jget "$j" 'j["stages"][0]["act_bytes"]')" "$(( 2 * 2 * act + 2 * s * b * c ))" "stage 0 activations: 2 in flight x 2 layers + mask"
    # stage 1 keeps 1, + final LN and output inputs (fp32) and fp32 logits of Vp / TP rows
    is "$(jget "$j" 'j["stages"][1]["act_bytes"]')" "$(( 2 * act + 2 * 4 * s * b * c + 4 * s * b * 104 / t ))" "stage 1 activations: 1 in flight x 2 layers + output layer"
    is "$(jget "$j" 'j["stages"][0]["peak_bytes"]')" "$(( 16 * h0 + 2 * 2 * act + 2 * s * b * c ))" "stage 0 peak = state + activations"
    is "$(jget "$j" 'j["batch"]["micro_batches"]')" "4" "16 / (2 x 2) = 4 micro-batches"
    is "$(jget "$j" 'j["bubble"]')" "0.2" "bubble 1 / (4 + 1)"
    run "$GPT3D" plan $small --json --recompute-granularity full
    full=$(( 4 * s * b * c ))
    is "$(jget "$out" 'j["stages"][0]["act_bytes"]')" "$(( 2 * 2 * full + (act - full) + 2 * s * b * c ))" \
        "full recompute: inputs kept, one layer recomputed at a time"
    run "$GPT3D" plan $small --json --use-distributed-optimizer
    is "$(jget "$out" 'j["stages"][0]["peak_bytes"]')" "$(( 14 * h0 + 2 * 2 * act + 2 * s * b * c ))" \
        "--use-distributed-optimizer: the peak uses the ZeRO-1 state"
    # one JSON object, nothing else on stdout
    run "$GPT3D" plan $mtnlg --nodes 280 --gpus-per-node 8 --search --json
    is "$(jget "$out" 'len(j["layouts"])')" "8" "--search --json: one object with the 8 valid layouts"
else
    skip "no python3 to read --json"
fi

# ---- the same count and FLOPs as the real trainer (1 iteration on a tiny corpus)
mk="$top_builddir/tests/train/mkdata"
if [ -x "$mk" ]; then
    D="$TMPD/data"
    mkdir -p "$D"
    i=1
    while [ $i -le 200 ]; do
        echo "And God said, Let there be light: and there was light. Verse $i."
        i=$((i + 1))
    done > "$D/text.txt"
    "$mk" --byte-vocab "$D/vocab.json" "$D/merges.txt"
    "$mk" "$D/vocab.json" "$D/merges.txt" "$D/text.txt" "$D/verses"
    tiny="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --make-vocab-size-divisible-by 8 --micro-batch-size 2 --global-batch-size 4 --vocab-file $D/vocab.json"
    run "$GPT3D" train $tiny --data-path "$D/verses" --merge-file "$D/merges.txt" --split 90,5,5 \
        --train-iters 1 --log-interval 1 --eval-iters 0 --run-dir "$TMPD/run"
    is "$rc" 0 "gpt3d train: one iteration of the tiny model"
    tm="$TMPD/run/metrics.jsonl"
    train_params=$(sed -n 's/.*"event":"start".*"parameters":\([0-9]*\).*/\1/p' "$tm")
    run "$GPT3D" plan $tiny --train-iters 1
    is "$rc" 0 "gpt3d plan with the same flags (and --vocab-file): exit 0"
    like "$out" "parameters: $(printf '%s' "$train_params" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') " \
        "plan's parameter count equals the trainer's ($train_params)"
    # the trainer's FLOP/s x its time per iteration = FLOPs per iteration
    fl=$(sed -n 's/.*"event":"train".*"ms_per_iter":\([0-9.e+-]*\),.*"tflops":\([0-9.e+-]*\),.*/\1 \2/p' "$tm")
    if [ -n "$PY" ]; then
        run "$GPT3D" plan $tiny --json
        pf=$(jget "$out" 'j["flops_per_iteration"]')
        # by hand: 3 (L (2 B T (4 C^2 + 2 C F) + 4 B T^2 C) + 2 B T C Vp), Vp 264
        is "$pf" "$(( 3 * (2 * (2 * 4 * 32 * (4 * 64 * 64 + 2 * 64 * 256) + 4 * 4 * 32 * 32 * 64) + 2 * 4 * 32 * 64 * 264) ))" \
            "plan's FLOPs per iteration by hand (the trainer's formula)"
        ok=$(awk -v a="$fl" -v p="$pf" 'BEGIN { split(a, x, " "); t = x[1] / 1e3 * x[2] * 1e12;
             print (t > 0 && (t - p) / p < 0.01 && (p - t) / p < 0.01) ? 0 : 1 }')
        is "$ok" 0 "the trainer's tflops x ms_per_iter ($fl) matches plan's $pf FLOPs within 1%"
    else
        skip "no python3 to read --json"
        skip "no python3 to read --json"
    fi

    # the parameters each stage holds (with the 16-float alignment) and the micro-batches it
    # keeps, as the 3D-parallel trainer measures them from its allocations (TP 2 x PP 2)
    if g3_have_mpirun; then
        pipe="--num-layers 4 --hidden-size 200 --num-attention-heads 4 --seq-length 32 --make-vocab-size-divisible-by 8 --micro-batch-size 2 --global-batch-size 8 --vocab-file $D/vocab.json --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
        run g3_mpirun -np 4 "$GPT3D" train $pipe --data-path "$D/verses" --merge-file "$D/merges.txt" \
            --split 90,5,5 --train-iters 1 --log-interval 1 --eval-iters 0 --run-dir "$TMPD/run2"
        is "$rc" 0 "gpt3d train on TP 2 x PP 2 (4 ranks): one iteration"
        trained=$(printf '%s\n' "$out" | sed -n 's/^ *stage \([0-9]\): \([0-9.]*M\) parameters held.* for \([0-9]*\) micro-batch.*/\1 \2 \3/p' | tr '\n' ' ')
        if [ -n "$PY" ]; then
            run "$GPT3D" plan $pipe --json
            planned=$(printf '%s' "$out" | "$PY" -c 'import json, sys
j = json.load(sys.stdin)
print(" ".join("%d %.3fM %d" % (s["stage"], s["params_held"] / 1e6, s["in_flight"]) for s in j["stages"]), end=" ")')
            is "$planned" "$trained" "per stage: parameters held and micro-batches in flight as the trainer measures them"
        else
            skip "no python3 to read --json"
        fi
    else
        skip "mpirun not found"
        skip "mpirun not found"
    fi
else
    skip "tests/train/mkdata not built"
fi

# ---- invalid layouts: the trainer's messages, exit 2
run "$GPT3D" plan --num-attention-heads 6 --tensor-model-parallel-size 4 --nodes 1 --gpus-per-node 4
is "$rc" 2 "heads not divisible by TP: exit 2"
like "$out" 'error: --num-attention-heads 6 is not divisible by --tensor-model-parallel-size 4' "heads % TP: the model's message"
run "$GPT3D" plan --num-layers 6 --pipeline-model-parallel-size 4 --data-parallel-size 1
is "$rc" 2 "layers not divisible by PP: exit 2"
like "$out" '--num-layers 6 is not divisible by --pipeline-model-parallel-size 4' "layers vs PP: the model's message"
run "$GPT3D" plan --num-layers 6 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3
is "$rc" 0 "an uneven split the trainer accepts (3 + 1 + 1 + 1) is accepted"
like "$out" '0  \[0,3\)\+E' "the uneven split: stage 0 has layers 0-2"
run "$GPT3D" plan --global-batch-size 10 --micro-batch-size 4
is "$rc" 2 "global batch not divisible by micro x DP: exit 2"
plan_msg=$(printf '%s\n' "$out" | grep error:)
run "$GPT3D" train --global-batch-size 10 --micro-batch-size 4 --train-iters 1
is "$plan_msg" "$(printf '%s\n' "$out" | grep error:)" "the same message as gpt3d train: $plan_msg"
run "$GPT3D" plan --global-batch-size 32 --micro-batch-size 2 --data-parallel-size 2 --rampup-batch-size 8 6 100
is "$rc" 2 "ramp-up increment not a multiple of micro x DP: exit 2"
like "$out" 'rampup-batch-size 8 6 100: the start and the increment must be multiples of --micro-batch-size x data-parallel size = 4' "ramp-up: the schedule's message"
run "$GPT3D" plan --global-batch-size 32 --micro-batch-size 2 --data-parallel-size 2 --rampup-batch-size 8 8 100 --train-iters 10
is "$rc" 2 "ramp-up with --train-iters: exit 2 (as the trainer)"
run "$GPT3D" plan --global-batch-size 32 --micro-batch-size 2 --data-parallel-size 2 --rampup-batch-size 8 8 96
is "$rc" 0 "a valid ramp-up: exit 0"
like "$out" 'ramp-up from 8 \(2 micro-batches\)' "the ramp-up start is reported"
run "$GPT3D" plan --nodes 3 --gpus-per-node 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 5 --num-layers 5
is "$rc" 2 "24 ranks not a multiple of TP x PP: exit 2"
plan_msg=$(printf '%s\n' "$out" | grep error:)
like "$plan_msg" "impossible layout: the job's 24 ranks cannot be split into --tensor-model-parallel-size 2 x --pipeline-model-parallel-size 5 = 10 ranks" "ranks vs TP x PP: the trainer's message"
run "$GPT3D" train --tensor-model-parallel-size 2 --train-iters 1
like "$(printf '%s\n' "$out" | grep error:)" "impossible layout: the job's 1 rank cannot be split into --tensor-model-parallel-size 2" "(gpt3d train alone says it the same way)"
run "$GPT3D" plan --nodes 4 --gpus-per-node 8 --tensor-model-parallel-size 16 --num-attention-heads 16 --hidden-size 256
is "$rc" 2 "TP larger than a node: exit 2"
like "$out" 'impossible layout: TP 16 does not fit in the 8 ranks of a node: tensor-parallel groups must stay inside one node, so TP can be 1, 2, 4 or 8' "TP vs the node: the placement's message"
run "$GPT3D" plan --nodes 2 --gpus-per-node 8 --data-parallel-size 3
is "$rc" 2 "DP disagreeing with the nodes: exit 2"
like "$out" 'TP x PP x DP = 1 x 1 x 3 = 3 ranks, but the job has 16 \(2 nodes x 8\); with TP 1 and PP 1, DP must be 16' "DP vs nodes x GPUs: says what DP must be"
run "$GPT3D" plan --tensor-model-parallel-size 2 --gpus-per-node 8
is "$rc" 2 "ranks not filling whole nodes: exit 2"
like "$out" 'do not fill whole nodes of --gpus-per-node 8' "partial nodes: named"
run "$GPT3D" plan --seq-length 300 --max-position-embeddings 256
is "$rc" 2 "sequence longer than the positions: exit 2"

# ---- bad inputs: the flag and the fix, exit 2
run "$GPT3D" plan --nodes 2
is "$rc" 2 "--nodes without --gpus-per-node: exit 2"
like "$out" '--nodes 2 needs --gpus-per-node G' "names the missing flag"
run "$GPT3D" plan --hidden-size -3
is "$rc" 2 "negative hidden size: exit 2"
like "$out" '--hidden-size -3 is out of range' "names the flag"
run "$GPT3D" plan --num-layers many
is "$rc" 2 "non-numeric layers: exit 2"
like "$out" "--num-layers: 'many' is not an integer" "names the flag and the value"
run "$GPT3D" plan --gpu-memory 0
is "$rc" 2 "--gpu-memory 0: exit 2"
like "$out" '--gpu-memory 0: give the memory of one GPU in GiB' "says what --gpu-memory wants"
run "$GPT3D" plan --vocab-size 100 --vocab-file /nonexistent
is "$rc" 2 "--vocab-size with --vocab-file: exit 2"
run "$GPT3D" plan --vocab-file "$TMPD/missing.json"
is "$rc" 2 "a missing --vocab-file: exit 2"
like "$out" 'missing.json' "names the file"
run "$GPT3D" plan --search
is "$rc" 2 "--search without nodes: exit 2"
like "$out" '--search needs --nodes N and --gpus-per-node G' "--search says what it needs"
run "$GPT3D" plan --gpus-per-node 8 --ranks-per-node 4
is "$rc" 2 "--gpus-per-node and --ranks-per-node disagreeing: exit 2"
run "$GPT3D" plan --hiden-size 8
is "$rc" 2 "a misspelt flag: exit 2"
like "$out" "did you mean '--hidden-size'" "a misspelt flag gets a suggestion"
run "$GPT3D" plan --hidden-size 1000000000 --num-attention-heads 1
is "$rc" 2 "an absurd hidden size: exit 2"
run "$GPT3D" plan --num-layers 100000 --hidden-size 1000000 --num-attention-heads 1 --ffn-hidden-size 1
is "$rc" 2 "a model too large to count: exit 2"
like "$out" 'beyond what gpt3d plan counts' "says the model is too large"

# ---- a training config file works as it is
cat > "$TMPD/run.conf" <<EOF
num-layers = 4
hidden-size = 128
num-attention-heads = 4
seq-length = 64
lr = 1e-3
train-iters = 100
data-path = /nowhere/ignored
EOF
run "$GPT3D" plan --config "$TMPD/run.conf" --data-parallel-size 2 --micro-batch-size 2 --global-batch-size 8
is "$rc" 0 "a gpt3d train --config file plans as it is"
like "$out" 'the run: 100 iterations, 5\.12e\+04 tokens' "with --train-iters: the run's tokens (100 x 8 x 64)"
like "$out" 'GPT 4 layers, hidden 128' "the config file's model"

run "$GPT3D" help plan
is "$rc" 0 "help plan: exit 0"
like "$out" '--gpu-memory GIB' "help plan lists --gpu-memory"
like "$out" '--num-layers N' "help plan lists the trainer's flags"

done_testing
