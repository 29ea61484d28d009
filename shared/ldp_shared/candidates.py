"""Values an analyst names in a query (``values=x,y,z``): one comma-separated text.

A comma or a backslash inside a value is escaped with a backslash (``a\\,b`` is the one
value ``a,b``); nothing else is escaped. The SDK writes the text with :func:`join`; the
aggregator reads it with :func:`split`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ldp_shared.errors import InvalidQueryError

MAX_CANDIDATES = 1000
"""Most values one query may name."""


def join(values: Iterable[object]) -> str:
    """The query text of ``values`` (each written with ``str``)."""
    return ",".join(str(v).replace("\\", "\\\\").replace(",", "\\,") for v in values)


def split(text: str) -> list[str]:
    """The values of a query text (the empty text is one empty value, which no attribute
    takes); :class:`InvalidQueryError` for more than :data:`MAX_CANDIDATES`, a value named
    twice, or a lone backslash at the end."""
    values: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise InvalidQueryError("values: a backslash ends the text; write \\\\ for one")
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
