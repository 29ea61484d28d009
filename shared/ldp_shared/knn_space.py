"""The feature space of a kNN model: bounded numbers and categories, scaled to ``[−1, 1]``.

The analyst names the features: a numeric one with public bounds ``[lo, hi]``, a
categorical one with its domain. A record (or a query point) is a row of ``m`` numbers,
a categorical feature given as the index of its value. Both protocols of this package
work on the scaled point ``t ∈ [−1, 1]^m``,

    t_j = 2 (x_j − lo_j)/(hi_j − lo_j) − 1          (numeric)
    t_j = 2 x_j/(d_j − 1) − 1                        (categorical, label-encoded)

which needs no statistic of the data. A categorical feature is label-encoded, the form
of the course report the issue starts from; its ``d_j = 1`` case maps to 0.

The cell protocol works on the standardised point ``z_j = (x_j − μ_j)/σ_j`` instead,
with a public centre ``μ_j`` and scale ``σ_j`` per feature that the analyst supplies
(for example from a census publication; a device cannot standardise by a mean it does
not know). By default ``μ_j`` is the midpoint of the bounds and ``σ_j`` half their width,
so that ``z = t``.

A device clips its numbers into the bounds before it scales them
(:meth:`FeatureSpace.scale_records`), and a query point is clipped the same way
(:meth:`FeatureSpace.scale_queries`, which also says which coordinates it clipped, for a
per-point flag in the answer): a query outside the bounds is classified where a device
with those values would have reported. A point of the wrong dimension, with NaN or with a
category index out of range is refused (:class:`~ldp_shared.errors.InvalidQueryError`
for a query, :class:`~ldp_shared.errors.InvalidRecordError` for a record), naming it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError, LDPError
from ldp_shared.kernel import FloatArray, bounds_problem


@dataclass(frozen=True)
class Feature:
    """One feature: numeric with bounds (``categories == 0``) or categorical."""

    name: str
    lo: float = 0.0
    hi: float = 1.0
    categories: int = 0
    centre: float | None = None
    """``μ``: public; ``None`` for the midpoint of the bounds."""
    spread: float | None = None
    """``σ``: public; ``None`` for half the width of the bounds."""

    def __post_init__(self) -> None:
        if self.spread is not None and not (math.isfinite(self.spread) and self.spread > 0):
            raise ConfigurationError(f"feature {self.name!r}: the scale must be positive")
        if self.centre is not None and not math.isfinite(self.centre):
            raise ConfigurationError(f"feature {self.name!r}: the centre must be finite")
        if self.categories:
            if isinstance(self.categories, bool) or self.categories < 1:
                raise ConfigurationError(f"feature {self.name!r}: needs at least one category")
        elif (problem := bounds_problem(self.lo, self.hi)) is not None:
            raise ConfigurationError(f"feature {self.name!r}: {problem}")


def numeric(
    name: str, lo: float, hi: float, centre: float | None = None, spread: float | None = None
) -> Feature:
    return Feature(name=name, lo=float(lo), hi=float(hi), centre=centre, spread=spread)


def categorical(
    name: str, categories: int, centre: float | None = None, spread: float | None = None
) -> Feature:
    hi = float(max(categories - 1, 1))
    return Feature(name, 0.0, hi, categories=categories, centre=centre, spread=spread)


@dataclass(frozen=True)
class FeatureSpace:
    """The features of a model, in order."""

    features: tuple[Feature, ...]

    def __post_init__(self) -> None:
        if not self.features:
            raise ConfigurationError("a kNN model needs at least one feature")

    @classmethod
    def of(cls, features: Sequence[Feature]) -> FeatureSpace:
        return cls(tuple(features))

    @property
    def dimension(self) -> int:
        return len(self.features)

    @property
    def lo(self) -> FloatArray:
        return np.array([f.lo for f in self.features])

    @property
    def hi(self) -> FloatArray:
        return np.array([f.hi for f in self.features])

    @property
    def centre(self) -> FloatArray:
        return np.array(
            [(f.lo + f.hi) / 2 if f.centre is None else f.centre for f in self.features]
        )

    @property
    def spread(self) -> FloatArray:
        return np.array(
            [(f.hi - f.lo) / 2 if f.spread is None else f.spread for f in self.features]
        )

    @property
    def is_categorical(self) -> np.ndarray:
        return np.array([f.categories > 0 for f in self.features])

    def _rows(self, values: Any, error: type[LDPError]) -> FloatArray:
        try:
            x = np.asarray(values, dtype=np.float64)
        except OverflowError:
            raise error("a coordinate is out of range: numbers must lie within ±1.8e308") from None
        except (TypeError, ValueError) as exc:
            raise error("points must be rows of numbers") from exc
        if x.ndim == 1 and x.size == self.dimension:
            x = x.reshape(1, -1)
        if x.ndim != 2 or x.shape[1] != self.dimension:
            raise error(
                f"points must have {self.dimension} coordinates"
                f" ({', '.join(f.name for f in self.features)}), got shape {x.shape}"
            )
        if not np.isfinite(x).all():
            row = int(np.argwhere(~np.isfinite(x))[0, 0])
            raise error(f"point {row} has a coordinate that is NaN, infinite or beyond ±1.8e308")
        cat = self.is_categorical
        if cat.any():
            c = x[:, cat]
            top = np.array([f.categories - 1 for f in self.features if f.categories])
            wrong = (c != np.round(c)) | (c < 0) | (c > top)
            if wrong.any():
                row, col = (int(i) for i in np.argwhere(wrong)[0])
                name = [f.name for f in self.features if f.categories][col]
                raise error(
                    f"point {row}: {name} = {float(c[row, col]):g} is not a value index;"
                    f" categorical coordinates must be value indices (0 to {int(top[col])})"
                )
        return x

    def _scale(self, x: FloatArray) -> FloatArray:
        lo, hi = self.lo, self.hi
        out: FloatArray = 2.0 * (x - lo) / (hi - lo) - 1.0
        single = np.array([f.categories == 1 for f in self.features])
        out[:, single] = 0.0
        return out

    def standardise(self, t: FloatArray) -> FloatArray:
        """``z = (x − μ)/σ`` from the scaled ``t`` (the cell protocol's coordinates)."""
        x = (t + 1.0) * (self.hi - self.lo) / 2.0 + self.lo
        out: FloatArray = (x - self.centre) / self.spread
        return out

    def scale_queries(self, values: Any) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Query points as ``t``, numbers clipped into their bounds as a device clips its
        own, and the ``points × features`` mask of the coordinates that were clipped.

        :class:`InvalidQueryError` for a point of the wrong dimension, with NaN or with a
        category index out of range.
        """
        x = self._rows(values, InvalidQueryError)
        outside: NDArray[np.bool_] = (x < self.lo) | (x > self.hi)
        return self._scale(np.clip(x, self.lo, self.hi)), outside

    def scale_records(self, values: Any) -> FloatArray:
        """Device records as ``t``, numbers clipped into their bounds first."""
        x = self._rows(values, InvalidRecordError)
        return self._scale(np.clip(x, self.lo, self.hi))
