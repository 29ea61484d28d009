"""The feature layout of a logistic regression: what a record becomes on the device.

A layout lists numeric features with public bounds and categorical features with their
domains, and the label with its two values (``positive``, class 1, and ``negative``,
class 0: a label that is neither is refused). A record becomes

    x = (1, t_1 … t_p, onehot(c_1) … onehot(c_q)) ∈ R^d,  d = 1 + p + Σ_j |domain_j|,

an intercept, each number clipped to its bounds and scaled to ``t ∈ [−1, 1]`` (as the
numeric mechanisms do: :func:`ldp_shared.mechanisms.numeric.to_unit`) and each category
one-hot. So every coordinate lies in ``[−1, 1]`` and the norms of ``x`` are bounded by the
layout alone: ``‖x‖_∞ <= 1``, ``‖x‖₁ <= 1 + p + q``, ``‖x‖₂² <= 1 + p + q``. The gradient
of the logistic loss, ``(σ(w·x) − y)·x``, has ``|σ − y| < 1``, so the same bounds hold for
it: the clipping bounds of the gradient mechanisms follow from the layout, with no data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, model_validator

from ldp_shared.errors import InvalidRecordError
from ldp_shared.identifiers import AttributeName, DomainValue
from ldp_shared.kernel import FloatArray, bounds_problem
from ldp_shared.mechanisms.categorical import domain_indices
from ldp_shared.mechanisms.numeric import in_range, to_unit
from ldp_shared.request_model import RequestModel

Norm = Literal["linf", "l1", "l2"]


class NumericFeature(RequestModel):
    """A number with public bounds: clipped into them and scaled to ``[−1, 1]``."""

    name: AttributeName
    lo: float
    hi: float

    @model_validator(mode="after")
    def _check_bounds(self) -> NumericFeature:
        problem = bounds_problem(self.lo, self.hi)
        if problem is not None:
            raise ValueError(f"feature {self.name!r}: {problem}")
        return self


class CategoricalFeature(RequestModel):
    """A value of a finite domain, one-hot encoded."""

    name: AttributeName
    domain: list[DomainValue] = Field(min_length=2)

    @model_validator(mode="after")
    def _check_domain(self) -> CategoricalFeature:
        if len(set(self.domain)) != len(self.domain):
            raise ValueError(f"feature {self.name!r}: duplicate domain values")
        return self


class FeatureLayout(RequestModel):
    """The features of a logistic regression and its binary label."""

    model_config = ConfigDict(
        json_schema_extra={  # at least one feature, numeric or categorical
            "anyOf": [
                {"required": [kind], "properties": {kind: {"minItems": 1}}}
                for kind in ("numeric", "categorical")
            ]
        },
    )

    numeric: list[NumericFeature] = Field(default_factory=list)
    categorical: list[CategoricalFeature] = Field(default_factory=list)
    label: AttributeName
    positive: DomainValue = Field(description="the label value that counts as class 1")
    # Optional here, and left out of the JSON when unset, so that the layout of a job
    # stored before it was required keeps its form and still runs; a new job must give it
    # (ldp_shared.wire.training.check_new_spec).
    negative: DomainValue | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "the label value that counts as class 0, required for a new training job: a"
            " device refuses any label that is neither value. Only a job stored before it"
            " was required lacks it; there every other text counts as class 0 (a label that"
            " is not text, such as 1.0 or true, is refused either way)"
        ),
    )

    @model_validator(mode="after")
    def _check_names(self) -> FeatureLayout:
        names = [f.name for f in self.numeric] + [f.name for f in self.categorical]
        if not names:
            raise ValueError("a layout needs at least one feature")
        if len(set(names)) != len(names) or self.label in names:
            raise ValueError("feature and label names must be distinct")
        if self.negative == self.positive:
            raise ValueError("the positive and negative label values must differ")
        return self

    @property
    def dimension(self) -> int:
        """``d = 1 + p + Σ_j |domain_j|``."""
        return 1 + len(self.numeric) + sum(len(f.domain) for f in self.categorical)

    def coordinate_names(self) -> list[str]:
        """``intercept``, the numeric features, then ``feature=value`` per one-hot cell."""
        names = ["intercept", *(f.name for f in self.numeric)]
        names += [f"{f.name}={v}" for f in self.categorical for v in f.domain]
        return names

    def max_norm(self, norm: Norm) -> float:
        """The largest norm any encoded record (and any gradient) can have."""
        active = 1 + len(self.numeric) + len(self.categorical)
        return {"linf": 1.0, "l1": float(active), "l2": math.sqrt(active)}[norm]

    def encode(self, columns: Mapping[str, Sequence[Any] | NDArray[Any]]) -> FloatArray:
        """The ``n × d`` matrix of encoded records from one column per feature."""
        n = _length(columns, [f.name for f in self.numeric] + [f.name for f in self.categorical])
        x = np.zeros((n, self.dimension), dtype=np.float64)
        x[:, 0] = 1.0
        for j, number in enumerate(self.numeric, start=1):
            values = _finite(number.name, columns[number.name])
            x[:, j] = to_unit(np.clip(values, number.lo, number.hi), number.lo, number.hi)
        offset = 1 + len(self.numeric)
        for category in self.categorical:
            error = f"feature {category.name!r}: value {{bad}} is not in its domain"
            index = domain_indices(category.domain, list(columns[category.name]), error)
            x[np.arange(n), offset + index] = 1.0
            offset += len(category.domain)
        return x

    def labels(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.float64]:
        """1.0 where the label is ``positive``, 0.0 where it is ``negative`` (any other text
        when the layout names no ``negative``).

        :class:`InvalidRecordError` names the first label that is not text (``1.0``,
        ``true``, ``None``) or, with ``negative`` set, is neither value: a wrong label is
        never counted as class 0 without a word.
        """
        texts = np.asarray(column, dtype=object).ravel()
        is_text = np.fromiter((isinstance(v, str) for v in texts), dtype=bool, count=texts.size)
        known = texts == self.positive
        if self.negative is not None:
            known |= texts == self.negative
        else:
            known |= is_text
        bad = np.flatnonzero(~(known & is_text))
        if bad.size:
            raise InvalidRecordError(self._label_problem(texts, int(bad[0])))
        out: NDArray[np.float64] = (texts == self.positive).astype(np.float64)
        return out

    def _label_problem(self, texts: NDArray[Any], at: int) -> str:
        value = texts[at]
        shown = repr(value.item() if isinstance(value, np.generic) else value)
        where = f" (record {at})" if texts.size > 1 else ""
        if self.negative is None:
            return (
                f"label {self.label!r}{where}: {shown} is not text; the layout counts"
                f" {self.positive!r} as class 1 and any other text as class 0"
            )
        return (
            f"label {self.label!r}{where}: {shown} is not one of the layout's values:"
            f" {self.positive!r} (class 1) or {self.negative!r} (class 0)"
        )


def _length(columns: Mapping[str, Any], names: list[str]) -> int:
    missing = [name for name in names if name not in columns]
    if missing:
        raise InvalidRecordError(f"missing feature columns: {', '.join(missing)}")
    lengths = {len(columns[name]) for name in names}
    if len(lengths) != 1:
        raise InvalidRecordError("feature columns must have the same length")
    return lengths.pop()


def _finite(name: str, column: Sequence[Any] | NDArray[Any]) -> FloatArray:
    try:
        values = np.asarray(column, dtype=np.float64)
    except OverflowError:  # an integer beyond a double: name it
        values = np.array([in_range(f"feature {name!r}", v) for v in column])
    except (TypeError, ValueError):
        raise InvalidRecordError(f"feature {name!r}: values must be numbers") from None
    if values.ndim != 1 or not np.isfinite(values).all():
        raise InvalidRecordError(f"feature {name!r}: values must be finite numbers")
    return values
