"""Reading a SQLite database's files byte by byte, as someone who copied them would.

Format: https://www.sqlite.org/fileformat2.html. The ``reports`` table is ``WITHOUT
ROWID``, so its rows live in an index B-tree: leaf pages (type 10) and interior pages
(type 2) whose cells hold whole records ``(collection_id, report_id, received_day,
period_start, bits)`` (before periods, without ``period_start``). Two readers:

* :func:`wal_positions`: every frame of the ``-wal`` file, stale ones too (a frame
  whose salt is not the header's was written before the log last restarted and stays
  until overwritten). Salt-1 grows by one per restart and frames are appended in commit
  order, so ``(salt-1, commit number)`` orders them; a report's position is the first
  commit whose page images hold it.
* :func:`page_positions`: the main file. A page's cell content grows downwards from the
  page's end, so between two rebuilds of a page (split, defragmentation, rewrite) a cell
  written later sits at a lower offset; a report's position is its place in that order
  within its page, scaled to [0, 1]. :func:`offset_positions` keeps the byte offset
  itself: neighbours by offset are cells written together.

:func:`residue` counts copies of ids outside every live cell (freed space, freelist
pages): what ``secure_delete`` is for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from . import Position

WAL_HEADER = 32
FRAME_HEADER = 24
LEAF_INDEX = 10
INTERIOR_INDEX = 2
LEAF_TABLE = 13
INTERIOR_TABLE = 5
_ID_WINDOW = re.compile(rb"(?=([A-Za-z0-9_-]{22}))")


@dataclass(frozen=True)
class Cell:
    key: tuple[int, str]  # (collection_id, report_id): the B-tree's order
    offset: int
    leaf: bool

    @property
    def report_id(self) -> str:
        return self.key[1]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for k in range(8):
        byte = data[at + k]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + k + 1
    return (value << 8) | data[at + 8], at + 9


def _field_size(serial: int) -> int:
    sizes = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}
    if serial in sizes:
        return sizes[serial]
    return (serial - 12) // 2 if serial % 2 == 0 else (serial - 13) // 2


def _record(page: bytes, at: int) -> list[int | bytes | str | None]:
    """The values of the record whose header-size varint starts at ``at`` (local part)."""
    header_size, cursor = _varint(page, at)
    serials: list[int] = []
    while cursor < at + header_size:
        serial, cursor = _varint(page, cursor)
        serials.append(serial)
    values: list[int | bytes | str | None] = []
    start = at + header_size
    for serial in serials:
        raw = page[start : start + _field_size(serial)]
        start += _field_size(serial)
        if 1 <= serial <= 6:
            values.append(int.from_bytes(raw, "big", signed=True))
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial >= 13 and serial % 2 == 1:
            values.append(raw.decode("utf-8", "replace"))
        elif serial >= 12:
            values.append(raw)
        else:
            values.append(None)
    return values


def _report_key(page: bytes, at: int, known: Set[str]) -> tuple[int, str] | None:
    """``(collection_id, report_id)`` of the index cell whose payload-size varint starts
    at ``at``, if it is a known report's."""
    _, at = _varint(page, at)
    values = _record(page, at)
    if (
        len(values) not in (4, 5)
        or not isinstance(values[0], int)
        or not isinstance(values[1], str)
    ):
        return None
    return (values[0], values[1]) if values[1] in known else None


def cells(page: bytes, header_at: int, known: Set[str]) -> Iterator[Cell]:
    """The report cells of one page (nothing for pages of other types or tables)."""
    kind = page[header_at]
    if kind not in (LEAF_INDEX, INTERIOR_INDEX):
        return
    count = int.from_bytes(page[header_at + 3 : header_at + 5], "big")
    pointers = header_at + (8 if kind == LEAF_INDEX else 12)
    for k in range(count):
        offset = int.from_bytes(page[pointers + 2 * k : pointers + 2 * k + 2], "big")
        start = offset if kind == LEAF_INDEX else offset + 4  # interior: child page first
        try:
            key = _report_key(page, start, known)
        except IndexError:
            continue
        if key is not None:
            yield Cell(key, offset, kind == LEAF_INDEX)


def page_size(main: bytes) -> int:
    size = int.from_bytes(main[16:18], "big")
    return 65536 if size == 1 else size


def _page(main: bytes, number: int) -> tuple[bytes, int]:
    """Page ``number`` (from 1) and where its B-tree header starts."""
    size = page_size(main)
    return main[(number - 1) * size : number * size], 100 if number == 1 else 0


def _children(page: bytes, header_at: int) -> list[int]:
    """The child page numbers of an interior page (none for a leaf)."""
    if page[header_at] not in (INTERIOR_INDEX, INTERIOR_TABLE):
        return []
    count = int.from_bytes(page[header_at + 3 : header_at + 5], "big")
    pointers = header_at + 12
    children = [int.from_bytes(page[header_at + 8 : header_at + 12], "big")]
    for k in range(count):
        offset = int.from_bytes(page[pointers + 2 * k : pointers + 2 * k + 2], "big")
        children.append(int.from_bytes(page[offset : offset + 4], "big"))
    return children


def tree_pages(main: bytes, root: int) -> list[int]:
    """Every page of the B-tree rooted at ``root``."""
    found, pending = [], [root]
    while pending:
        number = pending.pop()
        found.append(number)
        pending.extend(_children(*_page(main, number)))
    return found


def root_page(main: bytes, table: str = "reports") -> int:
    """The root page of ``table``, from the schema table (its B-tree starts on page 1)."""
    for number in tree_pages(main, 1):
        page, header_at = _page(main, number)
        if page[header_at] != LEAF_TABLE:
            continue
        count = int.from_bytes(page[header_at + 3 : header_at + 5], "big")
        for k in range(count):
            at = header_at + 8 + 2 * k
            cursor = int.from_bytes(page[at : at + 2], "big")
            _, cursor = _varint(page, cursor)  # payload size
            _, cursor = _varint(page, cursor)  # rowid
            kind, name, _, root, _ = _record(page, cursor)
            if kind == "table" and name == table and isinstance(root, int):
                return root
    raise LookupError(f"no table {table!r} in the schema")


def page_positions(main: bytes, known: Set[str]) -> dict[str, Position]:
    """Each report's scaled rank, oldest first, by cell offset within its leaf page."""
    found: dict[str, Position] = {}
    for number in tree_pages(main, root_page(main)):
        leaves = [c for c in cells(*_page(main, number), known) if c.leaf]
        leaves.sort(key=lambda c: -c.offset)
        for rank, cell in enumerate(leaves):
            found[cell.report_id] = ((rank + 0.5) / len(leaves),)
    return found


def offset_positions(main: bytes, known: Set[str]) -> dict[str, Position]:
    """Each report's place in the file, ``(page number, byte offset)`` of its leaf cell:
    sorted by it, neighbours are cells written next to each other (within a page, by one
    transaction unless the page was rebuilt since)."""
    found: dict[str, Position] = {}
    for number in tree_pages(main, root_page(main)):
        for cell in cells(*_page(main, number), known):
            if cell.leaf:
                found[cell.report_id] = (number, cell.offset)
    return found


def live_ids(main: bytes, known: Set[str]) -> set[str]:
    """The known ids in live cells of the reports B-tree (leaves and interior pages)."""
    pages = tree_pages(main, root_page(main))
    return {c.report_id for number in pages for c in cells(*_page(main, number), known)}


def page_concordance(main: bytes, order: Mapping[str, int]) -> tuple[int, float]:
    """Pairs of known reports on one leaf page, and the share of them whose byte offsets
    put the earlier arrival higher in the page (0.5: the offsets say nothing)."""
    pairs = agree = 0
    for number in tree_pages(main, root_page(main)):
        leaves = [c for c in cells(*_page(main, number), order.keys()) if c.leaf]
        for a, b in combinations(leaves, 2):
            pairs += 1
            agree += (a.offset > b.offset) == (order[a.report_id] < order[b.report_id])
    return pairs, agree / pairs if pairs else 0.5


def reports_tree(main: bytes) -> list[tuple[int, bytes]]:
    """Every page of the reports B-tree, ``(page number, bytes)``, in a fixed walk order."""
    return [(number, _page(main, number)[0]) for number in tree_pages(main, root_page(main))]


def wal_frames(wal: bytes) -> Iterator[tuple[int, int, bytes]]:
    """``(salt-1, commit number within that salt, page image)`` of every frame in the file."""
    if len(wal) < WAL_HEADER:
        return
    size = int.from_bytes(wal[8:12], "big")
    commits: dict[int, int] = {}
    at = WAL_HEADER
    while at + FRAME_HEADER + size <= len(wal):
        header = wal[at : at + FRAME_HEADER]
        salt = int.from_bytes(header[8:12], "big")
        number = commits.setdefault(salt, 0)
        yield salt, number, wal[at + FRAME_HEADER : at + FRAME_HEADER + size]
        if int.from_bytes(header[4:8], "big") != 0:  # a commit frame ends a transaction
            commits[salt] = number + 1
        at += FRAME_HEADER + size


def wal_positions(wal: bytes, known: Set[str]) -> dict[str, Position]:
    """Each report's first commit in the write-ahead log, ``(salt-1, commit)``."""
    found: dict[str, Position] = {}
    for salt, commit, page in wal_frames(wal):
        header_at = 100 if page[:16] == b"SQLite format 3\x00" else 0
        for cell in cells(page, header_at, known):
            position = (salt, commit)
            if cell.report_id not in found or position < found[cell.report_id]:
                found[cell.report_id] = position
    return found


def current_image(main: bytes, wal: bytes) -> bytes:
    """The database as SQLite would read it: the main file with the newest committed
    frame of each page of the log's current generation written over it."""
    if len(wal) < WAL_HEADER:
        return main
    size = int.from_bytes(wal[8:12], "big")
    salts = wal[16:24]
    image = bytearray(main)
    pending: list[tuple[int, bytes]] = []
    at = WAL_HEADER
    while at + FRAME_HEADER + size <= len(wal):
        header = wal[at : at + FRAME_HEADER]
        if header[8:16] != salts:
            break
        pending.append(
            (int.from_bytes(header[0:4], "big"), wal[at + FRAME_HEADER : at + FRAME_HEADER + size])
        )
        database_pages = int.from_bytes(header[4:8], "big")
        if database_pages:
            for number, page in pending:
                end = number * size
                image.extend(bytes(max(0, end - len(image))))
                image[end - size : end] = page
            del image[database_pages * size :]
            pending = []
        at += FRAME_HEADER + size
    return bytes(image)


def id_copies(data: bytes, known: Set[str]) -> int:
    """How many times any known id occurs in ``data``, anywhere."""
    return sum(1 for match in _ID_WINDOW.finditer(data) if match.group(1).decode() in known)


def residue(main: bytes, known: Set[str]) -> int:
    """Copies of known ids in the main file outside the live cells of the reports B-tree
    (freed space in its pages, freelist pages, pages of dropped tables)."""
    live = sum(
        1
        for number in tree_pages(main, root_page(main))
        for _ in cells(*_page(main, number), known)
    )
    return id_copies(main, known) - live


def read_files(database: Path) -> tuple[bytes, bytes]:
    """The main file and the ``-wal`` file (empty when absent), as they are now."""
    wal = database.with_name(database.name + "-wal")
    return database.read_bytes(), wal.read_bytes() if wal.exists() else b""
