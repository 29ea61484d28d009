"""What the numeric mechanisms share: a bounded value, clipped and scaled on the device.

A numeric attribute is declared with bounds ``lo < hi`` (finite). On the device a value
must be a finite number (``NaN`` and ``±inf`` are refused with
:class:`~ldp_shared.errors.InvalidRecordError`); a value outside ``[lo, hi]`` is
**clipped** to the nearer bound, which the estimate then treats as the true value, and
scaled to ``t = 2(x − lo)/(hi − lo) − 1`` in ``[−1, 1]``, where the mechanisms of Duchi,
Jordan and Wainwright (2018) and Wang et al. (ICDE 2019) are defined. Estimates are
mapped back: ``x = lo + (t + 1)(hi − lo)/2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import InvalidRecordError
from ldp_shared.kernel import FloatArray, bounds_problem
from ldp_shared.mechanisms.base import AttributeSpec


class NumericSpec(AttributeSpec):
    """An attribute whose value is a number in ``[lo, hi]``, released as a mean."""

    is_distribution: ClassVar[bool] = False
    released_as: ClassVar[str] = "mean"

    lo: float = Field(description="lower bound: smaller values are clipped to it on the device")
    hi: float = Field(description="upper bound: larger values are clipped to it on the device")

    @model_validator(mode="after")
    def _check_bounds(self) -> NumericSpec:
        problem = bounds_problem(self.lo, self.hi)
        if problem is not None:
            raise ValueError(f"attribute {self.name!r}: {problem}")
        return self

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned for numbers in ``[lo, hi]``; a class needing more parameters than the
        bounds (Gaussian's δ) is not planned."""
        if lo is None or hi is None:
            return []
        specs: list[AttributeSpec] = []
        for name in cls.mechanism_literals():
            try:
                specs.append(cls(name="planned", mechanism=name, lo=lo, hi=hi))
            except ValueError:
                continue
        return specs

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.float64]:
        """The values clipped to ``[lo, hi]`` and scaled to ``t`` in ``[−1, 1]``."""
        values = finite_numbers(self.name, column)
        return to_unit(np.clip(values, self.lo, self.hi), self.lo, self.hi)


def finite_numbers(name: str, column: Sequence[Any] | NDArray[Any]) -> FloatArray:
    """A column of numbers as float64; :class:`InvalidRecordError` naming the first value
    that is not a number (a string, a bool, ``None``), out of a double's range (an integer
    such as ``10**400``) or not finite (``NaN``, ``±inf``)."""
    raw = np.asarray(column)
    if raw.dtype.kind not in "iuf" or raw.ndim != 1:
        bad = [v for v in list(column) if isinstance(v, bool) or not isinstance(v, int | float)]
        if bad or raw.ndim != 1:
            raise InvalidRecordError(
                f"attribute {name!r}: value {bad[0]!r} is not a number"
                if bad
                else f"attribute {name!r}: values must be numbers"
            )
        raw = np.array([in_range(f"attribute {name!r}", v) for v in column])  # beyond int64
    values = raw.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        bad_value = float(values[np.flatnonzero(~finite)[0]])
        raise InvalidRecordError(f"attribute {name!r}: value {bad_value!r} is not a finite number")
    return values


def in_range(where: str, value: Any) -> float:
    """``value`` as a float; :class:`InvalidRecordError` (said of ``where``) for an integer
    beyond a double's range, shown by its first digits and length."""
    try:
        return float(value)
    except OverflowError:
        digits = str(abs(int(value)))
        raise InvalidRecordError(
            f"{where}: value {'-' if value < 0 else ''}{digits[:6]}… ({len(digits)} digits)"
            " is out of range: a number must lie within ±1.8e308"
        ) from None


def to_unit(x: FloatArray, lo: float, hi: float) -> FloatArray:
    """``t = 2(x − lo)/(hi − lo) − 1``, clipped into ``[−1, 1]`` against rounding."""
    t: FloatArray = np.clip(2.0 * (x - lo) / (hi - lo) - 1.0, -1.0, 1.0)
    return t


def from_unit(t: FloatArray, lo: float, hi: float) -> FloatArray:
    """``x = lo + (t + 1)(hi − lo)/2``."""
    x: FloatArray = lo + (np.asarray(t, dtype=np.float64) + 1.0) * (hi - lo) / 2.0
    return x


def bounded_variance(mean: FloatArray, lo: float, hi: float) -> FloatArray:
    """``(hi − m)(m − lo)``: the largest variance a variable in ``[lo, hi]`` with mean ``m``
    can have (Bhatia–Davis); a safe stand-in for the unknown spread of the true values."""
    m = np.clip(np.asarray(mean, dtype=np.float64), lo, hi)
    out: FloatArray = (hi - m) * (m - lo)
    return out
