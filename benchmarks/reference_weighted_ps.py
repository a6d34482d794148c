"""Reference: apps on one I/O node whose transfers share its bandwidth by weights or caps, in exact arithmetic.

An independent program (no iolab import) computing what iolab's I/O simulator computes under a sharing
policy, another way: every app runs its phases in order (compute seconds, then transfers of a volume),
starting at its release; the transfers in progress share the node's bandwidth ``b`` as a rule says, and
every quantity is a ``fractions.Fraction``, so the times are exact.  The loop is the definition: find the
next instant something ends (a compute phase, or a transfer at its current rate), move everything to it,
end what ends, begin what follows; the rates are recomputed from the rule at every instant, whatever
changed.

Rules (``rule``, with the apps' ``weight``, ``cap`` and ``job`` fields):

- ``equal``: each of the ``k`` transfers ``b / k``;
- ``weights``: each ``b x weight / (sum of the weights in progress)`` (ThemisIO's size-fair with the
  apps' node counts as weights);
- ``caps``: each at most ``cap`` (units per second); if the caps in progress add up to more than ``b``,
  each ``b x cap / (sum of those caps)`` (Lustre TBF with one bucket per app; an app without a cap has
  ``b``).

    python benchmarks/reference_weighted_ps.py SPEC.json   # {"bandwidth", "rule", "apps": [...]}

prints every app's end and every transfer's (app, index, start, end) as JSON (floats).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction as F


def run(apps: list[dict], bandwidth, rule: str) -> dict:
    """``apps``: ``{"id", "release", "phases": [("compute" | "write", amount), ...], "weight", "cap"}``;
    returns ``{"ends": {id: time}, "transfers": [(id, index, start, end), ...]}`` in Fractions."""
    b = F(bandwidth)
    state = {}
    for a in apps:
        state[a["id"]] = {"i": -1, "left": None, "kind": "", "start": None, "begin": F(a["release"]),
                          "weight": F(a.get("weight", 1)), "cap": F(a["cap"]) if a.get("cap") is not None else b,
                          "phases": [(k, F(x)) for k, x in a["phases"]]}
    ends, transfers = {}, []
    t = F(0)
    while len(ends) < len(apps):
        # begin: every app whose start (release) has come and that is between phases
        for aid, s in state.items():
            while aid not in ends and s["kind"] == "" and s["begin"] <= t:
                s["i"] += 1
                if s["i"] == len(s["phases"]):
                    ends[aid] = t
                    break
                kind, amount = s["phases"][s["i"]]
                if amount == 0:  # an empty phase takes no time
                    continue
                s["kind"], s["left"], s["start"] = kind, amount, t
        moving = [aid for aid, s in state.items() if s["kind"] == "write"]
        rates = share(moving, state, b, rule)
        # the next instant something ends, or an app starts
        due = [t + s["left"] for s in state.values() if s["kind"] == "compute"]
        due += [t + state[aid]["left"] / rates[aid] for aid in moving]
        due += [s["begin"] for aid, s in state.items() if aid not in ends and s["kind"] == "" and s["begin"] > t]
        if not due:
            break
        nxt = min(due)
        for aid, s in state.items():
            if s["kind"] == "compute":
                s["left"] -= nxt - t
            elif s["kind"] == "write":
                s["left"] -= rates[aid] * (nxt - t)
        t = nxt
        for aid, s in state.items():
            if s["kind"] and s["left"] == 0:
                if s["kind"] == "write":
                    transfers.append((aid, s["i"], s["start"], t))
                s["kind"], s["begin"] = "", t
    return {"ends": ends, "transfers": transfers}


def share(moving: list[str], state: dict, b: F, rule: str) -> dict:
    if not moving:
        return {}
    if rule == "equal":
        return {aid: b / len(moving) for aid in moving}
    if rule == "weights":
        total = sum(state[aid]["weight"] for aid in moving)
        return {aid: b * state[aid]["weight"] / total for aid in moving}
    if rule == "caps":
        total = sum(state[aid]["cap"] for aid in moving)
        if total > b:
            return {aid: b * state[aid]["cap"] / total for aid in moving}
        return {aid: state[aid]["cap"] for aid in moving}
    raise ValueError(f"unknown rule {rule!r}")


def main(path: str) -> None:
    with open(path) as f:
        spec = json.load(f)
    out = run(spec["apps"], spec["bandwidth"], spec["rule"])
    print(json.dumps({"ends": {k: float(v) for k, v in out["ends"].items()},
                      "transfers": [(a, i, float(s), float(e)) for a, i, s, e in out["transfers"]]}))


if __name__ == "__main__":
    main(sys.argv[1])
