"""What an administrator says when creating a collection (the collection spec).

A spec is validated here, once, for client and server alike: names are identifiers,
domains have at least two distinct values, ε is positive and finite, a MASK keep
probability lies in (0.5, 1). :mod:`ldp_shared.collection` derives the public config
(p, q, exact ε, bit layout, hash) from it.

A spec may name one categorical attribute as its ``label`` (the class of a naive Bayes
model, Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification", arXiv:1905.01039, 2019). Every other non-MASK attribute (a *feature*)
is then reported jointly with the class, and the label gets no report of its own; see
:mod:`ldp_shared.collection` for the encoding.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MechanismName = Literal["sue", "oue", "grr", "mask"]
"""``sue``/``oue``/``grr`` report one categorical value; ``mask`` reports a set of items."""

BudgetMode = Literal["split", "sample"]
"""How a record's ε is spent on its non-MASK attributes (MASK attributes always report).

``split``: every attribute is reported, attribute ``j`` with ``ε·w_j/Σw`` (sequential
composition: the record costs ``Σ ε_j = ε``). ``sample``: each record reports ONE
attribute, chosen uniformly at random on the device independently of the data, with the
full ``ε``; the report says which one. The choice leaks nothing, so the record costs ``ε``.
"""

ATTRIBUTE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
COLLECTION_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"

AttributeName = Annotated[str, StringConstraints(pattern=ATTRIBUTE_NAME_PATTERN)]
CollectionName = Annotated[str, StringConstraints(pattern=COLLECTION_NAME_PATTERN)]
DomainValue = Annotated[str, StringConstraints(min_length=1, max_length=200)]

MAX_DOMAIN_SIZE = 65_536
"""Largest number of values of one attribute, and of the cells ``d·k`` of a feature
reported jointly with a label of ``k`` classes."""

JOINT_MECHANISMS = ("sue", "oue")
"""The mechanisms of a label collection's features and label: unary encoding only."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AttributeSpec(_Frozen):
    """One attribute of a record: its name, value domain (or item catalogue) and mechanism."""

    name: AttributeName
    domain: list[DomainValue] = Field(min_length=2, max_length=MAX_DOMAIN_SIZE)
    mechanism: MechanismName = "oue"
    weight: float = Field(
        default=1.0, gt=0.0, description="share of the record's ε (non-MASK attributes)"
    )
    keep_probability: float | None = Field(
        default=None, description="MASK only: probability p of keeping each item bit, in (0.5, 1)"
    )

    @model_validator(mode="after")
    def _check(self) -> AttributeSpec:
        if len(set(self.domain)) != len(self.domain):
            seen: set[str] = set()
            dup = next(v for v in self.domain if v in seen or seen.add(v))  # type: ignore[func-returns-value]
            raise ValueError(f"attribute {self.name!r}: duplicate domain value {dup!r}")
        if not math.isfinite(self.weight):
            raise ValueError(f"attribute {self.name!r}: weight must be finite")
        if self.mechanism == "mask":
            kp = self.keep_probability
            if kp is None or not 0.5 < kp < 1.0:
                raise ValueError(
                    f"attribute {self.name!r}: MASK needs keep_probability in (0.5, 1), got {kp!r}"
                )
        elif self.keep_probability is not None:
            raise ValueError(f"attribute {self.name!r}: keep_probability is for MASK only")
        return self

    @property
    def is_basket(self) -> bool:
        """Whether the attribute's value is a set of items (MASK) rather than one value."""
        return self.mechanism == "mask"


class ReleasePolicy(_Frozen):
    """When estimates may be released."""

    min_reports: int = Field(default=100, ge=1, description="no estimate below this many reports")


class CollectionSpec(_Frozen):
    """Everything an administrator chooses for a collection. Immutable once created."""

    name: CollectionName
    description: str = Field(default="", max_length=2000)
    attributes: list[AttributeSpec] = Field(min_length=1, max_length=256)
    epsilon: float | None = Field(
        default=None, description="ε per record, split over the non-MASK attributes"
    )
    budget: BudgetMode = "split"
    release: ReleasePolicy = ReleasePolicy()
    # Left out of the serialised spec when unset, so a spec without a label serialises
    # exactly as before labels existed: its config hash and published JSON are unchanged.
    label: AttributeName | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "the categorical attribute that is the class of a naive Bayes model: every "
            "other non-MASK attribute is then reported jointly with it"
        ),
    )

    @property
    def features(self) -> list[AttributeSpec]:
        """The attributes reported jointly with the label (empty without a label)."""
        if self.label is None:
            return []
        return [a for a in self.attributes if not a.is_basket and a.name != self.label]

    @property
    def label_attribute(self) -> AttributeSpec | None:
        """The label's attribute spec, or ``None``."""
        return next((a for a in self.attributes if a.name == self.label), None)

    @model_validator(mode="after")
    def _check(self) -> CollectionSpec:
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError("attribute names must be unique")
        self._check_label()
        if self.budget == "sample":
            weighted = [a.name for a in self.attributes if not a.is_basket and a.weight != 1.0]
            if weighted:
                raise ValueError(
                    "budget 'sample' gives the chosen attribute the full ε, so weights do not"
                    f" apply; remove the weights of {', '.join(weighted)}"
                )
            if all(a.is_basket for a in self.attributes):
                raise ValueError("budget 'sample' needs at least one non-MASK attribute")
        needs_budget = any(not a.is_basket for a in self.attributes)
        eps = self.epsilon
        if eps is not None and (not math.isfinite(eps) or eps <= 0.0):
            raise ValueError(f"epsilon must be a finite number > 0, got {eps!r}")
        if needs_budget and eps is None:
            raise ValueError("epsilon is required when the collection has non-MASK attributes")
        if not needs_budget and eps is not None:
            raise ValueError("epsilon is set by keep_probability when all attributes are MASK")
        return self

    def _check_label(self) -> None:
        if self.label is None:
            return
        label = self.label_attribute
        if label is None:
            raise ValueError(f"label {self.label!r} is not one of the attributes")
        if label.is_basket:
            raise ValueError(
                f"label {self.label!r} must be a categorical attribute (one value per record),"
                " not a MASK basket"
            )
        if label.weight != 1.0:
            raise ValueError(
                f"label {self.label!r} has no report of its own (it is reported jointly with"
                " every feature), so it takes no share of ε: remove its weight"
            )
        for attribute in [label, *self.features]:
            if attribute.mechanism not in JOINT_MECHANISMS:
                raise ValueError(
                    f"attribute {attribute.name!r}: a collection with a label reports each"
                    " feature jointly with the class by unary encoding; use mechanism 'oue'"
                    f" or 'sue', not {attribute.mechanism!r}"
                )
        if not self.features:
            raise ValueError(
                f"label {self.label!r} needs at least one other non-MASK attribute (a feature)"
            )
        k = len(label.domain)
        for feature in self.features:
            cells = len(feature.domain) * k
            if cells > MAX_DOMAIN_SIZE:
                raise ValueError(
                    f"attribute {feature.name!r}: {len(feature.domain)} values × {k} classes"
                    f" = {cells} joint cells, more than {MAX_DOMAIN_SIZE}"
                )
