"""One record per call, and batches to the wire: ldpcollect's SDK vs pure-LDP and multi-freq-ldpy.

For every setting (GRR, SUE, OUE at d = 16 and d = 1,024; ε ∈ {1, 4}), in interleaved
A/B pairs (``_freq_peers.interleave``: each pair times every arm once, in alternating
order; the ratios are taken pair by pair and given as their range):

* **per record** (target: at least as fast as the fastest peer): ours is
  ``ldp_client.privatize(config, {"v": value})``, a whole :class:`Report` (random id,
  config hash, base64 bits) from the process's secure generator (AES-CTR); the peers
  are their per-record client calls on the same strings (pure-LDP ``DEClient``/
  ``UEClient.privatise`` through its ``index_mapper``, multi-freq-ldpy ``GRR_Client``/
  ``UE_Client`` with a dict lookup, numba compiled before timing);
* **batches to the wire** (target: 10× pure-LDP's whole process): ours are
  ``privatize_many(config, records)`` and ``privatize_columns(config, {"v": values})``,
  records to reports (a :class:`~ldp_client.reports.ReportColumns`), then the upload
  bodies of their batches of 1,000 (``wire_json``, what ``submit_reports`` sends);
  pure-LDP's whole process is every client's
  ``privatise``, its server's ``aggregate`` of each report, and ``estimate_all`` over
  the domain; its client loop alone is given beside it.

Peers are timed on subsamples sized so that one call lasts about half a second, in
microseconds per record. Without the peers (run outside ``bench/.venv-peers``) only
ours is timed, and the JSON says why.
"""

from __future__ import annotations

from typing import Any

from _common import base_parser, emit, log, sized, start_marker
from _freq_peers import (
    PEERS,
    add_options,
    config_for,
    interleave,
    load_average,
    loop_arm,
    make_values,
    peer_arms,
    peer_client,
    plan,
    pure_ldp_whole,
    ratios,
    spread,
    subsample_for,
)
from ldp_client import privatize, privatize_columns, privatize_many
from ldp_client.reports import ReportColumns

UPLOAD_BATCH = 1000  # the SDK's default batch size


def upload_bodies(reports: ReportColumns) -> int:
    """Write the upload body of every batch of ``reports`` (as ``submit_reports`` does);
    the number of reports."""
    for start in range(0, len(reports), UPLOAD_BATCH):
        reports[start : start + UPLOAD_BATCH].wire_json()
    return len(reports)


def per_record_part(
    mechanism: str, d: int, epsilon: float, strings: list[str], peers: dict[str, Any], args: Any
) -> dict[str, Any]:
    config = config_for(mechanism, d, epsilon)
    records = [{"v": s} for s in strings[: args.records]]

    def ours() -> int:
        for record in records:
            privatize(config, record)
        return len(records)

    arms, calls, _ = peer_arms(peers, mechanism, d, epsilon, strings, args.seconds)
    arms["ours_privatize"] = ours
    calls["ours_privatize"] = "ldp_client.privatize(config, {'v': value})"
    micros = interleave(arms, args.pairs)
    found = ratios(micros, PEERS, "ours_privatize")
    return {
        "calls": calls,
        "microseconds_per_record": {k: spread(v) for k, v in micros.items()},
        "microseconds_per_record_all": micros,
        "fastest_peer_over_ours": found,
        "target": "ours at least as fast as the fastest peer: ratio >= 1 in every pair",
        "meets_target": None if found is None else found["min"] >= 1.0,
    }


def batch_part(
    mechanism: str, d: int, epsilon: float, strings: list[str], peers: dict[str, Any], args: Any
) -> dict[str, Any]:
    config = config_for(mechanism, d, epsilon)
    values = strings[: args.batch]
    records = [{"v": s} for s in values]
    arms = {
        "ours_privatize_many": lambda: upload_bodies(privatize_many(config, records)),
        "ours_privatize_columns": lambda: upload_bodies(privatize_columns(config, {"v": values})),
    }
    calls = {
        "ours_privatize_many": f"privatize_many(config, records) on {len(values):,} records,"
        f" then the upload bodies of its batches of {UPLOAD_BATCH:,}",
        "ours_privatize_columns": f"privatize_columns(config, columns) on {len(values):,},"
        f" then the upload bodies of its batches of {UPLOAD_BATCH:,}",
    }
    if "pure-ldp" in peers:
        whole = pure_ldp_whole(peers["pure-ldp"], mechanism, d, epsilon)
        sample = subsample_for(whole, values, args.seconds, 1000)
        arms["pure-ldp whole process"] = lambda: (whole(sample), len(sample))[1]
        call, _ = peer_client("pure-ldp", peers["pure-ldp"], mechanism, d, epsilon)
        arms["pure-ldp client loop"] = loop_arm(call, sample)
        calls["pure-ldp whole process"] = (
            f"privatise + server.aggregate per record, estimate_all(domain); {len(sample):,}"
        )
    micros = interleave(arms, args.pairs)
    out: dict[str, Any] = {
        "calls": calls,
        "microseconds_per_record": {k: spread(v) for k, v in micros.items()},
        "microseconds_per_record_all": micros,
        "target": "10x pure-LDP's whole process in every pair",
    }
    for ours in ("ours_privatize_many", "ours_privatize_columns"):
        whole_ratio = ratios(micros, ["pure-ldp whole process"], ours)
        client_ratio = ratios(micros, ["pure-ldp client loop"], ours)
        out[f"{ours}_speedup"] = {
            "over_pure_ldp_whole_process": whole_ratio,
            "over_pure_ldp_client_loop": client_ratio,
            "meets_target": None if whole_ratio is None else whole_ratio["min"] >= 10.0,
        }
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=None, help="per-record calls (20,000)")
    parser.add_argument("--batch", type=int, default=None, help="records per batch (200,000)")
    add_options(parser)
    args = parser.parse_args()
    args.records = args.records or sized(20_000, 2_000, 100, args)
    args.batch = args.batch or sized(200_000, 10_000, 300, args)
    args.seconds = sized(0.5, 0.1, 0.005, args)
    settings, epsilons, peers, missing = plan(args, tiny_settings=2)
    started = start_marker()
    out: list[dict[str, Any]] = []
    for mechanism, d in settings:
        _, strings = make_values(d, max(args.batch, args.records), seed=d)
        for epsilon in epsilons:
            log(f"[per_record] {mechanism} d={d} eps={epsilon:g}")
            load_before = load_average()
            entry = {
                "mechanism": mechanism,
                "d": d,
                "epsilon": epsilon,
                "per_record": per_record_part(mechanism, d, epsilon, strings, peers, args),
                "batch_to_reports": batch_part(mechanism, d, epsilon, strings, peers, args),
                "load_average_before_after": [load_before, load_average()],
            }
            out.append(entry)
    result = {
        **started,
        "description": __doc__.split("\n\n")[0],
        "parameters": {
            "records_per_record_arm": args.records,
            "batch_records": args.batch,
            "pairs": args.pairs,
            "peer_seconds_per_call": args.seconds,
            "value_distribution": "Zipf s=1.1 over the domain, as domain strings",
        },
        "peers_missing": missing,
        "settings": out,
    }
    emit("per_record", result, args.quick, args.output)


if __name__ == "__main__":
    main()
