"""Slurm batch scripts (``#SBATCH`` options, burst-buffer directives) as batch jobs.

Like ``sbatch``, only the script's header is read: the comment lines before
its first command.  Understood there:

- ``#SBATCH`` ``-N/--nodes`` (``N`` or ``min-max``: the minimum), ``-t/--time``
  (Slurm's forms: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``,
  ``UNLIMITED`` refused), ``-J/--job-name``, ``--begin`` (``now+N[units]``,
  ``YYYY-MM-DD[THH:MM[:SS]]``, ``HH:MM[:SS]``, ``midnight``, ``noon``,
  ``teatime``), ``-n/--ntasks`` with ``--ntasks-per-node`` (nodes when ``-N`` is
  absent), ``--bb`` (its ``capacity=``); every other real ``sbatch`` option is
  accepted and ignored; an option ``sbatch`` does not know is an error;
- Cray DataWarp ``#DW jobdw capacity=SIZE type=scratch access_mode=striped``
  (``[pool=NAME]``), ``#DW stage_in source=P destination=P type=file|directory|list``,
  ``#DW stage_out ...``; ``#DW persistentdw``, ``create_persistent``,
  ``destroy_persistent`` and ``swap`` are refused (not modelled);
- the lua plugin's ``#BB_LUA`` lines: the lua plugin leaves their syntax to
  the site's script; iolab reads them with the DataWarp grammar above
  (``jobdw``/``capacity=``, ``stage_in``, ``stage_out``).

Each script becomes one :class:`iolab.specs.batch.Job`: ``nodes``,
``walltime`` = the time limit (``default_time`` when absent), ``runtime`` =
the walltime (a script does not say how long it runs), ``submit`` = the
``--begin`` offset (0 without), ``storage`` = the burst buffer's capacity,
``input`` / ``output`` = the bytes staged in / out.  A staged volume is the
size of the named file (a directory: its files' total; a ``list``: the files
it lists), relative paths taken from the script's folder: the source of a
stage-in, the destination of a stage-out; when that file does not exist, a
``size=SIZE`` given in the directive (an iolab extension: DataWarp has no
such key); else an error.  Errors name the script and the line.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from iolab.errors import IolabError
from iolab.specs.base import MAX_TIME, not_a_file
from iolab.specs.slurm_conf import parse_slurm_time
from iolab.specs.batch import Job, parse_size

MAX_BYTES = 1e24  # a yottabyte: any finite size a platform could hold


class ScriptError(IolabError):
    """A script that cannot be imported: ``path``, ``line`` (1-based, 0 for the whole file), ``reason``."""

    def __init__(self, path: str | Path, line: int, reason: str):
        self.path, self.line, self.reason = str(path), line, reason
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")


# Every long option of sbatch (Slurm 23/24); the ones iolab reads are handled before this list is consulted.
SBATCH_OPTIONS = frozenset("""
account acctg-freq array batch bb bbf begin chdir cluster-constraint clusters comment constraint container
container-id contiguous core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline delay-boot
dependency distribution error exclude exclusive export export-file extra extra-node-info get-user-env gid gpu-bind
gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags hint hold ignore-pbs input job-name
kill-on-invalid-dep licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus network
nice no-kill no-requeue nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node
ntasks-per-socket open-mode output overcommit oversubscribe parsable partition power prefer priority profile
propagate qos quiet reboot requeue reservation resv-ports signal sockets-per-node spread-job switches test-only
thread-spec threads-per-core time time-min tmp tres-per-task uid usage use-min-nodes verbose wait wait-all-nodes
wckey wrap segment-size
""".split())
SHORT_OPTIONS = {"A": "account", "a": "array", "B": "extra-node-info", "b": "begin", "C": "constraint",
                 "c": "cpus-per-task", "D": "chdir", "d": "dependency", "e": "error", "F": "nodefile",
                 "G": "gpus", "H": "hold", "i": "input", "J": "job-name", "k": "no-kill",
                 "L": "licenses", "M": "clusters", "m": "distribution", "N": "nodes", "n": "ntasks",
                 "o": "output", "O": "overcommit", "p": "partition", "Q": "quiet", "q": "qos", "s": "oversubscribe",
                 "S": "core-spec", "t": "time", "v": "verbose", "W": "wait", "w": "nodelist",
                 "x": "exclude"}
_FLAGS = {"contiguous", "exclusive", "hold", "no-kill", "no-requeue", "overcommit", "oversubscribe", "parsable",
          "quiet", "requeue", "spread-job", "test-only", "use-min-nodes", "verbose", "wait", "wait-all-nodes",
          "ignore-pbs", "get-user-env", "reboot", "kill-on-invalid-dep"}
_NAMED_TIMES = {"midnight": (0, 0), "noon": (12, 0), "teatime": (16, 0), "fika": (15, 0), "elevenses": (11, 0)}
_UNIT_SECONDS = {"": 1, "s": 1, "sec": 1, "secs": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minutes": 60,
                 "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
                 "w": 604800, "week": 604800, "weeks": 604800}
DW_JOB_KEYS = {"capacity", "type", "access_mode", "pool"}
DW_STAGE_KEYS = {"source", "destination", "type", "size"}


@dataclass
class Staged:
    direction: str  # stage_in / stage_out
    source: str
    destination: str
    type: str
    bytes: float
    from_: str  # "file size", "sum of the directory's file sizes", "sum of the listed files' sizes" or "size="
    line: int


@dataclass
class SlurmScript:
    path: str
    name: str
    nodes: int
    walltime: float
    time_given: bool
    begin: float  # seconds after the submission (time 0)
    capacity: float  # burst buffer bytes asked for
    access_mode: str = ""
    staged: list[Staged] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # the header line of each job field given

    @property
    def input(self) -> float:
        return sum(s.bytes for s in self.staged if s.direction == "stage_in")

    @property
    def output(self) -> float:
        return sum(s.bytes for s in self.staged if s.direction == "stage_out")

    def job(self, ident: str | None = None, user: str = "0") -> Job:
        return Job.model_validate(dict(id=ident or self.name, user=user, submit=self.begin, nodes=self.nodes,
                                       walltime=self.walltime, runtime=self.walltime, input=self.input,
                                       output=self.output, storage=self.capacity))


def parse_time_limit(value: str) -> float:
    """Slurm's ``--time`` forms, in seconds."""
    v = value.strip()
    if v.upper() in ("UNLIMITED", "INFINITE", "-1"):
        raise ValueError(f"time limit {value!r}: an unlimited job has no walltime to plan with; give one")
    secs = parse_slurm_time(v)
    if secs <= 0:
        raise ValueError(f"time limit {value!r} is zero")
    return secs


def parse_begin(value: str, now: _dt.datetime | None) -> float:
    """``--begin`` as seconds after ``now`` (the submission); past times give 0."""
    v = value.strip().lower()
    m = re.fullmatch(r"now(?:\+(\d+)([a-z]*))?", v)
    if m:
        if m.group(1) is None:
            return 0.0
        unit = m.group(2)
        if unit not in _UNIT_SECONDS:
            raise ValueError(f"unknown --begin unit {m.group(2)!r} in {value!r} (seconds, minutes, hours, days, weeks)")
        return float(int(m.group(1)) * _UNIT_SECONDS[unit])
    if now is None:
        raise ValueError(f"--begin={value} is a date or a time of day: give the submission time with --now "
                         "(ISO, e.g. 2026-11-22T08:00) to place it")
    if v in _NAMED_TIMES:
        h, mi = _NAMED_TIMES[v]
        t = now.replace(hour=h, minute=mi, second=0, microsecond=0)
        if t <= now:
            t += _dt.timedelta(days=1)
        return (t - now).total_seconds()
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", v)
    if m:
        t = now.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=int(m.group(3) or 0), microsecond=0)
        if t < now:
            t += _dt.timedelta(days=1)
        return (t - now).total_seconds()
    try:
        t = _dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"not a --begin time: {value!r} (now+N[units], YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], "
                         "midnight, noon, teatime)") from None
    return max(0.0, (t - now).total_seconds())


def _special(path: Path) -> str | None:
    """The special filesystem ``path`` lies in (/proc, /sys, /dev), symlinks resolved, or None."""
    for p in {str(path.absolute()), str(path.resolve())}:
        for root in SPECIAL_ROOTS:
            if p == root or p.startswith(root + "/"):
                return root
    return None


def _dir_bytes(path: Path) -> float:
    """The bytes of a directory's regular files, walked without following symlinks, refusing
    special filesystems (in it, e.g. ``/``) and more than :data:`MAX_STAGED_FILES` entries."""
    total, seen, todo = 0.0, 0, [path]
    while todo:
        d = todo.pop()
        try:
            entries = list(os.scandir(d))
        except OSError as exc:
            raise ValueError(f"cannot list {d} to size the stage-in ({exc.strerror})") from None
        for e in entries:
            seen += 1
            if seen > MAX_STAGED_FILES:
                raise ValueError(f"{path} holds more than {MAX_STAGED_FILES} files and folders: too many to size "
                                 "(stage a smaller folder, or give type=file with size=SIZE)")
            if e.is_dir(follow_symlinks=False):
                if _special(Path(e.path)):
                    raise ValueError(f"{path} contains {e.path}, a special filesystem (/proc, /sys, /dev): "
                                     "not data to stage")
                todo.append(Path(e.path))
            elif e.is_file(follow_symlinks=False):
                total += e.stat(follow_symlinks=False).st_size
    return total


def _size_on_disk(path: Path, kind: str) -> float | None:
    root = _special(path)
    if root:
        raise ValueError(f"{path} is in {root}, a special filesystem: not data to stage")
    if kind == "list":
        if not path.is_file():
            return None
        total = 0.0
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, start=1):
                if n > MAX_STAGED_FILES:
                    raise ValueError(f"{path} lists more than {MAX_STAGED_FILES} files")
                parts = line.split()
                if parts:
                    f_ = (path.parent / parts[0]) if not Path(parts[0]).is_absolute() else Path(parts[0])
                    if _special(f_):
                        raise ValueError(f"{path}:{n}: {_short(parts[0])} is in a special filesystem")
                    if not f_.is_file():
                        return None
                    total += f_.stat().st_size
        return total
    if kind == "directory":
        if not path.is_dir():
            return None
        return _dir_bytes(path)
    return float(path.stat().st_size) if path.is_file() else None


def _kv(words: list[str], allowed: set[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        if "=" not in w:
            raise ValueError(f"{where}: expected key=value, got {w!r}")
        k, _, v = w.partition("=")
        if k not in allowed:
            raise ValueError(f"{where}: unknown key {k!r} (known: {', '.join(sorted(allowed))})")
        if k in out:
            raise ValueError(f"{where}: {k} given twice")
        out[k] = v
    return out


def read_script(path: str | Path, *, default_time: float | None = 3600.0,
                now: _dt.datetime | None = None) -> SlurmScript:
    """Read a script's header (see the module doc); raises :class:`ScriptError` naming the file and line."""
    p = Path(path)
    why = not_a_file(p, "Slurm script")
    if why:
        raise ScriptError(p, 0, why)
    header = _header_lines(p)
    name = p.stem
    nodes: int | None = None
    ntasks = per_node = None
    walltime: float | None = None
    begin = 0.0
    capacity = 0.0
    access = ""
    staged: list[Staged] = []
    cap_line = 0
    lines = {}  # the line of each job field, for the errors of Job's own checks
    for lineno, line in header:
        if lineno == 1 and line.startswith("#!"):
            continue
        if not line or not line.startswith("#"):
            continue
        try:
            if line.startswith("#SBATCH"):
                for opt, val in _sbatch_options(line[len("#SBATCH"):]):
                    if opt == "nodes":
                        m = re.fullmatch(r"(\d+)(?:-(\d+))?", val)
                        if not m or int(m.group(1)) < 1:
                            raise ValueError(f"--nodes={val}: a node count N or min-max, N >= 1")
                        nodes = int(m.group(1))
                        if nodes > MAX_NODES:
                            raise ValueError(f"--nodes={_short(val)}: above {MAX_NODES} nodes")
                        lines["nodes"] = lineno
                    elif opt == "time":
                        walltime = parse_time_limit(val)
                        lines["walltime"] = lines["runtime"] = lineno
                    elif opt == "job-name":
                        name = val
                    elif opt == "begin":
                        begin = parse_begin(val, now)
                        lines["submit"] = lineno
                    elif opt == "ntasks":
                        ntasks = _positive(val, "--ntasks")
                        lines.setdefault("nodes", lineno)
                    elif opt == "ntasks-per-node":
                        per_node = _positive(val, "--ntasks-per-node")
                    elif opt == "bb":
                        kv = dict(w.partition("=")[::2] for w in shlex.split(val) if "=" in w)
                        if "capacity" in kv:
                            capacity += _size(kv["capacity"], "--bb capacity")
                            cap_line = cap_line or lineno
            elif line.startswith("#DW") or line.startswith("#BB_LUA"):
                prefix = "#DW" if line.startswith("#DW") else "#BB_LUA"
                words = shlex.split(line[len(prefix):])
                if not words:
                    raise ValueError(f"{prefix} without a directive")
                verb = words[0]
                if prefix == "#BB_LUA" and "=" in verb:  # "#BB_LUA capacity=..." = jobdw
                    verb, words = "jobdw", ["jobdw"] + words
                if verb == "jobdw":
                    kv = _kv(words[1:], DW_JOB_KEYS, f"{prefix} jobdw")
                    if "capacity" not in kv:
                        raise ValueError(f"{prefix} jobdw needs capacity=SIZE")
                    if kv.get("type", "scratch") not in ("scratch", "cache"):
                        raise ValueError(f"{prefix} jobdw type={kv['type']}: scratch or cache")
                    if kv.get("access_mode", "striped") not in ("striped", "private", "striped,private"):
                        raise ValueError(f"{prefix} jobdw access_mode={kv['access_mode']}: striped, private or "
                                         "striped,private")
                    capacity += _size(kv["capacity"], f"{prefix} jobdw capacity")
                    access = kv.get("access_mode", "striped")
                    cap_line = cap_line or lineno
                elif verb in ("stage_in", "stage_out"):
                    staged.append(_stage(p, lineno, verb, _kv(words[1:], DW_STAGE_KEYS, f"{prefix} {verb}")))
                elif verb in ("persistentdw", "create_persistent", "destroy_persistent", "swap"):
                    raise ValueError(f"{prefix} {verb}: persistent burst buffers and swap are not modelled "
                                     "(a job's HPS bytes live from its stage-in to its end); see docs/workloads.md")
                else:
                    raise ValueError(f"unknown {prefix} directive {verb!r} (jobdw, stage_in, stage_out)")
        except ValueError as exc:
            raise ScriptError(p, lineno, str(exc)) from None
    if not any(ln.startswith(("#SBATCH", "#DW", "#BB_LUA")) for _, ln in header):
        raise ScriptError(p, 0, "no #SBATCH, #DW or #BB_LUA directive before its first command: nothing says "
                                "what the job asks for (nodes, time); is it a Slurm batch script?")
    if cap_line:
        lines["storage"] = cap_line
    time_given = walltime is not None
    if walltime is None:
        if default_time is None:
            raise ScriptError(p, 0, "no #SBATCH --time: give one (or a default time limit)")
        walltime = default_time
    if nodes is None:
        nodes = int(math.ceil(ntasks / per_node)) if ntasks and per_node else 1
    if staged and capacity <= 0:
        raise ScriptError(p, staged[0].line, "stages data but asks for no burst buffer (#DW jobdw capacity=...)")
    for s in staged:
        if s.bytes > capacity:
            raise ScriptError(p, s.line, f"{s.direction} of {s.bytes:.6g} B exceeds the burst buffer's "
                                         f"capacity {capacity:.6g} B (line {cap_line})")
    for what, value in (("walltime", walltime), ("submit", begin)):
        if value + (walltime if what == "submit" else 0.0) > MAX_TIME:
            raise ScriptError(p, lines.get(what, 0), f"{what} {value:.4g} s: the run's times would pass the limit "
                                                     f"of {MAX_TIME:g} s (docs/specs.md, 'Limits')")
    script = SlurmScript(path=str(p), name=name, nodes=nodes, walltime=walltime, time_given=time_given,
                         begin=begin, capacity=capacity, access_mode=access, staged=staged, lines=lines)
    try:
        script.job()
    except ValidationError as exc:
        e = exc.errors()[0]
        field_ = str(e["loc"][0]) if e["loc"] else ""
        raise ScriptError(p, lines.get(field_, 0), f"{field_}: {_short(e['msg'], 200)}") from None
    return script


MAX_LINE = 65_536  # characters of one header line
MAX_HEADER_LINES = 100_000
MAX_NODES = 10_000_000  # as iolab.specs.batch.Job
MAX_STAGED_FILES = 100_000  # files of one staged directory or list
SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


def _short(text: str, n: int = 80) -> str:
    """A value as it goes into a message: at most ``n`` characters."""
    text = str(text)
    return text if len(text) <= n else f"{text[:n]}... ({len(text)} characters)"


def _header_lines(p: Path) -> list[tuple[int, str]]:
    """The stripped lines before the first command (what sbatch reads), each bounded to
    :data:`MAX_LINE` characters while it is read: a 10 MB line is refused, not loaded."""
    out: list[tuple[int, str]] = []
    try:
        with open(p, encoding="utf-8") as f:
            for lineno in range(1, MAX_HEADER_LINES + 1):
                raw = f.readline(MAX_LINE + 1)
                if not raw:
                    return out
                if len(raw) > MAX_LINE and not raw.endswith("\n"):
                    if raw.lstrip().startswith("#"):
                        raise ScriptError(p, lineno, f"line longer than {MAX_LINE} characters")
                    return out  # a long command: the header has ended
                line = raw.strip()
                if line and not line.startswith("#"):
                    return out  # sbatch stops reading directives at the first command
                out.append((lineno, line))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(p, 0, f"cannot read it ({exc})") from None
    raise ScriptError(p, MAX_HEADER_LINES, f"more than {MAX_HEADER_LINES} comment lines before the first command")


def _positive(val: str, what: str) -> int:
    if not val.isdigit() or int(val) < 1 or len(val) > 12:
        raise ValueError(f"{what}={_short(val)}: a positive integer below 10^12")
    return int(val)


def _size(val: str, what: str) -> float:
    try:
        size = float(parse_size(val))  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"{what}: {_short(str(exc), 200)}") from None
    if not math.isfinite(size) or size > MAX_BYTES:
        raise ValueError(f"{what}={_short(val)}: {size:.3g} B, above the limit of {MAX_BYTES:.3g} B")
    return size


def _stage(script: Path, lineno: int, verb: str, kv: dict[str, str]) -> Staged:
    for k in ("source", "destination"):
        if k not in kv:
            raise ValueError(f"{verb} needs {k}=")
    kind = kv.get("type", "file")
    if kind not in ("file", "directory", "list"):
        raise ValueError(f"{verb} type={kind}: file, directory or list")
    named = kv["source"] if verb == "stage_in" else kv["destination"]
    target = Path(named) if Path(named).is_absolute() else script.parent / named
    size = None if "$" in named else _size_on_disk(target, kind)
    if size is not None:
        how = {"file": "file size", "directory": "sum of the directory's file sizes",
               "list": "sum of the listed files' sizes"}[kind]
    elif "size" in kv:
        size, how = _size(kv["size"], f"{verb} size"), "size="
    else:
        raise ValueError(f"{verb}: {target} does not exist (or is not a {kind}) and no size=SIZE is given")
    return Staged(verb, kv["source"], kv["destination"], kind, size, how, lineno)


def _sbatch_options(rest: str) -> list[tuple[str, str]]:
    """``-N 2 --time=1:00:00 -J x`` -> [("nodes", "2"), ("time", "1:00:00"), ("job-name", "x")]."""
    words = shlex.split(rest, comments=False)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            opt, eq, val = w[2:].partition("=")
            if opt not in SBATCH_OPTIONS:
                raise ValueError(f"unknown sbatch option --{opt}")
            if not eq and opt not in _FLAGS:
                if i + 1 >= len(words):
                    raise ValueError(f"--{opt} needs a value")
                i += 1
                val = words[i]
        elif w.startswith("-") and len(w) >= 2:
            letter = w[1]
            if letter not in SHORT_OPTIONS:
                raise ValueError(f"unknown sbatch option -{letter}")
            opt = SHORT_OPTIONS[letter]
            val = w[2:].lstrip("=")
            if not val and opt not in _FLAGS:
                if i + 1 >= len(words):
                    raise ValueError(f"-{letter} needs a value")
                i += 1
                val = words[i]
        else:
            break  # sbatch ignores what follows the options on a #SBATCH line
        out.append((opt, val))
        i += 1
    return out


def slurm_jobs(paths: list[str | Path], *, default_time: float | None = 3600.0,
               now: _dt.datetime | None = None) -> tuple[list[SlurmScript], list[Job]]:
    """Scripts and their jobs; ids are job names, made unique with ``-2``, ``-3``... in order."""
    scripts = [read_script(p, default_time=default_time, now=now) for p in paths]
    seen: dict[str, int] = {}
    jobs = []
    for s in scripts:
        base = re.sub(r"[^A-Za-z0-9_.:-]", "-", s.name).lstrip("_.:-")[:56] or "job"
        seen[base] = seen.get(base, 0) + 1
        ident = base if seen[base] == 1 else f"{base}-{seen[base]}"
        jobs.append(s.job(ident))
    return scripts, jobs


__all__ = ["SBATCH_OPTIONS", "ScriptError", "SlurmScript", "Staged", "parse_begin", "parse_time_limit",
           "read_script", "slurm_jobs"]
