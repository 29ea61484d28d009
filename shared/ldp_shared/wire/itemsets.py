"""Wire types of frequent-itemset mining and MASK's privacy measure (JSON over HTTP).

``POST /v1/collections/{name}/itemsets`` takes an :class:`ItemsetQuery` and answers an
:class:`ItemsetJob`: finished (with its :class:`ItemsetResult`) when mining took less
than the query's ``wait_seconds``, otherwise queued or running, to be polled at
``GET /v1/collections/{name}/itemsets/{id}``. ``GET /v1/collections/{name}/privacy``
answers a :class:`MaskPrivacy`.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.collection import AttributeConfig
from ldp_shared.errors import InvalidQueryError, NotFoundError
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import Mask
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import INTERVAL, Columns, Tabular, frame_of, from_rows
from ldp_shared.wire.base import WireModel, central_field, checked_range

JOB_ID_PATTERN = r"^[A-Za-z0-9_-]{16,32}$"
_JOB_ID = re.compile(JOB_ID_PATTERN)


def check_job_id(job_id: object, kind: str) -> str:
    """``job_id`` if a job (``kind``: "itemset", "training") can have it, else the
    :class:`NotFoundError` the server answers such an id with (and the SDK raises before
    sending it): not a 422 about a pattern. A long id is shown cut at 40 characters."""
    if isinstance(job_id, str) and _JOB_ID.fullmatch(job_id) is not None:
        return job_id
    shown = repr(job_id)
    if len(shown) > 42:
        shown = shown[:41] + "..."
    raise NotFoundError(
        f"no {kind} job can have the id {shown}: ids are 16 to 32 letters, digits, '-' or '_'"
    )


MAX_WAIT_SECONDS = 60.0
MAX_RULES = 100_000

MAX_ITEMSET_SIZE = 12
"""Longest itemset mined: the estimator and the rules visit the ``2^k`` subsets."""

JobStatus = Literal["queued", "running", "done", "failed"]


class ItemsetQuery(RequestModel):
    """What to mine. Ranges are checked by the aggregator (422 ``invalid-query``)."""

    attribute: str | None = Field(
        default=None,
        min_length=1,
        description="the MASK attribute; may be left out if there is only one",
    )
    min_support: float = Field(
        description="minimum support, in (0, 1]", json_schema_extra=checked_range(gt=0, le=1)
    )
    max_size: int | None = Field(
        default=None,
        description=f"longest itemset (1 to {MAX_ITEMSET_SIZE})",
        json_schema_extra=checked_range(ge=1, le=MAX_ITEMSET_SIZE),
    )
    min_confidence: float = Field(
        default=0.5,
        description="minimum rule confidence, in [0, 1]",
        json_schema_extra=checked_range(ge=0, le=1),
    )
    support_reduction: float = Field(
        default=0.0,
        description="r in [0, 1): mine at min_support·(1 - r), the paper's coverage mode",
        json_schema_extra=checked_range(ge=0, lt=1),
    )
    confidence: float = Field(
        default=0.95,
        description="level of the support intervals, in (0, 1)",
        json_schema_extra=checked_range(gt=0, lt=1),
    )
    max_rules: int = Field(
        default=1000,
        description="rules returned at most (strongest first)",
        json_schema_extra=checked_range(ge=0, le=MAX_RULES),
    )
    privacy_weight: float = Field(
        default=1.0,
        description="weight a of the 1s in MASK's privacy measure, in [0, 1]",
        json_schema_extra=checked_range(ge=0, le=1),
    )
    wait_seconds: float = Field(
        default=5.0,
        description="how long the request waits for the result before a 202",
        json_schema_extra=checked_range(ge=0, le=MAX_WAIT_SECONDS),
    )

    def check_ranges(self) -> None:
        """:class:`InvalidQueryError` for the fields the mining functions do not check."""
        if not 0 <= self.max_rules <= MAX_RULES:
            raise InvalidQueryError(f"max_rules must lie in [0, {MAX_RULES}], got {self.max_rules}")
        if not 0.0 <= self.wait_seconds <= MAX_WAIT_SECONDS:
            raise InvalidQueryError(
                f"wait_seconds must lie in [0, {MAX_WAIT_SECONDS:g}], got {self.wait_seconds}"
            )
        if not 0.0 <= self.privacy_weight <= 1.0:
            raise InvalidQueryError(f"privacy_weight must lie in [0, 1], got {self.privacy_weight}")


class ItemsetEstimate(WireModel):
    """One frequent itemset with its unbiased support estimate."""

    items: list[str]
    support: float
    stderr: float
    ci_low: float
    ci_high: float


class RuleEstimate(WireModel):
    """``antecedent → consequent`` from the estimated supports, with delta-method standard
    errors and intervals (at the result's ``confidence`` level) for confidence and lift."""

    antecedent: list[str]
    consequent: list[str]
    support: float
    confidence: float
    lift: float
    antecedent_support: float
    consequent_support: float
    confidence_stderr: float
    confidence_ci_low: float
    confidence_ci_high: float
    lift_stderr: float
    lift_ci_low: float
    lift_ci_high: float
    informative: bool = Field(
        default=True,
        description=(
            "false when the confidence interval (clipped to [0, 1]) is 0.5 wide or wider:"
            " the rule says little, and such rules are listed last"
        ),
    )


class LevelInfo(WireModel):
    """What mining one itemset length cost."""

    length: int
    candidates: int
    frequent: int
    method: str
    seconds: float


class MaskPrivacy(WireModel):
    """The privacy of a MASK attribute, in ε and in the paper's reconstruction measure.

    ``R1``/``R0``: the probabilities that a true 1/0 of a basket is reconstructed from
    its distorted bit, for an item of support ``average_support`` (Rizvi and Haritsa
    2002, §3); ``R = a·R1 + (1-a)·R0`` with ``a = weight``; ``privacy = (1 - R)·100``.
    """

    attribute: str
    keep_probability: float
    n_items: int
    item_epsilon: float = Field(description="ε of one item bit: ln(p/(1-p))")
    basket_epsilon: float = Field(description="ε of a whole basket: m·ln(p/(1-p))")
    average_support: float
    weight: float
    R1: float
    R0: float
    R: float
    privacy: float = Field(description="P = (1 - R)·100 (percent)")


def mask_privacy(attribute: AttributeConfig, average_support: float, weight: float) -> MaskPrivacy:
    """:class:`MaskPrivacy` of a MASK attribute; :class:`InvalidQueryError` otherwise."""
    if attribute.keep_probability is None:  # only MASK publishes one
        raise InvalidQueryError(f"attribute {attribute.name!r} is not a MASK basket")
    if not 0.0 < average_support < 1.0:
        raise InvalidQueryError(f"average_support must lie in (0, 1), got {average_support!r}")
    if not 0.0 <= weight <= 1.0:
        raise InvalidQueryError(f"weight must lie in [0, 1], got {weight!r}")
    mask = Mask(d=attribute.d, keep_probability=attribute.keep_probability)
    measure = mask.reconstruction_privacy(average_support, weight)
    return MaskPrivacy(
        attribute=attribute.name,
        keep_probability=attribute.keep_probability,
        n_items=attribute.d,
        item_epsilon=mask.item_epsilon,
        basket_epsilon=mask.epsilon,
        average_support=average_support,
        weight=weight,
        R1=measure["R1"],
        R0=measure["R0"],
        R=measure["R"],
        privacy=measure["privacy"],
    )


RULES = (
    "antecedent", "consequent", "support",
    "confidence", "confidence_stderr", "confidence_ci_low", "confidence_ci_high",
    "lift", "lift_stderr", "lift_ci_low", "lift_ci_high",
    "antecedent_support", "consequent_support", "informative",
)  # fmt: skip
"""The columns of an itemset result's rules (``to_frame()``), one row per rule."""


class ItemsetResult(WireModel, Tabular):
    """Frequent itemsets and association rules mined from a MASK attribute."""

    collection: str
    attribute: str
    n_reports: int
    keep_probability: float
    min_support: float
    support_reduction: float
    threshold: float = Field(description="min_support·(1 - support_reduction)")
    max_size: int | None
    min_confidence: float
    confidence: float
    itemsets: list[ItemsetEstimate] = Field(description="by length, then by items")
    by_length: dict[str, int]
    rules: list[RuleEstimate] = Field(
        description="informative rules first, each group strongest first; at most max_rules"
    )
    rules_total: int = Field(description="rules above min_confidence before the max_rules cut")
    privacy: MaskPrivacy = Field(
        description="MASK's privacy at the estimated average item support of the catalogue"
    )
    levels: list[LevelInfo]
    seconds: float
    central: CentralRelease | None = central_field()

    def table(self) -> dict[str, list[Any]]:
        """``{"support": [...], "itemsets": [frozenset(names)]}``: a data frame of this is
        what ``mlxtend.frequent_patterns.association_rules`` takes (with
        ``num_itemsets=n_reports``)."""
        return {
            "support": [itemset.support for itemset in self.itemsets],
            "itemsets": [frozenset(itemset.items) for itemset in self.itemsets],
        }

    def frame_columns(self, what: Literal["rules", "itemsets"] = "rules") -> Columns:
        """The rules as columns, one row per rule (:data:`RULES`), or with
        ``what="itemsets"`` the itemsets, one row per itemset: ``items, length, support,
        stderr, ci_low, ci_high``; :class:`InvalidQueryError` for another ``what``."""
        if what == "rules":
            rules = (
                {
                    **rule.model_dump(),
                    "antecedent": frozenset(rule.antecedent),
                    "consequent": frozenset(rule.consequent),
                }
                for rule in self.rules
            )
            return from_rows(rules, RULES)
        if what == "itemsets":
            itemsets = (
                {**found.model_dump(), "items": frozenset(found.items), "length": len(found.items)}
                for found in self.itemsets
            )
            return from_rows(itemsets, ("items", "length", "support", *INTERVAL))
        raise InvalidQueryError(f"what must be 'rules' or 'itemsets', got {what!r}")

    def to_frame(self, what: Literal["rules", "itemsets"] = "rules") -> Any:
        """The rules as a ``pandas.DataFrame``, one per row with its support, confidence
        and lift, each with its standard error and interval; ``what="itemsets"``: the
        itemsets, one per row with its support, standard error and interval
        (:meth:`frame_columns`)."""
        return frame_of(self.frame_columns(what), self)


class JobError(WireModel):
    """Why a job failed, as the problem document the request would have answered."""

    type: str
    title: str
    status: int
    detail: str


class ItemsetJob(WireModel):
    """A mining run: its state and, once done, its result."""

    id: str
    collection: str
    status: JobStatus
    query: ItemsetQuery
    progress: str | None = None
    created_unix: int
    updated_unix: int
    result: ItemsetResult | None = None
    error: JobError | None = None


def check_mining_query(
    min_support: float,
    max_size: int | None = None,
    support_reduction: float = 0.0,
    min_confidence: float = 0.0,
    confidence: float = 0.95,
) -> None:
    """Refuse impossible parameters with :class:`InvalidQueryError` (before any work).

    ``min_support`` in (0, 1]; ``max_size`` a whole number from 1 to
    :data:`MAX_ITEMSET_SIZE` (or ``None``); ``support_reduction`` in [0, 1);
    ``min_confidence`` in [0, 1]; the interval ``confidence`` in (0, 1).
    """

    def finite(value: object) -> bool:
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        )

    if not finite(min_support) or not 0.0 < float(min_support) <= 1.0:
        raise InvalidQueryError(f"min_support must lie in (0, 1], got {min_support!r}")
    if max_size is not None and (
        isinstance(max_size, bool)
        or not isinstance(max_size, int)
        or not 1 <= max_size <= MAX_ITEMSET_SIZE
    ):
        raise InvalidQueryError(
            f"max_size must be a whole number from 1 to {MAX_ITEMSET_SIZE}, got {max_size!r}"
        )
    if not finite(support_reduction) or not 0.0 <= float(support_reduction) < 1.0:
        raise InvalidQueryError(f"support_reduction must lie in [0, 1), got {support_reduction!r}")
    if not finite(min_confidence) or not 0.0 <= float(min_confidence) <= 1.0:
        raise InvalidQueryError(f"min_confidence must lie in [0, 1], got {min_confidence!r}")
    if not finite(confidence):
        raise InvalidQueryError(f"confidence must lie in (0, 1), got {confidence!r}")
    z_value(float(confidence))
