# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the library's globals are set in one of its files and read in another.)
# sbatch/lib/healthcheck.sh: the body of gpt3d-healthcheck, the health check of one node (see
# that script's header and docs/slurm.md).  Sourced, never run: by gpt3d-healthcheck, from
# lib/ beside it (RUN_DIR/lib, where gpt3d-submit copies it).

# g3_healthcheck_main [OPTIONS] OUT_DIR: check this node, then take part in the communication
# test; the results are files in OUT_DIR (the job script reads them).
g3_healthcheck_main() {
    local me="gpt3d-healthcheck"
    gpus=0
    gpt3d=""
    timeout_min=1
    node_check=""
    while [ $# -gt 1 ]; do
        case "$1" in
            --gpus) gpus=$2; shift 2 ;;
            --gpt3d) gpt3d=$2; shift 2 ;;
            --timeout-minutes) timeout_min=$2; shift 2 ;;
            --node-check) node_check=$2; shift 2 ;;
            *) echo "$me: unknown option '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
        esac
    done
    [ $# -eq 1 ] || { echo "usage: srun --ntasks-per-node=1 $me [--gpus N] [--gpt3d PATH] [--timeout-minutes X] [--node-check CMD] OUT_DIR" >&2; exit 2; }
    out=$1
    [[ "$gpus" =~ ^[0-9]+$ ]] || { echo "$me: --gpus '$gpus' is not a whole number" >&2; exit 2; }
    node=${SLURMD_NODENAME:-$(hostname -s)}
    mkdir -p "$out"

    # Local checks: the first that fails names the fault.
    bad=""
    if [ "$gpus" -gt 0 ]; then
        if ! command -v nvidia-smi >/dev/null 2>&1; then
            bad="nvidia-smi is not installed, so no GPU can be seen ($gpus expected)"
        elif ! listed=$(timeout 60 nvidia-smi -L 2>&1); then
            bad="nvidia-smi -L failed: $(printf '%s' "$listed" | head -n 1)"
        else
            seen=$(printf '%s\n' "$listed" | grep -c '^GPU [0-9]' || true)
            if [ "$seen" -lt "$gpus" ]; then bad="$seen GPUs visible, $gpus expected"; fi
        fi
    fi
    if [ -z "$bad" ] && [ -n "$node_check" ]; then
        check_rc=0
        check_out=$(timeout 60 bash -c "$node_check" 2>&1) || check_rc=$?
        if [ "$check_rc" -ne 0 ]; then
            bad="the node check '$node_check' exited $check_rc${check_out:+: $(printf '%s' "$check_out" | head -n 1)}"
        fi
    fi
    if [ -n "$bad" ]; then echo "bad: $bad" >"$out/$node.local.tmp"; else echo ok >"$out/$node.local.tmp"; fi
    mv "$out/$node.local.tmp" "$out/$node.local"

    # The communication test: every task takes part, healthy or not.
    if [ -n "$gpt3d" ]; then
        rc=0
        timeout $((${timeout_min%.*} * 60 + 90)) "$gpt3d" topo --summary \
            --distributed-timeout-minutes "$timeout_min" >"$out/$node.comm.out" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ]; then echo ok >"$out/$node.comm"; else echo "failed: gpt3d topo exited $rc" >"$out/$node.comm"; fi
    fi
}
