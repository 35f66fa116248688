#!/bin/sh
# gpt3d ckpt inspect / verify / convert / export on synthetic sharded checkpoints,
# checked independently with h5py and numpy (tests/ckpt/check_ckpt.py).
# shellcheck disable=SC2154  # top_srcdir, top_builddir come from the environment; run sets rc, out
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
SYNTH="$top_builddir/tests/ckpt/ckpt_synth"
CHECK="$top_srcdir/tests/ckpt/check_ckpt.py"
PY="${PYTHON_REF:-/usr/bin/python3}"
g3_tmpdir

run "$SYNTH" save "$TMPD/a" 2 2 2 100
is "$rc" 0 "a TP 2 x PP 2 x DP 2 checkpoint with ZeRO-1 optimizer shards is saved"

run "$GPT3D" ckpt inspect "$TMPD/a"
is "$rc" 0 "inspect exits 0"
like "$out" "iteration +100" "inspect: iteration"
like "$out" "consumed +6400 samples, 819200 tokens" "inspect: consumed samples and tokens"
like "$out" "layout +TP 2 x PP 2 x DP 2 \(8 ranks\), 4 layers; stages start at layers 0 2" "inspect: layout"
like "$out" "model/layers.3.attention.qkv.weight +f32 +\(48, 16\) +0.003 +dim 0, 3 parts +layer 3" "inspect: a tensor row with shape, size and rule"
like "$out" "optim/exp_avg_sq/final_layernorm.bias +f32 +\(16\)" "inspect: optimizer tensors"
like "$out" "hidden-size = 16" "inspect: the stored configuration"
like "$out" "rng = 1234, 100" "inspect: the training state"

run "$GPT3D" ckpt verify "$TMPD/a"
is "$rc" 0 "verify: a good checkpoint passes"
like "$out" "is complete and every checksum matches \(12 files, 156 tensors" "verify: says what it checked"

if "$PY" -c 'import h5py, numpy' 2>/dev/null; then
    run sh -c "cd / && '$PY' '$CHECK' vds '$TMPD/a/iter_0000100/index.h5' 100"
    is "$rc" 0 "h5py: every tensor's virtual dataset in index.h5 equals the full tensor (read from another directory)"
    [ "$rc" -eq 0 ] || diag "$out"
    mv "$TMPD/a" "$TMPD/moved"
    run sh -c "cd '$TMPD' && '$PY' '$CHECK' vds moved/iter_0000100/index.h5 100"
    is "$rc" 0 "h5py: the virtual datasets still work after the directory is moved (relative source paths)"
    mv "$TMPD/moved" "$TMPD/a"
else
    skip "h5py or numpy missing in $PY"
    skip "h5py or numpy missing in $PY"
fi

# convert to other layouts; the result loads bitwise and equals the input
run "$GPT3D" ckpt convert --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 --data-parallel-size 3 "$TMPD/a" "$TMPD/b"
is "$rc" 0 "convert 2x2x2 -> TP 4 x PP 1 x DP 3"
run "$GPT3D" ckpt verify "$TMPD/b"
is "$rc" 0 "verify: the converted checkpoint passes"
like "$("$GPT3D" ckpt inspect --no-tensors "$TMPD/b" 2>&1)" "TP 4 x PP 1 x DP 3 \(12 ranks\)" "the converted checkpoint has the new layout"
run "$SYNTH" check "$TMPD/b" 1 4 2 100
is "$rc" 0 "the converted checkpoint loads bitwise under TP 1 x PP 4 x DP 2"
if "$PY" -c 'import h5py' 2>/dev/null; then
    run "$PY" "$CHECK" same "$TMPD/a/iter_0000100/index.h5" "$TMPD/b/iter_0000100/index.h5"
    is "$rc" 0 "h5py: input and converted checkpoints hold the same tensors, state and configuration"
else
    skip "h5py missing"
fi
run "$GPT3D" ckpt convert --tensor-model-parallel-size 1 --no-save-optim "$TMPD/b" "$TMPD/c"
is "$rc" 0 "convert --no-save-optim"
like "$("$GPT3D" ckpt inspect --no-tensors "$TMPD/c" 2>&1)" "52 model .* 0 optimizer" "... leaves the optimizer state out"
run "$GPT3D" ckpt convert --tensor-model-parallel-size 3 "$TMPD/a" "$TMPD/d"
is "$rc" 2 "convert to TP 3 is refused (exit 2)"
like "$out" "not divisible by tensor-model-parallel size 3" "... naming the tensor that does not divide"
[ ! -e "$TMPD/d/iter_0000100" ]; is $? 0 "... and writes no checkpoint"
run "$GPT3D" ckpt convert "$TMPD/a" "$TMPD/b"
is "$rc" 2 "convert into a directory that already has the iteration is refused"

# export for Hugging Face GPT-2
run "$GPT3D" ckpt export --format hf-gpt2 "$TMPD/a" "$TMPD/hf"
is "$rc" 0 "export --format hf-gpt2"
if "$PY" -c 'import numpy' 2>/dev/null; then
    run "$PY" "$CHECK" export "$TMPD/hf" 100
    is "$rc" 0 "numpy safetensors parser: names, shapes (Conv1D transposes, vocab padding dropped), values, config.json"
    [ "$rc" -eq 0 ] || diag "$out"
    run "$GPT3D" ckpt export --dtype bfloat16 "$TMPD/b" "$TMPD/hf16"
    run "$PY" "$CHECK" export "$TMPD/hf16" 100 bf16
    is "$rc" 0 "bf16 export from the converted checkpoint matches too"
else
    skip "numpy missing"
    skip "numpy missing"
fi

# usage errors and missing inputs
run "$GPT3D" ckpt inspct "$TMPD/a"
is "$rc" 2 "an unknown subcommand exits 2"
like "$out" "did you mean 'inspect'" "... with a suggestion"
run "$GPT3D" ckpt --help
like "$out" "convert +IN OUT" "gpt3d ckpt --help lists the subcommands"
run "$GPT3D" ckpt inspect "$TMPD/nothing"
is "$rc" 1 "inspect of a missing directory exits 1"
like "$out" "nothing" "... naming it"
mkdir "$TMPD/empty"
run "$GPT3D" ckpt verify "$TMPD/empty"
is "$rc" 1 "verify of a directory without checkpoints exits 1"
like "$out" "holds no checkpoint" "... saying so"
run "$GPT3D" ckpt verify --all "$TMPD/a"
is "$rc" 0 "verify --all"

done_testing
