"""Values an analyst names in a query (``values=x,y,z``): one comma-separated text.

A comma or a backslash inside a value is escaped with a backslash (``a\\,b`` is the one
value ``a,b``); nothing else is escaped, and a backslash before any other character is
refused (so that ``C:\\tmp`` is not read as ``C:tmp``). The SDK writes the text with
:func:`join`; the aggregator reads it with :func:`split`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import quote

from ldp_shared.errors import InvalidQueryError

MAX_CANDIDATES = 1000
"""Most values one query may name."""
MAX_QUERY_CHARACTERS = 60_000
"""Longest ``values`` text once percent-encoded: HTTP clients and servers cap a URL near
64 KiB, so about 1,000 values of 20 ASCII bytes, or fewer longer ones, fit in one query."""
MAX_DIGITS = 20


def join(values: Iterable[object]) -> str:
    """The query text of ``values`` (each written with ``str``)."""
    return ",".join(str(v).replace("\\", "\\\\").replace(",", "\\,") for v in values)


def query_text(values: Sequence[str | int]) -> str:
    """The ``values=`` text of a query naming ``values`` (strings and non-negative
    integers), checked before it is sent: :class:`InvalidQueryError` for none or too many,
    another type, text that is not valid Unicode, or a text too long for a URL."""
    if isinstance(values, str | bytes) or not 1 <= len(values) <= MAX_CANDIDATES:
        raise InvalidQueryError(f"values: give a list of 1 to {MAX_CANDIDATES} values")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise InvalidQueryError(
                f"values: {value!r} is a {type(value).__name__}; name strings or integers"
            )
        if isinstance(value, int) and not 0 <= value < 10**MAX_DIGITS:
            raise InvalidQueryError(f"values: an integer named must lie in [0, 10^{MAX_DIGITS})")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidQueryError(
                    f"values: {value[:20]!r} is not valid Unicode (a lone surrogate, as a"
                    " command-line argument of bytes that are not UTF-8 becomes)"
                ) from None
    text = join(values)
    if len(quote(text, safe="")) > MAX_QUERY_CHARACTERS:
        raise InvalidQueryError(
            f"values: the {len(values)} values make a query of over {MAX_QUERY_CHARACTERS:,}"
            " characters, longer than a URL may be; ask for them in several queries"
        )
    return text


def split(text: str) -> list[str]:
    """The values of a query text (the empty text is one empty value, which no attribute
    takes); :class:`InvalidQueryError` for more than :data:`MAX_CANDIDATES`, a value named
    twice, or a backslash before anything but a comma or a backslash (or at the end)."""
    values: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise InvalidQueryError("values: a backslash ends the text; write \\\\ for one")
            if escaped not in ",\\":
                raise InvalidQueryError(
                    f"values: a backslash escapes only ',' and itself, not {escaped!r};"
                    " write \\\\ for a backslash"
                )
            current.append(escaped)
        elif char == ",":
            values.append("".join(current))
            current = []
        else:
            current.append(char)
        if len(values) > MAX_CANDIDATES:
            break
    values.append("".join(current))
    if len(values) > MAX_CANDIDATES:
        raise InvalidQueryError(f"values: name at most {MAX_CANDIDATES} values per query")
    if len(set(values)) != len(values):
        seen: set[str] = set()
        dup = next(v for v in values if v in seen or seen.add(v))  # type: ignore[func-returns-value]
        raise InvalidQueryError(f"values: {dup!r} is named twice")
    return values
