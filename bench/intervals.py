"""Coverage and width of the frequency intervals: score (the default) against normal.

For each mechanism on the debiased-bit kernel (GRR, OUE, SUE) at several (d, ε), each
true frequency f ∈ {0, 0.01, 0.1, 0.5, 0.9, 0.99, 1} and n ∈ {100, 1,000, 100,000}, draws
the count of one value's cell over ``--runs`` independent collections of n reports with
exactly round(n·f) holders of the value (the count is Binomial(m, p) + Binomial(n − m, q),
the cell's exact distribution) and releases it through the library's own
``estimate_frequencies`` (the default: the score interval with a continuity correction
of half a report), the plain score interval (no correction) and
``FrequencyEstimate.normal`` with the same plug-in standard error (the previous default).
Prints, per setting, how often each 95 % interval covers the true frequency (with the
Monte-Carlo standard error) and its mean width, and per n the lowest and the mean
coverage over all settings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from _common import base_parser, emit, log, start_marker
from ldp_shared.intervals import VarianceCurve, score_bounds
from ldp_shared.kernel import FrequencyEstimate, estimate_frequencies, z_value
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, OptimizedUnaryEncoding
from ldp_shared.mechanisms.unary import unary_probabilities
from ldp_shared.rand import seeded_rng

SEED = 20261123
CONFIDENCE = 0.95
FREQUENCIES = [0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0]
SIZES = [100, 1_000, 100_000]
INTERVALS = ("score", "score_uncorrected", "normal")
SETTINGS: list[tuple[str, int, float]] = [
    ("grr", 4, 1.0),
    ("grr", 64, 1.0),
    ("grr", 16, 4.0),
    ("oue", 64, 0.5),
    ("oue", 64, 1.0),
    ("oue", 8, 4.0),
    ("sue", 16, 1.0),
]


def channel(mechanism: str, d: int, epsilon: float) -> tuple[float, float]:
    """``(p, q)`` of one value's indicator bit."""
    if mechanism == "grr":
        grr = GeneralizedRandomizedResponse(d=d, epsilon=epsilon)
        return grr.p, grr.q
    if mechanism == "oue":
        oue = OptimizedUnaryEncoding(d=d, epsilon=epsilon)
        return oue.p, oue.q
    return unary_probabilities("sue", epsilon)


def coverage_row(
    p: float, q: float, n: int, f: float, runs: int, rng: np.random.Generator
) -> dict[str, Any]:
    holders = round(n * f)
    truth = holders / n
    counts = rng.binomial(holders, p, runs) + rng.binomial(n - holders, q, runs)
    score = estimate_frequencies(counts, n, p, q, CONFIDENCE)
    normal = FrequencyEstimate.normal(n, score.estimate, score.stderr, CONFIDENCE)
    plain = score_bounds(score.estimate, VarianceCurve.bit_sum(n, p, q), z_value(CONFIDENCE))
    row: dict[str, Any] = {"n": n, "f": truth}
    for name, (low, high) in (
        ("score", (score.ci_low, score.ci_high)),
        ("score_uncorrected", plain),
        ("normal", (normal.ci_low, normal.ci_high)),
    ):
        covered = (low <= truth) & (truth <= high)
        rate = float(covered.mean())
        row[name] = {
            "coverage": rate,
            "mc_stderr": math.sqrt(max(rate * (1.0 - rate), 1e-12) / runs),
            "mean_width": float(np.mean(high - low)),
        }
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in SIZES:
        at_n = [r for r in rows if r["n"] == n]
        out[str(n)] = {
            name: {
                "min_coverage": min(r[name]["coverage"] for r in at_n),
                "mean_coverage": float(np.mean([r[name]["coverage"] for r in at_n])),
                "settings_below_0.94": sum(r[name]["coverage"] < 0.94 for r in at_n),
                "settings": len(at_n),
            }
            for name in INTERVALS
        }
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40_000, help="collections per setting")
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    runs = 2_000 if args.quick else args.runs
    rng = seeded_rng(SEED)
    rows = []
    for mechanism, d, epsilon in SETTINGS:
        p, q = channel(mechanism, d, epsilon)
        for n in SIZES:
            for f in FREQUENCIES:
                row = coverage_row(p, q, n, f, runs, rng)
                rows.append({"mechanism": mechanism, "d": d, "epsilon": epsilon, **row})
            log(f"{mechanism} d={d} ε={epsilon}: done")
    result.update(
        {"confidence": CONFIDENCE, "runs": runs, "summary": summary(rows), "settings": rows}
    )
    emit("intervals", result, args.quick, args.output)


if __name__ == "__main__":
    main()
