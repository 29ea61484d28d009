"""Accuracy, latency and memory of kNN classification from LDP reports (issue 10).

For UCI Adult (``adult.data`` / ``adult.test``, the course report's set) and breast
cancer (fixed 70/30 split) from ``../shared/data`` (or ``$LDP_BENCH_DATA``; a missing
set is named in ``datasets_missing``, and the script exits cleanly with none), over
ε ∈ {0.5, 1, 2, 5, 10} and 5 seeds, side by side:

* ``sklearn_knn``: scikit-learn ``KNeighborsClassifier(k)`` on the standardised true
  records (non-private);
* ``radius_knn``: the report's radius-r vote on the true records (non-private), ``r``
  the median distance from a training record to its k-th neighbour; an empty ball votes
  for class 0;
* ``central_laplace``: the report's central-DP ``LaplaceKNN``: the radius-r vote counts
  over the replicated training records plus Laplace(1/ε) noise each, argmax (ε per
  query under add/remove-one neighbours; reimplemented here only);
* ``cells_noiseless``: the kept protocol's classifier on the true records (its test-only
  noise-off switch), what the cells cost before any privacy;
* ``cells`` (kept) and ``coordinates``: the two LDP protocols of
  ``ldp_shared.analyses.knn``, each training record replicated ``R`` times as
  independent devices (one report each), ``k·R`` neighbours.

Then the kept protocol and the other one against 10⁶ stored reports: latency of 1,000
query points (best and median of 3 for the cells, one run of the
other) and the aggregator's memory (its state, and the
query's peak allocation by tracemalloc). ``--quick`` shrinks everything; ``--plot``
redraws ``docs/knn.png`` from the JSON (matplotlib).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker
from _knn_data import Dataset, load_adult, load_breast_cancer
from ldp_shared.analyses.knn import CellCounts, CellProtocol, CoordinateProtocol
from ldp_shared.rand import seeded_rng

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
K = 25
TABLES, BITS = 4, 10
CHUNK = 50_000


def cell_counts(
    proto: CellProtocol, z: np.ndarray, y: np.ndarray, reps: int, seed: int
) -> CellCounts:
    """The aggregator's counters after ``reps`` devices per record have reported.

    GRR reports go through the protocol's own device path. OUE sums are drawn from their
    exact distribution instead (``Bin(m, p) + Bin(n_τ − m, q)`` per counter: given the
    records the bits are independent), since drawing ``2^b·k`` bits for each of 10⁵–10⁶
    devices at every ε and seed would take most of the run; the device path of OUE is
    timed in the latency section and tested in tests/statistical/test_knn.py.
    """
    rng = seeded_rng(seed)
    rows = np.tile(np.arange(len(y)), reps)
    counts = proto.empty_counts()
    if proto.oracle != "oue":  # GRR, or the noiseless reference
        for s in range(0, rows.size, CHUNK):
            part = rows[s : s + CHUNK]
            proto.accumulate(counts, *proto.report(z[part], y[part], rng))
        return counts
    table = rng.integers(0, proto.tables, size=rows.size)
    joint = proto.codes(z)[rows, table] * proto.classes + y[rows]
    true = np.bincount(table * proto.domain + joint, minlength=proto.tables * proto.domain)
    true = true.reshape(proto.tables, proto.domain)
    counts.reports[:] = true.sum(axis=1)
    rest = counts.reports[:, None] - true
    counts.sums[:] = rng.binomial(true, proto.p) + rng.binomial(rest, proto.q)
    return counts


def run_cells(
    d: Dataset, eps: float, seed: int, reps: int, zq: np.ndarray, noiseless: bool = False
) -> dict[str, Any]:
    proto = CellProtocol(
        d.space.dimension, d.classes, eps, tables=TABLES, bits=BITS, seed=seed, noiseless=noiseless
    )
    z = d.space.standardise(d.space.scale_records(d.train_x))
    sc = proto.scores(cell_counts(proto, z, d.train_y, reps, seed), zq, k=K * reps)
    return {
        "predicted": sc.predicted,
        "stderr": float(np.median(sc.stderr)),
        "oracle": proto.oracle,
        "exact_epsilon": proto.exact_epsilon,
    }


def run_coordinates(d: Dataset, eps: float, seed: int, reps: int, tq: np.ndarray) -> dict[str, Any]:
    proto = CoordinateProtocol(d.space.dimension, d.classes, eps)
    t = d.space.scale_records(d.train_x)
    rng = seeded_rng(seed)
    rows = np.tile(np.arange(len(d.train_y)), reps)
    pairs, labels = proto.report(t[rows], d.train_y[rows], rng)
    stored = proto.decode(pairs, labels)
    sc = proto.scores(stored, tq, k=K * reps)
    return {
        "predicted": sc.predicted,
        "stderr": float(np.median(sc.stderr)),
        "exact_epsilon": proto.exact_epsilon,
    }


def references(d: Dataset, zq: np.ndarray, yq: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

    z = d.space.standardise(d.space.scale_records(d.train_x))
    knn = KNeighborsClassifier(n_neighbors=K).fit(z, d.train_y)
    sample = seeded_rng(1).choice(len(z), size=min(2000, len(z)), replace=False)
    dist, _ = NearestNeighbors(n_neighbors=K + 1).fit(z).kneighbors(z[sample])
    radius = float(np.median(dist[:, K]))
    _, idx = NearestNeighbors(radius=radius).fit(z).radius_neighbors(zq)
    votes = np.array([np.bincount(d.train_y[i], minlength=d.classes) for i in idx], float)
    out = {
        "k": K,
        "sklearn_knn": float((knn.predict(zq) == yq).mean()),
        "radius": radius,
        "radius_knn": float((np.argmax(votes, axis=1) == yq).mean()),
        "empty_balls": int((votes.sum(axis=1) == 0).sum()),
        "majority_rate": float(max(np.mean(yq), 1 - np.mean(yq))),
    }
    return out, votes


def central_laplace(votes: np.ndarray, reps: int, eps: float, seed: int, yq: np.ndarray) -> float:
    noisy = votes * reps + seeded_rng(seed).laplace(0.0, 1.0 / eps, votes.shape)
    return float((np.argmax(noisy, axis=1) == yq).mean())


def accuracy_table(
    d: Dataset, sizes: tuple[int, int, int], seeds: int, epsilons: tuple[float, ...]
) -> dict[str, Any]:
    """``sizes``: replication ``R``, query points, and the subset of them the
    per-coordinate protocol answers (its queries cost ``O(n·m)`` each)."""
    reps, queries, coordinate_queries = sizes
    pick = np.sort(
        seeded_rng(7).choice(len(d.test_y), size=min(queries, len(d.test_y)), replace=False)
    )
    tq, _ = d.space.scale_queries(d.test_x[pick])
    zq, yq = d.space.standardise(tq), d.test_y[pick]
    refs, votes = references(d, zq, yq)
    # the cell classifier on the true records (noise off): what the cells cost without LDP
    exact = [
        float((run_cells(d, 1.0, seed, reps, zq, noiseless=True)["predicted"] == yq).mean())
        for seed in range(seeds)
    ]
    refs["cells_noiseless"] = statistics.fmean(exact)
    refs["cells_noiseless_runs"] = exact
    sub = np.sort(
        seeded_rng(8).choice(len(yq), size=min(coordinate_queries, len(yq)), replace=False)
    )
    log(f"{d.name}: {refs}")
    rows = []
    for eps in epsilons:
        acc: dict[str, list[float]] = {
            "cells": [],
            "coordinates": [],
            "cells_on_coordinate_queries": [],
            "central_laplace": [],
        }
        extra: dict[str, Any] = {}
        for seed in range(seeds):
            start = time.perf_counter()
            b = run_cells(d, eps, seed, reps, zq)
            a = run_coordinates(d, eps, seed, reps, tq[sub])
            acc["cells"].append(float((b["predicted"] == yq).mean()))
            acc["coordinates"].append(float((a["predicted"] == yq[sub]).mean()))
            acc["cells_on_coordinate_queries"].append(
                float((b["predicted"][sub] == yq[sub]).mean())
            )
            acc["central_laplace"].append(central_laplace(votes, reps, eps, seed, yq))
            extra = {
                "cells_oracle": b["oracle"],
                "cells_exact_epsilon": b["exact_epsilon"],
                "coordinates_exact_epsilon": a["exact_epsilon"],
                "cells_median_stderr": b["stderr"],
                "coordinates_median_stderr": a["stderr"],
            }
            log(
                f"{d.name} ε={eps} seed={seed}: {[v[-1] for v in acc.values()]} "
                f"({time.perf_counter() - start:.1f}s)"
            )
        rows.append(
            {
                "epsilon": eps,
                **extra,
                **{
                    name: {
                        "mean": statistics.fmean(v),
                        "sd": statistics.stdev(v) if len(v) > 1 else 0.0,
                        "runs": v,
                    }
                    for name, v in acc.items()
                },
            }
        )
    return {
        "devices": reps * len(d.train_y),
        "replication": reps,
        "train_records": len(d.train_y),
        "queries": len(yq),
        "coordinate_queries": len(sub),
        "seeds": seeds,
        "ldp_k": K * reps,
        **refs,
        "by_epsilon": rows,
    }


def latency(d: Dataset, n: int, queries: int) -> dict[str, Any]:
    reps = -(-n // len(d.train_y))
    rows = np.tile(np.arange(len(d.train_y)), reps)[:n]
    t = d.space.scale_records(d.train_x)
    z = d.space.standardise(t)
    q, _ = d.space.scale_queries(d.test_x[:queries])
    rng = seeded_rng(3)
    out: dict[str, Any] = {"stored_reports": n, "query_points": queries, "epsilon": 5.0}
    cells = CellProtocol(d.space.dimension, d.classes, 5.0, tables=TABLES, bits=BITS)
    counts = cells.empty_counts()
    for s in range(0, n, CHUNK):
        table, answers = cells.report(z[rows[s : s + CHUNK]], d.train_y[rows[s : s + CHUNK]], rng)
        cells.accumulate(counts, table, answers)
    coords = CoordinateProtocol(d.space.dimension, d.classes, 5.0)
    pairs, labels = coords.report(t[rows], d.train_y[rows], rng)
    stored = coords.decode(pairs, labels)
    del pairs, labels
    for name, fn, state, repeats in (
        ("cells", lambda: cells.scores(counts, d.space.standardise(q), k=K * reps), counts, 3),
        ("coordinates", lambda: coords.scores(stored, q, k=K * reps), stored, 1),
    ):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out[name] = {
            "repeats": repeats,
            "seconds_best": min(times),
            "seconds_median": statistics.median(times),
            "state_bytes": state.nbytes,
            "query_peak_bytes": peak,
        }
        log(f"latency {name}: {out[name]}")
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = result["datasets"]
    fig, axes = plt.subplots(1, len(sets), figsize=(5.5 * len(sets), 4), squeeze=False)
    for ax, (name, data) in zip(axes[0], sets.items(), strict=True):
        eps = [r["epsilon"] for r in data["by_epsilon"]]
        for key, label in (
            ("cells", "LDP cells (kept)"),
            ("coordinates", "LDP per-coordinate"),
            ("central_laplace", "central Laplace vote"),
        ):
            mean = [r[key]["mean"] for r in data["by_epsilon"]]
            sd = [r[key]["sd"] for r in data["by_epsilon"]]
            ax.errorbar(eps, mean, yerr=sd, marker="o", capsize=3, label=label)
        lines = (
            ("sklearn_knn", "--", "black", "scikit-learn kNN (non-private)"),
            ("radius_knn", ":", "black", "radius-r vote (non-private)"),
            ("cells_noiseless", "--", "tab:blue", "cells, noise off"),
            ("majority_rate", "-.", "grey", "majority class"),
        )
        for key, style, colour, label in lines:
            ax.axhline(data[key], linestyle=style, color=colour, linewidth=1, label=label)
        ax.set_xscale("log")
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.set_xlabel("ε")
        ax.set_ylabel("accuracy")
        ax.set_title(f"{name}: {data['devices']:,} devices, k = {data['k']}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--plot", type=Path, default=None, help="write the PNG plot here too")
    parser.add_argument(
        "--replot", type=Path, default=None, help="only redraw --plot from this result JSON"
    )
    args = parser.parse_args()
    if args.replot is not None:
        plot(json.loads(args.replot.read_text()), args.plot or Path("knn.png"))
        return
    marker = start_marker()
    folder = Path(os.environ.get("LDP_BENCH_DATA", DATA_DIR))
    loaded = {"adult": load_adult(folder), "breast_cancer": load_breast_cancer(folder)}
    missing = [name for name, d in loaded.items() if d is None]
    result: dict[str, Any] = {
        "data_dir_exists": folder.exists(),
        "datasets_missing": missing,
        "tables": TABLES,
        "bits": BITS,
        "datasets": {},
    }
    if len(missing) == len(loaded):
        log(f"no data set found under {folder} (set LDP_BENCH_DATA): nothing measured")
        emit("knn", {**marker, **result}, args.quick, args.output)
        return
    quick = args.quick
    epsilons = (1.0, 5.0) if quick else EPSILONS
    seeds = 2 if quick else 5
    sizes = {
        "adult": sized((10, 4000, 1000), (1, 500, 200), (1, 100, 50), args),
        "breast_cancer": sized((250, 171, 171), (20, 171, 171), (2, 171, 171), args),
    }
    for name, d in loaded.items():
        if d is not None:
            result["datasets"][name] = accuracy_table(d, sizes[name], seeds, epsilons)
    adult = loaded["adult"]
    if adult is not None:
        cells, queries = sized((1_000_000, 1000), (100_000, 200), (2_000, 20), args)
        result["latency"] = latency(adult, cells, queries)
    emit("knn", {**marker, **result}, quick, args.output)
    if args.plot is not None:
        try:
            plot(result, args.plot)
        except ImportError:
            log("matplotlib is not installed (bash bench/setup_peers.sh): no plot drawn")


if __name__ == "__main__":
    main()
