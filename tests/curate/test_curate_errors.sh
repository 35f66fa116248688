#!/bin/sh
# Bad inputs to gpt3d curate: invalid JSON, invalid UTF-8, a 100 MB line, an empty shard, a
# shard missing from the list, a bad stage or task number: each gets a message naming the file
# and line (or the flag), a non-zero exit, and leaves no output under a final name (nor a
# temporary one).
# (top_srcdir, GPT3D come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
g3_tmpdir
good='{"text": "a b c d e f g h", "id": 1}'
printf '%s\n%s\n' "$good" "$good" > "$TMPD/good.jsonl"

# check NAME FILE REGEX: minhash and filter on [good.jsonl, FILE] fail with REGEX, exit 1, and
# leave only the good shard's outputs (shard 0), no shard-00001.* and no temporary file.
check() {
    name=$1 file=$2 regex=$3
    printf '%s\n%s\n' "$TMPD/good.jsonl" "$file" > "$TMPD/list"
    for stage in minhash filter; do
        rm -rf "$TMPD/out"
        run "$GPT3D" curate "$stage" --shard-list "$TMPD/list" --output-dir "$TMPD/out"
        is "$rc" 1 "$name, $stage: exit 1"
        like "$out" "$regex" "$name, $stage: the message names the file and line"
        left=$(find "$TMPD/out" -name 'shard-00001*' -o -name '*.tmp.*' 2>/dev/null | wc -l)
        is "$left" 0 "$name, $stage: no output of the bad shard, final or temporary"
    done
}

printf '%s\n%s\n{"text": "x", }\n' "$good" "$good" > "$TMPD/badjson.jsonl"
check "invalid JSON" "$TMPD/badjson.jsonl" "badjson.jsonl line 3, column 15: .*JSON"
printf '%s\n{"text": "caf\351"}\n' "$good" > "$TMPD/badutf8.jsonl"
check "invalid UTF-8" "$TMPD/badutf8.jsonl" "badutf8.jsonl line 2, byte 14: invalid UTF-8"
printf '{"text": "x"}\n' > "$TMPD/nokey.jsonl"
printf '{"body": "x"}\n' >> "$TMPD/nokey.jsonl"
check "no text key" "$TMPD/nokey.jsonl" "nokey.jsonl line 2: the JSON object has no key \"text\""
{ printf '%s\n{"text": "' "$good"; head -c 104857600 /dev/zero | tr '\0' a; printf '"}\n'; } > "$TMPD/huge.jsonl"
check "a 100 MB line" "$TMPD/huge.jsonl" "huge.jsonl line 2: the line is longer than 67108864 bytes"
rm -f "$TMPD/huge.jsonl"
: > "$TMPD/empty.jsonl"
check "an empty shard" "$TMPD/empty.jsonl" "line 2: shard '.*empty.jsonl' is empty \(0 bytes\); remove it from the list or pass --allow-empty"
run "$GPT3D" curate minhash --shard-list "$TMPD/list" --output-dir "$TMPD/out" --allow-empty
is "$rc" 0 "--allow-empty accepts it"

printf '%s\n# a comment\n%s\n' "$TMPD/good.jsonl" "$TMPD/missing.jsonl" > "$TMPD/list"
rm -rf "$TMPD/out"
run "$GPT3D" curate minhash --shard-list "$TMPD/list" --output-dir "$TMPD/out"
is "$rc" 1 "a missing shard: exit 1"
like "$out" "shard list '.*list' line 3: shard '.*missing.jsonl' does not exist" "a missing shard: named with the list's line"
is "$(find "$TMPD/out" -type f 2>/dev/null | wc -l)" 0 "a missing shard: nothing written, not even the good shard's output"

echo "$TMPD/good.jsonl" > "$TMPD/list"
run "$GPT3D" curate minhsh --shard-list "$TMPD/list" --output-dir "$TMPD/out"
is "$rc" 2 "an unknown stage: usage error"
like "$out" "'minhsh' is not a stage .*did you mean 'minhash'" "... with a suggestion"
run "$GPT3D" curate minhash --shard-list "$TMPD/list" --output-dir "$TMPD/out" --task-id 3 --num-tasks 2
is "$rc" 2 "task 3 of 2: usage error"
like "$out" "task 3 of 2 tasks is out of range" "... naming the task"
run "$GPT3D" curate lsh --shard-list "$TMPD/list" --output-dir "$TMPD/out"
is "$rc" 2 "lsh without --minhash-dir: usage error"
run "$GPT3D" curate lsh --shard-list "$TMPD/list" --minhash-dir "$TMPD/nothing" --output-dir "$TMPD/out"
is "$rc" 1 "lsh without signatures: exit 1"
like "$out" "cannot open the signatures '.*nothing/shard-00000.mh' of shard 0 .*run the minhash stage on every shard first" "... saying which file and what to run"
run "$GPT3D" curate dedup --shard-list "$TMPD/list" --lsh-dir "$TMPD/nothing" --output-dir "$TMPD/out"
is "$rc" 1 "dedup without the duplicate list: exit 1"
like "$out" "duplicates.tsv" "... naming it"
done_testing
