#!/usr/bin/env bash
# Run a command with the local Slurm test cluster up, when this machine can run one.
#
# usage:: slurm/with-cluster.sh CMD [ARGS...]      (what `make test` does)
#
# - SLURM_CONF already set (a cluster is up, e.g. .ci/run started one): run CMD as is.
# - root and apt-get or slurmctld present: start-cluster.sh, run CMD, stop the cluster
#   again (only the one started here), and exit with CMD's status.
# - otherwise: one line saying what is skipped and how to enable it, then run CMD
#   (the Slurm tests skip with that reason).
# IOLAB_NO_SLURM=1 skips the cluster on purpose.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${SLURM_CONF:-}" ]]; then
    exec "$@"
fi
if [[ "${IOLAB_NO_SLURM:-0}" == 1 ]]; then
    echo "[with-cluster] IOLAB_NO_SLURM=1: no local Slurm; the Slurm tests will skip" >&2
    exec "$@"
fi
if [[ "$(id -u)" != 0 ]] || ! { command -v apt-get >/dev/null || command -v slurmctld >/dev/null; }; then
    echo "[with-cluster] no local Slurm (needs root and apt-get): the Slurm tests will skip;" \
         "as root run: eval \"\$(slurm/start-cluster.sh)\" && make test" >&2
    exec "$@"
fi
echo "[with-cluster] starting the local Slurm cluster (slurm/start-cluster.sh; IOLAB_NO_SLURM=1 to skip)" >&2
if ! exports="$("$here/start-cluster.sh")"; then
    echo "[with-cluster] the local Slurm did not start (see above): the Slurm tests will skip" >&2
    exec "$@"
fi
eval "$exports"
trap '"$here/stop-cluster.sh" >&2 || true' EXIT
"$@"
