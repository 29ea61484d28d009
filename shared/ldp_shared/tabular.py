"""Released results as plain dicts and as data frames: the ``to_dict()`` and
``to_frame()`` of :class:`Tabular`.

Each result lays itself out as columns, one row per entry, without pandas
(:meth:`Tabular.frame_columns`, defined next to it in its wire module; :func:`columns`
of any result); :meth:`Tabular.to_frame` makes the ``pandas.DataFrame`` of them (pandas
is optional: without it, :class:`~ldp_shared.errors.MissingDependencyError` names ``pip
install pandas``), with the result's scalars (collection, attribute, n_reports, ε,
confidence, ...) in ``frame.attrs``. This module names no wire model.

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
  and ``stderr_{class}`` for every class, and ``clipped`` (the point's features clipped
  onto their bounds, joined by ``", "``);
* a trained model (logistic regression): one per coordinate: ``coordinate, weight``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import BaseModel

from ldp_shared.errors import InvalidQueryError, MissingDependencyError

Columns = dict[str, list[Any]]

INTERVAL = ("stderr", "ci_low", "ci_high")


def to_dict(result: BaseModel) -> dict[str, Any]:
    """``result`` as a plain JSON-able dict: what the aggregator answered."""
    return result.model_dump(mode="json")


def from_rows(rows: Iterable[Mapping[str, Any]], names: Iterable[str]) -> Columns:
    """``rows`` as the columns ``names``, in that order (``None`` where a row has none)."""
    table: Columns = {name: [] for name in names}
    for row in rows:
        for name, column in table.items():
            column.append(row.get(name))
    return table


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


class Tabular:
    """Mixin of a wire model an analyst takes away: as a plain dict, or as a data frame."""

    __slots__ = ()

    def frame_columns(self) -> Columns:
        """The columns of the result's frame (see the module), without pandas."""
        raise NotImplementedError(f"{type(self).__name__} lays out no columns")

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain JSON-able dict (what the aggregator answered)."""
        return to_dict(cast(BaseModel, self))

    def to_frame(self) -> Any:
        """The result as a ``pandas.DataFrame``: one row per value, rule, period or point
        with its estimate, standard error and interval (:mod:`ldp_shared.tabular` names
        the columns); the result's scalars (collection, ε, ...) are in ``frame.attrs``.
        Needs pandas (:class:`~ldp_shared.errors.MissingDependencyError` without it)."""
        return frame_of(self.frame_columns(), cast(BaseModel, self))


def columns(result: BaseModel) -> Columns:
    """The columns of ``result``'s frame (see the module), without pandas;
    :class:`InvalidQueryError` for a result that has none."""
    if isinstance(result, Tabular):
        return result.frame_columns()
    raise InvalidQueryError(f"a {type(result).__name__} has no frame")


__all__ = [
    "INTERVAL",
    "Columns",
    "Tabular",
    "columns",
    "frame_of",
    "from_rows",
    "pandas",
    "to_dict",
]
