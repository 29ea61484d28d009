"""Frequent itemsets from MASK-distorted baskets: accuracy (ρ, σ+, σ-) and speed vs mlxtend.

Data sets: T10I4D100K (100,000 baskets, 870 items) and retail (88,162 baskets, 16,470
items) from ``../shared/data`` (FIMI copies, no stated licence: read here, never
shipped; skipped and named in ``datasets_missing`` when absent), and a seeded Quest-style
synthetic set of 1,000,000 baskets over 100 items (``ldp_simulation.baskets``).

For each data set, in a fresh child process (so that its peak RSS is ours alone):

* the truth: Apriori on the true baskets (``mine_frequent_itemsets`` with p = 1, q = 0,
  equal to mlxtend's result, which the tests check);
* for p in {0.9, 0.95}: the baskets distorted by MASK (``Mask.perturb``, the function
  the SDK's ``Privatizer`` calls, in chunks), their per-item sums (the sufficient
  statistics the aggregator keeps at ingestion), then for r in {0, 0.1} the mining
  function the aggregator runs (``mine_frequent_itemsets`` over the packed bits, chunked)
  and the paper's metrics per length against the truth.

This is the library path, offline (no HTTP): a retail report is 2,059 bytes and the
point is the estimator. The same mining through the server (SDK upload over HTTP,
``POST /itemsets`` job, SQLite snapshot) is timed for T10I4D100K at p = 0.9
(``http``; ``--no-http`` skips it).

mlxtend's ``fpgrowth`` and ``apriori`` run on the TRUE (undistorted) baskets, each in its
own child process with a time limit, from a one-hot data frame (sparse for retail).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DATA_DIR,
    base_parser,
    emit,
    log,
    start_marker,
)
from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    accuracy_json,
    column_sums,
    evaluate,
    mine_frequent_itemsets,
)
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import (
    QuestParameters,
    quest_chunks,
    read_fimi,
    unpack_baskets,
)

KEEP = (0.9, 0.95)
REPEATS = 3
REDUCTIONS = (0.0, 0.1)
SEED = 20_260
SYNTHETIC = QuestParameters(n_baskets=1_000_000, n_items=100)  # T10I4, |L| = 2000
FILES = {"T10I4D100K": "T10I4D100K.dat", "retail": "retail.dat"}
MIN_SUPPORT = {"T10I4D100K": 0.01, "retail": 0.01, "synthetic-1M": 0.01}
MLXTEND_TIMEOUT = 600.0
MLXTEND_MEMORY = 12 * 2**30


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- data


def load(name: str, rows: int | None) -> tuple[np.ndarray, int, list[str], str]:
    """Packed true baskets, number of items, item labels, description."""
    if name == "synthetic-1M":
        params = SYNTHETIC
        packed = np.concatenate(list(quest_chunks(params, SEED, rows)))
        labels = [str(i) for i in range(params.n_items)]
        text = (
            f"Quest-style synthetic (ldp_simulation.baskets), T{params.avg_basket_size:g}"
            f"I{params.avg_pattern_size:g}, N = {params.n_items}, |L| = {params.n_patterns}, "
            f"seed {SEED}"
        )
        return packed, params.n_items, labels, text
    data = read_fimi(DATA_DIR / FILES[name])
    packed = data.packed if rows is None else data.packed[:rows]
    return packed, data.n_items, data.items, f"../shared/data/{FILES[name]} (FIMI)"


def distort(packed: np.ndarray, n_items: int, p: float, seed: int) -> np.ndarray:
    """MASK-distorted packed baskets, chunk by chunk (bounded memory)."""
    mask = Mask(d=n_items, keep_probability=p)
    rng = seeded_rng(seed)
    rows = max(256, (1 << 26) // max(n_items, 1))
    out = np.empty_like(packed)
    for start in range(0, packed.shape[0], rows):
        block = unpack_baskets(packed[start : start + rows], n_items)
        out[start : start + rows] = np.packbits(mask.perturb(block, rng), axis=1)
    return out


# ----------------------------------------------------------------------------- workers


def worker_ours(name: str, rows: int | None) -> dict[str, Any]:
    started = time.perf_counter()
    packed, n_items, _labels, text = load(name, rows)
    load_seconds = time.perf_counter() - started
    min_support = MIN_SUPPORT[name]
    log(f"[{name}] {packed.shape[0]:,} baskets x {n_items:,} items loaded in {load_seconds:.1f}s")
    t = time.perf_counter()
    truth = mine_frequent_itemsets(PackedBits(packed), n_items, BitChannel.exact(), min_support)
    truth_seconds = time.perf_counter() - t
    runs = []
    for index, p in enumerate(KEEP):
        t = time.perf_counter()
        distorted = distort(packed, n_items, p, SEED + index)
        perturb_seconds = time.perf_counter() - t
        t = time.perf_counter()
        sums = column_sums(PackedBits(distorted), n_items)
        sums_seconds = time.perf_counter() - t
        for r in REDUCTIONS:
            times = []
            for _ in range(REPEATS):
                t = time.perf_counter()
                found = mine_frequent_itemsets(
                    PackedBits(distorted),
                    n_items,
                    BitChannel.mask(p),
                    min_support,
                    support_reduction=r,
                    statistics=sums,
                )
                times.append(time.perf_counter() - t)
            seconds = min(times)
            metrics = evaluate(found, truth)
            log(
                f"[{name}] p={p} r={r}: mined in {seconds:.2f}s; "
                + ", ".join(
                    f"k={m.length}: ρ={m.rho if m.rho is None else round(m.rho, 2)} "
                    f"σ+={m.sigma_plus if m.sigma_plus is None else round(m.sigma_plus, 1)} "
                    f"σ-={m.sigma_minus if m.sigma_minus is None else round(m.sigma_minus, 1)}"
                    for m in metrics
                )
            )
            runs.append(
                {
                    "p": p,
                    "support_reduction": r,
                    "threshold": found.threshold,
                    "perturb_seconds": perturb_seconds,
                    "column_sums_seconds": sums_seconds,
                    "mining_seconds": seconds,
                    "mining_seconds_median": float(np.median(times)),
                    "mining_seconds_all": times,
                    "mining_seconds_with_column_sums": seconds + sums_seconds,
                    "found_by_length": found.by_length,
                    "levels": [
                        {
                            "length": s.k,
                            "candidates": s.candidates,
                            "frequent": s.frequent,
                            "method": s.method,
                            "seconds": s.seconds,
                        }
                        for s in found.stats
                    ],
                    "by_length": accuracy_json(metrics),
                }
            )
    return {
        "dataset": name,
        "source": text,
        "n_baskets": int(packed.shape[0]),
        "n_items": n_items,
        "report_bytes": int(packed.shape[1]),
        "min_support": min_support,
        "load_seconds": load_seconds,
        "truth": {"seconds": truth_seconds, "by_length": truth.by_length},
        "runs": runs,
        "peak_rss_mib": peak_rss_mib(),
    }


def worker_mlxtend(name: str, rows: int | None, algorithm: str) -> dict[str, Any]:
    resource.setrlimit(resource.RLIMIT_AS, (MLXTEND_MEMORY, MLXTEND_MEMORY))
    import pandas as pd
    from mlxtend.frequent_patterns import apriori, fpgrowth

    packed, n_items, labels, _ = load(name, rows)
    t = time.perf_counter()
    if n_items > 2000:  # a dense frame of retail would be 1.45 GB of booleans
        import scipy.sparse as sparse

        matrix = sparse.vstack(
            [
                sparse.csr_matrix(unpack_baskets(packed[s : s + 4096], n_items))
                for s in range(0, packed.shape[0], 4096)
            ]
        )
        frame = pd.DataFrame.sparse.from_spmatrix(matrix, columns=labels).astype(
            pd.SparseDtype(bool, False)
        )
        kind = "sparse"
    else:
        frame = pd.DataFrame(unpack_baskets(packed, n_items), columns=labels)
        kind = "dense"
    frame_seconds = time.perf_counter() - t
    low_memory = False
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if algorithm == "fpgrowth":
            found = fpgrowth(frame, min_support=MIN_SUPPORT[name])
        else:
            try:
                found = apriori(frame, min_support=MIN_SUPPORT[name])
            except MemoryError:
                # its default evaluates all candidates of a level at once; retry one by one
                log(f"[{name}] apriori: MemoryError under the limit, retrying low_memory=True")
                low_memory = True
                t = time.perf_counter()
                found = apriori(frame, min_support=MIN_SUPPORT[name], low_memory=True)
    seconds = time.perf_counter() - t
    lengths = found["itemsets"].map(len).value_counts().sort_index()
    return {
        "algorithm": algorithm,
        "low_memory": low_memory,
        "frame": kind,
        "frame_seconds": frame_seconds,
        "seconds": seconds,
        "by_length": {int(k): int(v) for k, v in lengths.items()},
        "peak_rss_mib": peak_rss_mib(),
    }


def run_child(args: list[str], timeout: float) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout:.0f}s (stopped)"}
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {done.returncode}: {tail[0]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ----------------------------------------------------------------------------- HTTP


def http_run(rows: int | None) -> dict[str, Any]:
    """T10I4D100K at p = 0.9 through the server: SDK upload, mining job, SQLite snapshot."""
    from _server import running_server
    from ldp_client import LDPClient
    from ldp_simulation.baskets import basket_lists

    packed, n_items, labels, _ = load("T10I4D100K", rows)
    names = [f"i{label}" for label in labels]
    truth = mine_frequent_itemsets(PackedBits(packed), n_items, BitChannel.exact(), 0.01)
    with running_server() as server:
        with LDPClient(server.base_url, token=server.admin_token, timeout=60) as admin:
            admin.create_collection(
                {
                    "name": "t10",
                    "attributes": [
                        {
                            "name": "basket",
                            "domain": names,
                            "mechanism": "mask",
                            "keep_probability": 0.9,
                        }
                    ],
                    "release": {"min_reports": 1000},
                }
            )
        t = time.perf_counter()
        with LDPClient(server.base_url, rng=seeded_rng(SEED), timeout=60) as client:
            reports = client.privatize_columns("t10", {"basket": basket_lists(packed, names)})
            privatize_seconds = time.perf_counter() - t
            t = time.perf_counter()
            summary = client.submit_reports("t10", reports, batch_size=5000)
            upload_seconds = time.perf_counter() - t
        with LDPClient(server.base_url, token=server.analyst_token, timeout=60) as analyst:
            t = time.perf_counter()
            result = analyst.mine_itemsets("t10", min_support=0.01, poll_interval=0.1)
            wall = time.perf_counter() - t
        memory = server.memory_kib()
    reported = {frozenset(int(n[1:]) for n in i.items): i.support for i in result.itemsets}
    true = {frozenset(int(labels[j]) for j in s): v for s, v in truth.as_dict().items()}
    from ldp_shared.analyses.itemsets import evaluate_supports

    return {
        "dataset": "T10I4D100K",
        "n_baskets": int(packed.shape[0]),
        "p": 0.9,
        "min_support": 0.01,
        "accepted": summary.accepted,
        "sdk_privatize_seconds": privatize_seconds,
        "upload_seconds": upload_seconds,
        "mine_request_wall_seconds": wall,
        "server_job_seconds": result.seconds,
        "server_levels": [level.model_dump() for level in result.levels],
        "by_length": accuracy_json(evaluate_supports(reported, true)),
        "server_peak_rss_mib": memory.get("VmHWM", 0) / 1024.0,
        "note": (
            "upload over loopback HTTP with the SDK (batches of 5,000); mining = "
            "POST /itemsets (wait 5 s) + polling until done; the job snapshots the "
            "reports from SQLite, takes the singletons from the sufficient statistics "
            "and mines the snapshot"
        ),
    }


# ----------------------------------------------------------------------------- main


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="T10I4D100K,retail,synthetic-1M")
    parser.add_argument("--no-mlxtend", action="store_true")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, name, rows_text, *rest = args.worker
        rows = None if rows_text == "all" else int(rows_text)
        out = worker_ours(name, rows) if kind == "ours" else worker_mlxtend(name, rows, rest[0])
        print(json.dumps(out))
        return
    started = start_marker()
    wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
    quick_rows = {"T10I4D100K": 20_000, "retail": 20_000, "synthetic-1M": 100_000}
    if args.tiny:
        quick_rows = {"T10I4D100K": 1_000, "retail": 500, "synthetic-1M": 1_000}
    datasets: dict[str, Any] = {}
    missing = []
    for name in wanted:
        if name in FILES and not (DATA_DIR / FILES[name]).exists():
            log(f"[{name}] {DATA_DIR / FILES[name]} is absent: skipped")
            missing.append(name)
            continue
        rows = quick_rows[name] if args.quick else None
        rows_arg = "all" if rows is None else str(rows)
        log(f"== {name}: ours")
        block = run_child(["ours", name, rows_arg], timeout=1800)
        if not args.no_mlxtend:
            block["mlxtend"] = {}
            for algorithm in ("fpgrowth", "apriori"):
                log(f"== {name}: mlxtend {algorithm} on the true baskets")
                block["mlxtend"][algorithm] = run_child(
                    ["mlxtend", name, rows_arg, algorithm], timeout=MLXTEND_TIMEOUT
                )
        datasets[name] = block
    http = None
    if not args.no_http and "T10I4D100K" in datasets:
        log("== T10I4D100K through the server (HTTP)")
        http = http_run(quick_rows["T10I4D100K"] if args.quick else None)
    import importlib.metadata as md

    def version(dist: str) -> str | None:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    result = {
        **started,
        "description": (
            "MASK (Rizvi and Haritsa, VLDB 2002) frequent itemsets: the library path "
            "offline (Mask.perturb in chunks -> per-item sums -> mine_frequent_itemsets, "
            "the function the aggregator runs), each data set in a child process (its "
            "peak RSS is ours alone); mlxtend fpgrowth/apriori on the TRUE baskets, each "
            "in a child process; T10I4D100K also through the server over HTTP"
        ),
        "parameters": {
            "keep_probability": list(KEEP),
            "support_reduction": list(REDUCTIONS),
            "min_support": MIN_SUPPORT,
            "seed": SEED,
            "mining_repeats": REPEATS,
            "mlxtend_timeout_seconds": MLXTEND_TIMEOUT,
            "mlxtend_memory_limit_gib": MLXTEND_MEMORY / 2**30,
            "mining_seconds": (
                "best of mining_repeats runs of mine_frequent_itemsets from the packed "
                "distorted bits with the per-item sums given (as the aggregator has them "
                "from ingestion; median and all runs alongside); "
                "mining_seconds_with_column_sums adds recomputing those sums once; "
                "mlxtend runs once (its times are long)"
            ),
            "metrics": (
                "per length: rho = mean |s_hat - s|/s over correctly identified itemsets (%), "
                "sigma_plus / sigma_minus = false positives / negatives as % of the true "
                "frequent itemsets; truth = Apriori on the true baskets at min_support"
            ),
        },
        "versions": {"mlxtend": version("mlxtend"), "pandas": version("pandas")},
        "datasets_missing": missing,
        "datasets": datasets,
        "http": http,
    }
    emit("itemsets", result, args.quick, args.output)


if __name__ == "__main__":
    main()
