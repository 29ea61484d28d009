"""The PNG plots of ``docs/logistic-regression.md`` from the JSON of ``bench/logistic.py``
and ``bench/logistic_devices.py`` (``bench/results/``): test accuracy and ROC AUC against
ε, and against the number of devices at ε = 1 and 4, ours (local DP) beside the central-DP
and non-private peers. Mean over seeds, bars ± one standard deviation.

``logistic-<dataset>-gaussian-central.json`` (``bench/logistic.py --mechanisms l2-gaussian
--datasets <dataset> --output ...``), when present, adds its mechanisms' rows and its
central peers to ``logistic.json``'s data set: runs of the same command for the other
mechanisms, with the same seeds, give the same numbers to the last digit. Where that run
left diffprivlib out (``--no-diffprivlib``: 6 to 8 minutes a fit on 10⁶ Adult rows), its
rows at ε = 1 and 4 come from ``logistic_devices.json`` at the same number of devices, and on
Adult the other ε from ``logistic_diffprivlib.json``.

    python bench/logistic_plots.py [--results bench/results] [--out docs]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from _common import BENCH_DIR, REPO_ROOT, TINY_RESULTS_DIR, tiny

LOCAL = {
    "sampled-piecewise": ("tab:blue", "o"),
    "sampled-hybrid": ("tab:cyan", "s"),
    "l1-laplace": ("tab:green", "^"),
    "l2-gaussian": ("tab:olive", "v"),
}
CENTRAL = {
    "diffprivlib": ("tab:red", "D"),
    "central-laplace": ("tab:purple", "<"),
    "central-gaussian-basic": ("tab:pink", ">"),
    "central-gaussian-zcdp": ("tab:brown", "x"),
}
METRICS = (("accuracy", "test accuracy"), ("auc", "test ROC AUC"))
TITLES = {"adult": "Adult (d = 92)", "breast_cancer": "Breast cancer (d = 31)"}


def line(ax: Any, rows: list[dict[str, Any]], x: str, metric: str, label: str, style: Any) -> None:
    rows = sorted((r for r in rows if f"test_{metric}_mean" in r), key=lambda r: r[x])
    if not rows:
        return
    color, marker = style
    dashed = label in CENTRAL
    ax.errorbar(
        [r[x] for r in rows],
        [r[f"test_{metric}_mean"] for r in rows],
        yerr=[r[f"test_{metric}_std"] for r in rows],
        label=label + (" (central)" if dashed else ""),
        color=color,
        marker=marker,
        markersize=4,
        linestyle="--" if dashed else "-",
        capsize=2,
    )


def against_epsilon(name: str, data: dict[str, Any], out: Path, suffix: str) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (metric, ylabel) in zip(axes, METRICS, strict=True):
        for mech, style in LOCAL.items():
            line(ax, [r for r in data["results"] if r["mechanism"] == mech], "epsilon", metric,
                 mech, style)  # fmt: skip
        for method, style in CENTRAL.items():
            line(ax, [r for r in data.get("central", []) if r["method"] == method], "epsilon",
                 metric, method, style)  # fmt: skip
        sk = data["sklearn"]["test"][metric]
        ax.axhline(sk, color="black", linewidth=1, label="scikit-learn (non-private)")
        ax.axhline(data["noise_off"][f"test_{metric}_mean"], color="gray", linestyle=":",
                   label="our plan, noise off")  # fmt: skip
        if metric == "accuracy":
            ax.axhline(data["majority_class_test_accuracy"], color="gray", linewidth=0.8,
                       linestyle="-.", label="majority class")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("ε (per device for ours; total for the central peers)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{TITLES.get(name, name)}: {data['devices']:,} devices, δ = 1e-6 for Gaussian")
    fig.tight_layout()
    path = out / f"logistic-epsilon-{name.replace('_', '-')}{suffix}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def against_devices(name: str, data: dict[str, Any], out: Path, suffix: str) -> Path:
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    for row, eps in enumerate((1.0, 4.0)):
        for col, (metric, ylabel) in enumerate(METRICS):
            ax = axes[row][col]
            for mech, style in LOCAL.items():
                rows = [r for r in data["ldp"] if r["mechanism"] == mech and r["epsilon"] == eps]
                line(ax, rows, "devices", metric, mech, style)
            for method, style in CENTRAL.items():
                rows = [r for r in data["central"] if r["method"] == method and r["epsilon"] == eps]
                line(ax, rows, "devices", metric, method, style)
            line(ax, [r for r in data["central"] if r["method"] == "sklearn"], "devices", metric,
                 "scikit-learn (non-private)", ("black", "."))  # fmt: skip
            ax.set_xscale("log")
            ax.set_title(f"ε = {eps:g}", fontsize=9)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            if row == 1:
                ax.set_xlabel("devices (people)")
    axes[1][1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{TITLES.get(name, name)}: against the number of devices")
    fig.tight_layout()
    path = out / f"logistic-devices-{name.replace('_', '-')}{suffix}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def merged(results: Path, suffix: str) -> dict[str, Any]:
    """``logistic.json``'s data sets with the supplementary runs' rows and peers added."""
    datasets: dict[str, Any] = json.loads((results / f"logistic{suffix}.json").read_text())[
        "datasets"
    ]
    for name, data in datasets.items():
        extra = results / f"logistic-{name}-gaussian-central{suffix}.json"
        if not extra.exists():
            continue
        more = json.loads(extra.read_text())["datasets"][name]
        known = {(r["mechanism"], r["epsilon"]) for r in data["results"]}
        data["results"] += [
            r for r in more["results"] if (r["mechanism"], r["epsilon"]) not in known
        ]
        data["central"] = data.get("central", []) + more.get("central", [])
    sweep = results / f"logistic_devices{suffix}.json"
    if sweep.exists():  # diffprivlib where the ε run left it out: the sweep's (ε = 1, 4)
        swept = json.loads(sweep.read_text())["datasets"]
        for name, data in datasets.items():
            if any(r["method"] == "diffprivlib" for r in data.get("central", [])):
                continue
            data["central"] = data.get("central", []) + [
                r
                for r in swept.get(name, {}).get("central", [])
                if r["method"] == "diffprivlib" and r["devices"] == data["devices"]
            ]
    adult = results / f"logistic_diffprivlib{suffix}.json"
    if adult.exists() and "adult" in datasets:  # the ε the sweep does not have
        data = datasets["adult"]
        have = {r["epsilon"] for r in data.get("central", []) if r["method"] == "diffprivlib"}
        rows = json.loads(adult.read_text())["rows"]
        data["central"] += [r for r in rows if r["epsilon"] not in have]
    return datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "results")
    parser.add_argument("--out", type=Path, default=None, help="default docs/")
    parser.add_argument(
        "--quick", action="store_true", help="read the -quick.json files, draw into --results"
    )
    args = parser.parse_args()
    suffix = "-quick" if args.quick else ""
    if args.out is None and tiny():  # tests/bench: never into docs/
        args.out = TINY_RESULTS_DIR
        args.out.mkdir(parents=True, exist_ok=True)
    if args.out is None:
        args.out = args.results if args.quick else REPO_ROOT / "docs"
    written = []
    epsilon_file = args.results / f"logistic{suffix}.json"
    if epsilon_file.exists():
        for name, data in merged(args.results, suffix).items():
            written.append(against_epsilon(name, data, args.out, suffix))
    devices_file = args.results / f"logistic_devices{suffix}.json"
    if devices_file.exists():
        for name, data in json.loads(devices_file.read_text())["datasets"].items():
            written.append(against_devices(name, data, args.out, suffix))
    print(json.dumps({"written": [p.name for p in written]}))


if __name__ == "__main__":
    main()
