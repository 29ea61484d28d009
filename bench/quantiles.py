"""Histogram quantiles (coverage and width of their intervals) and IBU (updates and time).

Quantiles: for each distribution, set of edges, ε ∈ {1, 4} and n ∈ {10⁴, 10⁵}, ``R``
seeded runs draw n values, push them through the histogram's encoding and its (auto)
channel, and release the 10/25/50/75/90 % quantiles with 95 % intervals
(``ldp_shared.analyses.quantiles``). Reported per level: how often the interval covers
the *interpolated* quantile (the estimand: the quantile of the piecewise-linear CDF
through the true CDF at the edges) and the *true* quantile, the mean width, and the root
mean squared error of the estimate against the true quantile. Distributions:

* ``adult-age``: the ages of UCI Adult (``../shared/data/adult.data`` and ``adult.test``,
  48,842 people; skipped when absent), as a continuous age ``a + U[0, 1)``, drawn with
  replacement; edges in 10-year and 5-year bins;
* ``lognormal-income``: ``exp(N(ln 40,000, 0.7²))``, right-skewed, edges 0 … 500,000;
* ``uniform-within-bins``: the Adult-like bin shares with values uniform inside each bin
  (so the interpolated quantile is the true one: a control).

IBU: updates and wall time of the iterative Bayesian update, plain and with SQUAREM,
until the L1 change is ≤ 1e-10 (at most 10,000 updates, the frequency endpoint's
budget), from the statistics of 10⁵ reports of a bell-shaped truth (a discretised
normal, sd d/6) for GRR, OUE (composite likelihood) and the ordinal exponential
mechanism, d ∈ {8, 32, 128, 512}, ε ∈ {1, 2, 4}.

    python bench/quantiles.py [--quick] [--runs R]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker
from ldp_shared.analyses.ibu import bayesian_update
from ldp_shared.analyses.quantiles import binned_quantiles
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.mechanisms import (
    AttributeSpec,
    ExponentialRandomizer,
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
    UnaryEncoding,
)
from ldp_shared.rand import seeded_rng

LEVELS = [0.1, 0.25, 0.5, 0.75, 0.9]
AGE_EDGES = {
    "10-year": [17, 25, 35, 45, 55, 65, 91],
    "5-year": [17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 91],
}
INCOME_EDGES = [0, 10e3, 20e3, 30e3, 40e3, 50e3, 60e3, 80e3, 100e3, 150e3, 200e3, 500e3]
MU, SIGMA = math.log(40_000.0), 0.7


class Source:
    """A distribution to draw from, with its CDF (for the targets)."""

    def __init__(self, draw: Callable[[np.random.Generator, int], np.ndarray], cdf: Any) -> None:
        self.draw, self.cdf = draw, cdf

    def quantile(self, q: float, lo: float, hi: float) -> float:
        a, b = lo, hi
        for _ in range(200):
            mid = (a + b) / 2.0
            a, b = (mid, b) if self.cdf(mid) < q else (a, mid)
        return (a + b) / 2.0

    def interpolated(self, q: float, edges: list[float]) -> float:
        at_edges = np.array([self.cdf(e) for e in edges])
        at_edges[0], at_edges[-1] = 0.0, 1.0  # values are clipped into [lo, hi]
        return float(np.interp(q, at_edges, edges))


def adult_ages() -> np.ndarray | None:
    ages = []
    for name in ("adult.data", "adult.test"):
        path = DATA_DIR / name
        if not path.exists():
            return None
        for line in path.read_text(encoding="ascii").splitlines():
            fields = line.split(",")
            if len(fields) > 10 and fields[0].strip().isdigit():
                ages.append(int(fields[0]))
    return np.asarray(ages, dtype=np.float64)


def sources() -> dict[str, tuple[Source, dict[str, list[float]]]]:
    out: dict[str, tuple[Source, dict[str, list[float]]]] = {}
    ages = adult_ages()
    if ages is None:
        log("UCI Adult not found: adult-age skipped")
    else:
        grid = np.arange(ages.min(), ages.max() + 2.0)
        cdf_grid = np.concatenate([[0.0], np.cumsum(np.histogram(ages, bins=grid)[0]) / ages.size])
        adult = Source(
            lambda gen, n: gen.choice(ages, size=n) + gen.random(n),
            lambda x: float(np.interp(x, grid, cdf_grid)),
        )
        out["adult-age"] = (adult, AGE_EDGES)
        edges = np.asarray(AGE_EDGES["10-year"], dtype=np.float64)
        shares = np.diff([adult.cdf(e) for e in edges])

        def within(gen: np.random.Generator, n: int) -> np.ndarray:
            bins = gen.choice(shares.size, size=n, p=shares / shares.sum())
            return edges[bins] + gen.random(n) * np.diff(edges)[bins]

        at_edges = np.concatenate([[0.0], np.cumsum(shares / shares.sum())])
        control = Source(within, lambda x: float(np.interp(x, edges, at_edges)))
        out["uniform-within-bins"] = (control, {"10-year": AGE_EDGES["10-year"]})
    income = Source(
        lambda gen, n: np.exp(gen.normal(MU, SIGMA, n)),
        lambda x: NormalDist(MU, SIGMA).cdf(math.log(x)) if x > 0 else 0.0,
    )
    out["lognormal-income"] = (income, {"11-bins": INCOME_EDGES})
    return out


def quantile_runs(
    source: Source, edges: list[float], eps: float, n: int, runs: int
) -> dict[str, Any]:
    spec = AttributeSpec.model_validate({"name": "x", "mechanism": "histogram", "edges": edges})
    randomizer = spec.randomizer(eps)
    gen = seeded_rng(int(eps * 1000) + n + len(edges))
    true = np.array([source.quantile(q, edges[0], edges[-1]) for q in LEVELS])
    target = np.array([source.interpolated(q, edges) for q in LEVELS])
    covers_target, covers_true, widths, errors = [], [], [], []
    failed = 0
    for _ in range(runs):
        stats = randomizer.accumulate(randomizer.perturb(spec.encode(source.draw(gen, n)), gen))
        estimate = randomizer.estimate_stats(stats, n, 0.95).estimate
        covariance = randomizer.frequency_covariance(stats, n)
        try:
            found = binned_quantiles(edges, estimate, covariance, LEVELS, 0.95)
        except InsufficientReportsError:
            failed += 1
            continue
        low = np.array([r.ci_low for r in found])
        high = np.array([r.ci_high for r in found])
        value = np.array([r.value for r in found])
        covers_target.append((low <= target) & (target <= high))
        covers_true.append((low <= true) & (true <= high))
        widths.append(high - low)
        errors.append(value - true)
    return {
        "epsilon": eps,
        "n": n,
        "channel": randomizer.published()["channel"],
        "bins": len(edges) - 1,
        "runs": runs,
        "runs_without_estimate": failed,
        "levels": LEVELS,
        "true_quantile": true,
        "interpolated_quantile": target,
        "coverage_of_interpolated": np.mean(covers_target, axis=0),
        "coverage_of_true": np.mean(covers_true, axis=0),
        "mean_width": np.mean(widths, axis=0),
        "rmse_vs_true": np.sqrt(np.mean(np.square(errors), axis=0)),
    }


def _bell(d: int) -> np.ndarray:
    x = np.arange(d) - (d - 1) / 2.0
    weights = np.exp(-0.5 * (x / (d / 6.0)) ** 2)
    return weights / weights.sum()


def ibu_runs(sizes: list[int], epsilons: list[float], n: int) -> list[dict[str, Any]]:
    rows = []
    for d in sizes:
        truth = _bell(d)
        for eps in epsilons:
            mechanisms: dict[str, Any] = {
                "grr": GeneralizedRandomizedResponse(d, eps),
                "oue": OptimizedUnaryEncoding(d, eps),
                "exponential-ordinal": ExponentialRandomizer(d, eps, "ordinal"),
            }
            for name, mech in mechanisms.items():
                gen = seeded_rng(d * 100 + int(eps * 10))
                if isinstance(mech, UnaryEncoding):
                    per_value = gen.multinomial(n, truth)
                    ones = gen.binomial(per_value, mech.p) + gen.binomial(n - per_value, mech.q)
                    stats = {"counts": ones.astype(np.float64)}
                else:
                    stats = {"counts": gen.multinomial(n, mech.channel_matrix() @ truth) * 1.0}
                channel = mech.report_channel(stats, n)
                row: dict[str, Any] = {"d": d, "epsilon": eps, "mechanism": name}
                for mode, accelerate in (("plain", False), ("squarem", True)):
                    start = time.perf_counter()
                    fit = bayesian_update(channel, accelerate=accelerate)
                    row[mode] = {
                        "updates": fit.iterations,
                        "converged": fit.converged,
                        "seconds": time.perf_counter() - start,
                        "l1_error": float(np.abs(fit.estimate - truth).sum()),
                    }
                plain, fast = row["plain"]["updates"], row["squarem"]["updates"]
                log(f"ibu d={d} ε={eps} {name}: {plain} / {fast} updates")
                rows.append(row)
    return rows


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--runs", type=int, default=200, help="runs per setting")
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    runs = sized(args.runs, 20, 2, args)
    sizes = sized([10_000, 100_000], [10_000], [1_000], args)
    quantiles = []
    for name, (source, edge_sets) in sources().items():
        for label, edges in edge_sets.items():
            for eps in (1.0, 4.0):
                for n in sizes:
                    log(f"quantiles {name} {label} ε={eps} n={n}")
                    row = quantile_runs(source, edges, eps, n, runs)
                    quantiles.append({"distribution": name, "edges": label, **row})
    result["quantiles"] = quantiles
    bins = sized([8, 32, 128, 512], [8, 32], [8], args)
    result["ibu"] = ibu_runs(bins, [1.0, 2.0, 4.0], sized(100_000, 100_000, 2_000, args))
    emit("quantiles", result, args.quick, args.output)


if __name__ == "__main__":
    main()
