"""One sentence for an aggregator the client cannot connect to, the same from both clients.

httpx words a failed connection differently per backend: the sync client repeats the
socket's error (``[Errno 111] Connection refused``), the async one anyio's summary
(``All connection attempts failed``) with the socket's errors further down its chain.
:func:`cannot_connect` finds the socket's error wherever it is and says
``cannot connect to http://host:port: connection refused; <request> was not sent``.
"""

from __future__ import annotations

import errno
import os
import socket

import httpx

__all__ = ["cannot_connect"]

_REASONS = {
    errno.ECONNREFUSED: "connection refused (is the aggregator running on that port?)",
    errno.ETIMEDOUT: "the connection timed out",
    errno.EHOSTUNREACH: "no route to the host",
    errno.ENETUNREACH: "the network is unreachable",
}


def _socket_error(exc: BaseException) -> OSError | None:
    """The first :class:`OSError` with an errno in ``exc``'s causes, contexts and groups."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            return current
        pending.extend(getattr(current, "exceptions", ()))  # an ExceptionGroup's members
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def _reason(exc: httpx.ConnectError) -> str:
    found = _socket_error(exc)
    if isinstance(found, socket.gaierror):
        return f"the host name cannot be resolved ({found.strerror})"
    if found is None or found.errno is None:
        return str(exc) or type(exc).__name__
    return _REASONS.get(found.errno) or os.strerror(found.errno)


def cannot_connect(request: httpx.Request, exc: httpx.ConnectError) -> str:
    """``cannot connect to <scheme://host:port>: <reason>; <request> was not sent``."""
    origin = f"{request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')}"
    return (
        f"cannot connect to {origin}: {_reason(exc)}; {request.method} {request.url} was not sent"
    )
