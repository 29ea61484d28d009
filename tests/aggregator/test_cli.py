"""The aggregator's command line: ``serve --help`` says what each option does and its default."""

from __future__ import annotations

import pytest

from ldp_aggregator.cli import build_parser


def test_serve_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["serve", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "address to listen on (default: 127.0.0.1)" in text
    assert "TCP port to listen on (default: 8000)" in text
    assert "log level (default: info" in text
    assert "LDPCOLLECT_DATABASE_URL" in text


def test_serve_refuses_an_unknown_log_level(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["serve", "--log-level", "loud"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'loud'" in capsys.readouterr().err
