"""``iolab workload``: generate synthetic workloads as spec files."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from ..atomic import atomic_write_text
from ..sim.workloads.carretero import CarreteroParams
from ..sim.workloads.carretero import generate as gen


@click.group()
def workload() -> None:
    """Generate workloads as spec files (generate carretero)."""


@workload.command("generate")
@click.argument("model", type=click.Choice(["carretero"]))
@click.option("--alpha", type=float, required=True, help="target I/O load alpha_gen (> 0)")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of every random draw")
@click.option("--io-nodes", type=click.IntRange(1, 100_000), default=1, show_default=True, help="R: I/O nodes of the platform")
@click.option("--nodes-per-io-node", type=int, default=2048, show_default=True, help="P, a power of two")
@click.option("--mapping", type=click.Choice(["none", "first-fit", "make-pack"]), default="first-fit", show_default=True,
              help="how the apps are mapped onto the I/O nodes (carretero2020 §5.2)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def generate(model: str, alpha: float, seed: int, io_nodes: int, nodes_per_io_node: int,
             mapping: str, output: str, as_json: bool) -> None:
    """Generate a MODEL workload (carretero2020 §6.2.2) as an experiment spec."""
    if alpha <= 0:
        raise click.BadParameter("must be > 0", param_hint="--alpha")
    if seed < 0:
        raise click.BadParameter("must be >= 0", param_hint="--seed")
    try:
        params = CarreteroParams(nodes_per_io_node=nodes_per_io_node)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--nodes-per-io-node") from None
    spec = gen(alpha, seed, params, io_nodes=io_nodes)
    spec = spec.model_copy(update={"mapping": spec.mapping.model_copy(update={"kind": mapping})})
    data = spec.model_dump(mode="json", exclude_none=True)
    data["apps"] = [{k: v for k, v in a.items() if k not in ("io_kind",) or v != "write"} for a in data["apps"]]
    path = Path(output)
    text = (json.dumps(data, indent=1) if path.suffix == ".json"
            else f"# carretero2020 §6.2.2 workload: alpha_gen={alpha}, seed={seed}; actual I/O load "
                 f"(Eq. 6) = {spec.io_load():.4f}\n" + yaml.safe_dump(data, sort_keys=False, width=120))
    atomic_write_text(path, text)
    if as_json:
        click.echo(json.dumps({"output": str(path), "apps": len(spec.apps), "io_load": spec.io_load(),
                               "alpha_gen": alpha, "seed": seed}, indent=2))
        return
    click.echo(f"{path}: {len(spec.apps)} apps, I/O load {spec.io_load():.4f} (alpha_gen {alpha})")
