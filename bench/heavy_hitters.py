"""Heavy hitters of open-domain strings: ``pem`` + ``find_heavy_hitters`` against pure-LDP.

The issue "heavy hitters", measured side by side in one run:

* **Data.** 10^6 devices, each holding one English word drawn (seeded) from the bundled
  word list ``simulation/ldp_simulation/datasets/words_en.tsv`` (3,000 words with their
  wordfreq frequencies, renormalised to sum to one; at most 12 bytes each). The truth is
  the drawn sample's own frequencies.
* **Ours.** A ``pem`` attribute with ``max_length`` 12 (the demo's, one level per byte),
  the default ``hashes`` at each ε, a salt derived from the seed; the real path, vectorised:
  ``spec.encode`` (each distinct string hashed once) → ``randomizer.perturb`` →
  ``randomizer.accumulate``; then ``find_heavy_hitters(randomizer, salt, stats, top,
  0.95)`` for top = 50 and 20, timed (median of 3; the server time). Reported: the
  detection threshold, the list found against the truth, precision and recall over the
  values whose true frequency is at least the threshold (target ≥ 0.9 each), the share of
  the list that is real (held by a device), and F1 over the true top-k (k = top).
* **pure-LDP 1.2.0.** ``PEMServer``/``PEMClient``, ``SFPServer``/``SFPClient`` and
  ``TreeHistServer``/``TreeHistClient`` (``pure_ldp.heavy_hitters``), per-record Python
  calls, each device privatising its value and the server aggregating every report, then
  ``find_heavy_hitters(k=top)``. Their server time is the aggregation calls plus that
  identification call (one run each; the caches of their oracles reset before each
  identification). Their heavy-hitter classes take fixed-length strings over a declared
  alphabet; the words are mapped two ways (the JSON says which each run used):

  - ``index`` (the favourable setting): each word's index in the list, through a seeded
    random permutation of 0..4095 (the list is sorted by frequency, so raw indices would
    put every frequent word under one prefix), as a 12-bit string over {0, 1} (pure-LDP's
    default alphabet and index mapper). The peers search a declared domain of 4,096
    values; ours searches every string of up to 12 bytes.
  - ``strings`` (like for like): the word itself, padded to 12 characters with ``_``,
    over the 27 symbols a–z and ``_``.

  Oracles: PEM ``index`` uses pure-LDP's fast local hashing (``FastLH``, OLH's g, the same
  k as ours at that ε), the integer-domain oracle of Wang et al.'s PEM; no integer-domain
  oracle can hold 27^12 strings, so the ``strings`` runs and SFP and TreeHist use Apple's
  count-mean sketch (``CMS``, k = 32 rows, m = 1,024, pure-LDP's own heavy-hitter
  experiment). TreeHist cannot use FastLH: its prefixes of different lengths map to the
  same integer through the index mapper.

  pure-LDP 1.2.0's ``FreqOracleServer`` calls ``np.zeros(None)`` for sketch oracles, which
  numpy ≥ 2 refuses (numpy 1 returned a 0-d array); this script gives that one module a
  numpy whose ``zeros(None)`` returns the 0-d array again and changes nothing else.

  Runs: PEM ``index`` and ``strings``, TreeHist ``index``, SFP ``index``, every one on all
  10^6 devices (about 7 minutes in all). The ``strings`` setting is run for PEM only, the
  counterpart of ours: it is the less favourable one for the peers, and SFP's and
  TreeHist's clients cost 60–200 µs a device (two count-mean sketches of 1,024 cells)
  and SFP's identification enumerates 256 · 28² fragments per position in it, which the
  time budget does not hold. ``--peer-devices NAME=N`` runs a peer on the first N devices
  of the same sample instead (ours is then run on the same N too, and the JSON says so).

Speed: their server time over ours (``find_heavy_hitters`` alone, the issue's measure; and
``accumulate`` + ``find_heavy_hitters``), target ours ≥ 10× faster.
Run inside ``bench/.venv-peers`` (``bash bench/setup_peers.sh``) to include pure-LDP.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import string
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA_DIR, REPO_ROOT, base_parser, emit, log, sized, start_marker
from ldp_shared.analyses import heavy_hitters as hh_module
from ldp_shared.analyses.heavy_hitters import find_heavy_hitters
from ldp_shared.mechanisms.prefix_hashing import PrefixHashing, PrefixHashingSpec
from ldp_shared.rand import seeded_rng

WORDS_PATH = REPO_ROOT / "simulation" / "ldp_simulation" / "datasets" / "words_en.tsv"
WORDS_CITATION = (
    "the 3,000 most frequent English words of wordfreq 3.1.1 (R. Speer,"
    " doi:10.5281/zenodo.7199437), CC BY-SA 4.0"
)
EPSILONS = (4.0, 2.0)
TOPS = (50, 20)
WORD_BYTES = 12
CONFIDENCE = 0.95
FIND_REPEATS = 3
TARGET_PRECISION_RECALL = 0.9
TARGET_SPEEDUP = 10.0
SEED = 20_261_127
CHUNK = 10_000
CMS_ROWS = 32
CMS_WIDTH = 1024
INDEX_BITS = 12
FILLER = "_"


# --------------------------------------------------------------------------- data


def load_words() -> tuple[list[str], np.ndarray]:
    """The bundled words and their frequencies, renormalised to sum to one."""
    rows = [
        line.split("\t")
        for line in WORDS_PATH.read_text("utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    weights = np.array([float(f) for _, f in rows])
    return [w for w, _ in rows], weights / weights.sum()


@dataclass
class Data:
    words: list[str]
    draw: np.ndarray  # word index of each device
    code_of_word: np.ndarray  # the peers' 12-bit code of each word (index setting)
    word_of_code: np.ndarray  # inverse, −1 where no word

    def counts(self, n: int) -> np.ndarray:
        return np.bincount(self.draw[:n], minlength=len(self.words))


def make_data(devices: int) -> Data:
    words, p = load_words()
    draw = np.random.default_rng(SEED).choice(len(words), size=devices, p=p)
    perm = np.random.default_rng(SEED + 1).permutation(2**INDEX_BITS)[: len(words)]
    word_of_code = np.full(2**INDEX_BITS, -1, dtype=np.int64)
    word_of_code[perm] = np.arange(len(words))
    return Data(words=words, draw=draw, code_of_word=perm, word_of_code=word_of_code)


# --------------------------------------------------------------------------- scoring


def score(
    listed: Sequence[str | None],
    estimates: Sequence[float],
    counts: np.ndarray,
    words: list[str],
    threshold: float,
    k: int,
) -> dict[str, Any]:
    """A list found (words, ``None`` for a value that is no word) against the truth."""
    n = int(counts.sum())
    freq = {w: counts[i] / n for i, w in enumerate(words)}
    order = np.argsort(-counts, kind="stable")
    true_top = {words[i] for i in order[:k]}
    above = {w for w, f in freq.items() if f >= threshold}
    found = [w for w in listed if w is not None]
    real = [w for w in found if freq.get(w, 0.0) > 0.0]
    hits_above = len(above.intersection(found))
    hits_top = len(true_top.intersection(found))
    size = len(listed)
    claimed = [w for w, e in zip(listed, estimates, strict=True) if e >= threshold]
    claimed_true = [w for w in claimed if w is not None and freq.get(w, 0.0) >= threshold]
    p_top = hits_top / size if size else 0.0
    r_top = hits_top / k
    return {
        "listed": size,
        "real": len(real),
        "precision_real": len(real) / size if size else None,
        "true_values_above_threshold": len(above),
        "found_above_threshold": hits_above,
        "precision_above_threshold": hits_above / size if size else None,
        "recall_above_threshold": hits_above / len(above) if above else None,
        "meets_target_precision_recall": bool(
            size
            and above
            and hits_above / size >= TARGET_PRECISION_RECALL
            and hits_above / len(above) >= TARGET_PRECISION_RECALL
        ),
        "listed_with_estimate_at_least_threshold": len(claimed),
        "precision_of_those": len(claimed_true) / len(claimed) if claimed else None,
        "top_k": k,
        "true_top_k_found": hits_top,
        "f1_top_k": 2 * p_top * r_top / (p_top + r_top) if hits_top else 0.0,
        "true_frequency_at_rank_k_and_k_plus_1": [
            float(counts[order[k - 1]] / n),
            float(counts[order[k]] / n),
        ],
    }


def listing(
    shown: Sequence[str], listed: Sequence[str | None], estimates: Sequence[float], counts
) -> list[dict[str, Any]]:
    n = int(counts.sum())
    out = []
    for raw, word, est in zip(shown, listed, estimates, strict=True):
        true = None
        if word is not None and word in WORD_INDEX:
            true = float(counts[WORD_INDEX[word]] / n)
        out.append({"value": raw, "word": word, "estimate": float(est), "true": true})
    return out


WORD_INDEX: dict[str, int] = {}


# --------------------------------------------------------------------------- ours


def ours_run(data: Data, keys: np.ndarray, spec: PrefixHashingSpec, n: int) -> dict[str, Any]:
    counts = data.counts(n)
    out: dict[str, Any] = {"devices": n, "settings": []}
    for e, epsilon in enumerate(EPSILONS):
        rnd = spec.randomizer(epsilon)
        assert isinstance(rnd, PrefixHashing)
        gen = seeded_rng(SEED + 100 + e)
        t0 = time.perf_counter()
        answers = rnd.perturb(keys[:n], gen)
        perturb_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        stats = rnd.accumulate(answers)
        accumulate_s = time.perf_counter() - t0
        entry: dict[str, Any] = {
            "epsilon": epsilon,
            "hashes_k": rnd.k,
            "buckets_g": rnd.level_oracle.g,
            "levels": rnd.levels,
            "perturb_seconds": perturb_s,
            "accumulate_seconds": accumulate_s,
            "tops": {},
        }
        for top in TOPS:
            log(f"[heavy_hitters] ours n={n:,} ε={epsilon:g} top={top}")
            times, results = [], []
            for _ in range(FIND_REPEATS):
                t0 = time.perf_counter()
                results.append(find_heavy_hitters(rnd, spec.salt, stats, top, CONFIDENCE))
                times.append(time.perf_counter() - t0)
            found = results[-1]
            values = list(found.values)
            est = [float(x) for x in found.estimate.estimate]
            listed = [v if v in WORD_INDEX else None for v in values]
            keep = getattr(hh_module, "keep_limit", None)
            entry["tops"][str(top)] = {
                "find_seconds_median": statistics.median(times),
                "find_seconds_all": times,
                "repeats_identical": all(r.values == found.values for r in results),
                "threshold": found.threshold,
                "levels_searched": getattr(found, "levels_searched", None),
                "candidates": getattr(found, "candidates", None),
                "keep_limit": keep(top) if keep else None,
                "score": score(listed, est, counts, data.words, found.threshold, top),
                "found": listing(values, listed, est, counts),
            }
            log(
                f"[heavy_hitters]   {statistics.median(times):.3f} s, threshold "
                f"{found.threshold:.5f}, {len(values)} listed"
            )
        out["settings"].append(entry)
    return out


# --------------------------------------------------------------------------- peers


class _NumpyZerosOfNone:
    """numpy for pure-LDP's ``FreqOracleServer`` module: ``zeros(None)`` is a 0-d array."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def zeros(shape: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.zeros(() if shape is None else shape, *args, **kwargs)


def load_pure_ldp() -> tuple[dict[str, Any] | None, str | None]:
    try:
        import pure_ldp.core._freq_oracle_server as fo_server_module
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
        from pure_ldp.frequency_oracles.local_hashing import FastLHClient, FastLHServer
        from pure_ldp.heavy_hitters.apple_sfp import SFPClient, SFPServer
        from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
        from pure_ldp.heavy_hitters.treehistogram import TreeHistClient, TreeHistServer
    except ImportError as exc:
        return None, f"not importable ({exc}); run bench/setup_peers.sh"
    fo_server_module.np = _NumpyZerosOfNone()  # type: ignore[assignment]
    return {
        "CMSClient": CMSClient,
        "CMSServer": CMSServer,
        "FastLHClient": FastLHClient,
        "FastLHServer": FastLHServer,
        "SFPClient": SFPClient,
        "SFPServer": SFPServer,
        "PEMClient": PEMClient,
        "PEMServer": PEMServer,
        "TreeHistClient": TreeHistClient,
        "TreeHistServer": TreeHistServer,
    }, None


@dataclass(frozen=True)
class PeerRun:
    method: str  # PEM, SFP, TreeHist
    setting: str  # index, strings
    oracle: str  # FastLH, CMS

    @property
    def name(self) -> str:
        return f"{self.method}-{self.setting}"

    @property
    def fragment(self) -> int:
        return 4 if self.setting == "index" else 2

    @property
    def alphabet(self) -> list[str]:
        if self.setting == "index":
            return ["0", "1"]
        return [*string.ascii_lowercase, FILLER]


PEER_RUNS = (
    PeerRun("PEM", "index", "FastLH"),
    PeerRun("PEM", "strings", "CMS"),
    PeerRun("TreeHist", "index", "CMS"),
    PeerRun("SFP", "index", "CMS"),
)


def identity(x: Any) -> Any:
    return x


def build_peer(peers: dict[str, Any], run: PeerRun, epsilon: float, flh_k: int) -> tuple[Any, Any]:
    """A client and a server of ``run`` at ``epsilon`` (the server's set-up is timed)."""
    if run.oracle == "FastLH":
        d0 = 2**run.fragment
        fo_server = peers["FastLHServer"](epsilon, d0, flh_k, use_olh=True)
        fo_client = peers["FastLHClient"](epsilon, d0, flh_k, use_olh=True)
        mapper = None  # pure-LDP's default: the bit string's unsigned integer
    else:
        fo_server = peers["CMSServer"](epsilon, CMS_ROWS, CMS_WIDTH)
        fo_client = peers["CMSClient"](epsilon, fo_server.get_hash_funcs(), CMS_WIDTH)
        mapper = identity  # CMS hashes the string itself
    frag, alphabet = run.fragment, run.alphabet
    common = {"index_mapper": mapper}
    if run.method == "PEM":
        client = peers["PEMClient"](
            epsilon, 0, WORD_BYTES, frag, alphabet=alphabet, fo_client=fo_client, **common
        )
        server = peers["PEMServer"](
            epsilon, 0, WORD_BYTES, frag, alphabet=alphabet, fo_server=fo_server, **common
        )
    elif run.method == "TreeHist":
        client = peers["TreeHistClient"](
            epsilon, frag, WORD_BYTES, alphabet=alphabet, fo_client=fo_client, **common
        )
        server = peers["TreeHistServer"](
            epsilon, WORD_BYTES, frag, alphabet=alphabet, fo_server=fo_server, **common
        )
    else:  # SFP: its server adds the padding character to the alphabet, a set
        client = peers["SFPClient"](
            epsilon, frag, WORD_BYTES, alphabet=set(alphabet), fo_client=fo_client, **common
        )
        server = peers["SFPServer"](
            epsilon, frag, WORD_BYTES, alphabet=set(alphabet), fo_server=fo_server, **common
        )
    return client, server


def reset_caches(server: Any) -> None:
    """Make the next identification recompute every oracle's estimates from its counts."""
    oracles = [*getattr(server, "oracles", []), *getattr(server, "fragment_fo_list", [])]
    for attr in ("word_fo", "word_estimator", "fragment_estimator"):
        if getattr(server, attr, None) is not None:
            oracles.append(getattr(server, attr))
    for oracle in oracles:
        oracle.last_estimated = 0


def peer_values(data: Data, run: PeerRun) -> list[str]:
    """What each word becomes for the peer."""
    if run.setting == "index":
        return [format(int(c), f"0{INDEX_BITS}b") for c in data.code_of_word]
    return [w.ljust(WORD_BYTES, FILLER) for w in data.words]


def decode(data: Data, run: PeerRun, value: str) -> str | None:
    if run.setting == "index":
        try:
            code = int(value, 2)
        except ValueError:
            return None
        i = int(data.word_of_code[code]) if code < data.word_of_code.size else -1
        return data.words[i] if i >= 0 else None
    word = value.rstrip(FILLER)
    return word if word in WORD_INDEX else None


def peer_run(
    peers: dict[str, Any],
    run: PeerRun,
    data: Data,
    n: int,
    flh_k: dict[float, int],
    ours_at_n: dict[str, Any],
) -> dict[str, Any]:
    counts = data.counts(n)
    values = peer_values(data, run)
    column = [values[i] for i in data.draw[:n].tolist()]
    out: dict[str, Any] = {"devices": n, "settings": []}
    for e, epsilon in enumerate(EPSILONS):
        random.seed(SEED + 200 + e)
        np.random.seed(SEED + 300 + e)
        t0 = time.perf_counter()
        client, server = build_peer(peers, run, epsilon, flh_k[epsilon])
        setup_s = time.perf_counter() - t0
        log(f"[heavy_hitters] pure-LDP {run.name} n={n:,} ε={epsilon:g}: privatise + aggregate")
        client_s = aggregate_s = 0.0
        for start in range(0, n, CHUNK):
            t0 = time.perf_counter()
            reports = [client.privatise(v) for v in column[start : start + CHUNK]]
            t1 = time.perf_counter()
            for report in reports:
                server.aggregate(report)
            t2 = time.perf_counter()
            client_s += t1 - t0
            aggregate_s += t2 - t1
        del reports
        ours_eps = next(s for s in ours_at_n["settings"] if s["epsilon"] == epsilon)
        entry: dict[str, Any] = {
            "epsilon": epsilon,
            "server_setup_seconds": setup_s,
            "client_privatise_seconds": client_s,
            "aggregate_seconds": aggregate_s,
            "tops": {},
        }
        if run.oracle == "FastLH":
            entry["fastlh_k"] = flh_k[epsilon]
        for top in TOPS:
            log(f"[heavy_hitters] pure-LDP {run.name} n={n:,} ε={epsilon:g}: identify k={top}")
            reset_caches(server)
            t0 = time.perf_counter()
            raw, freqs = server.find_heavy_hitters(k=top)
            identify_s = time.perf_counter() - t0
            shown, est = rank_unique(list(raw), [float(f) / n for f in freqs], top)
            listed = [decode(data, run, v) for v in shown]
            ours_top = ours_eps["tops"][str(top)]
            threshold = ours_top["threshold"]
            server_s = aggregate_s + identify_s
            ours_find = ours_top["find_seconds_median"]
            ours_total = ours_eps["accumulate_seconds"] + ours_find
            entry["tops"][str(top)] = {
                "identify_seconds": identify_s,
                "server_seconds": server_s,
                "returned": len(raw),
                "threshold_used_from_ours": threshold,
                "score": score(listed, est, counts, data.words, threshold, top),
                "ours_score_same_n": ours_top["score"],
                "speed": {
                    "ours_find_seconds_median": ours_find,
                    "ours_accumulate_plus_find_seconds": ours_total,
                    "ours_over_theirs": ours_find / server_s,
                    "speedup_theirs_over_ours_find": server_s / ours_find,
                    "speedup_theirs_over_ours_accumulate_plus_find": server_s / ours_total,
                    "identify_only_speedup_theirs_over_ours_find": identify_s / ours_find,
                    "speedup_theirs_with_server_setup_over_ours_find": (setup_s + server_s)
                    / ours_find,
                    "meets_target_10x": server_s / ours_find >= TARGET_SPEEDUP,
                },
                "found": listing(shown, listed, est, counts),
            }
            log(
                f"[heavy_hitters]   aggregate {aggregate_s:.1f} s + identify {identify_s:.1f} s;"
                f" {len(raw)} returned"
            )
        out["settings"].append(entry)
    return out


def rank_unique(raw: list[str], est: list[float], top: int) -> tuple[list[str], list[float]]:
    """The peer's list ordered by its own estimates, duplicates dropped, cut to ``top``."""
    order = sorted(range(len(raw)), key=lambda i: -est[i])
    shown: list[str] = []
    values: list[float] = []
    for i in order:
        if raw[i] in shown:
            continue
        shown.append(raw[i])
        values.append(est[i])
        if len(shown) == top:
            break
    return shown, values


def describe_peer(run: PeerRun, n: int, devices: int) -> dict[str, Any]:
    if run.setting == "index":
        data_as = (
            f"the word's index in the list through a seeded random permutation of 0..4095, "
            f"as a {INDEX_BITS}-bit string over {{0, 1}}: a declared domain of 4,096 values"
            " (ours knows no list)"
        )
    else:
        data_as = (
            f"the word padded to {WORD_BYTES} characters with '{FILLER}', over the 27 "
            "symbols a-z and '_' (like for like; pure-LDP pads with '*', which its servers "
            "only propose as a candidate when it is in the alphabet, and TreeHist forbids that)"
        )
    if run.oracle == "FastLH":
        oracle = (
            "FastLHClient/FastLHServer(use_olh=True): g = round(e^ε) + 1 and k = ours' "
            "k at that ε; its k × d hash matrices are built in the server's constructor "
            "(server_setup_seconds, not counted in the server time)"
        )
    else:
        oracle = (
            f"CMSClient/CMSServer (Apple's count-mean sketch, k = {CMS_ROWS}, m = "
            f"{CMS_WIDTH}, as pure-LDP's own heavy-hitter experiment hh_aol)"
        )
    budget = {
        "PEM": "each device reports one prefix (its group chosen at random) with all of ε",
        "SFP": "ε/2 to a (hash, fragment) pair, ε/2 to the whole word",
        "TreeHist": "ε/2 to a random prefix, ε/2 to the whole word",
    }[run.method]
    params = {
        "PEM": f"start_length 0, fragment_length {run.fragment}, max_string_length 12",
        "SFP": f"fragment_length {run.fragment}, max_string_length 12 (256 word hashes)",
        "TreeHist": f"fragment_length {run.fragment}, max_string_length 12",
    }[run.method]
    return {
        "classes": f"pure_ldp.heavy_hitters: {run.method}Client / {run.method}Server",
        "setting": run.setting,
        "data_as": data_as,
        "oracle": oracle,
        "parameters": params,
        "privacy_budget": budget,
        "devices": n,
        "devices_note": (
            "all devices"
            if n == devices
            else f"the first {n:,} devices of the same sample (too slow for {devices:,} in"
            " the time budget: its per-device client + aggregation cost, measured below);"
            " ours is run at the same n for the comparison"
        ),
        "list": (
            "find_heavy_hitters(k=top); its list ordered by its own estimates, duplicates "
            "dropped, cut to top (SFP may return more than k); a value that maps to no word "
            "of the list counts as false"
        ),
        "server_time": (
            "every server.aggregate call plus the find_heavy_hitters call (one run each; "
            "the oracles' cached estimates reset before each identification)"
        ),
    }


# --------------------------------------------------------------------------- main


def summary(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    ours_rows = []
    for n, block in result["ours"]["runs"].items():
        for s in block["settings"]:
            for top, t in s["tops"].items():
                sc = t["score"]
                ours_rows.append(
                    {
                        "devices": int(n),
                        "epsilon": s["epsilon"],
                        "top": int(top),
                        "threshold": t["threshold"],
                        "listed": sc["listed"],
                        "true_values_above_threshold": sc["true_values_above_threshold"],
                        "precision_above_threshold": sc["precision_above_threshold"],
                        "recall_above_threshold": sc["recall_above_threshold"],
                        "precision_real": sc["precision_real"],
                        "precision_of_those": sc["precision_of_those"],
                        "f1_top_k": sc["f1_top_k"],
                        "find_seconds_median": t["find_seconds_median"],
                    }
                )
    peer_rows = []
    for run_name, block in result.get("peers", {}).items():
        for s in block["settings"]:
            for top, t in s["tops"].items():
                peer_rows.append(
                    {
                        "peer": run_name,
                        "devices": block["devices"],
                        "epsilon": s["epsilon"],
                        "top": int(top),
                        "theirs_f1": t["score"]["f1_top_k"],
                        "ours_f1": t["ours_score_same_n"]["f1_top_k"],
                        "theirs_precision_above_threshold": t["score"]["precision_above_threshold"],
                        "theirs_recall_above_threshold": t["score"]["recall_above_threshold"],
                        "theirs_precision_real": t["score"]["precision_real"],
                        "theirs_server_seconds": t["server_seconds"],
                        "ours_find_seconds": t["speed"]["ours_find_seconds_median"],
                        "speedup": t["speed"]["speedup_theirs_over_ours_find"],
                        "meets_target_10x": t["speed"]["meets_target_10x"],
                    }
                )
    return {"ours": ours_rows, "peers": peer_rows}


def code_measured() -> dict[str, Any]:
    """Which version of the code under test ran (it may differ from the commit)."""
    out: dict[str, Any] = {}
    for module in (hh_module, sys.modules[PrefixHashing.__module__]):
        path = Path(str(module.__file__))
        rel = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
        status = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", str(path)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        out[rel] = {
            "sha256_12": hashlib.sha256(path.read_bytes()).hexdigest()[:12],
            "uncommitted_changes": bool(status),
        }
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=None, help="devices (10^6)")
    parser.add_argument(
        "--peer-devices",
        action="append",
        default=[],
        metavar="NAME=N",
        help="devices for one peer run, e.g. SFP-index=250000 (default: all devices); ours "
        "is then run at that n as well",
    )
    parser.add_argument(
        "--peers",
        default=",".join(r.name for r in PEER_RUNS),
        help="comma-separated peer runs (" + ", ".join(r.name for r in PEER_RUNS) + ")",
    )
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    quick = args.quick
    devices = args.devices or sized(1_000_000, 20_000, 2_000, args)
    if args.tiny:  # one setting, one search each
        globals().update(EPSILONS=(4.0,), TOPS=(20,), FIND_REPEATS=1)
    peer_n = {r.name: devices for r in PEER_RUNS}
    for item in args.peer_devices:
        name, _, value = item.partition("=")
        peer_n[name] = min(devices, int(value))
    wanted = set(args.peers.split(",")) if not args.no_peers else set()
    runs = [r for r in PEER_RUNS if r.name in wanted]
    started = start_marker()
    t_start = time.perf_counter()
    warnings.simplefilter("ignore", RuntimeWarning)

    peers, missing = (None, "--no-peers") if args.no_peers else load_pure_ldp()
    data = make_data(devices)
    WORD_INDEX.update({w: i for i, w in enumerate(data.words)})
    salt = hashlib.sha256(f"heavy-hitters-bench-{SEED}".encode()).hexdigest()[:32]
    spec = PrefixHashingSpec(name="word", mechanism="pem", max_length=WORD_BYTES, salt=salt)
    column = [data.words[i] for i in data.draw.tolist()]
    log(f"[heavy_hitters] encoding {devices:,} words")
    t0 = time.perf_counter()
    keys = spec.encode(column)
    encode_s = time.perf_counter() - t0
    counts = data.counts(devices)
    order = np.argsort(-counts, kind="stable")

    result: dict[str, Any] = {
        **started,
        "description": __doc__.split("\n\n")[0],
        "parameters": {
            "devices": devices,
            "epsilons": list(EPSILONS),
            "tops": list(TOPS),
            "confidence": CONFIDENCE,
            "find_repeats": FIND_REPEATS,
            "seed": SEED,
            "targets": {
                "precision_and_recall_above_threshold": TARGET_PRECISION_RECALL,
                "speedup_theirs_over_ours": TARGET_SPEEDUP,
            },
        },
        "peers_missing": {"pure-ldp": missing} if missing else {},
        "datasets": {
            "words": {
                "path": str(WORDS_PATH.relative_to(REPO_ROOT)),
                "citation": WORDS_CITATION,
                "how": (
                    f"{devices:,} draws (numpy default_rng({SEED}).choice) from the 3,000 "
                    "words with their frequencies renormalised to sum to one; the truth is "
                    "the sample's own frequencies"
                ),
                "distinct_words_drawn": int((counts > 0).sum()),
                "true_top_50": [
                    {"word": data.words[i], "true": float(counts[i] / devices)} for i in order[:50]
                ],
            },
            "shared_data": "../shared/data",
            "shared_data_present": DATA_DIR.is_dir(),
            "retail_used": False,
            "retail_note": (
                "not used: one real data set (the words) is what the issue asks; the "
                "peers' per-record cost leaves no room for a second in the time budget"
            ),
        },
        "definitions": {
            "threshold": (
                "ours' detection threshold (HeavyHitters.threshold) for that ε, top and n; "
                "the peers are scored against the same threshold"
            ),
            "precision_above_threshold": (
                "|listed ∩ T| / |listed|, T = the words whose true frequency ≥ threshold "
                "(the issue's target ≥ 0.9); with top > |T| it is at most |T|/top"
            ),
            "recall_above_threshold": "|listed ∩ T| / |T| (target ≥ 0.9)",
            "precision_real": "share of the list that some device holds (no false discovery)",
            "precision_of_those": (
                "of the values listed with an estimate ≥ threshold, the share truly ≥ threshold"
            ),
            "f1_top_k": "F1 of the list of a top=k query against the true top k (k = 20, 50)",
        },
        "ours": {
            "spec": {"mechanism": "pem", "max_length": WORD_BYTES, "salt": salt},
            "path": (
                "spec.encode(column) → randomizer.perturb(keys, seeded_rng) → "
                "randomizer.accumulate(answers) → find_heavy_hitters(randomizer, salt, "
                f"stats, top, {CONFIDENCE}) (timed, median of {FIND_REPEATS})"
            ),
            "code_measured": code_measured(),
            "encode_seconds_all_devices": encode_s,
            "runs": {},
        },
        "peers": {},
        "peer_settings": {},
        "peer_runs_not_done": {
            "SFP-strings, TreeHist-strings": (
                "the strings setting is the less favourable one for the peers (compare "
                "PEM-index with PEM-strings); SFP's and TreeHist's per-device clients and "
                "SFP's enumeration of 256 · 28² fragments per position in it do not fit the "
                "15-minute budget"
            )
        },
    }
    sizes = sorted({devices, *(peer_n[r.name] for r in runs)}, reverse=True)
    for n in sizes:
        result["ours"]["runs"][str(n)] = ours_run(data, keys, spec, n)
    flh_k = {s["epsilon"]: s["hashes_k"] for s in result["ours"]["runs"][str(devices)]["settings"]}
    if peers is not None:
        for run in runs:
            n = peer_n[run.name]
            result["peer_settings"][run.name] = describe_peer(run, n, devices)
            t0 = time.perf_counter()
            block = peer_run(peers, run, data, n, flh_k, result["ours"]["runs"][str(n)])
            block["seconds"] = time.perf_counter() - t0
            result["peers"][run.name] = block
    result["summary"] = summary(result)
    result["total_seconds"] = time.perf_counter() - t_start
    emit("heavy_hitters", result, quick, args.output)


if __name__ == "__main__":
    main()
