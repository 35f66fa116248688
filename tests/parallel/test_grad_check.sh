#!/bin/sh
# grad_check itself, on dumps this test writes (the format of src/parallel/dump.c): the plain
# relative tolerance, and --key-bias-abs, which holds the key third of each
# attention.qkv.bias to an absolute bound and its query and value thirds to the relative
# tolerance (test_parallel_cuda.sh's parameter check; why, in grad_check.c).
# (top_srcdir, top_builddir come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

check="$top_builddir/tests/parallel/grad_check"
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# dump DIR Q K V W: params-rank00000.bin with layers.0.attention.qkv.bias (6,) = [q q k k v v]
# (each part's two elements Q, K, V) and layers.0.mlp.fc.weight (2,) = [W W]
dump() {
    mkdir -p "$1"
    python3 - "$1/params-rank00000.bin" "$2" "$3" "$4" "$5" <<'PY'
import struct, sys
path, q, k, v, w = sys.argv[1], *map(float, sys.argv[2:])
def rec(name, vals):
    n = name.encode()
    out = struct.pack("<I", len(n)) + n + struct.pack("<Iqq", 1, len(vals), 1)
    out += struct.pack("<Q", len(vals)) + struct.pack("<%dQ" % len(vals), *range(len(vals)))
    return out + struct.pack("<%df" % len(vals), *vals)
with open(path, "wb") as f:
    f.write(b"gpt3d-grad-dump\n" + struct.pack("<II", 1, 0))
    f.write(rec("layers.0.attention.qkv.bias", [q, q, k, k, v, v]))
    f.write(rec("layers.0.mlp.fc.weight", [w, w]))
PY
}

dump "$TMPD/ref" 0.10 0.02 0.05 1.0
dump "$TMPD/keynoise" 0.10 -0.03 0.05 1.0    # the key part moved by 0.05: half the max 0.10
dump "$TMPD/querymoved" 0.13 0.02 0.05 1.0   # the query part moved by 0.03 (0.3 of 0.10)
dump "$TMPD/weightmoved" 0.10 0.02 0.05 1.5  # another tensor moved

run "$check" --what params --tol 0.1 "$TMPD/ref" "$TMPD/ref"
is "$rc" 0 "a run against itself passes"
run "$check" --what params --tol 0.1 "$TMPD/ref" "$TMPD/keynoise"
is "$rc" 1 "without --key-bias-abs the key part's 0.05 fails the bias's relative tolerance 0.1"
like "$out" "FAIL layers.0.attention.qkv.bias: relative error 0.5," "... naming the tensor and its error"
run "$check" --what params --tol 0.1 --key-bias-abs 0.06 "$TMPD/ref" "$TMPD/keynoise"
is "$rc" 0 "with --key-bias-abs 0.06 the key part's 0.05 passes"
like "$out" "ok   layers.0.attention.qkv.bias: relative error 0 \\(query and value\\), key third within 0.05 \\(bound 0.06\\)" \
    "... and the line says which part was held to what"
run "$check" --what params --tol 0.1 --key-bias-abs 0.04 "$TMPD/ref" "$TMPD/keynoise"
is "$rc" 1 "with --key-bias-abs 0.04 the key part's 0.05 fails"
like "$out" "key third: largest difference 0.05 \\(bound 0.04\\)" "... saying by how much"
run "$check" --what params --tol 0.1 --key-bias-abs 0.06 "$TMPD/ref" "$TMPD/querymoved"
is "$rc" 1 "--key-bias-abs does not hide the query part: 0.03 against its largest 0.10 fails 0.1"
run "$check" --what params --tol 0.1 --key-bias-abs 0.06 "$TMPD/ref" "$TMPD/weightmoved"
is "$rc" 1 "... nor other tensors"
like "$out" "FAIL layers.0.mlp.fc.weight: relative error 0.5," "... naming the tensor"

done_testing
