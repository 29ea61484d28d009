"""What ``bench/perturbation.py`` and ``bench/per_record.py`` share: the settings' data,
the frequency-oracle peers (pure-LDP, multi-freq-ldpy) and interleaved A/B timing.

Every comparison is interleaved: a *pair* times each arm once, in alternating order,
so that the machine's load falls on all arms alike; the ratios are taken pair by pair
and reported as their range (min, median, max) with the load average beside them.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from _common import zipf_frequencies
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import AttributeSpec, CollectionSpec

Arm = Callable[[], int]  # does its work, returns how many records it handled

SETTINGS: list[tuple[str, int]] = [
    ("grr", 16),
    ("grr", 1024),
    ("sue", 16),
    ("oue", 16),
    ("sue", 1024),
    ("oue", 1024),
]
EPSILONS = (1.0, 4.0)
PEERS = ["pure-ldp", "multi-freq-ldpy"]


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options both scripts take: ``--pairs`` and ``--no-peers``."""
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (3)")
    parser.add_argument("--no-peers", action="store_true")


def plan(
    args: argparse.Namespace, tiny_settings: int
) -> tuple[list[tuple[str, int]], tuple[float, ...], dict[str, Any], dict[str, str]]:
    """The settings and ε to run (the first ``tiny_settings`` at ε = 4 when tiny), and
    the peers (with why any is missing)."""
    settings = SETTINGS[:tiny_settings] if args.tiny else SETTINGS
    epsilons = EPSILONS[1:] if args.tiny else EPSILONS
    peers, missing = ({}, {"all": "--no-peers"}) if args.no_peers else load_peers()
    return settings, epsilons, peers, missing


def domain_of(d: int) -> list[str]:
    return [f"value-{i:04d}" for i in range(d)]


def make_values(d: int, n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """``n`` Zipf-distributed value indices and the same values as domain strings."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(d, size=n, p=zipf_frequencies(d)).astype(np.int64)
    domain = np.array(domain_of(d), dtype=object)
    return idx, domain[idx].tolist()


def config_for(mechanism: str, d: int, epsilon: float) -> CollectionConfig:
    spec = CollectionSpec(
        name="bench",
        attributes=[AttributeSpec(name="v", domain=domain_of(d), mechanism=mechanism)],
        epsilon=epsilon,
    )
    return build_config(spec)


def load_peers() -> tuple[dict[str, Any], dict[str, str]]:
    """The peers' client (and pure-LDP's server) classes, and why any is missing."""
    peers: dict[str, Any] = {}
    missing: dict[str, str] = {}
    try:
        from pure_ldp.frequency_oracles import DEClient, DEServer, UEClient, UEServer

        peers["pure-ldp"] = {"DE": (DEClient, DEServer), "UE": (UEClient, UEServer)}
    except ImportError as exc:
        missing["pure-ldp"] = f"not importable ({exc}); run bash bench/setup_peers.sh"
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Client
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client

        peers["multi-freq-ldpy"] = {"UE_Client": UE_Client, "GRR_Client": GRR_Client}
    except ImportError as exc:
        missing["multi-freq-ldpy"] = f"not importable ({exc}); run bash bench/setup_peers.sh"
    return peers, missing


def peer_client(
    peer: str, api: dict[str, Any], mechanism: str, d: int, epsilon: float
) -> tuple[Callable[[str], Any], str]:
    """The peer's per-record client call on a domain string, and how it is called."""
    lookup = {v: i for i, v in enumerate(domain_of(d))}
    if peer == "pure-ldp":
        if mechanism == "grr":
            client = api["DE"][0](epsilon, d, index_mapper=lookup.__getitem__)
            return client.privatise, "pure_ldp DEClient(eps, d, index_mapper).privatise(v)"
        client = api["UE"][0](
            epsilon, d, use_oue=mechanism == "oue", index_mapper=lookup.__getitem__
        )
        return client.privatise, "pure_ldp UEClient(eps, d, use_oue, index_mapper).privatise(v)"
    if mechanism == "grr":
        grr = api["GRR_Client"]
        grr(0, d, epsilon)  # numba compiles on the first call: not timed
        return (
            lambda s: grr(lookup[s], d, epsilon)
        ), "multi_freq_ldpy GRR_Client(lookup[v], d, eps)"
    ue, optimal = api["UE_Client"], mechanism == "oue"
    ue(0, d, epsilon, optimal)
    call = f"multi_freq_ldpy UE_Client(lookup[v], d, eps, optimal={optimal})"
    return (lambda s: ue(lookup[s], d, epsilon, optimal)), call


def peer_arms(
    peers: dict[str, Any], mechanism: str, d: int, epsilon: float, values: list[str], seconds: float
) -> tuple[dict[str, Arm], dict[str, str], dict[str, Callable[[str], Any]]]:
    """Each peer's per-record loop on a subsample lasting about ``seconds``: the arms, how
    each is called, and the per-record calls themselves."""
    arms: dict[str, Arm] = {}
    calls: dict[str, str] = {}
    clients: dict[str, Callable[[str], Any]] = {}
    for peer, api in peers.items():
        call, shown = peer_client(peer, api, mechanism, d, epsilon)
        sample = subsample_for(lambda s, c=call: [c(x) for x in s], values, seconds, 200)
        arms[peer], calls[peer], clients[peer] = (
            loop_arm(call, sample),
            f"{shown} on {len(sample):,} records",
            call,
        )
    return arms, calls, clients


def pure_ldp_whole(
    api: dict[str, Any], mechanism: str, d: int, epsilon: float
) -> Callable[[list[str]], Any]:
    """pure-LDP's whole process on a list of strings: every client's ``privatise``, the
    server's ``aggregate`` of each report, then the estimates of all ``d`` values."""
    lookup = {v: i for i, v in enumerate(domain_of(d))}
    domain = domain_of(d)

    def run(strings: list[str]) -> Any:
        if mechanism == "grr":
            client_cls, server_cls = api["DE"]
            kwargs: dict[str, Any] = {}
        else:
            client_cls, server_cls = api["UE"]
            kwargs = {"use_oue": mechanism == "oue"}
        client = client_cls(epsilon, d, index_mapper=lookup.__getitem__, **kwargs)
        server = server_cls(epsilon, d, index_mapper=lookup.__getitem__, **kwargs)
        privatise, aggregate = client.privatise, server.aggregate
        for s in strings:
            aggregate(privatise(s))
        return server.estimate_all(domain, suppress_warnings=True)

    return run


def loop_arm(call: Callable[[str], Any], strings: list[str]) -> Arm:
    def arm() -> int:
        for s in strings:
            call(s)
        return len(strings)

    return arm


def subsample_for(
    call: Callable[[list[str]], Any], values: list[str], seconds: float, least: int
) -> list[str]:
    """Enough of ``values`` that one call of a per-record loop lasts about ``seconds``."""
    probe = values[: min(len(values), 500)]
    t0 = time.perf_counter()
    call(probe)
    per_record = max((time.perf_counter() - t0) / max(len(probe), 1), 1e-9)
    return values[: min(len(values), max(least, math.ceil(seconds / per_record)))]


def interleave(arms: dict[str, Arm], pairs: int) -> dict[str, list[float]]:
    """Microseconds per record of each arm in each pair (one warm-up call each first)."""
    for arm in arms.values():
        arm()
    names = list(arms)
    micros: dict[str, list[float]] = {name: [] for name in names}
    for pair in range(pairs):
        for name in names if pair % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            count = arms[name]()
            micros[name].append((time.perf_counter() - t0) / max(count, 1) * 1e6)
    return micros


def spread(values: list[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def ratios(micros: dict[str, list[float]], peers: list[str], ours: str) -> dict[str, Any] | None:
    """Per pair: the fastest peer's µs/record ÷ ours (> 1: ours faster), as a range."""
    present = [p for p in peers if p in micros]
    if not present:
        return None
    per_pair = [
        min(micros[p][i] for p in present) / micros[ours][i] for i in range(len(micros[ours]))
    ]
    return {"per_pair": per_pair, **spread(per_pair)}


def load_average() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None
