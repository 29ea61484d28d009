"""``serve --log`` and ``fold``: a bad or dead log is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from ldp_aggregator import cli
from ldp_aggregator.ingest_log import stream
from ldp_aggregator.ingest_log.stream import parse_log_url
from ldp_shared.errors import ConfigurationError
from ldp_simulation.fleet import free_port


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
    assert "the log does not answer" in one_error_line(capsys)
