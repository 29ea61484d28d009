"""Client perturbation speed of the numeric and exponential mechanisms vs diffprivlib and OpenDP.

For every registered numeric mechanism (``bench/_numeric.py``; ``gaussian`` joins when
registered, with δ = 1e-5) and ε ∈ {1, 4}, on ``n`` values (default 1,000,000) uniform on
[0, 100]:

* ours, full client path: ``Privatizer(config).privatize_columns({"x": floats},
  rng=secure_rng())``: clip, scale, perturb, pack, with AES-CTR randomness;
* ours, perturb only: ``randomizer.perturb(t, rng)`` on the scaled values in the codec's
  chunks;
* peers doing one perturbation per record of the same values: diffprivlib's ``Laplace``
  (pure-ε mechanisms) or ``Gaussian`` (ε ≤ 1 only) and ``GaussianAnalytic`` ((ε, δ)
  mechanisms) called per record, OpenDP's ``make_laplace``/``make_gaussian`` per record
  and over a vector of the records (``bench/_dp_peers.py``). Our ``duchi``, ``piecewise``
  and ``hybrid`` have no peer implementation: they are set against the peers' Laplace,
  the same task (one bounded number in, one ε-LDP answer out) by another mechanism.

And the categorical ``exponential`` mechanism (ordinal utility) at d ∈ {10, 100},
ε ∈ {1, 4}, on domain strings, against diffprivlib's ``Exponential`` (one instance per
true value, built beforehand, ``randomise()`` per record) and OpenDP's Gumbel
``make_noisy_max`` per record over the score row of the record's value.

Peers are timed on a subsample (at least 2,000 records, more so that one repeat lasts
about a second) and scaled linearly. The speed-up is the faster peer's time over ours;
the target is ≥ 20×. The VM is shared (see docs/benchmarks.md): ratios measured in one
run are what count; the best and the median repeat are both given.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from _common import base_parser, emit, log, sized, start_marker, summary, timed
from _dp_peers import Runner, exponential_peers, load_diffprivlib, load_opendp, numeric_peers
from _numeric import EXTRA_PARAMETERS, numeric_config, numeric_mechanisms
from ldp_shared.codec import DEFAULT_CHUNK, Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.mechanisms.exponential import utility_matrix
from ldp_shared.rand import secure_rng
from ldp_shared.schema import CollectionSpec

EPSILONS = (1.0, 4.0)
EXPONENTIAL_DOMAINS = (10, 100)
TARGET_SPEEDUP = 20.0
LO, HI = 0.0, 100.0


def with_rate(times: list[float], records: int) -> dict[str, Any]:
    out = summary(times, records)
    out["records_per_second"] = records / min(times)
    out["records_per_second_median"] = records / sorted(times)[len(times) // 2]
    return out


def time_ours(config: Any, column: Any, encoded: np.ndarray, repeats: int) -> dict[str, Any]:
    """The full client path and ``perturb`` alone, on the same records."""
    privatizer = Privatizer(config)
    randomizer = config.randomizers[0]
    name = config.attributes[0].name
    full_times, packed = timed(
        lambda: privatizer.privatize_columns({name: column}, rng=secure_rng()), repeats
    )

    def perturb_only() -> None:
        gen = secure_rng()
        for start in range(0, encoded.size, DEFAULT_CHUNK):
            randomizer.perturb(encoded[start : start + DEFAULT_CHUNK], gen)

    perturb_times, _ = timed(perturb_only, repeats)
    decoded = decode_reports(config, packed)
    return {
        "full_client_path": with_rate(full_times, encoded.size),
        "perturb_only": with_rate(perturb_times, encoded.size),
        "report_bytes": config.report_bytes,
        "all_reports_valid": bool(decoded.valid.all()),
    }


def time_peer(run: Runner, values: list[Any], repeats: int, least: int, seconds: float):
    t0 = time.perf_counter()
    run(values[:200])
    per_record = (time.perf_counter() - t0) / 200
    records = min(len(values), max(least, math.ceil(seconds / per_record)))
    subsample = values[:records]
    times, _ = timed(lambda: run(subsample), repeats)
    out = with_rate(times, records)
    out["scaled_linearly_from_subsample"] = records < len(values)
    return out


def compare(ours: dict[str, Any], peers: dict[str, Any]) -> dict[str, Any]:
    if not peers:
        return {"faster_peer": None}
    faster = max(peers, key=lambda p: peers[p]["records_per_second"])
    peer_rate = peers[faster]["records_per_second"]
    peer_median = max(p["records_per_second_median"] for p in peers.values())
    speedup = ours["full_client_path"]["records_per_second"] / peer_rate
    return {
        "faster_peer": faster,
        "faster_peer_records_per_second": peer_rate,
        "speedup_full_client_path": speedup,
        "speedup_full_client_path_medians": (
            ours["full_client_path"]["records_per_second_median"] / peer_median
        ),
        "speedup_perturb_only": ours["perturb_only"]["records_per_second"] / peer_rate,
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
    }


def run_peers(named: dict[str, tuple[Runner, str]], values: list[Any], args: Any):
    out = {}
    for peer, (run, call) in named.items():
        log(f"[numeric_speed]   {peer}")
        out[peer] = {
            "call": call,
            **time_peer(run, values, args.peer_repeats, 2_000, args.peer_seconds),
        }
    return out


def numeric_rows(mechanisms: list[str], n: int, dpl: Any, dp: Any, args: Any) -> list[Any]:
    values = np.random.default_rng(11).uniform(LO, HI, n)
    as_list = values.tolist()
    rows: list[dict[str, Any]] = []
    peer_cache: dict[tuple[str, float], dict[str, Any]] = {}
    for epsilon in EPSILONS:
        for mechanism in mechanisms:
            log(f"[numeric_speed] {mechanism} ε={epsilon:g}: ours on {n:,} records")
            config = numeric_config(mechanism, epsilon, LO, HI)
            randomizer = config.randomizers[0]
            family = "gaussian" if randomizer.delta > 0 else "laplace"
            ours = time_ours(config, values, config.spec.attributes[0].encode(values), args.repeats)
            key = (family, epsilon)
            if key not in peer_cache:
                delta = float(EXTRA_PARAMETERS["delta"])
                named = numeric_peers(dpl, dp, family, epsilon, delta, HI - LO)
                peer_cache[key] = run_peers(named, as_list, args)
            rows.append(
                {
                    "mechanism": mechanism,
                    "epsilon": epsilon,
                    "delta": randomizer.delta,
                    "peer_family": family,
                    "same_mechanism_as_peers": mechanism == family,
                    "ours": ours,
                    "peers": peer_cache[key],
                    "comparison": compare(ours, peer_cache[key]),
                }
            )
    if "gaussian" not in mechanisms:  # the peers' Gaussian anyway, ready for ours
        for epsilon in EPSILONS:
            log(f"[numeric_speed] peers' Gaussian ε={epsilon:g} (no gaussian registered here)")
            delta = float(EXTRA_PARAMETERS["delta"])
            named = numeric_peers(dpl, dp, "gaussian", epsilon, delta, HI - LO)
            rows.append(
                {
                    "mechanism": "gaussian",
                    "epsilon": epsilon,
                    "delta": delta,
                    "peer_family": "gaussian",
                    "ours": None,
                    "ours_missing": "no gaussian mechanism is registered in this checkout",
                    "peers": run_peers(named, as_list, args),
                    "comparison": {"faster_peer": None},
                }
            )
    return rows


def exponential_rows(n: int, dpl: Any, dp: Any, args: Any) -> list[Any]:
    rows: list[dict[str, Any]] = []
    for d in EXPONENTIAL_DOMAINS:
        domain = [f"value-{i:03d}" for i in range(d)]
        idx = np.random.default_rng(d).integers(0, d, n)
        strings = np.asarray(domain, dtype=object)[idx].tolist()
        lookup = {v: i for i, v in enumerate(domain)}
        utility = utility_matrix("ordinal", d).tolist()
        for epsilon in EPSILONS:
            log(f"[numeric_speed] exponential d={d} ε={epsilon:g}: ours on {n:,} records")
            attribute = {
                "name": "v",
                "domain": domain,
                "mechanism": "exponential",
                "utility": "ordinal",
            }
            config = build_config(
                CollectionSpec(name="em", epsilon=epsilon, attributes=[attribute])
            )
            ours = time_ours(config, strings, idx, args.repeats)
            named = {
                name: ((lambda xs, run=run, lookup=lookup: run([lookup[s] for s in xs])), call)
                for name, (run, call) in exponential_peers(dpl, dp, utility, epsilon).items()
            }
            peers = run_peers(named, strings, args)
            rows.append(
                {
                    "mechanism": "exponential (ordinal utility)",
                    "d": d,
                    "epsilon": epsilon,
                    "ours": ours,
                    "peers": peers,
                    "comparison": compare(ours, peers),
                }
            )
    return rows


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="records for ours (1,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="our timed repeats (5)")
    parser.add_argument("--peer-repeats", type=int, default=None, help="peer repeats (3)")
    parser.add_argument("--peer-seconds", type=float, default=None, help="per repeat (1.0)")
    args = parser.parse_args()
    n = args.n or sized(1_000_000, 20_000, 500, args)
    args.repeats = args.repeats or (1 if args.quick else 5)
    args.peer_repeats = args.peer_repeats or (1 if args.quick else 3)
    args.peer_seconds = args.peer_seconds or sized(1.0, 0.1, 0.005, args)
    started = start_marker()
    dpl, dpl_how = load_diffprivlib()
    dp, dp_how = load_opendp()
    mechanisms, skipped = numeric_mechanisms()
    numeric = numeric_rows(mechanisms, n, dpl, dp, args)
    exponential = exponential_rows(n, dpl, dp, args)
    compared = [r["comparison"] for r in numeric + exponential if r["comparison"]["faster_peer"]]
    speedups = [c["speedup_full_client_path"] for c in compared]
    result = {
        **started,
        "description": (
            "Records/s of our vectorised client path (privatize_columns, secure_rng) and of "
            "perturb alone, against diffprivlib and OpenDP mechanisms called per record (and "
            "OpenDP over a vector), in one run; speed-up = ours / the faster peer."
        ),
        "parameters": {
            "n_ours": n,
            "repeats": args.repeats,
            "peer_repeats": args.peer_repeats,
            "peer_seconds_per_repeat": args.peer_seconds,
            "epsilons": list(EPSILONS),
            "exponential_domains": list(EXPONENTIAL_DOMAINS),
            "values": f"uniform on [{LO:g}, {HI:g}] (numeric); uniform value indices (exponential)",
            "target_speedup": TARGET_SPEEDUP,
            "extra_parameters": EXTRA_PARAMETERS,
        },
        "peers_imported": {"diffprivlib": dpl_how, "opendp": dp_how},
        "peers_missing": {
            name: how
            for name, module, how in (("diffprivlib", dpl, dpl_how), ("opendp", dp, dp_how))
            if module is None
        },
        "mechanisms_skipped": skipped,
        "numeric": numeric,
        "exponential": exponential,
        "summary": {
            "settings_compared": len(compared),
            "speedup_min": min(speedups, default=None),
            "speedup_max": max(speedups, default=None),
            "settings_meeting_target": sum(c["meets_target"] for c in compared),
        },
    }
    emit("numeric_speed", result, args.quick, args.output)


if __name__ == "__main__":
    main()
