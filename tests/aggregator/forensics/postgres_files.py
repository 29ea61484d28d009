"""Reading where PostgreSQL keeps the reports, as a database superuser would.

Two readers of the ``reports`` heap:

* :func:`system_columns`: ``ctid`` (block, line pointer) and ``xmin`` (the inserting
  transaction's id) of every live row, through SQL. Inserts fill the heap from its end
  and transaction ids grow, so both follow commit order; one ``xmin`` is one
  transaction, i.e. one request unless requests share transactions.
* :func:`heap_file`: the heap's file on disk (``pg_read_binary_file`` after a
  ``CHECKPOINT``), page by page: each tuple's header ``xmin`` and its place in the file,
  dead tuples and freed space included, and the id copies found anywhere in the file.

And two of the primary-key index, :func:`index_positions` and :func:`index_offsets`: a
B-tree leaf keeps its line pointers in key order but places each new tuple below the
previous ones, so between two splits of a page the byte offsets follow insertion order
(as in SQLite's pages), and tuples written by one transaction lie side by side.

Page layout: https://www.postgresql.org/docs/current/storage-page-layout.html.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Set
from dataclasses import dataclass

from sqlalchemy import Connection, text

from . import Position

PAGE = 8192
PAGE_HEADER = 24
_LINE_POINTER_NORMAL = 1
_BTREE_LEAF = 1
_ID_WINDOW = re.compile(rb"(?=([A-Za-z0-9_-]{22}))")


def system_columns(connection: Connection) -> tuple[dict[str, Position], dict[str, Position]]:
    """Positions by ``ctid`` and by ``xmin`` of every live report row."""
    rows = connection.execute(text("SELECT report_id, ctid::text, xmin::text FROM reports")).all()
    by_ctid: dict[str, Position] = {}
    by_xmin: dict[str, Position] = {}
    for report_id, ctid, xmin in rows:
        block, pointer = ctid.strip("()").split(",")
        by_ctid[report_id] = (int(block), int(pointer))
        by_xmin[report_id] = (int(xmin),)
    return by_ctid, by_xmin


@dataclass(frozen=True)
class HeapFile:
    """What the heap file holds: a position per live tuple and every id copy."""

    positions: dict[str, Position]
    xmins: dict[str, Position]
    copies: int
    tuples: int


def read_relation(connection: Connection, name: str = "reports") -> bytes:
    """The main-fork file of a table or index as it is on disk once dirty buffers are written."""
    connection.execute(text("CHECKPOINT"))
    path = connection.execute(
        text("SELECT pg_relation_filepath(CAST(:t AS regclass))"), {"t": name}
    ).scalar_one()
    return bytes(
        connection.execute(text("SELECT pg_read_binary_file(:p)"), {"p": path}).scalar_one()
    )


def _tuples(page: bytes) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, bytes)`` of every tuple of a page that a line pointer marks as used."""
    lower = int.from_bytes(page[12:14], "little")
    for at in range(PAGE_HEADER, lower, 4):
        pointer = int.from_bytes(page[at : at + 4], "little")
        offset, flags, length = pointer & 0x7FFF, (pointer >> 15) & 3, pointer >> 17
        if flags == _LINE_POINTER_NORMAL and length > 0:
            yield offset, page[offset : offset + length]


def _known_id(body: bytes, known: Set[str]) -> str | None:
    for match in _ID_WINDOW.finditer(body):
        if match.group(1).decode() in known:
            return match.group(1).decode()
    return None


def _index_leaves(data: bytes, known: Set[str]) -> Iterator[tuple[int, list[tuple[int, str]]]]:
    """``(block, [(byte offset, report id)])`` of every leaf page of the index, the known
    ids only, newest tuple (lowest offset) last."""
    for block in range(1, len(data) // PAGE):  # block 0 is the index's metapage
        page = data[block * PAGE : (block + 1) * PAGE]
        special = int.from_bytes(page[16:18], "little")
        if not int.from_bytes(page[special + 12 : special + 14], "little") & _BTREE_LEAF:
            continue
        entries = [(offset, _known_id(body, known)) for offset, body in _tuples(page)]
        yield block, sorted(((o, i) for o, i in entries if i is not None), reverse=True)


def index_positions(data: bytes, known: Set[str]) -> dict[str, Position]:
    """Each report's scaled rank, oldest first, by byte offset within its index leaf."""
    found: dict[str, Position] = {}
    for _, placed in _index_leaves(data, known):
        for rank, (_, report_id) in enumerate(placed):
            found[report_id] = ((rank + 0.5) / len(placed),)
    return found


def index_offsets(data: bytes, known: Set[str]) -> dict[str, Position]:
    """Each report's place in the index file, ``(block, byte offset)``: sorted by it,
    neighbours are tuples written next to each other (by one transaction, unless the
    page was split or rebuilt since)."""
    return {
        report_id: (block, offset)
        for block, placed in _index_leaves(data, known)
        for offset, report_id in placed
    }


def heap_file(data: bytes, known: Set[str]) -> HeapFile:
    """Parse the heap pages: (block, byte offset) and header ``xmin`` of each live tuple."""
    positions: dict[str, Position] = {}
    xmins: dict[str, Position] = {}
    tuples = 0
    for block in range(len(data) // PAGE):
        for offset, body in _tuples(data[block * PAGE : (block + 1) * PAGE]):
            tuples += 1
            report_id = _known_id(body, known)
            if report_id is not None:
                positions[report_id] = (block, -offset)  # a page fills from its end
                xmins[report_id] = (int.from_bytes(body[0:4], "little"),)
    copies = sum(1 for m in _ID_WINDOW.finditer(data) if m.group(1).decode() in known)
    return HeapFile(positions=positions, xmins=xmins, copies=copies, tuples=tuples)
