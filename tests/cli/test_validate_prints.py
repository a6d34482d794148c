"""``iolab validate`` prints each policy's tables as the policy is done, through Click's and Python's supported
calls only: no deprecation warning from iolab's command line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from click.testing import CliRunner

import iolab
from iolab.cli import cli
from iolab.sim.io.run import simulate
from iolab.specs import parse_spec
from iolab.trace import write_trace

DOC = {"name": "prints", "policy": "fifo", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
       "apps": [{"id": f"a{i}", "nodes": 2, "iterations": 2, "compute": 10.0 + i, "io_volume": 5.0} for i in range(2)],
       "emulator": {"time_scale": 0.01}}


def test_validate_prints_every_policy_without_a_deprecated_call(tmp_path):
    spec = parse_spec(DOC)
    (tmp_path / "s.json").write_text(json.dumps(DOC))
    for policy in ("fifo", "lowest-id"):  # kept "real" runs: simulations stored as the emulator's
        real = simulate(spec, policy=policy)
        real.attrs.update(runtime="emulator", spec=spec.model_dump(mode="json"), policy=policy,
                          time_scale=spec.emulator.time_scale, host="testhost")
        write_trace(real, tmp_path / "kept" / f"{policy}.h5")
    ours = Path(iolab.__file__).parent
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = CliRunner().invoke(cli, ["validate", str(tmp_path / "s.json"), "--policies", "fifo,lowest-id",
                                       "--traces", str(tmp_path / "kept")])
    assert out.exit_code == 0, out.output
    assert [line.split(":")[0] for line in out.stdout.splitlines() if ": simulated with" in line] == \
        ["fifo", "lowest-id"]
    mine = [w for w in seen if issubclass(w.category, DeprecationWarning) and Path(w.filename).is_relative_to(ours)]
    assert not mine, [f"{w.filename}:{w.lineno}: {w.message}" for w in mine]
