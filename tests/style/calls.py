#!/usr/bin/env python3
"""Two house rules that read the code's structure (tests/style/test_calls.sh, test_funclen.sh).

  calls.py --circles OBJ...   the object files that call each other in a circle: A -> B when
                              A leaves undefined a symbol that B defines (nm); prints each
                              strongly connected component of more than one file, one a line
  calls.py --long N FILE...   the functions of C and CUDA sources longer than N lines (from
                              the line of the name to the closing brace), one a line:
                              FILE:LINE: NAME: LINES lines

Exit status 0 when there is nothing to print, else 1."""
import re
import subprocess
import sys


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def circles(objs):
    defs, undef = {}, {}
    for o in objs:
        undef[o] = set()
        for line in nm(o, "-g"):
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                undef[o].add(f[1])
            elif len(f) == 3 and f[1] in "TDBRVWC":
                defs.setdefault(f[2], o)
    edges = {o: sorted({defs[s] for s in undef[o] if s in defs and defs[s] != o}) for o in objs}
    # Tarjan's strongly connected components, iteratively
    index, low, on, stack, comps, n = {}, {}, set(), [], [], 0
    for root in objs:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = n
                n += 1
                stack.append(v)
                on.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return sorted(" ".join(c) for c in comps)


def long_functions(limit, files):
    bad = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        start = None
        for i, line in enumerate(lines):
            if line.startswith("{") and line.strip() == "{":
                # the name: the nearest line above that opens the parameter list
                j = i - 1
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                while j > 0 and lines[j].startswith((" ", "\t")):
                    j -= 1
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[j])
                start = (j, m.group(1) if m else "?")
            elif line.startswith("}") and start is not None:
                n = i - start[0] + 1
                if n > limit:
                    bad.append("%s:%d: %s: %d lines" % (path, start[0] + 1, start[1], n))
                start = None
    return bad


def main(argv):
    if len(argv) >= 2 and argv[1] == "--circles":
        out = circles(argv[2:])
    elif len(argv) >= 3 and argv[1] == "--long":
        out = long_functions(int(argv[2]), argv[3:])
    else:
        sys.stderr.write(__doc__)
        return 2
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
