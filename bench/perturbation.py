"""Client perturbation speed and wire size: ldpcollect vs pure-ldp and multi-freq-ldpy.

For every setting (SUE/OUE with d = 16 and d = 1024, GRR with d = 1024; ε ∈ {1, 4}):

* ours, full client path: a one-attribute collection, ``Privatizer(build_config(spec))
  .privatize_columns({"v": strings}, rng=secure_rng())``: domain strings -> value
  indices -> perturbation -> packed report bytes, on ``n`` records (default 1,000,000);
* ours, mechanism only: ``mechanism.perturb(indices, rng)`` over the same records in the
  codec's chunks (unpacked boolean rows / int64 indices, no string lookup, no packing);
* peers: their per-record client call (pure-ldp ``UEClient``/``DEClient.privatise``,
  multi-freq-ldpy ``UE_Client``/``GRR_Client``), fed the same domain strings (pure-ldp
  through its ``index_mapper``, multi-freq-ldpy through a dict lookup in the loop),
  timed on a subsample (at least 20,000 records, more for fast peers so that one repeat
  lasts about a second) and scaled linearly to seconds per 100,000 records;
* a breakdown of where our time goes (string lookup, random bits, packing), next to
  cheaper ways of doing the same step (measured here, not used by the product).

The machine is a shared 2-vCPU VM, so every timing is repeated: the headline uses the
best repeat of each side (the least disturbed one); the median-based figures are given
too.

Run inside ``bench/.venv-peers`` (``bash bench/setup_peers.sh``) to include the peers.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Any

import numpy as np

from _common import base_parser, emit, log, start_marker, timed, zipf_frequencies
from _prototype import PrototypePrivatizer
from ldp_shared.codec import DEFAULT_CHUNK, Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.kernel import bernoulli_matrix
from ldp_shared.mechanisms import GeneralizedRandomizedResponse
from ldp_shared.rand import secure_rng, seeded_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire import Report, encode_bits, new_report_id

SETTINGS: list[tuple[str, int]] = [
    ("sue", 16),
    ("oue", 16),
    ("sue", 1024),
    ("oue", 1024),
    ("grr", 1024),
]
EPSILONS = (1.0, 4.0)
TARGET_SPEEDUP = 10.0
PER = 100_000  # results are seconds per this many records


def domain_of(d: int) -> list[str]:
    return [f"value-{i:04d}" for i in range(d)]


def make_values(d: int, n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """``n`` Zipf-distributed value indices and the same values as domain strings."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(d, size=n, p=zipf_frequencies(d)).astype(np.int64)
    domain = np.array(domain_of(d), dtype=object)
    return idx, domain[idx].tolist()


def per_100k(seconds: float, records: int) -> float:
    return seconds / records * PER


def summary(times: list[float], records: int) -> dict[str, Any]:
    """``seconds_per_100k`` is the best repeat; the median is given beside it."""
    best, med = min(times), statistics.median(times)
    return {
        "records_timed": records,
        "repeats": len(times),
        "seconds_all": [round(t, 6) for t in times],
        "seconds_per_100k": per_100k(best, records),
        "seconds_per_100k_median": per_100k(med, records),
        "microseconds_per_record": best / records * 1e6,
    }


# --------------------------------------------------------------------------- ours


def bench_ours(
    mechanism_name: str, d: int, epsilon: float, idx: np.ndarray, values: list[str], repeats: int
) -> dict[str, Any]:
    n = idx.size
    spec = CollectionSpec(
        name="bench",
        attributes=[AttributeSpec(name="v", domain=domain_of(d), mechanism=mechanism_name)],
        epsilon=epsilon,
    )
    config = build_config(spec)
    privatizer = Privatizer(config)
    mechanism = config.randomizers[0]

    full_times, packed = timed(
        lambda: privatizer.privatize_columns({"v": values}, rng=secure_rng()), repeats
    )

    def perturb_only() -> None:
        gen = secure_rng()
        for start in range(0, n, DEFAULT_CHUNK):
            mechanism.perturb(idx[start : start + DEFAULT_CHUNK], gen)

    perturb_times, _ = timed(perturb_only, repeats)

    # sanity: the packed reports decode and estimate the true frequencies
    decoded = decode_reports(config, packed)
    estimate = mechanism.estimate(decoded.sums, n)
    true_f = np.bincount(idx, minlength=d) / n
    z = np.abs(estimate.estimate - true_f) / np.sqrt(mechanism.variance(true_f, n))

    report_bytes = config.report_bytes
    sample_report = Report(
        id=new_report_id(),
        config_hash=config.config_hash,
        bits=encode_bits(packed[0].tobytes()),
    )
    return {
        "p": mechanism.p,
        "q": mechanism.q,
        "full_client_path": summary(full_times, n),
        "mechanism_perturb_only": summary(perturb_times, n),
        "sanity": {
            "all_reports_valid": bool(decoded.valid.all()),
            "max_abs_z_of_estimate": float(z.max()),
        },
        "wire": {
            "packed_bytes_per_record": report_bytes,
            "base64_chars_per_record": 4 * math.ceil(report_bytes / 3),
            "json_report_bytes": len(sample_report.model_dump_json()),
            "json_report_note": (
                "one Report object as JSON: 22-char random id + 64-char config hash + "
                "base64 bits + keys"
            ),
        },
    }


def bench_prototype(
    mechanism_name: str, d: int, epsilon: float, idx: np.ndarray, values: list[str], repeats: int
) -> dict[str, Any]:
    """The faster client path of ``bench/_prototype.py`` (not the product), same records."""
    n = idx.size
    spec = CollectionSpec(
        name="bench",
        attributes=[AttributeSpec(name="v", domain=domain_of(d), mechanism=mechanism_name)],
        epsilon=epsilon,
    )
    config = build_config(spec)
    mechanism = config.randomizers[0]
    prototype = PrototypePrivatizer(config)
    times, packed = timed(lambda: prototype.privatize_columns(values, secure_rng()), repeats)
    decoded = decode_reports(config, packed)
    estimate = mechanism.estimate(decoded.sums, n)
    true_f = np.bincount(idx, minlength=d) / n
    z = np.abs(estimate.estimate - true_f) / np.sqrt(mechanism.variance(true_f, n))
    result = summary(times, n)
    result["what"] = (
        "bench/_prototype.py: map-based string lookup, Bernoulli(q) bits drawn packed "
        "64 per uint64 word (exact), true bit written into the packed row; NOT the product"
    )
    result["sanity"] = {
        "all_reports_valid": bool(decoded.valid.all()),
        "max_abs_z_of_estimate": float(z.max()),
    }
    return result


def breakdown(mechanism_name: str, d: int, epsilon: float, idx: np.ndarray, values: list[str]):
    """Where the full client path spends its time, component by component (one pass each)."""
    n = idx.size
    spec = CollectionSpec(
        name="bench",
        attributes=[AttributeSpec(name="v", domain=domain_of(d), mechanism=mechanism_name)],
        epsilon=epsilon,
    )
    config = build_config(spec)
    attribute = config.attributes[0]
    mechanism = config.randomizers[0]
    out: dict[str, Any] = {}

    # 1. domain strings -> value indices (the codec's lookup), and a cheaper equivalent
    t0 = time.perf_counter()
    spec.attributes[0].encode(values)
    out["encode_strings_to_indices"] = time.perf_counter() - t0
    lookup = {v: i for i, v in enumerate(attribute.values)}
    t0 = time.perf_counter()
    np.fromiter(map(lookup.__getitem__, values), dtype=np.int64, count=len(values))
    out["alternative_encode_fromiter_map_getitem"] = time.perf_counter() - t0

    chunks = [idx[s : s + DEFAULT_CHUNK] for s in range(0, n, DEFAULT_CHUNK)]

    # 2. perturbation with the secure (AES-CTR) and a PCG64 generator
    for label, gen in (("perturb_secure_rng", secure_rng()), ("perturb_pcg64", seeded_rng(1))):
        t0 = time.perf_counter()
        perturbed = [mechanism.perturb(c, gen) for c in chunks]
        out[label] = time.perf_counter() - t0

    if isinstance(mechanism, GeneralizedRandomizedResponse):
        t0 = time.perf_counter()
        for rows in perturbed:
            rows.astype(">u2" if attribute.byte_length == 2 else ">u1").view(np.uint8)
        out["pack_index_big_endian"] = time.perf_counter() - t0
        return out

    # 3. the Bernoulli(q) matrix alone (the d-1 false bits), and the random bytes under it
    gen = secure_rng()
    t0 = time.perf_counter()
    for c in chunks:
        bernoulli_matrix(mechanism.q, c.size, d, gen)
    out["of_which_bernoulli_matrix_q"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in chunks:
        gen.integers(0, 256, size=c.size * d, dtype=np.uint8)
    out["random_bytes_via_integers_uint8"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in chunks:
        gen.bit_generator.random_raw(c.size * d // 8)
    out["random_bytes_via_random_raw_for_comparison"] = time.perf_counter() - t0

    # 4. packing the boolean rows (row-wise, as the codec does) and, when every row is a
    # whole number of bytes, the same bytes from one flat packbits
    t0 = time.perf_counter()
    for rows in perturbed:
        np.packbits(rows, axis=1)
    out["packbits_axis1"] = time.perf_counter() - t0
    if d % 8 == 0:
        t0 = time.perf_counter()
        for rows in perturbed:
            np.packbits(rows.reshape(-1)).reshape(rows.shape[0], d // 8)
        out["alternative_packbits_flat"] = time.perf_counter() - t0
    return out


# --------------------------------------------------------------------------- peers


def load_peers() -> tuple[dict[str, Any], dict[str, str]]:
    peers: dict[str, Any] = {}
    missing: dict[str, str] = {}
    try:
        from pure_ldp.frequency_oracles import DEClient, UEClient

        peers["pure-ldp"] = {"UEClient": UEClient, "DEClient": DEClient}
    except ImportError as exc:
        missing["pure-ldp"] = f"not importable ({exc}); run bench/setup_peers.sh"
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Client
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client

        peers["multi-freq-ldpy"] = {"UE_Client": UE_Client, "GRR_Client": GRR_Client}
    except ImportError as exc:
        missing["multi-freq-ldpy"] = f"not importable ({exc}); run bench/setup_peers.sh"
    return peers, missing


def peer_runner(peer: str, api: dict[str, Any], mechanism_name: str, d: int, epsilon: float):
    """A function ``strings -> list of reports`` doing the peer's per-record client work."""
    lookup = {v: i for i, v in enumerate(domain_of(d))}
    if peer == "pure-ldp":
        if mechanism_name == "grr":
            client = api["DEClient"](epsilon, d, index_mapper=lookup.__getitem__)
            call = "pure_ldp.frequency_oracles.DEClient(epsilon, d, index_mapper).privatise(v)"
        else:
            client = api["UEClient"](
                epsilon, d, use_oue=mechanism_name == "oue", index_mapper=lookup.__getitem__
            )
            call = (
                "pure_ldp.frequency_oracles.UEClient(epsilon, d, use_oue=..., index_mapper)"
                ".privatise(v)"
            )
        privatise = client.privatise

        def run(strings: list[str]) -> list[Any]:
            return [privatise(s) for s in strings]

        return run, call, None

    if mechanism_name == "grr":
        grr = api["GRR_Client"]
        call = "multi_freq_ldpy.pure_frequency_oracles.GRR.GRR_Client(lookup[v], d, epsilon)"

        def run(strings: list[str]) -> list[Any]:
            return [grr(lookup[s], d, epsilon) for s in strings]

        warm = lambda: grr(0, d, epsilon)  # noqa: E731
    else:
        ue = api["UE_Client"]
        optimal = mechanism_name == "oue"
        call = (
            "multi_freq_ldpy.pure_frequency_oracles.UE.UE_Client(lookup[v], d, epsilon, "
            f"optimal={optimal})"
        )

        def run(strings: list[str]) -> list[Any]:
            return [ue(lookup[s], d, epsilon, optimal) for s in strings]

        warm = lambda: ue(0, d, epsilon, optimal)  # noqa: E731
    return run, call, warm


def bench_peer(
    peer: str,
    api: dict[str, Any],
    mechanism_name: str,
    d: int,
    epsilon: float,
    values: list[str],
    repeats: int,
    min_records: int,
    target_seconds: float,
) -> dict[str, Any]:
    run, call, warm = peer_runner(peer, api, mechanism_name, d, epsilon)
    jit_seconds = None
    if warm is not None:  # numba compiles on the first call: not counted
        t0 = time.perf_counter()
        warm()
        jit_seconds = time.perf_counter() - t0
    np.random.seed(12345)  # peers draw from numpy's / Python's global generators
    # calibrate: enough records that one repeat lasts about a second, at least min_records
    t0 = time.perf_counter()
    run(values[:1000])
    per_record = (time.perf_counter() - t0) / 1000
    records = min(len(values), max(min_records, math.ceil(target_seconds / per_record)))
    subsample = values[:records]
    times, reports = timed(lambda: run(subsample), repeats)
    first = reports[0]
    arr = np.asarray(first)
    result = summary(times, records)
    result.update(
        {
            "call": call,
            "scaled_linearly_from_subsample": records < len(values),
            "records_ours": len(values),
            "jit_warmup_seconds_excluded": jit_seconds,
            "wire": {
                "report_python_type": type(first).__name__,
                "report_dtype": str(arr.dtype),
                "report_shape": list(arr.shape),
                "report_nbytes": int(arr.nbytes),
                "report_python_object_bytes": sys.getsizeof(first),
            },
        }
    )
    return result


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="records for ours (1,000,000)")
    parser.add_argument("--peer-n", type=int, default=None, help="least peer subsample (20,000)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (5)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--no-prototype", action="store_true")
    args = parser.parse_args()
    n = args.n or (20_000 if args.quick else 1_000_000)
    peer_n = args.peer_n or (1_000 if args.quick else 20_000)
    repeats = args.repeats or (1 if args.quick else 5)
    started = start_marker()

    peers, missing = ({}, {"all": "--no-peers"}) if args.no_peers else load_peers()
    settings_out: list[dict[str, Any]] = []
    for mechanism_name, d in SETTINGS:
        idx, values = make_values(d, n, seed=d)
        for epsilon in EPSILONS:
            label = f"{mechanism_name} d={d} eps={epsilon:g}"
            log(f"[perturbation] {label}: ours on {n:,} records")
            entry: dict[str, Any] = {
                "mechanism": mechanism_name,
                "d": d,
                "epsilon": epsilon,
                "ours": bench_ours(mechanism_name, d, epsilon, idx, values, repeats),
            }
            if not args.no_breakdown:
                parts = breakdown(mechanism_name, d, epsilon, idx, values)
                entry["ours_breakdown"] = {
                    "records": n,
                    "note": "seconds for all records, one pass each, secure_rng unless named",
                    "seconds": parts,
                    "seconds_per_100k": {k: per_100k(v, n) for k, v in parts.items()},
                }
            if not args.no_prototype:
                entry["prototype_faster_client_path"] = bench_prototype(
                    mechanism_name, d, epsilon, idx, values, repeats
                )
            entry["peers"] = {}
            for peer, api in peers.items():
                log(f"[perturbation] {label}: {peer}")
                entry["peers"][peer] = bench_peer(
                    peer,
                    api,
                    mechanism_name,
                    d,
                    epsilon,
                    values,
                    repeats,
                    peer_n,
                    0.1 if args.quick else 1.0,
                )
            ours_full = entry["ours"]["full_client_path"]["seconds_per_100k"]
            ours_mech = entry["ours"]["mechanism_perturb_only"]["seconds_per_100k"]
            ours_med = entry["ours"]["full_client_path"]["seconds_per_100k_median"]
            if entry["peers"]:
                fastest = min(entry["peers"], key=lambda p: entry["peers"][p]["seconds_per_100k"])
                peer_s = entry["peers"][fastest]["seconds_per_100k"]
                peer_med = min(p["seconds_per_100k_median"] for p in entry["peers"].values())
                entry["comparison"] = {
                    "faster_peer": fastest,
                    "faster_peer_seconds_per_100k": peer_s,
                    "ours_full_seconds_per_100k": ours_full,
                    "speedup_full_client_path": peer_s / ours_full,
                    "speedup_full_client_path_medians": peer_med / ours_med,
                    "speedup_mechanism_only": peer_s / ours_mech,
                    "target_speedup": TARGET_SPEEDUP,
                    "meets_target": peer_s / ours_full >= TARGET_SPEEDUP,
                    "speedup_prototype_path": (
                        peer_s / entry["prototype_faster_client_path"]["seconds_per_100k"]
                        if "prototype_faster_client_path" in entry
                        else None
                    ),
                    "wire_bytes_ours_packed": entry["ours"]["wire"]["packed_bytes_per_record"],
                    "wire_bytes_ours_base64": entry["ours"]["wire"]["base64_chars_per_record"],
                    "bytes_per_record_peers": {
                        p: entry["peers"][p]["wire"]["report_nbytes"] for p in entry["peers"]
                    },
                }
            settings_out.append(entry)

    result = {
        **started,
        "description": (
            "Client perturbation time (seconds per 100,000 records) and bytes per report. "
            "Ours: full client path privatize_columns (domain strings -> indices -> perturb "
            "-> packed bytes) with secure_rng (AES-CTR), plus mechanism.perturb alone. "
            "Peers: per-record Python calls fed the same domain strings, timed on a "
            "subsample and scaled linearly. seconds_per_100k is the best repeat "
            "(seconds_per_100k_median beside it)."
        ),
        "parameters": {
            "n_ours": n,
            "n_peers_subsample_at_least": peer_n,
            "repeats": repeats,
            "chunk": DEFAULT_CHUNK,
            "value_distribution": "Zipf s=1.1 over the domain",
            "epsilons": list(EPSILONS),
            "target_speedup": TARGET_SPEEDUP,
        },
        "peers_missing": missing,
        "settings": settings_out,
    }
    emit("perturbation", result, args.quick, args.output)


if __name__ == "__main__":
    main()
