"""``retain_freed_memory``: glibc's mallopt where there is one, nothing elsewhere."""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import pytest

from ldp_aggregator.heap import retain_freed_memory
from ldp_aggregator.ingest_log import worker_cli
from ldp_aggregator.settings import Settings


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt is glibc's",
)
def test_sets_both_thresholds_on_glibc() -> None:
    assert retain_freed_memory() is True


def test_a_library_without_mallopt_changes_nothing() -> None:
    assert retain_freed_memory("libldpcollect-absent.so") is False


class _StopError(Exception):
    pass


def test_a_fold_worker_retains_freed_memory_before_touching_the_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(worker_cli, "retain_freed_memory", lambda: calls.append("retain") or True)

    def stop(url: str) -> None:
        calls.append("database")
        raise _StopError

    monkeypatch.setattr(worker_cli, "check_sqlite_folder", stop)
    monkeypatch.setattr(worker_cli, "check_log", lambda log: calls.append("log"))
    args = argparse.Namespace(batch=100, ack_wait=30.0, metrics_port=0, metrics_host="127.0.0.1")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'f.db'}", log_url="nats://127.0.0.1:1")
    with pytest.raises(_StopError):
        worker_cli.run_fold(args, settings)
    assert calls == ["log", "retain", "database"]  # the log first: fold checks it first
