"""Released results as plain dicts and as data frames (the ``to_dict()`` and ``to_frame()``
of :class:`~ldp_shared.tabular.Tabular`).

:func:`columns` lays a result out as columns, one row per entry, without pandas;
:func:`to_frame` makes the ``pandas.DataFrame`` of them (pandas is optional: without it,
:class:`~ldp_shared.errors.MissingDependencyError` names ``pip install pandas``), with the
result's scalars (collection, attribute, n_reports, ε, confidence, ...) in ``frame.attrs``.

The rows:

* frequencies, heavy hitters: one per value: ``value, estimate, count, stderr, ci_low,
  ci_high`` (frequencies also ``postprocessed`` when asked for, and ``cdf``,
  ``cdf_stderr``, ``cdf_ci_low``, ``cdf_ci_high`` for ordered values);
* a mean: one row, ``value`` ``"mean"`` (as in a difference), ``estimate, stderr,
  ci_low, ci_high`` and ``variance`` where the mechanism estimates one;
* quantiles: one per level: ``probability, value, ci_low, ci_high, bin``;
* a naive Bayes model: one per feature, value and class: ``feature, value, class, count,
  stderr, ci_low, ci_high, smoothed_count, probability, log_prob``; the classes' priors
  first, as rows whose ``feature`` and ``value`` are ``None``;
* itemsets: one per rule (``antecedent`` and ``consequent`` as frozensets, then
  ``support``, ``confidence`` and ``lift`` each with its ``_stderr``, ``_ci_low`` and
  ``_ci_high``, the two sides' supports, ``informative``), or with
  ``to_frame(what="itemsets")`` one per itemset: ``items, length, support, stderr,
  ci_low, ci_high``;
* a trend: one per period and value: ``period, start, n_reports, value, estimate, stderr,
  ci_low, ci_high, withheld`` (a withheld period: one row, its ``value`` ``None`` and
  ``withheld`` saying why);
* a difference: one per value: ``value, estimate, baseline_estimate, difference, stderr,
  ci_low, ci_high``;
* kNN: one per query point: ``point`` (its index), ``predicted``, then ``score_{class}``
  and ``stderr_{class}`` for every class;
* a trained model (logistic regression): one per coordinate: ``coordinate, weight``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel

from ldp_shared.errors import InvalidQueryError, MissingDependencyError
from ldp_shared.trend_series import trend_columns
from ldp_shared.wire.itemsets import ItemsetResult
from ldp_shared.wire.knn import KnnClassification
from ldp_shared.wire.naive_bayes import NaiveBayesModel
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult
from ldp_shared.wire.training import TrainedModel
from ldp_shared.wire.trends import DifferenceResult, TrendResult

Columns = dict[str, list[Any]]

INTERVAL = ("stderr", "ci_low", "ci_high")


def to_dict(result: BaseModel) -> dict[str, Any]:
    """``result`` as a plain JSON-able dict: what the aggregator answered."""
    return result.model_dump(mode="json")


def _from_rows(rows: Iterable[Mapping[str, Any]], names: Iterable[str]) -> Columns:
    table: Columns = {name: [] for name in names}
    for row in rows:
        for name, column in table.items():
            column.append(row.get(name))
    return table


def _per_value(result: FrequencyResult | HeavyHittersResult) -> Columns:
    return {
        "value": list(result.values),
        "estimate": list(result.estimate),
        "count": list(result.counts),
        "stderr": list(result.stderr),
        "ci_low": list(result.ci_low),
        "ci_high": list(result.ci_high),
    }


def _frequencies(result: FrequencyResult) -> Columns:
    table = _per_value(result)
    if result.postprocessed is not None:
        table["postprocessed"] = list(result.postprocessed)
    if result.ordinal is not None:
        ordinal = result.ordinal
        table["cdf"] = list(ordinal.cdf)
        table["cdf_stderr"] = list(ordinal.cdf_stderr)
        table["cdf_ci_low"] = list(ordinal.cdf_ci_low)
        table["cdf_ci_high"] = list(ordinal.cdf_ci_high)
    return table


def _mean_row(result: MeanResult) -> dict[str, Any]:
    row = {"value": "mean", "estimate": result.mean}
    row.update({name: getattr(result, name) for name in INTERVAL})
    return row


def _mean(result: MeanResult) -> Columns:
    row, names = _mean_row(result), ["value", "estimate", *INTERVAL]
    if result.variance is not None:
        row["variance"] = result.variance
        names.append("variance")
    return _from_rows([row], names)


def _quantiles(result: QuantileResult) -> Columns:
    names = ("probability", "value", "ci_low", "ci_high", "bin")
    return _from_rows((quantile.model_dump() for quantile in result.quantiles), names)


NAIVE_BAYES = (
    "feature", "value", "class", "count", *INTERVAL,
    "smoothed_count", "probability", "log_prob",
)  # fmt: skip


def _naive_bayes(model: NaiveBayesModel) -> Columns:
    rows: list[dict[str, Any]] = [
        {
            "class": label,
            "count": model.class_counts[c],
            "stderr": model.class_counts_stderr[c],
            "ci_low": model.class_counts_ci_low[c],
            "ci_high": model.class_counts_ci_high[c],
            "smoothed_count": model.class_smoothed_counts[c],
            "probability": model.class_prior[c],
            "log_prob": model.class_log_prior[c],
        }
        for c, label in enumerate(model.classes)
    ]
    for feature in model.features:
        for c, label in enumerate(model.classes):
            for v, value in enumerate(feature.values):
                rows.append(
                    {
                        "feature": feature.name,
                        "value": value,
                        "class": label,
                        "count": feature.counts[c][v],
                        "stderr": feature.stderr[c][v],
                        "ci_low": feature.ci_low[c][v],
                        "ci_high": feature.ci_high[c][v],
                        "smoothed_count": feature.smoothed_counts[c][v],
                        "probability": feature.probabilities[c][v],
                        "log_prob": feature.log_prob[c][v],
                    }
                )
    return _from_rows(rows, NAIVE_BAYES)


RULES = (
    "antecedent", "consequent", "support",
    "confidence", "confidence_stderr", "confidence_ci_low", "confidence_ci_high",
    "lift", "lift_stderr", "lift_ci_low", "lift_ci_high",
    "antecedent_support", "consequent_support", "informative",
)  # fmt: skip


def itemset_columns(result: ItemsetResult, what: Literal["rules", "itemsets"] = "rules") -> Columns:
    """The rules of an itemset result, or its itemsets (``what="itemsets"``)."""
    if what == "rules":
        rows = (
            {
                **rule.model_dump(),
                "antecedent": frozenset(rule.antecedent),
                "consequent": frozenset(rule.consequent),
            }
            for rule in result.rules
        )
        return _from_rows(rows, RULES)
    if what == "itemsets":
        itemsets = (
            {**found.model_dump(), "items": frozenset(found.items), "length": len(found.items)}
            for found in result.itemsets
        )
        return _from_rows(itemsets, ("items", "length", "support", *INTERVAL))
    raise InvalidQueryError(f"what must be 'rules' or 'itemsets', got {what!r}")


def _rows_of(table: Columns) -> list[dict[str, Any]]:
    return [dict(zip(table, row, strict=True)) for row in zip(*table.values(), strict=True)]


def _difference(result: DifferenceResult) -> Columns:
    table: Columns = {"value": list(result.values)}
    for name in ("estimate", "baseline_estimate", "difference", *INTERVAL):
        table[name] = list(getattr(result, name))
    return table


def _knn(result: KnnClassification) -> Columns:
    table: Columns = {
        "point": list(range(len(result.predictions))),
        "predicted": [prediction.predicted for prediction in result.predictions],
    }
    for c, label in enumerate(result.classes):
        table[f"score_{label}"] = [prediction.scores[c] for prediction in result.predictions]
        table[f"stderr_{label}"] = [prediction.stderr[c] for prediction in result.predictions]
    table["clipped"] = [", ".join(prediction.clipped) for prediction in result.predictions]
    return table


def _trained(model: TrainedModel) -> Columns:
    return {"coordinate": list(model.coordinates), "weight": list(model.weights)}


_LAYOUTS: dict[type[BaseModel], Callable[[Any], Columns]] = {
    FrequencyResult: _frequencies,
    HeavyHittersResult: _per_value,
    MeanResult: _mean,
    QuantileResult: _quantiles,
    NaiveBayesModel: _naive_bayes,
    ItemsetResult: itemset_columns,
    TrendResult: trend_columns,
    DifferenceResult: _difference,
    KnnClassification: _knn,
    TrainedModel: _trained,
}


def columns(result: BaseModel) -> Columns:
    """The columns of ``result``'s frame (see the module), without pandas."""
    for kind, layout in _LAYOUTS.items():
        if isinstance(result, kind):
            return layout(result)
    raise InvalidQueryError(f"a {type(result).__name__} has no frame")


def pandas() -> Any:
    """The pandas module; :class:`MissingDependencyError` if it is not installed."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise MissingDependencyError(
            "to_frame() needs pandas, which is not installed: pip install pandas"
        ) from None


def frame_of(table: Columns, result: BaseModel) -> Any:
    """The ``pandas.DataFrame`` of ``table``, with ``result``'s scalars in its ``attrs``."""
    frame = pandas().DataFrame(table)
    scalars = (str, int, float, bool, type(None))
    frame.attrs.update({k: v for k, v in to_dict(result).items() if isinstance(v, scalars)})
    return frame


def to_frame(result: BaseModel) -> Any:
    """``result`` as a ``pandas.DataFrame`` (see the module)."""
    return frame_of(columns(result), result)


__all__ = ["columns", "frame_of", "itemset_columns", "pandas", "to_dict", "to_frame"]
