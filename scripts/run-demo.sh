#!/usr/bin/env bash
# The README's main-job command: install what is missing, build gpt3d, build
# the built-in King James Bible corpus, and train a small GPT on it.
# Safe to run twice (the corpus is reused; the run directory is replaced).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" demo
"$top/scripts/build.sh"
builddir=${GPT3D_BUILD_DIR:-$top/build}
gpt3d="$builddir/src/gpt3d"

"$gpt3d" --version
sed -n '/configuration summary/,$p' "$builddir/config.log" | sed -n '/^gpt3d/,/^  prefix/p' || true
