"""The mechanism interface: what one local randomizer declares about itself.

A mechanism is one module (see ``docs/mechanisms.md``) that defines

* its **parameters**: a subclass of :class:`AttributeSpec`, a frozen pydantic model whose
  ``mechanism`` field is a ``Literal`` of the name(s) it answers to, registered with
  :func:`register` (the registry, at the end of this module). A collection spec
  validates each of its attributes with the class its ``mechanism`` names, so nothing
  else keeps a list of mechanism names. The class also says how a raw value becomes
  what the randomizer perturbs (:meth:`AttributeSpec.encode`) and builds the randomizer
  (:meth:`AttributeSpec.randomizer`) for the ε the accountant allots to it;
* its **randomizer**: a :class:`Randomizer`, which states its exact privacy (ε and δ),
  its report segment (encoding and byte length), perturbs a batch of true values
  (vectorised), packs and unpacks the segment bytes, declares its sufficient statistics
  as named typed blocks, turns a batch of decoded reports into a statistics delta
  (:meth:`Randomizer.accumulate`) and statistics into estimates with their variances
  (:meth:`Randomizer.estimate_stats`).

The schema, the config, the codec, the storage and the estimation reach a mechanism only
through these two classes.

This module is longer than most (about 420 lines) because it also holds the registry of
mechanism names (at its end): :class:`AttributeSpec` validates an attribute by looking its
``mechanism`` up there, so the two belong together; apart, each imported the other.
"""

from __future__ import annotations

import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    Field,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from ldp_shared.errors import ConfigurationError
from ldp_shared.identifiers import AttributeName
from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.mechanisms.likelihood import ReportChannel
from ldp_shared.request_model import RequestModel

EPSILON_SLACK = 1e-9
"""Largest relative excess of a randomizer's exact ε over the ε allotted to it: floating
point may move a probability by an ulp, not more (the accountant refuses the rest)."""

StatsDtype = Literal["int64", "float64"]
Blocks = Mapping[str, NDArray[Any]]
"""A mechanism's sufficient statistics (or a delta of them): block name → array."""


@dataclass(frozen=True)
class StatsBlock:
    """One named block of a mechanism's sufficient statistics."""

    name: str
    dtype: StatsDtype
    length: int


@dataclass(frozen=True)
class Segment:
    """Where a mechanism's answer sits in a report: its encoding and its byte length."""

    encoding: str
    byte_length: int


@dataclass(frozen=True)
class PlannedVariance:
    """What the planner (:mod:`ldp_shared.planner`) needs of a randomizer: the variance of
    one released estimate at ``n`` reports is ``per_report / n + floor``, in the planning
    case (a value of frequency 0 for frequencies, the worst true value for means), in the
    attribute's units. ``at`` is that true value (a frequency, or a number in ``[lo, hi]``)."""

    per_report: float
    floor: float = 0.0
    at: float = 0.0
    collision: float = 0.0
    """Variance per unit of ``F₂ = Σ_u f_u²`` (the other devices' values) that ``n`` does
    not shrink: the collision term ``collision·F₂`` of a fixed hash family."""
    second_moment: float = 1.0
    """``F₂`` the collision term is stated at: 1 (the worst case, every other device holds
    one value) unless the planner's query gives it (:meth:`assuming`)."""
    case: tuple[int, int] | None = None
    """Frequencies whose variance depends on where the others' mass is: ``(held, queried)``
    value indices of the planning case, every device holding ``held`` and the estimate
    of ``queried``; ``None``: any value nobody holds (the variance is the same)."""
    parameters: Mapping[str, float] = field(default_factory=dict)
    """The mechanism's parameters the prediction is for, where the planner chose them
    (hash functions, buckets, ε∞, δ): they are what a collection must declare to match."""

    @property
    def floor_total(self) -> float:
        """The variance no ``n`` removes: ``floor + collision·F₂``."""
        return self.floor + self.collision * self.second_moment

    def variance(self, n: int) -> float:
        """The variance of one estimate at ``n`` reports."""
        return self.per_report / n + self.floor_total

    def assuming(self, second_moment: float) -> PlannedVariance:
        """The same prediction with the collision term at ``F₂ = second_moment``."""
        return replace(self, second_moment=second_moment)


@dataclass(frozen=True)
class Unpacked:
    """The decoded answers of a batch's segments; ``bad`` rows break the encoding."""

    values: NDArray[Any]
    bad: NDArray[np.bool_]
    problem: str


class Randomizer(ABC):
    """One attribute's local randomizer at the privacy allotted to it."""

    @property
    @abstractmethod
    def exact_epsilon(self) -> float:
        """ε of one answer, computed back from the mechanism's own parameters."""

    @property
    def delta(self) -> float:
        """δ of one answer (0 for a pure ε-LDP mechanism)."""
        return 0.0

    @property
    @abstractmethod
    def segment(self) -> Segment:
        """The answer's place in a report."""

    @property
    @abstractmethod
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        """The sufficient statistics the aggregator keeps for the attribute."""

    def published(self) -> dict[str, Any]:
        """Parameters the public config shows next to ε (clients rebuild and compare them)."""
        return {}

    @abstractmethod
    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[Any]:
        """Perturbed answers for a batch of encoded true values (vectorised)."""

    def perturb_packed(
        self, values: Any, rng: np.random.Generator | None = None
    ) -> NDArray[np.uint8]:
        """The packed segments of a batch: ``pack(perturb(values, rng))``, which a
        mechanism may draw more directly (the same distribution)."""
        return self.pack(self.perturb(values, rng))

    @abstractmethod
    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        """The segment bytes (``n × segment.byte_length``) of a batch of answers."""

    @abstractmethod
    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        """Answers from segment bytes, and the rows whose bytes no answer produces."""

    @abstractmethod
    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        """The statistics delta of a batch of (valid) answers, one array per block."""

    @abstractmethod
    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        """Estimates with their standard errors from the statistics of ``n`` answers."""

    def estimate_values(
        self, stats: Blocks, n: int, encoded: NDArray[Any], confidence: float
    ) -> FrequencyEstimate:
        """Estimates of the values named in a query, given as their encoding (what
        :meth:`AttributeSpec.encode` returns): by default the full estimate's entries at
        those value indices; a mechanism over an open domain estimates them directly."""
        return self.estimate_stats(stats, n, confidence).take(np.asarray(encoded))

    def report_channel(self, stats: Blocks, n: int) -> ReportChannel | None:
        """Its channel and the counts of its outputs among the ``n`` answers summarised by
        ``stats``, for likelihood-based
        estimators (iterative Bayesian update); ``None`` when it has no finite channel."""
        return None

    def frequency_covariance(self, stats: Blocks, n: int) -> NDArray[np.float64] | None:
        """The covariance matrix of the unbiased frequencies of ``n`` answers whose true
        values are drawn i.i.d. (the multinomial plug-in), for functionals of them (CDF,
        quantiles); ``None`` when the mechanism does not know it."""
        return None

    def planned_variance(self) -> PlannedVariance | None:
        """The closed-form variance of one estimate in the planning case (see
        :class:`PlannedVariance`); ``None``: the mechanism has none, the planner skips it."""
        return None

    def planned_threshold(self, variance: PlannedVariance, n: int) -> float | None:
        """The heavy-hitter threshold of the mechanism's own discovery at ``n`` reports,
        given its :meth:`planned_variance` (at the query's ``F₂``); ``None`` (the default):
        the planner's test of one value against 0 applies."""
        return None

    def unit_variance(self, estimate: NDArray[np.float64]) -> NDArray[np.float64]:
        """The variance of one reporter's true value given the estimate (at most), for the
        sampling term when only some reporters carry the attribute (budget ``sample``).

        Frequencies: the Bernoulli variance ``f(1 − f)``; a numeric mechanism overrides it.
        """
        f = np.clip(np.asarray(estimate, dtype=np.float64), 0.0, 1.0)
        out: NDArray[np.float64] = f * (1.0 - f)
        return out


class AttributeSpec(RequestModel):
    """The parameters every attribute has; each mechanism's spec class adds its own.

    Capabilities a mechanism declares (class variables, read by the accountant, the
    schema and the analyses instead of its name):

    * ``takes_budget``: the attribute spends a share of the record's ε; ``False`` when
      its ε follows from its own parameters (MASK's keep probability);
    * ``is_basket``: its value is a set of items rather than one value;
    * ``joins_label``: it can be reported jointly with a label (value × class cells);
    * ``is_distribution``: its estimates are a distribution over the values (they sum
      to one, so post-processing onto the simplex applies);
    * ``released_as``: the endpoint that releases it, ``"frequencies"`` or ``"mean"``;

    and, where they depend on the parameters, as properties: :attr:`is_ordered` (its
    values have an order, so a CDF, mean rank and median mean something) and
    :attr:`bin_edges` (its values are the bins of a number, so quantiles apply).
    """

    takes_budget: ClassVar[bool] = True
    is_basket: ClassVar[bool] = False
    joins_label: ClassVar[bool] = False
    is_distribution: ClassVar[bool] = True
    released_as: ClassVar[str] = "frequencies"
    estimates_each_value: ClassVar[bool] = False
    """Its randomizer estimates a named value from its encoding alone
    (:meth:`Randomizer.estimate_values`), cheaper than the whole domain (hashed values)."""

    name: AttributeName
    mechanism: str
    weight: float = Field(
        default=1.0, gt=0.0, description="share of the record's ε (non-MASK attributes)"
    )

    def __new__(cls, *args: Any, **data: Any) -> AttributeSpec:
        """``AttributeSpec(name=..., mechanism=..., ...)`` builds the registered class's
        instance (pydantic then runs that class's ``__init__`` on it)."""
        if cls is AttributeSpec:
            return parse_attribute(data)
        return super().__new__(cls)

    @model_validator(mode="wrap")
    @classmethod
    def _dispatch(
        cls, data: Any, handler: ModelWrapValidatorHandler[AttributeSpec]
    ) -> AttributeSpec:
        """Validating against this base class validates with the class the attribute's
        ``mechanism`` names in the registry (so ``list[AttributeSpec]`` dispatches)."""
        if cls is AttributeSpec and not isinstance(data, AttributeSpec):
            return parse_attribute(data)
        return handler(data)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The base class documents itself as one of the registered spec classes."""
        if cls is not AttributeSpec:
            return handler(core_schema)
        variants = [handler(spec.__pydantic_core_schema__) for spec in registered_classes()]
        return {"oneOf": variants, "title": "AttributeSpec"}

    @model_validator(mode="after")
    def _check_weight(self) -> AttributeSpec:
        if not math.isfinite(self.weight):
            raise ValueError(f"attribute {self.name!r}: weight must be finite")
        return self

    @property
    def values(self) -> list[str]:
        """The attribute's value domain (or item catalogue); empty when it has none."""
        return []

    @property
    def is_open(self) -> bool:
        """Whether its values are any of a type (strings, integers) rather than a listed
        domain: its frequencies are then estimated for the values a query names."""
        return False

    def canonical_value(self, value: Any) -> str | None:
        """What memoisation remembers of a (validated) value, where two spellings of one
        value must count as one (a hashed value: its key); ``None``: the record's generic
        canonical form (``ldp_client.device.canonical_record``)."""
        return None

    def parse_candidate(self, text: str) -> Any:
        """A value named in a query, from its text (a mechanism over integers parses it)."""
        return text

    @property
    def is_ordered(self) -> bool:
        """Whether the order of its values is meaningful (ordinal summaries apply)."""
        return False

    @property
    def bin_edges(self) -> list[float] | None:
        """The bin edges of a histogram of a number (quantiles apply); ``None`` otherwise."""
        return None

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Specs of this class for the planner's attribute: ``domain_size`` values, numbers
        in ``[lo, hi]``, or an open domain (all ``None``); one per mechanism name the class
        answers to. Empty (the default): the class does not plan that attribute."""
        return []

    def plan_at(self, epsilon: float) -> AttributeSpec:
        """This planner spec (from :meth:`plan_specs`) at the query's ``epsilon``, for a
        class whose planned parameters follow ε (a longitudinal ε∞, the buckets dBitFlip
        samples); by default itself."""
        return self

    @classmethod
    def mechanism_literals(cls) -> tuple[str, ...]:
        """The mechanism names of this class (its ``mechanism`` literal)."""
        return tuple(typing.get_args(cls.__pydantic_fields__["mechanism"].annotation))

    @abstractmethod
    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[Any]:
        """What the randomizer perturbs, from a column of raw values (validated)."""

    @abstractmethod
    def randomizer(self, epsilon: float | None, classes: int = 1) -> Randomizer:
        """The randomizer at the allotted ``epsilon`` (``None`` when ``takes_budget`` is
        false), over ``classes`` label classes when it is reported jointly with a label."""


# The registry: a mechanism's name → its spec class. A mechanism module registers its
# spec class (:func:`register`) when it is imported; :mod:`ldp_shared.mechanisms` imports
# the built-in ones. A collection spec finds the class of each attribute here by the
# attribute's ``mechanism`` (default :data:`DEFAULT_MECHANISM`); nothing else lists
# mechanism names.

DEFAULT_MECHANISM = "oue"
"""The mechanism of an attribute that names none: optimised unary encoding."""

_SPECS: dict[str, type[AttributeSpec]] = {}

SpecClass = TypeVar("SpecClass", bound=type[AttributeSpec])


def register(spec_class: SpecClass) -> SpecClass:
    """Register a spec class under every name of its ``mechanism`` literal (a decorator)."""
    fields: dict[str, Any] = dict(spec_class.__pydantic_fields__)
    annotation = fields["mechanism"].annotation
    names = typing.get_args(annotation)
    if typing.get_origin(annotation) is not typing.Literal or not names:
        raise ConfigurationError(
            f"{spec_class.__name__}.mechanism must be a Literal of the mechanism's names"
        )
    for name in names:
        known = _SPECS.get(name)
        if known is not None and known is not spec_class:
            raise ConfigurationError(f"mechanism {name!r} is registered already ({known})")
    for name in names:
        _SPECS[name] = spec_class
    return spec_class


def unregister(name: str) -> None:
    """Forget a mechanism (for tests that register one of their own)."""
    _SPECS.pop(name, None)


def mechanism_names() -> list[str]:
    """The registered mechanisms' names, sorted."""
    return sorted(_SPECS)


def registered_classes() -> list[type[AttributeSpec]]:
    """Each registered spec class once, in the order of their first name."""
    seen: dict[type[AttributeSpec], None] = {}
    for name in mechanism_names():
        seen.setdefault(_SPECS[name], None)
    return list(seen)


def spec_class(name: str) -> type[AttributeSpec]:
    """The spec class of mechanism ``name``; ``ValueError`` naming the known ones otherwise."""
    found = _SPECS.get(name)
    if found is None:
        raise ValueError(
            f"unknown mechanism {name!r}; choose one of {', '.join(mechanism_names())}"
        )
    return found


def parse_attribute(data: Any) -> AttributeSpec:
    """Validate one attribute with the spec class its ``mechanism`` names."""
    if isinstance(data, AttributeSpec):
        return data
    if not isinstance(data, Mapping):
        raise ValueError("an attribute must be an object")
    name = data.get("mechanism", DEFAULT_MECHANISM)
    if not isinstance(name, str):
        raise ValueError(f"mechanism must be a name, got {name!r}")
    return spec_class(name).model_validate(dict(data))
