"""Markdown tables from bench/results/*.json (the tables of docs/benchmarks.md).

python bench/report.py [perturbation per_record accuracy ingestion estimation means
                        numeric_speed ingestion-piecewise estimation-piecewise ordinal]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import _report_numeric as numeric
from _common import tiny

RESULTS = Path(__file__).resolve().parent / "results"


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def machine_line(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    return (
        f"Measured {doc['finished_utc']} on {m['cpu_count']} vCPU {m['cpu_model']}, "
        f"{m['memory_gib']} GiB, Python {m['python']}, numpy {m['numpy']}, "
        f"randomgen {m['randomgen']}, pure-ldp {m['pure_ldp']}, "
        f"multi-freq-ldpy {m['multi_freq_ldpy']} (numba {m['numba']}), "
        + "".join(f"{name} {m[name]}, " for name in ("diffprivlib", "opendp") if m.get(name))
        + f"commit {m['git_commit']}; load average at start "
        f"{fmt_load(doc.get('load_average_at_start'))}, at end "
        f"{fmt_load(m.get('load_average_1_5_15'))}.\n"
        f"Command: `{doc['command']}`"
    )


def fmt_load(load: list[float] | None) -> str:
    return "n/a" if not load else "/".join(f"{x:.2f}" for x in load)


def _range(r: dict[str, float] | None) -> str:
    if r is None:
        return "n/a"
    return f"{r['min']:.1f}–{r['max']:.1f}× (median {r['median']:.1f}×)"


def _micros(s: dict[str, Any], arm: str) -> str:
    m = s["microseconds_per_record"].get(arm)
    return "n/a" if m is None else f"{m['median']:.3f}"


def perturbation(doc: dict[str, Any]) -> str:
    lines = [
        "| setting | ours: full path | ours: perturb only | pure-ldp | multi-freq-ldpy "
        "| speed-up, full path (range over pairs) | bytes/report ours (packed / base64) |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for s in doc["settings"]:
        speed = _range(s.get("speedup_full_client_path"))
        if s.get("meets_target") is False:
            speed += " (missed)"
        wire = s["wire"]
        cells = [
            f"{s['mechanism'].upper()} d={s['d']} ε={s['epsilon']:g}",
            _micros(s, "ours_full_client_path"),
            _micros(s, "ours_perturb_only"),
            _micros(s, "pure-ldp"),
            _micros(s, "multi-freq-ldpy"),
            speed,
            f"{wire['packed_bytes_per_record']} / {wire['base64_chars_per_record']}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"Microseconds per record, median of {doc['parameters']['pairs']} interleaved "
        "pairs; the peers are timed on subsamples (sizes in the JSON)."
    )
    return "\n".join(lines)


def per_record(doc: dict[str, Any]) -> str:
    lines = [
        "| setting | privatize µs | pure-ldp µs | multi-freq-ldpy µs | fastest peer ÷ ours "
        "| privatize_many → Reports vs pure-LDP whole | privatize_columns → Reports vs whole |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for s in doc["settings"]:
        one, batch = s["per_record"], s["batch_to_reports"]
        cells = [
            f"{s['mechanism'].upper()} d={s['d']} ε={s['epsilon']:g}",
            _micros(one, "ours_privatize"),
            _micros(one, "pure-ldp"),
            _micros(one, "multi-freq-ldpy"),
            _range(one.get("fastest_peer_over_ours")),
            _range(batch["ours_privatize_many_speedup"]["over_pure_ldp_whole_process"]),
            _range(batch["ours_privatize_columns_speedup"]["over_pure_ldp_whole_process"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Medians and ranges over {doc['parameters']['pairs']} interleaved pairs.")
    return "\n".join(lines)


def accuracy(doc: dict[str, Any]) -> str:
    lines = [
        "| data set | d | mech | ε | MSE (none) | Var* | ratio MSE/Var* | ratio MSE/exact ± MC se "
        "| same, 200 runs | MSE norm-sub | MSE simplex | pure-ldp raw | pure-ldp simplex "
        "| multi-freq-ldpy MI |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        o = r["ours"]
        pp = o["mse_by_postprocess"]
        peers = r["peers"]

        def peer(name: str, est: str, peers: dict[str, Any] = peers) -> str:
            p = peers.get(name)
            return "n/a" if p is None else f"{p['estimators'][est]['mse']:.2e}"

        se = o["ratio_monte_carlo_se"]
        a = o.get("all_runs")
        more = "–" if not a else f"{a['ratio_to_exact']:.3f} ± {a['ratio_monte_carlo_se']:.3f}"
        lines.append(
            f"| {r['dataset']} | {r['d']} | {r['mechanism'].upper()} | {r['epsilon']:g} "
            f"| {o['mse']:.2e} | {o['var_star']:.2e} | {o['ratio_to_var_star']:.3f} "
            f"| {o['ratio_to_exact']:.3f} ± {se:.3f} | {more} "
            f"| {pp['norm-sub']:.2e} | {pp['simplex']:.2e} "
            f"| {peer('pure-ldp', 'raw')} | {peer('pure-ldp', 'prob_simplex')} "
            f"| {peer('multi-freq-ldpy', 'MI')} |"
        )
    p = doc["parameters"]
    lines.append("")
    lines.append(
        f"n = {p['n']:,}; ours {p['runs_ours']} runs (plus "
        f"{p.get('extra_runs_ours_small_d', 0)} more for d ≤ 16 in the '200 runs' column), "
        f"peers {p['runs_peers']} runs each. MSE averaged over the d values and the runs."
    )
    lines.append("")
    lines.append("| settings | runs each | mean ratio MSE/exact | within 0.9–1.1 | min – max |")
    lines.append("|---|---:|---:|---:|---|")
    for label, g in doc.get("summary", {}).items():
        ratios = [
            r["ours"]["ratio_to_exact"]
            for r in doc["results"]
            if (r["d"] <= 16) == (label == "d <= 16")
        ]
        lines.append(
            f"| {label} ({g['settings']}) | {p['runs_ours']} "
            f"| {g['mean_ratio_to_exact']:.3f} ± {g['mean_ratio_se']:.3f} "
            f"| {g['within_target']}/{g['settings']} | {min(ratios):.3f} – {max(ratios):.3f} |"
        )
        a = g.get("all_runs")
        if a:
            lines.append(
                f"| {label} ({g['settings']}) | {a['runs_per_setting']} "
                f"| {a['mean_ratio_to_exact']:.3f} ± {a['mean_ratio_se']:.3f} "
                f"| {a['within_target']}/{g['settings']} "
                f"| {a['min_ratio']:.3f} – {a['max_ratio']:.3f} |"
            )
    return "\n".join(lines)


def _per(value: float | dict[str, float], key: str) -> float:
    """A yardstick per run (a dict keyed like the runs) or one for all (older results)."""
    return value[key] if isinstance(value, dict) else value


def ingestion(doc: dict[str, Any]) -> str:
    """bench/ingestion.py: ours beside its yardsticks (issue 12); older results, measured
    with httpx before the wrk rework, keep their own table."""
    if "single_report_requests" not in doc.get("summary", {}):
        return ingestion_httpx(doc)
    summary = doc["summary"]
    lines = [
        "| measurement | ours | yardstick | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    one = summary["single_report_requests"]
    if one:
        cpu = one["server_cpu_ms_per_request"]
        lines += [
            f"| single-report requests, {one['connections']} connections (req/s) "
            f"| {one['ours_requests_per_second']:,.0f} | no-op route "
            f"{one['noop_requests_per_second']:,.0f} | {one['ratio']:.2f} | ≥ 0.50 |",
            f"| single-report p50 / p99 (ms) | {one['ours_p50_ms']:.1f} / {one['ours_p99_ms']:.1f} "
            f"| {one['noop_p50_ms']:.1f} / {one['noop_p99_ms']:.1f} | – | p99 < 100 ms |",
            f"| server CPU per request (ms) | {cpu['ours']:.2f} | {cpu['noop']:.2f} "
            f"| {cpu['ours'] / cpu['noop']:.1f}× | – |",
        ]
    batches = summary["batched_reports"]
    if batches:
        raw_with = batches["raw_reports_per_second_with_checkpoint"]
        raw_without = batches["raw_reports_per_second_without_checkpoint"]
        rows = batches.get("table_rows", {})
        for key, rate in batches["service_reports_per_second"].items():
            first, end = rows.get(key, (None, None))
            sizes = f", table {first / 1e3:,.0f}k–{end / 1e3:,.0f}k rows" if rows else ""
            lines.append(
                f"| batches of {doc['parameters']['batch']:,}, {key.split('_')[0]} "
                f"connection(s){sizes} (reports/s) | {rate:,.0f} | raw SQLite loop "
                f"{_per(raw_with, key):,.0f} with WAL truncation "
                f"({_per(raw_without, key):,.0f} without) "
                f"| {batches['ratio_vs_raw_with_checkpoint'][key]:.2f} "
                f"({batches['ratio_vs_raw_without_checkpoint'][key]:.2f}) | ≥ 0.60 |"
            )
    replicas = summary["postgres_replicas"]
    if replicas and "skipped" not in replicas:
        for kind, unit in (("single", "requests_per_second"), ("batches", "reports_per_second")):
            r = replicas[kind]
            what = "single reports (req/s)" if kind == "single" else "batches (reports/s)"
            lines.append(
                f"| PostgreSQL, two replicas, {what}, {r['connections']} connections "
                f"| {r[f'two_replicas_{unit}']:,.0f} | one replica {r[f'one_replica_{unit}']:,.0f} "
                f"| {r['two_over_one']:.2f} | – |"
            )
    if len(lines) == 2:
        lines = [f"No load measurements: {doc['wrk'].get('note', 'wrk did not run')}."]
    lines.append("")
    sdk = doc["sdk_submit_reports"]
    fs = doc.get("disk_write_fsync_latency", {})
    lines.append(
        f"SDK `submit_reports` (httpx, batches of {sdk['batch_size']:,}): "
        f"{sdk['reports_per_second_submit']:,.0f} reports/s. Aggregator peak RSS (VmHWM): "
        f"{doc['server_peak_rss_mib']:.0f} MiB; stored = accepted: SQLite "
        f"{summary['sqlite_stored_equals_accepted']}"
        + (
            f", PostgreSQL {replicas['stored_equals_accepted']}"
            if replicas and "skipped" not in replicas
            else ""
        )
        + f"; non-2xx answers: {summary['non_2xx_total']}; wrk used at most "
        f"{100 * (summary['wrk_cpu_share_of_one_core_max'] or 0):.0f} % of one core; "
        f"a 4 KiB write + fsync on this disk: p50 {fs.get('p50_ms', float('nan')):.1f} ms."
    )
    return "\n".join(lines)


def ingestion_httpx(doc: dict[str, Any]) -> str:
    """Results written before bench/ingestion.py used wrk (httpx client threads)."""
    lines = [
        "| run | reports | connections | reports/s | batch p50 / p99 (ms) |",
        "|---|---:|---:|---:|---|",
    ]
    for u in doc["batch_upload"]:
        lat = u["batch_latency"]
        lines.append(
            f"| batches of {u['batch_size']:,} (pre-built JSON) | {u['reports']:,} "
            f"| {u['connections']} | {u['reports_per_second']:,.0f} "
            f"| {lat['p50_ms']:.1f} / {lat['p99_ms']:.1f} |"
        )
    sdk = doc["sdk_submit_reports"]
    lines.append(
        f"| SDK `submit_reports`, batches of {sdk['batch_size']:,} | {sdk['reports']:,} | 1 "
        f"| {sdk['reports_per_second_submit']:,.0f} | – |"
    )
    one = doc["single_report_requests"]
    lat = one["latency"]
    lines.append(
        f"| single-report requests | {one['requests']:,} | 1 "
        f"| {one['requests_per_second']:,.0f} req/s | {lat['p50_ms']:.1f} / {lat['p99_ms']:.1f} |"
    )
    lines.append("")
    fs = doc.get("disk_write_fsync_latency", {})
    lines.append(
        f"Aggregator peak RSS (VmHWM): {doc['server_peak_rss_mib']:.0f} MiB "
        f"(after start: {doc['server_memory_kib']['after_start']['VmHWM'] / 1024:.0f} MiB); "
        f"{doc['reports_stored_at_end']:,} reports stored, "
        f"database {doc['database_bytes_at_end'] / 2**20:.0f} MiB; "
        f"a 4 KiB write + fsync on this disk: p50 {fs.get('p50_ms', float('nan')):.1f} ms."
    )
    return "\n".join(lines)


def estimation(doc: dict[str, Any]) -> str:
    lines = [
        "| reports stored | none p50 / p95 (ms) | norm-sub p50 / p95 | simplex p50 / p95 |",
        "|---:|---|---|---|",
    ]
    for r in doc["results"]:
        m = r["latency_by_postprocess"]
        cells = [
            f"{m[k]['p50_ms']:.1f} / {m[k]['p95_ms']:.1f}" for k in ("none", "norm-sub", "simplex")
        ]
        lines.append(f"| {r['reports_stored']:,} | " + " | ".join(cells) + " |")
    s = doc["summary"]
    lines.append("")
    lines.append(
        f"{doc['parameters']['requests_per_case']} sequential requests per cell; p50 at the "
        f"largest size / p50 at the smallest = {s['p50_growth_largest_over_smallest']:.2f}; "
        f"filled over HTTP at {doc['fill']['reports_per_second']:,.0f} reports/s "
        f"(batches of {doc['fill']['batch_size']:,})."
    )
    return "\n".join(lines)


SECTIONS = {
    "perturbation": [perturbation],
    "per_record": [per_record],
    "accuracy": [accuracy],
    "ingestion": [ingestion],
    "estimation": [estimation],
    "means": [numeric.means, numeric.crossover],
    "numeric_speed": [numeric.numeric_speed],
    "ingestion-piecewise": [ingestion],
    "estimation-piecewise": [numeric.numeric_estimation],
    "ordinal": [numeric.ordinal],
}


def main() -> None:
    names = sys.argv[1:] or list(SECTIONS)
    if tiny():  # tests/bench: render what exists, say so in JSON
        rendered = {}
        for name in names:
            doc = load(name)
            try:
                rendered[name] = None if doc is None else "\n".join(f(doc) for f in SECTIONS[name])
            except (KeyError, TypeError) as error:  # a result file of an older format
                rendered[name] = f"not renderable: {error!r}"
        print(json.dumps({"benchmark": "report", "tiny": True, "rendered": rendered}))
        return
    for name in names:
        doc = load(name)
        print(f"## {name}\n")
        if doc is None:
            print(f"(no bench/results/{name}.json yet)\n")
            continue
        print(machine_line(doc) + "\n")
        for section in SECTIONS[name]:
            print(section(doc) + "\n")


if __name__ == "__main__":
    main()
