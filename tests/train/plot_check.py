#!/usr/bin/python3
"""Check an SVG of gpt3d plot against the metrics files it was drawn from (the tests of
src/metrics/plot.c): it parses as XML, has exactly one <path class="series"> per curve, and
every point of every path, mapped back through the plot area's data-* attributes, is the
metrics' value (the later record of an iteration winning, as after a resume).

  plot_check.py SVG X CURVES NAME=METRICS...

X: iteration, samples or tokens (gpt3d plot --x); CURVES: both, training or validation.
Prints one line per curve; exit 0 when everything checks, 1 with a message otherwise."""
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def curves(metrics, xkind):
    """RET: {"training": [(x, loss)], "validation": [(x, loss)]} by increasing iteration."""
    train, valid, consumed, seq = {}, {}, {}, None
    with open(metrics) as f:
        for line in f:
            if not line.endswith("\n"):
                break                   # a line cut by a killed run: gpt3d plot skips it
            r = json.loads(line)
            ev = r.get("event")
            if ev == "start":
                seq = r["seq_length"]
            if "iteration" in r and "consumed_samples" in r:
                consumed[r["iteration"]] = r["consumed_samples"]
            if ev == "train" and r.get("loss") is not None:
                train[r["iteration"]] = r["loss"]
            if ev == "eval" and r.get("split") == "valid" and r.get("loss") is not None:
                valid[r["iteration"]] = r["loss"]

    def samples(it):
        # an eval record has no sample count: the nearest records' around it, linearly
        if it in consumed:
            return float(consumed[it])
        lo = max((i for i in consumed if i < it), default=None)
        hi = min((i for i in consumed if i > it), default=None)
        if lo is not None and hi is not None:
            return consumed[lo] + (consumed[hi] - consumed[lo]) * (it - lo) / (hi - lo)
        near = lo if lo is not None else hi
        return consumed[near] / near * it

    def x(it):
        if xkind == "iteration":
            return float(it)
        return samples(it) * (seq if xkind == "tokens" else 1)
    return {"training": [(x(i), train[i]) for i in sorted(train)],
            "validation": [(x(i), valid[i]) for i in sorted(valid)]}


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    svg, xkind, which = argv[0], argv[1], argv[2]
    runs = [a.split("=", 1) for a in argv[3:]]
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        print("%s does not parse as XML: %s" % (svg, e))
        return 1
    area = root.find(".//%sg[@id='plot-area']" % NS)
    if area is None:
        print("%s has no plot area" % svg)
        return 1
    a = {k: float(area.get("data-" + k)) for k in
         ("x-min", "x-max", "y-min", "y-max", "left", "top", "width", "height")}
    logy = area.get("data-log-y") == "1"
    # one data unit in pixels: the tolerance of a point printed to 0.001 px
    px = a["width"] / (a["x-max"] - a["x-min"])
    py = a["height"] / (a["y-max"] - a["y-min"])
    paths = root.findall(".//%spath[@class='series']" % NS)
    want = []
    for name, metrics in runs:
        c = curves(metrics, xkind)
        for kind in ("training", "validation"):
            if which in ("both", kind) and c[kind]:
                want.append((name, kind, c[kind]))
    if len(paths) != len(want):
        print("%d series paths, %d curves expected (%s)"
              % (len(paths), len(want), ", ".join("%s %s" % w[:2] for w in want)))
        return 1
    for path, (name, kind, pts) in zip(paths, want):
        if path.get("data-run") != name or path.get("data-kind") != kind:
            print("path %s %s where %s %s was expected"
                  % (path.get("data-run"), path.get("data-kind"), name, kind))
            return 1
        got = [tuple(map(float, p.split(",")))
               for p in re.findall(r"[-0-9.]+,[-0-9.]+", path.get("d"))]
        if len(got) != len(pts):
            print("%s %s: %d points, the metrics have %d" % (name, kind, len(got), len(pts)))
            return 1
        worst = 0.0
        for (gx, gy), (x, y) in zip(got, pts):
            dx = a["x-min"] + (gx - a["left"]) / px
            v = a["y-min"] + (a["top"] + a["height"] - gy) / py
            dy = 10.0 ** v if logy else v
            ey = abs(math.log10(dy) - math.log10(y)) if logy else abs(dy - y)
            if abs(dx - x) > 1e-3 / px or ey > 1e-3 / py:
                print("%s %s: the point (%.6g, %.6g) maps back to (%.6g, %.6g)"
                      % (name, kind, x, y, dx, dy))
                return 1
            worst = max(worst, ey * py)
        print("%s %s: %d points equal to the metrics' values (within %.4f px)"
              % (name, kind, len(pts), worst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
