"""The central-DP peers of ``bench/numeric_speed.py``: IBM diffprivlib and OpenDP, each as a
function ``values -> outputs`` doing one perturbation per record.

diffprivlib 0.6.6's package ``__init__`` imports its scikit-learn models, which fail on
scikit-learn >= 1.7 (``sklearn.tree._tree.DOUBLE`` is gone), and bench/.venv-peers needs a
newer scikit-learn for mlxtend. Its ``mechanisms`` subpackage needs only numpy and
``sklearn.utils.check_random_state``, so when the plain import fails it is loaded on its
own (the package's ``__init__`` is skipped); the JSON says which import was used.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sys
import types
from collections.abc import Callable
from typing import Any

Runner = Callable[[list[Any]], list[Any]]


def _reason(exc: Exception) -> str:
    """An import error's message without the file paths of this machine."""
    return re.sub(r"\s*\(/[^)]*\)", "", str(exc))


def load_diffprivlib() -> tuple[Any | None, str]:
    """``diffprivlib.mechanisms`` (or ``None``) and how it was imported, or why not."""
    try:
        return importlib.import_module("diffprivlib.mechanisms"), "import diffprivlib.mechanisms"
    except ImportError as exc:
        first = _reason(exc)
    spec = importlib.util.find_spec("diffprivlib")
    if spec is None or spec.submodule_search_locations is None:
        return None, f"not installed ({first}); run bench/setup_peers.sh"
    for name in [m for m in sys.modules if m == "diffprivlib" or m.startswith("diffprivlib.")]:
        del sys.modules[name]
    package = types.ModuleType("diffprivlib")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["diffprivlib"] = package
    try:
        module = importlib.import_module("diffprivlib.mechanisms")
    except ImportError as exc:
        return None, f"not importable ({first}; then {_reason(exc)})"
    return module, f"diffprivlib.mechanisms without the package __init__ (plain import: {first})"


def load_opendp() -> tuple[Any | None, str]:
    try:
        dp = importlib.import_module("opendp.prelude")
    except ImportError as exc:
        return None, f"not installed ({_reason(exc)}); run bench/setup_peers.sh"
    dp.enable_features("contrib")
    return dp, "opendp.prelude with enable_features('contrib')"


def per_record(call: Callable[[Any], Any]) -> Runner:
    def run(values: list[Any]) -> list[Any]:
        return [call(v) for v in values]

    return run


def gaussian_scale(dp: Any, sensitivity: float, epsilon: float, delta: float) -> float:
    """The OpenDP Gaussian scale whose (ε, δ) curve gives ``epsilon`` at ``delta`` (bisection)."""

    def spent(scale: float) -> float:
        measurement = dp.c.make_zCDP_to_approxDP(_gaussian(dp, scale, vector=False))
        return float(measurement.map(sensitivity).epsilon(delta))

    lo, hi = sensitivity / 1000.0, sensitivity * 1000.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if spent(mid) < epsilon else (mid, hi)
    return hi


def _gaussian(dp: Any, scale: float, vector: bool) -> Any:
    atom = dp.atom_domain(T=float, nan=False)
    if vector:
        return dp.m.make_gaussian(dp.vector_domain(atom), dp.l2_distance(T=float), scale=scale)
    return dp.m.make_gaussian(atom, dp.absolute_distance(T=float), scale=scale)


def numeric_peers(
    dpl: Any, dp: Any, family: str, epsilon: float, delta: float, sensitivity: float
) -> dict[str, tuple[Runner, str]]:
    """name → (runner over a list of floats, the call it makes), for ``family`` ``laplace``
    (pure ε) or ``gaussian`` ((ε, δ)), at ``epsilon`` for values of range ``sensitivity``."""
    out: dict[str, tuple[Runner, str]] = {}
    if family == "laplace":
        if dpl is not None:
            mech = dpl.Laplace(epsilon=epsilon, sensitivity=sensitivity)
            out["diffprivlib Laplace"] = (
                per_record(mech.randomise),
                "diffprivlib.mechanisms.Laplace(epsilon, sensitivity=hi-lo).randomise(x)",
            )
        if dp is not None:
            atom = dp.atom_domain(T=float, nan=False)
            scale = sensitivity / epsilon
            scalar = dp.m.make_laplace(atom, dp.absolute_distance(T=float), scale=scale)
            vector = dp.m.make_laplace(dp.vector_domain(atom), dp.l1_distance(T=float), scale=scale)
            out["opendp laplace per record"] = (
                per_record(scalar),
                "make_laplace(atom_domain(float), absolute_distance, scale=(hi-lo)/ε)(x)",
            )
            out["opendp laplace vector"] = (
                vector,
                "make_laplace(vector_domain(atom_domain(float)), l1_distance, scale)(xs)",
            )
        return out
    if dpl is not None:
        if epsilon <= 1.0:  # diffprivlib's classic Gaussian refuses ε > 1
            mech = dpl.Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
            out["diffprivlib Gaussian"] = (
                per_record(mech.randomise),
                "diffprivlib.mechanisms.Gaussian(epsilon, delta, sensitivity).randomise(x)",
            )
        mech = dpl.GaussianAnalytic(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
        out["diffprivlib GaussianAnalytic"] = (
            per_record(mech.randomise),
            "diffprivlib.mechanisms.GaussianAnalytic(epsilon, delta, sensitivity).randomise(x)",
        )
    if dp is not None:
        scale = gaussian_scale(dp, sensitivity, epsilon, delta)
        out["opendp gaussian per record"] = (
            per_record(_gaussian(dp, scale, vector=False)),
            "make_gaussian(atom_domain(float), absolute_distance, scale) with the scale giving "
            "(ε, δ) through make_zCDP_to_approxDP",
        )
        out["opendp gaussian vector"] = (
            _gaussian(dp, scale, vector=True),
            "make_gaussian(vector_domain(atom_domain(float)), l2_distance, scale)(xs)",
        )
    return out


def exponential_peers(
    dpl: Any, dp: Any, utility: list[list[float]], epsilon: float
) -> dict[str, tuple[Runner, str]]:
    """name → (runner over a list of true value indices, the call): one exponential-mechanism
    draw per record over the row ``utility[x]`` of its value, sensitivity ``Δu``. The
    mechanisms for each of the ``d`` rows are built once, before the clock."""
    sensitivity = max(max(col) - min(col) for col in zip(*utility, strict=True))
    out: dict[str, tuple[Runner, str]] = {}
    if dpl is not None:
        mechs = [
            dpl.Exponential(epsilon=epsilon, sensitivity=sensitivity, utility=list(row))
            for row in utility
        ]
        out["diffprivlib Exponential"] = (
            lambda xs: [mechs[x].randomise() for x in xs],
            "diffprivlib.mechanisms.Exponential(epsilon, sensitivity=Δu, utility=u(x, ·))"
            ".randomise(), one instance per true value built beforehand",
        )
    if dp is not None:
        atom = dp.atom_domain(T=float, nan=False)
        measurement = dp.m.make_noisy_max(
            dp.vector_domain(atom),
            dp.linf_distance(T=float),
            dp.max_divergence(),
            scale=2.0 * sensitivity / epsilon,
        )
        rows = [[float(v) for v in row] for row in utility]
        out["opendp noisy_max"] = (
            lambda xs: [measurement(rows[x]) for x in xs],
            "make_noisy_max(vector_domain(atom_domain(float)), linf_distance, max_divergence, "
            "scale=2Δu/ε)(u(x, ·)): Gumbel report-noisy-max = the exponential mechanism",
        )
    return out
