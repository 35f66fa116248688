#!/bin/bash
# tests/slurm/cluster.sh: a private Slurm cluster on this one machine, for
# gpt3d's tests and for trying the batch suite without a real cluster.
#
# It starts, as root, one munged (own key and socket), one slurmctld and N
# slurmd, each slurmd as its own node ("slurmd -N nK", one port per node) in
# its own mount namespace with a private /tmp (Slurm's PMIx plugin and the
# PMIx library keep per-node files there).  Configuration, state, spool, logs
# and a shared work directory live in one private directory outside /tmp;
# ports are derived from that directory's unique name and checked to be free,
# so two clusters on one machine do not collide.  Each slurmd also runs in its
# own PID namespace, under an init of ours: the node's job steps and tasks
# live in it, so killing that init (found by the process id we recorded, and
# checked against the start time we recorded) ends them all, and nothing
# else.  Stopping kills every process it started that way, then removes the
# directory; it never picks processes by a namespace's id (ids are reused).
#
# Sourced (tests):
#   . "$top_srcdir/tests/slurm/cluster.sh"
#   g3c_start 4 || skip_all "$g3c_why"   # exports SLURM_CONF; stops on EXIT
#   srun -N 2 hostname; ...; g3c_stop    # (g3c_stop also runs from the trap)
# Run (a session by hand; see docs/slurm.md):
#   tests/slurm/cluster.sh start [-n NODES]   # prints the directory and SLURM_CONF
#   tests/slurm/cluster.sh stop DIR
#   tests/slurm/cluster.sh check              # can a private cluster start here?
#
# Settings (environment): G3C_BASE (parent of the cluster directory, default
# /var/tmp; must not be under /tmp), G3C_NODES_PER_SWITCH (2), G3C_CPUS (CPUs
# per node, 2), G3C_SLURMD_TIMEOUT (6 s), G3C_CRED_EXPIRE (5 s: how long a
# requeued job waits before it may start again), G3C_START_TIMEOUT (60 s).
#
# Functions for tests: g3c_need N, g3c_start N, g3c_stop, g3c_check, g3c_kill_node NODE [--crash],
# g3c_start_node NODE, g3c_signal_procs SIGNAL NAME, g3c_procs_have_pending NAME SIGNUM, g3c_wait SECONDS CMD..., g3c_job_field JOBID FIELD,
# g3c_wait_job JOBID REGEX SECONDS, g3c_node_state NODE.  After g3c_start:
# G3C_DIR, G3C_WORK (shared scratch visible on every node), G3C_NODE_NAMES
# (array), SLURM_CONF (exported).
#
# Sourced, the functions run under the caller's set -e and pipefail (every test sets both);
# run as a command, the script sets them itself.  So no pipeline here ends early on a writer
# (no grep -q or head on a command's output) and a query that finds nothing prints nothing.

g3c_why=""

g3c_log() { printf '# cluster: %s\n' "$*" >&2; }

# g3c_check: can a private cluster start here?  0 if yes; else 1 with the
# reason in $g3c_why.
g3c_check() {
    local p
    if [ "$(id -u)" -ne 0 ]; then
        g3c_why="a private Slurm cluster needs root (slurmd runs jobs as any user and bind-mounts /tmp); run the tests as root"
        return 1
    fi
    for p in slurmctld slurmd munged munge srun sbatch scontrol sinfo squeue scancel unshare mount; do
        if ! command -v "$p" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$p" ]; then
            g3c_why="$p is not installed (apt-get install slurmctld slurmd slurm-client munge)"
            return 1
        fi
    done
    # What each slurmd needs, tried for real, so that a test skips with the
    # reason instead of failing when a daemon cannot start: a mount namespace
    # whose mounts are private (unshare makes / private: it fails where / is
    # not a mount point, as in a plain chroot), a bind mount inside it (its own
    # /tmp), and a cgroup file system (slurmd 22.05 refuses to start without
    # one on /sys/fs/cgroup).
    local err d fs
    if ! err=$(unshare -m true 2>&1); then
        g3c_why="unshare -m fails here: ${err:-no message} (each slurmd needs its own mount namespace for a private /tmp; in a chroot, make / a mount point: mount --bind / / before chroot; in a container, allow mount namespaces)"
        return 1
    fi
    if ! err=$(unshare -m -p --fork --mount-proc true 2>&1); then
        g3c_why="unshare -m -p --fork --mount-proc fails here: ${err:-no message} (each slurmd runs in its own PID namespace, so that stopping a node ends exactly its processes; in a container, allow PID namespaces)"
        return 1
    fi
    d=$(mktemp -d "${G3C_BASE:-/var/tmp}/gpt3d-check.XXXXXX" 2>/dev/null) || d=""
    if [ -n "$d" ]; then
        mkdir -p "$d/a" "$d/b"
        # shellcheck disable=SC2016  # $1 and $2 belong to the inner sh
        if ! err=$(unshare -m /bin/sh -c 'mount --bind "$1" "$2"' sh "$d/a" "$d/b" 2>&1); then
            rm -rf "$d"
            g3c_why="a bind mount in a new mount namespace fails here: ${err:-no message} (each slurmd bind-mounts its own /tmp; the tests need CAP_SYS_ADMIN)"
            return 1
        fi
        rm -rf "$d"
    fi
    fs=$(stat -f -c %T /sys/fs/cgroup 2>/dev/null || true)
    case "$fs" in
        cgroup2fs|tmpfs|cgroupfs) ;;
        *)
            g3c_why="no cgroup file system is mounted on /sys/fs/cgroup (found: ${fs:-nothing}); slurmd needs one: mount -t cgroup2 none /sys/fs/cgroup"
            return 1 ;;
    esac
    return 0
}

g3c_bin() {  # g3c_bin NAME: the path of a daemon or command
    if command -v "$1" 2>/dev/null; then return 0; fi
    if [ -x "/usr/sbin/$1" ]; then echo "/usr/sbin/$1"; return 0; fi
    return 1
}

# g3c_wait SECONDS CMD...: run CMD every 0.2 s until it succeeds; 1 on timeout.
g3c_wait() {
    local deadline=$((SECONDS + $1))
    shift
    while ! "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then return 1; fi
        sleep 0.2
    done
    return 0
}

g3c_port_free() {  # g3c_port_free PORT: no socket uses it (as before when ss fails)
    [ -z "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}

# g3c_pick_ports COUNT: set G3C_PORT0 to the first of COUNT consecutive free
# ports, derived from the cluster directory's name.
g3c_pick_ports() {
    local count=$1 tries=0 h base i ok
    h=$(printf '%s' "$G3C_DIR" | cksum | cut -d' ' -f1)
    while [ "$tries" -lt 50 ]; do
        base=$((20000 + ((h + tries * 7919) % 2000) * 16))
        ok=1
        for ((i = 0; i < count; i++)); do
            if ! g3c_port_free $((base + i)); then ok=0; break; fi
        done
        if [ "$ok" -eq 1 ]; then G3C_PORT0=$base; return 0; fi
        tries=$((tries + 1))
    done
    g3c_why="no $count consecutive free TCP ports found between 20000 and 52000"
    return 1
}

# g3c_start_time PID: the process's start time (clock ticks after boot, field
# 22 of /proc/PID/stat); nothing (status 1) if there is no such process.  A
# process id and its start time name one process: an id reused later comes
# with a later start time.
g3c_start_time() {
    local line rest
    read -r line <"/proc/$1/stat" 2>/dev/null || return 1
    rest=${line##*) }   # the fields after "(comm)": state is the first, field 3
    # shellcheck disable=SC2086  # split into fields on purpose
    set -- $rest
    echo "${20}"
}

# g3c_parent PID: the process's parent id (0 if none or gone).
g3c_parent() {
    local line rest
    read -r line <"/proc/$1/stat" 2>/dev/null || { echo 0; return 0; }
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest
    echo "${2:-0}"
}

# g3c_spawn NAME CMD...: start a daemon in the background, its output in
# logs/NAME.out, and record its pid in pids/NAME and its start time in
# starts/NAME.  (Started from a subshell, so it is not one of the caller's
# jobs: stopping it later prints nothing.)
g3c_spawn() {
    local name=$1 pid
    shift
    ( "$@" </dev/null >>"$G3C_DIR/logs/$name.out" 2>&1 &
      echo $! >"$G3C_DIR/pids/$name" )
    pid=$(cat "$G3C_DIR/pids/$name")
    g3c_start_time "$pid" >"$G3C_DIR/starts/$name" || : >"$G3C_DIR/starts/$name"
}

# g3c_pid_alive NAME: the recorded daemon still runs and is the process we
# started: same process id and start time (an id reused since has another),
# and its command line names our directory.
g3c_pid_alive() {
    local f="$G3C_DIR/pids/$1" pid cmd
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    [ -d "/proc/$pid" ] || return 1
    [ "$(g3c_start_time "$pid" || true)" = "$(cat "$G3C_DIR/starts/$1" 2>/dev/null)" ] || return 1
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ "$cmd" == *"$G3C_DIR"* ]]
}

# g3c_children PID: the process's children, one id per line.
g3c_children() {
    local c=()
    # (The file ends without a newline: read reports end of file after the list.)
    read -r -a c <"/proc/$1/task/$1/children" 2>/dev/null || true
    if [ "${#c[@]}" -gt 0 ]; then printf '%s\n' "${c[@]}"; fi
}

# g3c_node_init NAME: the init of the PID namespace of the slurmd recorded as
# pids/NAME (slurmd-NODE): the only child of that unshare process, while the
# unshare process is still ours (g3c_pid_alive).  Nothing if it is gone.
g3c_node_init() {
    g3c_pid_alive "$1" || return 0
    g3c_children "$(cat "$G3C_DIR/pids/$1")" | sed -n 1p
}

# g3c_node_inits: the inits of every live node namespace of this cluster, the
# slurmd-NODE records and those of earlier incarnations (slurmd-NODE.K), less
# those of crashed nodes (g3c_kill_node --crash: their processes stay frozen).
g3c_node_inits() {
    local f name
    for f in "$G3C_DIR"/pids/slurmd-*; do
        [ -e "$f" ] || continue
        name=${f##*/}
        if [ -e "$G3C_DIR/pids/crashed-${name#slurmd-}" ]; then continue; fi
        g3c_node_init "$name"
    done
}

g3c_write_config() {
    local n=$1 i name switches="" leaf=0 members
    local per=${G3C_NODES_PER_SWITCH:-2} cpus=${G3C_CPUS:-2}
    local ctld_port=$G3C_PORT0
    local names=()
    for ((i = 1; i <= n; i++)); do names+=("n$i"); done
    {
        echo "# Private gpt3d test cluster, written by tests/slurm/cluster.sh."
        echo "ClusterName=g3c$(basename "$G3C_DIR" | tr -dc 'a-z0-9' | cut -c1-20)"
        echo "SlurmctldHost=localhost(127.0.0.1)"
        echo "SlurmctldPort=$ctld_port"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$G3C_DIR/munge/munge.socket,cred_expire=${G3C_CRED_EXPIRE:-5}"
        echo "StateSaveLocation=$G3C_DIR/state"
        echo "SlurmdSpoolDir=$G3C_DIR/spool/%n"
        echo "SlurmctldPidFile=$G3C_DIR/run/slurmctld.pid"
        echo "SlurmdPidFile=$G3C_DIR/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$G3C_DIR/logs/slurmctld.log"
        echo "SlurmdLogFile=$G3C_DIR/logs/slurmd-%n.log"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "SwitchType=switch/none"
        echo "MpiDefault=none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_CPU"
        echo "SchedulerType=sched/backfill"
        echo "SchedulerParameters=bf_interval=1,sched_min_interval=100000"
        echo "TopologyPlugin=topology/tree"
        echo "SlurmdParameters=config_overrides"
        echo "ReturnToService=2"
        echo "SlurmdTimeout=${G3C_SLURMD_TIMEOUT:-6}"
        echo "SlurmctldTimeout=10"
        echo "MessageTimeout=5"
        echo "TCPTimeout=2"
        echo "KillWait=2"
        echo "InactiveLimit=0"
        echo "MinJobAge=600"
        echo "TmpFS=/tmp"
        echo "JobRequeue=1"
        echo "TaskProlog=$G3C_DIR/etc/task-prolog"
        for ((i = 0; i < n; i++)); do
            echo "NodeName=${names[i]} NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((ctld_port + 1 + i)) CPUs=$cpus RealMemory=1000 State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } >"$G3C_DIR/etc/slurm.conf"
    # The nodes share one kernel but not their process ids (a PID namespace each): UCX
    # would take two nodes for one host and connect their ranks through shared memory
    # found by process id (cma, posix), which fails across the namespaces ("Endpoint
    # timeout").  Tasks get UCX_TLS=tcp,self unless the job sets UCX_TLS itself: between
    # the nodes of a real cluster UCX uses the network too.
    # shellcheck disable=SC2016  # the prolog's own variables
    {
        echo '#!/bin/sh'
        echo '# TaskProlog of the private test cluster (tests/slurm/cluster.sh): "export" lines set the task environment.'
        echo '[ -n "${UCX_TLS:-}" ] || echo "export UCX_TLS=tcp,self"'
    } >"$G3C_DIR/etc/task-prolog"
    chmod 755 "$G3C_DIR/etc/task-prolog"
    {
        echo "# Leaf switches of $per nodes under one top switch."
        for ((i = 0; i < n; i += per)); do
            leaf=$((leaf + 1))
            members=$(IFS=,; echo "${names[*]:i:per}")
            echo "SwitchName=leaf$leaf Nodes=$members"
            switches="$switches${switches:+,}leaf$leaf"
        done
        echo "SwitchName=top Switches=$switches"
    } >"$G3C_DIR/etc/topology.conf"
    G3C_NODE_NAMES=("${names[@]}")
}

# g3c_start_node NODE: start (or restart) the slurmd of NODE in its own mount
# namespace with a private /tmp.
g3c_start_node() {
    local node=$1 slurmd
    slurmd=$(g3c_bin slurmd)
    mkdir -p "$G3C_DIR/spool/$node" "$G3C_DIR/nodes/$node/tmp" "$G3C_DIR/nodes/$node/realtmp"
    chmod 1777 "$G3C_DIR/nodes/$node/tmp"
    # A build or source tree under /tmp (a clone in /tmp, say) must stay visible
    # on the nodes: its top-level /tmp directory is bound back into the private
    # /tmp.  Jobs' scratch lives in G3C_WORK, outside /tmp.
    local keep="" p top
    for p in "$PWD" "${top_builddir:-}" "${top_srcdir:-}" "${GPT3D:-}"; do
        case "$p" in
            /tmp/?*) top=${p#/tmp/}; top=${top%%/*}
                     case " $keep " in *" $top "*) ;; *) keep="$keep $top" ;; esac ;;
        esac
    done
    # A crashed node (g3c_kill_node --crash) starts afresh: what was frozen in
    # its namespace ends with its init.  A previous slurmd of this node whose
    # namespace still runs (its slurmd was killed without --crash: its job
    # steps go on) keeps its record under another name, for g3c_stop.
    if [ -e "$G3C_DIR/pids/crashed-$node" ]; then
        local init
        init=$(g3c_node_init "slurmd-$node")
        if [ -n "$init" ]; then
            kill -KILL "$init" 2>/dev/null || true
            g3c_wait 10 g3c_not_running "$init" || true
        fi
        rm -f "$G3C_DIR/pids/crashed-$node"
    fi
    if g3c_pid_alive "slurmd-$node"; then
        local k=1
        while [ -e "$G3C_DIR/pids/slurmd-$node.$k" ]; do k=$((k + 1)); done
        mv "$G3C_DIR/pids/slurmd-$node" "$G3C_DIR/pids/slurmd-$node.$k"
        mv "$G3C_DIR/starts/slurmd-$node" "$G3C_DIR/starts/slurmd-$node.$k"
    fi
    # unshare(1) makes the new namespace's mounts private, so the bind mounts
    # stay inside it, and (--pid --fork) starts the inner bash as the init of
    # a new PID namespace: slurmd, its job steps and their tasks live in it.
    # The init runs slurmd as its child (killing slurmd alone leaves the steps
    # running, as on a real node) and reaps the orphans that end up with it;
    # killing the init ends everything in the namespace.  --mount-proc gives
    # the namespace its own /proc (slurmd's proctrack/linuxproc reads it).
    # shellcheck disable=SC2016  # $1.. and $@ belong to the inner bash
    g3c_spawn "slurmd-$node" unshare -m -p --fork --mount-proc /bin/bash -c \
        'real=$1 priv=$2 keep=$3; shift 3
         mount --bind /tmp "$real" && mount --bind "$priv" /tmp || exit 1
         for k in $keep; do mkdir -p "/tmp/$k" && mount --bind "$real/$k" "/tmp/$k" || exit 1; done
         "$@" &
         while :; do sleep 3600 & wait $!; done' sh \
        "$G3C_DIR/nodes/$node/realtmp" "$G3C_DIR/nodes/$node/tmp" "$keep" \
        "$slurmd" -D -N "$node" -f "$G3C_DIR/etc/slurm.conf"
    g3c_wait 10 g3c_node_slurmd_up "$node" || true
}

# g3c_node_slurmd NODE: the process id of NODE's slurmd: the child called
# slurmd of the init of the node's namespace.  Nothing if it is not running.
g3c_node_slurmd() {
    local init c comm
    init=$(g3c_node_init "slurmd-$1")
    [ -n "$init" ] || return 0
    for c in $(g3c_children "$init"); do
        read -r comm <"/proc/$c/comm" 2>/dev/null || continue
        if [ "$comm" = slurmd ]; then echo "$c"; return 0; fi
    done
}
g3c_node_slurmd_up() { [ -n "$(g3c_node_slurmd "$1")" ]; }

# g3c_descendants PID: every descendant of PID, parents before children.
g3c_descendants() {
    local queue=("$1") p c
    while [ "${#queue[@]}" -gt 0 ]; do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        for c in $(g3c_children "$p"); do
            echo "$c"
            queue+=("$c")
        done
    done
}

# g3c_kill_node NODE [--crash]: kill NODE's slurmd (SIGKILL), leaving its
# running job steps alone; with --crash also freeze (SIGSTOP) every other
# process of the node (its slurmstepd and tasks: the descendants of the init
# of its PID namespace), as a crashed machine stops answering without closing
# its connections (killing them would let the kernel reset their sockets, and
# the peers on other nodes would see the failure at once, sooner than any real
# crash lets them).  The frozen processes end when the node is started again
# (g3c_start_node) or the cluster stops.
g3c_kill_node() {
    local pid init p
    if [ "${2:-}" = "--crash" ]; then
        init=$(g3c_node_init "slurmd-$1")
        if [ -n "$init" ]; then
            for p in $(g3c_descendants "$init"); do kill -STOP "$p" 2>/dev/null || true; done
            : >"$G3C_DIR/pids/crashed-$1"
        fi
    fi
    pid=$(g3c_node_slurmd "$1")
    if [ -n "$pid" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        g3c_wait 10 g3c_not_running "$pid" || true
    fi
}

# g3c_node_procs NAME: set the array g3c_procs to the process ids of every
# process called NAME (its comm) in one of this cluster's node namespaces (the
# job steps' tasks): those whose line of parents reaches the init of a node
# namespace (g3c_node_inits: recorded ids, checked start times).
g3c_node_procs() {
    local name=$1 p comm q inits
    g3c_procs=()
    inits=" $(g3c_node_inits | tr '\n' ' ') "
    [ "$inits" != "  " ] || return 0
    for p in /proc/[0-9]*; do
        # Builtins first (no process per entry: a scan must be quick on a
        # busy machine): the name, then the line of parents.
        read -r comm <"$p/comm" 2>/dev/null || continue
        [ "$comm" = "$name" ] || continue
        q=${p#/proc/}
        while [ "$q" -gt 1 ]; do
            q=$(g3c_parent "$q")
            case "$inits" in *" $q "*) g3c_procs+=("${p#/proc/}"); break ;; esac
        done
    done
}

# g3c_signal_procs SIGNAL NAME: send SIGNAL to every process called NAME
# (its comm) in a node that is not crashed (g3c_node_procs): the job steps' tasks.  Tests use
# STOP and CONT to hold a running trainer still while they act on the
# cluster, so that what they do happens during training however fast or
# slow the machine is.
g3c_signal_procs() {
    local p
    g3c_node_procs "$2"
    for p in "${g3c_procs[@]}"; do
        kill -s "$1" "$p" 2>/dev/null || true
    done
}

# g3c_procs_have_pending NAME SIGNUM: every process called NAME in the nodes'
# namespaces (at least one) has signal SIGNUM pending (a stopped process keeps
# a signal pending until it is continued): a state to wait for.
g3c_procs_have_pending() {
    local bit=$((1 << ($2 - 1))) p pnd shd n=0
    g3c_node_procs "$1"
    for p in "${g3c_procs[@]}"; do
        pnd=$(sed -n 's/^SigPnd:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null) || continue
        shd=$(sed -n 's/^ShdPnd:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null) || continue
        if [ -z "$pnd" ] || [ -z "$shd" ]; then continue; fi
        if [ $(( (0x$pnd | 0x$shd) & bit )) -eq 0 ]; then return 1; fi
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
}

# g3c_procs_stopped NAME N: at least N processes called NAME of the nodes (g3c_node_procs), every
# one of them stopped (state T: a trainer that stopped itself at
# GPT3D_DEBUG_STOP_AFTER_ITERATION): a state to wait for.
g3c_procs_stopped() {
    local p st n=0
    g3c_node_procs "$1"
    for p in "${g3c_procs[@]}"; do
        st=$(sed -n 's/^State:[[:space:]]*\([A-Za-z]\).*/\1/p' "/proc/$p/status" 2>/dev/null) || continue
        [ -n "$st" ] || continue
        [ "$st" = T ] || return 1
        n=$((n + 1))
    done
    [ "$n" -ge "$2" ]
}

g3c_not_running() { ! [ -d "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# g3c_node_state NODE: the node's state as scontrol prints it (IDLE, DOWN*, ...); nothing
# (status 0) for a node scontrol does not know.
g3c_node_state() {
    { scontrol show node "$1" 2>/dev/null || true; } | sed -n 's/.*State=\([^ ]*\).*/\1/p' | sed -n 1p
}

# g3c_job_field JOBID FIELD: one field of "scontrol show job" (JobState, NodeList, ...);
# nothing (status 0) for a job scontrol does not know (not submitted, or purged).
g3c_job_field() {
    { scontrol -o show job "$1" 2>/dev/null || true; } | tr ' ' '\n' | sed -n "s/^$2=//p" | sed -n 1p
}

g3c_job_state_is() { grep -Eqx -- "$2" <<<"$(g3c_job_field "$1" JobState)"; }

# g3c_wait_job JOBID REGEX SECONDS: wait until the job's state matches REGEX.
g3c_wait_job() {
    g3c_wait "$3" g3c_job_state_is "$1" "$2"
}

g3c_all_idle() {
    local idle
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle" {n++} END {print n + 0}')
    [ "$idle" -eq "${#G3C_NODE_NAMES[@]}" ]
}

# g3c_start N: start a private cluster of N nodes.  0 on success; 1 with the
# reason in $g3c_why (the tests skip on it when g3c_check failed, fail otherwise).
g3c_start() {
    local n=${1:-4} base=${G3C_BASE:-/var/tmp} node munged munge
    g3c_check || return 1
    base=$(cd "$base" && pwd -P) || { g3c_why="G3C_BASE=$base is not a directory"; return 1; }
    case "$base/" in
        /tmp/*) g3c_why="G3C_BASE=$base is under /tmp, which every node replaces with its own; choose another directory"; return 1 ;;
    esac
    G3C_DIR=$(mktemp -d "$base/gpt3d-slurm.XXXXXX") || { g3c_why="cannot create a directory in $base"; return 1; }
    chmod 700 "$G3C_DIR"
    mkdir -p "$G3C_DIR"/{etc,state,spool,logs,pids,starts,run,munge,nodes,work}
    chmod 1777 "$G3C_DIR/work"
    G3C_WORK=$G3C_DIR/work
    if [ -z "${G3C_NO_TRAP:-}" ]; then
        trap 'g3c_stop' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
    fi
    g3c_pick_ports $((n + 1)) || return 1
    g3c_write_config "$n"
    export SLURM_CONF=$G3C_DIR/etc/slurm.conf

    # MUNGE with its own key and socket.
    munged=$(g3c_bin munged)
    munge=$(g3c_bin munge)
    dd if=/dev/urandom of="$G3C_DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$G3C_DIR/munge/munge.key"
    g3c_spawn munged "$munged" -F --force --socket="$G3C_DIR/munge/munge.socket" \
        --key-file="$G3C_DIR/munge/munge.key" --pid-file="$G3C_DIR/run/munged.pid" \
        --log-file="$G3C_DIR/logs/munged.log" --seed-file="$G3C_DIR/munge/munged.seed"
    if ! g3c_wait 10 "$munge" -S "$G3C_DIR/munge/munge.socket" -n; then
        g3c_why="munged did not start; see $G3C_DIR/logs/munged.out"
        g3c_dump_logs
        return 1
    fi

    g3c_spawn slurmctld "$(g3c_bin slurmctld)" -D -c -f "$SLURM_CONF"
    if ! g3c_wait "${G3C_START_TIMEOUT:-60}" g3c_ctld_up; then
        g3c_why="slurmctld did not answer; see $G3C_DIR/logs/slurmctld.log"
        g3c_dump_logs
        return 1
    fi
    for node in "${G3C_NODE_NAMES[@]}"; do g3c_start_node "$node"; done
    if ! g3c_wait "${G3C_START_TIMEOUT:-60}" g3c_all_idle; then
        g3c_why="the nodes did not all come up idle: $(sinfo -h -N -o '%N=%t' 2>&1 | tr '\n' ' ')"
        g3c_dump_logs
        return 1
    fi
    return 0
}

# g3c_need N: how the tests begin (they source tests/lib.sh first): skip the whole test where
# no private cluster can start here (g3c_check), else start one of N nodes; where that
# fails, one failing result "a private cluster of N nodes starts" with the reason, and the
# test ends (exit 1).  On success it prints nothing: a test that counts the start as a
# result says so itself.
g3c_need() {
    g3c_check || skip_all "$g3c_why"
    if ! g3c_start "$1"; then
        tap_result 1 "a private cluster of $1 nodes starts"
        diag "$g3c_why"
        done_testing
        exit 1
    fi
}

g3c_ctld_up() {
    g3c_pid_alive slurmctld && [[ "$(scontrol ping 2>/dev/null)" == *"is UP"* ]]
}

g3c_dump_logs() {  # the tail of every log, as TAP comments
    local f
    for f in "$G3C_DIR"/logs/*; do
        [ -s "$f" ] || continue
        echo "# ---- $f"
        tail -n 15 "$f" | sed 's/^/#   /'
    done >&2
}

# g3c_stop [DIR]: stop every daemon of the cluster (by the pid and start time
# recorded), every process left in its nodes' PID namespaces (by killing their
# inits), and remove its directory.
g3c_stop() {
    local rc=$? f name pid
    [ -n "${1:-}" ] && G3C_DIR=$1
    if [ -z "${G3C_DIR:-}" ] || ! [ -d "$G3C_DIR/pids" ]; then return "$rc"; fi
    if [ -n "${G3C_KEEP:-}" ]; then
        g3c_log "G3C_KEEP is set: leaving $G3C_DIR; stop it with: $0 stop $G3C_DIR"
        return "$rc"
    fi
    # The nodes first: slurmd (so nothing restarts steps), then the init of
    # its namespace, which takes every process left there with it; then
    # slurmctld and munged.
    local init
    for f in "$G3C_DIR"/pids/slurmd-*; do
        [ -e "$f" ] || continue
        name=${f##*/}
        init=$(g3c_node_init "$name")
        [ -n "$init" ] || continue
        pid=$(g3c_children "$init" | while read -r c; do
                  if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = slurmd ]; then echo "$c"; fi
              done | sed -n 1p)
        if [ -n "$pid" ]; then
            kill -TERM "$pid" 2>/dev/null || true
            g3c_wait 10 g3c_not_running "$pid" || true
        fi
        kill -KILL "$init" 2>/dev/null || true
        g3c_wait 10 g3c_not_running "$init" || true
        g3c_wait 5 g3c_not_running "$(cat "$f")" || true
    done
    for f in "$G3C_DIR"/pids/slurmctld "$G3C_DIR"/pids/munged; do
        [ -e "$f" ] || continue
        name=${f##*/}
        if g3c_pid_alive "$name"; then
            pid=$(cat "$f")
            kill -TERM "$pid" 2>/dev/null || true
            if ! g3c_wait 10 g3c_not_running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
            g3c_wait 5 g3c_not_running "$pid" || true
        fi
    done
    # A process that was still dying may write a file while rm runs: retry.
    local _
    for _ in 1 2 3 4 5; do
        rm -rf "$G3C_DIR" 2>/dev/null || true
        [ -e "$G3C_DIR" ] || break
        sleep 1
    done
    if [ -e "$G3C_DIR" ]; then g3c_log "could not remove $G3C_DIR: $(find "$G3C_DIR" -maxdepth 2 | sed -n 1,5p | tr '\n' ' ')"; fi
    G3C_DIR=""
    return "$rc"
}

# Run as a command.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case "${1:-}" in
        start)
            shift
            nodes=4
            while [ $# -gt 0 ]; do
                case "$1" in
                    -n|--nodes) nodes=$2; shift 2 ;;
                    *) echo "cluster.sh start: unknown option '$1' (use -n NODES)" >&2; exit 2 ;;
                esac
            done
            G3C_NO_TRAP=1
            if ! g3c_start "$nodes"; then
                echo "cluster.sh: cannot start a private cluster: $g3c_why" >&2
                G3C_KEEP="" g3c_stop || true
                exit 1
            fi
            echo "Private Slurm cluster of $nodes nodes in $G3C_DIR"
            echo "Shared scratch directory (visible on every node): $G3C_WORK"
            echo "Use it with:   export SLURM_CONF=$SLURM_CONF"
            echo "Stop it with:  $0 stop $G3C_DIR"
            ;;
        stop)
            [ $# -eq 2 ] || { echo "usage: cluster.sh stop DIR" >&2; exit 2; }
            [ -d "$2/pids" ] || { echo "cluster.sh stop: $2 is not a private cluster directory (no pids/ in it)" >&2; exit 1; }
            g3c_stop "$2"
            ;;
        check)
            if g3c_check; then echo "a private Slurm cluster can start here"; else echo "cannot start: $g3c_why"; exit 1; fi
            ;;
        *)
            echo "usage: cluster.sh start [-n NODES] | stop DIR | check" >&2
            exit 2
            ;;
    esac
fi
