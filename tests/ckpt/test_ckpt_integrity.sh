#!/bin/sh
# Checkpoint integrity through the real commands (issue 13): every damage that
# `gpt3d ckpt verify` rejects is rejected by `gpt3d train --load` too, with exit 78 (verify: 1) and a
# message naming the file; the index's consumed_samples / consumed_tokens are checksummed
# (and compared with /state); the files are written in HDF5's checksummed format (superblock
# version 2, h5py reads them) and a flipped byte anywhere in a shard's or the index's
# metadata is refused cleanly; format-version-1 checkpoints still load; an unusable --save
# is refused before training (exit 2); the messages for a missing, binary or directory
# `latest`, a --no-save-optim checkpoint and a full disk.
# (top_srcdir, top_builddir, GPT3D, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

py=${PYTHON_REF:-/usr/bin/python3}
"$py" -c 'import h5py, numpy' 2>/dev/null || skip_all "h5py or numpy missing in $py (Debian: python3-h5py)"
edit="$py $top_srcdir/tests/ckpt/edit_ckpt.py"
g3_tmpdir
MNT=""
# a tmpfs mounted by the full-disk case is unmounted before the directory goes
trap '[ -z "$MNT" ] || umount "$MNT" 2>/dev/null; rm -rf "$TMPD"' EXIT
# shellcheck source=tests/ckpt/ckpt_lib.sh
. "$top_srcdir/tests/ckpt/ckpt_lib.sh"

# refused NAME FILE WHAT: verify (exit 1) and the resume of $TMPD/NAME (exit 78: the checkpoint
# cannot be loaded) refuse it, naming FILE
refused() {
    run "$GPT3D" ckpt verify "$TMPD/$1"
    v_rc=$rc v_out=$out
    train 6 --load "$TMPD/$1" --save "$TMPD/$1" --run-dir "$TMPD/$1.run"
    if [ "$v_rc" = 1 ] && [ "$rc" = 78 ] && printf '%s' "$v_out" | grep "$2" >/dev/null && printf '%s' "$out" | grep "$2" >/dev/null &&
       ! printf '%s' "$out" | grep "resumed from" >/dev/null; then
        tap_result 0 "$3: verify and train --load refuse it (exit 1 and 78), naming $2"
    else
        tap_result 1 "$3: verify exit $v_rc, train --load exit $rc (want 1 and 78, naming $2)"
        diag "verify: $(printf '%s' "$v_out" | grep -m2 error)"
        diag "load: $(printf '%s' "$out" | grep -m2 error)"
    fi
}
I=iter_0000004

train 4 --save "$TMPD/good" --run-dir "$TMPD/good.run"
is "$rc" 0 "a 4-iteration run saves its checkpoint"
run "$GPT3D" ckpt verify "$TMPD/good"
is "$rc" 0 "verify: the checkpoint is good"
fresh ref
train 6 --load "$TMPD/ref" --save "$TMPD/ref" --run-dir "$TMPD/ref.run"
is "$rc" 0 "the intact copy resumes"
ref_losses=$(grep '"event":"train"' "$TMPD/ref.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' ')

# ---- 1. consumed_samples / consumed_tokens are checksummed -------------------------------------
fresh cs
$edit flip-bit-attr "$TMPD/cs/$I/index.h5" / consumed_samples 2       # 32 -> 36 samples
refused cs "consumed_samples" "one bit of the index's consumed_samples flipped"
like "$v_out" "root attribute consumed_samples \(36\) fails its checksum" "... verify says which field and value"
fresh ct
$edit flip-bit-attr "$TMPD/ct/$I/index.h5" / consumed_tokens 3
refused ct "consumed_tokens" "one bit of the index's consumed_tokens flipped"

# ---- format version 1 (written before checksummed metadata) still loads -------------------------
$edit make-v1 "$TMPD/good/$I" "$TMPD/v1/$I"
cp "$TMPD/good/latest" "$TMPD/v1/latest"
is "$($edit superblock "$TMPD/v1/$I/model_tp00_pp000.h5")" 0 "a version-1 copy (h5repack: superblock version 0, no progress checksums)"
run "$GPT3D" ckpt verify "$TMPD/v1"
is "$rc" 0 "verify accepts the version-1 checkpoint"
train 6 --load "$TMPD/v1" --save "$TMPD/v1" --run-dir "$TMPD/v1.run"
is "$rc" 0 "train --load resumes the version-1 checkpoint"
is "$(grep '"event":"train"' "$TMPD/v1.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' ')" \
   "$ref_losses" "... with the losses of the version-2 resume, bitwise"
rm -rf "$TMPD/v1" "$TMPD/v1.run"
$edit make-v1 "$TMPD/good/$I" "$TMPD/v1/$I"
cp "$TMPD/good/latest" "$TMPD/v1/latest"
$edit flip-bit-attr "$TMPD/v1/$I/index.h5" / consumed_samples 2
train 6 --load "$TMPD/v1" --save "$TMPD/v1" --run-dir "$TMPD/v1.run"
is "$rc" 78 "a version-1 index whose consumed_samples was altered is refused by the resume (exit 78)"
like "$out" "consumed_samples 36 in index.h5 disagrees with state/data_sampler \(32" "... comparing it with the checksummed copy under /state"

# ---- 2. HDF5 metadata with checksums; a flipped metadata byte is refused --------------------------
sb=""
for f in index.h5 model_tp00_pp000.h5 optim_tp00_pp000_dp000.h5; do
    sb="$sb$($edit superblock "$TMPD/good/$I/$f") "
done
is "$sb" "2 2 2 " "every file has superblock version 2 (HDF5 1.8 format: checksummed superblock and object headers)"
run "$py" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
n = 0
for t in f['tensors']['name']:
    f[t.decode()][...]
    n += 1
print(n, f.attrs['consumed_samples'][0])" "$TMPD/good/$I/index.h5"
is "$out" "84 32" "h5py (HDF5 1.10) reads every tensor of the index and its attributes"
# flip FILE OFFSET: xor the byte at OFFSET with 0x10 (twice restores it)
flip() {
    _b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    # shellcheck disable=SC2059
    printf "\\$(printf %o $((_b ^ 16)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
fresh flip
for f in model_tp00_pp000.h5:60 index.h5:60 optim_tp00_pp000_dp000.h5:30; do
    name=${f%:*} count=${f#*:}
    offsets=$($edit metadata-offsets "$TMPD/good/$I/$name" "$count")
    nv=0 nl=0 bad="" k=0
    for off in $offsets; do
        flip "$TMPD/flip/$I/$name" "$off"
        run "$GPT3D" ckpt verify "$TMPD/flip"
        nv=$((nv + 1))
        if [ "$rc" != 1 ] || ! printf '%s' "$out" | grep "$name" >/dev/null; then
            bad="$bad verify@$off:rc=$rc"
        fi
        # the resume, at every fourth offset (a training start costs more than a verify)
        if [ $((k % 4)) = 0 ]; then
            train 6 --load "$TMPD/flip" --save "$TMPD/flip.save" --run-dir "$TMPD/flip.run"
            nl=$((nl + 1))
            if [ "$rc" != 78 ] || ! printf '%s' "$out" | grep "$name" >/dev/null; then
                bad="$bad load@$off:rc=$rc"
            fi
        fi
        flip "$TMPD/flip/$I/$name" "$off"
        k=$((k + 1))
    done
    is "$bad" "" "$name: each of $nv flipped metadata bytes is refused by verify ($nv) and train --load ($nl), exit 1 and 78, naming the file"
    [ "$nv" -ge "$count" ]; is $? 0 "... ($nv offsets spread over the metadata)"
done
cmp -s "$TMPD/flip/$I/index.h5" "$TMPD/good/$I/index.h5" && [ ! -e "$TMPD/flip.save/latest" ]
is $? 0 "... (each flip was undone; no resume saved anything)"

# ---- 3. train --load runs verify's checks ---------------------------------------------------------
fresh c1
$edit set-attr "$TMPD/c1/$I/model_tp00_pp000.h5" "model/final_layernorm.weight#0" crc32c 12345 u32
refused c1 "model_tp00_pp000.h5" "a piece's stored crc32c attribute changed"
fresh c2
$edit manifest-flip "$TMPD/c2/$I/optim_tp00_pp000_dp000.h5"
refused c2 "optim_tp00_pp000_dp000.h5" "a byte of a shard's table of contents (/manifest) flipped"
fresh c3
$edit manifest-row "$TMPD/c3/$I/model_tp00_pp000.h5" edit
refused c3 "model_tp00_pp000.h5" "a /manifest row's checksum edited, the table's checksum redone"
fresh c4
$edit manifest-row "$TMPD/c4/$I/model_tp00_pp000.h5" drop
refused c4 "model_tp00_pp000.h5" "a /manifest row dropped, the table's checksum redone"
fresh c5
$edit set-attr "$TMPD/c5/$I/model_tp00_pp000.h5" / tp 1 i32
refused c5 "model_tp00_pp000.h5" "a shard's tp attribute changed"
fresh c6
$edit set-attr "$TMPD/c6/$I/optim_tp00_pp000_dp000.h5" / iteration 2 i64
refused c6 "optim_tp00_pp000_dp000.h5" "a shard's iteration attribute changed"
fresh c7
$edit vds "$TMPD/c7/$I/index.h5" model/final_layernorm.weight delete
refused c7 "index.h5" "a tensor's virtual dataset removed from the index"
fresh c8
$edit vds "$TMPD/c8/$I/index.h5" model/final_layernorm.weight plain
refused c8 "index.h5" "a tensor's virtual dataset replaced by a plain dataset"
fresh c9
$edit vds "$TMPD/c9/$I/index.h5" model/final_layernorm.weight retarget
refused c9 "index.h5" "a tensor's virtual dataset mapped onto another tensor's piece"
fresh c10
$edit piece-type "$TMPD/c10/$I/model_tp00_pp000.h5" "model/final_layernorm.bias#0"
refused c10 "model_tp00_pp000.h5" "a piece stored as float64 (attributes kept)"
fresh c11
$edit pieces-crc "$TMPD/c11/$I/index.h5"
refused c11 "model_tp00_pp000.h5" "a piece's checksum in the index's /pieces edited, the table's checksum redone"

for c in c1:model_tp00_pp000.h5 c8:index.h5; do
    run "$GPT3D" ckpt export --format hf-gpt2 "$TMPD/${c%:*}" "$TMPD/${c%:*}.hf"
    e_rc=$rc e_out=$out
    run "$GPT3D" ckpt convert --tensor-model-parallel-size 1 "$TMPD/${c%:*}" "$TMPD/${c%:*}.cv"
    if [ "$e_rc" = 1 ] && [ "$rc" = 1 ] && printf '%s' "$e_out$out" | grep "${c#*:}" >/dev/null && [ ! -e "$TMPD/${c%:*}.cv/latest" ]; then
        tap_result 0 "export and convert refuse the damage of ${c%:*} too (exit 1, naming ${c#*:})"
    else
        tap_result 1 "export exit $e_rc, convert exit $rc for ${c%:*} (want 1 and 1, naming ${c#*:})"
    fi
done

# ---- 4. an unusable --save is refused before training --------------------------------------------
: > "$TMPD/afile"
train 4 --save "$TMPD/afile/ck" --run-dir "$TMPD/r4"
is "$rc" 2 "--save under a regular file (not a directory; root too) exits 2"
like "$out" "--save $TMPD/afile/ck cannot hold checkpoints" "... naming the directory"
unlike "$out" "iteration +1/" "... before any training"
mkdir -p "$TMPD/ro/ck"
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$TMPD/ro/ck"
    ro=1
elif mount --bind "$TMPD/ro/ck" "$TMPD/ro/ck" 2>/dev/null; then
    mount -o remount,ro,bind "$TMPD/ro/ck" "$TMPD/ro/ck" 2>/dev/null && ro=1 || ro=0
else
    ro=0
fi
if [ "$ro" = 1 ]; then
    train 4 --save "$TMPD/ro/ck" --run-dir "$TMPD/r4"
    is "$rc" 2 "an existing read-only --save directory exits 2"
    like "$out" "--save $TMPD/ro/ck is not writable: cannot create $TMPD/ro/ck/.gpt3d-probe-" "... naming it and the probe"
else
    skip "neither a non-root user nor a read-only bind mount (no CAP_SYS_ADMIN) is available"
    skip "(same)"
fi
if [ "$(id -u)" = 0 ]; then umount "$TMPD/ro/ck" 2>/dev/null || true; else chmod 755 "$TMPD/ro/ck"; fi
[ -z "$(ls -A "$TMPD/ro/ck")" ]; is $? 0 "... and the probe leaves nothing behind"

# ---- 5. messages ------------------------------------------------------------------------------------
fresh m1
train 6 --load "$TMPD/m1" --save "$TMPD/m1" --run-dir "$TMPD/m1.run"
rm "$TMPD/m1/latest"
train 8 --load "$TMPD/m1" --save "$TMPD/m1" --run-dir "$TMPD/m1.run"
is "$rc" 78 "latest deleted, checkpoints present: the resume exits 78"
like "$out" "has no 'latest' file but holds 2 committed checkpoints \(iter_0000006, iter_0000004\): resume from the newest with --load $TMPD/m1/iter_0000006" \
     "... naming the checkpoints and the fix"
fresh m2
printf 'iter_\001\002\377\033[31mred%0200d' 5 > "$TMPD/m2/latest"
train 8 --load "$TMPD/m2" --save "$TMPD/m2" --run-dir "$TMPD/m2.run"
is "$rc" 78 "a binary latest is refused (exit 78)"
like "$out" "holds 'iter_.x01.x02.xff.x1b\[31mred0+\.\.\.', 216 bytes" "... shown escaped and cut at 40 bytes"
printf '%s' "$out" | LC_ALL=C grep -q "$(printf '[\001\002\033\377]')" && raw=1 || raw=0
is "$raw" 0 "... with no raw control byte in the output"
rm -rf "$TMPD/m3" "$TMPD/m3.run"
train 4 --save "$TMPD/m3" --run-dir "$TMPD/m3.run" --no-save-optim
train 6 --load "$TMPD/m3" --save "$TMPD/m3" --run-dir "$TMPD/m3.run"
is "$rc" 0 "a --no-save-optim checkpoint resumes"
is "$(printf '%s\n' "$out" | grep -c 'holds no optimizer state (saved with --no-save-optim): resuming with fresh Adam moments and step 0')" 1 \
   "... with one line saying the optimizer starts fresh"
is "$(printf '%s\n' "$out" | grep -c 'error')" 0 "... and no error"
fresh m5
rm "$TMPD/m5/latest"
mkdir "$TMPD/m5/latest"
train 6 --load "$TMPD/m5" --save "$TMPD/m5.save" --run-dir "$TMPD/m5.run"
is "$rc" 78 "latest replaced by a directory: the resume exits 78"
like "$out" "m5/latest is not a regular file \(it is a directory\)" "... saying so"
train 6 --save "$TMPD/m5" --run-dir "$TMPD/m5.run"
is "$rc" 2 "... and a run saving there is refused before training (exit 2)"
like "$out" "m5/latest is not a regular file \(it is a directory\), so no checkpoint can be committed there" "... saying why"
unlike "$out" "was not committed" "... not that a checkpoint was not committed"

# a full disk: a small tmpfs (root only); the asynchronous save reports the errno
mkdir "$TMPD/full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=900k tmpfs "$TMPD/full" 2>/dev/null; then
    MNT="$TMPD/full"
    train 6 --save "$TMPD/full/ck" --run-dir "$TMPD/full.run" --save-interval 2 --async-save
    is "$rc" 1 "an asynchronous save on a full disk fails the run with exit 1 (no crash)"
    like "$out" "No space left on device \(errno 28\)" "... reporting the errno as ENOSPC's words"
    unlike "$out" "no HDF5 error detail" "... not 'no HDF5 error detail'"
    is "$(cat "$TMPD/full/ck/latest")" "iter_0000002" "... latest still names the checkpoint of iteration 2"
    run "$GPT3D" ckpt verify "$TMPD/full/ck"
    is "$rc" 0 "... which passes verify"
    is "$(cd "$TMPD/full/ck" && echo *)" "iter_0000002 latest" "... and no debris is left"
    umount "$TMPD/full"
    MNT=""
else
    for _k in 1 2 3 4 5 6; do skip "mounting a tmpfs needs root"; done
fi

done_testing
