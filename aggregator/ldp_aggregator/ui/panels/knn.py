"""kNN classification of a kNN collection: the analyst types one point (a number per
numeric feature, a value per categorical one) and ``k``, and reads the predicted class
with each class's debiased score and its standard error (``classify_points``, the
function behind ``POST .../knn/classify``).

A kNN collection's reported attributes (``cell_0`` … one per table, each a hash of the
device's point with 2^bits values) are internal: no panel lists them as the user's
attributes; the overview names the features and the label instead
(:func:`internal_attributes`).
"""

from __future__ import annotations

from typing import Any

from ldp_aggregator.knn import classify_points
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import problem_view
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError, LDPError
from ldp_shared.kernel import z_value
from ldp_shared.knn_cells import KnnFeature
from ldp_shared.wire.knn import KnnClassification, KnnQuery

SLUG = "knn"
DEFAULT_K = "25"
Z95 = z_value(0.95)


def internal_attributes(config: CollectionConfig) -> set[str]:
    """The attributes a kNN collection reports for its own use (the cell hashes)."""
    return set(config.spec.knn.attribute_names()) if config.spec.knn is not None else set()


def _features(config: CollectionConfig) -> list[KnnFeature]:
    return list(config.spec.knn.features) if config.spec.knn is not None else []


def _default(feature: KnnFeature) -> str:
    if feature.domain is not None:
        return "0"
    assert feature.lo is not None and feature.hi is not None
    middle = feature.centre if feature.centre is not None else (feature.lo + feature.hi) / 2
    return f"{middle:g}"


def _point(ctx: PanelContext) -> tuple[dict[str, str], list[float], int]:
    """The form's values (as typed), the point and ``k``; :class:`InvalidQueryError`
    naming the field that is not a number."""
    typed = {f.name: ctx.param(f"f_{f.name}", _default(f)).strip() for f in _features(ctx.config)}
    point = []
    for name, text in typed.items():
        try:
            point.append(float(text))
        except ValueError:
            raise InvalidQueryError(f"{name} must be a number, got {text!r}") from None
    k_text = ctx.param("k", DEFAULT_K).strip()
    if not k_text.isdigit():
        raise InvalidQueryError(f"k must be a whole number from 1, got {k_text!r}")
    return typed, point, int(k_text)


def _classify(ctx: PanelContext) -> KnnClassification:
    _typed, point, k = _point(ctx)
    query = KnnQuery(points=[point], k=k)
    return classify_points(ctx.state.engine, ctx.collection, query, None)


def results(ctx: PanelContext) -> list[KnnClassification]:
    """The classification of the point on the page."""
    return [_classify(ctx)]


def view(ctx: PanelContext) -> PanelView:
    features = _features(ctx.config)
    typed = {f.name: ctx.param(f"f_{f.name}", _default(f)) for f in features}
    context: dict[str, Any] = {
        "features": features,
        "typed": typed,
        "k": ctx.param("k", DEFAULT_K),
        "label": ctx.config.label.name if ctx.config.label is not None else "",
    }
    try:
        result = _classify(ctx)
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView("panels/knn.html", context, status_code=problem.status_code)
    prediction = result.predictions[0]
    rows = list(zip(result.classes, prediction.scores, prediction.stderr, strict=True))
    context.update(
        result=result,
        prediction=prediction,
        rows=rows,
        chart={
            "title": "Debiased class scores of the point's neighbourhood",
            "labels": result.classes,
            "values": prediction.scores,
            "low": [s - Z95 * e for _, s, e in rows],
            "high": [s + Z95 * e for _, s, e in rows],
            "y_title": "debiased neighbours of each class",
        },
    )
    return PanelView("panels/knn.html", context)


PANEL = Panel(
    slug=SLUG,
    title="kNN",
    view=view,
    applies=lambda config: config.spec.knn is not None,
    results=results,
    results_key="collection",
)
