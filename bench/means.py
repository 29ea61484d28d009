"""Accuracy of released means: empirical MSE against each mechanism's exact variance.

For every registered numeric mechanism (``bench/_numeric.py``), ε ∈ {0.5, 1, 2, 4, 8} and
true-value distribution, ``n`` values (default 10,000) are drawn once (seeded) and held
fixed; each of ``runs`` runs (default 200, seeded, no seed shared between settings)
sends them through the library path offline, as a device and the aggregator would, without HTTP:
``Privatizer.privatize_columns`` (clip, scale, perturb, pack) → ``decode_reports`` →
the aggregator's ``means.mean_result`` on those statistics. The truth is the mean of the
clipped values.

The theoretical variance is the **exact** variance of the released mean for that data:
``Var = ((hi − lo)/2)² · Σ_i v(t_i)/n²``, with ``v(t) = Var(answer | t)`` on the ``t``
scale from the mechanism itself (``_numeric.report_variance``: a lattice channel's
``E[q_k | t] − t²`` with its quantised channel, decoder and the rounding to levels;
Duchi's ``C² − t²``). The 95% Monte-Carlo interval of ``MSE/Var`` is
``±1.96·sd(err²)/√runs/Var``; with 200 runs its half-width is about 0.2, so a single
setting lands in the 0.9–1.1 target only about two times in three even when exact (the
JSON gives that expected share, and the ratio pooled over all settings). A mechanism
with neither a lattice channel nor a ``report_variance(t)`` of its own has no exact
variance here: its MSE is reported against the variance it releases
(``ratio_to_released_variance``, given for every setting) and its ``worst`` case is skipped.

Distributions (on ``[0, 100]`` unless named): ``uniform``; ``skewed`` (100·Beta(2, 8));
``bounds`` (half at each bound: the Piecewise mechanism's worst region); ``worst`` (every
value at the mechanism's own worst-case ``t`` at that ε: the midpoint for Duchi); and
``adult_age`` (UCI Adult ages on [17, 90], from ``../shared/data/adult.data`` when present).

The PM/Duchi crossover is in ``_crossover.py`` (part of this benchmark's JSON).
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

from _common import base_parser, emit, log, sized, start_marker
from _crossover import crossover
from _numeric import (
    extra_parameters_used,
    numeric_config,
    numeric_mechanisms,
    released_means,
    report_variance,
    worst_case_t,
)
from accuracy import data_dir
from ldp_shared.mechanisms.numeric import from_unit

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
TARGET = (0.9, 1.1)
LO, HI = 0.0, 100.0
CROSSOVER_N = 200
"""Values per crossover run: the MSE's precision depends on the runs, not on ``n``."""
SEED_STRIDE = 1_000_000
"""Setting ``k`` uses the seeds ``k·SEED_STRIDE + r``: no two settings share a stream."""


def adult_ages() -> np.ndarray | None:
    path = data_dir() / "adult.data"
    if not path.is_file():
        return None
    ages = [int(p[0]) for line in path.read_text().splitlines() if len(p := line.split(",")) == 15]
    return np.asarray(ages, dtype=np.float64)


def distributions(
    n: int, ages: np.ndarray | None
) -> dict[str, tuple[np.ndarray | None, float, float]]:
    """name → (values or None for the per-mechanism worst case, lo, hi), seeded."""
    rng = np.random.default_rng(20240607)
    out: dict[str, tuple[np.ndarray | None, float, float]] = {
        "uniform": (rng.uniform(LO, HI, n), LO, HI),
        "skewed": (HI * rng.beta(2.0, 8.0, n), LO, HI),
        "bounds": (np.where(np.arange(n) % 2 == 0, LO, HI).astype(np.float64), LO, HI),
        "worst": (None, LO, HI),
    }
    if ages is not None:
        out["adult_age"] = (rng.choice(ages, size=n, replace=True), 17.0, 90.0)
    return out


def run_setting(
    mechanism: str,
    epsilon: float,
    values: np.ndarray | None,
    bounds: tuple[float, float],
    n: int,
    runs: int,
    seed: int,
) -> dict[str, Any]:
    """``runs`` released means of ``n`` fixed values (``None``: all at the worst case)."""
    lo, hi = bounds
    config = numeric_config(mechanism, epsilon, lo, hi, name="means")
    randomizer = config.randomizers[0]
    spec = config.spec.attributes[0]
    worst = None
    if values is None:  # every value at the mechanism's worst-case t
        worst = worst_case_t(randomizer)
        if worst is None:
            return {"skipped": "no exact variance formula: the worst case is unknown"}
        values = np.full(n, float(from_unit(np.array([worst]), lo, hi)[0]))
    t = spec.encode(values)
    truth = float(from_unit(np.array([t.mean()]), lo, hi)[0])
    v, source = report_variance(randomizer, t)
    half = (hi - lo) / 2.0
    exact = None if v is None else half * half * float(v.sum()) / (n * n)
    started = time.perf_counter()
    means, released = released_means(config, values, runs, seed)
    errors = list((means - truth) ** 2)
    mse = statistics.fmean(errors)
    out: dict[str, Any] = {
        "n": n,
        "runs": runs,
        "worst_case_t": worst,
        "true_mean": truth,
        "mse": mse,
        "exact_variance": exact,
        "exact_variance_source": source,
        "mean_released_stderr_squared": statistics.fmean(released),
        # without an exact formula, the MSE against the variance the mechanism releases
        "ratio_to_released_variance": mse / statistics.fmean(released),
        "seconds": time.perf_counter() - started,
        "exact_epsilon": config.privacy.attribute("x").epsilon,
    }
    if exact is not None:
        half_width = 1.96 * statistics.stdev(errors) / math.sqrt(runs) / exact
        ratio = mse / exact
        out.update(
            {
                "ratio": ratio,
                "ratio_ci95": [ratio - half_width, ratio + half_width],
                "ratio_monte_carlo_se": half_width / 1.96,
                "within_target": TARGET[0] <= ratio <= TARGET[1],
                "ci_contains_1": ratio - half_width <= 1.0 <= ratio + half_width,
                "released_stderr2_over_exact": out["mean_released_stderr_squared"] / exact,
            }
        )
    return out


def expected_share_within(runs: int) -> float:
    """P(0.9 ≤ χ²_R/R ≤ 1.1): the share of exact settings with normal errors expected in the
    target after ``runs`` runs (Wilson–Hilferty approximation)."""
    s = math.sqrt(2.0 / (9.0 * runs))

    def cdf(ratio: float) -> float:
        z = (ratio ** (1.0 / 3.0) - (1.0 - s * s)) / s
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))

    return cdf(TARGET[1]) - cdf(TARGET[0])


def summarise(rows: list[dict[str, Any]], runs: int) -> dict[str, Any]:
    rated = [r for r in rows if r.get("ratio") is not None]
    if not rated:
        return {"settings": 0}
    ratios = [r["ratio"] for r in rated]
    se = math.sqrt(sum(r["ratio_monte_carlo_se"] ** 2 for r in rated)) / len(rated)
    return {
        "settings": len(rated),
        "within_target": sum(r["within_target"] for r in rated),
        "expected_within_target_if_exact": expected_share_within(runs) * len(rated),
        "ci95_contains_1": sum(r["ci_contains_1"] for r in rated),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratio_pooled": statistics.fmean(ratios),
        "ratio_pooled_se": se,
        "pooled_within_target": TARGET[0] <= statistics.fmean(ratios) <= TARGET[1],
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="values per run (10,000)")
    parser.add_argument("--runs", type=int, default=None, help="runs per setting (200)")
    parser.add_argument("--crossover-runs", type=int, default=None, help="(10,000)")
    args = parser.parse_args()
    n = args.n or sized(10_000, 2_000, 300, args)
    runs = args.runs or sized(200, 20, 3, args)
    crossover_runs = args.crossover_runs or sized(10_000, 200, 10, args)
    started = start_marker()
    mechanisms, skipped = numeric_mechanisms()
    ages = adult_ages()
    missing = (
        {}
        if ages is not None
        else {"adult": f"{data_dir() / 'adult.data'} is absent: adult_age skipped"}
    )
    rows: list[dict[str, Any]] = []
    for mechanism in mechanisms:
        for epsilon in EPSILONS[:1] if args.tiny else EPSILONS:
            for name, (values, lo, hi) in distributions(n, ages).items():
                log(f"[means] {mechanism} ε={epsilon:g} {name}")
                seed = SEED_STRIDE * len(rows)  # independent runs in every setting
                row = run_setting(mechanism, epsilon, values, (lo, hi), n, runs, seed)
                rows.append(
                    {
                        "mechanism": mechanism,
                        "epsilon": epsilon,
                        "distribution": name,
                        "lo": lo,
                        "hi": hi,
                        **row,
                    }
                )
    by_mechanism = {
        m: summarise([r for r in rows if r["mechanism"] == m], runs) for m in mechanisms
    }
    log("[means] PM/Duchi crossover")
    result = {
        **started,
        "description": (
            "MSE of the released mean over seeded runs / the exact variance of the released "
            "mean for that data, per numeric mechanism, ε and distribution; library path "
            "offline (privatize_columns -> decode_reports -> ldp_aggregator.means.mean_result)."
        ),
        "parameters": {
            "n": n,
            "runs": runs,
            "epsilons": list(EPSILONS),
            "target": list(TARGET),
            "extra_parameters": {m: extra_parameters_used(m) for m in mechanisms},
        },
        "mechanisms": mechanisms,
        "mechanisms_skipped": skipped,
        "datasets_missing": missing,
        "settings": rows,
        "summary": {"all": summarise(rows, runs), "by_mechanism": by_mechanism},
        "crossover": crossover(crossover_runs, CROSSOVER_N),
    }
    emit("means", result, args.quick, args.output)


if __name__ == "__main__":
    main()
