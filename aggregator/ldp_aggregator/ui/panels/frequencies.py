"""Frequencies of one attribute: a bar chart with 95% error bars and its table, raw or
post-processed (``estimate_frequencies``, the function behind ``GET .../frequencies``).

An attribute of an open domain (``flh``, ``pem``) has no list of values: the page asks
for the values to estimate, as the ``values=`` text of the API (comma-separated, a comma
or backslash inside a value escaped with a backslash: :mod:`ldp_shared.candidates`).
"""

from __future__ import annotations

from typing import Any

from ldp_aggregator.frequencies import estimate_frequencies
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.panels import heavy_hitters
from ldp_aggregator.ui.states import problem_view
from ldp_shared.candidates import MAX_CANDIDATES
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import LDPError
from ldp_shared.wire.releases import FrequencyResult

CONFIDENCE = 0.95

INTERVALS = {
    "score": "a score interval: every frequency the counts are consistent with, with the"
    " variance taken at that frequency and a continuity correction",
    "normal": "a normal interval around the estimate with its plug-in standard error",
}

METHODS = {
    "none": "Raw (unbiased)",
    "norm-sub": "Norm-Sub",
    "simplex": "Simplex projection",
    "ibu": "Iterative Bayesian update",
}
WHAT_IT_DOES = {
    "norm-sub": "negative estimates set to 0 and the rest shifted to sum to 1",
    "simplex": "the nearest distribution (non-negative, summing to 1) in Euclidean distance",
    "ibu": "the maximum-likelihood distribution through the mechanism's channel (EM)",
}


def attribute_names(config: CollectionConfig) -> list[str]:
    """The attributes released as frequencies, then the label."""
    hidden = set(config.spec.knn.attribute_names()) if config.spec.knn is not None else set()
    names = [
        a.name
        for a in config.attributes
        if config.spec_of(a).released_as == "frequencies" and a.name not in hidden
    ]
    return names + ([config.label.name] if config.label is not None else [])


def is_open(config: CollectionConfig, attribute: str) -> bool:
    """Whether ``attribute`` has an open domain: its values are estimated only as named."""
    return any(a.name == attribute and config.spec_of(a).is_open for a in config.attributes)


def methods_for(config: CollectionConfig, attribute: str) -> list[str]:
    """The post-processings that apply to ``attribute``."""
    if config.label is not None and attribute == config.label.name:
        return ["none", "norm-sub", "simplex"]
    if is_open(config, attribute):
        return ["none"]  # named values are not a whole distribution
    for candidate in config.attributes:
        if candidate.name == attribute and not config.spec_of(candidate).is_distribution:
            return ["none"]  # a basket's item supports need not sum to 1
    return list(METHODS)


def name_values(ctx: PanelContext, attribute: str) -> dict[str, str]:
    """The state of an open-domain attribute before any value is named."""
    step = "Type the values to estimate above, separated by commas, and press Estimate"
    if attribute in heavy_hitters.attribute_names(ctx.config):
        step += "; the Heavy hitters tab finds its most frequent values for you"
    return {
        "title": "Name the values to estimate",
        "message": f"{attribute!r} has an open domain: no list of its values exists, so"
        " its frequencies are estimated for the values you name.",
        "next_step": step + ".",
    }


def _shown(result: FrequencyResult) -> dict[str, Any]:
    """The chart's data: the post-processed estimate when there is one, else the raw
    estimate with its interval."""
    raw = result.postprocessed is None
    method = result.postprocess
    if raw:
        caption = (
            f"Shown: the raw unbiased estimate, with its {CONFIDENCE:.0%} confidence"
            f" interval as error bars ({INTERVALS[result.interval]})."
        )
    else:
        caption = (
            f"Shown: the post-processed estimate ({METHODS[method]}: {WHAT_IT_DOES[method]})."
            " Post-processing gives no interval of its own, so its bars have none; the"
            " table lists the raw estimate and its interval beside it."
        )
    return {
        "caption": caption,
        "shown": "raw" if raw else method,
        "chart": {
            "title": f"Frequencies of {result.attribute}",
            "labels": result.values,
            "values": result.estimate if raw else result.postprocessed,
            "low": result.ci_low if raw else None,
            "high": result.ci_high if raw else None,
            "y_title": "estimated frequency",
        },
    }


def view(ctx: PanelContext) -> PanelView:
    names = attribute_names(ctx.config)
    attribute = ctx.param("attribute", names[0])
    methods = methods_for(ctx.config, attribute)
    method = ctx.param("postprocess", "none")
    open_domain = is_open(ctx.config, attribute)
    values = ctx.param("values") if open_domain else ""
    context: dict[str, Any] = {
        "attribute_links": ctx.choices(
            "frequencies", "attribute", [(n, n) for n in names], attribute, postprocess="none"
        ),
        "method_links": ctx.choices(
            "frequencies",
            "postprocess",
            [(key, METHODS[key]) for key in methods],
            method,
            attribute=attribute,
            values=values,
        ),
        "confidence": CONFIDENCE,
        "open_domain": open_domain,
        "attribute": attribute,
        "named": values,
        "max_values": MAX_CANDIDATES,
    }
    if open_domain and not values:
        context["ask"] = name_values(ctx, attribute)
        return PanelView("panels/frequencies.html", context)
    try:
        result = estimate_frequencies(
            ctx.state.engine, ctx.collection, attribute, CONFIDENCE, method, values or None
        )
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView("panels/frequencies.html", context, status_code=problem.status_code)
    rows = [
        {
            "value": value,
            "estimate": result.estimate[i],
            "stderr": result.stderr[i],
            "ci_low": result.ci_low[i],
            "ci_high": result.ci_high[i],
            "postprocessed": None if result.postprocessed is None else result.postprocessed[i],
        }
        for i, value in enumerate(result.values)
    ]
    context.update(_shown(result), result=result, rows=rows)
    return PanelView("panels/frequencies.html", context)


def results(ctx: PanelContext) -> list[FrequencyResult]:
    """The frequencies the page shows (none while an open domain's values are unnamed)."""
    attribute = ctx.param("attribute", attribute_names(ctx.config)[0])
    values = ctx.param("values") if is_open(ctx.config, attribute) else ""
    if is_open(ctx.config, attribute) and not values:
        return []
    method = ctx.param("postprocess", "none")
    return [
        estimate_frequencies(
            ctx.state.engine, ctx.collection, attribute, CONFIDENCE, method, values or None
        )
    ]


PANEL = Panel(
    slug="frequencies",
    title="Frequencies",
    view=view,
    applies=lambda config: bool(attribute_names(config)),
    results=results,
)
