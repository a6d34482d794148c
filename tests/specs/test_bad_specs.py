"""Bad specs are refused before anything runs, naming the field and the reason."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.cli import cli
from iolab.errors import SpecError
from iolab.specs import load_spec, parse_spec

GOOD = {
    "platform": {"io_nodes": 2, "nodes_per_io_node": 64, "bandwidth": 1.0},
    "policy": "fifo",
    "apps": [
        {"id": "A", "nodes": 16, "release": 0, "iterations": 2, "compute": 10, "io_volume": 5},
        {"id": "B", "nodes": 16, "release": 0, "phases": [{"compute": 1}, {"write": 2}]},
    ],
}


def problems(data) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    return err.value.problems


def mutate(path, value):
    data = copy.deepcopy(GOOD)
    node = data
    for p in path[:-1]:
        node = node[p]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize("path,value,where,reason", [
    (("apps", 0, "release"), -1, "apps[0].release", "greater than or equal to 0"),
    (("apps", 1, "nodes"), 65, "apps[1].nodes", "only 64"),
    (("policy",), "lifo", "policy", "'lifo'"),
    (("platform", "bandwidth"), KeyError, "platform.bandwidth", "missing"),
    (("apps", 0, "io_volume"), KeyError, "apps[0]", "missing io_volume"),
    (("apps", 1, "id"), "A", "apps[1].id", "duplicate id 'A'"),
    (("apps", 0, "compute"), "ten", "apps[0].compute", "valid number"),
    (("platform", "io_nodes"), 0, "platform.io_nodes", "greater than or equal to 1"),
    (("apps", 0, "iterations"), 2.5, "apps[0].iterations", "integer"),
    (("platform", "bandwith"), 1.0, "platform.bandwith", "unknown field"),
    (("apps", 1, "phases"), [{"compute": 1, "write": 2}], "apps[1].phases[0]", "exactly one of"),
    (("apps", 0, "io_node"), 5, "apps[0].io_node", "does not exist"),
    (("apps",), [], "apps", "at least 1"),
    (("sim",), {"mode": "event", "dt": 0}, "sim.dt", "greater than 0"),
])
def test_each_bad_value_is_named(path, value, where, reason):
    found = problems(mutate(path, value))
    assert any(p == where and reason in r for p, r in found), found


def test_cli_refuses_a_bad_file_with_exit_code_and_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(mutate(("apps", 0, "release"), -3)))
    res = CliRunner().invoke(cli, ["simulate", str(bad), "--out", str(tmp_path / "t.h5")])
    assert res.exit_code == 2
    assert "apps[0].release" in res.output and "bad.yaml" in res.output
    assert not (tmp_path / "t.h5").exists()  # nothing ran, nothing written


def test_unreadable_files_are_refused_with_the_line(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("platform: {io_nodes: 1\napps: [\n")
    with pytest.raises(SpecError, match=r"line \d+"):
        load_spec(broken)
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "missing.yaml")
    lst = tmp_path / "list.json"
    lst.write_text(json.dumps([1, 2]))
    with pytest.raises(SpecError, match="mapping of fields"):
        load_spec(lst)


def test_schema_lists_the_fields():
    res = CliRunner().invoke(cli, ["schema"])
    assert res.exit_code == 0
    schema = json.loads(res.output)
    assert {"platform", "apps", "policy", "mapping"} <= set(schema["properties"])


BAD_VALUES = st.one_of(
    st.integers(max_value=-1), st.floats(max_value=-1e-6, allow_nan=False),
    st.just(float("nan")), st.just(float("inf")), st.text(max_size=5).filter(lambda s: not s.strip().lstrip("-").replace(".", "").isdigit()),
    st.none(), st.lists(st.integers(), max_size=2),
)
NUMERIC_PATHS = [
    ("platform", "io_nodes"), ("platform", "nodes_per_io_node"), ("platform", "bandwidth"),
    ("apps", 0, "nodes"), ("apps", 0, "release"), ("apps", 0, "iterations"), ("apps", 0, "compute"),
    ("apps", 0, "io_volume"), ("apps", 1, "nodes"), ("apps", 1, "phases", 0, "compute"),
    ("apps", 1, "phases", 1, "write"), ("seed",),
]


def _fmt(path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + p
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(NUMERIC_PATHS), value=BAD_VALUES)
def test_any_bad_numeric_value_is_refused_at_its_path(path, value):
    if value is None and path[-1] in ("io_volume", "compute", "write", "iterations"):
        expect = _fmt(path[:-1])  # None means "not given": reported on the app or phase
    else:
        expect = _fmt(path)
    found = problems(mutate(path, value))
    assert any(p.startswith(expect) for p, _ in found), (expect, found)


def test_the_loader_knows_its_own_kinds_and_the_front_hands_it_the_campaign(tmp_path):
    from iolab.campaign.expand import load_campaign

    # a campaign where a run spec is expected: the loader alone does not know the kind
    with pytest.raises(SpecError) as err:
        parse_spec({"kind": "campaign", "name": "c"})
    assert err.value.problems == [("kind", "unknown kind 'campaign'; known: batch, io")]
    # the campaign loader passes its model; its problems name the campaign's fields
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "base": GOOD, "axes": {"policies": ["fifo"]}}))
    assert load_campaign(path).name == "c"
    path.write_text(yaml.safe_dump({"name": "c", "base": GOOD, "axes": {"policies": ["nope"]}}))
    with pytest.raises(SpecError) as err:
        load_campaign(path)
    assert [p for p, _ in err.value.problems] == ["axes.policies[0]"]


@pytest.mark.parametrize("kind, field", [("io", "apps"), ("batch", "workload"), ("campaign", "axes")])
def test_schema_knows_every_kind_of_the_command_line(kind, field):
    res = CliRunner().invoke(cli, ["schema", kind])
    assert res.exit_code == 0, res.output
    assert field in json.loads(res.output)["properties"]
    res = CliRunner().invoke(cli, ["schema", "nope"])
    assert res.exit_code == 2 and "'nope' is not one of 'batch', 'campaign', 'io'" in res.output
