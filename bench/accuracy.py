"""Accuracy of frequency estimation: empirical MSE against the theoretical variance.

For every data set, mechanism (SUE, OUE, GRR) and ε ∈ {1, 4}: ``n`` records (default
100,000) are drawn once from the data set's distribution; their empirical frequencies
``f`` are the truth. Each run perturbs all records through the full client path
(``Privatizer.privatize_columns`` -> packed reports), decodes them as the aggregator
does (``decode_reports`` -> sums) and estimates (``mechanism.estimate``). Over ``runs``
runs (default 20) we report

* ``mse``: the squared error averaged over the ``d`` values and the runs;
* ``ratio_to_var_star``: ``mse`` / Wang et al. (USENIX Security 2017) ``Var*``
  (OUE ``4e^ε/(n(e^ε-1)²)``, SUE ``e^(ε/2)/(n(e^(ε/2)-1)²)``, GRR
  ``(e^ε+d-2)/(n(e^ε-1)²)``), which drops the terms in ``f`` (exact as ``f -> 0``);
* ``ratio_to_exact``: ``mse`` / mean over values of ``mechanism.variance(f, n)``, the
  exact variance of each value's unbiased estimate;
* the MSE after each post-processing (none, norm-sub, simplex);
* the peers' MSE on the same records and ε with their own estimators.
"""

from __future__ import annotations

import math
import os
import random
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, start_marker, zipf_frequencies
from ldp_shared.analyses.postprocess import POSTPROCESS_METHODS, postprocess
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec

MECHANISMS = ("sue", "oue", "grr")
EPSILONS = (1.0, 4.0)
TARGET = (0.9, 1.1)

CAR_COLUMNS = {"buying": 0, "safety": 5, "class": 6}
CAR_DOMAINS = {
    "buying": ["vhigh", "high", "med", "low"],
    "safety": ["low", "med", "high"],
    "class": ["unacc", "acc", "good", "vgood"],
}
ADULT_EDUCATION = [
    "Preschool",
    "1st-4th",
    "5th-6th",
    "7th-8th",
    "9th",
    "10th",
    "11th",
    "12th",
    "HS-grad",
    "Some-college",
    "Assoc-voc",
    "Assoc-acdm",
    "Bachelors",
    "Masters",
    "Prof-school",
    "Doctorate",
]


# --------------------------------------------------------------------------- data


def data_dir() -> Path:
    return Path(os.environ.get("LDP_BENCH_DATA", DATA_DIR))


def load_datasets() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Each data set as a population (domain + probabilities) to draw records from."""
    found: list[dict[str, Any]] = []
    missing: dict[str, str] = {}
    car = data_dir() / "car.data"
    if car.is_file():
        rows = [line.split(",") for line in car.read_text().splitlines() if line]
        for column, position in CAR_COLUMNS.items():
            domain = CAR_DOMAINS[column]
            counts = np.array([sum(r[position] == v for r in rows) for v in domain], float)
            found.append(
                {
                    "name": f"car_{column}",
                    "source": (
                        f"UCI Car Evaluation ../shared/data/{car.name} ({len(rows)} rows), "
                        f"column {column!r}"
                    ),
                    "domain": domain,
                    "population": counts / counts.sum(),
                }
            )
    else:
        missing["car"] = f"{car} is absent: the car_buying/car_safety/car_class rows are skipped"
    adult = data_dir() / "adult.data"
    if adult.is_file():
        values = [
            parts[3].strip()
            for line in adult.read_text().splitlines()
            if len(parts := line.split(",")) == 15
        ]
        counts = np.array([values.count(v) for v in ADULT_EDUCATION], float)
        found.append(
            {
                "name": "adult_education",
                "source": (
                    f"UCI Adult ../shared/data/{adult.name} ({len(values)} rows), "
                    "column 'education'"
                ),
                "domain": ADULT_EDUCATION,
                "population": counts / counts.sum(),
            }
        )
    else:
        missing["adult"] = f"{adult} is absent: the adult_education rows are skipped"
    for d in (16, 1024):
        found.append(
            {
                "name": f"zipf{d}",
                "source": f"synthetic Zipf, f_v ∝ 1/(v+1)^1.1, d = {d}",
                "domain": [f"value-{i:04d}" for i in range(d)],
                "population": zipf_frequencies(d),
            }
        )
    return found, missing


# --------------------------------------------------------------------------- theory


def var_star(mechanism: str, epsilon: float, d: int, n: int) -> float:
    """Wang et al. 2017's approximate variance (the f-free term)."""
    e = math.exp(epsilon)
    if mechanism == "oue":
        return 4 * e / (n * (e - 1) ** 2)
    if mechanism == "sue":
        h = math.exp(epsilon / 2)
        return h / (n * (h - 1) ** 2)
    return (e + d - 2) / (n * (e - 1) ** 2)


# --------------------------------------------------------------------------- ours


def run_ours(
    mechanism_name: str,
    epsilon: float,
    domain: list[str],
    strings: list[str],
    true_f: np.ndarray,
    runs: int,
    seed: int,
    extra_runs: int = 0,
) -> dict[str, Any]:
    """``runs`` runs for the reported figures; ``extra_runs`` more (when > 0) for a second,
    more precise ratio over all ``runs + extra_runs`` runs."""
    n, d = len(strings), len(domain)
    spec = CollectionSpec(
        name="accuracy",
        attributes=[AttributeSpec(name="v", domain=domain, mechanism=mechanism_name)],
        epsilon=epsilon,
    )
    config = build_config(spec)
    privatizer = Privatizer(config)
    mechanism = config.randomizers[0]
    run_mse: dict[str, list[float]] = {m: [] for m in POSTPROCESS_METHODS}
    for r in range(runs + extra_runs):
        packed = privatizer.privatize_columns({"v": strings}, rng=seeded_rng(seed + r))
        sums = decode_reports(config, packed).sums
        raw = mechanism.estimate(sums, n).estimate
        for method in POSTPROCESS_METHODS:
            err = postprocess(raw, method) - true_f
            run_mse[method].append(float(np.mean(err**2)))
    theory_star = var_star(mechanism_name, epsilon, d, n)
    theory_exact = float(np.mean(mechanism.variance(true_f, n)))
    first = run_mse["none"][:runs]
    mse = statistics.fmean(first)
    mc_se = statistics.stdev(first) / math.sqrt(runs) if runs > 1 else None
    ratio_exact = mse / theory_exact
    every = run_mse["none"]
    all_runs = None
    if extra_runs > 0:
        all_runs = {
            "runs": len(every),
            "mse": statistics.fmean(every),
            "ratio_to_exact": statistics.fmean(every) / theory_exact,
            "ratio_to_var_star": statistics.fmean(every) / theory_star,
            "ratio_monte_carlo_se": statistics.stdev(every) / math.sqrt(len(every)) / theory_exact,
        }
    return {
        "p": mechanism.p,
        "q": mechanism.q,
        "exact_epsilon": config.attributes[0].epsilon,
        "runs": runs,
        "rng": "seeded_rng (PCG64), seeds seed..seed+runs-1",
        "mse": mse,
        "var_star": theory_star,
        "var_exact_mean": theory_exact,
        "ratio_to_var_star": mse / theory_star,
        "ratio_to_exact": ratio_exact,
        "ratio_monte_carlo_se": None if mc_se is None else mc_se / theory_exact,
        "ratio_to_exact_within_target": TARGET[0] <= ratio_exact <= TARGET[1],
        "mse_by_postprocess": {m: statistics.fmean(v[:runs]) for m, v in run_mse.items()},
        "all_runs": all_runs,
    }


# --------------------------------------------------------------------------- peers


def load_peers() -> tuple[dict[str, Any], dict[str, str]]:
    peers: dict[str, Any] = {}
    missing: dict[str, str] = {}
    try:
        from pure_ldp.frequency_oracles import DEClient, DEServer, UEClient, UEServer

        peers["pure-ldp"] = (UEClient, UEServer, DEClient, DEServer)
    except ImportError as exc:
        missing["pure-ldp"] = f"not importable ({exc}); run bench/setup_peers.sh"
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

        peers["multi-freq-ldpy"] = (UE_Client, UE_Aggregator_MI, GRR_Client, GRR_Aggregator_MI)
    except ImportError as exc:
        missing["multi-freq-ldpy"] = f"not importable ({exc}); run bench/setup_peers.sh"
    return peers, missing


def pure_ldp_estimates(api, mechanism_name, epsilon, d, idx) -> dict[str, np.ndarray]:
    ue_client, ue_server, de_client, de_server = api
    ident = lambda x: x  # noqa: E731 - values are already 0-based indices
    if mechanism_name == "grr":
        client = de_client(epsilon, d, index_mapper=ident)
        server = de_server(epsilon, d, index_mapper=ident)
    else:
        oue = mechanism_name == "oue"
        client = ue_client(epsilon, d, use_oue=oue, index_mapper=ident)
        server = ue_server(epsilon, d, use_oue=oue, index_mapper=ident)
    for v in idx:
        server.aggregate(client.privatise(v))
    n = len(idx)
    out = {}
    for label, norm in (("raw", 0), ("additive_norm", 1), ("prob_simplex", 2)):
        counts = server.estimate_all(range(d), suppress_warnings=True, normalization=norm)
        out[label] = np.asarray(counts, dtype=float) / n
    return out


def mfl_estimates(api, mechanism_name, epsilon, d, idx) -> dict[str, np.ndarray]:
    ue_client, ue_mi, grr_client, grr_mi = api
    if mechanism_name == "grr":
        reports = [grr_client(v, d, epsilon) for v in idx]
        return {"MI": np.asarray(grr_mi(reports, d, epsilon), dtype=float)}
    oue = mechanism_name == "oue"
    reports = [ue_client(v, d, epsilon, oue) for v in idx]
    return {"MI": np.asarray(ue_mi(reports, epsilon, oue), dtype=float)}


PEER_ESTIMATORS = {
    "pure-ldp": (
        pure_ldp_estimates,
        {
            "raw": "UEServer/DEServer.estimate_all(normalization=0) / n (unbiased)",
            "additive_norm": "estimate_all(normalization=1): clip negatives, spread the rest",
            "prob_simplex": "estimate_all(normalization=2): projection onto the simplex",
        },
    ),
    "multi-freq-ldpy": (
        mfl_estimates,
        {"MI": "UE/GRR_Aggregator_MI: unbiased estimate clipped at 0 and renormalised"},
    ),
}


def run_peer(peer, api, mechanism_name, epsilon, idx, true_f, runs, seed, theory_exact):
    fn, notes = PEER_ESTIMATORS[peer]
    d = true_f.size
    mses: dict[str, list[float]] = {}
    for r in range(runs):
        np.random.seed(seed + r)
        random.seed(seed + r)
        for label, est in fn(api, mechanism_name, epsilon, d, idx).items():
            mses.setdefault(label, []).append(float(np.mean((est - true_f) ** 2)))
    return {
        "runs": runs,
        "estimators": {
            label: {
                "how": notes[label],
                "mse": statistics.fmean(v),
                "ratio_to_exact": statistics.fmean(v) / theory_exact,
            }
            for label, v in mses.items()
        },
    }


def summarize(out: list[dict[str, Any]]) -> dict[str, Any]:
    """Ratios pooled over settings: one setting's 20-run ratio has a Monte-Carlo standard
    error of 5-30 % when d is small, the mean over many settings much less."""
    groups: dict[str, Any] = {}
    for label, keep in (("d <= 16", lambda r: r["d"] <= 16), ("d = 1024", lambda r: r["d"] > 16)):
        rows = [r for r in out if keep(r)]
        if not rows:
            continue
        ratios = [r["ours"]["ratio_to_exact"] for r in rows]
        ses = [r["ours"]["ratio_monte_carlo_se"] or 0.0 for r in rows]
        group: dict[str, Any] = {
            "settings": len(rows),
            "mean_ratio_to_exact": statistics.fmean(ratios),
            "mean_ratio_se": math.sqrt(sum(se * se for se in ses)) / len(rows),
            "within_target": sum(TARGET[0] <= x <= TARGET[1] for x in ratios),
            "within_2_se_of_1": sum(
                abs(x - 1) <= 2 * se for x, se in zip(ratios, ses, strict=True)
            ),
        }
        extended = [r["ours"]["all_runs"] for r in rows if r["ours"]["all_runs"]]
        if extended:
            ext = [e["ratio_to_exact"] for e in extended]
            ext_se = [e["ratio_monte_carlo_se"] for e in extended]
            group["all_runs"] = {
                "runs_per_setting": extended[0]["runs"],
                "mean_ratio_to_exact": statistics.fmean(ext),
                "mean_ratio_se": math.sqrt(sum(se * se for se in ext_se)) / len(ext),
                "within_target": sum(TARGET[0] <= x <= TARGET[1] for x in ext),
                "min_ratio": min(ext),
                "max_ratio": max(ext),
            }
        groups[label] = group
    return groups


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="records per data set (100,000)")
    parser.add_argument("--runs", type=int, default=None, help="runs for ours (20)")
    parser.add_argument(
        "--extra-runs-small-d",
        type=int,
        default=None,
        help="extra runs of ours for d <= 16, for a more precise ratio (180)",
    )
    parser.add_argument("--peer-runs", type=int, default=None, help="runs for each peer (3)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--seed", type=int, default=20260)
    args = parser.parse_args()
    n = args.n or (5_000 if args.quick else 100_000)
    runs = args.runs or (2 if args.quick else 20)
    peer_runs = args.peer_runs or (1 if args.quick else 3)
    extra_small = (
        args.extra_runs_small_d
        if args.extra_runs_small_d is not None
        else (2 if args.quick else 180)
    )
    started = start_marker()

    datasets, data_missing = load_datasets()
    peers, peers_missing = ({}, {"all": "--no-peers"}) if args.no_peers else load_peers()
    out: list[dict[str, Any]] = []
    for k, ds in enumerate(datasets):
        d = len(ds["domain"])
        rng = np.random.default_rng(args.seed + 1000 * k)
        idx = rng.choice(d, size=n, p=ds["population"]).astype(np.int64)
        strings = np.array(ds["domain"], dtype=object)[idx].tolist()
        true_f = np.bincount(idx, minlength=d) / n
        idx_list = idx.tolist()
        for mechanism_name in MECHANISMS:
            for epsilon in EPSILONS:
                label = f"{ds['name']} {mechanism_name} eps={epsilon:g}"
                log(f"[accuracy] {label}: ours, {runs} runs")
                extra = extra_small if d <= 16 else 0
                ours = run_ours(
                    mechanism_name, epsilon, ds["domain"], strings, true_f, runs, 7, extra
                )
                peer_out = {}
                for peer, api in peers.items():
                    log(f"[accuracy] {label}: {peer}, {peer_runs} runs")
                    peer_out[peer] = run_peer(
                        peer,
                        api,
                        mechanism_name,
                        epsilon,
                        idx_list,
                        true_f,
                        peer_runs,
                        1000,
                        ours["var_exact_mean"],
                    )
                out.append(
                    {
                        "dataset": ds["name"],
                        "d": d,
                        "mechanism": mechanism_name,
                        "epsilon": epsilon,
                        "ours": ours,
                        "peers": peer_out,
                    }
                )

    result = {
        **started,
        "description": (
            "Empirical MSE of the frequency vector (averaged over values and runs) vs the "
            "theoretical variance; ours through privatize_columns -> decode_reports -> "
            "estimate; peers with their own clients and estimators on the same records."
        ),
        "parameters": {
            "n": n,
            "runs_ours": runs,
            "runs_peers": peer_runs,
            "extra_runs_ours_small_d": extra_small,
            "epsilons": list(EPSILONS),
            "target_ratio": list(TARGET),
            "truth": "empirical frequencies of the n drawn records",
            "records": "n draws (seeded) from each data set's value distribution",
        },
        "datasets": [
            {
                "name": ds["name"],
                "d": len(ds["domain"]),
                "source": ds["source"],
                "population": ds["population"] if len(ds["domain"]) <= 16 else None,
            }
            for ds in datasets
        ],
        "datasets_missing": data_missing,
        "peers_missing": peers_missing,
        "results": out,
        "summary": summarize(out),
    }
    emit("accuracy", result, args.quick, args.output)


if __name__ == "__main__":
    main()
