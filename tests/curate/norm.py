#!/usr/bin/python3
"""Random strings for test_curate_norm.sh and what NFC, white-space collapsing and simple
lower-casing make of them, by Python's unicodedata (standard library).

  norm.py gen N FILE       N random lines (Latin letters and combining marks in every order,
                           Hangul jamo and syllables, Greek, Devanagari nukta forms, singletons,
                           composition exclusions, spaces and tabs)
  norm.py expect FILE [--lower]   the expected normalised lines
Code points come only from blocks that Unicode 14 (Python 3.11) and 15 agree on."""
import random
import sys
import unicodedata

POOL = (list(range(0x41, 0x5B)) + list(range(0x61, 0x7B)) + list(range(0xC0, 0x180))
        + list(range(0x300, 0x370)) + list(range(0x391, 0x3CA)) + list(range(0x1E00, 0x1F00))
        + list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))
        + [0xAC00, 0xAC01, 0xD7A3, 0xB098, 0x212B, 0x2126, 0x0344, 0x0958, 0x0915, 0x093C,
           0x0F73, 0x1E9B, 0x0323, 0x0307, 0x05B0, 0x05BC, 0x1D15E, 0x1D165, 0x1D16E]
        + [0x20, 0x20, 0x09, 0x20])


def main():
    if sys.argv[1] == "gen":
        rng = random.Random(15)
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            for _ in range(int(sys.argv[2])):
                f.write("".join(chr(rng.choice(POOL)) for _ in range(rng.randint(0, 24))) + "\n")
        return
    lower = "--lower" in sys.argv
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            s = " ".join(unicodedata.normalize("NFC", line.rstrip("\n")).split())
            if lower:
                # Simple (one to one) lower-casing: str.lower(), whose only one-to-many result
                # here (U+0130 -> i + U+0307) has the simple mapping U+0069.
                s = "".join(c.lower()[0] for c in s)
            sys.stdout.write(s + "\n")


if __name__ == "__main__":
    main()
