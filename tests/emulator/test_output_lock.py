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
