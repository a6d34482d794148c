# shellcheck shell=bash
# Shared settings of the local single-host Slurm cluster (sourced, never executed).
#
# Every value can be overridden from the environment before calling
# start-cluster.sh / stop-cluster.sh:
#
#   IOLAB_SLURM_DIR        state dir: slurm.conf, state, spool, logs, PIDs
#                          (default: <repo>/slurm/.local, gitignored)
#   NODES                  number of virtual nodes n1..nN (default 4)
#   IOLAB_NODE_CPUS        CPUs each virtual node declares (default 2, = cores here; more than the
#                          machine has is fine thanks to SlurmdParameters=config_overrides)
#   IOLAB_SLURMCTLD_PORT   slurmctld port (default 16817, away from the stock 6817)
#   IOLAB_SLURMD_PORT_BASE node nX listens on base+X (default 17000 -> 17001..)
#   IOLAB_SLURM_TIMEOUT    seconds to wait for all nodes to become idle (default 60)
#   IOLAB_SLURM_CONF_EXTRA slurm.conf lines appended to the generated file, for keys it does not
#                          set (SchedulerParameters=..., PriorityType=...); default none

IOLAB_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IOLAB_SLURM_DIR="${IOLAB_SLURM_DIR:-$IOLAB_REPO/slurm/.local}"
NODES="${NODES:-4}"
IOLAB_NODE_CPUS="${IOLAB_NODE_CPUS:-2}"
IOLAB_SLURMCTLD_PORT="${IOLAB_SLURMCTLD_PORT:-16817}"
IOLAB_SLURMD_PORT_BASE="${IOLAB_SLURMD_PORT_BASE:-17000}"
IOLAB_SLURM_TIMEOUT="${IOLAB_SLURM_TIMEOUT:-60}"
IOLAB_SLURM_CONF_EXTRA="${IOLAB_SLURM_CONF_EXTRA:-}"

# Layout of the state dir.  state/ and spool/ are wiped on every fresh start:
# stale controller state makes a job that was running at the last stop hold its
# node for minutes.
IOLAB_SLURM_CONF="$IOLAB_SLURM_DIR/slurm.conf"
IOLAB_SLURM_PIDS="$IOLAB_SLURM_DIR/pids"   # one file per daemon we started: <name>.pid
IOLAB_SLURM_LOGS="$IOLAB_SLURM_DIR/log"

# Client commands (sinfo, srun, ...) must find our config, not /etc/slurm.
export SLURM_CONF="$IOLAB_SLURM_CONF"

iolab_log() { echo "[iolab-slurm] $*" >&2; }
iolab_die() { echo "[iolab-slurm] ERROR: $*" >&2; exit 1; }

# iolab_pid_running PID -> 0 if PID exists and is not a zombie (used right after a
# spawn, before exec has necessarily renamed the process).
iolab_pid_running() {
    local state
    state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z ]]
}

# iolab_pid_alive NAME -> 0 if NAME.pid is recorded and that PID still runs the
# expected program (guards against PID reuse).  Prints the PID on success.
iolab_pid_alive() {
    local name="$1" pidfile="$IOLAB_SLURM_PIDS/$1.pid" pid comm want
    [[ -r "$pidfile" ]] || return 1
    pid="$(<"$pidfile")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    comm="$(cat "/proc/$pid/comm" 2>/dev/null)" || return 1
    want="${name%%.*}"                     # slurmd.n1 -> slurmd
    [[ "$comm" == "$want" ]] || return 1
    iolab_pid_running "$pid" || return 1   # an exited daemon may linger as a zombie
    echo "$pid"
}

# Node names n1..nN, one per line.
iolab_node_names() {
    local i
    for ((i = 1; i <= NODES; i++)); do echo "n$i"; done
}
