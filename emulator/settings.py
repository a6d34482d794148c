"""A real run's settings: the spec's ``emulator`` section with the command line's overrides,
and the run's work directory when the spec names none.  Shared by the I/O emulator
(:mod:`iolab.emulator.io.run`) and the batch one (:mod:`iolab.emulator.batch.run`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter, ValidationError

from iolab.errors import SpecError
from iolab.names import inside, path_component
from iolab.specs.base import StrictModel, problems_of
from iolab.specs.io_policies import IOPolicyChoice, io_policy_value
from iolab.specs.policy_ref import PolicyRef

Spec = TypeVar("Spec", bound=StrictModel)

# the work directory's prefix, per spec kind
WORK_PREFIX = {"io": "iolab-emulate", "batch": "iolab-batch"}


def settle_settings(spec: Spec, policy: str | None = None, **overrides) -> Spec:
    """The spec with ``policy`` (an I/O spec's) and emulator ``overrides`` (None = keep) applied,
    re-validated by the spec's own emulator settings model."""
    update: dict = {}
    if policy is not None:
        try:
            value = policy if isinstance(policy, PolicyRef) else io_policy_value(policy)
            update["policy"] = value if isinstance(value, PolicyRef) else TypeAdapter(IOPolicyChoice).validate_python(value)
        except ValidationError as err:
            raise SpecError("--policy", [("policy" + ("" if p == "(top level)" else "." + p), r)
                                         for p, r in problems_of(err)]) from None
        except ValueError as exc:
            raise SpecError("--policy", [("policy", str(exc))]) from None
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        model = type(spec.emulator)
        try:
            update["emulator"] = model.model_validate({**spec.emulator.model_dump(), **given})
        except ValidationError as err:
            raise SpecError("emulator settings", [("emulator." + p, r) for p, r in problems_of(err)]) from None
    return spec.model_copy(update=update) if update else spec


def default_work_dir(spec, out: str | Path | None) -> Path:
    """``OUT.work`` beside the trace ``out``, else a new directory under ``$TMPDIR``.

    The spec's name (and the trace's stem) go through :func:`iolab.names.path_component`,
    so the directory is always a child of ``out``'s folder or of ``$TMPDIR``
    (``name: x/../../etc`` cannot lead anywhere else)."""
    if out is not None:
        out = Path(out)
        root = out.parent
        work = root / f"{path_component(out.stem)}.work"
    else:
        root = Path(os.environ.get("TMPDIR", "/tmp"))
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        work = root / f"{WORK_PREFIX[spec.kind]}-{path_component(spec.name)}-{stamp}"
    if not inside(root, work):  # cannot happen with a single safe component; kept as the guard
        raise SpecError("name", [("name", f"{spec.name!r} would place the work directory outside {root}")])
    return work
