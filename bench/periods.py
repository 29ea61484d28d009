"""Periods (issue 20): trend interval coverage, window latency, ingestion before and after.

1. **Trend coverage.** A fixed population per period (seeded) whose values drift: a
   categorical one (GRR d = 8, OUE d = 16; from a Zipf distribution to its mirror image)
   and a numeric one in [0, 100] (piecewise, duchi; mean from 20 to 80), ``n`` per period
   rising from n/2 to 3n/2, ε = 1. Each repetition privatizes every period's records
   through the SDK's ``Privatizer``, decodes each period's reports as the aggregator
   does (``statistics_of``) and releases each period as a trend point is released
   (``frequency_result`` / ``mean_result``). Per mechanism: how often the 95 % interval
   covers the period's true frequency or mean, and the per-period variance of the
   estimate over the mean stated variance (stderr²), each with a bootstrap interval over
   the repetitions.
2. **Window latency.** One collection (GRR d = 16, OUE d = 16, piecewise; ε = 4, split)
   filled with 10⁴, 10⁵, 10⁶ reports over 365 days through ``ingest_batch(..., at=day,
   writer=ReportWriter)`` in batches of at most 1,000 (real SQLite files): the frequencies
   of each categorical attribute and the mean over windows of 1, 30 and 365 days, and the
   trend over 365 days, in-process (window parsed, statistics read, estimate, JSON
   serialised; no HTTP), p50/p95 over repeats interleaved across sizes.
3. **Ingestion unchanged.** ``_periods_loop.py`` (``ingest_batch`` with a ``ReportWriter``,
   batches of 1,000, SQLite in a temporary folder) under HEAD's code and under
   the commit before periods (each extracted by ``git archive`` into a temporary folder and
   imported through ``PYTHONPATH``), in interleaved pairs; reports/s ratio per pair.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from _common import REPO_ROOT, base_parser, emit, log, sized, start_marker, zipf_frequencies
from _periods_loop import OUE16, batches_of, config_of, ingestion_ab
from ldp_aggregator.frequencies import estimate_frequencies, frequency_result
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.means import estimate_mean, mean_result
from ldp_aggregator.storage.collections import insert_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.stats import statistics_of
from ldp_aggregator.trends import trend_result
from ldp_aggregator.writer import ReportWriter
from ldp_shared.codec import Privatizer
from ldp_shared.periods import parse_window
from ldp_shared.rand import seeded_rng

SEED = 20_261_126
CONFIDENCE = 0.95
COVERAGE_TARGET = (0.93, 0.97)
RATIO_TARGET = (0.9, 1.1)
LATENCY_TARGET_MS = 50.0
BOOTSTRAP = 2_000
COVERAGE_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "grr": {"mechanism": "grr", "domain": OUE16[:8]},
    "oue": {"mechanism": "oue", "domain": OUE16},
    "piecewise": {"mechanism": "piecewise", "lo": 0.0, "hi": 100.0},
    "duchi": {"mechanism": "duchi", "lo": 0.0, "hi": 100.0},
}
WINDOW_ATTRIBUTES = [
    {"name": "g", "mechanism": "grr", "domain": OUE16},
    {"name": "o", "mechanism": "oue", "domain": OUE16},
    {"name": "v", "mechanism": "piecewise", "lo": 0.0, "hi": 100.0},
]


# ---- 1. trend interval coverage ---------------------------------------------------------


def population(attribute: dict[str, Any], sizes: np.ndarray, gen: np.random.Generator) -> Any:
    """Every period's values (one column, periods one after the other) and each period's
    truth: its values' frequencies (periods × d) or their mean (periods × 1)."""
    drift = np.linspace(0.0, 1.0, len(sizes))
    parts, truth = [], []
    for n, w in zip(sizes.tolist(), drift.tolist(), strict=True):
        if "domain" in attribute:
            d = len(attribute["domain"])
            f = (1 - w) * zipf_frequencies(d) + w * zipf_frequencies(d)[::-1]
            values = gen.choice(d, size=n, p=f)
            truth.append(np.bincount(values, minlength=d) / n)
            parts.append(np.asarray(attribute["domain"])[values])
        else:
            values = 100.0 * gen.beta(2 + 6 * w, 8 - 6 * w, size=n)
            truth.append(np.array([values.mean()]))
            parts.append(values)
    return np.concatenate(parts), np.stack(truth)


def released(config: Any, stats: Any) -> np.ndarray:
    """Estimate, stderr, low and high of the attribute ``x`` (4 × values)."""
    if config.spec_of(config.attributes[0]).released_as == "mean":
        m = mean_result(config, stats, "x", CONFIDENCE)
        return np.array([[m.mean], [m.stderr], [m.ci_low], [m.ci_high]])
    f = frequency_result(config, stats, "x", CONFIDENCE)
    return np.array([f.estimate, f.stderr, f.ci_low, f.ci_high])


def bootstrap_range(values: np.ndarray) -> list[float]:
    """The 95 % percentile interval of a statistic over resampled repetitions."""
    return np.percentile(values, [2.5, 97.5]).tolist()


def summarise(out: np.ndarray, truth: np.ndarray, gen: np.random.Generator) -> dict[str, Any]:
    """Coverage and variance ratio of ``out`` (runs × periods × 4 × values)."""
    runs = out.shape[0]
    est, se, low, high = (out[:, :, k] for k in range(4))
    covered = (low <= truth) & (truth <= high)
    weights = gen.multinomial(runs, np.full(runs, 1.0 / runs), size=BOOTSTRAP) / runs
    per_run = covered.mean(axis=(1, 2))
    error, stated = (est - truth).reshape(runs, -1), (se**2).reshape(runs, -1)
    cells = error.var(axis=0, ddof=1) / stated.mean(axis=0)
    first, second = weights @ error, weights @ error**2
    boot = ((second - first**2) * runs / (runs - 1) / (weights @ stated)).mean(axis=1)
    coverage, ratio = float(per_run.mean()), float(cells.mean())
    return {
        "coverage": coverage,
        "coverage_bootstrap_95": bootstrap_range(weights @ per_run),
        "coverage_per_period": covered.mean(axis=(0, 2)).tolist(),
        "coverage_met": COVERAGE_TARGET[0] <= coverage <= COVERAGE_TARGET[1],
        "variance_ratio": ratio,
        "variance_ratio_bootstrap_95": bootstrap_range(boot),
        "variance_ratio_per_period": cells.reshape(truth.shape).mean(axis=1).tolist(),
        "variance_ratio_cells_min_max": [float(cells.min()), float(cells.max())],
        "variance_ratio_met": RATIO_TARGET[0] <= ratio <= RATIO_TARGET[1],
        "bias_over_stderr": float((error.mean(axis=0) / np.sqrt(stated.mean(axis=0))).mean()),
    }


def trend_coverage(n: int, periods: int, runs: int, gen: np.random.Generator) -> dict[str, Any]:
    sizes = np.rint(n * np.linspace(0.5, 1.5, periods)).astype(np.int64)
    edges = np.concatenate([[0], np.cumsum(sizes)])
    out: dict[str, Any] = {"setup": {"n_per_period": sizes.tolist(), "runs": runs, "epsilon": 1.0}}
    for name, attribute in COVERAGE_ATTRIBUTES.items():
        config = config_of(f"trend-{name}", [{"name": "x", **attribute}], epsilon=1.0)
        column, truth = population(attribute, sizes, gen)
        privatizer = Privatizer(config)
        results = []
        for _ in range(runs):
            packed = privatizer.privatize_columns({"x": column}, gen)
            results.append(
                [
                    released(config, statistics_of(config, packed[a:b]))
                    for a, b in itertools.pairwise(edges)
                ]
            )
        out[name] = summarise(np.asarray(results), truth, gen)
        found = out[name]
        log(f"{name}: coverage {found['coverage']:.4f}, ratio {found['variance_ratio']:.3f}")
    return out


# ---- 2. window latency ------------------------------------------------------------------


def populate(folder: Path, n: int, days: int, gen: np.random.Generator) -> dict[str, Any]:
    """A SQLite database whose one collection holds ``n`` reports spread over ``days``
    days ending today, each day's counted in that day's period by ``ingest_batch``."""
    config = config_of(f"window-{n}", WINDOW_ATTRIBUTES)
    engine = make_engine(f"sqlite:///{folder}/window-{n}.db")
    upgrade(engine)
    collection = insert_collection(engine, config)
    columns = {
        "g": np.asarray(OUE16)[gen.integers(0, 16, size=n)],
        "o": np.asarray(OUE16)[gen.choice(16, size=n, p=zipf_frequencies(16))],
        "v": gen.uniform(0.0, 100.0, size=n),
    }
    packed = Privatizer(config).privatize_columns(columns, gen)
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    writer, seconds = ReportWriter(engine), 0.0
    try:
        for day, rows in enumerate(np.array_split(np.arange(n), days)):
            at = midnight - timedelta(days=days - 1 - day) + timedelta(minutes=1)
            for batch in batches_of(config, packed[rows], 1_000, gen):
                start = time.perf_counter()
                ingest_batch(engine, collection, batch, at=at, writer=writer)
                seconds += time.perf_counter() - start
    finally:
        writer.close()
    with engine.connect() as connection:
        rows = connection.exec_driver_sql("SELECT count(*) FROM collection_stats").scalar()
    labels = [(midnight - timedelta(days=days - 1 - k)).date().isoformat() for k in range(days)]
    return {
        "engine": engine,
        "collection": collection,
        "labels": labels,
        "filled_reports_per_second": n / seconds,
        "statistics_rows": rows,
        "database_mib": (folder / f"window-{n}.db").stat().st_size / 2**20,
    }


def window_estimate(engine: Any, collection: Any, name: str, first: str, last: str) -> str:
    """What ``GET .../frequencies`` (or ``.../means``) does with ``from``/``to``, without
    HTTP: the window parsed, the statistics of its periods read, the estimate, its JSON."""
    estimate = estimate_mean if name == "v" else estimate_frequencies
    window = parse_window(first, last, "day")
    return estimate(engine, collection, name, window=window).model_dump_json()


def trend(engine: Any, collection: Any, name: str, first: str, last: str) -> str:
    return trend_result(engine, collection, name, first, last).model_dump_json()


def queries(db: dict[str, Any], windows: list[int]) -> dict[str, Callable[[], str]]:
    engine, collection, labels = db["engine"], db["collection"], db["labels"]
    out: dict[str, Callable[[], str]] = {}
    for name, kind in (("g", "grr_frequencies"), ("o", "oue_frequencies"), ("v", "piecewise_mean")):
        for span in windows:
            out[f"{kind}_{span}d"] = partial(
                window_estimate, engine, collection, name, labels[-span], labels[-1]
            )
        out[f"{kind.split('_')[0]}_trend_{len(labels)}d"] = partial(
            trend, engine, collection, name, labels[0], labels[-1]
        )
    return out


def window_latency(
    sizes: list[int], days: int, repeats: int, gen: np.random.Generator
) -> dict[str, Any]:
    windows = sorted({1, min(30, days), days})
    times: dict[tuple[int, str], list[float]] = {}
    out: dict[str, Any] = {
        "days": days,
        "windows_days": windows,
        "repeats": repeats,
        "sizes": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        dbs = {}
        for n in sizes:
            log(f"window latency: filling {n:,} reports over {days} days")
            dbs[n] = populate(Path(folder), n, days, gen)
        calls = {n: queries(db, windows) for n, db in dbs.items()}
        for round_ in range(repeats + 5):  # 5 warm-up rounds
            for n in sizes:
                for key, call in calls[n].items():
                    start = time.perf_counter()
                    call()
                    if round_ >= 5:
                        times.setdefault((n, key), []).append(1e3 * (time.perf_counter() - start))
        for n, db in dbs.items():
            cells = {
                key: {
                    "p50_ms": float(np.percentile(times[n, key], 50)),
                    "p95_ms": float(np.percentile(times[n, key], 95)),
                    "max_ms": float(np.max(times[n, key])),
                }
                for key in calls[n]
            }
            keep = ("filled_reports_per_second", "statistics_rows", "database_mib")
            out["sizes"][str(n)] = {**{k: db[k] for k in keep}, "latency": cells}
            db["engine"].dispose()
    small, large = (
        out["sizes"][str(sizes[0])]["latency"],
        out["sizes"][str(sizes[-1])]["latency"],
    )
    estimates = [key for key in small if "_trend_" not in key]
    worst = max(out["sizes"][str(n)]["latency"][key]["p95_ms"] for n in sizes for key in estimates)
    out["estimate_worst_p95_ms"] = worst
    out["estimate_met"] = worst < LATENCY_TARGET_MS
    out["trend_worst_p95_ms"] = max(
        out["sizes"][str(n)]["latency"][key]["p95_ms"]
        for n in sizes
        for key in small
        if "_trend_" in key
    )
    out["p50_largest_over_smallest"] = {
        key: large[key]["p50_ms"] / small[key]["p50_ms"] for key in small
    }
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    result["method"] = {
        "trend_coverage": "fixed population per period (seeded); each repetition redraws only"
        " the perturbation: Privatizer.privatize_columns -> statistics_of per period ->"
        " frequency_result / mean_result (what a trend point releases); truth = the period's"
        " values' frequencies or mean; ranges: 95% bootstrap over repetitions",
        "window_latency": "statistics rows written by ingest_batch(at=day, writer=ReportWriter)"
        " on SQLite files; timed in-process: parse_window, estimate_frequencies/estimate_mean"
        " (or trend_result), model_dump_json; no HTTP",
        "ingestion": "bench/_periods_loop.py under each commit's package folders (git archive),"
        " interleaved pairs; reports/s wall clock and CPU ms per 1,000 reports",
    }
    gen = seeded_rng(SEED)
    n, periods, runs = sized((2_000, 12, 1_000), (1_000, 6, 100), (200, 3, 8), args)
    result["trend_coverage"] = trend_coverage(n, periods, runs, gen)
    sizes = sized([10_000, 100_000, 1_000_000], [10_000, 100_000], [2_000], args)
    days, repeats = sized((365, 100), (365, 20), (20, 3), args)
    result["window_latency"] = window_latency(sizes, days, repeats, gen)
    pairs, batches = sized((8, 200), (3, 50), (1, 3), args)
    result["ingestion_before_after"] = ingestion_ab(REPO_ROOT, pairs, batches)
    emit("periods", result, args.quick, args.output)


if __name__ == "__main__":
    main()
