"""The ε above which the Piecewise mechanism's worst case beats Duchi et al.'s (bench/means.py).

Wang et al. (ICDE 2019, §III-B) compare the worst-case variances per report on the ``t``
scale: the continuous PM's at ``t = ±1``, ``1/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²)``
(their Lemma 1), against Duchi's at ``t = 0``, ``C² = coth²(ε/2)``, and find PM better for
ε above about 1.29. Three versions here:

* ``analytic_continuous``: the root of the two formulas (bisection);
* ``analytic_lattice``: the same with our lattice PM's exact worst case,
  ``max_t Var(v_y | t)`` of its quantised channel (rounding included, on a grid of
  ``t``), against our Duchi's ``C²``;
* ``measured``: on a grid of ε, ``runs`` released means of ``n`` values all at each
  mechanism's own worst-case ``t`` (library path, as in ``means.py``); the log of the
  ratio of the two MSEs is fitted by weighted least squares as a quadratic in ε (the
  lattice PM's curve bends over the grid, so a line would bias the root) and the
  crossover is where it crosses 0 inside the grid, with a 95% bootstrap interval (runs
  resampled). Each point also gives the exact ratio of the two worst cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from _common import log
from _numeric import numeric_config, released_means, report_variance, worst_case_t
from ldp_shared.mechanisms.numeric import from_unit
from ldp_shared.mechanisms.piecewise import piecewise_variance

MEASURED_GRID = (0.9, 1.0, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5)
BOOTSTRAP = 500


def bisect(f: Callable[[float], float], lo: float, hi: float, tolerance: float = 1e-6) -> float:
    """A root of ``f`` between ``lo`` and ``hi`` (signs differ there)."""
    f_lo = f(lo)
    while hi - lo > tolerance:
        mid = (lo + hi) / 2.0
        if (f(mid) > 0) == (f_lo > 0):
            lo, f_lo = mid, f(mid)
        else:
            hi = mid
    return (lo + hi) / 2.0


def duchi_worst(epsilon: float) -> float:
    return 1.0 / math.tanh(epsilon / 2.0) ** 2


def continuous_pm_worst(epsilon: float) -> float:
    return float(piecewise_variance(np.array([1.0]), epsilon)[0])


def lattice_worst(mechanism: str, epsilon: float) -> float:
    randomizer = numeric_config(mechanism, epsilon).randomizers[0]
    variance, _ = report_variance(randomizer, np.linspace(-1.0, 1.0, 4097))
    assert variance is not None
    return float(variance.max())


def measured(runs: int, n: int) -> dict[str, Any]:
    points: list[dict[str, Any]] = []
    errors: dict[tuple[str, float], np.ndarray] = {}
    for epsilon in MEASURED_GRID:
        point: dict[str, Any] = {"epsilon": epsilon}
        for mechanism in ("duchi", "piecewise"):
            log(f"[means] crossover ε={epsilon:g} {mechanism}")
            config = numeric_config(mechanism, epsilon)
            t = worst_case_t(config.randomizers[0])
            assert t is not None
            x = float(from_unit(np.array([t]), 0.0, 1.0)[0])
            seed = 10**9 + 10**6 * len(errors)
            means, _ = released_means(config, np.full(n, x), runs, seed)
            sq = (means - x) ** 2
            errors[(mechanism, epsilon)] = sq
            point[mechanism] = {
                "worst_case_t": t,
                "mse_per_report_t_scale": float(sq.mean()) * 4.0 * n,
                "exact_worst_variance_per_report": lattice_worst(mechanism, epsilon),
            }
        point["ratio_pm_over_duchi"] = float(
            errors[("piecewise", epsilon)].mean() / errors[("duchi", epsilon)].mean()
        )
        point["exact_ratio_pm_over_duchi"] = (
            point["piecewise"]["exact_worst_variance_per_report"]
            / point["duchi"]["exact_worst_variance_per_report"]
        )
        points.append(point)

    def fit(sample: Callable[[np.ndarray], np.ndarray]) -> float | None:
        eps = np.asarray(MEASURED_GRID)
        y, w = [], []
        for e in MEASURED_GRID:
            a, b = sample(errors[("piecewise", e)]), sample(errors[("duchi", e)])
            y.append(math.log(a.mean() / b.mean()))
            w.append(1.0 / (a.var() / a.mean() ** 2 / a.size + b.var() / b.mean() ** 2 / b.size))
        coefficients = np.polyfit(eps, np.asarray(y), 2, w=np.sqrt(np.asarray(w)))
        roots = [
            float(r.real)
            for r in np.roots(coefficients)
            if abs(r.imag) < 1e-12 and eps[0] <= r.real <= eps[-1]
        ]
        return min(roots, key=lambda r: abs(r - float(np.median(eps))), default=None)

    rng = np.random.default_rng(7)
    draws = [fit(lambda a: a[rng.integers(0, a.size, a.size)]) for _ in range(BOOTSTRAP)]
    boot = [b for b in draws if b is not None]
    return {
        "runs_per_point": runs,
        "n": n,
        "points": points,
        "crossover_epsilon": fit(lambda a: a),
        "crossover_ci95_bootstrap": [
            float(np.quantile(boot, 0.025)),
            float(np.quantile(boot, 0.975)),
        ],
        "bootstrap_resamples_without_root_in_grid": BOOTSTRAP - len(boot),
        "method": (
            "weighted least-squares quadratic through log(MSE_PM/MSE_Duchi) over the ε grid, "
            f"its root inside the grid; {BOOTSTRAP} bootstrap resamples of the runs"
        ),
    }


def crossover(runs: int, n: int) -> dict[str, Any]:
    continuous = bisect(lambda e: continuous_pm_worst(e) - duchi_worst(e), 0.5, 3.0)
    lattice = bisect(
        lambda e: lattice_worst("piecewise", e) - lattice_worst("duchi", e), 0.5, 3.0, 1e-4
    )
    return {
        "analytic_continuous": continuous,
        "analytic_continuous_paper": 1.29,
        "analytic_lattice": lattice,
        "worst_case_variances": [
            {
                "epsilon": e,
                "duchi": lattice_worst("duchi", e),
                "piecewise_continuous": continuous_pm_worst(e),
                "piecewise_lattice": lattice_worst("piecewise", e),
            }
            for e in MEASURED_GRID
        ],
        "measured": measured(runs, n),
    }
