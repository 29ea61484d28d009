"""A histogram of a number over administrator-chosen bins (``"mechanism": "histogram"``).

The spec names the bin ``edges`` ``e_0 < e_1 < … < e_B`` (finite, ``B ≥ 2`` bins, at most
:data:`MAX_BINS`). On the device a value must be a finite number; it is clipped into
``[lo, hi] = [e_0, e_B]`` and replaced by the index of its bin, ``[e_k, e_{k+1})`` (the
last bin also holds ``hi``). Only that index is perturbed, by a categorical channel over
the ``B`` bins; nothing else of the value leaves the device.

**The channel** (spec field ``channel``): ``"grr"`` (generalised randomized response,
:mod:`~ldp_shared.mechanisms.grr`), ``"oue"`` (optimised unary encoding,
:mod:`~ldp_shared.mechanisms.unary`), or ``"auto"`` (the default), which picks, from the
number of bins and the ε allotted, the one whose estimated CDF has the smaller worst-case
variance at the uniform distribution over the bins, since the CDF is what the median and
the quantiles are read from. With ``g = k/B`` the CDF at an inner edge and ``a = e^ε``,
per report (values drawn i.i.d.): GRR ``g(1−g)·((a + B − 1)/(a − 1))²`` (its report
frequencies are multinomial), OUE, whose CDF is normalised by the estimate's total
(:func:`ldp_shared.analyses.ordinal.normalised`), ``g(1−g)·(((a + 1)² + 4(B − 1)a)/(a −
1)² + 1)``. So GRR wins exactly when ``B − 1 < a + √(2a² + 2)``, i.e. up to about
``2.4·e^ε`` bins: 7 bins at ε = 1, 18 at ε = 2, 132 at ε = 4. (For single frequencies
Wang et al., USENIX Security 2017, find GRR better while ``B < 3e^ε + 2``.)
The ordinal exponential mechanism is not offered: its channel spreads each report over
neighbouring bins, which inverts badly; its worst CDF variance is 9 to 62 times GRR's at
8 to 16 bins and ε = 1 to 4. The Square Wave mechanism (Li et al., SIGMOD 2020) would
report the value itself rather than its bin, but its EM-smoothed estimate has no
covariance to build intervals on; it is not implemented.

Privacy, segment, statistics and the unbiased estimator are the channel's own, unchanged
(its randomizer publishes ``p``, ``q`` and ``channel``). The bins are ordered, so the
frequency endpoint adds a CDF, mean rank and median, and the quantile endpoint
interpolates quantiles within the bins (:mod:`ldp_shared.analyses.quantiles`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.base import AttributeSpec, PlannedVariance, Randomizer, register
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.numeric import finite_numbers
from ldp_shared.mechanisms.unary import UnaryEncoding

MAX_BINS = 1024
"""Most bins of a histogram: the ordinal summaries use a dense ``B × B`` covariance."""

ChannelName = Literal["auto", "grr", "oue"]
PLANNED_BINS = 16
"""Equal bins the planner gives a histogram of ``[lo, hi]`` (its query names none)."""


def grr_is_better(bins: int, epsilon: float) -> bool:
    """Whether GRR's worst CDF variance is below OUE's: ``B − 1 < e^ε + √(2e^{2ε} + 2)``."""
    if epsilon > 700.0:  # e^ε overflows; GRR wins for any number of bins long before
        return True
    a = math.exp(epsilon)
    return bins - 1 < a + math.sqrt(2.0 * a * a + 2.0)


def _number(x: float) -> str:
    """Shortest round-trip text of an edge, without a trailing ``.0``."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def bin_labels(edges: Sequence[float]) -> list[str]:
    """One label per bin: ``[e_k, e_{k+1})``, the last one closed."""
    text = [_number(e) for e in edges]
    labels = [f"[{a}, {b})" for a, b in itertools.pairwise(text)]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


def bin_indices(
    name: str, column: Sequence[Any] | NDArray[Any], edges: Sequence[float]
) -> NDArray[np.int64]:
    """Each value's bin index among ``edges``, after clipping it into ``[e_0, e_B]``."""
    x = np.clip(finite_numbers(name, column), edges[0], edges[-1])
    inner = np.asarray(edges[1:-1], dtype=np.float64)
    return np.searchsorted(inner, x, side="right").astype(np.int64)


@register
class HistogramSpec(AttributeSpec):
    """A number reported as its bin among administrator-chosen edges."""

    mechanism: Literal["histogram"]
    edges: list[float] = Field(
        min_length=3,
        max_length=MAX_BINS + 1,
        description="bin edges e_0 < … < e_B (B ≥ 2 bins); values are clipped to [e_0, e_B]",
        json_schema_extra={"uniqueItems": True},  # increasing, so distinct (checked below)
    )
    channel: ChannelName = Field(
        default="auto", description="the categorical channel of the bin: auto, grr or oue"
    )

    @model_validator(mode="after")
    def _check_edges(self) -> HistogramSpec:
        edges = np.asarray(self.edges, dtype=np.float64)
        if not np.all(np.isfinite(edges)):
            raise ValueError(f"attribute {self.name!r}: bin edges must be finite numbers")
        with np.errstate(over="ignore"):
            widths = np.diff(edges)
        if not np.all(widths > 0.0):
            raise ValueError(
                f"attribute {self.name!r}: bin edges must be strictly increasing, got"
                f" {[_number(e) for e in self.edges]}"
            )
        if not np.all(np.isfinite(widths)):
            raise ValueError(
                f"attribute {self.name!r}: every bin's width must be a finite number, got"
                f" edges {[_number(e) for e in self.edges]}"
            )
        return self

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned for numbers in ``[lo, hi]`` over :data:`PLANNED_BINS` equal bins (the
        query names no bins), the channel ``auto``; what is planned is one bin's
        frequency (:meth:`HistogramGRR.planned_variance`)."""
        if lo is None or hi is None or domain_size is not None:
            return []
        edges = [float(e) for e in np.linspace(lo, hi, PLANNED_BINS + 1)]
        try:
            return [cls(name="planned", mechanism="histogram", edges=edges)]
        except ValueError:  # bounds too close for distinct edges
            return []

    @property
    def lo(self) -> float:
        return self.edges[0]

    @property
    def hi(self) -> float:
        return self.edges[-1]

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    @property
    def values(self) -> list[str]:
        return bin_labels(self.edges)

    @property
    def is_ordered(self) -> bool:
        return True

    @property
    def bin_edges(self) -> list[float]:
        return list(self.edges)

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        return bin_indices(self.name, column, self.edges)

    def channel_for(self, epsilon: float) -> Literal["grr", "oue"]:
        """The channel this spec uses at ``epsilon`` (``auto`` resolved)."""
        if self.channel != "auto":
            return self.channel
        return "grr" if grr_is_better(self.bins, epsilon) else "oue"

    def randomizer(self, epsilon: float | None, classes: int = 1) -> Randomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: a histogram needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: a histogram cannot join a label")
        if self.channel_for(epsilon) == "grr":
            return HistogramGRR(d=self.bins, epsilon=epsilon)
        return HistogramOUE(d=self.bins, epsilon=epsilon, variant="oue")


@dataclass(frozen=True)
class HistogramGRR(GeneralizedRandomizedResponse):
    """GRR over the bins; it publishes its channel's name too."""

    def published(self) -> dict[str, Any]:
        return {**super().published(), "channel": "grr"}

    def planned_variance(self) -> PlannedVariance:
        """The frequency of a bin nobody's value falls in: GRR's ``q(1 − q)/(n (p − q)²)``
        (Wang et al., USENIX Security 2017, §4), over the bins."""
        return replace(super().planned_variance(), parameters={"bins": self.d})


@dataclass(frozen=True)
class HistogramOUE(UnaryEncoding):
    """OUE over the bins; it publishes its channel's name too."""

    def published(self) -> dict[str, Any]:
        return {**super().published(), "channel": "oue"}

    def planned_variance(self) -> PlannedVariance:
        """The frequency of a bin nobody's value falls in: OUE's ``q(1 − q)/(n (p − q)²)``
        ``= 4e^ε/(n (e^ε − 1)²)`` (Wang et al., USENIX Security 2017, §4), over the bins."""
        return replace(super().planned_variance(), parameters={"bins": self.d})
