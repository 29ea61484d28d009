"""Logistic regression trained from locally perturbed gradients (LDP-SGD) against ε.

Data (``bench/_logistic_data.py``): UCI Adult (adult.data for training, adult.test held
out, d = 92) and Wisconsin breast cancer (a fixed seeded 70/30 split, d = 31), from
``../shared/data`` (or ``$LDP_BENCH_DATA``); a data set that is absent is skipped and
named in ``datasets_missing``. Each training part is split again (20%, fixed seed) into
a validation part; the training records are replicated to ``--devices`` devices (10⁶),
each of which reports once.

For each gradient mechanism (``sampled-piecewise``, ``sampled-hybrid``, ``l1-laplace``,
``l2-gaussian`` at δ = 10⁻⁶, the SDK's default ``DevicePolicy.max_delta_per_record``),
each ε ∈ {0.1, 0.5, 1, 2, 4, 8} and ``--seeds`` seeds, the job runs with the library's
default plan (``ldp_shared.analyses.logistic.planning.plan_training``: no data enter it)
offline: the devices' reports are perturbed by the library's own device code and the
aggregator's step reads only each round's int64 statistics. Accuracy and ROC AUC on the
validation and test parts. Beside them: scikit-learn's ``LogisticRegression`` (default
C = 1) on the same encoded training records, the same plan with the noise off
(``mechanism=None``: the optimisation's own error) and the majority class. Also: the
clipping ablation on Adult's validation part (half the layout bound, the default,
against the full bound), the wire size of a gradient report, and the aggregator's and the
devices' seconds per 10⁵ gradient reports.

The central-DP peers (``_logistic_peers.py``, ``_central_dp.py``) run on the same
population of ``--devices`` people at every ε: diffprivlib's ``LogisticRegression`` and
the coursework's noisy-gradient recipe (Laplace; Gaussian at δ = 10⁻⁶ composed two ways),
at equal total ε. ``bench/logistic_devices.py`` redoes both against the number of
devices, ``bench/logistic_plots.py`` draws the PNGs in ``docs/``.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker
from _logistic_data import Dataset, Split, load_adult, load_breast_cancer
from _logistic_peers import DIFFPRIVLIB_IMPORT, central_rows
from ldp_shared.analyses.logistic.planning import default_bound, plan_training
from ldp_shared.analyses.logistic.training import TrainedModel, TrainingPlan, predict_proba, train
from ldp_shared.learning import device
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.rand import seeded_rng

MECHANISMS = ("sampled-piecewise", "sampled-hybrid", "l1-laplace", "l2-gaussian")
DELTA = 1e-6
"""δ of ``l2-gaussian`` and of the central Gaussian peers: ``DevicePolicy``'s default
``max_delta_per_record``."""
EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
DEVICES = 1_000_000
SEEDS = 3
TIMING_REPORTS = 100_000


def delta_for(mechanism: str | None) -> float | None:
    return DELTA if mechanism == "l2-gaussian" else None


def metrics(weights: np.ndarray, split: Split) -> dict[str, float]:
    p = predict_proba(weights, split.x)
    return {
        "accuracy": float(np.mean((p > 0.5) == split.y)),
        "auc": float(roc_auc_score(split.y, p)),
    }


def reference(ds: Dataset) -> dict[str, Any]:
    """scikit-learn on the encoded training records (its own intercept) and the majority."""
    clf = LogisticRegression(max_iter=10_000).fit(ds.train.x[:, 1:], ds.train.y)
    weights = np.r_[clf.intercept_, clf.coef_[0]]
    majority = float(max(ds.test.y.mean(), 1 - ds.test.y.mean()))
    return {
        "sklearn": {
            "validation": metrics(weights, ds.validation),
            "test": metrics(weights, ds.test),
        },
        "majority_class_test_accuracy": majority,
    }


def run(ds: Dataset, plan: TrainingPlan, devices: np.ndarray, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    model: TrainedModel = train(plan, ds.train.x, ds.train.y, devices, seeded_rng(seed))
    seconds = time.perf_counter() - started
    tail = model.curve[-max(1, len(model.curve) // 10) :]
    return {
        "validation": metrics(model.weights, ds.validation),
        "test": metrics(model.weights, ds.test),
        "exact_epsilon": model.epsilon,
        "delta": model.delta,
        "seconds": seconds,
        "loss_estimated_last_tenth": statistics.fmean(r.loss for r in tail),
        "loss_true_train_part": float(
            np.minimum(
                device.losses(model.last_weights, ds.train.x, ds.train.y), device.LOSS_CAP
            ).mean()
        ),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("validation", "test"):
        for metric in ("accuracy", "auc"):
            values = [r[part][metric] for r in runs]
            out[f"{part}_{metric}_mean"] = statistics.fmean(values)
            out[f"{part}_{metric}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    out["seconds_mean"] = statistics.fmean(r["seconds"] for r in runs)
    out["exact_epsilon"] = runs[0]["exact_epsilon"]
    out["delta"] = runs[0]["delta"]
    out["runs"] = runs
    return out


def plan_fields(plan: TrainingPlan) -> dict[str, Any]:
    keys = ("round_size", "rounds", "learning_rate", "bound", "l2", "loss_share", "average_from")
    return {k: getattr(plan, k) for k in keys}


def run_dataset(
    ds: Dataset,
    n: int,
    epsilons: tuple[float, ...],
    seeds: int,
    mechanisms: tuple[str, ...] = MECHANISMS,
    diffprivlib: bool = True,
) -> dict[str, Any]:
    devices = np.resize(np.arange(len(ds.train.x)), n)
    out: dict[str, Any] = {
        "dimension": ds.layout.dimension,
        "coordinates": ds.layout.coordinate_names(),
        "n_train_records": len(ds.train.x),
        "n_validation": len(ds.validation.x),
        "n_test": len(ds.test.x),
        "devices": n,
        **reference(ds),
    }
    off = plan_training(ds.layout, n, None, 1.0)
    out["noise_off"] = {"plan": plan_fields(off), **summary([run(ds, off, devices, 0)])}
    noise_off = out["noise_off"]["test_accuracy_mean"]
    log(f"{ds.name}: sklearn {out['sklearn']['test']}, noise off {noise_off:.4f}")
    rows = []
    for mechanism in mechanisms:
        for eps in epsilons:
            delta = delta_for(mechanism)
            plan = plan_training(ds.layout, n, mechanism, eps, delta=delta)
            runs = [run(ds, plan, devices, seed) for seed in range(seeds)]
            wire = gradient_randomizer(
                mechanism, ds.layout.dimension, eps, plan.bound, delta
            ).segment
            rows.append(
                {
                    "mechanism": mechanism,
                    "epsilon": eps,
                    "plan": plan_fields(plan),
                    "report_bytes": wire.byte_length,
                    **summary(runs),
                }
            )
            r = rows[-1]
            log(
                f"{ds.name} {mechanism:17} ε={eps:<4} B={plan.round_size:>6} T={plan.rounds:>3}: "
                f"test acc {r['test_accuracy_mean']:.4f} ± {r['test_accuracy_std']:.4f}, "
                f"auc {r['test_auc_mean']:.4f} ({r['seconds_mean']:.0f} s)"
            )
    out["results"] = rows
    out["central"] = central_rows(ds, n, epsilons, DELTA, seeds, diffprivlib)
    for r in out["central"]:
        if "test_accuracy_mean" in r:
            log(f"{ds.name} {r['method']:22} ε={r['epsilon']}: acc {r['test_accuracy_mean']:.4f}")
    return out


def clipping_ablation(ds: Dataset, n: int, seeds: int) -> list[dict[str, Any]]:
    """Validation only: the default bound (half the layout's) against the full bound."""
    devices = np.resize(np.arange(len(ds.train.x)), n)
    rows = []
    for mechanism in MECHANISMS:
        delta = delta_for(mechanism)
        probe = gradient_randomizer(mechanism, ds.layout.dimension, 1.0, 1.0, delta)
        full = 2 * default_bound(ds.layout, probe)
        for eps in (1.0, 4.0):
            for label, bound in (("half", full / 2), ("full", full)):
                plan = plan_training(ds.layout, n, mechanism, eps, bound=bound, delta=delta)
                runs = [run(ds, plan, devices, seed) for seed in range(seeds)]
                s = summary(runs)
                rows.append(
                    {
                        "mechanism": mechanism,
                        "epsilon": eps,
                        "bound": label,
                        "plan": plan_fields(plan),
                        **{k: v for k, v in s.items() if k.startswith("valid")},
                    }
                )
                accuracy = s["validation_accuracy_mean"]
                log(f"ablation {mechanism} ε={eps} {label}: val acc {accuracy:.4f}")
    return rows


def cost(dimension: int) -> list[dict[str, Any]]:
    """Seconds per 10⁵ gradient reports at ε = 4: devices (clip + perturb), aggregator
    (accumulate + estimate); best of 3."""
    rng = seeded_rng(1)
    g = rng.uniform(-1, 1, size=(TIMING_REPORTS, dimension)) / dimension
    rows = []
    for mechanism in MECHANISMS:
        m = gradient_randomizer(mechanism, dimension, 4.0, 1.0, delta_for(mechanism))
        device_s, server_s = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            answers = m.perturb(m.clip(g), rng)
            t1 = time.perf_counter()
            m.estimate_mean(m.accumulate(answers), TIMING_REPORTS)
            t2 = time.perf_counter()
            device_s.append(t1 - t0)
            server_s.append(t2 - t1)
        rows.append(
            {
                "mechanism": mechanism,
                "dimension": dimension,
                "report_bytes": m.segment.byte_length,
                "device_seconds": min(device_s),
                "aggregator_seconds": min(server_s),
            }
        )
    return rows


def targets(datasets: dict[str, Any]) -> dict[str, Any]:
    """Adult at ε = 4 with 10⁶ devices: within 3 points of non-private test accuracy."""
    adult = datasets.get("adult")
    if adult is None:
        return {}
    baseline = adult["sklearn"]["test"]["accuracy"]
    at4 = [r for r in adult["results"] if r["epsilon"] == 4.0]
    if not at4:
        return {}
    gaps = {r["mechanism"]: 100 * (baseline - r["test_accuracy_mean"]) for r in at4}
    return {
        "adult_within_3_points_at_eps_4": {
            "devices": adult["devices"],
            "met": adult["devices"] >= 1_000_000 and min(gaps.values()) <= 3.0,
            "sklearn_test_accuracy": baseline,
            "gap_points_per_mechanism": gaps,
        }
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds per cell (default {SEEDS})")
    parser.add_argument("--devices", type=int, default=None, help=f"devices (default {DEVICES})")
    parser.add_argument(
        "--ablation", action="store_true", help="also the clipping ablation (Adult validation)"
    )
    parser.add_argument(
        "--mechanisms", default=",".join(MECHANISMS), help="comma-separated (default: all)"
    )
    parser.add_argument(
        "--datasets", default="adult,breast_cancer", help="comma-separated (default: both)"
    )
    parser.add_argument(
        "--no-diffprivlib", action="store_true", help="leave diffprivlib out (slow at 10⁶)"
    )
    args = parser.parse_args()
    mechanisms = tuple(m for m in args.mechanisms.split(",") if m)
    wanted = set(args.datasets.split(","))
    started = start_marker()
    seeds = args.seeds or (1 if args.quick else SEEDS)
    n = args.devices or sized(DEVICES, 20_000, 1_000, args)
    epsilons = sized(EPSILONS, (1.0, 4.0), (4.0,), args)
    folder = Path(os.environ.get("LDP_BENCH_DATA", DATA_DIR))
    datasets: dict[str, Any] = {}
    missing = []
    for name, loader in (("adult", load_adult), ("breast_cancer", load_breast_cancer)):
        if name not in wanted:
            continue
        ds = loader(folder)
        if ds is None:
            missing.append(name)
            log(f"{name}: not found in {folder}: skipped")
            continue
        datasets[name] = run_dataset(ds, n, epsilons, seeds, mechanisms, not args.no_diffprivlib)
        if name == "adult" and args.ablation:
            datasets[name]["clipping_ablation_validation"] = clipping_ablation(ds, n, 1)
    dimensions = sorted({d["dimension"] for d in datasets.values()}) or [92]
    result = {
        **started,
        "method": "LDP-SGD with the library's default plan; see docs/logistic-regression.md",
        "parameters": {
            "devices": n,
            "seeds": seeds,
            "epsilons": list(epsilons),
            "mechanisms": list(mechanisms),
            "delta": DELTA,
            "diffprivlib": "left out (--no-diffprivlib)"
            if args.no_diffprivlib
            else DIFFPRIVLIB_IMPORT,
        },
        "datasets": datasets,
        "datasets_missing": missing,
        "targets": targets(datasets),
        "cost_per_1e5_reports": [row for d in dimensions for row in cost(d)],
    }
    emit("logistic", result, args.quick, args.output)


if __name__ == "__main__":
    main()
