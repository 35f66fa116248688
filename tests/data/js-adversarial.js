// Adversarial inputs for the tokenizer tests.  Usage:
//   node js-adversarial.js OUTDIR
// writes OUTDIR/case-NN.txt (one hand-picked string each) and
// OUTDIR/fuzz.txt (a seeded random mix of all of them and random code
// points from every plane), all UTF-8.
'use strict';
const fs = require('fs');
const path = require('path');
const out = process.argv[2];

const cases = [
    // contractions, including ones the pattern does not know
    "I'm sure you'll see it's what we'd've done, isn't it? They're here; we've won.",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'x ''s ' s  's 'll's",
    "don't DON'T o'clock rock'n'roll ’s ’ll",
    // digit runs and numbers in other scripts
    "1 12 123 1234 12345678901234567890 3.14159 1,000,000 -42 +7 0x1F 1e10",
    "٣٤٥ ١٢ Ⅻ ⅷ ½ ¾ x² 10⁶ ①②③ 𝟘𝟙𝟚",
    // whitespace: runs, trailing, tabs, CR, newlines, exotic blanks
    "a  b   c    d\t\te\r\nf\n\n\ng   \n  h",
    "trailing spaces   ",
    "   leading spaces",
    " \n \n\t \u00a0\u00a0x\u2003y\u3000z\u2028\u2029\ufeff end \ufeff",
    "\n",
    " ",
    "\u0085next line\u0085 \u200bzero width\u200b \u180e",
    // punctuation and symbols
    "Hello, world!!! ...what?!? (yes) [no] {maybe} <tag/> \"quoted\" 'single' `back` ~~~ ### $$$ %%% ^^^ &&& *** ___ +++ === ||| \\\\ //",
    "\",\" \",\",\" ,\", ,, ,,, a,b,c \"\\\"\"",
    "<|endoftext|> <|endoftext|>hello <| endoftext |>",
    // accented Latin, precomposed and combining
    "Café naïve résumé Ångström façade São Paulo Øresund Straße İstanbul ǅemal",
    "Cafe\u0301 nai\u0308ve e\u0301\u0301\u0301 \u0301start a\u0300\u0316\u0317b",
    // other scripts
    "中文测试，这是一个句子。日本語のテキスト、カタカナ。한국어 문장입니다.",
    "Ελληνικά κείμενο Русский текст עברית עברית العربية نص हिन्दी पाठ ไทย",
    // emoji, ZWJ sequences, modifiers, flags, astral letters
    "😀 👍🏽 👨‍👩‍👧‍👦 🇺🇸🇫🇷 ❤️ 🏳️‍🌈 a😀b 😀😀😀",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈𐌰𐌹 𠀀𠀁 \u{10FFFD}",
    // long words and runs
    "supercalifragilisticexpialidocious".repeat(40),
    "9".repeat(3000),
    "!?".repeat(1500),
    " ".repeat(500) + "x" + "\n".repeat(300),
    // mixed-class words
    "abc123def ABC_def foo-bar foo.bar x1y2z3 3rd 21st ab'cd",
];

fs.mkdirSync(out, { recursive: true });
cases.forEach((s, i) => fs.writeFileSync(path.join(out, `case-${String(i).padStart(2, '0')}.txt`), s));

// Fuzz: a fixed-seed mix of the pieces of the cases and random code points.
let seed = 20240611;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const pieces = [];
for (const c of cases)
    for (const p of c.slice(0, 200).split(/(\s+)/u)) if (p.length) pieces.push(p);
let fuzz = '';
for (let i = 0; i < 60000; i++) {
    if (rnd(8) === 0) {
        let cp;
        do { cp = rnd(3) ? rnd(0x3000) : rnd(0x110000); } while (cp >= 0xd800 && cp <= 0xdfff);
        fuzz += String.fromCodePoint(cp);
    } else {
        fuzz += pieces[rnd(pieces.length)];
    }
}
fs.writeFileSync(path.join(out, 'fuzz.txt'), fuzz);
