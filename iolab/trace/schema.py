"""The trace schema: one set of tables written by the simulator and the emulator.

Each table is a set of equally long columns.  Times are seconds from the
start of the run; volumes are the spec's data units (the emulator records
``unit_bytes``, the bytes of one unit, as an attribute).

- ``jobs``: one row per app/job: id, rank (system id: position in the spec),
  nodes, release (submit), start, end, io_node, pack, status (ok / failed /
  killed / pending), tier, min_time (contention-free T_i(b)), compute_time,
  io_volume (total units), hosts (comma-separated host names the job ran
  on; empty in the simulator), node_ids (the batch kernel's node ids the job
  held, as ranges ``"0-3,8"``; empty outside batch runs; in a batch
  emulation ``hosts`` is the same ids written ``n0,n1,...``), io_time
  (seconds the job spent in its I/O phases, read, write and staging, fixed
  per-phase costs included; batch runs, also when the phase rows are not
  kept; NaN elsewhere).
- ``phases``: one row per finished phase: job, index, kind (compute, write,
  read, stage-in, stage-out), start, end, volume, io_node, tier.
- ``grants``: one row per I/O grant: job, phase, io_node, request, grant, release.
- ``allocations``: one row per storage request: job, disk, bytes, alloc, free,
  status (allocated, refused, failed, split, requeued).
- ``actions``: load-controller actions: job, suspend, resume.
- ``usage``: bytes really on the HPS, measured by the storage manager of a
  real batch run (periodically, and for a job at its end): job (``""``: the
  whole tier), time, allocated (the job's allocation, or the tier's
  capacity), apparent (``st_size`` of the regular files), blocks
  (``st_blocks * 512``).  Empty in the simulator.
- ``samples``: the load controller's volume samples (dheenadayalan2017 §4.1):
  time, volume, response (seconds to write the benchmark unit, spec seconds),
  writers (jobs with files on the volume; streams in the simulator),
  bytes_rate (spec bytes/s the volume's device wrote; NaN without a device),
  in_flight (device I/O in flight; NaN without a device), score (the window's
  sum over beta, Eq. 8), predicted (what the window was fed: the response
  itself under ``prediction: measured``, the random forest's prediction from
  the counters under ``prediction: forest``; NaN in traces older than it),
  ops_rate (write operations per spec second: the device's writes completed,
  else the storage manager's bookings; NaN in the simulator), queued (spec
  seconds of transfers booked on the storage manager's link and not yet
  served: the grants waiting for the volume; NaN in the simulator).
- ``predictions``: batch plan tracking (soysal2019, ``track_predictions``):
  one row each time a waiting job's planned start or planned node set
  changed: job, time (of the scheduling pass), start (planned), nodes
  (planned node ids as ranges ``"0-3,8"``).
"""

from __future__ import annotations

SCHEMA_VERSION = 1

# table -> ordered (column, kind); kind is "str", "int" or "float".
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "jobs": (
        ("id", "str"), ("rank", "int"), ("nodes", "int"), ("release", "float"),
        ("start", "float"), ("end", "float"), ("io_node", "int"), ("pack", "int"),
        ("status", "str"), ("tier", "str"), ("min_time", "float"),
        ("compute_time", "float"), ("io_volume", "float"), ("hosts", "str"), ("node_ids", "str"),
        ("io_time", "float"),
    ),
    "phases": (
        ("job", "str"), ("index", "int"), ("kind", "str"), ("start", "float"),
        ("end", "float"), ("volume", "float"), ("io_node", "int"), ("tier", "str"),
    ),
    "grants": (
        ("job", "str"), ("phase", "int"), ("io_node", "int"), ("request", "float"),
        ("grant", "float"), ("release", "float"),
    ),
    "allocations": (
        ("job", "str"), ("disk", "str"), ("bytes", "float"), ("alloc", "float"),
        ("free", "float"), ("status", "str"),
    ),
    "actions": (("job", "str"), ("suspend", "float"), ("resume", "float")),
    "usage": (
        ("job", "str"), ("time", "float"), ("allocated", "float"), ("apparent", "float"),
        ("blocks", "float"),
    ),
    "samples": (
        ("time", "float"), ("volume", "str"), ("response", "float"), ("writers", "int"),
        ("bytes_rate", "float"), ("in_flight", "float"), ("score", "float"), ("predicted", "float"),
        ("ops_rate", "float"), ("queued", "float"),
    ),
    "predictions": (("job", "str"), ("time", "float"), ("start", "float"), ("nodes", "str")),
}

# columns added after schema 1 was first written: a trace without them reads with their default
ADDED_COLUMNS: frozenset[tuple[str, str]] = frozenset({("jobs", "node_ids"), ("jobs", "io_time"), ("samples", "predicted"),
                                                       ("samples", "ops_rate"), ("samples", "queued")})

PHASE_KINDS = ("compute", "write", "read", "stage-in", "stage-out")
JOB_STATUSES = ("ok", "failed", "killed", "pending")
IO_KINDS = ("write", "read")
