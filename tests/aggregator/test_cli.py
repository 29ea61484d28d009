"""The aggregator's command line: ``serve --help`` says what each option does and its
default; a PostgreSQL URL without its driver installed is one line naming the extra."""

from __future__ import annotations

import sys

import pytest

from ldp_aggregator.cli import EXIT_ERROR, build_parser, main


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


@pytest.mark.parametrize("command", ["serve", "migrate"])
@pytest.mark.parametrize(
    ("url", "module"),
    [
        ("postgresql+psycopg://ldp@127.0.0.1:5432/ldp", "psycopg"),
        ("postgresql+psycopg2://ldp@127.0.0.1:5432/ldp", "psycopg2"),
    ],
)
def test_a_postgresql_url_without_its_driver_is_one_line_naming_the_extra(
    command: str,
    url: str,
    module: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    assert main([command, "--database-url", url]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert f"needs the module {module}, which is not installed" in lines[0]
    assert 'pip install -e ".[postgres]"' in lines[0] and "postgresql+psycopg://" in lines[0]
