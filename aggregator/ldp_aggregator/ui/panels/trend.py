"""A trend: one estimate per period with its interval as a band, beside the same numbers
as a table (``trend_result``, the function behind ``GET .../trend``), over the window
that the from/to form names (by default from the first period holding reports to the
current one).

A numeric attribute is followed by its mean; a histogram attribute (a number in bins) by
a quantile, by default its median (``estimate=quantiles``, level ``q``), or by one bin's
frequency; a categorical one one value at a time, by default the most frequent over the
window (its estimates averaged over the released periods, weighted by their reports),
and an open domain's by the value typed. A period below the release minimum is withheld:
the chart leaves a gap there and the table says "withheld" with its count, never a zero.
The downloads hold every value of every period (:func:`ldp_shared.wire.trends.trend_columns`).
A naive Bayes model or a kNN classifier has no trend (:mod:`ldp_aggregator.trends`): the
panel says so and points at training over a window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_aggregator.trends import TREND_LEVELS, trend_result
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.panels.frequencies import INTERVALS, is_open
from ldp_aggregator.ui.states import problem_view
from ldp_shared import candidates
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import LDPError
from ldp_shared.trend_series import SeriesPoint, followed_values, series
from ldp_shared.wire.trends import TrendResult, level_name

CONFIDENCE = 0.95
SLUG = "trend"
TEMPLATE = "panels/trend.html"


def attribute_names(config: CollectionConfig) -> list[str]:
    """The attributes released as frequencies or as a mean, then the label."""
    kinds = ("frequencies", "mean")
    hidden = set(config.spec.knn.attribute_names()) if config.spec.knn is not None else set()
    names = [
        a.name
        for a in config.attributes
        if config.spec_of(a).released_as in kinds and a.name not in hidden
    ]
    return names + ([config.label.name] if config.label is not None else [])


def has_quantiles(config: CollectionConfig, attribute: str) -> bool:
    """Whether ``attribute`` is a number in bins (a histogram): quantiles apply."""
    for candidate in config.attributes:
        if candidate.name == attribute:
            return config.spec_of(candidate).bin_edges is not None
    return False


def released_values(result: TrendResult) -> list[str]:
    """The values a categorical trend estimates (none when every period is withheld)."""
    if result.released_as != "frequencies":
        return []
    return followed_values(result)


def level_words(value: str) -> str:
    """A followed quantile level in words: ``"q0.5"`` → ``"median"``, ``"q0.9"`` →
    ``"0.9-quantile"``."""
    return "median" if value == level_name(0.5) else f"{value.removeprefix('q')}-quantile"


def most_frequent(result: TrendResult) -> str | None:
    """The value whose estimates, weighted by each released period's reports, are largest."""
    released = [p.frequencies for p in result.points if p.frequencies is not None]
    if not released:
        return None
    weights = np.array([f.n_reports for f in released], dtype=float)
    estimates = np.array([f.estimate for f in released], dtype=float)
    return released[0].values[int(np.argmax(weights @ estimates))]


def follow(result: TrendResult, asked: str) -> tuple[str, list[SeriesPoint]]:
    """The value followed (``asked``, else the most frequent; ``"mean"`` for a number)
    and its estimate per period. :class:`InvalidQueryError` for a value the attribute lacks."""
    if result.released_as == "mean":
        return "mean", series(result)
    if result.released_as == "quantiles":
        value = next(iter(followed_values(result)), "")
        return value, series(result, value)
    value = asked or most_frequent(result) or ""
    return value, series(result, value)


def subject(result: TrendResult, value: str) -> tuple[str, str]:
    """What is followed, in words: the axis title's and the chart title's."""
    if result.released_as == "mean":
        return "mean", f"mean of {result.attribute}"
    if result.released_as == "quantiles":
        words = level_words(value)
        return words, f"{words} of {result.attribute}"
    return f"frequency of {value}", f"frequency of {result.attribute} = {value}"


def _chart(result: TrendResult, value: str, rows: list[SeriesPoint]) -> dict[str, Any]:
    what, followed = subject(result, value)
    return {
        "kind": "trend",
        "title": f"Estimated {followed} per {result.window.period}",
        "labels": [row.period for row in rows],
        "values": [row.estimate for row in rows],  # None (a gap) where withheld
        "low": [row.ci_low for row in rows],
        "high": [row.ci_high for row in rows],
        "y_title": f"estimated {what}",
        "x_title": f"{result.window.period} (UTC)",
    }


def caption(result: TrendResult) -> str:
    """What the chart shows, in plain words."""
    level = f"{result.confidence:.0%}"
    if result.released_as == "mean":
        interval = "a normal interval: the mean ± z standard errors of the mechanism's variance"
    elif result.released_as == "quantiles":
        interval = (
            "every value at which the estimated CDF is not significantly different from the"
            " level: the inverted pointwise band of the CDF, Woodruff 1952"
        )
    else:
        kind = next(p.frequencies.interval for p in result.points if p.frequencies is not None)
        interval = INTERVALS[kind]
    return (
        f"Each point is the estimate over the reports of one {result.window.period}, the band"
        f" its {level} confidence interval ({interval}). A gap is a withheld period: it holds"
        " fewer reports than the release minimum, so nothing is estimated there."
    )


def _window_params(ctx: PanelContext) -> dict[str, str]:
    return {"from": ctx.param("from").strip(), "to": ctx.param("to").strip()}


def _follows(ctx: PanelContext, attribute: str) -> tuple[str | None, str]:
    """What the page follows of ``attribute``: ``("quantiles", level)`` for a histogram
    unless its bins are asked for (``estimate=frequencies``), else ``(None, "")``."""
    if not has_quantiles(ctx.config, attribute):
        return None, ""
    if ctx.param("estimate", "quantiles") == "frequencies":
        return "frequencies", ""
    return "quantiles", ctx.param("q").strip() or TREND_LEVELS


def _trend(ctx: PanelContext, attribute: str, value: str) -> TrendResult:
    window = _window_params(ctx)
    named = candidates.join([value]) if value and is_open(ctx.config, attribute) else None
    estimate, level = _follows(ctx, attribute)
    return trend_result(
        ctx.state.engine,
        ctx.collection,
        attribute,
        window["from"] or None,
        window["to"] or None,
        CONFIDENCE,
        named,
        estimate,
        level or None,
    )


def no_trend_note(config: CollectionConfig) -> str:
    """Why the collection's model has no trend here, and what to do instead (empty when
    it has none)."""
    where = f"/v1/collections/{config.name}"
    if config.spec.knn is not None:
        return (
            "A kNN classifier is not one estimate per period, so it has no trend: classify"
            f" over a window instead (POST {where}/knn/classify?from=&to=)."
        )
    if config.label is not None:
        return (
            "A naive Bayes model is not one estimate per period, so it has no trend: train"
            f" one over each window you compare (POST {where}/models/naive-bayes?from=&to=)."
        )
    return ""


def view(ctx: PanelContext) -> PanelView:
    names = attribute_names(ctx.config)
    attribute = ctx.param("attribute", names[0])
    asked = ctx.param("value").strip()
    window = _window_params(ctx)
    open_domain = is_open(ctx.config, attribute)
    estimate, level = _follows(ctx, attribute)
    context: dict[str, Any] = {
        "attribute_links": ctx.choices(
            SLUG, "attribute", [(n, n) for n in names], attribute, **window
        ),
        "attribute": attribute,
        "asked": asked,
        "window": window,
        "open_domain": open_domain,
        "confidence": CONFIDENCE,
        "min_reports": ctx.config.spec.release.min_reports,
        "quantile_attribute": estimate is not None,
        "estimate": estimate,
        "level": level,
        "no_trend_note": no_trend_note(ctx.config),
    }
    if open_domain and not asked:
        context["problem"] = {
            "title": "Name the value to follow",
            "message": f"{attribute!r} has an open domain: no list of its values exists, so"
            " its trend follows the value you name.",
            "next_step": "Type a value above and press Show.",
        }
        return PanelView(TEMPLATE, context)
    try:
        result = _trend(ctx, attribute, asked)
        value, rows = follow(result, asked)
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView(TEMPLATE, context, status_code=problem.status_code)
    released = [p for p in result.points if p.withheld is None]
    context.update(
        result=result,
        value=value,
        value_choices=released_values(result),
        rows=rows,
        released=len(released),
        withheld=len(rows) - len(released),
        first=next((p.mean or p.frequencies or p.quantiles for p in released), None),
        followed=subject(result, value)[1],
        chart=_chart(result, value, rows),
        caption=caption(result) if released else "",
    )
    return PanelView(TEMPLATE, context)


def results(ctx: PanelContext) -> list[TrendResult]:
    """The trend on the page: every value of every period (a withheld period: one row, no
    estimate, the reason in ``withheld``)."""
    attribute = ctx.param("attribute", attribute_names(ctx.config)[0])
    asked = ctx.param("value").strip()
    if is_open(ctx.config, attribute) and not asked:
        return []
    return [_trend(ctx, attribute, asked)]


PANEL = Panel(
    slug=SLUG,
    title="Trend",
    view=view,
    applies=lambda config: bool(attribute_names(config)),
    results=results,
)
