"""``ldpcollect report``: records that cannot be read are one line naming them.

The URL points where nothing listens: records are read before the aggregator is asked
for the config, so these lines come without a server.
"""

from __future__ import annotations

import io

import pytest

from ldp_simulation.cli import main
from ldp_simulation.report_command import name_record, parse_records

NOWHERE = "http://127.0.0.1:9"


def _report(stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(["report", NOWHERE, "survey", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


@pytest.mark.parametrize("stdin", ["", "\n  \n"])
def test_no_records_on_stdin(
    stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _report(stdin, monkeypatch, capsys)
    assert line.startswith("ldpcollect: error: no records on stdin")
    assert "setting" not in line


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ('{"b": 1}\n\n{b}\n', "record 2 (stdin line 3): not valid JSON"),
        ('{"b": 1}\n[1]\n', "record 2 (stdin line 2): must be a JSON object"),
    ],
)
def test_a_bad_line_is_named_by_its_record_and_stdin_line(
    stdin: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert message in _report(stdin, monkeypatch, capsys)


def test_records_from_arguments_and_stdin_are_counted_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"a": 2}\n\n{"a": 3}\n'))
    given = parse_records(['{"a": 1}', "-"])
    assert [g.record for g in given] == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert [g.where for g in given] == [
        "record 1",
        "record 2 (stdin line 1)",
        "record 3 (stdin line 3)",
    ]


@pytest.mark.parametrize(
    ("detail", "named"),
    [
        (
            "record 0: missing attributes ['b'], unknown attributes []",
            "record 2 (stdin line 4): missing attributes ['b'], unknown attributes []",
        ),
        (
            "record 0 has no label 'y': every record of collection 'c' must carry its class",
            "record 2 (stdin line 4) has no label 'y': every record of collection 'c' must"
            " carry its class",
        ),
        ("'z' is not in its domain", "record 2 (stdin line 4): 'z' is not in its domain"),
    ],
)
def test_a_record_the_sdk_refuses_is_numbered_once(detail: str, named: str) -> None:
    assert name_record("record 2 (stdin line 4)", detail) == named


def test_more_records_than_one_upload_holds_is_one_line_before_any_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _report('{"a": 1}\n' * 10_001, monkeypatch, capsys)
    assert "10,001 records: one upload body holds at most 10,000 reports" in line
    assert "split -l 10000" in line
