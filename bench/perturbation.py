"""Client perturbation speed and wire size: ldpcollect vs pure-ldp and multi-freq-ldpy.

For every setting (GRR with d = 16 and d = 1,024, SUE and OUE with d = 16 and d = 1,024;
ε ∈ {1, 4}), in interleaved A/B pairs (``_freq_peers.interleave``: each pair times
every arm once, in alternating order, and the ratios are taken pair by pair):

* ours, full client path: a one-attribute collection, ``Privatizer(config)
  .privatize_columns({"v": strings})`` with the process's secure generator (AES-CTR):
  domain strings -> value indices -> perturbation -> packed report bytes, on ``n``
  records (default 1,000,000);
* ours, mechanism only: ``mechanism.perturb_packed(indices, rng)`` over the same records
  in the codec's chunks (no string lookup);
* peers: their per-record client call (pure-ldp ``UEClient``/``DEClient.privatise``,
  multi-freq-ldpy ``UE_Client``/``GRR_Client``), fed the same domain strings, timed on
  a subsample sized so that one call lasts about a second.

Figures are microseconds per record (and seconds per 100,000 records); the speed-up is
the fastest peer's time over ours in each pair, given as its range. The target is 10×
in every pair. A sanity check decodes our reports as the aggregator does and compares
the estimate with the truth. Run inside ``bench/.venv-peers`` (``bash
bench/setup_peers.sh``) to include the peers.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from _common import base_parser, emit, log, sized, start_marker
from _freq_peers import (
    PEERS,
    add_options,
    config_for,
    interleave,
    load_average,
    make_values,
    peer_arms,
    plan,
    ratios,
    spread,
)
from ldp_shared.codec import DEFAULT_CHUNK, Privatizer, decode_reports
from ldp_shared.rand import shared_secure_rng

TARGET_SPEEDUP = 10.0


def sanity(config: Any, packed: np.ndarray, idx: np.ndarray) -> dict[str, Any]:
    """Our reports decode as valid and estimate the true frequencies (max |z|)."""
    mechanism = config.randomizers[0]
    n, d = idx.size, mechanism.d
    decoded = decode_reports(config, packed)
    estimate = mechanism.estimate(decoded.sums, n)
    true_f = np.bincount(idx, minlength=d) / n
    z = np.abs(estimate.estimate - true_f) / np.sqrt(mechanism.variance(true_f, n))
    return {"all_reports_valid": bool(decoded.valid.all()), "max_abs_z_of_estimate": z.max()}


def wire(config: Any, peers_wire: dict[str, Any]) -> dict[str, Any]:
    report_bytes = config.report_bytes
    return {
        "packed_bytes_per_record": report_bytes,
        "base64_chars_per_record": 4 * math.ceil(report_bytes / 3),
        "peers_report": peers_wire,
    }


def peer_wire(report: Any) -> dict[str, Any]:
    arr = np.asarray(report)
    return {
        "python_type": type(report).__name__,
        "dtype": str(arr.dtype),
        "nbytes": int(arr.nbytes),
        "python_object_bytes": sys.getsizeof(report),
    }


def bench_setting(
    mechanism_name: str,
    d: int,
    epsilon: float,
    idx: np.ndarray,
    values: list[str],
    peers: dict[str, Any],
    args: Any,
) -> dict[str, Any]:
    config = config_for(mechanism_name, d, epsilon)
    privatizer = Privatizer(config)
    mechanism = config.randomizers[0]
    n = idx.size
    packed_out: list[np.ndarray] = []

    def full() -> int:
        packed_out[:] = [privatizer.privatize_columns({"v": values})]
        return n

    def perturb_only() -> int:
        gen = shared_secure_rng()
        for start in range(0, n, DEFAULT_CHUNK):
            mechanism.perturb_packed(idx[start : start + DEFAULT_CHUNK], gen)
        return n

    arms, calls, clients = peer_arms(peers, mechanism_name, d, epsilon, values, args.seconds)
    arms.update(ours_full_client_path=full, ours_perturb_only=perturb_only)
    calls.update(
        ours_full_client_path=f"Privatizer(config).privatize_columns on {n:,} records",
        ours_perturb_only=f"mechanism.perturb_packed(indices) in chunks of {DEFAULT_CHUNK:,}",
    )
    peers_wire = {peer: peer_wire(call(values[0])) for peer, call in clients.items()}
    load_before = load_average()
    micros = interleave(arms, args.pairs)
    speedup = ratios(micros, PEERS, "ours_full_client_path")
    mechanism_speedup = ratios(micros, PEERS, "ours_perturb_only")
    return {
        "mechanism": mechanism_name,
        "d": d,
        "epsilon": epsilon,
        "p": mechanism.p,
        "q": mechanism.q,
        "calls": calls,
        "microseconds_per_record": {k: spread(v) for k, v in micros.items()},
        "seconds_per_100k_median": {k: spread(v)["median"] * 0.1 for k, v in micros.items()},
        "microseconds_per_record_all": micros,
        "speedup_full_client_path": speedup,
        "speedup_mechanism_only": mechanism_speedup,
        "meets_target": None if speedup is None else speedup["min"] >= TARGET_SPEEDUP,
        "meets_target_median": None if speedup is None else speedup["median"] >= TARGET_SPEEDUP,
        "sanity": sanity(config, packed_out[0], idx),
        "wire": wire(config, peers_wire),
        "load_average_before_after": [load_before, load_average()],
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="records for ours (1,000,000)")
    add_options(parser)
    args = parser.parse_args()
    n = args.n or sized(1_000_000, 20_000, 500, args)
    args.seconds = sized(1.0, 0.1, 0.005, args)
    settings, epsilons, peers, missing = plan(args, tiny_settings=3)
    started = start_marker()
    out: list[dict[str, Any]] = []
    for mechanism_name, d in settings:
        idx, values = make_values(d, n, seed=d)
        for epsilon in epsilons:
            log(f"[perturbation] {mechanism_name} d={d} eps={epsilon:g} on {n:,} records")
            out.append(bench_setting(mechanism_name, d, epsilon, idx, values, peers, args))
    result = {
        **started,
        "description": (
            "Client perturbation time per record: ours vectorised (full client path "
            "privatize_columns: strings -> indices -> perturbation -> packed bytes, and "
            "perturb_packed alone) against the peers' per-record calls on the same "
            "strings, in interleaved pairs; speed-up = fastest peer / ours per pair."
        ),
        "parameters": {
            "n_ours": n,
            "pairs": args.pairs,
            "peer_seconds_per_call": args.seconds,
            "chunk": DEFAULT_CHUNK,
            "value_distribution": "Zipf s=1.1 over the domain",
            "epsilons": list(epsilons),
            "target_speedup": TARGET_SPEEDUP,
        },
        "peers_missing": missing,
        "settings": out,
    }
    emit("perturbation", result, args.quick, args.output)


if __name__ == "__main__":
    main()
