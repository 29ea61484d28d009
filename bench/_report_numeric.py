"""Markdown tables of the numeric and ordinal benchmarks (used by ``bench/report.py``)."""

from __future__ import annotations

from typing import Any


def _ci(pair: list[float]) -> str:
    return f"[{pair[0]:.2f}, {pair[1]:.2f}]"


def means(doc: dict[str, Any]) -> str:
    """MSE / exact variance per mechanism × ε (one cell per distribution)."""
    rows = doc["settings"]
    dists = list(dict.fromkeys(r["distribution"] for r in rows))
    lines = [
        "| mechanism | ε | " + " | ".join(dists) + " |",
        "|---|---:|" + "---:|" * len(dists),
    ]
    for mechanism in doc["mechanisms"]:
        for epsilon in doc["parameters"]["epsilons"]:
            cells = []
            for dist in dists:
                r = next(
                    x
                    for x in rows
                    if (x["mechanism"], x["epsilon"], x["distribution"])
                    == (mechanism, epsilon, dist)
                )
                cells.append(
                    "n/a"
                    if r.get("ratio") is None
                    else f"{r['ratio']:.2f} {_ci(r['ratio_ci95'])}"
                    + ("" if r["within_target"] else " ·")
                )
            lines.append(f"| {mechanism} | {epsilon:g} | " + " | ".join(cells) + " |")
    s = doc["summary"]["all"]
    lines += [
        "",
        f"Ratio MSE / exact variance with its 95% Monte-Carlo interval ({doc['parameters']['runs']}"
        f" runs of n = {doc['parameters']['n']:,}); · marks a ratio outside 0.9–1.1. "
        f"{s['within_target']}/{s['settings']} inside 0.9–1.1 (an exact estimator is expected "
        f"to put {s['expected_within_target_if_exact']:.1f} there with this many runs), "
        f"{s['ci95_contains_1']}/{s['settings']} intervals contain 1; pooled ratio "
        f"{s['ratio_pooled']:.3f} ± {s['ratio_pooled_se']:.3f}.",
    ]
    return "\n".join(lines)


def crossover(doc: dict[str, Any]) -> str:
    c = doc["crossover"]
    m = c["measured"]
    lines = [
        "| ε | Duchi worst (exact) | PM lattice worst (exact) | PM continuous worst "
        "| measured MSE ratio PM/Duchi | exact ratio (lattice) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    exact = {w["epsilon"]: w for w in c["worst_case_variances"]}
    for p in m["points"]:
        w = exact[p["epsilon"]]
        lines.append(
            f"| {p['epsilon']:g} | {w['duchi']:.3f} | {w['piecewise_lattice']:.3f} | "
            f"{w['piecewise_continuous']:.3f} | {p['ratio_pm_over_duchi']:.3f} | "
            f"{p['exact_ratio_pm_over_duchi']:.3f} |"
        )
    lines += [
        "",
        f"Crossover ε: continuous PM vs Duchi {c['analytic_continuous']:.4f} (the paper: about "
        f"1.29); lattice PM vs Duchi {c['analytic_lattice']:.3f}; measured "
        f"{m['crossover_epsilon']:.3f}, 95% bootstrap interval {_ci(m['crossover_ci95_bootstrap'])}"
        f" ({m['runs_per_point']:,} runs of n = {m['n']} per point and mechanism).",
    ]
    return "\n".join(lines)


def _rate(x: dict[str, Any] | None) -> str:
    return "n/a" if x is None else f"{x['records_per_second']:,.0f}"


def numeric_speed(doc: dict[str, Any]) -> str:
    lines = [
        "| mechanism | ε | ours: full path (records/s) | ours: perturb only | peers (records/s) "
        "| speed-up vs the faster peer (best / medians) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for r in doc["numeric"] + doc["exponential"]:
        ours = r["ours"]
        label = r["mechanism"] + (f" d={r['d']}" if "d" in r else "")
        peers = "; ".join(f"{k} {_rate(v)}" for k, v in r["peers"].items()) or "n/a"
        c = r["comparison"]
        if c.get("faster_peer") is None:
            speed = "n/a (" + r.get("ours_missing", "no peer") + ")"
        else:
            speed = (
                f"{c['speedup_full_client_path']:.0f}× / "
                f"{c['speedup_full_client_path_medians']:.0f}×"
                + ("" if c["meets_target"] else " (missed)")
                + ("" if r.get("same_mechanism_as_peers", True) else " †")
            )
        lines.append(
            f"| {label} | {r['epsilon']:g} | "
            f"{_rate(None if ours is None else ours['full_client_path'])} | "
            f"{_rate(None if ours is None else ours['perturb_only'])} | {peers} | {speed} |"
        )
    s = doc["summary"]
    lines += [
        "",
        f"† against the peers' Laplace: the same task (a bounded number in, an ε-LDP answer "
        f"out) by another mechanism. {s['settings_meeting_target']}/{s['settings_compared']} "
        f"settings at ≥ {doc['parameters']['target_speedup']:.0f}×; speed-ups "
        f"{s['speedup_min']:.0f}×–{s['speedup_max']:.0f}×.",
    ]
    return "\n".join(lines)


def numeric_estimation(doc: dict[str, Any]) -> str:
    lines = ["| reports stored | p50 ms | p95 ms | p99 ms |", "|---:|---:|---:|---:|"]
    for r in doc["results"]:
        m = r["latency_by_postprocess"]["none"]
        cells = " | ".join(f"{m[k]:.1f}" for k in ("p50_ms", "p95_ms", "p99_ms"))
        lines.append(f"| {r['reports_stored']:,} | {cells} |")
    s = doc["summary"]
    lines += [
        "",
        f"{doc['parameters']['requests_per_case']} sequential requests per size; p50 at the "
        f"largest size / at the smallest = {s['p50_growth_largest_over_smallest']:.2f}; filled "
        f"over HTTP at {doc['fill']['reports_per_second']:,.0f} reports/s.",
    ]
    return "\n".join(lines)


def ordinal(doc: dict[str, Any]) -> str:
    short = {"exponential": "EM", "grr": "GRR", "oue": "OUE"}
    lines = []
    for n in doc["parameters"]["n"]:
        rows = [r for r in doc["settings"] if r["n"] == n]
        lines += [
            f"n = {n:,}: mean W1 (ranks) EM / GRR / OUE, each with its best distribution "
            "estimate (simplex projection, or IBU for EM and GRR); winner (* = not clear "
            "of the runner-up by 2 SE); winner of the raw estimates",
            "",
            "| d | distribution | ε | EM | GRR | OUE | best | raw |",
            "|---:|---|---:|---:|---:|---:|---|---|",
        ]
        for r in rows:
            w = r["winners"]
            best = short[w["best"]["winner"]] + ("" if w["best"]["clear"] else "*")
            cells = " | ".join(f"{r['w1'][m]['best']['mean']:.3f}" for m in short)
            lines.append(
                f"| {r['d']} | {r['distribution']} | {r['epsilon']:g} | {cells} | {best} | "
                f"{short[w['raw']['winner']]} |"
            )
        wins = doc["wins"][str(n)]
        lines += [
            "",
            "Wins (best / simplex / ibu / raw): "
            + "; ".join(
                f"{short[m]} {wins['best'][m]} / {wins['simplex'][m]} / {wins['ibu'][m]} / "
                f"{wins['raw'][m]}"
                for m in short
            ),
            "",
        ]
    return "\n".join(lines)
