"""Means of the numeric attributes: one table row per attribute released as a mean, with
its mechanism, ε, reports, standard error, interval and bounds (``estimate_mean``, the
function behind ``GET .../means``)."""

from __future__ import annotations

from typing import Any

from ldp_aggregator.means import estimate_mean
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import problem_view
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import LDPError
from ldp_shared.kernel import z_value
from ldp_shared.wire import MeanResult

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


def view(ctx: PanelContext) -> PanelView:
    results: list[MeanResult] = []
    problems: list[tuple[str, PanelView]] = []
    for name in attribute_names(ctx.config):
        try:
            results.append(estimate_mean(ctx.state.engine, ctx.collection, name, CONFIDENCE))
        except LDPError as error:
            problems.append((name, problem_view(ctx, error)))
    context: dict[str, Any] = {
        "results": results,
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
)
