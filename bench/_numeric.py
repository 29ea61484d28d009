"""What the numeric benchmarks share: the registered numeric mechanisms, their configs, the
exact variance of one report, and seeded runs of the released mean (library path).

The numeric mechanisms are found in the registry (spec classes released as a ``"mean"``),
so a mechanism registered later (``gaussian``) joins every numeric benchmark without an
edit here. A spec field a benchmark cannot choose by itself is filled from
:data:`EXTRA_PARAMETERS` (``delta = 1e-5`` for an (ε, δ) mechanism); a mechanism with
another required field is skipped and named in ``mechanisms_skipped``.
"""

from __future__ import annotations

import typing
from typing import Any

import numpy as np

from ldp_aggregator.means import mean_result
from ldp_aggregator.storage.stats import Stats
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.mechanisms import DuchiRandomizer, Randomizer
from ldp_shared.mechanisms.base import registered_classes
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

EXTRA_PARAMETERS: dict[str, Any] = {"delta": 1e-5}
"""Spec fields the benchmarks supply when a numeric mechanism has them."""
BASE_FIELDS = {"name", "mechanism", "weight", "lo", "hi"}
WORST_CASE_GRID = 4097
"""Values of ``t`` on which the worst case of a report's variance is searched."""


def numeric_mechanisms() -> tuple[list[str], dict[str, str]]:
    """The registered numeric mechanisms' names, and the skipped ones with the reason."""
    found: list[str] = []
    skipped: dict[str, str] = {}
    for spec_class in registered_classes():
        if spec_class.released_as != "mean":
            continue
        names = typing.get_args(spec_class.model_fields["mechanism"].annotation)
        unknown = [
            field
            for field, info in spec_class.model_fields.items()
            if info.is_required() and field not in BASE_FIELDS and field not in EXTRA_PARAMETERS
        ]
        for name in names:
            if unknown:
                skipped[name] = f"required spec fields the benchmark cannot choose: {unknown}"
            else:
                found.append(name)
    return sorted(found), skipped


def numeric_attribute(mechanism: str, lo: float, hi: float, name: str = "x") -> dict[str, Any]:
    """One numeric attribute's spec, with :data:`EXTRA_PARAMETERS` where the class has them."""
    from ldp_shared.mechanisms.base import spec_class

    fields = spec_class(mechanism).model_fields
    extra = {key: value for key, value in EXTRA_PARAMETERS.items() if key in fields}
    return {"name": name, "mechanism": mechanism, "lo": lo, "hi": hi, **extra}


def numeric_config(
    mechanism: str,
    epsilon: float,
    lo: float = 0.0,
    hi: float = 1.0,
    min_reports: int = 1,
    name: str = "numeric",
) -> CollectionConfig:
    """A one-attribute collection (``x``) whose attribute spends all of ``epsilon``."""
    return build_config(
        CollectionSpec(
            name=name,
            epsilon=epsilon,
            attributes=[numeric_attribute(mechanism, lo, hi)],
            release={"min_reports": min_reports},
        )
    )


def extra_parameters_used(mechanism: str) -> dict[str, Any]:
    """The :data:`EXTRA_PARAMETERS` given to ``mechanism`` (for the JSON)."""
    spec = numeric_attribute(mechanism, 0.0, 1.0)
    return {key: spec[key] for key in EXTRA_PARAMETERS if key in spec}


def report_variance(randomizer: Randomizer, t: np.ndarray) -> tuple[np.ndarray | None, str]:
    """``Var(answer | t)`` on the ``t`` scale for each value, exactly, and how it is known.

    In order: the randomizer's own ``report_variance(t)``, a lattice channel's
    ``report_variance`` (the quantised channel and its decoder, rounding included), Duchi's
    ``C² − t²``; ``None`` when the benchmark knows no exact formula for the mechanism.
    """
    own = getattr(randomizer, "report_variance", None)
    if callable(own):
        return np.asarray(own(t), dtype=np.float64), "the randomizer's report_variance(t)"
    channel = getattr(randomizer, "channel", None)
    if channel is not None and callable(getattr(channel, "report_variance", None)):
        return (
            np.asarray(channel.report_variance(t), dtype=np.float64),
            "lattice channel: E[q_k | t] - t^2 (quantised channel, decoder, rounding)",
        )
    if isinstance(randomizer, DuchiRandomizer):
        return randomizer.c**2 - np.square(t), "Duchi: C^2 - t^2"
    return None, "no exact formula known to the benchmark"


def worst_case_t(randomizer: Randomizer) -> float | None:
    """The ``t`` in ``[−1, 1]`` (on a grid) of largest report variance."""
    grid = np.linspace(-1.0, 1.0, WORST_CASE_GRID)
    variance, _ = report_variance(randomizer, grid)
    return None if variance is None else float(grid[int(np.argmax(variance))])


def released_means(
    config: Any, values: np.ndarray, runs: int, seed: int
) -> tuple[np.ndarray, list[float]]:
    """The released mean and squared standard error of ``runs`` runs over ``values``
    (client privatisation, server decoding, the aggregator's mean estimator), run ``r``
    seeded with ``seed + r``."""
    privatizer = Privatizer(config)
    attribute = config.attributes[0].name
    means, released = [], []
    for r in range(runs):
        packed = privatizer.privatize_columns({attribute: values}, rng=seeded_rng(seed + r))
        decoded = decode_reports(config, packed)
        stats = Stats(values.size, decoded.sums, decoded.floats)
        result = mean_result(config, stats, attribute)
        means.append(result.mean)
        released.append(result.stderr**2)
    return np.asarray(means), released
