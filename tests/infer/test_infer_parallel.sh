#!/bin/sh
# gpt3d eval and gpt3d generate under mpirun with the trainer's layouts (src/cli/cmd_eval.c,
# cmd_generate.c, cmd_infer.c, world.c).  A tiny GPT trained on one rank: its eval under
# TP 2, PP 2, DP 2 and TP 2 x PP 2 equals the one-rank eval within 1e-6 relative (the
# reductions run in another order); a checkpoint saved by TP 2 evaluates the same under
# PP 2 and alone; greedy generation under TP 2, PP 2 and TP 2 x PP 2 gives the one-rank
# text and token ids (40 tokens after a 7-token prompt: the 32-token window slides);
# seeded sampling under TP 2 the one-rank text; rank 0 reads the prompt from standard
# input; layouts that do not fit the job or the model are refused with the trainer's
# messages (exit 2), by rank 0 alone.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_need_mpirun

g3_tmpdir
D="$TMPD/data"
g3_byte_corpus "$D" light 300
export OMP_NUM_THREADS=1
mpi() { g3_mpirun -x OMP_NUM_THREADS "$@"; }

flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
 --global-batch-size 8 --lr 1e-2 --lr-warmup-iters 5 --log-interval 20 --eval-iters 2
 --eval-interval 1000"
R="$TMPD/run"
# shellcheck disable=SC2086
run "$GPT3D" train $flags --train-iters 100 --save "$R/ck" --run-dir "$R"
is "$rc" 0 "a tiny GPT trains on one rank"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -12 | sed 's/^/#   /'

# eloss FILE: the loss gpt3d eval wrote last
eloss() { tail -n 1 "$1" | sed 's/.*"loss":\([^,]*\),.*/\1/'; }
# rel A B TOL: |A - B| <= TOL |B|
rel() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(a != "" && b != "" && d <= t * m) }'; }

# ---- eval: every layout gives the one-rank loss
M="$TMPD/one.jsonl"
run "$GPT3D" eval --load "$R/ck" --eval-split valid,test --metrics-file "$M"
is "$rc" 0 "eval on one rank"
one_valid=$(grep '"split":"valid"' "$M" | sed 's/.*"loss":\([^,]*\),.*/\1/')
one_test=$(grep '"split":"test"' "$M" | sed 's/.*"loss":\([^,]*\),.*/\1/')
# evalp NAME NP FLAGS...: eval under mpirun -np NP, compared with the one-rank losses
evalp() {
    name=$1 np=$2
    shift 2
    P="$TMPD/$np-$(echo "$*" | tr -dc 'a-z0-9')"
    run mpi -np "$np" "$GPT3D" eval --load "$R/ck" --eval-split valid,test --metrics-file "$P.jsonl" "$@"
    is "$rc" 0 "eval under $name ($np ranks): exit 0"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -8 | sed 's/^/#   /'
    v=$(grep -s '"split":"valid"' "$P.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/')
    t=$(grep -s '"split":"test"' "$P.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/')
    if rel "$v" "$one_valid" 1e-6 && rel "$t" "$one_test" 1e-6; then r=0; else r=1; fi
    is "$r" 0 "eval under $name: valid and test losses equal one rank's within 1e-6 relative ($v vs $one_valid, $t vs $one_test)"
}
evalp "TP 2" 2 --tensor-model-parallel-size 2
like "$out" 'layout: TP 2 x PP 1 x DP 1 = 2 ranks' "it prints the layout"
is "$(printf '%s\n' "$out" | grep -c 'validation loss at iteration 100')" 1 "rank 0 alone prints the result"
evalp "PP 2" 2 --pipeline-model-parallel-size 2
evalp "DP 2" 2
evalp "TP 2 x PP 2" 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
evalp "DP 2 with micro-batch 1" 2 --micro-batch-size 1

# ---- a checkpoint saved by TP 2 loads under other layouts
P2="$TMPD/tp2"
# shellcheck disable=SC2086
run mpi -np 2 "$GPT3D" train $flags --train-iters 10 --tensor-model-parallel-size 2 \
    --distributed-timeout-minutes 1 --save "$P2/ck" --run-dir "$P2"
is "$rc" 0 "TP 2 training under mpirun saves a checkpoint"
run "$GPT3D" eval --load "$P2/ck" --metrics-file "$P2/one.jsonl"
a=$(eloss "$P2/one.jsonl")
run mpi -np 2 "$GPT3D" eval --load "$P2/ck" --pipeline-model-parallel-size 2 --metrics-file "$P2/pp2.jsonl"
like "$out" 'saved by TP 2 x PP 1 x DP 1.*' "PP 2 loads the TP 2 checkpoint"
b=$(eloss "$P2/pp2.jsonl")
if rel "$b" "$a" 1e-6 && [ -n "$a" ]; then r=0; else r=1; fi
is "$r" 0 "the TP 2 checkpoint: PP 2 and one rank agree within 1e-6 relative ($b vs $a)"

# ---- generate: the one-rank tokens under every layout
prompt="And God"
G1="$TMPD/g1.json"
g1=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --greedy --output-file "$G1" 2>/dev/null)
ids() { sed 's/.*"ids":\(\[[0-9,]*\]\).*/\1/' "$1"; }
like "$(ids "$G1")" '^\[[0-9]+(,[0-9]+){39}\]$' "greedy generation on one rank: 40 token ids (past the 32-token context: the window slides)"
# genp NAME NP FLAGS...: greedy generation under mpirun -np NP
genp() {
    name=$1 np=$2
    shift 2
    G="$TMPD/g-$np-$(echo "$*" | tr -dc 'a-z0-9').json"
    set +e
    gp=$(mpi -np "$np" "$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --greedy --output-file "$G" "$@" 2>"$TMPD/err")
    rc=$?
    set -e
    is "$rc" 0 "greedy generation under $name: exit 0"
    [ "$rc" -eq 0 ] || tail -8 "$TMPD/err" | sed 's/^/#   /'
    is "$gp" "$g1" "greedy generation under $name: the one-rank text, printed once"
    is "$(ids "$G" 2>/dev/null)" "$(ids "$G1")" "greedy generation under $name: the one-rank token ids"
}
genp "TP 2" 2 --tensor-model-parallel-size 2
genp "PP 2" 2 --pipeline-model-parallel-size 2
genp "TP 2 x PP 2" 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
s1=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --seed 5 --top-k 40 --temperature 1.3 --output-file "$TMPD/s1.json" 2>/dev/null)
s2=$(mpi -np 2 "$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --seed 5 --top-k 40 --temperature 1.3 --tensor-model-parallel-size 2 --output-file "$TMPD/s2.json" 2>/dev/null)
is "$s2" "$s1" "seeded sampling (top-k 40, temperature 1.3) under TP 2: the one-rank text"
is "$(ids "$TMPD/s2.json")" "$(ids "$TMPD/s1.json")" "and the one-rank token ids"
s3=$(printf '%s\n' "$prompt" | mpi -np 2 "$GPT3D" generate --load "$R/ck" --max-new-tokens 40 --greedy --pipeline-model-parallel-size 2 2>/dev/null)
is "$s3" "$g1" "the prompt on standard input (rank 0 reads it) under PP 2: the one-rank text"

# ---- refused layouts: exit 2, rank 0's message, once
# bad WHAT REGEX CMD...: the command exits 2 and prints REGEX, from rank 0 alone
bad() {
    what=$1 re=$2
    shift 2
    run "$@"
    is "$rc" 2 "$what: exit 2"
    like "$out" "$re" "$what: the message names it and the fix"
    is "$(printf '%s\n' "$out" | grep -c 'rank [1-9][0-9]*/[0-9]*\] error')" 0 "$what: no other rank repeats it"
}
bad "TP 2 on one rank" "impossible layout: the job's 1 rank cannot be split into --tensor-model-parallel-size 2 x --pipeline-model-parallel-size 1 = 2 ranks per model replica" \
    "$GPT3D" eval --load "$R/ck" --tensor-model-parallel-size 2
bad "3 ranks for TP 2" "impossible layout: the job's 3 ranks cannot be split into --tensor-model-parallel-size 2 x --pipeline-model-parallel-size 1 = 2 ranks per model replica.*start a multiple of 2 ranks" \
    mpi -np 3 "$GPT3D" generate --load "$R/ck" --prompt x --tensor-model-parallel-size 2
bad "generate on more ranks than TP x PP" "impossible layout: gpt3d generate runs one model replica, but the job's 4 ranks are 2 replicas of --tensor-model-parallel-size 2 x --pipeline-model-parallel-size 1 = 2 ranks; start 2 ranks" \
    mpi -np 4 "$GPT3D" generate --load "$R/ck" --prompt x --tensor-model-parallel-size 2
bad "PP 4 for 2 layers" "--num-layers 2 is not divisible by --pipeline-model-parallel-size 4" \
    mpi -np 4 "$GPT3D" eval --load "$R/ck" --pipeline-model-parallel-size 4
bad "TP 3 for 4 heads" "--num-attention-heads 4 is not divisible by --tensor-model-parallel-size 3: each tensor-parallel rank computes whole heads" \
    mpi -np 3 "$GPT3D" eval --load "$R/ck" --tensor-model-parallel-size 3
bad "a global batch DP cannot share" "--global-batch-size 8 is not a multiple of --micro-batch-size 2 x data-parallel size 3" \
    mpi -np 3 "$GPT3D" eval --load "$R/ck"
done_testing
