"""The numeric part of ``ldpcollect demo``: means of age and hours per week, vs the truth.

Against running aggregators: one mixed collection over the bundled extract of UCI Adult
(:func:`ldp_simulation.datasets.load_adult`): ``age`` and ``hours_per_week`` as bounded
numbers, ``sex`` as a categorical attribute. The extract's records, repeated in file
order, make exactly ``--clients`` records (at least the release minimum of 1,000); one
simulated client per record privatizes and uploads it through the SDK over HTTP
(:func:`ldp_simulation.fleet.deal_records`). Unlike the car part, the last copy may be
partial: the truth is computed from the very records reported, so it stays exact. The
analyst then reads each mean (``GET .../means``) with its standard error, interval and,
where the mechanism releases it, the estimated spread of the values, and the frequencies
of ``sex``; the demo sets them next to the truth, which only it knows.

How the collection spends ε follows ``--budget`` (``sample``: each record reports one of
the three attributes with the whole ε; ``split``: each gets a third). Each number's
mechanism is chosen by the ε it is allotted (:func:`choose_mechanism`).

:meth:`NumericDemo.to_json` is the ``"numeric"`` block of ``demo --json``:
``{"collection", "dataset", "data_citation", "n_records", "n_reports", "epsilon",
"budget", "confidence", "means": {attribute: {...}}, "frequencies": {"sex": {...}},
"seconds"}``; the keys of one mean are listed at :meth:`NumericDemo.mean_json`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ldp_client import LDPClient
from ldp_shared.accountant import allotted_epsilons
from ldp_shared.mechanisms.base import spec_class
from ldp_shared.mechanisms.laplace import worst_variance
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import FrequencyResult, MeanResult
from ldp_simulation.datasets import MixedDataset, load_adult
from ldp_simulation.demo_frequencies import format_frequencies, frequency_json, true_frequencies
from ldp_simulation.fleet import ANALYSIS_TIMEOUT, DemoOptions, replicate, report_records
from ldp_simulation.progress import Progress

NUMERIC_COLLECTION = "adult-demo"
MIN_REPORTS = 1000  # the collection's release minimum
SEED_OFFSET = 2_000_003  # these clients' noise differs from the other parts'

# The numeric mechanisms the demo picks from: Hybrid and Piecewise (Wang et al., ICDE
# 2019), whose worst-case variance per report (rounding included) follows exactly from
# the lattice channel the device samples. Duchi et al.'s and the discrete Laplace are
# left out because at no ε do they beat Hybrid (docs/mechanisms.md, worst case on the
# [−1, 1] scale): Duchi's C² is Hybrid's at small ε and above it from there on (4.68 vs
# 4.30 at ε = 1), and the Laplace's is too (1.48 vs 1.16 at ε = 2, 0.466 vs 0.288 at
# ε = 4), while building its channel tries every grid and takes about a second. The
# demo spends pure ε, so no (ε, δ) mechanism is a candidate.
CANDIDATES = ("hybrid", "piecewise")

# sex has two values, and GRR's variance is below OUE's whenever d < 3e^ε + 2 (Wang et
# al., USENIX Security 2017), which d = 2 meets at every ε.
CATEGORICAL_MECHANISM = "grr"


@lru_cache(maxsize=32)
def worst_case_variance(mechanism: str, epsilon: float) -> float:
    """``max_t Var(v_y | t)`` of a lattice mechanism at ``epsilon`` (``t`` scale, [−1, 1])."""
    spec = spec_class(mechanism).model_validate(
        {"name": "probe", "mechanism": mechanism, "lo": -1.0, "hi": 1.0}
    )
    randomizer = spec.randomizer(epsilon)
    if not isinstance(randomizer, LatticeRandomizer):
        raise TypeError(f"{mechanism!r} is not a lattice mechanism")
    return worst_variance(randomizer.channel)


def choose_mechanism(epsilon: float) -> tuple[str, dict[str, float]]:
    """The candidate with the smallest worst-case variance per report at ``epsilon``, and
    every candidate's. Worst case, not the variance at this data's values: the choice is
    made before any value is seen, and holds whatever the values turn out to be. (Per the
    table in docs/mechanisms.md: Hybrid up to ε ≈ 2, Piecewise above.)"""
    worst = {name: worst_case_variance(name, epsilon) for name in CANDIDATES}
    return min(worst, key=worst.__getitem__), worst


def numeric_spec(
    dataset: MixedDataset, options: DemoOptions
) -> tuple[CollectionSpec, dict[str, dict[str, float]]]:
    """The mixed collection, and per number the candidates' worst-case variances.

    The bounds are the data set's documented ranges (:data:`~ldp_simulation.datasets.
    ADULT_BOUNDS`), never the observed minimum and maximum, which would leak through the
    public config. Each number's mechanism is chosen at the ε the accountant allots it.
    """

    def spec_with(mechanisms: dict[str, str]) -> CollectionSpec:
        numbers = [
            {"name": name, "mechanism": mechanisms[name], "lo": lo, "hi": hi}
            for name, (lo, hi) in dataset.bounds.items()
        ]
        categories = [
            {"name": name, "domain": domain, "mechanism": CATEGORICAL_MECHANISM}
            for name, domain in dataset.domains.items()
        ]
        return CollectionSpec.model_validate(
            {
                "name": NUMERIC_COLLECTION,
                "description": f"ldpcollect demo, means: {dataset.citation}",
                "epsilon": options.epsilon,
                "budget": options.budget,
                "attributes": numbers + categories,
                "release": {"min_reports": MIN_REPORTS},
            }
        )

    draft = spec_with({name: CANDIDATES[0] for name in dataset.bounds})  # ε shares only
    shares = dict(zip([a.name for a in draft.attributes], allotted_epsilons(draft), strict=True))
    worst: dict[str, dict[str, float]] = {}
    chosen: dict[str, str] = {}
    for name in dataset.bounds:
        share = shares[name]
        assert share is not None  # every numeric attribute takes a share of ε
        chosen[name], worst[name] = choose_mechanism(share)
    return spec_with(chosen), worst


@dataclass(frozen=True)
class NumericDemo:
    """The released means and frequencies next to the truth of the reported records."""

    dataset: MixedDataset
    budget: str
    confidence: float
    means: dict[str, MeanResult]
    true_means: dict[str, float]
    true_variances: dict[str, float]
    worst_case: dict[str, dict[str, float]]
    frequencies: dict[str, FrequencyResult]
    true_frequencies: dict[str, list[float]]
    seconds: float

    def mean_json(self, name: str) -> dict[str, Any]:
        """One mean: ``mechanism``, ``epsilon`` (this attribute's, per record), ``lo``,
        ``hi``, ``n_reports`` (the reports that carried it), ``true_mean`` (of the values
        clipped to the bounds), ``mean``, ``stderr``, ``ci_low``, ``ci_high``, ``covers``,
        ``true_variance`` and ``variance`` (the released spread of the clipped values,
        ``null`` when the mechanism does not release it), ``worst_case_variance`` (per
        candidate mechanism, per report on the [−1, 1] scale, at this ε)."""
        r = self.means[name]
        true = self.true_means[name]
        return {
            "mechanism": r.mechanism,
            "epsilon": r.epsilon,
            "lo": r.lo,
            "hi": r.hi,
            "n_reports": r.attribute_reports if r.attribute_reports is not None else r.n_reports,
            "true_mean": true,
            "mean": r.mean,
            "stderr": r.stderr,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "covers": r.ci_low <= true <= r.ci_high,
            "true_variance": self.true_variances[name],
            "variance": r.variance,
            "worst_case_variance": self.worst_case[name],
        }

    def to_json(self) -> dict[str, Any]:
        """The ``"numeric"`` block of ``ldpcollect demo --json``."""
        first = next(iter(self.means.values()))
        return {
            "collection": NUMERIC_COLLECTION,
            "dataset": self.dataset.name,
            "data_citation": self.dataset.citation,
            "n_records": len(self.dataset.records),
            "n_reports": first.n_reports,
            "epsilon": first.record_epsilon,
            "budget": self.budget,
            "confidence": self.confidence,
            "means": {name: self.mean_json(name) for name in self.means},
            "frequencies": {
                name: frequency_json(r, self.true_frequencies[name])
                for name, r in self.frequencies.items()
            },
            "seconds": self.seconds,
        }


def column(records: Sequence[dict[str, Any]], name: str) -> np.ndarray[Any, Any]:
    return np.array([r[name] for r in records])


def simulate_numeric(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Progress | None = None,
) -> NumericDemo:
    """Report ``--clients`` records of the Adult extract, one client each; read the means."""
    started = time.perf_counter()
    dataset = load_adult()
    n = max(options.clients, MIN_REPORTS)
    records = replicate(dataset.records, n)[:n]
    spec, worst = numeric_spec(dataset, options)
    report_records(base_urls, admin_token, spec, records, options, progress, SEED_OFFSET)
    with LDPClient(base_urls[0], token=analyst_token, timeout=ANALYSIS_TIMEOUT) as analyst:
        means = {
            name: analyst.means(NUMERIC_COLLECTION, name, confidence=options.confidence)
            for name in dataset.bounds
        }
        frequencies = {
            name: analyst.frequencies(NUMERIC_COLLECTION, name, confidence=options.confidence)
            for name in dataset.domains
        }
    clipped = {
        name: np.clip(column(records, name).astype(np.float64), lo, hi)
        for name, (lo, hi) in dataset.bounds.items()
    }
    return NumericDemo(
        dataset=dataset,
        budget=options.budget,
        confidence=options.confidence,
        means=means,
        true_means={name: float(values.mean()) for name, values in clipped.items()},
        true_variances={name: float(values.var()) for name, values in clipped.items()},
        worst_case=worst,
        frequencies=frequencies,
        true_frequencies=true_frequencies(dataset.domains, records),
        seconds=time.perf_counter() - started,
    )


def _choice(mean: dict[str, Any]) -> str:
    worst = ", ".join(f"{k} {v:.3g}" for k, v in mean["worst_case_variance"].items())
    return (
        f"  mechanism: {mean['mechanism']}, the least worst-case variance per report at "
        f"ε = {mean['epsilon']:.3g} ({worst}; on the [−1, 1] scale)"
    )


def format_numeric(block: dict[str, Any]) -> list[str]:
    """The demo table's numeric lines, from the ``"numeric"`` JSON block."""
    level = f"{block['confidence']:.0%}"
    n, size = block["n_reports"], block["n_records"]
    which = f"the first {n:,} of {size:,}" if n <= size else f"the {size:,} repeated in order"
    lines = [
        f"means of {' and '.join(block['means'])}, mixed with {' and '.join(block['frequencies'])} "
        f"({n:,} clients, one per record of {which}; "
        f"budget '{block['budget']}', ε = {block['epsilon']:.3g} per record)",
        f"data: {block['data_citation']}",
        f"  {'attribute':<15} {'bounds':<9} {'mechanism':<9} {'ε':>4} {'reports':>7} "
        f"{'true':>7} {'mean':>7} {'stderr':>6}  {level + ' interval':<16} {'covers':<6} "
        f"{'true sd':>7} {'est. sd':>7}",
    ]
    for name, m in block["means"].items():
        bounds = f"[{m['lo']:g}, {m['hi']:g}]"
        interval = f"[{m['ci_low']:.2f}, {m['ci_high']:.2f}]"
        spread = f"{np.sqrt(m['variance']):7.2f}" if m["variance"] is not None else f"{'–':>7}"
        lines.append(
            f"  {name:<15} {bounds:<9} {m['mechanism']:<9} {m['epsilon']:4.3g} "
            f"{m['n_reports']:7,} {m['true_mean']:7.2f} {m['mean']:7.2f} {m['stderr']:6.3f}  "
            f"{interval:<16} {'yes' if m['covers'] else 'NO':<6} "
            f"{np.sqrt(m['true_variance']):7.2f} {spread}"
        )
    choices = dict.fromkeys(_choice(m) for m in block["means"].values())  # once each
    lines += [*choices, ""]
    return lines + format_frequencies(block["frequencies"], block["confidence"])
