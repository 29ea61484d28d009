"""What every released analysis of one attribute checks first: that the attribute exists,
that the confidence level is usable, and that enough reports stand behind the estimate.

The release minimum (``release.min_reports``) applies to all reports, and under the
``sample`` budget also to the ``n_j`` reports that carried the attribute.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Engine

from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats, read_stats
from ldp_shared.analyses.joint import attribute_reports
from ldp_shared.central import CentralRelease, released_central
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.kernel import z_value
from ldp_shared.periods import Window, parse_window, period_label
from ldp_shared.wire.releases import PeriodWindow

Released = TypeVar("Released", bound=BaseModel)


def unknown_attribute(config: CollectionConfig, attribute: str) -> InvalidQueryError:
    names = [a.name for a in config.attributes]
    known = names if config.label is None else [*names, config.label.name]
    return InvalidQueryError(
        f"collection {config.name!r} has no attribute {attribute!r}; "
        f"its attributes are {', '.join(known)}"
    )


def check_confidence(confidence: float) -> None:
    z_value(confidence)  # raises InvalidQueryError outside (0, 1)


def released_attribute(
    config: CollectionConfig, attribute: str, released_as: str
) -> AttributeConfig:
    """The reported attribute ``attribute``, if its mechanism is released as ``released_as``
    (``"frequencies"`` or ``"mean"``); :class:`InvalidQueryError` otherwise."""
    for candidate in config.attributes:
        if candidate.name == attribute:
            kind = config.spec_of(candidate).released_as
            if kind != released_as:
                route = "means" if kind == "mean" else "frequencies"
                raise InvalidQueryError(
                    f"attribute {attribute!r} ({candidate.mechanism}) is released as its"
                    f" {kind}: ask GET /v1/collections/{config.name}/{route}"
                )
            return candidate
    if config.label is not None and attribute == config.label.name:
        raise InvalidQueryError(
            f"{attribute!r} is the label of collection {config.name!r}: ask its frequencies"
            f" (GET /v1/collections/{config.name}/frequencies)"
        )
    raise unknown_attribute(config, attribute)


def require_reports(config: CollectionConfig, stats: Stats, window: Window | None = None) -> int:
    """``n``, if the collection (the ``window`` of its periods) holds at least its release
    minimum of reports."""
    minimum = config.spec.release.min_reports
    n = stats.n_reports
    if n < minimum:
        where = "" if window is None else f" in {window.describe()}"
        raise InsufficientReportsError(
            f"collection {config.name!r} has {n} reports{where}; "
            f"its release policy needs at least {minimum}"
        )
    return n


def carried_reports(
    config: CollectionConfig, attribute: AttributeConfig, stats: Stats
) -> int | None:
    """Budget ``sample``: ``n_j``, if at least the release minimum; ``None`` under split."""
    if attribute.sample_index is None:
        return None
    minimum = config.spec.release.min_reports
    carried = attribute_reports(attribute, stats.n_reports, stats.sums)
    if carried < minimum:
        raise InsufficientReportsError(
            f"attribute {attribute.name!r} of collection {config.name!r} was carried by"
            f" {carried} of its {stats.n_reports} reports (budget 'sample'); its release"
            f" policy needs at least {minimum}"
        )
    return carried


def current_stats(
    engine: Engine, collection: StoredCollection, window: Window | None = None
) -> Stats:
    """The collection's statistics as they stand, of the periods of ``window`` (``None``:
    all). A window holding fewer reports than the release minimum is refused here,
    naming the window (:class:`InsufficientReportsError`)."""
    config = collection.config
    with engine.connect() as connection:
        stats = read_stats(
            connection, collection.id, config.stats_length, config.float_stats_length, window
        )
    if window is not None:
        require_reports(config, stats, window)
    return stats


def window_query(
    collection: StoredCollection, first: str | None, last: str | None
) -> Window | None:
    """The window a query's ``from`` and ``to`` name, in the collection's periods."""
    return parse_window(first, last, collection.config.spec.period)


def described(window: Window) -> PeriodWindow:
    """The window as a release states it."""
    return PeriodWindow(
        period=window.period,
        first=period_label(window.first, window.period),
        last=period_label(window.last, window.period),
        periods=window.count,
    )


def windowed(result: Released, window: Window | None) -> Released:
    """``result`` stating the window it rests on (unchanged without one)."""
    return result if window is None else result.model_copy(update={"window": described(window)})


def release_header(
    config: CollectionConfig, attribute: AttributeConfig, n: int, confidence: float
) -> dict[str, Any]:
    """What every release of one reported attribute states first (collection, attribute,
    mechanism, ``n_reports``, its exact ε and the record's, the confidence level, and for a
    shuffled collection the central guarantee at ``n``)."""
    return {
        "collection": config.name,
        "attribute": attribute.name,
        "mechanism": attribute.mechanism,
        "n_reports": n,
        "epsilon": config.privacy.attribute(attribute.name).epsilon,
        "record_epsilon": config.epsilon,
        "confidence": confidence,
        "central": central_of(config, n),
    }


def central_of(config: CollectionConfig, n: int) -> CentralRelease | None:
    """A shuffled collection's central guarantee at ``n`` reports (``None`` unshuffled)."""
    if not config.spec.shuffled:
        return None
    return released_central(config.epsilon, config.delta, n)
