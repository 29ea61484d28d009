"""Open domains: fast local hashing (``flh``) against its stated variance, OUE and pure-LDP.

Four measurements for the issue "open domains":

1. **Variance.** ε ∈ {0.5, 1, 2, 4, 8} × four domains (declared lists of 2^10 and 2^16
   strings, the integers 0..2^20−1 as an open ``integer`` attribute (a declared FLH domain
   holds at most 65,536 strings), and open strings drawn from an unbounded Zipf law), one
   fixed Zipf(s = 1.1) data set of 20,000 devices per domain, 200 runs. Every run draws a
   fresh salt (``new_salt()``, as a new collection would) and goes through the real path,
   ``spec.encode → randomizer.perturb → accumulate → estimate_keys``; the five ε of a run
   share its salt (hashing is the cost), so cells of different ε are not independent. For
   the most frequent value, the value of Zipf rank 100 and an absent one: empirical
   variance / mean stated variance (target 0.9–1.1, with its Monte-Carlo interval), the
   stated variance's sampling and collision parts, the same two parts measured (a second
   perturbation under each salt splits the within-salt from the between-salt variance),
   and the stated variance over OLH's optimum ``4e^ε/((e^ε − 1)² n)``.
2. **Report size.** Bytes per report: ``flh`` at 2^20 (integers) and open (strings) vs
   OUE at 2^16 and 2^20 (``ceil(d/8)``), and the aggregator's statistics per attribute.
3. **Client speed.** Per record, ours end to end (``spec.encode([s])`` of a string,
   ``perturb``, ``pack``) and vectorised over a column of 10^5 strings, against pure-LDP's
   per-item ``FastLHClient``/``LHClient.privatise`` loop, in interleaved pairs (one run,
   the arms' order alternating), ratios with min/median/max.
4. **Estimation.** ``estimate_keys`` of 1,000 candidate values from the statistics of
   10^6 reports (median of 9 with the range; target < 50 ms), and pure-LDP's
   ``FastLHServer`` estimating the same 1,000 values from 10^6 of its own reports.

Synthetic data only: ``../shared/data`` is not read (the JSON says whether it exists).
Run inside ``bench/.venv-peers`` (``bash bench/setup_peers.sh``) to include pure-LDP.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker, zipf_frequencies
from ldp_client.privatize import privatize, privatize_packed
from ldp_shared.collection import build_config
from ldp_shared.identifiers import MAX_DOMAIN_SIZE
from ldp_shared.kernel import frequency_variance
from ldp_shared.mechanisms import LocalHashing, LocalHashingSpec
from ldp_shared.mechanisms.hashing import new_salt
from ldp_shared.mechanisms.local_hashing import DEFAULT_HASHES, MAX_SKETCH_CELLS
from ldp_shared.rand import secure_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec

VARIANCE_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
DOMAINS = ("2^10", "2^16", "2^20", "open")
ZIPF_S = 1.1
TARGET_RATIO = (0.9, 1.1)
SPEED_EPSILONS = (1.0, 4.0)
TARGET_ESTIMATE_MS = 50.0
CONFIDENCE = 0.95
OPEN_PREFIX = "https://example.org/item/"
ABSENT_OPEN = OPEN_PREFIX + "0"  # numpy's Zipf draws ranks >= 1: never in the data
BIG_HASHES = 16_384  # a larger k for part 4 (k·g ≤ 2^20 at g = 56)


def declared_domain(d: int) -> list[str]:
    return [f"value-{i:05d}" for i in range(d)]


def olh_optimum(epsilon: float, n: int) -> float:
    e = math.exp(epsilon)
    return 4.0 * e / ((e - 1.0) ** 2 * n)


def chi2_quantile(prob: float, dof: int) -> float:
    """Wilson–Hilferty approximation of the chi-square quantile (no scipy needed)."""
    z = NormalDist().inv_cdf(prob)
    c = 2.0 / (9.0 * dof)
    return dof * (1.0 - c + z * math.sqrt(c)) ** 3


def spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
    }


# --------------------------------------------------------------------------- data


def make_dataset(domain: str, n: int, seed: int) -> dict[str, Any]:
    """A fixed Zipf(1.1) data set of ``n`` devices, its spec and three query values."""
    rng = np.random.default_rng(seed)
    if domain == "open":
        ranks = rng.zipf(ZIPF_S, size=n)
        column: Any = [f"{OPEN_PREFIX}{r}" for r in ranks]
        distinct, counts = np.unique(ranks, return_counts=True)
        count_of = dict(zip(distinct.tolist(), counts.tolist(), strict=True))
        top = int(distinct[np.argmax(counts)])
        queries = {
            "most_frequent": (f"{OPEN_PREFIX}{top}", count_of[top]),
            "rank_100": (f"{OPEN_PREFIX}100", count_of.get(100, 0)),
            "absent": (ABSENT_OPEN, 0),
        }
        spec = LocalHashingSpec(name="v", mechanism="flh")
        what = (
            f"open string attribute; values '{OPEN_PREFIX}<r>' with r drawn from numpy's "
            f"unbounded Zipf law (a = {ZIPF_S}), no declared domain"
        )
        f2 = float(((counts / n) ** 2).sum())
        return {
            "spec": spec,
            "column": column,
            "queries": queries,
            "f2_true": f2,
            "distinct_values": int(distinct.size),
            "what": what,
        }

    d = 2 ** int(domain.split("^")[1])
    idx = rng.choice(d, size=n, p=zipf_frequencies(d, ZIPF_S)).astype(np.int64)
    counts = np.bincount(idx, minlength=d)
    absent = np.flatnonzero(counts == 0)
    top = int(np.argmax(counts))
    if d > MAX_DOMAIN_SIZE:
        spec = LocalHashingSpec(name="v", mechanism="flh", value_type="integer")
        column = idx
        name_of: Callable[[int], Any] = int
        what = (
            f"open integer attribute (value_type 'integer') holding the values 0..{d - 1}: "
            f"FLH's declared domain is a list of at most {MAX_DOMAIN_SIZE:,} strings"
        )
    else:
        values = declared_domain(d)
        spec = LocalHashingSpec(name="v", mechanism="flh", domain=values)
        column = [values[i] for i in idx]
        name_of = values.__getitem__
        what = f"declared domain of {d:,} strings 'value-00000'..."
    queries = {
        "most_frequent": (name_of(top), int(counts[top])),
        "rank_100": (name_of(99), int(counts[99])),
    }
    if absent.size:
        queries["absent"] = (name_of(int(absent[-1])), 0)
    return {
        "spec": spec,
        "column": column,
        "queries": queries,
        "f2_true": float(((counts / n) ** 2).sum()),
        "distinct_values": int((counts > 0).sum()),
        "what": what,
    }


# --------------------------------------------------------------------------- 1. variance


def stated_parts(
    rnd: LocalHashing, f_hat: np.ndarray, f2: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The two terms of the stated variance, as ``estimate_keys`` computes them."""
    sampling = frequency_variance(f_hat, n, rnd.p, rnd.q_star)
    collision = np.maximum(f2 - np.clip(f_hat, 0.0, 1.0) ** 2, 0.0) / ((rnd.g - 1) * rnd.k)
    return sampling, collision


def variance_domain(domain: str, n: int, runs: int, seed: int) -> dict[str, Any]:
    data = make_dataset(domain, n, seed)
    base: LocalHashingSpec = data["spec"]
    column = data["column"]
    names = list(data["queries"])
    query_values = [data["queries"][q][0] for q in names]
    true_f = np.array([data["queries"][q][1] / n for q in names])
    n_eps, n_q = len(VARIANCE_EPSILONS), len(names)
    est = np.empty((runs, n_eps, 2, n_q))  # run, ε, draw under the same salt, value
    stated = np.empty((runs, n_eps, n_q))
    samp = np.empty((runs, n_eps, n_q))
    coll = np.empty((runs, n_eps, n_q))
    f2_hat = np.empty((runs, n_eps))
    worst_mismatch = 0.0
    rnd_of: dict[float, LocalHashing] = {}
    t0 = time.perf_counter()
    encode_seconds = 0.0
    for run in range(runs):
        spec = base.model_copy(update={"salt": new_salt()})  # a new collection's salt
        gen = secure_rng()
        t_enc = time.perf_counter()
        keys = spec.encode(column)
        query_keys = spec.encode(query_values)
        encode_seconds += time.perf_counter() - t_enc
        for e, epsilon in enumerate(VARIANCE_EPSILONS):
            rnd = spec.randomizer(epsilon)
            rnd_of[epsilon] = rnd
            for draw in range(2):
                stats = rnd.accumulate(rnd.perturb(keys, gen))
                estimate = rnd.estimate_keys(stats, n, query_keys, CONFIDENCE)
                est[run, e, draw] = estimate.estimate
                if draw == 0:
                    var = estimate.stderr**2
                    f2 = rnd.second_moment(stats["counts"], n)
                    s, c = stated_parts(rnd, estimate.estimate, f2, n)
                    worst_mismatch = max(worst_mismatch, float(np.max(np.abs(s + c - var) / var)))
                    stated[run, e], samp[run, e], coll[run, e], f2_hat[run, e] = var, s, c, f2
        if (run + 1) % max(1, runs // 4) == 0:
            log(f"[open_domains] variance {domain}: {run + 1}/{runs} runs")
    seconds = time.perf_counter() - t0

    dof = runs - 1
    lo_factor = dof / chi2_quantile(0.975, dof)
    hi_factor = dof / chi2_quantile(0.025, dof)
    cells: list[dict[str, Any]] = []
    for e, epsilon in enumerate(VARIANCE_EPSILONS):
        rnd = rnd_of[epsilon]
        optimum = olh_optimum(epsilon, n)
        for i, name in enumerate(names):
            first = est[:, e, 0, i]
            emp = float(np.var(first, ddof=1))
            st = float(stated[:, e, i].mean())
            ratio = emp / st
            # within a salt: half the squared difference of two perturbations; between
            # salts: the variance of the pair means less the within part they keep
            within = float(np.mean((est[:, e, 0, i] - est[:, e, 1, i]) ** 2) / 2.0)
            pair_var = float(np.var(est[:, e, :, i].mean(axis=1), ddof=1))
            between = pair_var - within / 2.0
            between_se = math.sqrt(2.0 * pair_var**2 / dof + within**2 / (2.0 * runs))
            s_mean, c_mean = float(samp[:, e, i].mean()), float(coll[:, e, i].mean())
            truth_s, truth_c = stated_parts(rnd, np.array([true_f[i]]), data["f2_true"], n)
            cells.append(
                {
                    "epsilon": epsilon,
                    "value": name,
                    "true_frequency": float(true_f[i]),
                    "mean_estimate": float(first.mean()),
                    "bias": float(first.mean() - true_f[i]),
                    "bias_standard_error": math.sqrt(emp / runs),
                    "empirical_variance": emp,
                    "mse_about_truth": float(np.mean((first - true_f[i]) ** 2)),
                    "stated_variance_mean": st,
                    "ratio_empirical_over_stated": ratio,
                    "ratio_monte_carlo_95": [ratio * lo_factor, ratio * hi_factor],
                    "within_target": TARGET_RATIO[0] <= ratio <= TARGET_RATIO[1],
                    "stated_sampling_part_mean": s_mean,
                    "stated_collision_part_mean": c_mean,
                    "stated_at_truth": {
                        "sampling": float(truth_s[0]),
                        "collision": float(truth_c[0]),
                        "ratio_empirical_over_it": emp / float(truth_s[0] + truth_c[0]),
                    },
                    "measured_sampling_part_within_salt": within,
                    "measured_collision_part_between_salts": between,
                    "measured_collision_part_standard_error": between_se,
                    "ratio_measured_over_stated_sampling": within / s_mean,
                    "ratio_measured_over_stated_collision": between / c_mean if c_mean else None,
                    "olh_optimum": optimum,
                    "ratio_stated_over_olh_optimum": st / optimum,
                    "ratio_stated_sampling_over_olh_optimum": s_mean / optimum,
                }
            )
    per_eps = {
        f"{epsilon:g}": {
            "g": rnd_of[epsilon].g,
            "k": rnd_of[epsilon].k,
            "p": rnd_of[epsilon].p,
            "f2_estimate_mean": float(f2_hat[:, e].mean()),
            "f2_estimate_sd": float(f2_hat[:, e].std(ddof=1)),
        }
        for e, epsilon in enumerate(VARIANCE_EPSILONS)
    }
    return {
        "domain": domain,
        "attribute": data["what"],
        "devices": n,
        "distinct_values_in_data": data["distinct_values"],
        "f2_true": data["f2_true"],
        "query_values": {q: data["queries"][q][0] for q in names},
        "absent_value_note": (
            None
            if "absent" in names
            else "every declared value occurs in the data set: no absent value to query"
        ),
        "per_epsilon": per_eps,
        "cells": cells,
        "stated_equals_sum_of_parts_max_relative_error": worst_mismatch,
        "seconds": seconds,
        "seconds_hashing_values": encode_seconds,
    }


def variance_part(n: int, runs: int) -> dict[str, Any]:
    out = []
    for i, domain in enumerate(DOMAINS):
        log(f"[open_domains] variance {domain}: {runs} runs × {len(VARIANCE_EPSILONS)} ε")
        out.append(variance_domain(domain, n, runs, seed=1000 + i))
    rows = [
        {
            "domain": block["domain"],
            "epsilon": c["epsilon"],
            "value": c["value"],
            "ratio": round(c["ratio_empirical_over_stated"], 3),
            "mc95": [round(x, 3) for x in c["ratio_monte_carlo_95"]],
            "within_target": c["within_target"],
            "stated_over_olh": round(c["ratio_stated_over_olh_optimum"], 3),
            "sampling_stated": c["stated_sampling_part_mean"],
            "collision_stated": c["stated_collision_part_mean"],
        }
        for block in out
        for c in block["cells"]
    ]
    ratios = [r["ratio"] for r in rows]
    cells = [c for block in out for c in block["cells"]]
    sampling_ratios = [c["ratio_measured_over_stated_sampling"] for c in cells]
    resolved = [
        c
        for c in cells
        if c["measured_collision_part_standard_error"] < 0.2 * c["stated_collision_part_mean"]
    ]
    inside = sum(r["within_target"] for r in rows)
    consistent = sum(r["mc95"][0] <= 1.0 <= r["mc95"][1] for r in rows)
    dof = runs - 1
    return {
        "runs_per_setting": runs,
        "devices": n,
        "hashes_k": DEFAULT_HASHES,
        "confidence": CONFIDENCE,
        "target_ratio_empirical_over_stated": list(TARGET_RATIO),
        "declared_domain_limit": (
            f"FLH's declared domain is a list of at most {MAX_DOMAIN_SIZE:,} strings; the 2^20 "
            "setting is an open integer attribute holding 0..2^20−1"
        ),
        "method": (
            "per run: a fresh salt (new_salt()), the column encoded by spec.encode, and for "
            "each ε two perturbations (randomizer.perturb → accumulate → estimate_keys) with "
            "a secure_rng; the headline uses the first draw of each run (independent runs, "
            "each its own salt); the second splits the variance into within-salt (sampling) "
            "and between-salt (collision) parts. The five ε of a run share its salt."
        ),
        "monte_carlo_note": (
            f"with {runs} runs the sample variance's relative standard error is about "
            f"{math.sqrt(2 / dof):.0%}; mc95 is the chi-square 95% interval of the ratio "
            f"(Wilson–Hilferty), so a true ratio of 1 falls outside 0.9–1.1 often by chance"
        ),
        "summary": {
            "cells": len(rows),
            "within_target": inside,
            "monte_carlo_interval_contains_1": consistent,
            "ratio": spread(ratios),
            "mean_ratio": statistics.fmean(ratios),
            "measured_over_stated_sampling_part": spread(sampling_ratios),
            "measured_over_stated_collision_part_where_resolved": {
                "cells": [
                    f"{c['epsilon']:g} {block['domain']} {c['value']}"
                    for block in out
                    for c in block["cells"]
                    if c in resolved
                ],
                "ratio": spread([c["ratio_measured_over_stated_collision"] for c in resolved])
                if resolved
                else None,
                "rule": "its Monte-Carlo standard error below 20% of the stated collision part",
            },
        },
        "table": rows,
        "domains": out,
    }


# --------------------------------------------------------------------------- 2. sizes


def size_part() -> dict[str, Any]:
    def config_bytes(attribute: AttributeSpec, epsilon: float = 1.0) -> int:
        spec = CollectionSpec(name="bench", attributes=[attribute], epsilon=epsilon)
        return build_config(spec).report_bytes

    def base64_chars(b: int) -> int:
        return 4 * math.ceil(b / 3)

    rows: dict[str, Any] = {}
    for label, attribute in (
        (
            "flh_2^20_integers",
            LocalHashingSpec(name="v", mechanism="flh", value_type="integer"),
        ),
        ("flh_open_strings", LocalHashingSpec(name="v", mechanism="flh")),
    ):
        b = config_bytes(attribute)
        randomizers = {f"{eps:g}": attribute.randomizer(eps) for eps in VARIANCE_EPSILONS}
        stats = {eps: r.k * r.g * 8 for eps, r in randomizers.items()}
        rows[label] = {
            "packed_bytes_per_report": b,
            "base64_chars": base64_chars(b),
            "statistics_bytes_by_epsilon_k1024": stats,
        }
    oue16 = config_bytes(AttributeSpec(name="v", domain=declared_domain(2**16), mechanism="oue"))
    rows["oue_2^16"] = {
        "packed_bytes_per_report": oue16,
        "base64_chars": base64_chars(oue16),
        "statistics_bytes": 2**16 * 8,
        "ceil_d_over_8": math.ceil(2**16 / 8),
    }
    try:
        config_bytes(AttributeSpec(name="v", domain=declared_domain(2**20), mechanism="oue"))
        refused = None
    except Exception as exc:  # the schema refuses a domain over MAX_DOMAIN_SIZE
        refused = f"{type(exc).__name__}: " + " ".join(str(exc).split())[:300]
    oue20 = math.ceil(2**20 / 8)
    rows["oue_2^20"] = {
        "packed_bytes_per_report": oue20,
        "base64_chars": base64_chars(oue20),
        "statistics_bytes": 2**20 * 8,
        "computed_as": "ceil(d/8): ldpcollect refuses a declared domain of 2^20 values",
        "ldpcollect_refusal": refused,
    }
    rows["ratio_oue_over_flh"] = {
        "2^16": oue16 / rows["flh_open_strings"]["packed_bytes_per_report"],
        "2^20": oue20 / rows["flh_2^20_integers"]["packed_bytes_per_report"],
    }
    return rows


# --------------------------------------------------------------------------- peers


def load_pure_ldp() -> tuple[dict[str, Any] | None, str | None]:
    try:
        from pure_ldp.frequency_oracles.local_hashing import (
            FastLHClient,
            FastLHServer,
            LHClient,
        )
    except ImportError as exc:
        return None, f"not importable ({exc}); run bench/setup_peers.sh"
    return {"FastLHClient": FastLHClient, "LHClient": LHClient, "FastLHServer": FastLHServer}, None


def identity(x: Any) -> Any:
    return x


# --------------------------------------------------------------------------- 3. speed


def speed_arms(
    epsilon: float,
    peers: dict[str, Any] | None,
    column: list[str],
    sub: list[str],
    sdk_sub: list[str],
) -> tuple[LocalHashing, dict[str, Callable[[], int]], dict[str, list[float]], dict[str, str]]:
    """The timed arms at one ε: each call handles its records and returns how many."""
    spec = LocalHashingSpec(name="v", mechanism="flh")
    rnd = spec.randomizer(epsilon)
    config = build_config(CollectionSpec(name="bench", attributes=[spec], epsilon=epsilon))
    encode, perturb, pack = spec.encode, rnd.perturb, rnd.pack
    parts: dict[str, list[float]] = {"encode": [], "perturb": [], "pack": []}

    def ours_per_record() -> int:
        gen = secure_rng()
        for s in sub:
            privatize_packed(config, {"v": s}, gen)
        return len(sub)

    def ours_vectorised() -> int:
        gen = secure_rng()
        t0 = time.perf_counter()
        keys = encode(column)
        t1 = time.perf_counter()
        answers = perturb(keys, gen)
        t2 = time.perf_counter()
        pack(answers)
        t3 = time.perf_counter()
        parts["encode"].append(t1 - t0)
        parts["perturb"].append(t2 - t1)
        parts["pack"].append(t3 - t2)
        return len(column)

    def sdk_per_record() -> int:
        gen = secure_rng()
        for s in sdk_sub:
            privatize(config, {"v": s}, gen)
        return len(sdk_sub)

    arms: dict[str, Callable[[], int]] = {
        "ours_per_record": ours_per_record,
        "ours_vectorised_column": ours_vectorised,
        "ours_sdk_privatize_per_record": sdk_per_record,
    }
    calls: dict[str, str] = {}
    if peers is None:
        return rnd, arms, parts, calls
    random.seed(12345)
    np.random.seed(12345)  # the peers draw from Python's / numpy's global generators
    fast = peers["FastLHClient"](epsilon, None, DEFAULT_HASHES, use_olh=True, index_mapper=identity)
    plain = peers["LHClient"](epsilon, None, use_olh=True, index_mapper=identity)
    calls["FastLHClient"] = (
        f"pure_ldp FastLHClient(epsilon, d=None, k={DEFAULT_HASHES}, use_olh=True, "
        "index_mapper=identity).privatise(s)"
    )
    calls["LHClient"] = (
        "pure_ldp LHClient(epsilon, d=None, use_olh=True, index_mapper=identity).privatise(s)"
    )
    for name, client in (("FastLHClient", fast), ("LHClient", plain)):
        if client.g != rnd.g:
            calls[name] += f" (its g = {client.g}, ours {rnd.g})"
    fast_privatise, plain_privatise = fast.privatise, plain.privatise

    def fast_loop() -> int:
        for s in sub:
            fast_privatise(s)
        return len(sub)

    def plain_loop() -> int:
        for s in sub:
            plain_privatise(s)
        return len(sub)

    arms["pure_ldp_FastLHClient_per_item"] = fast_loop
    arms["pure_ldp_LHClient_per_item"] = plain_loop
    return rnd, arms, parts, calls


def speed_part(
    peers: dict[str, Any] | None, column_n: int, per_record_n: int, sdk_n: int, pairs: int
) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    column = [f"{OPEN_PREFIX}{r}" for r in rng.zipf(ZIPF_S, size=column_n)]
    sub = column[:per_record_n]
    sdk_sub = column[:sdk_n]
    out: list[dict[str, Any]] = []
    for epsilon in SPEED_EPSILONS:
        rnd, arms, parts, calls = speed_arms(epsilon, peers, column, sub, sdk_sub)
        for fn in arms.values():  # warm-up, not timed
            fn()
        for v in parts.values():
            v.clear()
        micros: dict[str, list[float]] = {name: [] for name in arms}
        names = list(arms)
        for pair in range(pairs):
            order = names if pair % 2 == 0 else names[::-1]
            for name in order:
                t0 = time.perf_counter()
                count = arms[name]()
                micros[name].append((time.perf_counter() - t0) / count * 1e6)
        log(
            f"[open_domains] speed ε={epsilon:g}: "
            + ", ".join(f"{k} {statistics.median(v):.2f} µs" for k, v in micros.items())
        )
        entry: dict[str, Any] = {
            "epsilon": epsilon,
            "g": rnd.g,
            "k": rnd.k,
            "microseconds_per_record": {k: spread(v) for k, v in micros.items()},
            "microseconds_per_record_all": micros,
            "records_per_call": {
                "ours_per_record": len(sub),
                "ours_vectorised_column": len(column),
                "ours_sdk_privatize_per_record": len(sdk_sub),
                "pure_ldp_per_item": len(sub),
            },
            "ours_vectorised_breakdown_microseconds_per_record": {
                k: spread([t / len(column) * 1e6 for t in v]) for k, v in parts.items()
            },
            "peer_calls": calls,
        }
        peer_names = [k for k in micros if k.startswith("pure_ldp_")]
        if peer_names:
            fastest = min(peer_names, key=lambda k: statistics.median(micros[k]))
            ratios: dict[str, Any] = {}
            for ours in ("ours_per_record", "ours_vectorised_column"):
                for peer in peer_names:
                    per_pair = [p / o for p, o in zip(micros[peer], micros[ours], strict=True)]
                    ratios[f"{peer}_over_{ours}"] = spread(per_pair)
            entry["fastest_peer"] = fastest
            entry["speedup_ours_over_fastest_peer"] = {
                "meaning": "peer µs/record ÷ ours µs/record per interleaved pair (>1: ours faster)",
                "per_record": ratios[f"{fastest}_over_ours_per_record"],
                "vectorised_column": ratios[f"{fastest}_over_ours_vectorised_column"],
            }
            entry["all_ratios"] = ratios
        out.append(entry)
    return {
        "data": (
            f"{column_n:,} open strings '{OPEN_PREFIX}<r>', r ~ Zipf({ZIPF_S}); the "
            f"per-record loops take the first {per_record_n:,}, the SDK loop the first {sdk_n:,}"
        ),
        "pairs": pairs,
        "method": (
            "interleaved: every pair times each arm once, in alternating order, in one run; "
            "ours with one secure_rng (AES-CTR) per call of the arm, as a client keeps one "
            "generator; pure-LDP draws from Python's random and numpy's global Mersenne "
            "Twister and hashes the string with xxh32 (index_mapper=identity, which suits an "
            "open domain on the client side). One warm-up call per arm, not timed."
        ),
        "ours_per_record_path": (
            "ldp_client.privatize.privatize_packed(config, {'v': s}, rng): one record to its"
            " packed report (the one-record path, ldp_client/one_record.py)"
        ),
        "ours_sdk_path": (
            "ldp_client.privatize.privatize(config, {'v': s}, rng): the SDK's per-record call,"
            " to a Report with its fresh id"
        ),
        "settings": out,
    }


# --------------------------------------------------------------------------- 4. estimation


def time_ms(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], list[float], Any]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return spread(times), times, result


def estimation_part(
    peers: dict[str, Any] | None, n: int, candidates: int, repeats: int
) -> dict[str, Any]:
    rng = np.random.default_rng(11)
    ranks = rng.zipf(ZIPF_S, size=n)
    column = [f"{OPEN_PREFIX}{r}" for r in ranks]
    true_counts = np.bincount(np.minimum(ranks, candidates + 1), minlength=candidates + 2)
    true_f = true_counts[1 : candidates + 1] / n
    names = [f"{OPEN_PREFIX}{r}" for r in range(1, candidates + 1)]
    base = LocalHashingSpec(name="v", mechanism="flh")  # a fresh salt
    log(f"[open_domains] estimation: encoding {n:,} strings")
    column_keys = base.encode(column)
    out: list[dict[str, Any]] = []
    for epsilon in SPEED_EPSILONS:
        entry: dict[str, Any] = {"epsilon": epsilon, "ours": {}}
        for hashes in (DEFAULT_HASHES, BIG_HASHES):
            spec = base.model_copy(update={"hashes": hashes})
            rnd = spec.randomizer(epsilon)
            if rnd.k * rnd.g > MAX_SKETCH_CELLS:
                continue
            log(f"[open_domains] estimation ε={epsilon:g} k={hashes}: {n:,} reports")
            stats = rnd.accumulate(rnd.perturb(column_keys, secure_rng()))
            keys = spec.encode(names)
            est_ms, est_all, estimate = time_ms(
                lambda rnd=rnd, stats=stats, keys=keys: rnd.estimate_keys(
                    stats, n, keys, CONFIDENCE
                ),
                repeats,
            )
            enc_ms, _, _ = time_ms(
                lambda rnd=rnd, stats=stats, spec=spec: rnd.estimate_keys(
                    stats, n, spec.encode(names), CONFIDENCE
                ),
                repeats,
            )
            f2 = rnd.second_moment(stats["counts"], n)
            s, c = stated_parts(rnd, estimate.estimate, f2, n)
            z = (estimate.estimate - true_f) / estimate.stderr
            entry["ours"][f"k={hashes}"] = {
                "g": rnd.g,
                "k": rnd.k,
                "estimate_keys_ms": est_ms,
                "estimate_keys_ms_all": est_all,
                "meets_target_ms": est_ms["median"] < TARGET_ESTIMATE_MS,
                "encode_candidates_plus_estimate_keys_ms": enc_ms,
                "stated_variance_parts_median_over_candidates": {
                    "sampling": float(np.median(s)),
                    "collision": float(np.median(c)),
                },
                "sanity_share_within_95_interval": float(np.mean(np.abs(z) < 1.96)),
                "max_abs_error": float(np.max(np.abs(estimate.estimate - true_f))),
            }
        if peers is not None:
            entry["pure_ldp_FastLHServer"] = peer_estimation(
                peers, epsilon, n, ranks, candidates, repeats, true_f
            )
            ours_ms = entry["ours"][f"k={DEFAULT_HASHES}"]["estimate_keys_ms"]["median"]
            peer_ms = entry["pure_ldp_FastLHServer"]["estimate_forced_ms"]["median"]
            entry["speedup_ours_over_pure_ldp_medians"] = peer_ms / ours_ms
        out.append(entry)
    return {
        "reports": n,
        "candidates": candidates,
        "repeats": repeats,
        "target_ms": TARGET_ESTIMATE_MS,
        "data": (
            f"{n:,} open strings '{OPEN_PREFIX}<r>', r ~ Zipf({ZIPF_S}); candidates r = 1.."
            f"{candidates} (the most frequent ranks)"
        ),
        "ours_method": (
            "statistics from the real path (encode → perturb → accumulate; one fresh salt, "
            f"the column encoded once, k = {DEFAULT_HASHES} (the default) and "
            f"k = {BIG_HASHES} with the same salt); "
            "timed: randomizer.estimate_keys(stats, n, candidate_keys, 0.95) (supports, "
            "second moment, variance); beside it the same with spec.encode of the candidate "
            "strings (what a values= query adds)"
        ),
        "settings": out,
    }


def peer_estimation(
    peers: dict[str, Any],
    epsilon: float,
    n: int,
    ranks: np.ndarray,
    candidates: int,
    repeats: int,
    true_f: np.ndarray,
) -> dict[str, Any]:
    """pure-LDP's FastLH server over a declared domain of the ``candidates`` values."""
    random.seed(12345)
    np.random.seed(12345)
    t0 = time.perf_counter()
    server = peers["FastLHServer"](
        epsilon, candidates, DEFAULT_HASHES, use_olh=True, index_mapper=identity
    )
    build = time.perf_counter() - t0
    client = peers["FastLHClient"](
        epsilon, candidates, DEFAULT_HASHES, use_olh=True, index_mapper=identity
    )
    log(f"[open_domains] estimation ε={epsilon:g}: pure-LDP {n:,} reports (per item)")
    t0 = time.perf_counter()
    reports = [client.privatise(i) for i in (ranks - 1).tolist()]
    clients_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    aggregate_s = time.perf_counter() - t0
    items = list(range(candidates))

    def forced() -> np.ndarray:
        server.last_estimated = 0  # its cache: recompute from the counts, as a query would
        return server.estimate_all(items, suppress_warnings=True)

    forced_ms, forced_all, counts = time_ms(forced, repeats)
    cached_ms, _, _ = time_ms(lambda: server.estimate_all(items, suppress_warnings=True), repeats)
    f_hat = np.asarray(counts) / n
    return {
        "g": server.g,
        "k": server.k,
        "estimate_forced_ms": forced_ms,
        "estimate_forced_ms_all": forced_all,
        "estimate_cached_ms": cached_ms,
        "hash_matrix_build_seconds": build,
        "client_privatise_seconds_for_all_reports": clients_s,
        "aggregate_seconds_for_all_reports": aggregate_s,
        "max_abs_error": float(np.max(np.abs(f_hat - true_f))),
        "comparable_how": (
            f"FastLHServer(epsilon, d={candidates}, k={DEFAULT_HASHES}, use_olh=True, "
            "index_mapper=identity): pure-LDP's server needs its domain declared up front "
            "(a k × d hash matrix, built once: hash_matrix_build_seconds) and estimates "
            "integer indices only, so the devices report their value's Zipf rank − 1 (the "
            f"candidates are indices 0..{candidates - 1}, the other values hash as larger "
            "indices). Its first estimate after aggregation computes all d values and caches "
            "them: estimate_forced_ms resets that cache (last_estimated = 0) before "
            "estimate_all of the candidates, the comparable number; estimate_cached_ms is "
            "the later lookups. A value outside the declared d cannot be estimated without "
            "rebuilding the matrix."
        ),
    }


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="variance runs (200)")
    parser.add_argument("--devices", type=int, default=None, help="variance devices (20,000)")
    parser.add_argument("--pairs", type=int, default=None, help="interleaved speed pairs (9)")
    parser.add_argument("--reports", type=int, default=None, help="estimation reports (10^6)")
    parser.add_argument(
        "--parts",
        default="variance,size,speed,estimation",
        help="comma-separated subset of variance,size,speed,estimation",
    )
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    quick = args.quick
    runs = args.runs or sized(200, 20, 3, args)
    devices = args.devices or sized(20_000, 5_000, 1_000, args)
    pairs = args.pairs or (3 if quick else 9)
    reports = args.reports or sized(1_000_000, 20_000, 2_000, args)
    parts = set(args.parts.split(","))
    started = start_marker()

    peers, missing = (None, "--no-peers") if args.no_peers else load_pure_ldp()
    result: dict[str, Any] = {
        **started,
        "description": __doc__.split("\n\n")[0],
        "parameters": {
            "variance_epsilons": list(VARIANCE_EPSILONS),
            "domains": list(DOMAINS),
            "zipf_s": ZIPF_S,
            "runs": runs,
            "devices": devices,
            "speed_epsilons": list(SPEED_EPSILONS),
            "pairs": pairs,
            "estimation_reports": reports,
            "hashes_default_k": DEFAULT_HASHES,
        },
        "peers_missing": {"pure-ldp": missing} if missing else {},
        "datasets": {
            "shared_data": "../shared/data",
            "used": False,
            "present": DATA_DIR.is_dir(),
            "note": "not needed: every data set here is synthetic (seeded Zipf draws)",
        },
        "seconds_per_part": {},
    }
    jobs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("variance", lambda: variance_part(devices, runs)),
        ("size", size_part),
        (
            "speed",
            lambda: speed_part(
                peers,
                sized(100_000, 10_000, 1_000, args),
                sized(20_000, 2_000, 200, args),
                sized(5_000, 500, 50, args),
                pairs,
            ),
        ),
        ("estimation", lambda: estimation_part(peers, reports, 1000, 3 if quick else 9)),
    ]
    for name, job in jobs:
        if name not in parts:
            continue
        t0 = time.perf_counter()
        result[name] = job()
        result["seconds_per_part"][name] = time.perf_counter() - t0
    emit("open_domains", result, quick, args.output)


if __name__ == "__main__":
    main()
