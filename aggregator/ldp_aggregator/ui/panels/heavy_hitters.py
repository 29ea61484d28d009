"""Heavy hitters of a ``pem`` attribute: the most frequent strings nobody listed, found
from its statistics (``estimate_heavy_hitters``, the function behind
``GET .../heavy-hitters``). A bar chart of the strings found with 95% error bars and the
detection threshold drawn as a line across it, and the same numbers as a table.

The strings are whatever devices sent: the page shows them only as escaped text, and
the chart draws them as canvas text from JSON that cannot close its element.
"""

from __future__ import annotations

from typing import Any

from ldp_aggregator.heavy_hitters import MAX_TOP, estimate_heavy_hitters
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.render import number
from ldp_aggregator.ui.states import problem_view
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError, LDPError
from ldp_shared.mechanisms.prefix_hashing import PrefixHashingSpec
from ldp_shared.wire.releases import HeavyHittersResult

CONFIDENCE = 0.95
DEFAULT_K = "20"


def attribute_names(config: CollectionConfig) -> list[str]:
    """The attributes whose frequent values can be discovered (mechanism ``pem``)."""
    return [a.name for a in config.attributes if isinstance(config.spec_of(a), PrefixHashingSpec)]


def parse_k(text: str) -> int:
    """``k`` from the form; the range is checked by ``estimate_heavy_hitters``."""
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidQueryError(
            f"k must be a whole number from 1 to {MAX_TOP}, got {text!r}"
        ) from None


def meaning(result: HeavyHittersResult) -> str:
    """What the detection threshold promises, in plain words."""
    return (
        f"A value at least this frequent is found with probability at least"
        f" {1 - result.miss:.0%} (1 − β, β = {result.miss:g}); the list holds a value that"
        f" no device holds with probability at most {result.false_discovery:.0%}"
        f" (α = {result.false_discovery:g}). Below the threshold a value may or may not be"
        " found: more reports lower it."
    )


def _chart(result: HeavyHittersResult) -> dict[str, Any]:
    return {
        "title": f"Most frequent values of {result.attribute}",
        "labels": result.values,
        "values": result.estimate,
        "low": result.ci_low,
        "high": result.ci_high,
        "y_title": "estimated frequency",
        "threshold": {
            "value": result.threshold,
            "label": f"detection threshold {number(result.threshold)}",
        },
    }


def view(ctx: PanelContext) -> PanelView:
    names = attribute_names(ctx.config)
    attribute = ctx.param("attribute", names[0])
    k = ctx.param("k", DEFAULT_K)
    context: dict[str, Any] = {
        "attribute_links": ctx.choices(
            "heavy-hitters", "attribute", [(n, n) for n in names], attribute, k=k
        ),
        "attribute": attribute,
        "k": k,
        "max_k": MAX_TOP,
        "confidence": CONFIDENCE,
    }
    try:
        result = estimate_heavy_hitters(
            ctx.state.engine, ctx.collection, attribute, parse_k(k), CONFIDENCE
        )
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView("panels/heavy_hitters.html", context, status_code=problem.status_code)
    context.update(
        result=result,
        meaning=meaning(result),
        rows=list(
            zip(
                result.values,
                result.estimate,
                result.stderr,
                result.ci_low,
                result.ci_high,
                strict=True,
            )
        ),
        chart=_chart(result),
    )
    return PanelView("panels/heavy_hitters.html", context)


def results(ctx: PanelContext) -> list[HeavyHittersResult]:
    """The heavy hitters the page shows."""
    attribute = ctx.param("attribute", attribute_names(ctx.config)[0])
    k = parse_k(ctx.param("k", DEFAULT_K))
    return [estimate_heavy_hitters(ctx.state.engine, ctx.collection, attribute, k, CONFIDENCE)]


PANEL = Panel(
    slug="heavy-hitters",
    title="Heavy hitters",
    view=view,
    applies=lambda config: bool(attribute_names(config)),
    results=results,
)
