"""``iolab reproduce``: every claim of the five papers, its experiment, and a verdict against a tolerance
fixed before the run (docs/reproduce.md).

- :mod:`.registry`: the claims (one registry);
- :mod:`.criteria`: how a claim is judged; :mod:`.claim`: a claim and its scorecard row;
- one module per paper (:mod:`.carretero`, ...): its experiments, run as campaigns, and what they measure;
- :mod:`.run`: runs the experiments and judges; :mod:`.scorecard`, :mod:`.figures`: what it writes.
"""
