"""An API route's query is read whole: a parameter it does not take, or one given twice,
is answered ``422 invalid-query`` instead of being ignored.

FastAPI reads the parameters a route declares and passes over the rest, and of a
parameter given twice it keeps the last. So ``heavy-hitters?...&values=a`` (a parameter
of ``frequencies``) answered 200 as if it had not been asked, and ``values=the&values=and``
estimated ``and`` alone. :func:`require_known_query`, a dependency of every route, refuses
both on the API (``/v1/``); the dashboard's pages keep their own, looser reading of links.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from ldp_shared.errors import InvalidQueryError

API_PREFIX = "/v1/"


def _names(dependant: Dependant) -> Iterator[str]:
    for field in dependant.query_params:
        yield field.alias
    for dependency in dependant.dependencies:
        yield from _names(dependency)


def taken_by(route: APIRoute) -> frozenset[str]:
    """The query parameters ``route`` reads, its dependencies' included (a few fields:
    read again for each request that has a query)."""
    return frozenset(_names(route.dependant))


async def require_known_query(request: Request) -> None:
    """Refuse an API query that names a parameter twice, or one its route does not take."""
    route = request.scope.get("route")
    if (
        not request.scope.get("query_string")
        or not isinstance(route, APIRoute)
        or not request.scope["path"].startswith(API_PREFIX)
    ):
        return
    given = Counter(name for name, _ in request.query_params.multi_items())
    twice = sorted(name for name, times in given.items() if times > 1)
    if twice:
        raise InvalidQueryError(
            f"query parameter {twice[0]!r} is given {given[twice[0]]} times; give it once"
        )
    taken = taken_by(route)
    unknown = sorted(set(given) - taken)
    if unknown:
        takes = ", ".join(sorted(taken)) or "none"
        raise InvalidQueryError(
            f"{route.path} takes no query parameter {unknown[0]!r} (it takes: {takes})"
        )
