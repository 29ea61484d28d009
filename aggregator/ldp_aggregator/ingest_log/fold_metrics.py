"""Prometheus metrics of one fold worker (``ldpcollect fold --metrics-port``), on a
registry of its own: consumer lag, batch sizes, redeliveries and what the reports did.
No series is labelled with anything about a report or its sender."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from ldp_shared.errors import ConfigurationError

BATCH_BUCKETS = (1, 10, 100, 1_000, 2_500, 5_000, 10_000, 20_000)


class FoldMetrics:
    """The counters a fold worker keeps (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._lag = Gauge(
            "ldpcollect_fold_consumer_lag",
            "Messages in the stream not yet delivered to the fold consumer (last fetch).",
            registry=r,
        )
        self._batch_size = Histogram(
            "ldpcollect_fold_batch_size",
            "Reports per folded batch.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self._reports = Counter(
            "ldpcollect_fold_reports",
            "Folded reports by outcome (written, duplicate: stored already, dropped:"
            " collection closed or deleted, or a message that does not fit it).",
            ["outcome"],
            registry=r,
        )
        self._redelivered = Counter(
            "ldpcollect_fold_redeliveries",
            "Messages delivered more than once (a worker died or failed before its ack).",
            registry=r,
        )
        self._failed = Counter(
            "ldpcollect_fold_failed_batches",
            "Batches the database refused (left unacknowledged, redelivered).",
            registry=r,
        )

    def set_lag(self, pending: int) -> None:
        self._lag.set(pending)

    def count_redelivered(self, messages: int) -> None:
        self._redelivered.inc(messages)

    def count_failed_batch(self) -> None:
        self._failed.inc()

    def observe_batch(self, size: int, written: int, duplicate: int, dropped: int) -> None:
        self._batch_size.observe(size)
        self._reports.labels("written").inc(written)
        self._reports.labels("duplicate").inc(duplicate)
        self._reports.labels("dropped").inc(dropped)

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        """Expose the metrics over HTTP on ``host:port`` (a daemon thread); a port that
        cannot be listened on (in use, not this machine's) is a
        :class:`~ldp_shared.errors.ConfigurationError` (one line)."""
        try:
            start_http_server(port, addr=host, registry=self.registry)
        except (OSError, OverflowError) as error:  # OverflowError: a port past 65535
            reason = getattr(error, "strerror", None) or str(error)
            raise ConfigurationError(
                f"cannot serve the fold metrics on {host}:{port}: {reason}"
            ) from None
