"""When the ordinal exponential mechanism beats GRR and OUE, in Wasserstein-1 error.

For d ∈ {5, 10, 20, 50}, ε ∈ {0.5, 1, 2, 4}, n ∈ {10,000, 100,000} and a few
distributions over ranks ``0..d−1`` (``uniform``; ``peaked``, a discretised normal at the
middle, sd d/8; ``bimodal``, two such bumps at 1/5 and 4/5 of the range, sd d/12; and
``adult_education_num``, UCI Adult's ``education-num`` 1..16 as ranks, d = 16, from
``../shared/data/adult.data`` when present), ``n`` values are drawn once (seeded) and held
fixed. Each of ``runs`` seeded runs (default 60) sends them through the library path
offline: ``privatize_columns`` → ``decode_reports`` → the aggregator's
``frequencies.frequency_result`` with ``postprocess="simplex"``, for

* ``exponential`` with the ``ordinal`` utility (``u(x, y) = −|x − y|``, tight
  calibration ``λ = ε/(d − 1)``), estimated by channel inversion ``M⁻¹π̂``;
* ``grr`` and ``oue`` (Wang et al., USENIX Security 2017), their unbiased estimates.

The error is the Wasserstein-1 distance on ranks (unit spacing) between the estimate and
the true empirical distribution, ``W1 = Σ_{k<d−1} |F̂_k − F_k|`` (``F`` cumulative sums),
reported twice:

* ``raw``: on the unbiased estimate itself, **before** projection. GRR's and the EM's
  estimates sum to one exactly but may be negative, OUE's need not even sum to one, so
  this is the L1 distance of the cumulative sums of a signed vector (the formula above),
  not a distance between distributions;
* ``simplex``: **after** projecting the estimate onto the probability simplex (the
  aggregator's ``postprocess="simplex"``), a true W1 between distributions;
* ``ibu``: for the mechanisms with a value-to-report channel (EM and GRR, not OUE), the
  iterative Bayesian update (``ldp_shared.analyses.ibu``, maximum likelihood on the
  simplex; library only, not on the API) from the same counts, capped at
  :data:`IBU_ITERATIONS` iterations (tolerance 1e-8), on the first ``ibu_runs`` runs
  (default 20): IBU costs up to a tenth of a second per run.

``best`` is each mechanism's least error over its distribution estimates (``simplex``,
and ``ibu`` where it exists), what a careful analyst would use.

The winner of each setting is the mechanism of least mean W1; ``clear`` says whether
its margin over the runner-up exceeds twice the Monte-Carlo standard error of the
difference (independent runs).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from _common import base_parser, emit, log, sized, start_marker
from accuracy import data_dir
from ldp_aggregator.frequencies import frequency_result
from ldp_aggregator.storage.stats import Stats
from ldp_shared.analyses.ibu import iterative_bayesian_update
from ldp_shared.analyses.joint import attribute_stats
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

DOMAINS = (5, 10, 20, 50)
EPSILONS = (0.5, 1.0, 2.0, 4.0)
MECHANISMS: dict[str, dict[str, Any]] = {
    "exponential": {"mechanism": "exponential", "utility": "ordinal"},
    "grr": {"mechanism": "grr"},
    "oue": {"mechanism": "oue"},
}
VALUE_INDEX = ("exponential", "grr")
ERRORS = ("raw", "simplex", "ibu", "best")
IBU_ITERATIONS = 2_000


def bumps(d: int, centres: list[float], sd: float) -> np.ndarray:
    k = np.arange(d, dtype=np.float64)
    weights = sum(np.exp(-0.5 * ((k - c) / sd) ** 2) for c in centres)
    return np.asarray(weights / weights.sum())


def populations(d: int) -> dict[str, np.ndarray]:
    top = d - 1
    return {
        "uniform": np.full(d, 1.0 / d),
        "peaked": bumps(d, [top / 2.0], max(d / 8.0, 0.5)),
        "bimodal": bumps(d, [top / 5.0, 4.0 * top / 5.0], max(d / 12.0, 0.5)),
    }


def adult_education() -> np.ndarray | None:
    path = data_dir() / "adult.data"
    if not path.is_file():
        return None
    years = [
        int(parts[4])
        for line in path.read_text().splitlines()
        if len(parts := line.split(",")) == 15
    ]
    counts = np.bincount(np.asarray(years) - 1, minlength=16).astype(np.float64)
    return counts / counts.sum()


def wasserstein(estimate: np.ndarray, truth: np.ndarray) -> float:
    """``Σ_{k<d−1} |F̂_k − F_k|``: W1 on unit-spaced ranks (for a distribution)."""
    return float(np.abs(np.cumsum(estimate - truth)[:-1]).sum())


def run_mechanism(
    name: str, epsilon: float, values: np.ndarray, d: int, runs: tuple[int, int], seed: int
) -> dict[str, Any]:
    """Mean W1 (and its Monte-Carlo SE) per error kind over ``runs = (runs, ibu_runs)``."""
    domain = [f"r{k:02d}" for k in range(d)]
    spec = CollectionSpec(
        name="ordinal",
        epsilon=epsilon,
        attributes=[{"name": "v", "domain": domain, **MECHANISMS[name]}],
        release={"min_reports": 1},
    )
    config = build_config(spec)
    privatizer = Privatizer(config)
    strings = np.asarray(domain, dtype=object)[values].tolist()
    truth = np.bincount(values, minlength=d) / values.size
    # a value-index answer has a d×d channel for IBU; OUE's answer is d bits
    channel = config.randomizers[0].channel_matrix() if name in VALUE_INDEX else None
    errors: dict[str, list[float]] = {e: [] for e in ERRORS if e != "best"}
    for r in range(runs[0]):
        packed = privatizer.privatize_columns({"v": strings}, rng=seeded_rng(seed + r))
        decoded = decode_reports(config, packed)
        stats = Stats(values.size, decoded.sums, decoded.floats)
        result = frequency_result(config, stats, "v", method="simplex")
        assert result.postprocessed is not None
        errors["raw"].append(wasserstein(np.asarray(result.estimate), truth))
        errors["simplex"].append(wasserstein(np.asarray(result.postprocessed), truth))
        if channel is not None and r < runs[1]:
            counts = attribute_stats(config, config.attributes[0], decoded.sums)["counts"]
            ibu = iterative_bayesian_update(channel, counts, 1e-8, IBU_ITERATIONS)
            errors["ibu"].append(wasserstein(ibu.estimate, truth))
    out = {
        kind: {
            "mean": statistics.fmean(e),
            "monte_carlo_se": statistics.stdev(e) / math.sqrt(len(e)),
            "runs": len(e),
        }
        for kind, e in errors.items()
        if len(e) > 1
    }
    out["best"] = min((out[k] for k in ("simplex", "ibu") if k in out), key=lambda e: e["mean"])
    return out


def winners(by_mechanism: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for kind in ERRORS:
        have = [m for m in by_mechanism if kind in by_mechanism[m]]
        if len(have) < 2:
            continue
        ranked = sorted(have, key=lambda m: by_mechanism[m][kind]["mean"])
        best, second = by_mechanism[ranked[0]][kind], by_mechanism[ranked[1]][kind]
        se = math.hypot(best["monte_carlo_se"], second["monte_carlo_se"])
        out[kind] = {
            "winner": ranked[0],
            "runner_up": ranked[1],
            "error_ratio_runner_up_over_winner": second["mean"] / best["mean"],
            "clear": second["mean"] - best["mean"] > 2.0 * se,
        }
    return out


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ERRORS:
        wins: dict[str, int] = {m: 0 for m in MECHANISMS}
        for row in rows:
            if kind in row["winners"]:
                wins[row["winners"][kind]["winner"]] += 1
        out[kind] = wins
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=None, help="(10,000 100,000)")
    parser.add_argument("--runs", type=int, default=None, help="runs per setting (60)")
    parser.add_argument("--ibu-runs", type=int, default=None, help="runs with IBU (20)")
    args = parser.parse_args()
    sizes = args.n or sized([10_000, 100_000], [2_000], [300], args)
    runs = args.runs or sized(60, 10, 2, args)
    ibu_runs = min(runs, args.ibu_runs or sized(20, 5, 1, args))
    domains = sized(DOMAINS, (5, 20), (5,), args)
    started = start_marker()
    adult = adult_education()
    missing = (
        {} if adult is not None else {"adult": "adult.data absent: adult_education_num skipped"}
    )
    cases = [(d, name, f) for d in domains for name, f in populations(d).items()]
    if adult is not None:
        cases.append((16, "adult_education_num", adult))
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for d, dist, population in cases:
            values = np.random.default_rng(d * 1000 + len(dist)).choice(d, size=n, p=population)
            for epsilon in EPSILONS:
                log(f"[ordinal] n={n:,} d={d} {dist} ε={epsilon:g}")
                by_mechanism = {
                    m: run_mechanism(
                        m, epsilon, values, d, (runs, ibu_runs), 10**6 * (len(rows) * 3 + i)
                    )
                    for i, m in enumerate(MECHANISMS)
                }
                rows.append(
                    {
                        "n": n,
                        "d": d,
                        "distribution": dist,
                        "epsilon": epsilon,
                        "w1": by_mechanism,
                        "winners": winners(by_mechanism),
                    }
                )
    result = {
        **started,
        "description": (
            "Wasserstein-1 error on ranks of the estimated distribution, ordinal exponential "
            "mechanism vs GRR vs OUE, raw (before projection), after projection onto the "
            "simplex, and by IBU (EM and GRR); library path offline (privatize_columns -> "
            "decode_reports -> ldp_aggregator.frequencies.frequency_result)."
        ),
        "parameters": {
            "n": sizes,
            "runs": runs,
            "ibu_runs": ibu_runs,
            "ibu_max_iterations": IBU_ITERATIONS,
            "domains": list(domains),
            "epsilons": list(EPSILONS),
            "mechanisms": MECHANISMS,
            "w1": "sum over k < d-1 of |F_hat_k - F_k|, ranks 0..d-1 with unit spacing",
        },
        "datasets_missing": missing,
        "settings": rows,
        "wins": {str(n): tally([r for r in rows if r["n"] == n]) for n in sizes},
    }
    emit("ordinal", result, args.quick, args.output)


if __name__ == "__main__":
    main()
