"""The batch simulator's I/O nodes: arbitration of a job's parts, max-min fair rates, suspension, strict mode."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.sim.batch.engine import BatchEngine
from iolab.sim.batch.io_node_layer import IONodeLayer
from iolab.sim.batch.maxmin import max_min_rates
from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec
from iolab.workloads.steps import job_steps

GB = 1e9


def spec(jobs, *, nodes=4, io_nodes=1, policy="fifo", io_rate="2GB/s", scheduler="fcfs", lps="1GB/s", **top):
    platform = {"nodes": nodes, "memory_per_node": "1GB", "lps": {"rate": lps},
                "hps": {"rate": "10GB/s", "capacity": "100GB"}, "stage_rate": "2GB/s"}
    if io_nodes:
        platform.update(io_nodes=io_nodes, io_node={"rate": io_rate, "policy": policy})
    return parse_spec({"kind": "batch", "platform": platform, "scheduler": scheduler,
                       "workload": {"source": "inline", "jobs": jobs}, **top})


def flat(pairs):
    return [x for p in pairs for x in p]


def rows(table):
    return list(table.rows())


# two jobs of 2 nodes on one I/O node, each writing 10 GB at once (runtime 10 s = its I/O alone on LPS)
TWO_WRITERS = [{"id": x, "submit": 0, "nodes": 2, "walltime": 100, "runtime": 10, "output": "10GB"} for x in "ab"]


# -- 1. fifo: one part transfers at a time; shared: they overlap -------------------------------------------
def test_fifo_grants_one_part_at_a_time_the_other_waits():
    t = simulate_batch(spec(TWO_WRITERS, policy="fifo"))
    g = sorted(rows(t.grants), key=lambda r: r["grant"])
    assert [r["job"] for r in g] == ["a", "b"] and {r["io_node"] for r in g} == {0}
    assert g[1]["grant"] >= g[0]["release"]  # never two grants at once on the node
    assert g[1]["request"] == 0 and g[1]["grant"] == pytest.approx(10)  # b waited for a's part
    # a alone at min(2 GB/s, LPS 1 GB/s): 10 s; then b alone: 10 s more
    assert list(t.jobs["end"]) == pytest.approx([10, 20])


def test_shared_grants_both_parts_at_once_and_they_share_the_tier():
    t = simulate_batch(spec(TWO_WRITERS, policy="shared"))
    g = rows(t.grants)
    assert [(r["request"], r["grant"]) for r in g] == [(0, 0), (0, 0)]
    assert all(r["release"] == pytest.approx(20) for r in g)  # 10 GB each at 0.5 GB/s of LPS
    assert min(r["release"] for r in g) > max(r["grant"] for r in g)  # they overlap


def test_io_node_rate_is_the_bottleneck_when_below_the_tier():
    # HPS at 10 GB/s behind an I/O node of 1 GB/s: a 5 GB write takes 5 s, not 0.5 s
    jobs = [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50, "output": "5GB", "storage": "5GB"}]
    t = simulate_batch(spec(jobs, io_rate="1GB/s", scheduler="sas"))
    w = [r for r in rows(t.phases) if r["kind"] == "write"]
    assert t.jobs["tier"][0] == "hps" and len(w) == 1
    assert w[0]["end"] - w[0]["start"] == pytest.approx(5)
    stage = [r for r in rows(t.phases) if r["kind"] == "stage-out"]
    assert stage[0]["io_node"] == -1 and not [r for r in rows(t.grants) if r["phase"] == stage[0]["index"]]


def write_length(platform_overheads=None, *, io_rate, lps="1GB/s", tier="hps"):
    """The simulated length of a lone 5 GB write on ``tier`` behind one I/O node of ``io_rate``."""
    jobs = [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50, "output": "5GB",
             **({"storage": "5GB"} if tier == "hps" else {})}]
    sp = spec(jobs, io_rate=io_rate, lps=lps, scheduler="sas" if tier == "hps" else "fcfs")
    if platform_overheads is not None:
        sp = sp.model_copy(update={"platform": sp.platform.model_copy(update={
            "overheads": type(sp.platform.overheads).model_validate(platform_overheads)})})
    t = simulate_batch(sp, strict=True)
    assert t.jobs["tier"][0] == tier
    (w,) = [r for r in rows(t.phases) if r["kind"] == "write"]
    return w["end"] - w["start"]


@pytest.mark.parametrize("share", [0.5, 0.8, 1.25])
def test_the_delivered_share_slows_a_part_whose_io_node_is_the_bottleneck(share):
    # HPS at 10 GB/s behind an I/O node of 1 GB/s: a real run measures its share against min(10, 1) GB/s,
    # so a calibrated 5 GB write lasts 5 s / share (the tier link alone at 10 x share would not bind)
    plain = write_length(io_rate="1GB/s")
    calibrated = write_length({"delivered": {"hps": share}}, io_rate="1GB/s")
    assert plain == pytest.approx(5)
    assert calibrated == pytest.approx(5 / share)
    # the other tier's share leaves it alone
    assert write_length({"delivered": {"lps": share}}, io_rate="1GB/s") == pytest.approx(5)


def test_the_delivered_share_still_slows_a_part_whose_tier_is_the_bottleneck():
    # LPS at 1 GB/s behind an I/O node of 2 GB/s: 5 s, and 5 / 0.5 s with half delivered
    assert write_length(io_rate="2GB/s", tier="lps") == pytest.approx(5)
    assert write_length({"delivered": {"lps": 0.5}}, io_rate="2GB/s", tier="lps") == pytest.approx(10)


# -- 3. max-min fair rates against an independent check --------------------------------------------------
def bottleneck_check(paths, caps, rates, tol=1e-9):
    """An allocation is max-min fair iff it is feasible and every stream crosses a saturated link on
    which no stream gets more than it (the bottleneck characterisation; Bertsekas & Gallager 6.5)."""
    load = {link: 0.0 for link in caps}
    for p, r in zip(paths, rates):
        assert r > 0
        for link in p:
            load[link] += r
    for link, c in caps.items():
        assert load[link] <= c * (1 + tol)
    for i, p in enumerate(paths):
        assert any(load[link] >= caps[link] * (1 - tol)
                   and all(rates[j] <= rates[i] * (1 + tol) for j, q in enumerate(paths) if link in q)
                   for link in p), f"stream {i} has no bottleneck"


@pytest.mark.parametrize("paths, caps, expected", [
    # one bottleneck I/O node: 3 parts on io0 (3 GB/s), tier of 100: 1 each
    ([("io0", "t"), ("io0", "t"), ("io0", "t")], {"io0": 3, "t": 100}, [1, 1, 1]),
    # one bottleneck tier: two I/O nodes of 10, tier of 4 shared by 4 streams: 1 each
    ([("io0", "t"), ("io0", "t"), ("io1", "t"), ("io1", "t")], {"io0": 10, "io1": 10, "t": 4}, [1, 1, 1, 1]),
    # mixed: io0 (2) holds 2 streams -> 1 each; io1's stream takes the rest of the tier (5 - 2 = 3)
    ([("io0", "t"), ("io0", "t"), ("io1", "t")], {"io0": 2, "io1": 10, "t": 5}, [1, 1, 3]),
    # two tiers: io0 (6) shared by a stream to t1 (cap 1) and one to t2 (cap 100): 1 and 5
    ([("io0", "t1"), ("io0", "t2")], {"io0": 6, "t1": 1, "t2": 100}, [1, 5]),
])
def test_max_min_on_hand_made_cases(paths, caps, expected):
    rates = max_min_rates(paths, caps)
    assert rates == pytest.approx(expected)
    bottleneck_check(paths, caps, rates)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=7),
       st.lists(st.floats(0.5, 20), min_size=5, max_size=5))
def test_max_min_has_a_bottleneck_for_every_stream(pairs, c):
    paths = [(f"io{a}", f"t{b}") for a, b in pairs]
    caps = {"io0": c[0], "io1": c[1], "io2": c[2], "t0": c[3], "t1": c[4]}
    caps = {k: v for k, v in caps.items() if any(k in p for p in paths)}
    bottleneck_check(paths, caps, max_min_rates(paths, caps))


def test_the_engine_moves_bytes_as_a_fixed_step_stepper_does():
    # 3 jobs on 2 I/O nodes (shared, 1 GB/s each) writing to LPS (1.5 GB/s): a and b on io0, c on io1
    # (runtime = output / R_lps: no compute)
    jobs = [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 4 / 1.5, "output": "4GB"},
            {"id": "b", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 2 / 1.5, "output": "2GB"},
            {"id": "c", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 6 / 1.5, "output": "6GB"}]
    t = simulate_batch(spec(jobs, nodes=4, io_nodes=2, policy="shared", io_rate="1GB/s", lps="1.5GB/s"))
    ends = dict(zip(t.jobs["id"], t.jobs["end"]))
    # the stepper: every dt, the rates of the streams still moving (max-min by the module doc's rule,
    # written out: io0 gives each of its streams 1/k0, io1 its stream 1 GB/s, LPS 1.5 GB/s shared)
    left = {"a": 4.0, "b": 2.0, "c": 6.0}
    node = {"a": 0, "b": 0, "c": 1}
    dt, now, done = 1e-4, 0.0, {}
    while left:
        k0 = sum(1 for j in left if node[j] == 0)
        want = {j: (1.0 / k0 if node[j] == 0 else 1.0) for j in left}
        if sum(want.values()) > 1.5:  # the tier binds: equal shares, capped by each I/O node's
            fair = 1.5 / len(left)
            r = {j: min(fair, want[j]) for j in left}
            spare = 1.5 - sum(r.values())
            free = [j for j in left if want[j] > r[j]]
            for j in free:
                r[j] += spare / len(free)
        else:
            r = want
        now += dt
        for j in list(left):
            left[j] -= r[j] * dt
            if left[j] <= 0:
                done[j] = now
                del left[j]
    for j in done:
        assert ends[j] == pytest.approx(done[j], abs=2e-3)


# -- 4. a job on two I/O nodes: one part per I/O node, granted independently ---------------------------
def test_a_job_on_two_io_nodes_has_two_parts_granted_independently():
    # y (6 nodes: ids 0-5, I/O nodes 0 and 1 of 4 ids each) writes 12 GB at t=5: 8 GB on io0, 4 GB on io1;
    # x (ids 6-7, io1) writes 10 GB from t=0, so y's part on io1 waits (fifo) while its part on io0 goes
    jobs = [{"id": "y", "submit": 0, "nodes": 6, "walltime": 100, "runtime": 17, "output": "12GB"},
            {"id": "x", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 10, "output": "10GB"}]
    t = simulate_batch(spec(jobs, nodes=8, io_nodes=2, policy="fifo", io_rate="2GB/s"))
    y = sorted((r for r in rows(t.phases) if r["job"] == "y" and r["kind"] == "write"), key=lambda r: r["io_node"])
    assert flat((r["io_node"], r["volume"]) for r in y) == pytest.approx([0, 8 * GB, 1, 4 * GB])
    assert sum(r["volume"] for r in y) == pytest.approx(12 * GB)
    # by hand: x alone on LPS (1 GB/s) 0..5 (5 GB left); 5..15 x and y@io0 share LPS (0.5 each): x ends at
    # 15, y@io0 has 3 GB left; 15..21 y@io0 and y@io1 share LPS: y@io0 ends at 21, y@io1 has 1 GB left,
    # alone until 22
    assert [r["start"] for r in y] == pytest.approx([5, 5])
    assert [r["end"] for r in y] == pytest.approx([21, 22])
    g = {r["io_node"]: r for r in rows(t.grants) if r["job"] == "y"}
    assert (g[0]["request"], g[0]["grant"], g[0]["release"]) == pytest.approx((5, 5, 21))
    assert (g[1]["request"], g[1]["grant"], g[1]["release"]) == pytest.approx((5, 15, 22))
    assert t.jobs["end"][list(t.jobs["id"]).index("y")] == pytest.approx(22)


# -- 7. suspension: a part's bytes are kept --------------------------------------------------------------
class Stopper:
    """A stand-in for the load controller: suspends ``job`` at ``at`` and resumes it at ``back``."""

    def __init__(self, job, at, back):
        self.job, self.at, self.back = job, at, back

    def start(self, engine):
        engine.push_control(self.at, "stop")
        engine.push_control(self.back, "go")

    def event(self, engine, arg, t):
        s = engine.kernel.by_id[self.job]
        (engine.driver.suspend if arg == "stop" else engine.driver.resume)(s, t)


def run_with(sp, controller=None):
    k = BatchKernel.from_spec(sp, sp.workload.jobs)
    e = BatchEngine.around(k, memory_per_node=sp.platform.memory_per_node)
    layer = IONodeLayer.from_spec(sp, strict=True)
    layer.install(e)
    e.controller = controller
    rec = e.run()
    layer.close(max(s.end for s in rec.jobs))
    return rec, layer


def test_a_suspended_job_keeps_the_bytes_left_of_each_part():
    # one job on 2 nodes, 1 per I/O node: 10 GB in two parts of 5 GB, each 0.5 GB/s (LPS 1 GB/s shared)
    jobs = [{"id": "a", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 10, "output": "10GB"}]
    sp = spec(jobs, nodes=2, io_nodes=2)
    rec, layer = run_with(sp, Stopper("a", 4.0, 10.0))
    # 2 GB of each part moved by 4; the 3 GB left of each at 0.5 GB/s from 10: ends at 16
    assert rec.jobs[0].end == pytest.approx(16)
    g = sorted(layer.grants, key=lambda r: (r[2], r[4]))
    assert flat((r[2], r[3], r[4], r[5]) for r in g) == pytest.approx(
        flat([(0, 0, 0, 4), (0, 10, 10, 16), (1, 0, 0, 4), (1, 10, 10, 16)]))
    parts = [r for r in rec.phases.rows() if r[2] == "write"]
    assert flat(sorted((r[6], r[5]) for r in parts)) == pytest.approx([0, 5 * GB, 1, 5 * GB])
    assert rec.jobs[0].suspensions == ((4.0, 10.0),)


def test_a_suspended_waiting_part_is_withdrawn_and_asks_again():
    # a and b on one fifo I/O node; b waits behind a; b is suspended while it waits and resumed later
    rec, layer = run_with(spec(TWO_WRITERS, policy="fifo"), Stopper("b", 5.0, 30.0))
    g = {r[0]: r for r in layer.grants}
    assert g["a"][3:] == pytest.approx((0, 0, 10))
    assert g["b"][3:] == pytest.approx((30, 30, 40))  # asked again at its resume, 10 GB left
    assert [s.end for s in rec.jobs] == pytest.approx([10, 40])


# -- 2. without io_nodes: the engine path never touches the I/O-node layer --------------------------------
def test_without_io_nodes_the_layer_is_never_touched(monkeypatch):
    from pathlib import Path

    import iolab.middleware.policies.batch.io_parts as io_parts
    import iolab.sim.batch.io_node_layer as io_nodes
    from iolab.specs import load_spec

    examples = Path(__file__).resolve().parents[3] / "examples"
    sp = load_spec(examples / "validation" / "controller-interference.yaml")
    before = simulate_batch(sp)

    def boom(*a, **k):
        raise AssertionError("the I/O-node layer was touched on a platform without I/O nodes")

    for name in ("add", "remove", "next_completion", "pop_finished", "install"):
        monkeypatch.setattr(io_nodes.IONodeLayer, name, boom)
    monkeypatch.setattr(io_nodes, "max_min_rates", boom)
    monkeypatch.setattr(io_parts, "split_parts", boom)
    after = simulate_batch(sp)
    assert len(after.actions) > 0  # the controller acted: suspensions went through the plain links
    for name in ("jobs", "phases", "actions", "samples"):
        a, b = before.tables[name], after.tables[name]
        for c in a.columns:
            assert list(map(repr, a[c])) == list(map(repr, b[c])), (name, c)
    assert set(after.phases["io_node"]) == {-1} and len(after.grants) == 0
    assert "io_nodes" not in after.attrs


# -- 6. strict mode: a planted double grant inside a batch run ------------------------------------------
def test_strict_mode_catches_a_double_grant_on_an_exclusive_io_node(monkeypatch):
    from iolab.invariants import InvariantViolation
    from iolab.middleware.policies.arbiter import IONodeArbiter

    honest = IONodeArbiter.dispatch

    def double(self, now):  # a bug: grants the next waiting part although one holds the node
        if self._exclusive and self.active and self._waiting:
            req = self._queue.pop(now)
            del self._waiting[req.app]
            self.active[req.app] = req
            return [req]
        return honest(self, now)

    # a third writer arrives while a transfers and b waits: the broken dispatch grants b beside a
    jobs = TWO_WRITERS + [{"id": "c", "submit": 1, "nodes": 1, "walltime": 100, "runtime": 1, "output": "1GB"}]
    sp = spec(jobs, nodes=5, policy="fifo")
    assert len(simulate_batch(sp, strict=True).jobs) == 3  # honest: no violation
    monkeypatch.setattr(IONodeArbiter, "dispatch", double)
    with pytest.raises(InvariantViolation) as e:
        simulate_batch(sp, strict=True)
    assert e.value.rule == "exclusive-io" and e.value.subject == "I/O node 0"
    assert "transfers" in str(e.value)


def test_strict_mode_catches_a_forgotten_release(monkeypatch):
    from iolab.invariants import InvariantViolation
    from iolab.middleware.policies.arbiter import IONodeArbiter

    honest = IONodeArbiter.release

    def forgetful(self, app):  # a bug: the release is lost, the node stays busy by its own books
        req = honest(self, app)
        self.active[app + "-ghost"] = req
        return req

    monkeypatch.setattr(IONodeArbiter, "release", forgetful)
    with pytest.raises(InvariantViolation) as e:
        simulate_batch(spec(TWO_WRITERS, policy="fifo"), strict=True)
    assert e.value.rule == "idle-while-waiting" and e.value.subject == "I/O node 0"


# -- the example, on the command line with --strict -------------------------------------------------------
def test_combined_example_simulates_strictly_with_io_nodes_in_its_trace(monkeypatch, tmp_path):
    import sys

    from iolab.cli import main
    from iolab.trace import read_trace
    from shared_data import REPO

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["iolab", *args])
        with pytest.raises(SystemExit) as ex:
            main()
        return ex.value.code or 0

    monkeypatch.delenv("IOLAB_STRICT", raising=False)
    out = tmp_path / "c.h5"
    assert run("simulate", str(REPO / "examples" / "combined-small.yaml"), "--strict", "--out", str(out)) == 0
    t = read_trace(out)
    ph = rows(t.phases)
    assert {r["io_node"] for r in ph if r["kind"] in ("read", "write")} == {0, 1}
    assert {r["io_node"] for r in ph if r["kind"] not in ("read", "write")} == {-1}  # compute, staging
    g = rows(t.grants)
    assert any(r["grant"] > r["request"] for r in g)  # some part waited for its I/O node
    for node in (0, 1):  # fifo: the grants of one I/O node never overlap
        spans = sorted((r["grant"], r["release"]) for r in g if r["io_node"] == node)
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    assert t.attrs["io_nodes"] == 2 and t.attrs["io_node_policy"] == "fifo"


def test_strict_on_the_command_line_names_the_io_node_of_a_double_grant(monkeypatch, capsys):
    import sys

    import iolab.sim.batch.io_node_layer as io_nodes
    from iolab.cli import main
    from io_fakes import GrantsTwice
    from shared_data import REPO

    monkeypatch.setattr(io_nodes, "IONodeArbiter", GrantsTwice)
    monkeypatch.delenv("IOLAB_STRICT", raising=False)
    monkeypatch.setattr(sys, "argv", ["iolab", "simulate", str(REPO / "examples" / "combined-small.yaml"), "--strict"])
    with pytest.raises(SystemExit) as ex:
        main()
    err = capsys.readouterr().err
    assert ex.value.code == 1 and "invariant 'exclusive-io' violated" in err and "I/O node" in err
    assert "Traceback" not in err


# -- random machines: the trace's own evidence, under every policy ----------------------------------------
POLICY_NAMES = ["fifo", "lowest-id", "longest-io", "shortest-io", "shortest-remaining", "longest-remaining",
                "bandwidth", "stretch", "shared"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 300), st.integers(0, 3), st.integers(0, 3),
                          st.integers(0, 3)), min_size=1, max_size=6),
       st.sampled_from(POLICY_NAMES), st.sampled_from(["fcfs", "easy", "sas"]),
       st.sampled_from(["lowest", "io-aware"]))
def test_random_machines_keep_the_rules_of_both_levels(jobs, policy, scheduler, allocation):
    doc = [{"id": f"j{i}", "submit": sub, "nodes": n, "walltime": 2000, "runtime": 400,
            "input": f"{4 * a}GB", "output": f"{4 * b}GB", "data": f"{8 * c}GB", "storage": f"{4 * (a + b) + 1}GB"}
           for i, (n, sub, a, b, c) in enumerate(jobs)]
    t = simulate_batch(spec(doc, nodes=8, io_nodes=2, policy=policy, scheduler=scheduler,
                            allocation={"kind": allocation}), strict=True)  # the checkers of both levels
    span = 4
    where = {j: {i // span for i in _ranges(r)} for j, r in zip(t.jobs["id"], t.jobs["node_ids"])}
    by_phase: dict = {}
    for r in rows(t.phases):
        if r["kind"] in ("read", "write"):
            by_phase.setdefault((r["job"], r["index"]), []).append(r)
    for (job, _), parts in by_phase.items():
        assert sorted(p["io_node"] for p in parts) == sorted(where[job])  # one part per I/O node of the job
        assert all(p["end"] >= p["start"] for p in parts)
    if policy != "shared":
        for node in (0, 1):
            spans = sorted((r["grant"], r["release"]) for r in rows(t.grants) if r["io_node"] == node)
            assert all(b[0] >= a[1] - 1e-9 * max(1.0, a[1]) for a, b in zip(spans, spans[1:]))


def _ranges(text):
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        yield from range(int(lo), int(hi or lo) + 1)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(POLICY_NAMES), st.floats(0, 30), st.floats(0, 30), st.integers(0, 2))
def test_suspending_at_any_time_conserves_every_parts_bytes(policy, at, pause, who):
    # three writers on 2 I/O nodes; one is stopped at any time (waiting, transferring, between phases)
    jobs = [{"id": "a", "submit": 0, "nodes": 3, "walltime": 500, "runtime": 20, "output": "12GB", "data": "6GB"},
            {"id": "b", "submit": 0, "nodes": 2, "walltime": 500, "runtime": 10, "output": "8GB"},
            {"id": "c", "submit": 2, "nodes": 3, "walltime": 500, "runtime": 10, "output": "6GB"}]
    sp = spec(jobs, nodes=8, io_nodes=2, policy=policy)
    job = "abc"[who]
    plain, _ = run_with(sp)
    if not plain.jobs[who].start < at < plain.jobs[who].end:
        return  # it must have started (a decision at its start instant comes after the instant's events)
    rec, layer = run_with(sp, Stopper(job, at, at + pause))  # strict: bytes-conserved per part and phase
    volumes: dict = {}
    for r in rec.phases.rows():
        if r[2] == "write":
            volumes[(r[0], r[1])] = volumes.get((r[0], r[1]), 0.0) + r[5]
    steps = {(s.id, i): step.amount for s in rec.jobs
             for i, step in enumerate(job_steps(s.job, s.tier, 1 * GB, 1 * GB).steps) if step.kind == "write"}
    assert volumes == pytest.approx(steps)
    # (it may end sooner than without the pause: a later request can find its I/O node free)
    s = rec.jobs[who]
    assert s.end >= s.start + s.job.runtime + pause - 1e-9  # its runtime alone on LPS, plus the pause


def test_a_list_policy_ranks_the_waiting_parts_by_the_jobs_facts():
    # a holds the I/O node from 0; b (8 GB) and c (1 GB) ask at t=1 and wait: fifo grants them in
    # request order (then rank: b), shortest-io grants c's shorter part first
    jobs = [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 10, "output": "10GB"},
            {"id": "b", "submit": 1, "nodes": 1, "walltime": 100, "runtime": 8, "output": "8GB"},
            {"id": "c", "submit": 1, "nodes": 1, "walltime": 100, "runtime": 1, "output": "1GB"}]
    order = {}
    for policy in ("fifo", "shortest-io"):
        t = simulate_batch(spec(jobs, nodes=4, policy=policy))
        order[policy] = [r["job"] for r in sorted(rows(t.grants), key=lambda r: r["grant"])]
    assert order == {"fifo": ["a", "b", "c"], "shortest-io": ["a", "c", "b"]}


# -- the whole layer against an independent fixed-step reference ------------------------------------------
def reference_ends(jobs, policy, io_rate, tier_rate, span=4, dt=1e-3):
    """Every job's end by a fixed-step stepper written apart from the layer: the jobs (nodes, compute s,
    bytes) start at 0 on consecutive ids; each writes its bytes after its compute, one part per I/O node
    (bytes x its nodes there / its nodes); fifo grants one part per I/O node in (request, job) order;
    rates by the bottleneck rule: the link whose capacity left per unfrozen stream is least fixes its
    streams at that share, until every stream is fixed."""
    parts, first = [], 0
    for j, (n, compute, volume) in enumerate(jobs):
        on = {}
        for i in range(first, first + n):
            on[i // span] = on.get(i // span, 0) + 1
        first += n
        parts += [{"job": j, "node": node, "left": volume * k / n, "ask": compute, "on": False}
                  for node, k in sorted(on.items())]
    end = {j: compute for j, (_, compute, volume) in enumerate(jobs) if volume == 0}
    t = 0.0
    while any(p["left"] > 0 for p in parts):
        for node in {p["node"] for p in parts}:  # grants at t
            waiting = sorted((p for p in parts if p["node"] == node and not p["on"] and p["left"] > 0
                              and p["ask"] <= t + 1e-12), key=lambda p: (p["ask"], p["job"]))
            busy = any(p["on"] for p in parts if p["node"] == node)
            for p in waiting if policy == "shared" else waiting[:0 if busy else 1]:
                p["on"] = True
        live = [p for p in parts if p["on"]]
        rate, cap = {}, {("io", p["node"]): io_rate for p in live}
        cap["tier"] = tier_rate
        while len(rate) < len(live):
            share = {}
            for link, c in cap.items():
                users = [i for i, p in enumerate(live) if i not in rate and link in (("io", p["node"]), "tier")]
                used = sum(r for i, r in rate.items() if link in (("io", live[i]["node"]), "tier"))
                if users:
                    share[link] = ((c - used) / len(users), users)
            s, users = min(share.values(), key=lambda v: v[0])
            for i in users:
                rate[i] = s
        t += dt
        for i, p in enumerate(live):
            p["left"] -= rate[i] * dt
            if p["left"] <= 0:
                p["on"] = False
                end[p["job"]] = max(end.get(p["job"], 0.0), t) if all(
                    q["left"] <= 0 for q in parts if q["job"] == p["job"]) else end.get(p["job"], 0.0)
    return [end[j] for j in range(len(jobs))]


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(0, 6)), min_size=1, max_size=4)
       .filter(lambda js: sum(n for n, _, _ in js) <= 8),
       st.sampled_from(["fifo", "shared"]), st.sampled_from([1, 3]))
def test_the_layer_agrees_with_a_fixed_step_reference(jobs, policy, io_gb):
    doc = [{"id": f"j{i}", "submit": 0, "nodes": n, "walltime": 1000, "runtime": c + v / 2,
            **({"output": f"{v}GB"} if v else {})} for i, (n, c, v) in enumerate(jobs)]
    t = simulate_batch(spec(doc, nodes=8, io_nodes=2, policy=policy, io_rate=f"{io_gb}GB/s", lps="2GB/s"))
    want = reference_ends([(n, float(c), float(v)) for n, c, v in jobs], policy, float(io_gb), 2.0)
    assert list(t.jobs["end"]) == pytest.approx(want, abs=2e-2)
