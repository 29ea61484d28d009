"""Means of the numeric attributes: a chart of each mean with its interval, placed within
its attribute's bounds, and one table row per attribute released as a mean, with its
mechanism, ε, reports, standard error, interval, bounds and (where the mechanism gives a
second moment) the standard deviation of the values (``estimate_mean``, the function
behind ``GET .../means``).

The chart puts attributes of different units on one axis by showing each mean as its
place in its range, ``(mean − lo) / (hi − lo)`` (0 at the lower bound, 1 at the upper);
the table has the means in their own units. An unbiased estimate may fall outside the
bounds by noise: the table flags it rather than clipping it silently.
"""

from __future__ import annotations

import math
from typing import Any

from ldp_aggregator.means import estimate_mean
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import problem_view
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import LDPError
from ldp_shared.kernel import z_value
from ldp_shared.wire.releases import MeanResult

CONFIDENCE = 0.95

CAPTION = (
    "Each mean is the unbiased estimate of the average of the values clipped to their"
    f" bounds [lo, hi]; its {CONFIDENCE:.0%} interval is the mean ± {z_value(CONFIDENCE):.2f}"
    " standard errors"
    " (a normal interval), the standard error coming from the mechanism's own variance"
    " formula (ldp_aggregator.means), with the sampling variance added where each record"
    " reports only some attributes (budget 'sample')."
)


def attribute_names(config: CollectionConfig) -> list[str]:
    """The attributes released as a mean, in the collection's order."""
    return [a.name for a in config.attributes if config.spec_of(a).released_as == "mean"]


def standard_deviation(result: MeanResult) -> float | None:
    """The SD of the values, √variance, where the mechanism estimates the variance; 0
    when noise made the variance estimate negative (the table says so)."""
    if result.variance is None:
        return None
    return math.sqrt(max(result.variance, 0.0))


def out_of_bounds(result: MeanResult) -> bool:
    """Whether the estimate lies outside ``[lo, hi]`` (possible by noise: it is unbiased)."""
    return not result.lo <= result.mean <= result.hi


def place(result: MeanResult, value: float) -> float:
    """``value`` as its place in the attribute's range: 0 at ``lo``, 1 at ``hi``."""
    return (value - result.lo) / (result.hi - result.lo)


def _chart(results: list[MeanResult]) -> dict[str, Any]:
    return {
        "title": "Each mean's place in its range (0 = lower bound, 1 = upper bound)",
        "labels": [r.attribute for r in results],
        "values": [place(r, r.mean) for r in results],
        "low": [place(r, r.ci_low) for r in results],
        "high": [place(r, r.ci_high) for r in results],
        "y_title": "(mean − lo) / (hi − lo)",
        "y_min": 0,
        "y_max": 1,
    }


def _estimates(ctx: PanelContext) -> tuple[list[MeanResult], list[tuple[str, PanelView]]]:
    results: list[MeanResult] = []
    problems: list[tuple[str, PanelView]] = []
    for name in attribute_names(ctx.config):
        try:
            results.append(estimate_mean(ctx.state.engine, ctx.collection, name, CONFIDENCE))
        except LDPError as error:
            problems.append((name, problem_view(ctx, error)))
    return results, problems


def results(ctx: PanelContext) -> list[MeanResult]:
    """The means the page shows (those released)."""
    return _estimates(ctx)[0]


def view(ctx: PanelContext) -> PanelView:
    results, problems = _estimates(ctx)
    context: dict[str, Any] = {
        "results": results,
        "rows": [(r, standard_deviation(r), out_of_bounds(r)) for r in results],
        "chart": _chart(results),
        "negative_variance": any(r.variance is not None and r.variance < 0 for r in results),
        "with_variance": any(r.variance is not None for r in results),
        "with_carried": any(r.attribute_reports is not None for r in results),
        "with_delta": any(r.delta > 0 for r in results),
        "caption": CAPTION,
        "confidence": CONFIDENCE,
    }
    if not results:  # every attribute failed (e.g. below the release minimum): one state
        problem = problems[0][1]
        context["problem"] = problem.context
        return PanelView("panels/means.html", context, status_code=problem.status_code)
    context["problems"] = [(name, problem.context) for name, problem in problems]
    return PanelView("panels/means.html", context)


PANEL = Panel(
    slug="means",
    title="Means",
    view=view,
    applies=lambda config: bool(attribute_names(config)),
    results=results,
)
