"""Errors a user can see.

Every error that comes from bad input subclasses :class:`click.ClickException`
so the command line prints a clean one-line message and exits non-zero, while
library callers can catch :class:`IolabError`.

Exit codes (docs/cli.md): 0 ok; 1 the run failed (:class:`RunError`, a strict
invariant violation); 2 bad usage or input (every other :class:`IolabError`);
130 interrupted.
"""

from __future__ import annotations

import click


class IolabError(click.ClickException):
    """Base class of the errors iolab reports to its user."""

    exit_code = 2


class SpecError(IolabError):
    """A spec file (platform, workload, experiment, campaign) is invalid.

    ``problems`` lists ``(path, reason)`` pairs, e.g. ``("apps[1].nodes",
    "Input should be greater than 0")``.
    """

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid spec"]
        lines += [f"  {path}: {reason}" for path, reason in problems]
        super().__init__("\n".join(lines))


class DataError(SpecError):
    """An input data file (SWF, Theta job list, journal, ...) has bad records.

    Same shape as :class:`SpecError`: ``problems`` are ``(record or line, reason)``.
    """

    def __init__(self, source: str, problems: list[tuple[str, str]], what: str = "unreadable input"):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {what}"]
        lines += [f"  {path}: {reason}" for path, reason in problems]
        IolabError.__init__(self, "\n".join(lines))


class InputWarning(UserWarning):
    """A lenient reader skipped records (SWF ``strict: false``, a campaign journal): it says how many."""


class Interrupted(IolabError):
    """The user interrupted a run (Ctrl-C, SIGTERM): exit 130."""

    exit_code = 130


class TraceError(IolabError):
    """A trace file is missing, unreadable or not in iolab's schema."""


class RunError(IolabError):
    """An experiment could not be run (missing executable, bad environment): exit 1."""

    exit_code = 1
