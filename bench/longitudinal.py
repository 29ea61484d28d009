"""Longitudinal mechanisms: what a device is charged over a year, and per-period variance.

1. **Charges over 365 daily reports.** Devices whose value changes ``m ∈ {0, 5, 50}``
   times in a year (on random days, to a random other value) report once a day through
   the SDK's ``Device`` and a real ``Ledger``. For each history: the naive ``365·ε``
   (a fresh GRR report a day at ε), memoisation alone (GRR at ε with the ledger's
   whole-record memo, ``memoize=``: ε per distinct record, identical repeats), L-GRR
   and L-OSUE (ε₁ = ε per report, ε∞ = 2ε per distinct value) and dBitFlipPM (ε per
   report and per distinct bucket vector; minutes in [0, 240], 24 buckets, 2 bits), as
   the ledger charges them.
2. **Per-period variance.** ``N`` memoised devices (one secret each) report for ``T``
   periods while some of them change value; over ``R`` repetitions, each period's
   estimate's empirical variance against the formula (L-GRR and L-OSUE: ``[f p(1−p) +
   (1−f) q(1−q)]/(n(p−q)²)`` at their chained ``p``, ``q``; dBitFlipPM: each error
   standardised by its formula at the run's ``n_v``), per period, with the Monte-Carlo
   interval of the ratio. Beside it, the formula's variance per report at ``f = 0`` of
   L-GRR and L-OSUE as the domain grows (why L-OSUE for large ``d``).
3. **Client speed** of a memoised device's report (one record per call): ``devices``
   keys (at most the randomizer's in-memory memo, ``MEMO_ENTRIES``) each report a value
   for the first time (the permanent step derived with HMAC-SHA256), then again (from
   the memo).
4. **Side by side with multi-freq-ldpy** (``_longitudinal_peers.py``): per-period error
   and client speed of its L-GRR, L-OSUE and dBitFlipPM at the same ε, in interleaved
   A/B pairs.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import base_parser, emit, log, sized, start_marker
from _longitudinal_peers import side_by_side
from ldp_client.device import Device
from ldp_client.ledger import Ledger
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.mechanisms import DBitFlipPM, LongitudinalGRR, LongitudinalOSUE
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

SEED = 20_230_320
EPSILON = 1.0
APPS = [f"app-{i}" for i in range(8)]
CHANGES = [0, 5, 50]
DAYS = 365


def collection(name: str, attribute: dict[str, Any]) -> CollectionConfig:
    spec = {"name": name, "epsilon": EPSILON, "attributes": [{"name": "x", **attribute}]}
    return build_config(CollectionSpec.model_validate(spec))


CONFIGS = {
    "memoisation_alone": collection("memo", {"mechanism": "grr", "domain": APPS}),
    "l_grr": collection(
        "lgrr", {"mechanism": "l-grr", "domain": APPS, "permanent_epsilon": 2 * EPSILON}
    ),
    "l_osue": collection(
        "losue", {"mechanism": "l-osue", "domain": APPS, "permanent_epsilon": 2 * EPSILON}
    ),
    "dbitflippm": collection(
        "dbit", {"mechanism": "dbitflippm", "lo": 0, "hi": 240, "buckets": 24, "bits": 2}
    ),
}


def history(changes: int, gen: np.random.Generator) -> list[int]:
    """A year of one device: a value index per day, changing on ``changes`` random days."""
    days = set(gen.choice(np.arange(1, DAYS), size=changes, replace=False).tolist())
    value = int(gen.integers(len(APPS)))
    out = []
    for day in range(DAYS):
        if day in days:
            value = (value + 1 + int(gen.integers(len(APPS) - 1))) % len(APPS)
        out.append(value)
    return out


def charged(name: str, days: list[int], folder: Path, gen: np.random.Generator) -> float:
    config = CONFIGS[name]
    memoize = {config.name} if name == "memoisation_alone" else set()
    with Ledger(folder / f"{name}.sqlite3") as ledger:
        device = Device.make(None, ledger, memoize)
        for value in days:
            raw: Any = APPS[value] if name != "dbitflippm" else 10.0 * value + 5.0
            device.privatize(config, {"x": raw}, gen)
        return ledger.spending(config.name).epsilon


def charges(devices: int, gen: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for m in CHANGES:
        found: dict[str, list[float]] = {name: [] for name in CONFIGS}
        distinct = []
        for _ in range(devices):
            days = history(m, gen)
            distinct.append(len(set(days)))
            with tempfile.TemporaryDirectory(dir=_fast_dir()) as folder:
                for name in CONFIGS:
                    found[name].append(charged(name, days, Path(folder), gen))
        rows.append(
            {
                "changes": m,
                "devices": devices,
                "distinct_values_mean": float(np.mean(distinct)),
                "naive_365_epsilon": DAYS * EPSILON,
                **{f"{k}_mean": float(np.mean(v)) for k, v in found.items()},
                **{f"{k}_max": float(np.max(v)) for k, v in found.items()},
            }
        )
        log(f"m = {m}: {rows[-1]}")
    return rows


def _fast_dir() -> str | None:
    """A RAM-backed folder when there is one (the ledger fsyncs every commit)."""
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def device_keys(count: int, gen: np.random.Generator) -> list[bytes]:
    return [row.tobytes() for row in gen.integers(0, 256, size=(count, 32), dtype=np.uint8)]


def drifting_values(n: int, periods: int, d: int, gen: np.random.Generator) -> np.ndarray:
    """``n × periods`` values: skewed, and a tenth of the devices move up one a period."""
    start = np.minimum(gen.geometric(0.35, size=n) - 1, d - 1)
    movers = gen.random(n) < 0.1
    steps = np.arange(periods)[None, :] * movers[:, None]
    return np.asarray((start[:, None] + steps) % d, dtype=np.int64)


def ratio_row(ratios: np.ndarray, runs: int) -> dict[str, Any]:
    """Mean variance ratio over the cells and its rough 95 % Monte-Carlo half-width."""
    half = 1.96 * math.sqrt(2.0 / (runs - 1) / ratios.size)  # cells pooled as independent
    return {
        "ratio_mean": float(np.mean(ratios)),
        "ratio_min": float(np.min(ratios)),
        "ratio_max": float(np.max(ratios)),
        "approx_halfwidth": half,
    }


def lgrr_variance(n: int, periods: int, runs: int, gen: np.random.Generator) -> dict[str, Any]:
    mech = LongitudinalGRR(d=len(APPS), epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
    values = drifting_values(n, periods, mech.d, gen)
    estimates = np.empty((runs, periods, mech.d))
    for r in range(runs):
        permanent = np.vstack(
            [mech.permanent(row, key) for row, key in zip(values, device_keys(n, gen), strict=True)]
        )
        for t in range(periods):
            reports = mech.instantaneous(permanent[:, t], gen)
            counts = np.bincount(reports, minlength=mech.d)
            estimates[r, t] = mech.estimate_stats({"counts": counts}, n, 0.95).estimate
    per_period = []
    for t in range(periods):
        f = np.bincount(values[:, t], minlength=mech.d) / n
        ratios = estimates[:, t].var(axis=0, ddof=1) / mech.variance(f, n)
        per_period.append(ratio_row(ratios, runs))
    return {"d": mech.d, "epsilon": EPSILON, "epsilon_infinity": 2 * EPSILON, "periods": per_period}


def losue_variance(n: int, periods: int, runs: int, gen: np.random.Generator) -> dict[str, Any]:
    mech = LongitudinalOSUE(d=len(APPS), epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
    values = drifting_values(n, periods, mech.d, gen)
    estimates = np.empty((runs, periods, mech.d))
    for r in range(runs):
        permanent = np.stack(  # n × periods × ceil(d/8) packed permanent vectors
            [mech.permanent(row, key) for row, key in zip(values, device_keys(n, gen), strict=True)]
        )
        for t in range(periods):
            reports = mech.instantaneous(permanent[:, t], gen)
            counts = np.unpackbits(reports, axis=1, count=mech.d).sum(axis=0, dtype=np.int64)
            estimates[r, t] = mech.estimate_stats({"counts": counts}, n, 0.95).estimate
    per_period = []
    for t in range(periods):
        f = np.bincount(values[:, t], minlength=mech.d) / n
        ratios = estimates[:, t].var(axis=0, ddof=1) / mech.variance(f, n)
        per_period.append(ratio_row(ratios, runs))
    return {"d": mech.d, "epsilon": EPSILON, "epsilon_infinity": 2 * EPSILON, "periods": per_period}


def variance_by_domain() -> list[dict[str, Any]]:
    """The formula's variance of one report at ``f = 0`` (``q(1−q)/(p−q)²``), L-GRR against
    L-OSUE at ε₁ = ε, ε∞ = 2ε, as ``d`` grows."""
    rows = []
    for d in (2, 4, 8, 16, 64, 256, 1024):
        lgrr = LongitudinalGRR(d=d, epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
        losue = LongitudinalOSUE(d=d, epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
        row: dict[str, Any] = {"d": d}
        for name, mech in (("l_grr", lgrr), ("l_osue", losue)):
            row[f"{name}_variance_per_report"] = float(mech.variance(np.zeros(1), 1)[0])
        rows.append(row)
    return rows


def dbitflip_variance(n: int, periods: int, runs: int, gen: np.random.Generator) -> dict[str, Any]:
    mech = DBitFlipPM(d=8, b=2, epsilon=EPSILON)
    values = drifting_values(n, periods, mech.d, gen)
    z = np.empty((runs, periods, mech.d))
    for r in range(runs):
        answers = np.stack(
            [
                mech.perturb_memoised(row, key)
                for row, key in zip(values, device_keys(n, gen), strict=True)
            ]
        )
        for t in range(periods):
            stats = mech.accumulate(answers[:, t])
            f = np.bincount(values[:, t], minlength=mech.d) / n
            f_hat = mech.estimate_stats(stats, n, 0.95).estimate
            curve = mech.variance_curve(stats["sampled"].astype(np.float64), n)
            z[r, t] = (f_hat - f) / np.sqrt(curve(f))
    per_period = [ratio_row(z[:, t].var(axis=0, ddof=1), runs) for t in range(periods)]
    return {"d": mech.d, "bits": mech.b, "epsilon": EPSILON, "periods": per_period}


def client_speed(devices: int, gen: np.random.Generator) -> dict[str, Any]:
    out = {}
    lgrr = LongitudinalGRR(d=len(APPS), epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
    losue = LongitudinalOSUE(d=len(APPS), epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
    wide = LongitudinalOSUE(d=256, epsilon=EPSILON, epsilon_infinity=2 * EPSILON)
    dbit = DBitFlipPM(d=24, b=2, epsilon=EPSILON)
    keys = device_keys(devices, gen)
    cases = (("l_grr", lgrr), ("l_osue", losue), ("l_osue_d256", wide), ("dbitflippm", dbit))
    for name, mech in cases:
        one = np.array([3], dtype=np.int64)
        row: dict[str, Any] = {"devices": devices}
        for label in ("first_report", "again"):  # derived with HMAC-SHA256, then memoised
            start = time.perf_counter()
            for key in keys:
                mech.perturb_memoised(one, key, gen)
            row[f"{label}_reports_per_second"] = devices / (time.perf_counter() - start)
        out[name] = row
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    gen = seeded_rng(SEED)
    devices = sized(10, 2, 1, args)
    n, periods, runs = sized((2_000, 4, 300), (500, 3, 40), (100, 2, 5), args)
    result["charges_over_365_days"] = charges(devices, gen)
    log("variance: l-grr")
    result["variance_l_grr"] = lgrr_variance(n, periods, runs, gen)
    log("variance: l-osue")
    result["variance_l_osue"] = losue_variance(n, periods, runs, gen)
    result["variance_by_domain"] = variance_by_domain()
    log("variance: dbitflippm")
    result["variance_dbitflippm"] = dbitflip_variance(n, periods, runs, gen)
    result["variance_setup"] = {"devices": n, "periods": periods, "runs": runs}
    result["client"] = client_speed(sized(4_000, 2_000, 100, args), gen)
    log("side by side with multi-freq-ldpy")
    peer_n, peer_runs, records, pairs = sized(
        (2_000, 200, 2_000, 10), (500, 20, 500, 4), (50, 3, 20, 2), args
    )
    result["multi_freq_ldpy"] = side_by_side(EPSILON, peer_n, peer_runs, records, pairs, gen)
    emit("longitudinal", result, args.quick, args.output)


if __name__ == "__main__":
    main()
