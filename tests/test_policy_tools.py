"""``iolab policy new`` and ``iolab policy check``: every template is a working policy of its kind, its test
file passes, a broken policy is reported with the rule it broke (exit 1), one that does not load exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from iolab.cli.policy import policy
from iolab.policy_check import check_policy
from iolab.policy_templates import KINDS

from policy_files import write


def test_every_template_checks_clean_and_its_tests_pass(tmp_path):
    runner = CliRunner()
    for kind in KINDS:
        r = runner.invoke(policy, ["new", kind, f"my_{kind}", "-o", str(tmp_path)])
        assert r.exit_code == 0, r.output
        assert f"wrote {tmp_path / f'my_{kind}.py'}" in r.output
        report = check_policy(tmp_path / f"my_{kind}.py")
        assert report.kind == kind and report.ok, report.text()
        assert all(res.figures for res in report.results)
    # the written tests, as the user runs them (their own process, from their folder)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"{len(KINDS) + 1} passed" in out.stdout


def test_new_writes_nothing_over_an_existing_file(tmp_path):
    (tmp_path / "mine.py").write_text("# mine\n")
    r = CliRunner().invoke(policy, ["new", "batch", "mine", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "exists" in r.output
    assert (tmp_path / "mine.py").read_text() == "# mine\n" and not (tmp_path / "test_mine.py").exists()


BROKEN = '''
from iolab.policy import BatchScheduler


class Greedy(BatchScheduler):
    """Starts every waiting job at once, whatever is free."""

    def decide(self, snap):
        return [j.id for j in snap.queue]
'''


def test_check_names_the_rule_a_broken_policy_breaks_and_exits_1(tmp_path):
    write(tmp_path, "greedy.py", BROKEN)
    r = CliRunner().invoke(policy, ["check", str(tmp_path / "greedy.py")])
    assert r.exit_code == 1, r.output
    assert "BROKE invariant 'node-double-booked'" in r.output and "greedy.py:Greedy" in r.output
    assert "kind batch" in r.output


@pytest.mark.parametrize("source,words", [
    ("class Greedy(:\n", "greedy.py:1: not valid Python"),
    (BROKEN.replace("def decide", "def nothing"), "no method decide"),
])
def test_a_policy_that_does_not_load_exits_2(tmp_path, source, words):
    write(tmp_path, "greedy.py", source)
    r = CliRunner().invoke(policy, ["check", f"{tmp_path / 'greedy.py'}:Greedy", "--kind", "batch"])
    assert r.exit_code == 2, r.output
    assert words in r.output and "Traceback" not in r.output
