"""What the consistent rule estimator costs: bias, RMSE and interval coverage of MASK
rule confidences and lifts, the projected estimator against the plain ratio.

The estimators (``ldp_shared.analyses.itemsets.rules``; MASK: Rizvi and Haritsa, VLDB
2002): ``ratio`` is ``ŝ(A∪C)/ŝ(A)`` from the unbiased supports with ``estimate ±
z·stderr`` (``association_rules(..., projected=False)``, the estimator before issue 24);
``projected`` takes the supports from the itemset's ``2^k`` cells projected onto the
simplex, states at most 1/2 as a confidence's standard error and clips the intervals
to the ranges (the default).

One fixed set of true baskets per setting is distorted ``runs`` times with MASK (fixed
seed) and mined each time at half the targets' minimum support, so that the targets
are found in (almost) every run; the targets are the rules of the true baskets
(``BitChannel.exact()``) at ``min_support``, and their truth is their confidence and
lift in those baskets. Settings:

* ``implications``: 8 items, each in 20 % of the baskets, item 1 in every basket that
  holds item 0 and item 2 in 90 % of those holding item 1, so several true
  confidences are exactly 1 (where the constraint binds); n = 2,000, 20,000, 200,000 at
  p = 0.9, and an extreme job: n = 2,000 at p = 0.7.
* ``quest``: a seeded Quest-style set (``ldp_simulation.baskets``), 10,000 baskets over
  40 items, p = 0.9 and 0.8.
* ``T10I4D100K``: ``../shared/data/T10I4D100K.dat`` (100,000 baskets, 870 items; skipped
  and named in ``datasets_missing`` when absent), p = 0.9, min_support 0.01.

Per estimator and target: mean, bias, RMSE, coverage of the 95 % intervals, mean width,
the share of confidences above 1 and the share flagged uninformative; summaries over
all targets and over those with a true confidence of at least 0.95.

    python bench/itemset_rules.py            # about 4 minutes on 2 vCPUs
    python bench/itemset_rules.py --quick    # a few seconds
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA_DIR, base_parser, emit, log, start_marker
from ldp_shared.analyses.itemsets import (
    AssociationRule,
    BitChannel,
    PackedBits,
    association_rules,
    mine_frequent_itemsets,
)
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import QuestParameters, quest_baskets, read_fimi, unpack_baskets

SEED = 20_241_124
LEVEL = 0.95
ESTIMATORS = {"ratio": False, "projected": True}
Rule = tuple[tuple[int, ...], tuple[int, ...]]


def implications(n: int, seed: int) -> NDArray[np.bool_]:
    """8 items in 20 % of the baskets each; 0 → 1 always, 1 → 2 in 90 % of the baskets."""
    rng = seeded_rng(seed)
    x = rng.random((n, 8)) < 0.2
    x[:, 1] |= x[:, 0]
    x[:, 2] = x[:, 1] & (rng.random(n) < 0.9)
    return x


def _targets(x: NDArray[np.bool_], min_support: float) -> dict[Rule, tuple[float, float]]:
    """The rules of the true baskets: rule → (confidence, lift)."""
    truth = mine_frequent_itemsets(
        PackedBits.from_bool(x), x.shape[1], BitChannel.exact(), min_support, max_size=3
    )
    return {(r.antecedent, r.consequent): (r.confidence, r.lift) for r in association_rules(truth)}


def _runs(
    x: NDArray[np.bool_],
    targets: dict[Rule, tuple[float, float]],
    p: float,
    min_support: float,
    runs: int,
    seed: int,
) -> dict[str, dict[str, NDArray[np.float64]]]:
    """Per estimator: confidence, lift, their interval ends and flags, runs × targets (NaN:
    not found in that run)."""
    mask = Mask(d=x.shape[1], keep_probability=p)
    rng = seeded_rng(seed)
    shape = (runs, len(targets))
    fields = ("conf", "conf_low", "conf_high", "lift", "lift_low", "lift_high", "uninformative")
    out = {name: {f: np.full(shape, np.nan) for f in fields} for name in ESTIMATORS}
    for run in range(runs):
        distorted = PackedBits(np.packbits(mask.perturb(x, rng), axis=1))
        mined = mine_frequent_itemsets(
            distorted, x.shape[1], BitChannel.mask(p), min_support / 2, max_size=3
        )
        for name, projected in ESTIMATORS.items():
            found: dict[Rule, AssociationRule] = {
                (r.antecedent, r.consequent): r
                for r in association_rules(mined, projected=projected)
            }
            for i, rule in enumerate(targets):
                r = found.get(rule)
                if r is None:
                    continue
                values = out[name]
                values["conf"][run, i] = r.confidence
                values["conf_low"][run, i] = r.confidence_ci_low
                values["conf_high"][run, i] = r.confidence_ci_high
                values["lift"][run, i] = r.lift
                values["lift_low"][run, i] = r.lift_ci_low
                values["lift_high"][run, i] = r.lift_ci_high
                values["uninformative"][run, i] = float(not r.informative)
    return out


def _measure(
    estimate: NDArray[np.float64],
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    truth: NDArray[np.float64],
) -> dict[str, Any]:
    """Per target (columns): bias, RMSE, coverage, width over the runs where it was found."""
    error = estimate - truth[None, :]
    found = ~np.isnan(estimate)
    with np.errstate(invalid="ignore"):
        covered = np.where(found, (low <= truth[None, :]) & (truth[None, :] <= high), np.nan)
    return {
        "found": found.mean(axis=0),
        "bias": np.nanmean(error, axis=0),
        "rmse": np.sqrt(np.nanmean(error**2, axis=0)),
        "coverage": np.nanmean(covered, axis=0),
        "width": np.nanmean(high - low, axis=0),
        "above_1": np.nanmean(np.where(found, estimate > 1.0, np.nan), axis=0),
    }


def _summary(per: dict[str, Any], pick: NDArray[np.bool_]) -> dict[str, Any]:
    if not pick.any():
        return {"targets": 0}
    return {
        "targets": int(pick.sum()),
        "mean_abs_bias": float(np.mean(np.abs(per["bias"][pick]))),
        "max_abs_bias": float(np.max(np.abs(per["bias"][pick]))),
        "mean_rmse": float(np.mean(per["rmse"][pick])),
        "mean_coverage": float(np.mean(per["coverage"][pick])),
        "min_coverage": float(np.min(per["coverage"][pick])),
        "mean_width": float(np.mean(per["width"][pick])),
        "share_above_1": float(np.mean(per["above_1"][pick])),
    }


def setting(
    label: str, x: NDArray[np.bool_], p: float, min_support: float, runs: int, seed: int
) -> dict[str, Any]:
    started = time.perf_counter()
    targets = _targets(x, min_support)
    truth = np.array(list(targets.values()))
    near_one = truth[:, 0] >= 0.95
    results = _runs(x, targets, p, min_support, runs, seed)
    warnings.simplefilter("ignore", RuntimeWarning)  # NaN: a target no run found (tiny runs)
    out: dict[str, Any] = {
        "setting": label,
        "n_baskets": int(x.shape[0]),
        "n_items": int(x.shape[1]),
        "p": p,
        "min_support": min_support,
        "mined_at": min_support / 2,
        "runs": runs,
        "targets": len(targets),
        "targets_true_confidence_ge_0.95": int(near_one.sum()),
    }
    for name, values in results.items():
        conf = _measure(values["conf"], values["conf_low"], values["conf_high"], truth[:, 0])
        lift = _measure(values["lift"], values["lift_low"], values["lift_high"], truth[:, 1])
        everything = np.ones(len(targets), dtype=bool)
        out[name] = {
            "confidence": _summary(conf, everything),
            "confidence_true_ge_0.95": _summary(conf, near_one),
            "lift": _summary(lift, everything),
            "share_uninformative": float(np.nanmean(values["uninformative"])),
            "share_found": float(np.mean(conf["found"])),
        }
    out["seconds"] = time.perf_counter() - started
    ratio, projected = out["ratio"]["confidence"], out["projected"]["confidence"]
    log(
        f"[{label}] {len(targets)} targets: coverage {ratio['mean_coverage']:.3f} → "
        f"{projected['mean_coverage']:.3f}, mean |bias| {ratio['mean_abs_bias']:.4f} → "
        f"{projected['mean_abs_bias']:.4f}, above 1 {ratio['share_above_1']:.3f} → "
        f"{projected['share_above_1']:.3f} ({out['seconds']:.0f} s)"
    )
    return out


def main() -> None:
    args = base_parser(__doc__.splitlines()[0]).parse_args()
    marker = start_marker()
    quick = args.quick
    tiny = bool(getattr(args, "tiny", False))  # BENCH_TINY=1: every step, smallest sizes
    runs = 3 if tiny else 10 if quick else 200
    sizes = (2_000,) if tiny else (2_000, 20_000) if quick else (2_000, 20_000, 200_000)
    settings: list[dict[str, Any]] = []
    missing: list[str] = []
    for index, n in enumerate(sizes):
        x = implications(n, SEED + index)
        settings.append(setting(f"implications n={n:,}", x, 0.9, 0.01, runs, SEED + 10 + index))
    # an extreme job: few baskets, strong noise (per-item ε = ln(0.7/0.3) ≈ 0.85)
    x = implications(2_000, SEED)
    settings.append(setting("implications n=2,000 p=0.7", x, 0.7, 0.01, runs, SEED + 15))
    baskets = 2_000 if tiny else 10_000
    quest = QuestParameters(
        n_baskets=baskets, n_items=40, avg_basket_size=6, avg_pattern_size=3, n_patterns=30
    )
    x = unpack_baskets(quest_baskets(quest, SEED), 40)
    for index, p in enumerate((0.9, 0.8)):
        label = f"quest n={baskets:,} p={p}"
        settings.append(setting(label, x, p, 0.02, max(2, runs // 2), SEED + 20 + index))
    path = DATA_DIR / "T10I4D100K.dat"
    if path.exists():
        data = read_fimi(path)
        packed = data.packed[:5_000] if tiny else data.packed
        x = unpack_baskets(packed, data.n_items)
        label = "T10I4D100K" + (" (first 5,000 baskets)" if tiny else "")
        settings.append(setting(label, x, 0.9, 0.01, 1 if tiny else 3 if quick else 20, SEED + 30))
    else:
        missing.append(str(path))
    emit(
        "itemset_rules",
        {
            **marker,
            "seed": SEED,
            "level": LEVEL,
            "z": z_value(LEVEL),
            "estimators": {
                "ratio": "ŝ(A∪C)/ŝ(A), estimate ± z·se (projected=False; before issue 24)",
                "projected": "cells projected onto the simplex, se ≤ 1/2, intervals clipped",
            },
            "settings": settings,
            "datasets_missing": missing,
        },
        quick,
        args.output,
    )


if __name__ == "__main__":
    main()
