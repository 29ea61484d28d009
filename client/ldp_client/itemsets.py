"""The frequent-itemset endpoints seen from the client, without I/O (shared by both clients).

Call builders in the style of :mod:`ldp_client.protocol`. Mining is a job on the
aggregator: :func:`mine_itemsets_call` starts it (the answer is the finished job when it
took less than ``wait_seconds``, else the job as it stands), :func:`itemset_job_call`
polls it, and :func:`job_result` turns a job into its result, ``None`` while it runs, or
the typed error it failed with. Arguments are checked here, before any request
(:class:`~ldp_shared.errors.InvalidQueryError`).

The estimator (MASK, Rizvi and Haritsa, VLDB 2002) is :mod:`ldp_shared.analyses.itemsets`;
``pandas.DataFrame(result.table())`` is the frame mlxtend's ``association_rules`` takes.
A released rule's confidence lies in [0, 1] and its lift is at least 0, with intervals
clipped to those ranges; :func:`is_informative` tells the rules whose confidence
interval says something from the others, which the aggregator lists last.
"""

from __future__ import annotations

import math
import time
from urllib.parse import quote

from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.errors import (
    InvalidQueryError,
    TransportError,
    error_class_for_type,
)
from ldp_shared.validation import validated
from ldp_shared.wire.itemsets import (
    ItemsetJob,
    ItemsetQuery,
    ItemsetResult,
    MaskPrivacy,
    RuleEstimate,
    check_job_id,
    check_mining_query,
)

__all__ = [
    "build_itemset_query",
    "check_deadline",
    "is_informative",
    "itemset_job_call",
    "job_result",
    "mask_privacy_call",
    "mine_itemsets_call",
    "server_wait",
]

DEFAULT_WAIT_SECONDS = 5.0
"""How long the aggregator holds the mining request before answering "still running"."""


def build_itemset_query(
    *,
    min_support: float,
    attribute: str | None = None,
    max_size: int | None = None,
    min_confidence: float = 0.5,
    support_reduction: float = 0.0,
    confidence: float = 0.95,
    max_rules: int = 1000,
    privacy_weight: float = 1.0,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
) -> ItemsetQuery:
    """A checked :class:`ItemsetQuery`; :class:`InvalidQueryError` for values out of range.

    The parameters are the query's fields, by name and default (a test holds them, and the
    SDK methods' keyword arguments, to that).
    """
    fields = dict(locals())  # the parameters alone, before any other local is bound
    check_mining_query(min_support, max_size, support_reduction, min_confidence, confidence)
    query = validated(ItemsetQuery, fields, InvalidQueryError, "itemset query")
    query.check_ranges()
    return query


def server_wait(timeout: float, http_timeout: float) -> float:
    """The ``wait_seconds`` of a job the client waits ``timeout`` seconds for.

    The aggregator holds the request at most this long: it stays well inside the HTTP
    timeout, or a timed-out request would be retried as a second job.
    """
    return max(0.0, min(timeout, DEFAULT_WAIT_SECONDS, http_timeout / 2))


def check_deadline(name: str, job: ItemsetJob, deadline: float, timeout: float) -> None:
    """:class:`TransportError` once the monotonic clock has passed ``deadline``.

    The message names the job, which ``itemset_job`` can keep polling.
    """
    if time.monotonic() >= deadline:
        raise TransportError(
            f"itemset job {job.id} of {name!r} is still {job.status} after {timeout}s"
        )


def itemsets_path(name: str) -> str:
    """``/v1/collections/{name}/itemsets``."""
    return collection_path(name) + "/itemsets"


def mine_itemsets_call(name: str, query: ItemsetQuery) -> ApiCall[ItemsetJob]:
    """``POST .../itemsets`` (analyst): start mining; the job, finished or not.

    Safe to repeat (mining only reads): a repeat after a lost answer starts a second job.
    """
    return ApiCall(
        "POST",
        itemsets_path(name),
        ItemsetJob.model_validate_json,
        body=query.model_dump_json().encode("utf-8"),
        auth=True,
    )


def itemset_job_call(name: str, job_id: str) -> ApiCall[ItemsetJob]:
    """``GET .../itemsets/{id}`` (analyst); an id no job can have is refused locally."""
    return ApiCall(
        "GET",
        itemsets_path(name) + "/" + quote(check_job_id(job_id, "itemset"), safe=""),
        ItemsetJob.model_validate_json,
        auth=True,
    )


def mask_privacy_call(
    name: str, average_support: float, attribute: str | None, weight: float
) -> ApiCall[MaskPrivacy]:
    """``GET .../privacy`` (public): ε and MASK's reconstruction privacy of a basket."""
    for label, value in (("average_support", average_support), ("weight", weight)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidQueryError(f"{label} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise InvalidQueryError(f"{label} must be finite, got {value!r}")
    params = {"average_support": repr(float(average_support)), "weight": repr(float(weight))}
    if attribute is not None:
        params["attribute"] = attribute
    return ApiCall(
        "GET", collection_path(name) + "/privacy", MaskPrivacy.model_validate_json, params=params
    )


def job_result(job: ItemsetJob) -> ItemsetResult | None:
    """The result of a finished job, ``None`` while it is queued or running.

    A failed job raises the error class its problem ``type`` names, with its detail.
    """
    if job.status == "done":
        if job.result is None:
            raise InvalidQueryError(f"itemset job {job.id} is done but carries no result")
        return job.result
    if job.status == "failed":
        if job.error is None:
            raise InvalidQueryError(f"itemset job {job.id} failed without saying why")
        error = error_class_for_type(job.error.type)(job.error.detail)
        error.add_note(f"itemset job {job.id} of collection {job.collection!r}")
        raise error
    return None


def is_informative(rule: RuleEstimate) -> bool:
    """Whether a released rule's confidence interval says something: narrower than half
    of [0, 1] (:data:`ldp_shared.analyses.itemsets.UNINFORMATIVE_WIDTH`; the aggregator
    sends the same verdict as ``informative``). A wider one cannot tell a strong rule from
    a weak one; ``result.rules`` lists such rules after every informative one."""
    from ldp_shared.analyses.itemsets.rules import informative  # the SDK loads no analyses

    return rule.informative and informative(rule.confidence_ci_low, rule.confidence_ci_high)
