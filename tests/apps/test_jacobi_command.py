"""The command line both real runners build for the Jacobi app, read back by the app's own parser."""

from __future__ import annotations

import sys

from iolab.apps.jacobi_args import build_parser, resolve
from iolab.apps.jacobi_command import MODULE, RANK_ENV, calibrate_argv, jacobi_argv, rank_env


def test_the_app_s_parser_reads_back_what_the_runners_build(tmp_path):
    phases = [["compute", 0.25], ["write", 3 << 20], ["read", 1 << 20]]
    argv = jacobi_argv("job-1", grid=64, phases=phases, compute_mode="work", coordinator="iolab.apps.coordination:local",
                       coordinator_config={"actor": "a", "job": "job-1"}, out_dir=tmp_path, chunk_bytes=1 << 20,
                       seed=7, fsync=False, sweeps_per_second=125.5)
    assert argv[:3] == [sys.executable, "-m", MODULE]
    cfg = resolve(build_parser().parse_args(argv[3:]))
    assert (cfg.app_id, cfg.grid, cfg.compute_mode, cfg.coordinator) == ("job-1", 64, "work", "iolab.apps.coordination:local")
    assert cfg.coordinator_config == {"actor": "a", "job": "job-1"}
    assert (cfg.out_dir, cfg.chunk_bytes, cfg.seed, cfg.fsync, cfg.sweeps_per_second) == (
        tmp_path, 1 << 20, 7, False, 125.5)
    assert [(p.kind, p.amount) for p in cfg.plan] == [tuple(p) for p in phases]
    # fsync on by default, no rate unless given
    args = build_parser().parse_args(jacobi_argv("a", grid=8, phases=[["compute", 1.0]], compute_mode="duration",
                                                 coordinator="iolab.apps.coordination:local", coordinator_config={}, out_dir=tmp_path,
                                                 chunk_bytes=4096, seed=0, fsync=True)[3:])
    assert not args.no_fsync and args.sweeps_per_second is None


def test_calibration_command_and_the_rank_environment():
    args = build_parser().parse_args(calibrate_argv(128, seconds=2)[3:])
    assert args.calibrate and args.grid == 128 and args.calibrate_seconds == 2.0
    env = rank_env()
    assert env == dict(RANK_ENV) and "PYTHONPATH" not in env
    env["X"] = "1"  # a copy: the next run's environment is unchanged
    assert "X" not in rank_env()
