#!/bin/sh
# gpt3d eval and gpt3d generate on checkpoints of the real trainer (src/cli/cmd_eval.c,
# cmd_generate.c, src/infer with its ckpt_model.c).  A tiny GPT trained on one rank, saving
# at iterations 30 and 60: eval reports the validation losses the trainer reported at both
# (bitwise, and whatever the micro-batch), and the test split; generate --greedy prints the
# trainer's own greedy sample; seeded sampling is reproducible, streams valid UTF-8 and equals
# its --output-file; the prompt from a file and from stdin; PyTorch (h5py + the training
# tests' reference GPT) picks the same greedy tokens and computes the same eval loss; a
# checkpoint saved by TP 2 x PP 2 under mpirun evaluates and generates on one rank like the
# 4-rank trainer did; every bad input exits non-zero with one message naming the thing and
# the fix.  (top_srcdir, top_builddir, GPT3D, MPIRUN, PYTHON_REF come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e

g3_tmpdir
D="$TMPD/data"
g3_byte_corpus "$D" light 300
export OMP_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
py=${PYTHON_REF:-/usr/bin/python3}

flags="--data-path $D/verses --vocab-file $D/vocab.json --merge-file $D/merges.txt --split 90,5,5
 --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
 --global-batch-size 8 --train-iters 60 --lr 1e-2 --lr-warmup-iters 5 --log-interval 20
 --eval-iters 2 --eval-interval 30 --save-interval 30 --sample-tokens 40 --prompt"
prompt="And God"
R="$TMPD/run"
# shellcheck disable=SC2086
run "$GPT3D" train $flags "$prompt" --save "$R/ck" --run-dir "$R"
is "$rc" 0 "a tiny GPT trains on one rank, saving at iterations 30 and 60"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -12 | sed 's/^/#   /'
train_sample=$(printf '%s\n' "$out" | sed -n '/^sample (greedy/,$p' | sed 1d)
# vloss RUN ITER: the trainer's validation loss at ITER in RUN's metrics
vloss() { grep "\"event\":\"eval\".*\"iteration\":$2," "$1" | sed 's/.*"loss":\([^,]*\),.*/\1/'; }
# eloss FILE [SPLIT]: the loss gpt3d eval wrote last for SPLIT (valid)
eloss() { grep "\"split\":\"${2:-valid}\"" "$1" | tail -n 1 | sed 's/.*"loss":\([^,]*\),.*/\1/'; }
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }

# ---- eval: the trainer's validation losses
M="$TMPD/eval.jsonl"
run "$GPT3D" eval --load "$R/ck" --metrics-file "$M" --debug-batch-dump "$TMPD/batches.bin"
is "$rc" 0 "gpt3d eval --load DIR: exit 0"
like "$out" 'gpt3d eval: checkpoint .*/ck/iter_0000060 \(iteration 60, saved by TP 1 x PP 1 x DP 1\): GPT 2 layers, hidden 32, 4 heads' \
    "it names the checkpoint and the model it read from it"
like "$out" ' validation loss at iteration 60 \| lm loss value: [0-9.]+E[+-][0-9]+ \| lm loss PPL: [0-9.]+E[+-][0-9]+ \|' \
    "it prints the loss and perplexity the way the trainer does"
is "$(eloss "$M")" "$(vloss "$R/metrics.jsonl" 60)" "its validation loss is the trainer's at iteration 60, to all 9 digits"
like "$(tail -n 1 "$M")" '^\{"event":"eval","split":"valid","iteration":60,"loss":[0-9.]+,"ppl":[0-9.]+,"final":false,"samples":16,"checkpoint":".*/iter_0000060"\}$' \
    "--metrics-file gets the trainer's eval record plus the samples and the checkpoint"
run "$GPT3D" eval --load "$R/ck" --ckpt-step 30 --metrics-file "$M"
is "$(eloss "$M")" "$(vloss "$R/metrics.jsonl" 30)" "--ckpt-step 30: the trainer's validation loss at iteration 30"
run "$GPT3D" eval --load "$R/ck/iter_0000030" --micro-batch-size 1 --metrics-file "$M"
a=$(eloss "$M")
if within "$a" "$(vloss "$R/metrics.jsonl" 30)" 1e-6; then r=0; else r=1; fi
is "$r" 0 "an iter_ directory with another micro-batch: the same loss within 1e-6 ($a)"
run "$GPT3D" eval --load "$R/ck" --eval-split valid,test --eval-iters 1 --metrics-file "$M"
like "$out" ' test loss at iteration 60 \| lm loss value: ' "--eval-split valid,test: a test loss line too"
is "$(grep -c '"iteration":60,' "$M")" 3 "and one more record per split"

# ---- generate: the trainer's sample, seeds, the prompt's sources, UTF-8
G="$TMPD/gen.json"
run "$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --greedy --output-file "$G"
is "$rc" 0 "gpt3d generate --greedy: exit 0"
gen=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 40 --greedy 2>/dev/null)
is "$gen" "$train_sample" "greedy text equals the trainer's --sample-tokens 40 sample"
like "$(cat "$G")" '"prompt_ids":\[[0-9,]+\],"ids":\[[0-9,]+\],"text":"And God.*","stop":"max-new-tokens"\}' \
    "--output-file holds the prompt and generated ids, the text and why it stopped"
s1=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 30 --seed 5 --top-k 40 --temperature 1.3 --output-file "$TMPD/s1.json" 2>/dev/null)
s2=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 30 --seed 5 --top-k 40 --temperature 1.3 2>/dev/null)
s3=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 30 --seed 6 --top-k 40 --temperature 1.3 2>/dev/null)
is "$s1" "$s2" "the same --seed gives the same text"
if [ "$s1" != "$s3" ]; then r=0; else r=1; fi
is "$r" 0 "another --seed gives another text"
s4=$("$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 30 --seed 5 --top-k 40 --top-p 0.5 2>/dev/null)
if [ "$s4" != "$s1" ]; then r=0; else r=1; fi
is "$r" 0 "--top-p changes the draw"
if "$py" -c 'import json,sys; t = json.load(open(sys.argv[1]))["text"]; sys.stdout.write(t + "\n")' "$TMPD/s1.json" > "$TMPD/s1.txt" 2>/dev/null; then
    printf '%s\n' "$s1" > "$TMPD/s1.out"
    if cmp -s "$TMPD/s1.txt" "$TMPD/s1.out"; then r=0; else r=1; fi
    is "$r" 0 "the streamed text equals the whole text decoded at once (--output-file)"
else
    skip "$py cannot read the JSON"
fi
if printf '%s' "$s1" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1; then r=0; else r=1; fi
is "$r" 0 "the sampled text is valid UTF-8 (a character is never cut between tokens)"
printf '%s\n' "$prompt" > "$TMPD/prompt.txt"
f1=$("$GPT3D" generate --load "$R/ck" --prompt-file "$TMPD/prompt.txt" --max-new-tokens 40 --greedy 2>/dev/null)
is "$f1" "$train_sample" "--prompt-file (its trailing newline dropped) gives the same text"
f2=$(printf '%s\n' "$prompt" | "$GPT3D" generate --load "$R/ck" --max-new-tokens 40 --greedy 2>/dev/null)
is "$f2" "$train_sample" "the prompt on standard input gives the same text"
run "$GPT3D" generate --load "$R/ck" --prompt "$prompt" --max-new-tokens 5 --ignore-eod --seed 1
is "$rc" 0 "--ignore-eod runs"
: > "$TMPD/empty.txt"
run "$GPT3D" generate --load "$R/ck" --prompt-file "$TMPD/empty.txt" --max-new-tokens 5 --greedy --output-file "$TMPD/e.json"
is "$rc" 0 "an empty prompt file: exit 0"
like "$(cat "$TMPD/e.json")" '"prompt_ids":\[260\]' "an empty prompt starts from the end-of-document token"

# ---- the PyTorch reference
if "$py" -c 'import torch, h5py, numpy' >/dev/null 2>&1; then
    "$GPT3D" eval --load "$R/ck" --metrics-file "$TMPD/ref.jsonl" --debug-batch-dump "$TMPD/ref.bin" >/dev/null 2>&1
    "$GPT3D" generate --load "$R/ck" --prompt "In the beginning 3" --max-new-tokens 60 --greedy --output-file "$TMPD/ref.json" >/dev/null 2>&1
    run "$py" "$top_srcdir/tests/infer/infer_ref.py" "$R/ck/iter_0000060/index.h5" "$TMPD/ref.json" "$TMPD/ref.bin" "$TMPD/ref.jsonl"
    printf '%s\n' "$out" | grep -E '^(# |not ok)' | sed 's/^not ok/#   not ok/' || true
    is "$rc" 0 "PyTorch on the h5py weights: $(printf '%s\n' "$out" | grep -c '^ok') of $(printf '%s\n' "$out" | grep -c -E '^(not )?ok') checks (greedy ids, eval loss within 1e-5)"
else
    skip "$py has no torch/h5py/numpy (install Debian's python3-torch and python3-h5py)"
fi

# ---- a checkpoint saved by TP 2 x PP 2 (mpirun, 4 ranks) on one rank
if [ -n "${MPIRUN:-}" ] && command -v "$MPIRUN" >/dev/null 2>&1; then
    P="$TMPD/tp2pp2"
    # shellcheck disable=SC2086
    run "$MPIRUN" --oversubscribe -x OMP_NUM_THREADS -np 4 "$GPT3D" train $flags "$prompt" \
        --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --train-iters 30 \
        --distributed-timeout-minutes 1 --save "$P/ck" --run-dir "$P"
    is "$rc" 0 "TP 2 x PP 2 training under mpirun saves a checkpoint"
    psample=$(printf '%s\n' "$out" | sed -n '/^sample (greedy/,$p' | sed 1d)
    run "$GPT3D" eval --load "$P/ck" --metrics-file "$TMPD/p.jsonl"
    like "$out" 'saved by TP 2 x PP 2 x DP 1' "one rank loads the TP 2 x PP 2 checkpoint"
    a=$(eloss "$TMPD/p.jsonl")
    if within "$a" "$(vloss "$P/metrics.jsonl" 30)" 1e-6; then r=0; else r=1; fi
    is "$r" 0 "its validation loss is the 4-rank trainer's within 1e-6 ($a vs $(vloss "$P/metrics.jsonl" 30))"
    pgen=$("$GPT3D" generate --load "$P/ck" --prompt "$prompt" --max-new-tokens 40 --greedy 2>/dev/null)
    is "$pgen" "$psample" "greedy text equals the 4-rank trainer's sample"
else
    skip "no mpirun: the TP 2 x PP 2 checkpoint"
fi

# ---- bad inputs: non-zero exit, one message naming the thing and the fix
# bad WHAT CODE REGEX CMD...: the command exits CODE and says REGEX
bad() {
    what=$1 code=$2 re=$3
    shift 3
    run "$@"
    is "$rc" "$code" "$what: exit $code"
    like "$out" "$re" "$what: the message names it and the fix"
}
E="$TMPD/empty"
mkdir -p "$E"
bad "eval without --load" 2 'gpt3d eval needs --load DIR: the --save directory' "$GPT3D" eval
bad "generate without --load" 2 'gpt3d generate needs --load DIR' "$GPT3D" generate --prompt x
bad "--load of a missing directory" 1 "--load $TMPD/nope: No such file or directory; pass the --save directory" \
    "$GPT3D" eval --load "$TMPD/nope"
bad "--load of a directory without checkpoints" 1 "$E holds no checkpoint: it has neither a 'latest' file" \
    "$GPT3D" generate --load "$E" --prompt x
mkdir -p "$E/iter_0000010.tmp-0"
bad "only an unfinished save" 1 "holds no checkpoint" "$GPT3D" eval --load "$E"
echo iter_0000010 > "$E/latest"
bad "'latest' naming a checkpoint that is not there" 1 'latest names .*iter_0000010, which does not exist' \
    "$GPT3D" eval --load "$E"
bad "--ckpt-step of a missing iteration" 1 '--ckpt-step 45: .* has no committed checkpoint of that iteration \(it has: 30 60\)' \
    "$GPT3D" eval --load "$R/ck" --ckpt-step 45
bad "--ckpt-step that is not a number" 2 "--ckpt-step 'last' is neither an iteration" \
    "$GPT3D" eval --load "$R/ck" --ckpt-step last
C="$TMPD/corrupt"
cp -r "$R/ck" "$C"
f="$C/iter_0000060/model_tp00_pp000.h5"
size=$(wc -c < "$f")
# (the tensors sit after the metadata block, at the end of the file)
printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$((size - 20000)) conv=notrunc 2>/dev/null
bad "a corrupted checkpoint" 1 'could not load the checkpoint in .*iter_0000060; pass --load-fallback' "$GPT3D" eval --load "$C"
run "$GPT3D" eval --load "$C" --load-fallback --metrics-file "$TMPD/fb.jsonl"
is "$rc" 0 "--load-fallback evaluates the previous checkpoint instead"
is "$(eloss "$TMPD/fb.jsonl")" "$(vloss "$R/metrics.jsonl" 30)" "--load-fallback: the loss of iteration 30"
bad "--load-fallback with one iter_ directory" 2 '--load-fallback goes back from the latest checkpoint of a --save directory; --load .*iter_0000030 is one checkpoint' \
    "$GPT3D" eval --load "$C/iter_0000030" --load-fallback
bad "a model flag contradicting the checkpoint" 2 'checkpoint .*iter_0000060 has --hidden-size 32 but this command has --hidden-size 64' \
    "$GPT3D" eval --load "$R/ck" --hidden-size 64
bad "--seq-length beyond the positions" 2 '--seq-length 64 is outside what checkpoint .* can run: 1 .. 32' \
    "$GPT3D" generate --load "$R/ck" --prompt x --seq-length 64
sed 's/"<|endoftext|>": 260}/"zzq": 260, "<|endoftext|>": 261}/' "$D/vocab.json" > "$TMPD/v262.json"
bad "a vocabulary of another size" 2 "--vocab-file $TMPD/v262.json has 262 entries but checkpoint .* was trained with a vocabulary of 261: pass the vocabulary file it was trained with" \
    "$GPT3D" generate --load "$R/ck" --prompt x --vocab-file "$TMPD/v262.json"
bad "a data path that is not there" 1 "--data-path: $TMPD/none.bin does not exist or is not a file" \
    "$GPT3D" eval --load "$R/ck" --data-path "$TMPD/none"
# eval checks the data's ids against the checkpoint's vocabulary when it opens the data (#21.2)
cp "$D/verses.bin" "$TMPD/hi.bin"; cp "$D/verses.idx" "$TMPD/hi.idx"
printf '\377\377' | dd of="$TMPD/hi.bin" bs=1 seek=$(($(wc -c <"$TMPD/hi.bin") - 4)) conv=notrunc 2>/dev/null
bad "an id beyond the checkpoint's vocabulary (in the last document: the test split)" 1 "hi.bin': token id 65535 \(sequence [0-9]*, position [0-9]*, in the test split\) is outside the vocabulary.* of 261 ids" \
    "$GPT3D" eval --load "$R/ck" --data-path "$TMPD/hi" --eval-split test
bad "a --data-path of an odd word count" 2 '--data-path has 3 words: give PREFIX, or weight and prefix pairs' \
    "$GPT3D" eval --load "$R/ck" --data-path 1 "$TMPD/a" "$TMPD/b"
# shellcheck disable=SC2086
"$GPT3D" train $flags "$prompt" --train-iters 1 --lr-warmup-iters 0 --eval-iters 0 --sample-tokens 0 --save "$TMPD/noeval/ck" --run-dir "$TMPD/noeval" >/dev/null 2>&1 || true
bad "a run trained with --eval-iters 0" 2 'must be at least 1 \(got 0 from the checkpoint.s run\); pass --eval-iters N' \
    "$GPT3D" eval --load "$TMPD/noeval/ck"
bad "an unknown split" 2 "--eval-split 'valid,dev': 'dev' is not a split" "$GPT3D" eval --load "$R/ck" --eval-split valid,dev
bad "an empty split" 2 'the test split is empty under --split 100,0,0' "$GPT3D" eval --load "$R/ck" --eval-split test --split 100,0,0
bad "a micro-batch that does not divide the global batch" 2 '--global-batch-size 8 is not a multiple of --micro-batch-size 3' \
    "$GPT3D" eval --load "$R/ck" --micro-batch-size 3
bad "--temperature 0" 2 '--temperature must be greater than 0 \(got 0\); for deterministic output use --greedy' \
    "$GPT3D" generate --load "$R/ck" --prompt x --temperature 0
bad "a negative --temperature" 2 '--temperature must be greater than 0 \(got -1\)' \
    "$GPT3D" generate --load "$R/ck" --prompt x --temperature -1
bad "a negative --top-k" 2 '--top-k must be 0 \(all tokens\) or a positive count \(got -2\)' \
    "$GPT3D" generate --load "$R/ck" --prompt x --top-k -2
bad "--top-p above 1" 2 '--top-p must be in \[0, 1\] \(got 1.5' "$GPT3D" generate --load "$R/ck" --prompt x --top-p 1.5
bad "--greedy with --temperature" 2 '--greedy always takes the likeliest token, so --temperature, --top-k and --top-p mean nothing with it' \
    "$GPT3D" generate --load "$R/ck" --prompt x --greedy --temperature 0.5
bad "--prompt and --prompt-file" 2 '--prompt and --prompt-file both give the prompt: pass only one' \
    "$GPT3D" generate --load "$R/ck" --prompt x --prompt-file "$TMPD/prompt.txt"
bad "a missing --prompt-file" 1 "--prompt-file $TMPD/none.txt: No such file or directory" \
    "$GPT3D" generate --load "$R/ck" --prompt-file "$TMPD/none.txt"
long=$(printf 'And God said %.0s' 1 2 3 4 5 6 7 8 9 10)
bad "a prompt longer than the context" 2 '--prompt is [0-9]+ tokens, longer than the model.s context of 32 tokens \(--seq-length\): shorten it to at most 32 tokens' \
    "$GPT3D" generate --load "$R/ck" --prompt "$long"
bad "a prompt that is not UTF-8" 2 '--prompt is not valid UTF-8 \(byte 3\); pass UTF-8 text' \
    "$GPT3D" generate --load "$R/ck" --prompt "$(printf 'abc\377def')"
printf 'ok \300\200' > "$TMPD/bad.txt"
bad "a prompt file that is not UTF-8" 2 "--prompt-file $TMPD/bad.txt is not valid UTF-8 \\(byte 3\\)" \
    "$GPT3D" generate --load "$R/ck" --prompt-file "$TMPD/bad.txt"
run "$GPT3D" generate --load "$R/ck" --prompt x --temperature 0
is "$(printf '%s\n' "$out" | grep -c 'error')" 1 "a refused command prints exactly one error"
done_testing
