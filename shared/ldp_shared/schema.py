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
from typing import Any, Literal

from pydantic import Field, SerializeAsAny, model_validator

import ldp_shared.mechanisms  # noqa: F401  (registers the built-in mechanisms)
from ldp_shared.identifiers import (
    ATTRIBUTE_NAME_PATTERN,
    COLLECTION_NAME_PATTERN,
    MAX_DOMAIN_SIZE,
    AttributeName,
    CollectionName,
    DomainValue,
)
from ldp_shared.knn_cells import KnnCells
from ldp_shared.mechanisms.base import AttributeSpec
from ldp_shared.periods import PeriodName
from ldp_shared.request_model import RequestModel
from ldp_shared.wire.base import checked_range

__all__ = [
    "ATTRIBUTE_NAME_PATTERN",
    "COLLECTION_NAME_PATTERN",
    "MAX_DOMAIN_SIZE",
    "AttributeName",
    "AttributeSpec",
    "BudgetMode",
    "CollectionName",
    "CollectionSpec",
    "DomainValue",
    "ReleasePolicy",
]

BudgetMode = Literal["split", "sample"]
"""How a record's ε is spent on its attributes that take a share of it (MASK's do not).

``split``: every attribute is reported, attribute ``j`` with ``ε·w_j/Σw`` (sequential
composition: the record costs ``Σ ε_j = ε``). ``sample``: each record reports ONE
attribute, chosen uniformly at random on the device independently of the data, with the
full ``ε``; the report says which one. The choice leaks nothing, so the record costs ``ε``
(plus, under either budget, the ε of its MASK attributes, which always report).
The arithmetic lives in :mod:`ldp_shared.accountant`.
"""


class _Frozen(RequestModel):
    """A part of the spec: a request model (strict types, no unknown member)."""


class ReleasePolicy(_Frozen):
    """When estimates may be released."""

    min_reports: int = Field(default=100, ge=1, description="no estimate below this many reports")


class CollectionSpec(_Frozen):
    """Everything an administrator chooses for a collection. Immutable once created."""

    name: CollectionName
    description: str = Field(default="", max_length=2000)
    # Each attribute is validated by the spec class its mechanism names in the registry
    # (AttributeSpec dispatches), and serialised with that class's fields.
    attributes: list[SerializeAsAny[AttributeSpec]] = Field(min_length=1, max_length=256)
    epsilon: float | None = Field(
        default=None,
        description="ε per record, split over the non-MASK attributes",
        json_schema_extra=checked_range(gt=0),
    )
    budget: BudgetMode = Field(
        default="split",
        description=(
            "how a record's ε is spent (BudgetMode); when not given, 'split', except for a"
            " collection with a label and no weights, which takes 'sample': it won 40 to 42"
            " of 45 settings on nine categorical data sets (bench/naive_bayes_defaults.py)"
        ),
    )
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

    knn: KnnCells | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="the features and public hyperplanes of a kNN collection (knn_cells.py)",
    )

    # Left out when "day" (the default), so specs written before periods keep their hash.
    period: PeriodName = Field(
        default="day",
        exclude_if=lambda value: value == "day",
        description=(
            "the UTC time slot (hour, day or ISO week) in whose statistics the aggregator"
            " counts each report it accepts; windows and trends are made of these"
        ),
    )
    # Left out when false (the default), so unshuffled specs keep their hash.
    shuffled: bool = Field(
        default=False,
        exclude_if=lambda value: value is False,
        description=(
            "reports arrive only sealed (HPKE) through a shuffler, in batches in random"
            " order; direct uploads are refused (docs/shuffler.md)"
        ),
    )

    @property
    def features(self) -> list[AttributeSpec]:
        """The attributes reported jointly with the label (empty without a label)."""
        if self.label is None:
            return []
        return [a for a in self.attributes if a.takes_budget and a.name != self.label]

    @property
    def label_attribute(self) -> AttributeSpec | None:
        """The label's attribute spec, or ``None``."""
        return next((a for a in self.attributes if a.name == self.label), None)

    @model_validator(mode="before")
    @classmethod
    def _label_budget_default(cls, data: Any) -> Any:
        """A label collection that states no budget takes ``sample`` (unless weighted).

        Only a spec as submitted is affected: a stored spec always carries its budget
        (``model_dump`` writes it), so no existing collection's config or hash changes.
        """
        if not isinstance(data, dict) or data.get("label") is None or "budget" in data:
            return data
        attributes = data.get("attributes")
        if not isinstance(attributes, list):
            return data
        weights = [a.get("weight", 1.0) if isinstance(a, dict) else getattr(a, "weight", 1.0)
                   for a in attributes]  # fmt: skip
        return data if any(w != 1.0 for w in weights) else {**data, "budget": "sample"}

    @model_validator(mode="after")
    def _check(self) -> CollectionSpec:
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError("attribute names must be unique")
        self._check_label()
        if self.knn is not None:
            self.knn.check_collection(self.label, self.budget, self.features)
        if self.budget == "sample":
            weighted = [a.name for a in self.attributes if a.takes_budget and a.weight != 1.0]
            if weighted:
                raise ValueError(
                    "budget 'sample' gives the chosen attribute the full ε, so weights do not"
                    f" apply; remove the weights of {', '.join(weighted)}"
                )
            if not any(a.takes_budget for a in self.attributes):
                raise ValueError("budget 'sample' needs at least one non-MASK attribute")
        needs_budget = any(a.takes_budget for a in self.attributes)
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
            if not attribute.joins_label:
                raise ValueError(
                    f"attribute {attribute.name!r}: a collection with a label reports each"
                    " feature jointly with the class by unary encoding; use mechanism 'oue'"
                    f" or 'sue', not {attribute.mechanism!r}"
                )
        if not self.features:
            raise ValueError(
                f"label {self.label!r} needs at least one other non-MASK attribute (a feature)"
            )
        k = len(label.values)
        for feature in self.features:
            cells = len(feature.values) * k
            if cells > MAX_DOMAIN_SIZE:
                raise ValueError(
                    f"attribute {feature.name!r}: {len(feature.values)} values × {k} classes"
                    f" = {cells} joint cells, more than {MAX_DOMAIN_SIZE}"
                )
