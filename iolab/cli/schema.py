"""``iolab schema``: print the JSON schema of a spec kind."""

from __future__ import annotations

import json

import click

from iolab.campaign.spec import Campaign
from iolab.specs.load import KINDS

# every kind the command line reads: the loader's own, and the front's campaign
ALL_KINDS = {**KINDS, "campaign": Campaign}


@click.command()
@click.argument("kind", default="io", type=click.Choice(sorted(ALL_KINDS)))
def schema(kind: str) -> None:
    """Print the JSON schema of spec KIND (default: io): one of io (an I/O experiment,
    carretero2020), batch (a batch experiment, lackner2019/monniot2023) or campaign (a sweep)."""
    click.echo(json.dumps(ALL_KINDS[kind].model_json_schema(), indent=2))
