"""Hypothesis strategies for random (valid) I/O experiments."""

from __future__ import annotations

from hypothesis import strategies as st

from iolab.specs import parse_spec
from iolab.specs.io import LIST_POLICIES


@st.composite
def experiments(draw, aligned: bool = False, mapping=None, max_apps: int = 6):
    """Random experiments; ``aligned``: every duration a whole number of seconds (b=1)."""
    io_nodes = draw(st.integers(1, 3))
    kind = mapping or draw(st.sampled_from(["none", "first-fit", "make-pack"]))
    P = draw(st.sampled_from([8, 16] if kind == "none" else [4, 8, 16]))
    num = st.integers(0, 6).map(float) if aligned else st.floats(0, 6, allow_nan=False).map(lambda x: round(x, 3))
    pos = st.integers(1, 6).map(float) if aligned else st.floats(0.1, 6).map(lambda x: round(x, 3))
    n = draw(st.integers(1, max_apps))
    apps = []
    for i in range(n):
        phases = []
        for _ in range(draw(st.integers(1, 4))):
            phases.append({"compute": draw(num)})
            phases.append({draw(st.sampled_from(["write", "read"])): draw(pos)})
        app = {"id": f"app{i}", "nodes": draw(st.integers(1, P if kind != "none" else max(1, P // max_apps))),
               "release": draw(num), "phases": phases}
        if kind == "none":
            app["io_node"] = draw(st.integers(0, io_nodes - 1))
        apps.append(app)
    spec = {
        "platform": {"io_nodes": io_nodes, "nodes_per_io_node": P, "bandwidth": 1.0},
        "policy": draw(st.sampled_from(LIST_POLICIES)),
        "mapping": {"kind": kind, "sensibility": draw(st.sampled_from([0.5, 1.0, 2.0]))},
        "apps": apps,
    }
    return parse_spec(spec)
