#!/bin/sh
# The sample index equals Megatron-LM's: tests/data/mmidx.py re-implements
# GPTDataset._build_index_mappings (numpy RandomState shuffles, Megatron's
# split rounding, sample_idx walk, separate last epoch) and
# build_blending_indices in Python, and every sample gpt3d returns through
# its public API is compared with it.  Also: the cache falls back to a
# per-user directory when the data directory is read-only, and
# --data-cache-path is honoured.
# Environment (GPT3D, top_srcdir, ...) comes from tests/local.mk, $out/$rc from lib.sh's run;
# $TOK and $V are word-split on purpose.
# shellcheck disable=SC1091,SC2154,SC2086,SC2010
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
MM="$top_srcdir/tests/data/mmidx.py"
DD="$top_builddir/tests/data/data_dump"
g3_need_numpy
export GPT3D_LOG_LEVEL=error

# numpy's RandomState(seed).shuffle, element for element.
for args in "1234 1" "1234 2" "1234 1000" "0 77777" "4294967295 5000"; do
    set -- $args
    "$DD" shuffle "$1" "$2" > "$TMPD/c.sh"
    "$PY" "$MM" shuffle "$1" "$2" > "$TMPD/py.sh"
    run cmp "$TMPD/c.sh" "$TMPD/py.sh"
    is "$rc" 0 "shuffle of $2 elements with seed $1 equals numpy's"
done

# Two synthetic datasets with random document sizes (some empty).
"$PY" - "$TMPD" <<'PYEOF'
import random, sys
random.seed(11)
for name, ndocs, base in (("a", 300, 0), ("b", 120, 20000)):
    with open("%s/%s.txt" % (sys.argv[1], name), "w") as f:
        for d in range(ndocs):
            n = 0 if random.random() < 0.08 else random.randint(1, 90)
            f.write(" ".join(str(base + (d * 13 + i) % 19000) for i in range(n)) + "\n")
PYEOF
"$DD" write "$TMPD/a" uint16 < "$TMPD/a.txt"
"$DD" write "$TMPD/b" int32 < "$TMPD/b.txt"

# compare NAME SPLIT SPLITSTR SEQ SEED N: all samples of one split.
compare() {
    name=$1; split=$2; splitstr=$3; seq=$4; seed=$5; n=$6
    case $split in train) k=0; nt=$n; nv=0; ns=0 ;; valid) k=1; nt=0; nv=$n; ns=0 ;; test) k=2; nt=0; nv=0; ns=$n ;; esac
    "$PY" "$MM" samples "$TMPD/$name" "$splitstr" "$seq" "$seed" "$n" "$k" 0 0 > "$TMPD/py.n"
    total=$(sed -n 's/^N //p' "$TMPD/py.n")
    "$PY" "$MM" samples "$TMPD/$name" "$splitstr" "$seq" "$seed" "$n" "$k" 0 "$total" > "$TMPD/py.s"
    "$DD" samples "$split" 0 "$total" "$seq" "$seed" "$nt" "$nv" "$ns" "$splitstr" - "$TMPD/$name" > "$TMPD/c.s"
    cmp -s "$TMPD/py.s" "$TMPD/c.s"
}
compare a train 949,50,1 16 1234 50
is $? 0 "one epoch (uint16 data): every sample equals Megatron's"
compare a train 949,50,1 16 1234 2000
is $? 0 "three epochs, the last used < 80% and shuffled on its own: equal to Megatron's"
compare a train 949,50,1 16 99 1336
is $? 0 "two epochs, the last used >= 80% and shuffled with the first: equal to Megatron's"
compare b train 80,15,5 33 7 400
is $? 0 "int32 data, another split and seed: equal to Megatron's"
compare b valid 80,15,5 8 7 100
is $? 0 "valid split: equal to Megatron's"
compare a test 90/5/5 5 1 20
is $? 0 "test split ('/' separators): equal to Megatron's"

# Blend 0.3 a + 0.7 b: Megatron's blending indices over Megatron's
# per-dataset samples (each asked for ceil(weight * N * 1.005)).
N=700
"$PY" - "$TMPD" "$MM" "$N" > "$TMPD/py.blend" <<'PYEOF'
import importlib.util, math, sys
import numpy as np
spec = importlib.util.spec_from_file_location("mmidx", sys.argv[2]); mm = importlib.util.module_from_spec(spec); spec.loader.exec_module(mm)
tmp, n = sys.argv[1], int(sys.argv[3])
weights = [0.3, 0.7]
srcs = []
for name, w in zip("ab", weights):
    code, sizes, pointers, _, tokens = mm.read_index("%s/%s" % (tmp, name))
    item = np.dtype(mm.DTYPES[code]).itemsize
    b = mm.split_bounds("949,50,1", len(sizes))
    docs = np.arange(b[0], b[1], dtype=np.int32)
    idx = mm.gpt_index(sizes, docs, 12, 5, int(math.ceil(n * w * 1.005)))
    seq = (lambda t, s, p, it: (lambda i: mm.sequence(t, s, p, i, it)))(tokens, sizes, pointers, item)
    srcs.append((seq, idx))
for k, s in mm.blend(weights, n):
    seq, (d, si, sh) = srcs[k]
    print(" ".join(str(int(x)) for x in mm.get_sample(seq, d, si, sh, s)))
PYEOF
"$DD" samples train 0 $N 12 5 $N 0 0 949,50,1 - 0.3 "$TMPD/a" 0.7 "$TMPD/b" | grep -v '^N ' > "$TMPD/c.blend"
run cmp "$TMPD/py.blend" "$TMPD/c.blend"
is "$rc" 0 "blend 0.3/0.7: every sample equals Megatron's BlendableDataset"

# Cache placement.  --data-cache-path wins:
mkdir "$TMPD/cachedir"
"$DD" samples train 0 3 16 1234 50 0 0 949,50,1 "$TMPD/cachedir" "$TMPD/a" > "$TMPD/cc"
is "$(ls "$TMPD/cachedir" | grep -c '^a-[0-9a-f]*_train_50ns_16sl_1234s_0-.*\.g3ix$')" 1 "--data-cache-path receives the cache (name tagged with the data path's hash)"

# A read-only data directory falls back to $XDG_CACHE_HOME/gpt3d/index.
mkdir -p "$TMPD/ro" "$TMPD/xdg"
cp "$TMPD/a.bin" "$TMPD/a.idx" "$TMPD/ro/"
if [ "$(id -u)" = 0 ]; then
    if command -v setpriv >/dev/null 2>&1; then
        chmod 755 "$TMPD" "$TMPD/ro"; chmod 777 "$TMPD/xdg"
        AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
    else
        AS=""
    fi
else
    chmod 555 "$TMPD/ro"
    AS="env"
fi
if [ -n "$AS" ]; then
    XDG_CACHE_HOME="$TMPD/xdg" $AS "$DD" samples train 0 20 16 1234 60 0 0 949,50,1 - "$TMPD/ro/a" > "$TMPD/ro.s"
    is "$?" 0 "a read-only data directory still works"
    is "$(ls "$TMPD/ro" | grep -c g3ix)" 0 "nothing was written into the read-only directory"
    is "$(ls "$TMPD/xdg/gpt3d/index" 2>/dev/null | grep -c '^a-[0-9a-f]*_train_60ns_16sl_1234s_.*\.g3ix$')" 1 "the cache went to \$XDG_CACHE_HOME/gpt3d/index"
    "$DD" samples train 0 20 16 1234 60 0 0 949,50,1 - "$TMPD/a" > "$TMPD/rw.s"
    run cmp "$TMPD/ro.s" "$TMPD/rw.s"
    is "$rc" 0 "the fallback cache gives the same samples"
    chmod -R u+w "$TMPD/ro"
else
    skip "running as root without setpriv: cannot make a directory read-only"
fi
done_testing
