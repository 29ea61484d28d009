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


def _winner_matrix(doc: dict[str, Any], kind: str) -> list[str]:
    short = {"exponential": "EM", "grr": "GRR", "oue": "OUE"}
    sizes = doc["parameters"]["n"]
    epsilons = doc["parameters"]["epsilons"]
    cases = list(dict.fromkeys((r["d"], r["distribution"]) for r in doc["settings"]))
    lines = [
        "| d | distribution | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |",
        "|---:|---|" + "---|" * len(epsilons),
    ]
    for d, dist in cases:
        cells = []
        for e in epsilons:
            picks = []
            for n in sizes:
                r = next(
                    x
                    for x in doc["settings"]
                    if (x["n"], x["d"], x["distribution"], x["epsilon"]) == (n, d, dist, e)
                )
                w = r["winners"][kind]
                picks.append(short[w["winner"]] + ("" if w["clear"] else "*"))
            cells.append(" / ".join(picks))
        lines.append(f"| {d} | {dist} | " + " | ".join(cells) + " |")
    return lines


def ordinal(doc: dict[str, Any]) -> str:
    sizes = " / ".join(f"n = {n:,}" for n in doc["parameters"]["n"])
    lines = [
        f"Least mean W1, each mechanism with its best distribution estimate (simplex "
        f"projection, or IBU for EM and GRR); cells: {sizes}; * = not clear of the "
        "runner-up by twice the Monte-Carlo standard error of the difference.",
        "",
        *_winner_matrix(doc, "best"),
        "",
        f"The same with the simplex projection only (the API's `postprocess=simplex`); {sizes}:",
        "",
        *_winner_matrix(doc, "simplex"),
        "",
    ]
    for n, wins in doc["wins"].items():
        lines.append(
            f"Wins at n = {int(n):,} (best / simplex / ibu / raw): "
            + "; ".join(
                f"{m} {wins['best'][m]} / {wins['simplex'][m]} / {wins['ibu'][m]} / "
                f"{wins['raw'][m]}"
                for m in ("exponential", "grr", "oue")
            )
            + "."
        )
    return "\n".join(lines)
