"""Logistic regression against the number of devices: LDP-SGD and the central peers.

The same data, mechanisms and peers as ``bench/logistic.py``, at ε = 1 and ε = 4, for
``n`` ∈ {10³, 3·10³, 10⁴, 3·10⁴, 10⁵, 3·10⁵, 10⁶} people (``np.resize`` of the distinct
training records: below their number a prefix, above it copies). ``--seeds`` seeds up to
10⁵ (default 3) and one above (the runs there are the long ones, and their spread over
seeds is small: see ``bench/results/logistic.json``).

**Below 10⁴ devices** the library refuses a job (``plan_training`` needs 10 rounds of at
least 1,000 reports). The sweep then extends the planner's own rule for too few devices
past that floor: 10 rounds of ``⌊n/10⌋``, the step ``η = min(1/S, 0.5·B·0.95/V)`` (the
noise allows no more), the default clipping. These points show what so few devices can
do; the library does not offer them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker
from _logistic_data import Dataset, load_adult, load_breast_cancer
from _logistic_peers import DIFFPRIVLIB_IMPORT, central_rows
from ldp_shared.analyses.logistic.planning import (
    JITTER,
    MIN_ROUND_SIZE,
    MIN_ROUNDS,
    default_bound,
    noise_trace,
    plan_training,
    smoothness,
)
from ldp_shared.analyses.logistic.training import TrainingPlan
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from logistic import DELTA, MECHANISMS, delta_for, plan_fields, run, summary

EPSILONS = (1.0, 4.0)
DEVICES = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
QUICK_DEVICES = (1_000, 10_000, 30_000)
SEEDS = 3
MANY = 100_000
"""Above this, one seed."""


def small_plan(ds: Dataset, n: int, mechanism: str | None, eps: float) -> TrainingPlan:
    """``plan_training`` from 10⁴ devices; below it, its too-few-devices rule extended."""
    delta = delta_for(mechanism)
    if n >= MIN_ROUND_SIZE * MIN_ROUNDS:
        return plan_training(ds.layout, n, mechanism, eps, delta=delta)
    size = n // MIN_ROUNDS
    rate = 1.0 / smoothness(ds.layout, 1e-4)
    bound = 1.0
    if mechanism is not None:
        probe = gradient_randomizer(mechanism, ds.layout.dimension, eps, 1.0, delta)
        bound = default_bound(ds.layout, probe)
        mech = gradient_randomizer(mechanism, ds.layout.dimension, eps, bound, delta)
        rate = min(rate, JITTER * size * 0.95 / noise_trace(mech))
    return TrainingPlan(
        mechanism=mechanism,
        epsilon=eps,
        round_size=size,
        rounds=MIN_ROUNDS,
        learning_rate=rate,
        bound=bound,
        delta=delta,
    )


def sweep(ds: Dataset, sizes: tuple[int, ...], seeds: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    central: list[dict[str, Any]] = []
    for n in sizes:
        devices = np.resize(np.arange(len(ds.train.x)), n)
        k = seeds if n <= MANY else 1
        off = small_plan(ds, n, None, 1.0)
        rows.append({"mechanism": None, "epsilon": None, "devices": n,
                     "plan": plan_fields(off), **summary([run(ds, off, devices, 0)])})  # fmt: skip
        for mechanism in MECHANISMS:
            for eps in EPSILONS:
                plan = small_plan(ds, n, mechanism, eps)
                s = summary([run(ds, plan, devices, seed) for seed in range(k)])
                rows.append(
                    {"mechanism": mechanism, "epsilon": eps, "devices": n, "seeds": k,
                     "plan": plan_fields(plan), **s}
                )  # fmt: skip
                log(
                    f"{ds.name} n={n:>7} {mechanism:17} ε={eps}: "
                    f"acc {s['test_accuracy_mean']:.4f}, auc {s['test_auc_mean']:.4f}"
                )
        central += central_rows(ds, n, EPSILONS, DELTA, k)
    return {"dimension": ds.layout.dimension, "ldp": rows, "central": central}


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds up to 10⁵ ({SEEDS})")
    args = parser.parse_args()
    started = start_marker()
    seeds = args.seeds or (1 if args.quick else SEEDS)
    sizes = sized(DEVICES, QUICK_DEVICES, (500,), args)
    folder = Path(os.environ.get("LDP_BENCH_DATA", DATA_DIR))
    datasets: dict[str, Any] = {}
    missing = []
    for name, loader in (("adult", load_adult), ("breast_cancer", load_breast_cancer)):
        ds = loader(folder)
        if ds is None:
            missing.append(name)
            log(f"{name}: not found in {folder}: skipped")
            continue
        datasets[name] = sweep(ds, sizes, seeds)
    result = {
        **started,
        "method": "LDP-SGD and central peers against the number of devices; "
        "see docs/logistic-regression.md",
        "parameters": {
            "devices": list(sizes),
            "seeds_up_to_1e5": seeds,
            "epsilons": list(EPSILONS),
            "mechanisms": list(MECHANISMS),
            "delta": DELTA,
            "diffprivlib": DIFFPRIVLIB_IMPORT,
            "small_n_rule": "n < 1e4: 10 rounds of n/10, eta = min(1/S, 0.5*B*0.95/V)",
        },
        "datasets": datasets,
        "datasets_missing": missing,
    }
    emit("logistic_devices", result, args.quick, args.output)


if __name__ == "__main__":
    main()
