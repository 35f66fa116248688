#!/bin/bash
# Hostile checkpoints (issue 33): a flipped byte anywhere in the index, the global heap of the
# virtual datasets' mappings included, is refused before libhdf5 parses it (no crash, exit 1)
# and --load-fallback goes back past it; swapped iter_ directories; a version-2 index without
# state/tokenizer or state/rng; a consumed_samples or tokenizer record forged with its checksum
# redone and a checkpoint holding NaN are refused and --load-fallback goes back past them; a
# damaged shard root header is called damaged; generate refuses a permuted vocabulary and NaN
# weights; a run that diverges saves no checkpoint; every refusal prints gpt3d's message only.
# (top_srcdir, top_builddir, GPT3D, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
set -o pipefail

py=${PYTHON_REF:-/usr/bin/python3}
"$py" -c 'import h5py, numpy' 2>/dev/null || skip_all "h5py or numpy missing in $py (Debian: python3-h5py)"
command -v h5unjam >/dev/null || skip_all "h5unjam missing (Debian: hdf5-tools)"
edit="$py $top_srcdir/tests/ckpt/edit_ckpt.py"
g3_tmpdir
# shellcheck source=tests/ckpt/ckpt_lib.sh
. "$top_srcdir/tests/ckpt/ckpt_lib.sh"

# clean TEXT: 0 when TEXT holds no sanitizer report, no libhdf5 diagnostic and no crash
clean() {
    ! printf '%s' "$1" | grep -E 'AddressSanitizer|runtime error|buffer overflow|HDF5-DIAG|HDF5:|infinite loop|Segmentation|Aborted' >/dev/null
}
# resume NAME [FLAGS...]: train 6 iterations from $TMPD/NAME (saving elsewhere)
resume() {
    _n=$1
    shift
    train 6 --load "$TMPD/$_n" --save "$TMPD/$_n.save" --run-dir "$TMPD/$_n.run" "$@"
}
I=iter_0000004

train 4 --save "$TMPD/good" --run-dir "$TMPD/good.run" --save-interval 2
is "$rc" 0 "a 4-iteration run saves checkpoints at iterations 2 and 4"
is "$(head -c 30 "$TMPD/good/$I/index.h5")" "gpt3d-checkpoint-index-seal 1" "the index begins with its checksum block (format version 3)"
run "$GPT3D" ckpt verify "$TMPD/good"
is "$rc" 0 "verify: the checkpoint is good"

# ---- 1. every byte of the index is checked before libhdf5 reads it ------------------------------
gcol=$($edit gcol "$TMPD/good/$I/index.h5")
size=$(stat -c %s "$TMPD/good/$I/index.h5")
fresh g
bad="" n=0
for d in 2 2269 4748 7610 8637 10684; do
    off=$((gcol + d))
    [ "$off" -lt "$size" ] || continue
    $edit flip "$TMPD/g/$I/index.h5" "$off"
    run "$GPT3D" ckpt verify "$TMPD/g"
    v_rc=$rc v_out=$out
    resume g
    l_rc=$rc l_out=$out
    resume g --load-fallback
    if [ "$v_rc" != 1 ] || [ "$l_rc" != 78 ] || [ "$rc" != 0 ] || ! clean "$v_out$l_out$out" ||
       ! printf '%s' "$v_out" | grep "index.h5 fails its checksum" >/dev/null ||
       ! printf '%s' "$out" | grep "resumed from checkpoint.*iteration 2\|loaded checkpoint .*iter_0000002" >/dev/null; then
        bad="$bad GCOL+$d:verify=$v_rc,load=$l_rc,fallback=$rc"
    fi
    n=$((n + 1))
    $edit flip "$TMPD/g/$I/index.h5" "$off"
done
is "$bad" "" "a byte flipped in the VDS global heap (GCOL+2269, +4748, ... ; $n offsets): verify exits 1 and train --load 78, naming the checksum, --load-fallback resumes iteration 2, no crash"
# random offsets over the whole index (a fixed seed: the same offsets every run)
offsets=$(awk -v n=40 -v size="$size" 'BEGIN { srand(33); for (i = 0; i < n; i++) printf "%d ", int(rand() * size) }')
bad="" n=0
for off in $offsets; do
    $edit flip "$TMPD/g/$I/index.h5" "$off"
    run "$GPT3D" ckpt verify "$TMPD/g"
    if [ "$rc" != 1 ] || ! clean "$out" || ! printf '%s' "$out" | grep "index.h5" >/dev/null; then
        bad="$bad $off:rc=$rc"
        diag "$(printf '%s' "$out" | head -n 3)"
    fi
    $edit flip "$TMPD/g/$I/index.h5" "$off"
    n=$((n + 1))
done
is "$bad" "" "$n bytes flipped at random offsets over the whole index: verify refuses each (exit 1, naming index.h5, no crash)"
truncate -s -100 "$TMPD/g/$I/index.h5"
run "$GPT3D" ckpt verify "$TMPD/g"
is "$rc" 1 "a truncated index is refused"
like "$out" "index.h5 is [0-9]+ bytes but its checksum block says [0-9]+: it was truncated or damaged" "... saying so"
fresh g2
$edit make-v2 "$TMPD/good/$I" "$TMPD/g2/$I.v2"
rm -rf "${TMPD:?}/g2/$I"
mv "$TMPD/g2/$I.v2" "$TMPD/g2/$I"
run "$GPT3D" ckpt verify "$TMPD/g2"
is "$rc" 0 "a version-2 checkpoint (no checksum block) still passes verify"
resume g2
is "$rc" 0 "... and resumes"
$edit set-attr "$TMPD/g2/$I/index.h5" / format_version 3 i32
run "$GPT3D" ckpt verify "$TMPD/g2"
is "$rc" 1 "an index saying version 3 without the checksum block is refused"
like "$out" "says format version 3 but lacks the checksum block" "... saying so"

# ---- 5. the iteration inside must match the directory's name ---------------------------------------
fresh sw
mv "$TMPD/sw/iter_0000002" "$TMPD/sw/tmp" && mv "$TMPD/sw/$I" "$TMPD/sw/iter_0000002" && mv "$TMPD/sw/tmp" "$TMPD/sw/$I"
run "$GPT3D" ckpt verify "$TMPD/sw"
is "$rc" 1 "iter_0000002 and iter_0000004 swapped: verify refuses it"
like "$out" "holds iteration 2 \(its index.h5\) but its directory is named for iteration 4" "... naming both iterations"
resume sw
is "$rc" 78 "... and train --load does not resume it (78: the checkpoint cannot be loaded)"
unlike "$out" "resumed from" "... (nothing resumed)"

# ---- 6. format 2 requires what format 2 writes -----------------------------------------------------
for key in tokenizer rng; do
    fresh st
    $edit make-v2 "$TMPD/good/$I" "$TMPD/st/$I.v2"
    rm -rf "${TMPD:?}/st/$I"
    mv "$TMPD/st/$I.v2" "$TMPD/st/$I"
    $edit drop-state "$TMPD/st/$I/index.h5" "$key"
    run "$GPT3D" ckpt verify "$TMPD/st"
    is "$rc" 1 "verify refuses a version-2 index of gpt3d train without state/$key"
    resume st
    is "$rc" 78 "a version-2 index without state/$key is refused by the resume"
    like "$out" "format version 2\) lacks state/$key, which every gpt3d writing that version records" "... naming the missing entry"
    resume st --load-fallback
    like "$out" "loaded checkpoint .*iter_0000002" "... and --load-fallback goes back to iteration 2"
done

# ---- 13. forged state: --load-fallback goes back past it -------------------------------------------
fresh cs
$edit set-progress "$TMPD/cs/$I/index.h5" consumed_samples 36
resume cs
is "$rc" 78 "consumed_samples forged with its checksum redone: the resume refuses it"
like "$out" "consumed_samples 36 in index.h5 disagrees with state/data_sampler" "... comparing it with /state"
resume cs --load-fallback
is "$rc" 0 "... and --load-fallback resumes the previous checkpoint"
like "$out" "loaded checkpoint .*iter_0000002" "... iteration 2"
fresh tk
$edit set-state-str "$TMPD/tk/$I/index.h5" tokenizer '{"format": garbage'
resume tk
is "$rc" 78 "a garbage tokenizer record (checksum redone) is refused"
like "$out" "the tokenizer record is corrupt: the index was altered; load another checkpoint" "... as a damaged checkpoint"
unlike "$out" "gpt3d preprocess" "... not advising gpt3d preprocess"
resume tk --load-fallback
is "$rc" 0 "... and --load-fallback resumes iteration 2"
S=model_tp00_pp000.h5
fresh rh
$edit flip "$TMPD/rh/$I/$S" "$(($(grep -obUaP OHDR "$TMPD/good/$I/$S" | head -n 1 | cut -d: -f1) + 20))"
run "$GPT3D" ckpt verify "$TMPD/rh"
is "$rc" 1 "a flipped byte in a shard's root object header is refused"
like "$out" "$S is damaged: the attributes of its root group cannot be read" "... as damaged"
unlike "$out" "not a gpt3d checkpoint file" "... not as a foreign file"

# ---- 16. a refusal prints gpt3d's message only -----------------------------------------------------
offsets=$($edit metadata-offsets "$TMPD/good/$I/$S" 12)
fresh h16
bad=""
for off in $offsets; do
    $edit flip "$TMPD/h16/$I/$S" "$off"
    run "$GPT3D" ckpt verify "$TMPD/h16"
    other=$(printf '%s\n' "$out" | grep -Ev "^(error|warning|info): |^$TMPD/h16: FAULTY|^[0-9]+ faults? found" || true)
    if [ "$rc" != 1 ] || [ -n "$other" ]; then bad="$bad $off:$(printf '%s' "$other" | head -c 60)"; fi
    $edit flip "$TMPD/h16/$I/$S" "$off"
done
is "$bad" "" "12 flipped bytes in a shard's metadata: every line verify prints is gpt3d's (no 'infinite loop closing library')"

# ---- 7, 8. generate and NaN ------------------------------------------------------------------------
"$py" -c "
import json, sys
v = json.load(open(sys.argv[1]))
keys = sorted(v, key=v.get)
a, b = keys[100], keys[101]
v[a], v[b] = v[b], v[a]
json.dump(v, open(sys.argv[2], 'w'))" "$D/vocab.json" "$TMPD/perm.json"
run "$GPT3D" generate --load "$TMPD/good" --vocab-file "$TMPD/perm.json" --merge-file "$D/merges.txt" --prompt "And God" --max-new-tokens 4
is "$rc" 1 "generate with a permuted --vocab-file (same size) is refused"
like "$out" "was made with the vocabulary file .* but --vocab-file $TMPD/perm.json has sha256" "... naming the checkpoint's vocabulary record"
run "$GPT3D" generate --load "$TMPD/good" --vocab-file "$D/vocab.json" --merge-file "$D/merges.txt" --prompt "And God" --max-new-tokens 4
is "$rc" 0 "... the right files generate"
fresh nan
$edit nan-piece "$TMPD/nan/$I" model/final_layernorm.weight
resume nan
is "$rc" 78 "a checkpoint holding NaN parameters (checksums redone) is refused by the resume"
like "$out" "holds non-finite parameters \(NaN or infinity.*saved from a run that had diverged" "... naming the checkpoint as the cause"
unlike "$out" "Lower --lr" "... not advising a lower --lr"
resume nan --load-fallback
is "$rc" 0 "... --load-fallback resumes iteration 2"
run "$GPT3D" generate --load "$TMPD/nan" --prompt "And God" --max-new-tokens 4
is "$rc" 1 "generate refuses the NaN checkpoint"
unlike "$out" "%%%%" "... and prints no text"
rm -rf "${TMPD:?}/div" "$TMPD/div.run"
train 1 --lr 1e308 --lr-warmup-iters 0 --save "$TMPD/div" --run-dir "$TMPD/div.run"
is "$rc" 79 "one iteration at --lr 1e308: exit 79"
like "$out" "not saving the checkpoint of iteration 1: the parameters hold NaN or infinity" "... saying why nothing is saved"
[ ! -e "$TMPD/div/latest" ]; is $? 0 "... and no checkpoint is committed"

done_testing
