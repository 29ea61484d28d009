"""``values=x,y,z``: the query text of named values, written by ``join`` and read by
``split`` (a comma or a backslash inside a value escaped with a backslash)."""

from __future__ import annotations

from typing import Any

import pytest

from ldp_shared import candidates
from ldp_shared.candidates import MAX_CANDIDATES, join, split
from ldp_shared.errors import InvalidQueryError

ROUND_TRIPS = [
    ["apple"],
    ["apple", "banana", "durian"],
    ["a,b", "c"],
    [",", ",,", "\\", "\\\\", "\\,"],
    ["ends with \\", "ends with ,"],
    ["\\,\\,x", "y\\"],
    ["Grüße", "日本語", "emoji 🎉", "e\u0301"],
    ["spaces  kept ", " ", "tab\there"],
    ["", "not first"],
    ["a", ""],
    ["", "a"],
    ["n\\nn", "percent%2C", "semi;colon", "quote'\""],
]


@pytest.mark.parametrize("values", ROUND_TRIPS)
def test_split_inverts_join(values: list[str]) -> None:
    assert split(join(values)) == values


def test_escapes_are_literal() -> None:
    assert join(["a,b", "c\\d"]) == "a\\,b,c\\\\d"
    assert split("a\\,b,c\\\\d") == ["a,b", "c\\d"]
    # only comma and backslash are escaped
    assert join(["a;b", "n"]) == "a;b,n"
    assert split("x,,y") == ["x", "", "y"]


@pytest.mark.parametrize("text", ["a\\nb", "C:\\tmp", "x,\\ y", "\\;"])
def test_a_backslash_before_anything_else_is_refused_not_dropped(text: str) -> None:
    """``C:\\tmp`` unescaped would otherwise estimate ``C:tmp``, a string nobody named."""
    with pytest.raises(InvalidQueryError, match="a backslash escapes only"):
        split(text)


def test_join_writes_each_value_with_str() -> None:
    assert join([7, 42, "x"]) == "7,42,x"
    assert split(join([7, 42])) == ["7", "42"]


def test_at_most_1000_values() -> None:
    names = [f"v{i}" for i in range(MAX_CANDIDATES)]
    assert MAX_CANDIDATES == 1000
    assert split(join(names)) == names
    with pytest.raises(InvalidQueryError, match="at most 1000 values"):
        split(join([*names, "one-more"]))
    with pytest.raises(InvalidQueryError, match="at most 1000 values"):
        split("," * 1000)  # 1001 empty values
    with pytest.raises(InvalidQueryError, match="at most 1000 values"):
        split(",".join(f"w{i}" for i in range(100_000)))
    # escaped commas are not separators: 1000 values holding commas are fine
    with_commas = [f"{i},{i}" for i in range(MAX_CANDIDATES)]
    assert split(join(with_commas)) == with_commas


@pytest.mark.parametrize(
    ("text", "twice"),
    [("a,b,a", "'a'"), ("x,y,z,y", "'y'"), ("a\\,b,a\\,b", "'a,b'"), (",", "''")],
)
def test_duplicates_are_refused(text: str, twice: str) -> None:
    with pytest.raises(InvalidQueryError, match=f"{twice} is named twice"):
        split(text)


def test_distinct_after_unescaping_only() -> None:
    # "a\,b" is the value a,b; "a,b" is two values: no duplicate between them
    assert split("a\\,b,a,b\\,") == ["a,b", "a", "b,"]


@pytest.mark.parametrize("text", ["\\", "a\\", "a,b\\", "a\\\\\\"])
def test_a_trailing_lone_backslash_is_refused(text: str) -> None:
    with pytest.raises(InvalidQueryError, match="a backslash ends the text"):
        split(text)


def test_an_escaped_trailing_backslash_is_a_value() -> None:
    assert split("a\\\\") == ["a\\"]


def test_empty_values() -> None:
    """An empty value is read as such (whether it names anything is the attribute's
    business: the aggregator refuses it as a value of any attribute)."""
    assert split("a,") == ["a", ""]
    assert split(",a") == ["", "a"]
    assert split("x,,y") == ["x", "", "y"]
    assert join(["", "b"]) == ",b"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([b"a"], "is a bytes"),
        ([None], "is a NoneType"),
        ([True], "is a bool"),
        (["\ud800"], "lone surrogate"),
        ([10**5000], "must lie in [0, 10^20)"),
        ([-1], "must lie in [0, 10^20)"),
        (["x" * 64] * 1000, "longer than a URL may be"),
        ("abc", "give a list"),
        ([], "give a list"),
    ],
)
def test_query_text_refuses_what_no_query_can_carry(values: Any, message: str) -> None:
    with pytest.raises(InvalidQueryError) as error:
        candidates.query_text(values)
    assert message in error.value.detail


def test_query_text_of_strings_and_integers() -> None:
    text = candidates.query_text(["a,b", 7, "c\\d"])
    assert split(text) == ["a,b", "7", "c\\d"]
