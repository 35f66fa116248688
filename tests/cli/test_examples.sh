#!/bin/sh
# The example configurations the README and docs/slurm.md tell users to start from
# (docs/examples/*.conf, installed under $(docdir)/examples): every one is read by the
# trainer's flag table without an error and gives a layout that gpt3d plan accepts; the CPU
# example trains for two iterations on a small corpus (saving, as the batch suite does); a malformed line in a config is refused
# naming the file and the line.
# (top_srcdir, top_builddir, GPT3D come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
ex="$top_srcdir/docs/examples"

run "$GPT3D" plan --config "$ex/gpt-125m.conf" --nodes 4 --gpus-per-node 8 --device cuda
is "$rc" 0 "gpt-125m.conf: gpt3d plan on 4 nodes x 8 GPUs accepts it"
like "$out" 'parameters: 124,475,904 ' "gpt-125m.conf is GPT-2 124M (Megatron's padded vocabulary)"
like "$out" 'layout: TP 1 x PP 1 x DP 32 = 32 ranks on 4 nodes x 8' "gpt-125m.conf: every rank data-parallel"
like "$out" 'batches: micro 8 x DP 32 x 2 micro-batches .* = global 512 sequences' "gpt-125m.conf: global batch 512"

run "$GPT3D" plan --config "$ex/gpt-tiny-cpu.conf" --nodes 2 --gpus-per-node 1
is "$rc" 0 "gpt-tiny-cpu.conf: gpt3d plan on 2 nodes accepts it"

D="$TMPD/data"
g3_byte_corpus "$D" short 200
# shellcheck disable=SC2086
run "$GPT3D" train --config "$ex/gpt-tiny-cpu.conf" $g3_data --make-vocab-size-divisible-by 8 \
    --train-iters 2 --lr-warmup-iters 1 --eval-iters 1 --run-dir "$TMPD/run" --save "$TMPD/run/checkpoints"
is "$rc" 0 "gpt-tiny-cpu.conf trains two iterations on one rank"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -10 | sed 's/^/#   /'
like "$out" 'iteration +2/ +2 ' "gpt-tiny-cpu.conf: the command line's --train-iters wins over the file's"

printf 'num-layers = 4\nuse-distributed-optimizer\n' > "$TMPD/bad.conf"
run "$GPT3D" plan --config "$TMPD/bad.conf"
is "$rc" 2 "a config line without '= value' exits 2"
like "$out" "bad.conf:2\\): expected 'flag = value'" "the message names the file and the line"

done_testing
