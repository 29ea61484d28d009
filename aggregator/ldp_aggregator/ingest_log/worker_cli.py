"""``ldpcollect fold``: run one fold worker until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from ldp_aggregator.heap import retain_freed_memory
from ldp_aggregator.ingest_log.fold import FoldWorker
from ldp_aggregator.ingest_log.fold_metrics import FoldMetrics
from ldp_aggregator.ingest_log.stream import check_log, log_settings_of
from ldp_aggregator.reshuffler import Reshuffler
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import check_sqlite_folder, make_engine, ping
from ldp_aggregator.storage.migrate import check_schema, upgrade
from ldp_shared.errors import ConfigurationError

MAX_BATCH = 100_000
MAX_PORT = 65_535


def run_fold(args: argparse.Namespace, settings: Settings) -> int:
    """Fold the log into the database until stopped; 0 after a clean stop. The log is
    checked first (connected, its stream created unless it exists: one line when it
    cannot be), then the database. The stored reports are rewritten out of arrival order
    as the serving replicas do (:class:`~ldp_aggregator.reshuffler.Reshuffler`, every
    ``reshuffle_seconds``)."""
    if not 1 <= args.batch <= MAX_BATCH:
        raise ConfigurationError(f"--batch must be from 1 to {MAX_BATCH:,}, got {args.batch}")
    if args.ack_wait <= 0:
        raise ConfigurationError(f"--ack-wait must be positive, got {args.ack_wait}")
    if not 0 <= args.metrics_port <= MAX_PORT:  # as serve's --port: before anything else
        raise ConfigurationError(
            f"--metrics-port must be from 1 to {MAX_PORT:,} (0: off), got {args.metrics_port}"
        )
    log = log_settings_of(settings)
    check_log(log)  # a dead log, or a stream it cannot create, is one line before anything
    retain_freed_memory()  # a batch's statistics arrays reuse mapped pages (heap.py)
    check_sqlite_folder(settings.database_url)
    engine = make_engine(settings.database_url)
    ping(engine)
    if settings.migrate_on_startup:
        upgrade(engine)
    else:  # a worker reads the database's identity (migration 0013) before folding
        check_schema(engine, "this fold worker")
    metrics = FoldMetrics()
    if args.metrics_port:
        metrics.serve(args.metrics_port, args.metrics_host)  # in use: one line
    worker = FoldWorker(log, engine, metrics, batch=args.batch, ack_wait_seconds=args.ack_wait)
    reshuffler = Reshuffler(worker.writer, settings.reshuffle_seconds)
    reshuffler.start()
    # only now: the log answered and its stream is there (check_log above)
    print(f"ldpcollect: folding {log.stream} into the database", file=sys.stderr)
    try:
        asyncio.run(_until_signalled(worker))
    finally:
        reshuffler.stop()  # closes the writer, then one last rewrite
        engine.dispose()
    return 0


async def _until_signalled(worker: FoldWorker) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await worker.run(stop)
