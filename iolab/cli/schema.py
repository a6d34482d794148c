"""``iolab schema``: print the JSON schema of a spec kind."""

from __future__ import annotations

import json

import click

from ..specs.load import json_schema, kinds


@click.command()
@click.argument("kind", default="io")
def schema(kind: str) -> None:
    """Print the JSON schema of spec KIND (default: io)."""
    known = kinds()
    if kind not in known:
        raise click.BadParameter(f"unknown kind {kind!r}; known: {', '.join(sorted(known))}", param_hint="KIND")
    click.echo(json.dumps(json_schema(kind), indent=2))
