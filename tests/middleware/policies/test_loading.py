"""Naming a policy of one's own: the forms a spec takes, what reading a spec does (parse and hash, never
run), what loading does (import, API version, options), each mistake refused with the file and line or the
field (exit 2, no traceback), an installed module and a name a package registered (entry points)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from iolab.errors import SpecError
from iolab.specs.load import parse_spec

from policy_files import batch_doc, write

GOOD = '''
from iolab.policy import BatchScheduler


class Mine(BatchScheduler):
    def __init__(self, depth=4):
        self.depth = depth

    def decide(self, snap):
        return [j.id for j in snap.queue[:1] if j.nodes <= snap.free_nodes]
'''


def spec_of(folder, scheduler):
    return parse_spec(batch_doc(scheduler), "s.yaml", base_dir=folder)


def iolab(*args, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iolab", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("form", [
    "mine.py:Mine",
    {"kind": "python", "path": "mine.py", "class": "Mine"},
    {"kind": "Python", "path": "./mine.py", "class": "Mine", "options": {"depth": 2}},
])
def test_the_forms_of_a_user_scheduler_name_the_same_file_and_class(tmp_path, form):
    path = write(tmp_path, "mine.py", GOOD)
    ref = spec_of(tmp_path, form).scheduler
    assert (ref.path, ref.class_, ref.label) == (str(path.resolve()), "Mine", "mine.py:Mine")
    assert len(ref.sha256) == 64


def test_reading_a_spec_never_runs_the_policys_code(tmp_path):
    # the file would leave a mark if it ran; reading and validating the spec (what a dry run does) only parses it
    write(tmp_path, "mark.py", f'''
        open({str(tmp_path / "ran")!r}, "w").close()
        from iolab.policy import BatchScheduler

        class Marked(BatchScheduler):
            def decide(self, snap):
                return []
        ''')
    spec_of(tmp_path, "mark.py:Marked")
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("source,cls,field,words", [
    ("class Mine(:\n    pass\n", "Mine", "scheduler", "mine.py:1: not valid Python"),
    (GOOD, "Other", "scheduler", "no class 'Other' at its top level; it defines Mine"),
])
def test_a_file_that_does_not_parse_or_lacks_the_class_is_refused_when_read(tmp_path, source, cls, field, words):
    write(tmp_path, "mine.py", source)
    with pytest.raises(SpecError) as ex:
        spec_of(tmp_path, f"mine.py:{cls}")
    assert ex.value.problems[0][0] == field and words in ex.value.problems[0][1]


def test_a_pinned_file_that_changed_is_refused(tmp_path):
    write(tmp_path, "mine.py", GOOD)
    with pytest.raises(SpecError) as ex:
        spec_of(tmp_path, {"kind": "python", "path": "mine.py", "class": "Mine", "sha256": "ab" * 32})
    assert "the file changed since the spec was written" in ex.value.problems[0][1]


@pytest.mark.parametrize("source,options,words", [
    ("raise RuntimeError('no config')\n" + GOOD, {}, "mine.py raised while imported: RuntimeError: no config ("),
    (GOOD, {"width": 3}, "do not fit its constructor"),
    (GOOD.replace("self.depth = depth", "self.depth = 1 / (depth - 4)"), {}, "ZeroDivisionError"),
    (GOOD.replace("def decide", "def choose"), {}, "not a batch scheduler (decide)"),
    (GOOD.replace("class Mine(BatchScheduler):", "class Mine(BatchScheduler):\n    api_version = 99"), {},
     "written for policy API version 99; this iolab has version 1"),
])
def test_a_policy_that_cannot_be_built_stops_the_command_before_the_run_exit_2(tmp_path, source, options, words):
    write(tmp_path, "mine.py", source)
    (tmp_path / "s.json").write_text(json.dumps(batch_doc({"kind": "python", "path": "mine.py", "class": "Mine",
                                                           "options": options})))
    r = iolab("simulate", "s.json", "--out", "t.h5", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "scheduler:" in r.stderr and words in r.stderr, r.stderr
    assert not (tmp_path / "t.h5").exists()


def test_a_broken_decision_exits_1_naming_the_rule_class_and_time_and_keeps_the_partial_trace(tmp_path):
    write(tmp_path, "mine.py", GOOD.replace("return [j.id for j in snap.queue[:1] if j.nodes <= snap.free_nodes]",
                                            "return [j.id for j in snap.queue]"))
    (tmp_path / "s.json").write_text(json.dumps(batch_doc("mine.py:Mine")))
    r = iolab("simulate", "s.json", "--out", "t.h5", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "invariant 'node-double-booked' violated at t=1 by b: policy mine.py:Mine" in r.stderr
    assert "partial" in r.stderr and "Traceback" not in r.stderr
    from iolab.trace import read_trace

    trace = read_trace(tmp_path / "t.h5")
    assert trace.attrs["complete"] is False and "node-double-booked" in trace.attrs["stopped"]
    assert [r["status"] for r in trace.jobs.rows()] == ["killed", "pending", "pending", "pending"]


def test_an_exception_in_a_decision_exits_1_with_the_users_line(tmp_path):
    write(tmp_path, "mine.py", GOOD.replace("return [j.id", "return [j.nope"))
    (tmp_path / "s.json").write_text(json.dumps(batch_doc("mine.py:Mine")))
    r = iolab("simulate", "s.json", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "policy mine.py:Mine raised at t=0: AttributeError" in r.stderr
    assert f"{tmp_path / 'mine.py'}:10 in decide" in r.stderr


def test_an_installed_module_and_a_registered_name_load_the_same_class(tmp_path):
    # a package on the path with an entry point in iolab.schedulers: what `pip install` of a user's package makes
    pkg = tmp_path / "site" / "myscheds"
    pkg.mkdir(parents=True)
    write(pkg, "__init__.py", GOOD)
    dist = tmp_path / "site" / "myscheds-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myscheds\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[iolab.schedulers]\nmine = myscheds:Mine\n")
    (dist / "top_level.txt").write_text("myscheds\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    outs = {}
    for name, form in (("module", "myscheds:Mine"), ("entry", "mine")):
        (tmp_path / f"{name}.json").write_text(json.dumps(batch_doc(form)))
        r = iolab("simulate", f"{name}.json", "--out", f"{name}.h5", "--json", cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
        outs[name] = json.loads(r.stdout)
    assert outs["module"] == outs["entry"]
    assert outs["module"]["scheduler"] == "myscheds:Mine"
    from iolab.trace import read_trace

    prov = read_trace(tmp_path / "entry.h5").attrs["policies"]["scheduler"]
    assert prov["module"] == "myscheds" and prov["entry_point"] == "mine" and prov["distribution"] == "myscheds==0.1"


def test_an_unknown_name_lists_the_built_ins_and_the_registered_ones(tmp_path):
    with pytest.raises(SpecError) as ex:
        spec_of(tmp_path, "mine")
    assert "built-in: fcfs, easy" in ex.value.problems[0][1] and "file.py:Class" in ex.value.problems[0][1]
