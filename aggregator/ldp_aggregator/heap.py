"""Keep freed memory in the server's heap, so a large array reuses pages already mapped.

The statistics of a sketch attribute (``flh``, ``pem``, ``cms``: ``k·g`` counters per
level, up to 2^19 of them) are a few MiB of int64. Each upload batch makes a handful of
such arrays (its delta, the shard plus the delta, the stored form), and the heavy-hitter
search many more. glibc's ``malloc`` serves an allocation of more than its mmap
threshold (128 KiB at start, raised at most to the size of a freed mapping) with a fresh
``mmap`` and gives it back with ``munmap`` when freed, and it returns the top of the heap
to the system when more than its trim threshold is free. A new mapping costs one page
fault per 4 KiB page written, more than the arithmetic on the page on a virtual machine:
``python bench/heap.py`` measured a ``pem`` batch's ``decode_reports`` 1.4-2.0x faster
with this setting, its writer transaction 1.04-1.09x (docs/benchmarks.md, open domains).

:func:`retain_freed_memory` raises both thresholds (``mallopt``) for the life of the
process: allocations under :data:`MMAP_THRESHOLD` come from the heap, and up to
:data:`TRIM_THRESHOLD` of free heap is kept rather than handed back. The price is memory:
a process's resident size does not shrink below its peak by more than that once a large
query is done. On a C library other than glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import logging

logger = logging.getLogger(__name__)

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "retain_freed_memory"]

MMAP_THRESHOLD = 32 * 1024 * 1024
"""Allocations at least this large still get a mapping of their own (glibc's maximum for
the threshold on 64-bit systems)."""
TRIM_THRESHOLD = 64 * 1024 * 1024
"""Free memory at the top of a heap kept for the next allocations."""
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
"""``mallopt`` parameter numbers of glibc's ``malloc.h``."""


def retain_freed_memory(library: str | None = None) -> bool:
    """Raise glibc's mmap and trim thresholds for this process; whether both were set.

    ``library`` names a shared library to take ``mallopt`` from; by default the symbols
    this process already uses (its own ``malloc``'s)."""
    try:
        mallopt = ctypes.CDLL(library).mallopt
    except (OSError, AttributeError, TypeError):
        logger.debug("no mallopt in %s: the heap keeps its defaults", library or "this process")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
