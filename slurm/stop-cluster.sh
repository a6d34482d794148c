#!/usr/bin/env bash
# Stop the local Slurm cluster started by start-cluster.sh.
#
# usage:: slurm/stop-cluster.sh          (same IOLAB_SLURM_DIR as at start)
#
# 1. scancel every job and wait until the queue is empty: stopping slurmd does not
#    kill running jobs, their slurmstepd and tasks would outlive the cluster;
# 2. SIGTERM the daemons by the PIDs recorded at start (never by name: other
#    people's daemons on this host are left alone), wait for them, SIGKILL
#    whatever is still there after a grace period;
# 3. stop munged only if start-cluster.sh started it.
# Safe to call when nothing runs.  Logs stay in the state dir for post-mortems.
set -euo pipefail

# shellcheck source=slurm/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

GRACE="${IOLAB_SLURM_STOP_GRACE:-15}"

cancel_jobs() {
    iolab_pid_alive slurmctld >/dev/null || return 0
    [[ -r "$IOLAB_SLURM_CONF" ]] || return 0
    local jobs deadline=$((SECONDS + GRACE))
    jobs="$(timeout 10 squeue -h -o '%i' 2>/dev/null || true)"
    [[ -n "$jobs" ]] || return 0
    iolab_log "cancelling jobs: $(echo $jobs)"
    # Suspended jobs ignore SIGTERM until resumed: resume first, then cancel.
    # shellcheck disable=SC2086
    timeout 10 scontrol resume $(echo $jobs | tr ' ' ',') >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    timeout 10 scancel $jobs 2>/dev/null || true
    while [[ -n "$(timeout 10 squeue -h -o '%i' 2>/dev/null || true)" ]]; do
        if ((SECONDS >= deadline)); then
            iolab_log "jobs still listed after ${GRACE}s: $(timeout 10 squeue -h 2>/dev/null | tr '\n' ';')"
            return 0
        fi
        sleep 0.2
    done
}

# Daemon names recorded in the pid dir, slurmd first, slurmctld next, munged last.
recorded() {
    local f name
    for f in "$IOLAB_SLURM_PIDS"/slurmd.*.pid "$IOLAB_SLURM_PIDS"/slurmctld.pid \
        "$IOLAB_SLURM_PIDS"/munged.pid; do
        [[ -e "$f" ]] || continue
        name="$(basename "$f" .pid)"
        [[ "$name" == *.daemon ]] && continue   # the daemons' own pid files
        echo "$name"
    done
}

stop_daemons() {
    local names=("$@") pids=() left=() name pid deadline
    for name in "${names[@]}"; do
        pid="$(iolab_pid_alive "$name")" || continue
        pids+=("$pid")
        kill -TERM "$pid" 2>/dev/null || true
    done
    ((${#pids[@]})) || return 0
    iolab_log "stopping ${names[*]} (pids ${pids[*]})"
    deadline=$((SECONDS + GRACE))
    while :; do
        left=()
        for pid in "${pids[@]}"; do iolab_pid_running "$pid" && left+=("$pid"); done
        ((${#left[@]})) || break
        if ((SECONDS >= deadline)); then
            iolab_log "SIGKILL ${left[*]} after ${GRACE}s"
            kill -KILL "${left[@]}" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.1
    done
}

# PIDs of slurmstepd processes of this cluster: they inherit slurmd's environment,
# which holds our SLURM_CONF (exported by env.sh), so other clusters' are not matched.
our_stepds() {
    local d pid
    for d in /proc/[0-9]*; do
        pid="${d#/proc/}"
        [[ "$(cat "$d/comm" 2>/dev/null)" == slurmstepd ]] || continue
        iolab_pid_running "$pid" || continue
        tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$IOLAB_SLURM_CONF" \
            && echo "$pid"
    done
    return 0
}

reap_stepds() {
    local pids deadline=$((SECONDS + GRACE))
    while pids="$(our_stepds)" && [[ -n "$pids" ]]; do
        if ((SECONDS >= deadline)); then
            iolab_log "SIGKILL leftover slurmstepd $(echo $pids)"
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null || true
            sleep 0.5
            return 0
        fi
        sleep 0.2
    done
}

main() {
    [[ -d "$IOLAB_SLURM_PIDS" ]] || { iolab_log "nothing to stop in $IOLAB_SLURM_DIR"; return 0; }
    cancel_jobs
    local all=() slurmds=() name
    while read -r name; do all+=("$name"); done < <(recorded)
    for name in "${all[@]}"; do [[ "$name" == slurmd.* ]] && slurmds+=("$name"); done
    # Compute nodes first so the controller does not mark them down meanwhile.
    if ((${#slurmds[@]})); then stop_daemons "${slurmds[@]}"; fi
    reap_stepds
    if [[ " ${all[*]} " == *" slurmctld "* ]]; then stop_daemons slurmctld; fi
    if [[ " ${all[*]} " == *" munged "* ]]; then stop_daemons munged; fi

    local still=()
    for name in "${all[@]}"; do
        if iolab_pid_alive "$name" >/dev/null; then still+=("$name"); fi
    done
    ((${#still[@]} == 0)) || iolab_die "still running: ${still[*]}"
    for name in "${all[@]}"; do rm -f "$IOLAB_SLURM_PIDS/$name.pid"; done
    iolab_log "cluster in $IOLAB_SLURM_DIR stopped"
}

main "$@"
