"""What an administrator says when creating a collection (the collection spec).

A spec is validated here, once, for client and server alike: names are identifiers,
domains have at least two distinct values, ε is positive and finite, a MASK keep
probability lies in (0.5, 1). :mod:`ldp_shared.collection` derives the public config
(p, q, exact ε, bit layout, hash) from it.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MechanismName = Literal["sue", "oue", "grr", "mask"]
"""``sue``/``oue``/``grr`` report one categorical value; ``mask`` reports a set of items."""

BudgetMode = Literal["split"]
"""``split``: the record's ε is divided over its non-MASK attributes by their weights."""

ATTRIBUTE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
COLLECTION_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"

AttributeName = Annotated[str, StringConstraints(pattern=ATTRIBUTE_NAME_PATTERN)]
CollectionName = Annotated[str, StringConstraints(pattern=COLLECTION_NAME_PATTERN)]
DomainValue = Annotated[str, StringConstraints(min_length=1, max_length=200)]

MAX_DOMAIN_SIZE = 65_536


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

    @model_validator(mode="after")
    def _check(self) -> CollectionSpec:
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError("attribute names must be unique")
        needs_budget = any(not a.is_basket for a in self.attributes)
        eps = self.epsilon
        if eps is not None and (not math.isfinite(eps) or eps <= 0.0):
            raise ValueError(f"epsilon must be a finite number > 0, got {eps!r}")
        if needs_budget and eps is None:
            raise ValueError("epsilon is required when the collection has non-MASK attributes")
        if not needs_budget and eps is not None:
            raise ValueError("epsilon is set by keep_probability when all attributes are MASK")
        return self
