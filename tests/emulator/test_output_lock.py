"""One run per output: the lock file beside an output (emulator/output_lock.py), with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from iolab.emulator.output_lock import OutputBusy, hold_outputs, lock_path


def test_a_live_holder_refuses_a_second_run_naming_its_pid(tmp_path):
    out = tmp_path / "run.h5"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from iolab.emulator.output_lock import hold_outputs
        with hold_outputs([{str(out)!r}]):
            print("held", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusy) as err:
            with hold_outputs([out]):
                pass
        assert f"process {holder.pid}" in str(err.value.message) and str(out) in err.value.message
        assert err.value.exit_code == 2
    finally:
        holder.kill()
        holder.wait()
    with hold_outputs([out]) as held:  # the kernel dropped the dead holder's lock: taken over, said so
        assert held.taken_over == [(lock_path(out), holder.pid)]
        assert lock_path(out).read_text().strip() == str(os.getpid())
    assert not lock_path(out).exists()  # a clean end leaves no lock file


def test_a_stale_lock_file_of_a_dead_process_is_taken_over_and_reported(tmp_path, capsys):
    dead = subprocess.Popen(["true"])
    dead.wait()
    work = tmp_path / "w"
    lock_path(work).write_text(f"{dead.pid}\n")
    with hold_outputs([work]) as held:
        assert held.taken_over == [(lock_path(work), dead.pid)]
    err = capsys.readouterr().err
    assert f"took over the lock of process {dead.pid}" in err and "is gone" in err


def test_nested_holds_of_one_output_are_refused_in_one_process_too(tmp_path):
    with hold_outputs([tmp_path / "o"]):
        with pytest.raises(OutputBusy):
            with hold_outputs([tmp_path / "o"]):
                pass


def test_ray_s_token_file_is_made_private_and_others_files_are_left_alone(tmp_path, monkeypatch):
    from iolab.emulator.ray_session import protect_token

    token = tmp_path / "auth_token"
    token.write_text("secret")
    token.chmod(0o644)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(token))
    protect_token()
    assert token.stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "none"))
    protect_token()  # no file: nothing to do, no error


IOLAB = str(__import__("pathlib").Path(sys.executable).parent / "iolab")


def _holder(path) -> subprocess.Popen:
    """Another process holding ``path``'s lock, as a first run does (it prints ``held`` once it does)."""
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from iolab.emulator.output_lock import hold_outputs
        with hold_outputs([{str(path)!r}]):
            print("held", flush=True)
            time.sleep(120)
        """)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_validate_on_a_held_work_folder_is_refused_with_exit_2_and_the_holder_s_pid(tmp_path):
    import yaml

    from small_runs import small_io

    spec, work = tmp_path / "v.yaml", tmp_path / "vw"
    spec.write_text(yaml.safe_dump(small_io("v")))
    holder = _holder(work)
    try:
        r = subprocess.run([IOLAB, "validate", str(spec), "--work-dir", str(work)], capture_output=True, text=True,
                           timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"process {holder.pid}" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not work.exists()  # nothing of the refused run was started


def test_a_study_on_a_held_output_folder_is_refused_with_exit_2_and_the_holder_s_pid(tmp_path):
    out = tmp_path / "study"
    holder = _holder(out)
    try:
        r = subprocess.run([IOLAB, "study", "lackner", "--quick", "--no-ray", "--no-figures", "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"process {holder.pid}" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not out.exists() or list(out.iterdir()) == []  # refused before it wrote anything


def test_an_inner_hold_that_reuses_the_outer_one_keeps_the_output_held_to_the_end(tmp_path):
    """How a study holds its folder from start to end while its campaign machinery, which locks the
    folder when it runs alone, runs inside: the inner hold neither locks again nor releases."""
    out = tmp_path / "o"
    with hold_outputs([out]):
        with hold_outputs([out], reuse_own=True) as inner:
            assert inner.fds == {}
        assert lock_path(out).read_text().strip() == str(os.getpid())  # still held after the inner block
        r = subprocess.run([sys.executable, "-c", f"from iolab.emulator.output_lock import hold_outputs\n"
                            f"with hold_outputs([{str(out)!r}]): pass"], capture_output=True, text=True)
        assert r.returncode != 0 and f"process {os.getpid()}" in r.stderr
    assert not lock_path(out).exists()
    with hold_outputs([out], reuse_own=True) as alone:  # nothing held here: it locks as usual
        assert list(alone.fds) == [out.absolute()]
