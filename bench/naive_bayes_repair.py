"""Naive Bayes repairs of noisy counts, each beside its ceiling (the same pipeline, no noise).

The repairs of ``ldp_shared.analyses.naive_bayes.repair``: ``posterior-mean`` (the
truncated-normal mean of each cell), ``clamp`` (max(N̂, 0)) and ``norm-sub`` (each
class's row made consistent, Wang et al. NDSS 2020), trained on the same reports.

Data sets: UCI Car (bundled); UCI Adult (``../shared/data``, skipped when absent); and
three categorical UCI data sets from the ``bench/.cache/mlbench`` folder that
``bench/setup_nb_data.sh`` fills (skipped when absent): Congressional Voting Records
(HouseVotes84: 16 votes y/n/?, party), Soybean (Large) (35 attributes, 19 diseases) and
Breast Cancer Wisconsin (Original) (9 attributes scored 1-10, benign/malignant; the Id
left out). A missing value is a value of its own, ``?``. The small sets are split as
car is (``holdout_split``: 20 % held out, seed 20190503) and their training records
replicated to at least 100,000 clients; Adult keeps its own train/test files.

For each data set, OUE and SUE, budgets split and sample, ε ∈ {0.5, 1, 2, 4, 8} and
``--seeds`` seeds, clients go through the SDK's ``Privatizer`` and the aggregator's
``decode_reports`` and ``build_model`` (alpha = 1), as in ``bench/naive_bayes.py``. The
ceiling of a (data set, budget, repair) is the same pipeline with ``p = 1, q = 0``: the
exact counts (under ``sample`` of the same kind of random one-feature-per-record
selection), so the gap to it is what the noise costs. Under split every repair's ceiling
is scikit-learn's ``CategoricalNB(alpha=1)`` exactly.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from _common import BENCH_DIR, base_parser, emit, log, start_marker
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.naive_bayes import CountRepair, NaiveBayesTrainRequest
from ldp_simulation.datasets import load_car
from naive_bayes import accuracy_of, adult_domains, adult_records, data_dir, spec_for

REPAIRS: tuple[CountRepair, ...] = ("posterior-mean", "clamp", "norm-sub")
VARIANTS = (("oue", "split"), ("oue", "sample"), ("sue", "split"), ("sue", "sample"))
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
MIN_CLIENTS = 100_000
CACHE = BENCH_DIR / ".cache" / "mlbench"
MLBENCH = {  # file stem: (label column, columns left out, citation)
    "HouseVotes84": (
        "Class",
        (),
        "UCI Congressional Voting Records (Schlimmer, 1987), CC BY 4.0; read from CRAN"
        " mlbench 2.1-3 (GPL-2) as packaged by Debian (r-cran-mlbench)",
    ),
    "Soybean": (
        "Class",
        (),
        "UCI Soybean (Large) (Michalski and Chilausky, 1980), CC BY 4.0; read from CRAN"
        " mlbench 2.1-3 (GPL-2) as packaged by Debian (r-cran-mlbench)",
    ),
    "BreastCancer": (
        "Class",
        ("Id",),
        "UCI Breast Cancer Wisconsin (Original) (Wolberg, 1992), CC BY 4.0; read from"
        " CRAN mlbench 2.1-3 (GPL-2) as packaged by Debian (r-cran-mlbench)",
    ),
}


def _clean(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_").lower()


def mlbench_dataset(stem: str) -> tuple[dict[str, list[str]], str, list[dict[str, str]]] | None:
    """Domains (factor levels, plus ``?`` where a value is missing), label, records."""
    path = CACHE / f"{stem}.rda"
    try:
        import pyreadr  # type: ignore[import-not-found]
    except ImportError:
        log("pyreadr is not installed (pip install pyreadr): the mlbench sets are skipped")
        return None
    if not path.exists():
        log(f"{path} is absent (run bash bench/setup_nb_data.sh): skipped")
        return None
    frame = next(iter(pyreadr.read_r(str(path)).values()))
    label, dropped, _ = MLBENCH[stem]
    domains: dict[str, list[str]] = {}
    columns: dict[str, list[str]] = {}
    for column in frame.columns:
        if column in dropped:
            continue
        series = frame[column]
        levels = [str(v) for v in series.cat.categories]
        values = ["?" if v is None or v != v else str(v) for v in series.tolist()]
        used = levels + (["?"] if "?" in values else [])
        name = "label" if column == label else _clean(str(column))
        domains[name], columns[name] = used, values
    records = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    return domains, "label", records


def exact_sums(config: CollectionConfig, records: list[dict[str, str]], seed: int) -> np.ndarray:
    """The statistics of noiseless reports (under ``sample``, a random feature each)."""
    sums = np.zeros(config.stats_length, dtype=np.int64)
    encoded = encode_columns(config, records_to_columns(config, records))
    chosen = seeded_rng(seed).integers(0, max(len(config.sampled), 1), size=len(records))
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        mine = np.ones(len(records), dtype=bool)
        if attribute.count_offset is not None:
            mine = chosen == attribute.sample_index
            sums[attribute.count_offset] = int(mine.sum())
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.cells)
        sums[block] = np.bincount(cells[mine], minlength=attribute.cells)
    return sums


def noiseless(config: CollectionConfig) -> CollectionConfig:
    exact = [a.model_copy(update={"p": 1.0, "q": 0.0}) for a in config.attributes]
    return config.model_copy(update={"attributes": exact})


def accuracy(
    config: CollectionConfig, n: int, sums: np.ndarray, repair: CountRepair, test: Any
) -> float:
    request = NaiveBayesTrainRequest(repair=repair)
    model = nb.build_model(config, n, sums, request, model_id="bench-model", created_day="")
    return accuracy_of(model, *test)


def run_dataset(
    name: str,
    domains: dict[str, list[str]],
    label: str,
    train: list[dict[str, str]],
    test_records: list[dict[str, str]],
    epsilons: tuple[float, ...],
    seeds: int,
    min_clients: int,
) -> dict[str, Any]:
    copies = max(1, math.ceil(min_clients / len(train)))
    clients = train * copies
    base = build_config(spec_for(name, domains, label, "oue", "split", 1.0))
    x_test = np.array([[a.domain.index(r[a.name]) for a in base.features] for r in test_records])
    y_test = np.array([domains[label].index(r[label]) for r in test_records])
    test = (x_test, y_test)
    columns = records_to_columns(base, clients)
    log(f"{name}: {len(clients):,} clients ({len(train)} records ×{copies}), {len(y_test)} test")
    ceilings = {}
    for budget in ("split", "sample"):
        config = noiseless(build_config(spec_for(name, domains, label, "oue", budget, 1.0)))
        sums = exact_sums(config, clients, seed=7)
        ceilings[budget] = {r: accuracy(config, len(clients), sums, r, test) for r in REPAIRS}
    rows = []
    for v, (mechanism, budget) in enumerate(VARIANTS):
        for e, eps in enumerate(epsilons):
            config = build_config(spec_for(name, domains, label, mechanism, budget, eps))
            runs: dict[str, list[float]] = {r: [] for r in REPAIRS}
            for seed in range(seeds):
                rng = seeded_rng(5_000_000 + 10_000 * seed + 100 * v + e)
                reports = Privatizer(config).privatize_columns(columns, rng)
                sums = decode_reports(config, reports).sums
                for repair in REPAIRS:
                    runs[repair].append(accuracy(config, len(reports), sums, repair, test))
            row: dict[str, Any] = {"mechanism": mechanism, "budget": budget, "epsilon": eps}
            for repair in REPAIRS:
                mean = statistics.fmean(runs[repair])
                row[repair] = {
                    "accuracy_mean": mean,
                    "accuracy_std": statistics.stdev(runs[repair]) if seeds > 1 else 0.0,
                    "ceiling": ceilings[budget][repair],
                    "gap_points": 100 * (ceilings[budget][repair] - mean),
                }
            rows.append(row)
            gaps = " ".join(f"{r} {row[r]['gap_points']:5.1f}" for r in REPAIRS)
            log(f"{name} {mechanism} {budget:6} ε={eps:<4} gap to ceiling: {gaps}")
    majority = max(np.mean(y_test == c) for c in range(len(domains[label])))
    return {
        "n_clients": len(clients),
        "n_train_records": len(train),
        "n_test": len(y_test),
        "features": len(base.features),
        "classes": len(domains[label]),
        "majority_class_accuracy": float(majority),
        "ceiling": ceilings,
        "results": rows,
    }


def summary(datasets: dict[str, Any]) -> dict[str, Any]:
    """Per repair: mean and worst gap to the ceiling, and in how many settings it is best."""
    cells = [row for d in datasets.values() for row in d["results"]]
    out: dict[str, Any] = {"settings": len(cells)}
    for repair in REPAIRS:
        gaps = [row[repair]["gap_points"] for row in cells]
        best = sum(
            row[repair]["accuracy_mean"] >= max(row[r]["accuracy_mean"] for r in REPAIRS)
            for row in cells
        )
        per_set = {
            name: statistics.fmean(row[repair]["gap_points"] for row in d["results"])
            for name, d in datasets.items()
        }
        out[repair] = {
            "mean_gap_points": statistics.fmean(gaps),
            "worst_gap_points": max(gaps),
            "settings_best_or_tied": best,
            "mean_gap_points_per_dataset": per_set,
        }
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds per setting (5)")
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    seeds = args.seeds or (1 if args.quick else 5)
    epsilons = (1.0, 4.0) if args.quick else EPSILONS
    min_clients = 10_000 if args.quick else MIN_CLIENTS
    datasets: dict[str, Any] = {}
    missing: list[str] = []
    car = load_car()
    train, test = nb.holdout_split(car.records)
    datasets["car"] = run_dataset(
        "car", car.domains, "class", train, test, epsilons, seeds, min_clients
    )
    datasets["car"]["citation"] = car.citation
    folder: Path = data_dir()
    files = [folder / "adult.data", folder / "adult.test", folder / "adult.names"]
    if all(f.exists() for f in files):
        domains = adult_domains(files[2])
        adult_train, adult_test = adult_records(files[0]), adult_records(files[1])
        datasets["adult"] = run_dataset(
            "adult", domains, "income", adult_train, adult_test, epsilons, seeds, 1
        )
        datasets["adult"]["citation"] = "UCI Adult (Kohavi and Becker, 1996), CC BY 4.0"
    else:
        missing.append("adult")
    for stem, (_, _, citation) in MLBENCH.items():
        loaded = mlbench_dataset(stem)
        if loaded is None:
            missing.append(stem)
            continue
        domains, label, records = loaded
        train, test = nb.holdout_split(records)
        name = stem.lower()
        datasets[name] = run_dataset(
            name, domains, label, train, test, epsilons, seeds, min_clients
        )
        datasets[name]["citation"] = citation
    result.update(
        {
            "repairs": list(REPAIRS),
            "epsilons": list(epsilons),
            "variants": [f"{m}-{b}" for m, b in VARIANTS],
            "seeds": seeds,
            "alpha": 1.0,
            "summary": summary(datasets),
            "datasets": datasets,
            "datasets_missing": missing,
        }
    )
    emit("naive_bayes_repair", result, args.quick, args.output)


if __name__ == "__main__":
    main()
