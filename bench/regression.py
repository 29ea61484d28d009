"""Two versions of ldpcollect side by side: client perturbation and server decoding.

Compares two checkouts (``--old`` and ``--new``, each with its own virtual environment
holding an editable install of that checkout, ``<checkout>/.venv`` unless
``--old-python``/``--new-python`` say otherwise) in the same run, on the same machine.
Every round starts one child process per version (this script with ``--worker``, run
by that version's interpreter) plus a second child of the OLD version, in an order that
rotates from round to round. A child times, per setting and on the same seeded
records:

* ``privatize``: ``Privatizer(build_config(spec)).privatize_columns(columns,
  seeded_rng(seed))`` over all ``n`` records (the client path);
* ``decode``: ``decode_reports(config, packed)`` on those reports in one call;
* ``decode_1k``: the same reports decoded in batches of 1,000 (one call per batch, as
  the aggregator does per request).

A child reports the median of ``--repeats`` timings of each (more, up to 25, for
the short ones: as many as take about half a second). The result is, per
setting and path, the ratio NEW/OLD of the two children of one round, summarised over
the rounds (median, min, max), and the ratio OLD'/OLD of the two OLD children (the same
code twice: the machine's noise). Both versions must give the same report bytes and
statistics for the same seed; the children's digests are compared and any difference
is reported (``outputs_identical``).

Only names that exist in every version are imported: ``ldp_shared.schema.CollectionSpec``,
``ldp_shared.collection.build_config``, ``ldp_shared.codec.Privatizer`` and
``decode_reports``, ``ldp_shared.rand.seeded_rng``.

    python bench/regression.py --old ../old-checkout --new .   # the JSON, a table on stderr
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import tiny

DEFAULT_N = 200_000
DEFAULT_ROUNDS = 7
DEFAULT_REPEATS = 3
BATCH = 1_000
PATHS = ("privatize", "decode", "decode_1k")


def _domain(prefix: str, d: int) -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(d)]


def _zipf(rng: np.random.Generator, domain: list[str], n: int) -> list[str]:
    weights = 1.0 / np.arange(1, len(domain) + 1) ** 1.1
    picks = rng.choice(len(domain), size=n, p=weights / weights.sum())
    return [domain[i] for i in picks]


def _baskets(rng: np.random.Generator, items: list[str], n: int) -> list[list[str]]:
    """Baskets of about 8 items each, item ``j`` held with a probability falling as j^-0.8."""
    weights = 1.0 / np.arange(1, len(items) + 1) ** 0.8
    held = rng.random((n, len(items))) < np.minimum(0.9, 8.0 * weights / weights.sum())
    rows, cols = np.nonzero(held)
    flat = np.asarray(items, dtype=object)[cols].tolist()
    ends = np.cumsum(np.bincount(rows, minlength=n)).tolist()
    return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def settings() -> dict[str, dict[str, Any]]:
    """Each setting: a spec (as JSON) and how to draw its columns."""
    out: dict[str, dict[str, Any]] = {}
    for mechanism in ("oue", "sue", "grr"):
        for d in (16, 1024):
            for eps in (1.0, 4.0):
                out[f"{mechanism.upper()} d={d} ε={eps:g}"] = {
                    "spec": {
                        "name": "bench",
                        "epsilon": eps,
                        "attributes": [
                            {"name": "v", "domain": _domain("v", d), "mechanism": mechanism}
                        ],
                    },
                    "columns": {"v": ("zipf", d)},
                }
    out["MASK m=100 p=0.9"] = {
        "spec": {
            "name": "bench",
            "attributes": [
                {
                    "name": "basket",
                    "domain": _domain("item", 100),
                    "mechanism": "mask",
                    "keep_probability": 0.9,
                }
            ],
        },
        "columns": {"basket": ("baskets", 100)},
    }
    for budget in ("split", "sample"):
        out[f"mixed, label, {budget}"] = {
            "spec": {
                "name": "bench",
                "epsilon": 4.0,
                "budget": budget,
                "label": "y",
                "attributes": [
                    {"name": "a", "domain": _domain("a", 8), "mechanism": "oue"},
                    {"name": "b", "domain": _domain("b", 20), "mechanism": "sue"},
                    {"name": "c", "domain": _domain("c", 50), "mechanism": "oue"},
                    {
                        "name": "basket",
                        "domain": _domain("item", 32),
                        "mechanism": "mask",
                        "keep_probability": 0.9,
                    },
                    {"name": "y", "domain": _domain("y", 3), "mechanism": "oue"},
                ],
            },
            "columns": {
                "a": ("zipf", 8),
                "b": ("zipf", 20),
                "c": ("zipf", 50),
                "basket": ("baskets", 32),
                "y": ("zipf", 3),
            },
        }
    return out


def _columns(plan: dict[str, Any], attributes: list[dict[str, Any]], n: int, seed: int):
    rng = np.random.default_rng(seed)
    domains = {a["name"]: a["domain"] for a in attributes}
    columns: dict[str, Any] = {}
    for name, (kind, _) in plan.items():
        if kind == "zipf":
            columns[name] = _zipf(rng, domains[name], n)
        else:
            columns[name] = _baskets(rng, domains[name], n)
    return columns


def _median_time(function: Any, repeats: int) -> tuple[float, Any]:
    """Median of at least ``repeats`` timings, and of as many as make ~0.5 s (at most 25)."""
    times: list[float] = []
    result = None
    while len(times) < repeats or (sum(times) < 0.5 and len(times) < 25):
        t0 = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def worker(n: int, repeats: int, only: list[str] | None) -> dict[str, Any]:
    """Time every setting with the ldpcollect this interpreter imports."""
    import ldp_shared
    from ldp_shared.codec import Privatizer, decode_reports
    from ldp_shared.collection import build_config
    from ldp_shared.rand import seeded_rng
    from ldp_shared.schema import CollectionSpec

    results: dict[str, Any] = {}
    for number, (label, setting) in enumerate(settings().items()):
        if only and label not in only:
            continue
        spec = CollectionSpec.model_validate(setting["spec"])
        config = build_config(spec)
        privatizer = Privatizer(config)
        columns = _columns(setting["columns"], setting["spec"]["attributes"], n, 1000 + number)
        privatizer.privatize_columns(
            {k: v[:BATCH] for k, v in columns.items()}, seeded_rng(1)
        )  # warm-up
        seconds, packed = _median_time(
            lambda: privatizer.privatize_columns(columns, seeded_rng(7)),  # noqa: B023
            repeats,
        )
        row: dict[str, Any] = {"privatize": seconds}
        decode_reports(config, packed[:BATCH])  # warm-up
        row["decode"], decoded = _median_time(
            lambda: decode_reports(config, packed),  # noqa: B023
            repeats,
        )
        batches = [np.ascontiguousarray(packed[i : i + BATCH]) for i in range(0, n, BATCH)]
        row["decode_1k"], sums_1k = _median_time(
            lambda: sum(decode_reports(config, b).sums for b in batches),  # noqa: B023
            repeats,
        )
        if not np.array_equal(sums_1k, decoded.sums) or not decoded.valid.all():
            raise RuntimeError(f"{label}: batched and whole decoding disagree")
        digest = hashlib.sha256(packed.tobytes())
        digest.update(np.asarray(decoded.sums, dtype="<i8").tobytes())
        row["digest"] = digest.hexdigest()[:16]
        row["report_bytes"] = int(config.report_bytes)
        results[label] = row
    return {
        "ldp_shared": str(Path(ldp_shared.__file__).resolve().parent.parent.parent),
        "numpy": np.__version__,
        "settings": results,
    }


def _git(path: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def _child(python: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        str(python),
        str(Path(__file__).resolve()),
        "--worker",
        "--n",
        str(args.n),
        "--repeats",
        str(args.repeats),
    ]
    if args.only:
        command += ["--only", *args.only]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=args.child_timeout, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def compare(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine_info

    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    pythons = {
        "old": args.old_python or trees["old"] / ".venv" / "bin" / "python",
        "new": args.new_python or trees["new"] / ".venv" / "bin" / "python",
    }
    pythons["old2"] = pythons["old"]
    shown = {"old": "<old checkout>", "new": "<new checkout>"}
    runs: list[dict[str, Any]] = []
    order = ["old", "new", "old2"]
    load_start = os.getloadavg()
    started = time.time()
    for round_number in range(args.rounds):
        rotated = order[round_number % 3 :] + order[: round_number % 3]
        children: dict[str, Any] = {}
        for who in rotated:
            print(f"[regression] round {round_number + 1}/{args.rounds}: {who}", file=sys.stderr)
            children[who] = _child(pythons[who], args)
            tree = trees["new" if who == "new" else "old"]
            if Path(children[who]["ldp_shared"]) != tree:
                raise RuntimeError(f"{who}: imported ldp_shared from {children[who]['ldp_shared']}")
            children[who]["ldp_shared"] = shown["new" if who == "new" else "old"]
        runs.append({"order": rotated, "children": children})
    elapsed = time.time() - started

    labels = list(runs[0]["children"]["old"]["settings"])
    table: dict[str, Any] = {}
    identical = True
    for label in labels:
        entry: dict[str, Any] = {}
        digests = {
            run["children"][who]["settings"][label]["digest"]
            for run in runs
            for who in ("old", "new", "old2")
        }
        entry["outputs_identical"] = len(digests) == 1
        identical &= entry["outputs_identical"]
        for path in PATHS:

            def times(who: str, path: str = path, label: str = label) -> list[float]:
                return [run["children"][who]["settings"][label][path] for run in runs]

            old, new, old2 = times("old"), times("new"), times("old2")
            entry[path] = {
                "old_seconds": _summary(old),
                "new_seconds": _summary(new),
                "ratio_new_old": _summary([b / a for a, b in zip(old, new, strict=True)]),
                "ratio_old_old": _summary([b / a for a, b in zip(old, old2, strict=True)]),
            }
        table[label] = entry
    noise = [
        entry[path]["ratio_old_old"][k]
        for entry in table.values()
        for path in PATHS
        for k in ("min", "max")
    ]
    return {
        "benchmark": "regression",
        "machine": machine_info(),
        "command": _shown_command(),
        "versions": {
            "old": _git(trees["old"], "rev-parse", "--short", "HEAD"),
            "new": _git(trees["new"], "rev-parse", "--short", "HEAD"),
        },
        "parameters": {
            "n": args.n,
            "rounds": args.rounds,
            "repeats_per_child": args.repeats,
            "batch_for_decode_1k": BATCH,
            "order": "one child per version per round plus a second OLD child, order rotated",
        },
        "load_average_start": list(load_start),
        "load_average_end": list(os.getloadavg()),
        "seconds": elapsed,
        "outputs_identical": identical,
        "noise_old_old_min_max": [min(noise), max(noise)],
        "settings": table,
        "runs": runs,
    }


def _shown_command() -> str:
    """The command line with the checkouts' paths replaced by placeholders."""
    shown: list[str] = ["python", "bench/regression.py"]
    argv = sys.argv[1:]
    skip = {"--old": "<old checkout>", "--new": "<new checkout>"}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag in skip or flag in ("--old-python", "--new-python", "--output"):
            placeholder = skip.get(flag, "<path>")
            shown += [flag, placeholder]
            i += 2
            continue
        shown.append(flag)
        i += 1
    return " ".join(a if a.startswith("<") else shlex.quote(a) for a in shown)


def print_table(result: dict[str, Any]) -> None:
    lines = ["setting | path | NEW/OLD median (min-max) | OLD'/OLD median (min-max)"]
    for label, entry in result["settings"].items():
        for path in PATHS:
            r, q = entry[path]["ratio_new_old"], entry[path]["ratio_old_old"]
            lines.append(
                f"{label} | {path} | {r['median']:.3f} ({r['min']:.3f}-{r['max']:.3f})"
                f" | {q['median']:.3f} ({q['min']:.3f}-{q['max']:.3f})"
            )
    print("\n".join(lines), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the checkout taken as the baseline")
    parser.add_argument("--new", type=Path, help="the checkout compared with it")
    parser.add_argument("--old-python", type=Path, default=None)
    parser.add_argument("--new-python", type=Path, default=None)
    parser.add_argument("--n", type=int, default=DEFAULT_N, help="records per setting")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="per child")
    parser.add_argument("--only", nargs="+", default=None, help="settings by label")
    parser.add_argument("--child-timeout", type=float, default=600.0)
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.n, args.repeats, args.only)))
        return
    if tiny() and args.old is None and args.new is None:  # tests/bench: this checkout twice
        args.old = args.new = Path(__file__).resolve().parent.parent
        args.old_python = args.new_python = Path(sys.executable)
        args.n, args.rounds, args.repeats = 300, 1, 1
    if args.old is None or args.new is None:
        parser.error("--old and --new are required")
    result = compare(args)
    print_table(result)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
