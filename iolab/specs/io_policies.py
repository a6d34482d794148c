"""The names of the I/O arbitration policies, and how a spec may spell them.

Apart from :mod:`iolab.specs.io` (the I/O experiment's models) so that a batch spec, whose I/O nodes
name a policy, is read without building the I/O experiment's models (``iolab simulate BATCH``'s start).

An I/O node's policy is one of

- carretero2020's eight list orders (one transfer at a time per I/O node) or ``shared`` (every transfer
  at once, the node's bandwidth split equally), by name;
- a bandwidth-sharing policy (docs/sharing.md): ``job-fair``, ``size-fair``, ``user-fair`` (ThemisIO) by
  name, or Lustre's token bucket filter with its rules, ``{kind: tbf, rules: [...], default_rate: R}``
  (:class:`TBFSpec`);
- a policy of the user's (``kind: python``, or the short forms ``file.py:Class`` and ``pkg.mod:Class``;
  :mod:`iolab.specs.policy_ref`).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from iolab.specs.base import StrictModel
from iolab.specs.policy_ref import BUILTIN, USER, PolicyRef, parse_policy
from iolab.units import parse_rate

# Names of the I/O arbitration policies (carretero2020 §5.1) plus ``shared``.
LIST_POLICIES: tuple[str, ...] = (
    "lowest-id",
    "longest-io",
    "shortest-io",
    "shortest-remaining",
    "longest-remaining",
    "fifo",
    "bandwidth",
    "stretch",
)
#: the bandwidth-sharing policies a spec names without options (ThemisIO's; iolab.middleware.policies.sharing)
SHARING_NAMES: tuple[str, ...] = ("job-fair", "size-fair", "user-fair")
#: the sharing policies a spec gives with options, by their ``kind``
SHARING_KINDS: tuple[str, ...] = ("tbf",)
IO_POLICIES: tuple[str, ...] = LIST_POLICIES + ("shared",)
#: every built-in a spec may name by itself (``tbf`` needs its rules: the mapping form)
IO_POLICY_NAMES: tuple[str, ...] = IO_POLICIES + SHARING_NAMES

IOPolicyName = Literal[IO_POLICY_NAMES]  # a tuple subscript spreads into the Literal

#: a rate: a number (the platform's units per second: an I/O experiment's bandwidth units, a batch
#: platform's bytes) or a text with a unit (``500 MB/s``)
RateValue = Annotated[float, BeforeValidator(lambda v: parse_rate(v) if isinstance(v, str) else v),
                      Field(gt=0, allow_inf_nan=False)]


class TBFRuleSpec(StrictModel):
    """A TBF rule: the classes that match every condition given get ``rate`` (first matching rule wins)."""

    rate: RateValue = Field(..., description="the class's rate on each I/O node: the platform's units per second "
                            "(an I/O experiment's bandwidth units; a batch platform's bytes, e.g. 500 MB/s)")
    job: str | None = Field(None, min_length=1, max_length=256,
                            description="a pattern of job (app) ids, * ? [..] as in a shell (Lustre's jobid={..})")
    user: str | None = Field(None, min_length=1, max_length=256, description="a pattern of users (batch jobs' user)")
    min_nodes: int | None = Field(None, ge=1, le=10**9, description="the job has at least this many compute nodes")
    max_nodes: int | None = Field(None, ge=1, le=10**9, description="the job has at most this many compute nodes")
    name: str = Field("", max_length=64, description="a label (Lustre's rule name); not used to match")

    @model_validator(mode="after")
    def _range(self) -> "TBFRuleSpec":
        if self.min_nodes is not None and self.max_nodes is not None and self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes {self.min_nodes} is above max_nodes {self.max_nodes}: no job matches")
        return self


class TBFSpec(StrictModel):
    """Lustre NRS TBF on every I/O node (docs/sharing.md): a token bucket per job (or per user), its rate
    from the first rule that matches, ``default_rate`` for the rest (absent: no cap); shares scaled down in
    proportion when the rates exceed the I/O node's rate, bandwidth left unused when they fall below it."""

    kind: Literal["tbf"] = "tbf"
    rules: list[TBFRuleSpec] = Field(default_factory=list, max_length=10_000, description="in order of "
                                     "precedence: the first rule a class matches gives its rate")
    default_rate: RateValue | None = Field(None, description="the rate of a class no rule matches (absent: the "
                                           "I/O node's whole rate, no cap)")
    classify: Literal["job", "user"] = Field("job", description="one bucket per job (Lustre's tbf jobid) or per "
                                             "user (tbf uid)")

    @model_validator(mode="after")
    def _user_rules(self) -> "TBFSpec":
        if self.classify == "user":
            for i, r in enumerate(self.rules):
                if r.job is not None or r.min_nodes is not None or r.max_nodes is not None:
                    raise ValueError(f"rules[{i}]: with classify: user a rule names only user (a user's bucket "
                                     "holds several jobs)")
        return self

    @property
    def label(self) -> str:
        return self.kind


_TBF = "policy:tbf"


def _which(value: object) -> str:
    """The discriminator of :data:`IOPolicyChoice`: a user's policy, TBF's mapping, or a built-in's name."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    if kind == "python":
        return USER
    if kind in SHARING_KINDS:
        return _TBF
    return BUILTIN


#: a built-in I/O policy: a name, or TBF with its rules (a campaign's ``axes.policies``)
BuiltinIOPolicy = Annotated[Union[Annotated[IOPolicyName, Tag(BUILTIN)], Annotated[TBFSpec, Tag(_TBF)]],
                            Discriminator(lambda v: _TBF if _which(v) == _TBF else BUILTIN)]

#: an I/O node's policy in a spec: a built-in's name, TBF with its rules, or a policy of the user's
IOPolicyChoice = Annotated[Union[Annotated[IOPolicyName, Tag(BUILTIN)], Annotated[TBFSpec, Tag(_TBF)],
                                 Annotated[PolicyRef, Tag(USER)]],
                           Discriminator(_which)]


def normalise_policy(value: object) -> object:
    """Accept ``Longest_IO`` for ``longest-io`` (and ``{kind: TBF}`` for ``{kind: tbf}``); leave anything else
    to pydantic."""
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    if isinstance(value, dict) and isinstance(value.get("kind"), str) and value["kind"].strip().lower() != "python":
        return {**value, "kind": value["kind"].strip().lower().replace("_", "-")}
    return value


def io_policy_value(value: object) -> object:
    """A spec's raw I/O policy value, ready for :data:`IOPolicyChoice`: a user's short form becomes its
    mapping, a built-in's name is normalised; an unknown name is refused with the known ones."""
    if isinstance(value, str) and value.strip().lower() in SHARING_KINDS:
        raise ValueError(f"{value.strip()!r} needs its rules: {{kind: tbf, rules: [{{job: 'app*', rate: R}}], "
                         "default_rate: R}")
    return normalise_policy(parse_policy(value, "io", IO_POLICY_NAMES))


__all__ = ["IO_POLICIES", "IO_POLICY_NAMES", "LIST_POLICIES", "SHARING_KINDS", "SHARING_NAMES", "BuiltinIOPolicy",
           "IOPolicyChoice",
           "IOPolicyName", "TBFRuleSpec", "TBFSpec", "io_policy_value", "normalise_policy"]
