#!/bin/sh
# src/comm under Open MPI's mpirun (a PMIx server), oversubscribed: 2, 4 and
# 8 ranks run every collective against a serial reference (and 2, 3, 4 ranks
# through the staged backend, bitwise against the host); a rank that stops
# responding ends the job with exit code 76 within the timeout plus slack;
# ranks that disagree on a group or a count get a clear error.
# (top_srcdir, top_builddir, GPT3D, MPIRUN come from make check; run sets rc and out.)
# shellcheck disable=SC2154
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
set -e
CHECK="$top_builddir/tests/comm/comm_check"

g3_need_mpirun
mpi() {  # mpi NP ARGS...
    np=$1; shift
    run g3_mpirun -np "$np" "$CHECK" "$@"
}
show_on_fail() { [ "$rc" -eq "$1" ] || printf '%s\n' "$out" | grep -v '^ *$' | head -25 | sed 's/^/#   /'; }

mpi 4 info
is "$rc" 0 "4 ranks: PMIx bootstrap"
for r in 0 1 2 3; do
    like "$out" "^rank $r size 4 local_rank [0-3] local_size 4 node 0/1 singleton 0 host [^ ]+ next says 'hello from $(( (r + 1) % 4 ))'" \
        "4 ranks: rank $r identity and exchange"
done

for np in 2 4 8; do
    mpi "$np" collectives
    is "$rc" 0 "$np ranks: every collective, dtype and group shape vs the serial reference"
    show_on_fail 0
    like "$out" "collectives: $np ranks, backend host, [0-9]+ shapes, [1-9][0-9]* checks on rank 0, 0 failures in all: ALL OK" \
        "$np ranks: checks ran and all passed"
done

# The staged backend (--distributed-backend ucx) with host "device" memory: every collective,
# dtype and group shape, each result bitwise the direct host collective's.
for np in 2 3 4; do
    mpi "$np" collectives staged
    is "$rc" 0 "$np ranks, staged backend: every collective bitwise the direct host one"
    show_on_fail 0
    like "$out" "collectives: $np ranks, backend staged, [0-9]+ shapes, [1-9][0-9]* checks on rank 0, 0 failures in all, staged copies made: ALL OK" \
        "$np ranks, staged backend: checks ran through the staging copies and all passed"
done

# Every all-reduce algorithm on its own, at sizes that are not powers of two.
for case in ring:3 rh:6 direct:5 rd:7; do
    algo=${case%:*} np=${case#*:} small=0 what=""
    if [ "$algo" = rd ]; then small=100000000 what=", small-message paths everywhere"; fi
    GPT3D_COMM_ALLREDUCE="$algo" GPT3D_COMM_SMALL_BYTES="$small" \
        run g3_mpirun -x GPT3D_COMM_ALLREDUCE -x GPT3D_COMM_SMALL_BYTES -np "$np" "$CHECK" collectives
    is "$rc" 0 "$np ranks, all-reduce forced to $algo$what"
    show_on_fail 0
done
GPT3D_COMM_ALLREDUCE=fastest run g3_mpirun -x GPT3D_COMM_ALLREDUCE -np 2 "$CHECK" collectives
like "$out" "GPT3D_COMM_ALLREDUCE=fastest: use auto, rd, rh, direct or ring" "an unknown algorithm name is refused"

start=$(date +%s)
mpi 4 hang 3
elapsed=$(( $(date +%s) - start ))
is "$rc" 76 "a rank that stops responding: the job exits with 76 (G3_EXIT_COMM_TIMEOUT)"
show_on_fail 76
like "$out" "all-reduce on group world \(rank [0-2] of 4, world ranks 0-3\) timed out after 3 s waiting for group rank [0-9] \(world rank [0-9]\)" \
    "the timeout names the group, the operation and the peer"
ok=1; [ "$elapsed" -le 15 ] || ok=0
is "$ok" 1 "it ends within the 3 s timeout plus slack (took $elapsed s, limit 15 s)"

mpi 2 mismatch-group
is "$rc" 2 "ranks that disagree on a group: usage error"
like "$out" "group mismatched: world rank [01] disagrees on the group" "the error names the rank"

mpi 2 mismatch-count
is "$rc" 1 "ranks that disagree on a count: failure"
like "$out" "different operations or counts" "the error says why"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${ngpu:-0}" -ge 1 ]; then
    CUDA_VISIBLE_DEVICES=0 run g3_mpirun -x CUDA_VISIBLE_DEVICES -np 4 "$CHECK" collectives staged-cuda
    if [ "$rc" -eq 77 ]; then
        skip "staged collectives on CUDA memory: $(printf '%s\n' "$out" | grep SKIP | head -n 1)"
    else
        is "$rc" 0 "staged backend, 4 ranks on one GPU: every collective on device memory bitwise the host one"
        show_on_fail 0
    fi
else
    skip "staged collectives on CUDA memory need a GPU"
fi
if [ "${ngpu:-0}" -ge 2 ]; then
    np=$ngpu; [ "$np" -le 4 ] || np=4
    mpi "$np" collectives nccl
    is "$rc" 0 "NCCL backend, $np ranks on $np GPUs: every collective vs the serial reference"
    show_on_fail 0
else
    skip "NCCL with several ranks needs at least 2 GPUs, this machine has ${ngpu:-0}"
fi
done_testing
