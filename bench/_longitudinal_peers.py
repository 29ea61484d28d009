"""bench/longitudinal.py, side by side with multi-freq-ldpy's longitudinal protocols
(``multi_freq_ldpy.long_freq_est``: ``L_GRR``, ``L_OSUE`` and ``dBitFlipPM``, Arcolezi
et al.) at the same ε, in the same run.

- **Per-period error.** One period of ``n`` devices (a skewed population over 8 values);
  over ``R`` repetitions, each side's estimates against the truth: empirical variance
  and mean squared error per value, averaged over the values, and our formula's
  variance. The peer's aggregators clip negatives and renormalise (biased, lower
  variance), so the MSE is the fair comparison; ours is unbiased and unclipped.
- **Client speed.** One memoised report per call, as a device makes it: ours is
  ``perturb_memoised`` with the device's memo key (the memo is part of the call), the
  peer's is its client function on the value index (it keeps no memo: a caller would
  have to). Ours twice: a value the device reported before (the steady state of a daily
  report: the permanent response is in the randomizer's in-memory memo) and a first
  report (new keys in every arm call: the permanent step derived with HMAC-SHA256).
  Interleaved pairs in one run; the ratio per pair is the peer's µs per record over
  ours (> 1: ours faster), reported as a range. Also our vectorised ``perturb`` over the
  same records at once (each row a fresh device: what a simulation or fleet test runs),
  :data:`VECTOR_REPEATS` times per arm call, against the peer's per-record loop.

Absent peers are reported, never silently skipped: run ``bash bench/setup_peers.sh``
and use ``bench/.venv-peers/bin/python``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from _freq_peers import interleave, ratios, spread
from ldp_shared.mechanisms import DBitFlipPM, LongitudinalGRR, LongitudinalOSUE

D = 8
BITS = 2
PEER = "multi-freq-ldpy"


def load_peer() -> tuple[dict[str, Any] | None, str | None]:
    try:
        from multi_freq_ldpy.long_freq_est import L_GRR, L_OSUE, dBitFlipPM
    except ImportError as exc:
        return None, f"not importable ({exc}); run bash bench/setup_peers.sh"
    return {"l_grr": L_GRR, "l_osue": L_OSUE, "dbitflippm": dBitFlipPM}, None


def population(n: int, gen: np.random.Generator) -> np.ndarray:
    return np.asarray(np.minimum(gen.geometric(0.35, size=n) - 1, D - 1), dtype=np.int64)


def _error_row(estimates: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    return {
        "variance_mean": float(estimates.var(axis=0, ddof=1).mean()),
        "mse_mean": float(np.square(estimates - truth).mean()),
    }


def lgrr_errors(
    api: Any, epsilon: float, n: int, runs: int, gen: np.random.Generator
) -> dict[str, Any]:
    ours = LongitudinalGRR(d=D, epsilon=epsilon, epsilon_infinity=2 * epsilon)
    values = population(n, gen)
    truth = np.bincount(values, minlength=D) / n
    mine = np.empty((runs, D))
    theirs = np.empty((runs, D))
    np.random.seed(int(gen.integers(2**31)))  # the peer draws from numpy's global state
    for r in range(runs):
        counts = np.bincount(ours.perturb(values, gen), minlength=D)
        mine[r] = ours.estimate_stats({"counts": counts}, n, 0.95).estimate
        reports = [api.L_GRR_Client(int(v), D, 2 * epsilon, epsilon) for v in values]
        theirs[r] = api.L_GRR_Aggregator_MI(reports, D, 2 * epsilon, epsilon)
    return {
        "epsilon": epsilon,
        "epsilon_infinity": 2 * epsilon,
        "ours": {**_error_row(mine, truth), "formula_mean": float(ours.variance(truth, n).mean())},
        PEER: _error_row(theirs, truth),
    }


def losue_errors(
    api: Any, epsilon: float, n: int, runs: int, gen: np.random.Generator
) -> dict[str, Any]:
    ours = LongitudinalOSUE(d=D, epsilon=epsilon, epsilon_infinity=2 * epsilon)
    values = population(n, gen)
    truth = np.bincount(values, minlength=D) / n
    mine = np.empty((runs, D))
    theirs = np.empty((runs, D))
    unclipped = np.empty((runs, D))
    for r in range(runs):
        counts = ours.perturb(values, gen).sum(axis=0, dtype=np.int64)
        mine[r] = ours.estimate_stats({"counts": counts}, n, 0.95).estimate
        reports = [api.L_OSUE_Client(int(v), D, 2 * epsilon, epsilon) for v in values]
        theirs[r] = api.L_OSUE_Aggregator_MI(reports, 2 * epsilon, epsilon)
        unclipped[r] = peer_losue_unbiased(np.asarray(reports), epsilon)
    return {
        "epsilon": epsilon,
        "epsilon_infinity": 2 * epsilon,
        "ours": {**_error_row(mine, truth), "formula_mean": float(ours.variance(truth, n).mean())},
        PEER: _error_row(theirs, truth),
        f"{PEER}_before_clipping": _error_row(unclipped, truth),
    }


def peer_losue_unbiased(reports: np.ndarray, epsilon: float) -> np.ndarray:
    """The peer's L-OSUE estimator (``MI_long``) before it clips negatives and
    renormalises, with its own ``p₁, q₁, p₂, q₂`` (ε∞ = 2ε): unbiased, like ours."""
    e1, ei = np.exp(epsilon), np.exp(2 * epsilon)
    p1, q1 = 0.5, 1 / (ei + 1)
    p2 = (1 - e1 * ei) / (e1 - ei - e1 * ei + 1)
    q2 = 1 - p2
    n = len(reports)
    counts = reports.sum(axis=0)
    return np.asarray((counts - n * q1 * (p2 - q2) - n * q2) / (n * (p1 - q1) * (p2 - q2)))


def dbitflip_errors(
    api: Any, epsilon: float, n: int, runs: int, gen: np.random.Generator
) -> dict[str, Any]:
    ours = DBitFlipPM(d=D, b=BITS, epsilon=epsilon)
    values = population(n, gen)
    truth = np.bincount(values, minlength=D) / n
    mine = np.empty((runs, D))
    theirs = np.empty((runs, D))
    np.random.seed(int(gen.integers(2**31)))
    unclipped = np.empty((runs, D))
    for r in range(runs):
        stats = ours.accumulate(ours.perturb(values, gen))
        mine[r] = ours.estimate_stats(stats, n, 0.95).estimate
        reports = [api.dBitFlipPM_Client(int(v), D, D, BITS, epsilon) for v in values]
        theirs[r] = api.dBitFlipPM_Aggregator_MI(reports, D, BITS, epsilon)
        unclipped[r] = peer_dbitflip_unbiased(np.asarray(reports), epsilon)
    return {
        "epsilon": epsilon,
        "bits": BITS,
        "ours": _error_row(mine, truth),
        PEER: _error_row(theirs, truth),
        f"{PEER}_before_clipping": _error_row(unclipped, truth),
    }


def peer_dbitflip_unbiased(reports: np.ndarray, epsilon: float) -> np.ndarray:
    """The peer's dBitFlipPM estimator before it clips negatives and renormalises (its
    ``dBitFlipPM_Aggregator_MI`` formula, vectorised): unbiased, like ours."""
    e = np.exp(epsilon / 2)
    sampled = reports >= 0
    h = np.where(sampled, (reports * (e + 1) - 1) / (e - 1), 0.0).sum(axis=0)
    return np.asarray(h * D / (len(reports) * BITS))


VECTOR_REPEATS = 20
"""Times a vectorised arm perturbs its batch per call, so that it lasts about as long as
the peer's per-record loop (a millisecond or two) and meets the same interruptions."""


def client_ratios(
    api: Any, epsilon: float, records: int, pairs: int, gen: np.random.Generator
) -> dict[str, Any]:
    def new_keys() -> list[bytes]:
        return [row.tobytes() for row in gen.integers(0, 256, size=(records, 32), dtype=np.uint8)]

    keys = new_keys()
    values = population(records, gen).tolist()

    def mechanisms() -> dict[str, Any]:
        return {
            "l_grr": LongitudinalGRR(d=D, epsilon=epsilon, epsilon_infinity=2 * epsilon),
            "l_osue": LongitudinalOSUE(d=D, epsilon=epsilon, epsilon_infinity=2 * epsilon),
            "dbitflippm": DBitFlipPM(d=D, b=BITS, epsilon=epsilon),
        }

    repeat_mechs, first_mechs = mechanisms(), mechanisms()  # separate in-memory memos

    def ours_arm(mech: Any, first: bool) -> Callable[[], int]:
        fresh = iter([new_keys() for _ in range(pairs + 1)]) if first else None

        def arm() -> int:
            batch = keys if fresh is None else next(fresh)
            for v, key in zip(values, batch, strict=True):
                mech.perturb_memoised(np.array([v], dtype=np.int64), key, gen)
            return records

        return arm

    def peer_arm(call: Callable[[int], Any]) -> Callable[[], int]:
        def arm() -> int:
            for v in values:
                call(v)
            return records

        return arm

    def vector_arm(mech: Any) -> Callable[[], int]:
        batch = np.asarray(values, dtype=np.int64)

        def arm() -> int:
            for _ in range(VECTOR_REPEATS):
                mech.perturb(batch, gen)
            return VECTOR_REPEATS * records

        return arm

    out: dict[str, Any] = {
        "records_per_arm_call": records,
        "pairs": pairs,
        "vectorised_repeats_per_arm_call": VECTOR_REPEATS,
    }
    calls = {
        "l_grr": lambda v: api["l_grr"].L_GRR_Client(v, D, 2 * epsilon, epsilon),
        "l_osue": lambda v: api["l_osue"].L_OSUE_Client(v, D, 2 * epsilon, epsilon),
        "dbitflippm": lambda v: api["dbitflippm"].dBitFlipPM_Client(v, D, D, BITS, epsilon),
    }
    for name, call in calls.items():
        started = time.perf_counter()
        # one record per call: a value the device reported before (its memo holds the
        # permanent response) and a first report (new keys every arm call: HMAC-SHA256)
        arms = {
            "ours": ours_arm(repeat_mechs[name], first=False),
            "ours_first_report": ours_arm(first_mechs[name], first=True),
            PEER: peer_arm(call),
        }
        micros = interleave(arms, pairs)
        out[name] = {
            "ours_us_per_record": spread(micros["ours"]),
            "ours_first_report_us_per_record": spread(micros["ours_first_report"]),
            f"{PEER}_us_per_record": spread(micros[PEER]),
            "peer_over_ours": ratios(micros, [PEER], "ours"),
            "peer_over_ours_first_report": ratios(micros, [PEER], "ours_first_report"),
            "seconds": time.perf_counter() - started,
        }
        # many devices at once (a simulation or a fleet test): our vectorised perturb
        vector = f"{name}_vectorised"
        micros = interleave({vector: vector_arm(repeat_mechs[name]), PEER: peer_arm(call)}, pairs)
        out[vector] = {
            "ours_us_per_record": spread(micros[vector]),
            f"{PEER}_us_per_record": spread(micros[PEER]),
            "peer_over_ours": ratios(micros, [PEER], vector),
        }
    return out


def side_by_side(
    epsilon: float, n: int, runs: int, records: int, pairs: int, gen: np.random.Generator
) -> dict[str, Any]:
    api, missing = load_peer()
    if api is None:
        return {"peer": PEER, "missing": missing}
    return {
        "peer": PEER,
        "setup": {"d": D, "devices": n, "runs": runs},
        "error_l_grr": lgrr_errors(api["l_grr"], epsilon, n, runs, gen),
        "error_l_osue": losue_errors(api["l_osue"], epsilon, n, runs, gen),
        "error_dbitflippm": dbitflip_errors(api["dbitflippm"], epsilon, n, runs, gen),
        "client": client_ratios(api, epsilon, records, pairs, gen),
    }
