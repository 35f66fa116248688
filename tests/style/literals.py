#!/usr/bin/env python3
"""Adjacent C string literals split across source lines ("abc "<newline> "def").

    literals.py --check FILE...   list each split (FILE:LINE), exit 1 when there is one
    literals.py --join FILE...    join them in place ("abc def"), print the count per file
    literals.py --long FILE...    list the lines over 100 columns (characters, tabs to 8) that
                                  hold no string literal, exit 1 when there is one

The house rule (docs/design.md, "Conventions"): a message stays whole on one source line so
that it can be grepped.  A literal that ends in \\n may continue on the next line (one output
line per source line), and so may one whose last escape would run into the next literal's
text ("\\x1" "f", "\\1" "2").  Comments and character literals are lexed, so a quote inside
them is not taken for a literal; a split across a backslash-continued macro line is not
looked at."""
import re
import string
import sys


def _literal_end(src, i):
    """Index of the closing quote of the literal opened at src[i]."""
    j = i + 1
    while src[j] != '"':
        j += 2 if src[j] == '\\' else 1
    return j


def _escape_runs_on(lit, nxt):
    """Whether joining would extend an open escape at the end of lit: a hex escape (\\x1f)
    before a hex digit, or an octal one of fewer than 3 digits before an octal digit."""
    m = re.search(r'(\\+)(x[0-9A-Fa-f]*|[0-7]{1,2})$', lit)
    if not m or len(m.group(1)) % 2 == 0:     # no escape there, or an escaped backslash
        return False
    if m.group(2).startswith('x'):
        return nxt[:1] in string.hexdigits
    return nxt[:1] in '01234567'


def long_lines(src, limit=100):
    """Yield the numbers of the lines over limit characters that hold no string literal."""
    for no, line in enumerate(src.split('\n'), 1):
        if len(line.expandtabs(8)) > limit and '"' not in line:
            yield no


def scan(src):
    """Yield (offset of the first literal's closing quote, offset of the next's opening quote)
    for each split that the rule forbids."""
    i, n = 0, len(src)
    while i < n:
        if src.startswith('//', i):
            j = src.find('\n', i)
            i = n if j < 0 else j
        elif src.startswith('/*', i):
            i = src.find('*/', i + 2) + 2
        elif src[i] == "'":
            j = i + 1
            while src[j] != "'":
                j += 2 if src[j] == '\\' else 1
            i = j + 1
        elif src[i] == '"':
            j = _literal_end(src, i)
            lit = src[i + 1:j]
            k = j + 1
            while k < n and src[k] in ' \t\n':
                k += 1
            if k < n and src[k] == '"' and '\n' in src[j + 1:k]:
                nxt = src[k + 1:_literal_end(src, k)]
                if not lit.endswith('\\n') and not _escape_runs_on(lit, nxt):
                    yield j, k
            i = j + 1
        else:
            i += 1


def join(src):
    out, last, count = [], 0, 0
    for close, reopen in scan(src):
        out.append(src[last:close])
        last = reopen + 1
        count += 1
    out.append(src[last:])
    return ''.join(out), count


def main(argv):
    if len(argv) < 2 or argv[1] not in ('--check', '--join', '--long'):
        sys.stderr.write(__doc__)
        return 2
    found = 0
    for path in argv[2:]:
        with open(path, encoding='utf-8') as f:
            src = f.read()
        if argv[1] == '--long':
            for no in long_lines(src):
                print(f"{path}:{no}: over 100 columns without a string literal")
                found += 1
        elif argv[1] == '--check':
            for close, _ in scan(src):
                print(f"{path}:{src.count(chr(10), 0, close) + 1}: a string literal continues "
                      "on the next line; join it (tests/style/literals.py --join)")
                found += 1
        else:
            text, count = join(src)
            if count:
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(text)
                print(f"{count:4d} {path}")
                found += count
    if argv[1] == '--join':
        print(f"{found} joined")
        return 0
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
