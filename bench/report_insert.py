"""PostgreSQL's report insert, A/B: arrays in text against binary, a foreign key or none.

The statement is the writer's (``storage/reports.py``): ``INSERT ... SELECT FROM
unnest(ids, bits) ... ON CONFLICT DO NOTHING RETURNING report_id``, batches of
``--rows`` sorted random ids with two-byte bits, one psycopg connection, into two
scratch tables of one fresh database that differ in one thing only. Two comparisons,
each in ``--pairs`` interleaved pairs (the order alternating):

* ``text_vs_binary``: the arrays' format (``%(x)s``, text: every bytea element escaped
  in Python and parsed by the server; ``%(x)b``, binary), both tables without a key;
* ``key_vs_none``: binary arrays, the table with ``REFERENCES collections ON DELETE
  CASCADE`` (as before migration 0012) against the same table without it.

Per batch: wall seconds and the client's CPU seconds; per pair: B over A. Each table
grows by one batch a pair, so both sides see the same table sizes.

    python bench/report_insert.py [--rows 10000] [--pairs 8]
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
from typing import Any

from sqlalchemy.engine import make_url

from _common import base_parser, emit, log, sized, start_marker
from _server import postgres_database
from ingestion import POSTGRES_ADMIN_URL

TABLE = """CREATE TABLE {name} (
    collection_id INTEGER NOT NULL {key},
    report_id VARCHAR(64) NOT NULL,
    received_day DATE NOT NULL,
    period_start BIGINT NOT NULL,
    bits BYTEA NOT NULL,
    PRIMARY KEY (collection_id, report_id))"""
INSERT = (
    "INSERT INTO {name} SELECT 1, r.i, current_date, 0, r.b"
    " FROM unnest(CAST(%(ids){f} AS VARCHAR[]), CAST(%(bits){f} AS BYTEA[]))"
    " WITH ORDINALITY AS r(i, b, k) ORDER BY r.k ON CONFLICT DO NOTHING RETURNING report_id"
)


def _batch(rows: int) -> dict[str, list[Any]]:
    ids = sorted(secrets.token_urlsafe(16) for _ in range(rows))
    return {"ids": ids, "bits": [os.urandom(2) for _ in range(rows)]}


def _insert(connection: Any, sql: str, values: dict[str, list[Any]]) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    with connection.transaction():
        stored = len(connection.execute(sql, values).fetchall())
    assert stored == len(values["ids"])
    return {"seconds": time.perf_counter() - wall, "client_cpu_seconds": time.process_time() - cpu}


def compare(connection: Any, a: str, b: str, rows: int, pairs: int) -> dict[str, Any]:
    """``pairs`` interleaved pairs of the statements ``a`` and ``b``: B over A."""
    runs: list[dict[str, Any]] = []
    for pair in range(pairs):
        order = [("a", a), ("b", b)] if pair % 2 == 0 else [("b", b), ("a", a)]
        runs.append({side: _insert(connection, sql, _batch(rows)) for side, sql in order})
    ratios = [run["b"]["seconds"] / run["a"]["seconds"] for run in runs]
    cpu = [
        run["b"]["client_cpu_seconds"] / max(run["a"]["client_cpu_seconds"], 1e-9) for run in runs
    ]
    return {
        "rows_per_batch": rows,
        "runs": runs,
        "b_over_a_seconds": {
            "median": statistics.median(ratios),
            "range": [min(ratios), max(ratios)],
        },
        "b_over_a_client_cpu": {"median": statistics.median(cpu), "range": [min(cpu), max(cpu)]},
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="rows per batch (10,000)")
    parser.add_argument("--pairs", type=int, default=None, help="A/B pairs per comparison (8)")
    parser.add_argument("--postgres-url", default=POSTGRES_ADMIN_URL)
    args = parser.parse_args()
    rows = args.rows or sized(10_000, 2_000, 200, args)
    pairs = args.pairs or sized(8, 2, 2, args)
    started = start_marker()
    import psycopg  # the PostgreSQL driver of `.[postgres]`

    out: dict[str, Any] = {"rows": rows, "pairs": pairs}
    with postgres_database(args.postgres_url) as url:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("CREATE TABLE collections (id INTEGER PRIMARY KEY)")
            connection.execute("INSERT INTO collections VALUES (1)")
            keyed = "REFERENCES collections (id) ON DELETE CASCADE"
            for name, key in (("plain_a", ""), ("plain_b", ""), ("plain_c", ""), ("keyed", keyed)):
                connection.execute(TABLE.format(name=name, key=key))
            log(f"[report_insert] text against binary arrays, {pairs} pairs of {rows:,} rows")
            out["text_vs_binary"] = compare(
                connection,
                INSERT.format(name="plain_a", f="s"),
                INSERT.format(name="plain_b", f="b"),
                rows,
                pairs,
            )
            log(f"[report_insert] a foreign key against none, {pairs} pairs")
            out["key_vs_none"] = compare(
                connection,
                INSERT.format(name="keyed", f="b"),
                INSERT.format(name="plain_c", f="b"),
                rows,
                pairs,
            )
    out["_started"], out["_load_at_start"] = started["_started"], started["_load_at_start"]
    emit("report_insert", out, args.quick, args.output)


if __name__ == "__main__":
    main()
