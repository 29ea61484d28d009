"""Quantiles of a histogram attribute: a table of the quantiles with their 95% intervals
(``estimate_quantiles``, the function behind ``GET .../quantiles``, at its default levels
unless the page asks others) beside a bar chart of the estimated bin frequencies with
their error bars (``estimate_frequencies``, as on the frequencies panel)."""

from __future__ import annotations

from typing import Any

from ldp_aggregator.frequencies import estimate_frequencies
from ldp_aggregator.quantiles import DEFAULT_LEVELS, estimate_quantiles
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.panels.frequencies import INTERVALS
from ldp_aggregator.ui.states import problem_view
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import LDPError
from ldp_shared.wire.releases import QuantileResult

CONFIDENCE = 0.95


def attribute_names(config: CollectionConfig) -> list[str]:
    """The histogram attributes (those with bins of a number), in the collection's order."""
    return [a.name for a in config.attributes if config.spec_of(a).bin_edges is not None]


def caption(confidence: float) -> str:
    """What the quantile table shows, in plain words."""
    return (
        "Each quantile is read from the estimated distribution function of the bins,"
        " interpolated linearly within its bin (values taken as spread evenly in it). Its"
        f" {confidence:.0%} interval holds every value at which the estimated share of"
        " values below it is statistically consistent with the level: the inverted"
        " pointwise band of the distribution function (Woodruff, JASA 1952), which stays"
        " within the bounds and needs no density estimate."
    )


def view(ctx: PanelContext) -> PanelView:
    names = attribute_names(ctx.config)
    attribute = ctx.param("attribute", names[0])
    levels = ctx.param("q", DEFAULT_LEVELS)
    context: dict[str, Any] = {
        "attribute_links": ctx.choices(
            "quantiles", "attribute", [(n, n) for n in names], attribute, q=levels
        ),
        "attribute": attribute,
        "levels": levels,
        "default_levels": DEFAULT_LEVELS,
        "confidence": CONFIDENCE,
    }
    engine, collection = ctx.state.engine, ctx.collection
    try:
        result = estimate_quantiles(engine, collection, attribute, levels, CONFIDENCE)
        bins = estimate_frequencies(engine, collection, attribute, CONFIDENCE, "none")
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView("panels/quantiles.html", context, status_code=problem.status_code)
    context.update(
        result=result,
        caption=caption(CONFIDENCE),
        rows=[(q, bins.values[q.bin]) for q in result.quantiles],
        bins=bins,
        bin_caption=(
            f"Estimated share of values in each bin, with {CONFIDENCE:.0%} error bars"
            f" ({INTERVALS[bins.interval]})."
        ),
        chart={
            "title": f"Bin frequencies of {attribute}",
            "labels": bins.values,
            "values": bins.estimate,
            "low": bins.ci_low,
            "high": bins.ci_high,
            "y_title": "estimated frequency",
        },
    )
    return PanelView("panels/quantiles.html", context)


def results(ctx: PanelContext) -> list[QuantileResult]:
    """The quantiles the page shows."""
    attribute = ctx.param("attribute", attribute_names(ctx.config)[0])
    levels = ctx.param("q", DEFAULT_LEVELS)
    return [estimate_quantiles(ctx.state.engine, ctx.collection, attribute, levels, CONFIDENCE)]


PANEL = Panel(
    slug="quantiles",
    title="Quantiles",
    view=view,
    applies=lambda config: bool(attribute_names(config)),
    results=results,
)
