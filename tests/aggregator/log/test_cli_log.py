"""``serve --log`` and ``fold``: a bad or dead log, a stream the log refuses to create,
or a fold worker's metrics port that cannot be listened on is one line and exit status 2;
a log URL's password is never shown."""

from __future__ import annotations

import argparse
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ldp_aggregator import cli
from ldp_aggregator.ingest_log import stream
from ldp_aggregator.ingest_log.stream import parse_log_url, redact_log_url
from ldp_shared.errors import ConfigurationError
from ldp_simulation.fleet import free_port

from .cluster import NatsCluster, nats_cluster
from .conftest import require_nats_server


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ldpcollect: error:")]
    assert len(errors) == 1 and "Traceback" not in "".join(lines)
    return errors[0]


def test_log_urls() -> None:
    assert parse_log_url("nats://a:1,b:2, c:3") == ("nats://a:1", "nats://b:2", "nats://c:3")
    for bad in ("http://a:1", "nats://", "nats://a:x", "a:1"):
        with pytest.raises(ConfigurationError):
            parse_log_url(bad)


def test_a_bad_log_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert cli.main(["serve", "--log", "http://x", "--database-url", db]) == cli.EXIT_ERROR
    assert "nats://host:port" in one_error_line(capsys)
    assert cli.main(["fold", "--database-url", db]) == cli.EXIT_ERROR
    assert "needs a log URL" in one_error_line(capsys)


def test_a_dead_log_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "CONNECT_SECONDS", 1.0)
    dead = f"nats://127.0.0.1:{free_port()}"
    db = f"sqlite:///{tmp_path / 'x.db'}"
    port = str(free_port())
    args = ["serve", "--log", dead, "--database-url", db, "--port", port]
    assert cli.main(args) == cli.EXIT_ERROR
    assert "the log does not answer" in one_error_line(capsys)
    assert cli.main(["fold", "--log", dead, "--database-url", db]) == cli.EXIT_ERROR
    err = capsys.readouterr().err  # nor does fold say it folds before the log answered
    assert "the log does not answer" in err and "folding" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_a_password_in_the_log_url_is_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "CONNECT_SECONDS", 1.0)
    port = free_port()
    dead = f"nats://admin:s3cret@127.0.0.1:{port}"
    db = f"sqlite:///{tmp_path / 'x.db'}"
    args = ["serve", "--log", dead, "--database-url", db, "--port", str(free_port())]
    assert cli.main(args) == cli.EXIT_ERROR
    line = one_error_line(capsys)
    assert f"nats://admin:***@127.0.0.1:{port}" in line and "s3cret" not in line
    assert cli.main(["fold", "--log", dead, "--database-url", db]) == cli.EXIT_ERROR
    line = one_error_line(capsys)
    assert f"nats://admin:***@127.0.0.1:{port}" in line and "s3cret" not in line
    for bad in ("http://admin:s3cret@x:1", "nats://admin:s3cret@x:port"):
        with pytest.raises(ConfigurationError) as refused:
            parse_log_url(bad)
        assert "s3cret" not in str(refused.value) and "admin:***@" in str(refused.value)


def test_log_urls_are_shown_without_their_secrets() -> None:
    assert redact_log_url("nats://a:1,b:2") == "nats://a:1,b:2"
    assert redact_log_url("nats://u:p@a:1,v:q@b:2") == "nats://u:***@a:1,v:***@b:2"
    assert redact_log_url("tls://t0ken@a:1") == "tls://***@a:1"  # a token alone
    assert redact_log_url("nats://u:p@ss@a:1") == "nats://u:***@a:1"


def test_fold_batch_help_counts_reports() -> None:
    (fold,) = [
        parser
        for action in cli.build_parser()._subparsers._actions  # type: ignore[union-attr]
        if isinstance(action, argparse._SubParsersAction)
        for name, parser in action.choices.items()
        if name == "fold"
    ]
    (batch,) = [action for action in fold._actions if "--batch" in action.option_strings]
    assert batch.help is not None
    assert "reports per transaction" in batch.help and "messages" not in batch.help


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[NatsCluster]:
    """One ``nats-server -js``, not clustered: a stream there has one replica."""
    require_nats_server()
    with nats_cluster(tmp_path / "nats", 1) as started:
        yield started


def test_a_stream_the_log_refuses_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    single_node: NatsCluster,
) -> None:
    """A single node asked for the default three replicas, or a stream name whose
    subjects another stream holds: one line and exit status 2 before anything starts
    (serve used to print uvicorn's traceback of its lifespan and exit 3), at once."""
    db = f"sqlite:///{tmp_path / 'x.db'}"
    serve = ["serve", "--log", single_node.url, "--database-url", db, "--port", str(free_port())]
    fold = ["fold", "--log", single_node.url, "--database-url", db]
    started = time.monotonic()
    for args in (serve, fold):
        assert cli.main(args) == cli.EXIT_ERROR
        line = one_error_line(capsys)
        assert "replicas > 1 not supported" in line and "LDPCOLLECT_LOG_REPLICAS=1" in line
    monkeypatch.setenv("LDPCOLLECT_LOG_REPLICAS", "1")
    stream.check_log(stream.LogSettings(servers=(single_node.url,), replicas=1))
    monkeypatch.setenv("LDPCOLLECT_LOG_STREAM", "NOPE")  # the subjects are the default's
    for args in (serve, fold):
        assert cli.main(args) == cli.EXIT_ERROR
        line = one_error_line(capsys)
        assert "NOPE" in line and "subjects overlap" in line and "LDPCOLLECT_LOG_STREAM" in line
    assert time.monotonic() - started < stream.CONNECT_SECONDS  # no retries of a refusal


def test_fold_metrics_port_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    single_node: NatsCluster,
) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    fold = ["fold", "--log", single_node.url, "--database-url", db, "--metrics-port"]
    for bad in ("70000", "-1"):
        assert cli.main([*fold, bad]) == cli.EXIT_ERROR
        assert "--metrics-port must be from 1 to 65,535" in one_error_line(capsys)
    monkeypatch.setenv("LDPCOLLECT_LOG_REPLICAS", "1")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main([*fold, str(port)]) == cli.EXIT_ERROR
        err = capsys.readouterr().err
    assert "Traceback" not in err and "folding" not in err
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert line.startswith("ldpcollect: error: cannot serve the fold metrics on 127.0.0.1:")
    assert "in use" in line


def test_fold_metrics_listen_where_metrics_host_says(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    single_node: NatsCluster,
) -> None:
    """docker-compose's fold workers listen on 0.0.0.0 so that a scraper reaches them;
    an address that is not this machine's is one line naming it."""
    monkeypatch.setenv("LDPCOLLECT_LOG_REPLICAS", "1")
    db = f"sqlite:///{tmp_path / 'x.db'}"
    fold = ["fold", "--log", single_node.url, "--database-url", db, "--metrics-port", "9"]
    assert cli.main([*fold, "--metrics-host", "203.0.113.7"]) == cli.EXIT_ERROR
    assert "cannot serve the fold metrics on 203.0.113.7:9" in one_error_line(capsys)


def test_fold_on_an_unmigrated_database_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    single_node: NatsCluster,
) -> None:
    """With migrations left to ``ldpcollect migrate`` (docker-compose, fleet-local.sh), a
    worker on a schema older than its code says so instead of failing on a missing table."""
    monkeypatch.setenv("LDPCOLLECT_LOG_REPLICAS", "1")
    monkeypatch.setenv("LDPCOLLECT_MIGRATE_ON_STARTUP", "false")
    db = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert cli.main(["fold", "--log", single_node.url, "--database-url", db]) == cli.EXIT_ERROR
    line = one_error_line(capsys)
    assert "schema is at revision none" in line and "ldpcollect migrate" in line
