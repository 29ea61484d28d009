"""The central-DP peers of ``bench/logistic.py``: the coursework's noisy-gradient recipe
(re-implemented here from its formulas only) and diffprivlib's ``LogisticRegression``.

**The recipe** (a trusted curator holds all ``m`` records). Every row ``x`` (intercept
included) is scaled to unit L1 norm for Laplace noise, unit L2 norm for Gaussian noise, so
each record's gradient ``(σ(w·x) − y)·x`` has norm below 1 and the mean gradient over the
``m`` records changes by at most ``Δ = 2/m`` when one record is replaced. Full-batch
gradient descent, ``T`` iterations, ``w ← w − α(∇L(w) + λw + noise)`` with

* Laplace: every coordinate ``Lap(Δ/ε_step)``;
* Gaussian: every coordinate ``N(0, σ²)``, ``σ² = 2Δ² ln(1.25/δ_step)/ε_step²`` (the
  classical calibration, proven for ``ε_step < 1`` only; Dwork and Roth 2014, Thm A.1).

**Its ε is per iteration.** Each iteration reads every record, so ``T`` iterations are a
``T``-fold composition; the recipe's ε is the total only when ``T = 1``. Compared here at
equal **total** (ε, δ):

* ``central-laplace``: basic composition, ``ε_step = ε/T`` (pure ε-DP composes exactly so);
* ``central-gaussian-basic``: the recipe's formula at ``ε_step = ε/T``, ``δ_step = δ/T``
  (basic composition of (ε, δ)-DP);
* ``central-gaussian-zcdp``: the same Gaussian noise, with ``σ`` from the composition that
  is tight for it: each iteration is ``Δ²/(2σ²)``-zCDP, ``T`` of them ``TΔ²/(2σ²)``, and
  ``σ`` is the smallest whose conversion (the library's :func:`zcdp_delta`) gives δ at ε.

The iterations ``T ∈ {10, 30, 100, 300}`` are chosen per cell on the validation part (an
advantage the peer gets and our plan, which sees no data, does not; its privacy cost is
not counted). ``α = 1/S``, ``S = 1/4 + λ`` (unit rows), ``λ = 10⁻⁴``.

Replicated devices: a population of ``n`` people holding copies of the ``m`` distinct
records is given to the curator as ``n`` rows, so ``Δ = 2/n``. Its mean gradient is the
count-weighted mean over the distinct records (computed so: the same numbers, without
``n × d`` arrays).

**diffprivlib** 0.6.6 ``LogisticRegression`` (objective perturbation, Chaudhuri, Monteleoni
and Sarwate, JMLR 2011; pure ε-DP) on the same features (no intercept column: it fits its
own), ``data_norm`` = the layout's L2 bound on a row without the intercept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ldp_shared.mechanisms.gradient_gaussian import zcdp_delta

ITERATIONS = (10, 30, 100, 300)
L2 = 1e-4
RECIPES = ("central-laplace", "central-gaussian-basic", "central-gaussian-zcdp")


def unit_rows(x: np.ndarray, norm: str) -> np.ndarray:
    """Rows scaled to unit L1 or L2 norm (the recipe's normalisation)."""
    size = np.abs(x).sum(axis=1) if norm == "l1" else np.sqrt(np.square(x).sum(axis=1))
    out: np.ndarray = x / np.maximum(size, 1e-300)[:, None]
    return out


def zcdp_sigma(epsilon: float, delta: float, sensitivity: float, iterations: int) -> float:
    """The smallest σ with ``zcdp_delta(ε, T·Δ²/(2σ²)) <= δ`` (bisection on log σ)."""

    def fits(sigma: float) -> bool:
        return zcdp_delta(epsilon, iterations * sensitivity**2 / (2 * sigma**2)) <= delta

    lo, hi = sensitivity * 1e-3, sensitivity * 1e6
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def noise_maker(
    recipe: str, epsilon: float, delta: float, n: int, iterations: int
) -> tuple[Callable[[np.random.Generator, int], np.ndarray], dict[str, float]]:
    """Per-iteration noise and what it is (scale, per-iteration ε and δ)."""
    sensitivity = 2.0 / n
    eps_step, delta_step = epsilon / iterations, delta / iterations
    if recipe == "central-laplace":
        scale = sensitivity / eps_step
        return (lambda rng, d: rng.laplace(0.0, scale, d)), {"laplace_scale": scale,
                                                            "epsilon_step": eps_step}  # fmt: skip
    if recipe == "central-gaussian-basic":
        sigma = sensitivity * math.sqrt(2 * math.log(1.25 / delta_step)) / eps_step
        info = {"sigma": sigma, "epsilon_step": eps_step, "delta_step": delta_step}
    else:
        sigma = zcdp_sigma(epsilon, delta, sensitivity, iterations)
        info = {"sigma": sigma, "rho_total": iterations * sensitivity**2 / (2 * sigma**2)}
    return (lambda rng, d: rng.normal(0.0, sigma, d)), info


def recipe_fit(
    recipe: str,
    x: np.ndarray,
    y: np.ndarray,
    counts: np.ndarray,
    epsilon: float,
    delta: float,
    iterations: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, float]]:
    """The recipe's last iterate on ``counts[i]`` copies of record ``i`` (rows normalised)."""
    n = int(counts.sum())
    keep = counts > 0
    x, y, counts = x[keep], y[keep], counts[keep]
    xs = unit_rows(x, "l1" if recipe == "central-laplace" else "l2")
    noise, info = noise_maker(recipe, epsilon, delta, n, iterations)
    rate = 1.0 / (0.25 + L2)
    w = np.zeros(x.shape[1])
    weight = counts / n
    for _ in range(iterations):
        p = 0.5 * (1.0 + np.tanh(0.5 * (xs @ w)))
        gradient = (weight * (p - y)) @ xs + L2 * w
        w = w - rate * (gradient + noise(rng, x.shape[1]))
    return w, info


def recipe_predict(recipe: str, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    xs = unit_rows(x, "l1" if recipe == "central-laplace" else "l2")
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * (xs @ w)))
    return out


def load_diffprivlib_models() -> tuple[Any | None, str]:
    """``diffprivlib.models`` (or ``None``) and how it was imported, or why not."""
    try:
        import diffprivlib.models as models  # type: ignore[import-not-found]
    except Exception as exc:
        return None, f"not importable: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    return models, "import diffprivlib.models"
