"""Naive Bayes defaults chosen on evidence: budget × repair on nine categorical data sets.

For each data set, OUE, ε ∈ {0.5, 1, 2, 4, 8} and ``--seeds`` seeds (5), every pair of a
budget (``split``: each feature with ε/m; ``sample``: one random feature with ε) and a
repair of the noisy joint counts (``posterior-mean``, ``clamp``, ``norm-sub``:
``ldp_shared.analyses.naive_bayes.repair``) is trained from the same reports through the
SDK's ``Privatizer``, the aggregator's ``decode_reports`` and ``build_model`` (alpha = 1),
and scored on held-out records. Beside every accuracy is its **ceiling**: the same
pipeline with the noise off (``p = 1, q = 0``), so ceiling minus accuracy is what the noise
costs (under split the ceiling is scikit-learn's ``CategoricalNB(alpha=1)``).

The choice rule (``decision`` in the JSON) is minimax regret: in each setting (data set, ε)
an option's regret is the best option's accuracy minus its own; the default is the option
whose worst regret over all settings is smallest (ties: smaller mean regret). A budget is
also compared head to head (sample against split with each repair).

Data sets (a missing value is a value of its own, ``?``): UCI Car (bundled) and UCI Adult
(``../shared/data``, its own train/test files); from ``bench/.cache`` (``bash
bench/setup_nb_data.sh``, skipped when absent) Congressional Voting Records, Soybean
(Large), Breast Cancer Wisconsin (Original), Statlog DNA and Zoo (CRAN mlbench), E. coli
promoter gene sequences and the Impact Resources income survey (CRAN kernlab). The small
sets are split 80/20 (``holdout_split``, seed 20190503) and their training records
replicated to at least 100,000 clients.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

import numpy as np

from _common import BENCH_DIR, base_parser, emit, log, sized, start_marker
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.codec import Privatizer, decode_reports, records_to_columns
from ldp_shared.collection import build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.naive_bayes import CountRepair
from ldp_simulation.datasets import load_car
from naive_bayes import adult_domains, adult_records, data_dir, spec_for
from naive_bayes_repair import accuracy, exact_sums, noiseless

Records = list[dict[str, str]]
BUDGETS = ("split", "sample")
REPAIRS: tuple[CountRepair, ...] = ("posterior-mean", "clamp", "norm-sub")
OPTIONS = tuple(itertools.product(BUDGETS, REPAIRS))
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
CACHE = BENCH_DIR / ".cache"
MLBENCH = "CRAN mlbench 2.1-3 (GPL-2) as packaged by Debian (r-cran-mlbench)"
KERNLAB = "CRAN kernlab 0.9-32 (GPL-2) as packaged by Debian (r-cran-kernlab)"
R_SETS = {  # name: (file under bench/.cache, label column, columns left out, citation)
    "housevotes84": (
        "mlbench/HouseVotes84.rda",
        "Class",
        (),
        f"UCI Congressional Voting Records (Schlimmer, 1987), CC BY 4.0; read from {MLBENCH}",
    ),
    "soybean": (
        "mlbench/Soybean.rda",
        "Class",
        (),
        f"UCI Soybean (Large) (Michalski and Chilausky, 1980), CC BY 4.0; read from {MLBENCH}",
    ),
    "breastcancer": (
        "mlbench/BreastCancer.rda",
        "Class",
        ("Id",),
        f"UCI Breast Cancer Wisconsin (Original) (Wolberg, 1992), CC BY 4.0; read from {MLBENCH}",
    ),
    "dna": (
        "mlbench/DNA.rda",
        "Class",
        (),
        "Statlog DNA (primate splice junctions, UCI"
        f" Molecular Biology; Noordewier, Towell and Shavlik, 1991); read from {MLBENCH}",
    ),
    "zoo": (
        "mlbench/Zoo.rda",
        "type",
        (),
        f"UCI Zoo (Forsyth, 1990), CC BY 4.0; read from {MLBENCH}",
    ),
    "promoters": (
        "kernlab/promotergene.rda",
        "Class",
        (),
        "UCI Molecular Biology (Promoter"
        f" Gene Sequences) (Harley, Reynolds and Noordewier, 1990), CC BY 4.0; read from"
        f" {KERNLAB}",
    ),
    "income": (
        "kernlab/income.rda",
        "INCOME",
        (),
        "Impact Resources marketing survey"
        " (Columbus OH, 1987; Hastie, Tibshirani and Friedman, The Elements of"
        f" Statistical Learning, 14.2.3), 9 income classes; read from {KERNLAB}",
    ),
}


def _clean(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_").lower()


def r_dataset(name: str) -> tuple[dict[str, list[str]], str, Records] | None:
    """Domains, label and records of one R data file; every column read as categories."""
    path, label, dropped, _ = R_SETS[name]
    try:
        import pyreadr  # type: ignore[import-not-found]
    except ImportError:
        log("pyreadr is not installed (pip install pyreadr): the R data sets are skipped")
        return None
    if not (CACHE / path).exists():
        log(f"{CACHE / path} is absent (run bash bench/setup_nb_data.sh): {name} skipped")
        return None
    frame = next(iter(pyreadr.read_r(str(CACHE / path)).values()))
    domains: dict[str, list[str]] = {}
    columns: dict[str, list[str]] = {}
    for column in frame.columns:
        if column in dropped:
            continue
        series = frame[column]
        values = ["?" if v is None or v != v else str(v) for v in series.tolist()]
        if hasattr(series, "cat"):
            levels = [str(v) for v in series.cat.categories]
        else:  # logical or small-integer columns (Zoo): their distinct values
            levels = sorted({v for v in values if v != "?"})
        key = "label" if column == label else _clean(str(column))
        domains[key] = levels + (["?"] if "?" in values else [])
        columns[key] = values
    records = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    return domains, "label", records


def run_dataset(
    name: str,
    domains: dict[str, list[str]],
    label: str,
    split: tuple[Records, Records],
    epsilons: tuple[float, ...],
    seeds: int,
    min_clients: int,
) -> dict[str, Any]:
    """Every budget × repair × ε × seed on one data set, each beside its ceiling."""
    train, test_records = split
    copies = max(1, math.ceil(min_clients / len(train)))
    clients = train * copies
    base = build_config(spec_for(name, domains, label, "oue", "split", 1.0))
    x_test = np.array([[a.domain.index(r[a.name]) for a in base.features] for r in test_records])
    y_test = np.array([domains[label].index(r[label]) for r in test_records])
    test = (x_test, y_test)
    columns = records_to_columns(base, clients)
    log(f"{name}: {len(clients):,} clients ({len(train)} records ×{copies}), {len(y_test)} test")
    ceiling: dict[str, dict[str, float]] = {}
    for budget in BUDGETS:
        config = noiseless(build_config(spec_for(name, domains, label, "oue", budget, 1.0)))
        sums = exact_sums(config, clients, seed=7)
        ceiling[budget] = {r: accuracy(config, len(clients), sums, r, test) for r in REPAIRS}
    rows = []
    for (b, budget), (e, eps) in itertools.product(enumerate(BUDGETS), enumerate(epsilons)):
        config = build_config(spec_for(name, domains, label, "oue", budget, eps))
        runs: dict[str, list[float]] = {r: [] for r in REPAIRS}
        for seed in range(seeds):
            rng = seeded_rng(7_000_000 + 10_000 * seed + 100 * b + e)
            reports = Privatizer(config).privatize_columns(columns, rng)
            sums = decode_reports(config, reports).sums
            for repair in REPAIRS:
                runs[repair].append(accuracy(config, len(reports), sums, repair, test))
        for repair in REPAIRS:
            mean = statistics.fmean(runs[repair])
            rows.append(
                {
                    "budget": budget,
                    "repair": repair,
                    "epsilon": eps,
                    "accuracies": runs[repair],
                    "accuracy_mean": mean,
                    "ceiling": ceiling[budget][repair],
                    "gap_points": 100 * (ceiling[budget][repair] - mean),
                }
            )
        means = " ".join(f"{r} {100 * statistics.fmean(runs[r]):5.1f}" for r in REPAIRS)
        log(f"{name} {budget:6} ε={eps:<4} accuracy %: {means}")
    majority = max(float(np.mean(y_test == c)) for c in range(len(domains[label])))
    return {
        "n_clients": len(clients),
        "n_train_records": len(train),
        "n_test": len(y_test),
        "features": len(base.features),
        "classes": len(domains[label]),
        "majority_class_accuracy": majority,
        "ceiling": ceiling,
        "results": rows,
    }


def decision(datasets: dict[str, Any]) -> dict[str, Any]:
    """Regret of every (budget, repair) option, and the head-to-head of the budgets."""
    table: dict[tuple[str, float], dict[tuple[str, str], float]] = {}
    for name, data in datasets.items():
        for row in data["results"]:
            setting = table.setdefault((name, row["epsilon"]), {})
            setting[(row["budget"], row["repair"])] = 100 * row["accuracy_mean"]
    regrets: dict[tuple[str, str], list[float]] = {option: [] for option in OPTIONS}
    for accuracies in table.values():
        top = max(accuracies.values())
        for option in OPTIONS:
            regrets[option].append(top - accuracies[option])
    options = {
        f"{b}/{r}": {
            "mean_regret_points": statistics.fmean(regrets[(b, r)]),
            "worst_regret_points": max(regrets[(b, r)]),
            "settings_best_or_tied": sum(x <= 1e-9 for x in regrets[(b, r)]),
        }
        for b, r in OPTIONS
    }
    ranked = sorted(
        options, key=lambda o: (options[o]["worst_regret_points"], options[o]["mean_regret_points"])
    )
    sample_wins = {
        repair: {
            "sample_better": sum(
                a[("sample", repair)] > a[("split", repair)] for a in table.values()
            ),
            "split_better": sum(
                a[("sample", repair)] < a[("split", repair)] for a in table.values()
            ),
            "mean_points_sample_minus_split": statistics.fmean(
                a[("sample", repair)] - a[("split", repair)] for a in table.values()
            ),
        }
        for repair in REPAIRS
    }
    repair_within_budget = {}
    for budget in BUDGETS:
        worst = {
            r: max(max(a[(budget, x)] for x in REPAIRS) - a[(budget, r)] for a in table.values())
            for r in REPAIRS
        }
        mean = {
            r: statistics.fmean(
                max(a[(budget, x)] for x in REPAIRS) - a[(budget, r)] for a in table.values()
            )
            for r in REPAIRS
        }
        repair_within_budget[budget] = {"worst_regret_points": worst, "mean_regret_points": mean}
    return {
        "settings": len(table),
        "rule": "minimax regret over (data set, ε); ties by mean regret",
        "options": options,
        "ranked": ranked,
        "chosen": ranked[0] if ranked else None,
        "budget_head_to_head": sample_wins,
        "repair_within_budget": repair_within_budget,
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds per setting (5)")
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    seeds = args.seeds or sized(5, 2, 1, args)
    epsilons = sized(EPSILONS, (1.0, 4.0), (1.0,), args)
    min_clients = sized(100_000, 10_000, 2_000, args)
    datasets: dict[str, Any] = {}
    missing: list[str] = []
    car = load_car()
    split = nb.holdout_split(car.records)
    datasets["car"] = run_dataset("car", car.domains, "class", split, epsilons, seeds, min_clients)
    datasets["car"]["citation"] = car.citation
    folder = data_dir()
    files = [folder / "adult.data", folder / "adult.test", folder / "adult.names"]
    if not all(f.exists() for f in files):
        missing.append("adult")
    elif not getattr(args, "tiny", False):
        adult = (adult_records(files[0]), adult_records(files[1]))
        datasets["adult"] = run_dataset(
            "adult", adult_domains(files[2]), "income", adult, epsilons, seeds, 1
        )
        datasets["adult"]["citation"] = "UCI Adult (Kohavi and Becker, 1996), CC BY 4.0"
    for name in sized(tuple(R_SETS), tuple(R_SETS), ("zoo",), args):
        loaded = r_dataset(name)
        if loaded is None:
            missing.append(name)
            continue
        domains, label, records = loaded
        split = nb.holdout_split(records)
        datasets[name] = run_dataset(name, domains, label, split, epsilons, seeds, min_clients)
        datasets[name]["citation"] = R_SETS[name][3]
    result.update(
        {
            "mechanism": "oue",
            "budgets": list(BUDGETS),
            "repairs": list(REPAIRS),
            "epsilons": list(epsilons),
            "seeds": seeds,
            "seed_rule": "rng seed 7,000,000 + 10,000·seed + 100·budget index + ε index",
            "alpha": 1.0,
            "decision": decision(datasets),
            "datasets": datasets,
            "datasets_missing": missing,
        }
    )
    emit("naive_bayes_defaults", result, args.quick, args.output)


if __name__ == "__main__":
    main()
