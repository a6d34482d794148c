"""Campaigns: many independent runs (policies x workloads x seeds x platform sizes),
executed as Ray tasks, recorded in a resumable journal, tabulated in HDF5.

- :mod:`.spec`: the campaign file (kind ``campaign``);
- :mod:`.expand`: campaign -> runs with stable ids;
- :mod:`.runtimes`: the seam to the simulator and the emulator;
- :mod:`.task`: one run -> one record (plain Python, no Ray);
- :mod:`.journal`, :mod:`.results`: the journal and the results table;
- :mod:`.sweep`: the Ray driver loop;
- :mod:`.summary`: per-strategy statistics for ``iolab report``.
"""

from iolab.campaign.expand import Run, expand, load_campaign, load_runs, run_id
from iolab.campaign.journal import Journal
from iolab.campaign.results import Results, is_results
from iolab.campaign.results import load as load_results
from iolab.campaign.spec import Campaign
from iolab.campaign.sweep import SweepSummary, run_campaign

__all__ = ["Campaign", "Journal", "Results", "Run", "SweepSummary", "expand", "is_results", "load_campaign",
           "load_results", "load_runs", "run_campaign", "run_id"]
