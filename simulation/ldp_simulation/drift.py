"""``ldpcollect simulate --periods N``: a population whose values drift over N days,
counted day by day, and its trend against the truth.

A running aggregator counts every report in the period in which it accepts it, the
current one, so a fleet sent over HTTP cannot fill past days. This simulation therefore
runs the aggregator in-process, on a SQLite file in a temporary folder: each day's
devices privatize their records with the client's code
(:func:`ldp_client.privatize.privatize_columns`), and their reports are counted in that
day (:func:`ldp_aggregator.ingest.ingest_batch` with ``at=``), as a server would have
counted them on the day. The trend is then read through
:func:`ldp_aggregator.trends.trend_result`, the function behind ``GET .../trend``.

The population is synthetic. Each day's devices hold an ``os`` whose shares move in a
straight line (android 60% → 35%, ios 30% → 55%, other 10%), and the ``minutes`` of use
that day, normal around a mean that rises from 30 to 60 (sd 20, bounded to [0, 240]).
The truth of a day is what that day's devices hold: the share of each ``os``, and the
mean of ``minutes`` within its bounds, which is what the estimates estimate.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine

from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.trends import trend_result
from ldp_client.privatize import privatize_columns
from ldp_shared.accountant import allotted_epsilons
from ldp_shared.errors import ConfigurationError
from ldp_shared.periods import PERIOD_SECONDS, period_label, period_start, start_instant
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.trend_series import SeriesPoint, series
from ldp_shared.wire.reports import MAX_BATCH, ReportBatch
from ldp_simulation.demo_numeric import choose_mechanism

COLLECTION = "drift"
PERIOD = "day"
OSES = ("android", "ios", "other")
FIRST_SHARES = np.array([0.60, 0.30, 0.10])
LAST_SHARES = np.array([0.35, 0.55, 0.10])
MINUTES_BOUNDS = (0.0, 240.0)
FIRST_MEAN, LAST_MEAN, MINUTES_SD = 30.0, 60.0, 20.0
MIN_PER_PERIOD = 1_000
"""Fewest devices a day: below, a day's intervals are too wide to show a drift."""


@dataclass(frozen=True)
class DriftOptions:
    """The options of ``ldpcollect simulate --periods``."""

    periods: int
    clients: int = 100_000
    """Devices over all the days, an equal number each day."""
    epsilon: float = 4.0
    mechanism: str = "oue"
    confidence: float = 0.95
    budget: str = "sample"
    seed: int | None = None


@dataclass(frozen=True)
class DriftRow:
    """One day of one followed value (``"mean"`` for ``minutes``) against its truth."""

    value: str
    truth: float
    point: SeriesPoint

    @property
    def covered(self) -> bool | None:
        """Whether the interval holds the truth (``None``: the day was withheld)."""
        low, high = self.point.ci_low, self.point.ci_high
        if low is None or high is None:
            return None
        return low <= self.truth <= high


@dataclass
class DriftResult:
    """The trend of each attribute next to the truth, day by day."""

    periods: int
    per_period: int
    epsilon: float
    budget: str
    confidence: float
    mechanisms: dict[str, str]
    rows: dict[str, list[DriftRow]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def intervals(self) -> int:
        return sum(row.covered is not None for rows in self.rows.values() for row in rows)

    @property
    def covered(self) -> int:
        return sum(row.covered is True for rows in self.rows.values() for row in rows)

    def to_json(self) -> dict[str, Any]:
        low, high = chance_range(self.intervals, self.confidence)
        return {
            **{k: v for k, v in asdict(self).items() if k != "rows"},
            "collection": COLLECTION,
            "period": PERIOD,
            "trends": {
                name: [
                    {
                        "value": row.value,
                        "truth": row.truth,
                        **asdict(row.point),
                        "covered": row.covered,
                    }
                    for row in rows
                ]
                for name, rows in self.rows.items()
            },
            "intervals": self.intervals,
            "covered": self.covered,
            "expected_by_chance": [low, high],
        }


def drift_spec(options: DriftOptions) -> tuple[CollectionSpec, dict[str, str]]:
    """The collection, and each attribute's mechanism (``minutes``: the lattice
    mechanism with the smallest worst-case variance at the ε it is allotted)."""

    def spec_with(numeric: str) -> CollectionSpec:
        lo, hi = MINUTES_BOUNDS
        return CollectionSpec.model_validate(
            {
                "name": COLLECTION,
                "description": "ldpcollect simulate --periods: a drifting population",
                "epsilon": options.epsilon,
                "budget": options.budget,
                "period": PERIOD,
                "attributes": [
                    {"name": "os", "domain": list(OSES), "mechanism": options.mechanism},
                    {"name": "minutes", "mechanism": numeric, "lo": lo, "hi": hi},
                ],
            }
        )

    share = allotted_epsilons(spec_with("piecewise"))[1]
    assert share is not None  # minutes takes a share of ε
    numeric, _ = choose_mechanism(share)
    return spec_with(numeric), {"os": options.mechanism, "minutes": numeric}


def population(k: int, periods: int, n: int, gen: np.random.Generator) -> dict[str, Any]:
    """Day ``k``'s ``n`` devices: their ``os`` (as indices) and ``minutes``."""
    t = k / (periods - 1) if periods > 1 else 0.0
    shares = FIRST_SHARES + t * (LAST_SHARES - FIRST_SHARES)
    mean = FIRST_MEAN + t * (LAST_MEAN - FIRST_MEAN)
    return {
        "os": gen.choice(len(OSES), size=n, p=shares),
        "minutes": np.clip(gen.normal(mean, MINUTES_SD, n), *MINUTES_BOUNDS),
    }


def _count_in(
    engine: Engine,
    collection: StoredCollection,
    columns: dict[str, Any],
    at: datetime,
    rng: np.random.Generator | None,
) -> None:
    """The devices' reports, privatized by the client code, counted in ``at``'s period."""
    named = {"os": np.asarray(OSES)[columns["os"]], "minutes": columns["minutes"]}
    reports = privatize_columns(collection.config, named, rng)
    for start in range(0, len(reports), MAX_BATCH):
        batch = ReportBatch.model_construct(reports=list(reports[start : start + MAX_BATCH]))
        ingest_batch(engine, collection, batch, at=at)


def simulate_drift(options: DriftOptions) -> DriftResult:
    """Count ``options.periods`` days of a drifting population, the last one today, and
    compare each day's released estimate with that day's truth."""
    started = time.perf_counter()
    per_period = options.clients // options.periods
    if per_period < MIN_PER_PERIOD:
        raise ConfigurationError(
            f"--clients {options.clients:,} over --periods {options.periods} gives"
            f" {per_period:,} devices a day; give at least"
            f" {MIN_PER_PERIOD * options.periods:,} clients ({MIN_PER_PERIOD:,} a day)"
        )
    spec, mechanisms = drift_spec(options)
    gen = np.random.default_rng(options.seed)
    noise = None if options.seed is None else seeded_rng(options.seed + 1)
    today = period_start(datetime.now(UTC), PERIOD)
    starts = [
        today - (options.periods - 1 - k) * PERIOD_SECONDS[PERIOD] for k in range(options.periods)
    ]
    truth: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ldpcollect-drift-") as folder:
        engine = make_engine(f"sqlite:///{Path(folder) / 'drift.db'}")
        try:
            upgrade(engine)
            collection = create_collection(engine, spec)
            for k, start in enumerate(starts):
                columns = population(k, options.periods, per_period, gen)
                _count_in(engine, collection, columns, start_instant(start), noise)
                shares = np.bincount(columns["os"], minlength=len(OSES)) / per_period
                truth.append({"os": shares.tolist(), "minutes": float(columns["minutes"].mean())})
            first, last = period_label(starts[0], PERIOD), period_label(starts[-1], PERIOD)
            trends = {
                name: trend_result(engine, collection, name, first, last, options.confidence)
                for name in ("os", "minutes")
            }
        finally:
            engine.dispose()
    result = DriftResult(
        options.periods, per_period, options.epsilon, options.budget, options.confidence, mechanisms
    )
    for value_index, value in enumerate(OSES):
        truths = [day["os"][value_index] for day in truth]
        result.rows[f"os = {value}"] = _rows(value, truths, series(trends["os"], value))
    truths = [day["minutes"] for day in truth]
    result.rows["minutes"] = _rows("mean", truths, series(trends["minutes"]))
    result.seconds = time.perf_counter() - started
    return result


def _rows(value: str, truths: list[float], points: list[SeriesPoint]) -> list[DriftRow]:
    return [DriftRow(value, t, p) for t, p in zip(truths, points, strict=True)]


def chance_range(n: int, p: float, level: float = 0.95) -> tuple[int, int]:
    """The central ``level`` range of a Binomial(``n``, ``p``) count: how many of ``n``
    independent intervals at confidence ``p`` cover the truth, but for 1 − ``level`` of runs."""
    if n == 0:
        return 0, 0
    if p >= 1.0:
        return n, n
    log_p, log_q = math.log(p), math.log1p(-p)
    pmf = [
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * log_p
            + (n - k) * log_q
        )
        for k in range(n + 1)
    ]
    cumulative = np.cumsum(pmf)
    tail = (1.0 - level) / 2
    low = int(np.searchsorted(cumulative, tail))
    high = int(np.searchsorted(cumulative, 1.0 - tail))
    return low, min(high, n)


def format_drift(result: DriftResult, title: str = "ldpcollect simulate") -> str:
    """The tables the command prints: per attribute, day by day, truth against the trend."""
    level = f"{result.confidence:.0%}"
    lines = [
        f"{title} --periods {result.periods}: {result.per_period:,} devices a day for"
        f" {result.periods} days, ε = {result.epsilon:g} per record (budget {result.budget})",
        "  a synthetic population that drifts: os android 60% → 35%, ios 30% → 55%, other 10%;",
        f"  minutes of use a day, mean {FIRST_MEAN:g} → {LAST_MEAN:g}"
        f" (sd {MINUTES_SD:g}, bounds [{MINUTES_BOUNDS[0]:g}, {MINUTES_BOUNDS[1]:g}])",
        "  counted in-process by an embedded aggregator (SQLite), each day's reports in their",
        "  day; the trend is read as GET .../trend reads it; the truth: what each day's devices"
        " hold",
        "",
    ]
    for name, rows in result.rows.items():
        attribute = name.split(" ")[0]
        lines.append(f"{name} ({result.mechanisms[attribute]})")
        lines.append(
            f"  {'period':<12}{'reports':>9}{'true':>10}{'estimate':>10}"
            f"   {level + ' interval':<22}covered?"
        )
        for row in rows:
            lines.append("  " + _line(row))
        lines.append("")
    low, high = chance_range(result.intervals, result.confidence)
    share = result.covered / result.intervals if result.intervals else 0.0
    lines += [
        f"{result.covered} of {result.intervals} intervals ({share:.1%}) cover the truth;"
        f" at {level}, {result.confidence * result.intervals:.1f} are expected by chance",
        f"  ({low} to {high} in 95% of runs if the intervals were independent, which a day's"
        f" os shares are not quite); {result.seconds:.1f} s in all.",
    ]
    return "\n".join(lines)


def _line(row: DriftRow) -> str:
    digits, point = 2 if row.value == "mean" else 4, row.point
    head = f"{point.period:<12}{point.n_reports:>9,}{row.truth:>10.{digits}f}"
    if point.estimate is None or point.ci_low is None or point.ci_high is None:
        return f"{head}{'withheld':>10}"
    interval = f"[{point.ci_low:.{digits}f}, {point.ci_high:.{digits}f}]"
    return f"{head}{point.estimate:>10.{digits}f}   {interval:<22}{'yes' if row.covered else 'NO'}"
