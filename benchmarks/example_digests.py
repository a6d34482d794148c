"""Did a change move any decision of the bundled examples or the studies' quick sizes?

usage: python benchmarks/example_digests.py make DIR            simulate every bundled example
                                                                (examples/*.yaml, examples/validation/*.yaml)
                                                                into DIR/NAME.h5 and run every study's
                                                                --quick size into DIR/study-NAME/
       python benchmarks/example_digests.py compare BEFORE AFTER  every trace column by column
                                                                (benchmarks/same_traces.py) and every
                                                                study CSV cell by cell

Run ``make`` on the commit before a change and on the one after, then ``compare``: it prints one line
per file (``same`` or the first differences) and exits 1 if any differ.  Columns that measure the
machine rather than the model (``wall_seconds``, time stamps) and the real runs of the
dheenadayalan study (its ``emulated`` folder, ``emulated-vs-sim.csv``, ``forecast.csv`` (the forecast of the
real run's samples) and rows whose ``runtime``
is ``emulated``) are not compared.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_traces import differences  # noqa: E402  (a sibling script)

REPO = Path(__file__).resolve().parents[1]
STUDIES = ("carretero", "lackner", "monniot", "soysal", "dheenadayalan")
MACHINE_COLUMNS = {"wall_seconds", "wall", "created", "seconds", "elapsed"}
REAL_RUNS = {"emulated", "emulated-vs-sim.csv", "forecast.csv"}  # the dheenadayalan study's real runs


def _iolab() -> str:
    beside = Path(sys.executable).parent / "iolab"  # the venv's command, as `make install` makes it
    return str(beside) if beside.exists() else "iolab"


def make(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    specs = sorted((REPO / "examples").glob("*.yaml")) + sorted((REPO / "examples" / "validation").glob("*.yaml"))
    bad = 0
    for spec in specs:
        cmd = [_iolab(), "simulate", str(spec), "--out", str(out / f"{spec.stem}.h5")]
        bad += _run(cmd, out / f"{spec.stem}.log")
    for study in STUDIES:
        cmd = [_iolab(), "study", study, "--quick", "--no-figures", "--out", str(out / f"study-{study}")]
        bad += _run(cmd, out / f"study-{study}.log")
    return 1 if bad else 0


def _run(cmd: list[str], log: Path) -> int:
    print(" ".join(cmd), flush=True)
    with log.open("w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc:
        print(f"  exit {rc}: see {log}")
    return int(rc != 0)


def csv_differences(a: Path, b: Path, limit: int = 5) -> list[str]:
    with a.open() as fa, b.open() as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    if not ra or not rb or ra[0] != rb[0]:
        return [f"header differs: {ra[:1]} / {rb[:1]}"]
    if "runtime" in ra[0]:  # rows of real runs (a study's runtime=emulated) are not the model's
        col = ra[0].index("runtime")
        ra = ra[:1] + [r for r in ra[1:] if r[col] != "emulated"]
        rb = rb[:1] + [r for r in rb[1:] if r[col] != "emulated"]
    if len(ra) != len(rb):
        return [f"{len(ra) - 1} rows before, {len(rb) - 1} after"]
    keep = [i for i, name in enumerate(ra[0]) if name not in MACHINE_COLUMNS]
    out = []
    for n, (x, y) in enumerate(zip(ra[1:], rb[1:]), start=2):
        for i in keep:
            if x[i] != y[i]:
                out.append(f"line {n}, {ra[0][i]}: {x[i]} / {y[i]}")
                if len(out) >= limit:
                    return out
    return out


def compare(before: Path, after: Path) -> int:
    files = sorted(p.relative_to(before) for p in before.rglob("*")
                   if p.suffix in (".h5", ".csv") and not REAL_RUNS & set(p.relative_to(before).parts)
                   and p.name != "results.h5")
    differ = 0
    for rel in files:
        other = after / rel
        if not other.exists():
            print(f"{rel}: missing after")
            differ += 1
            continue
        diffs = differences(before / rel, other) if rel.suffix == ".h5" else csv_differences(before / rel, other)
        print(f"{rel}: {'same' if not diffs else '; '.join(diffs)}")
        differ += bool(diffs)
    print(f"{len(files) - differ} of {len(files)} files the same")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "make":
        return make(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
