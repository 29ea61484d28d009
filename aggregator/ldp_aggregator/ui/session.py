"""Signing in to the dashboard and protecting its forms.

The analyst (or admin) signs in by pasting their bearer token into a form. The server
checks it against the API's token digests and opens a server-side session
(:mod:`ldp_aggregator.storage.sessions`): a random id, kept hashed in the database, that
ends after :data:`SESSION_SECONDS`, at sign-out (the row is deleted, so the old cookie
opens nothing), or when the token that opened it is retired from the settings. The
cookie :data:`SESSION_COOKIE` carries the id, never the bearer token (``HttpOnly``, so no
script reads it; ``SameSite=Strict``, so no other site's page sends it; ``Secure`` when
the request came over TLS; path ``/ui``, so it goes nowhere else); the id is no bearer
token for the API. Replicas sharing a database share the sessions.

Every form that changes state carries a CSRF token: a random nonce, set in the cookie
:data:`CSRF_COOKIE` (same flags) and repeated in the form's hidden field; a POST whose
field does not equal its cookie, or whose ``Origin`` names another site, is refused
with 403 (the double-submit pattern; ``SameSite=Strict`` alone already keeps
cross-site requests from carrying the session). The nonce is renewed at sign-in and
sign-out.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from fastapi import Request, Response

from ldp_aggregator.deps import app_state
from ldp_aggregator.settings import Role, token_digest
from ldp_aggregator.storage.sessions import close_session, live_session, open_session
from ldp_shared.errors import PermissionDeniedError

SESSION_COOKIE = "ldp_session"
CSRF_COOKIE = "ldp_csrf"
CSRF_FIELD = "csrf"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 8 * 3600
"""A dashboard session ends eight hours after sign-in (a working day), or at sign-out."""


def signed_in_role(request: Request) -> Role | None:
    """The role of the session cookie's live session, or ``None`` (no cookie, an id of no
    session, a session that ended or whose token was retired)."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id:
        return None
    state = app_state(request)
    session = live_session(state.engine, session_id)
    if session is None:
        return None
    return state.tokens.role_of_digest(session.token_sha256)


def csrf_token(request: Request) -> str:
    """The request's CSRF nonce: its cookie's, or a new one that
    :func:`send_csrf_cookie` sets on the response."""
    known = getattr(request.state, "csrf", None)
    if isinstance(known, str):
        return known
    nonce = request.cookies.get(CSRF_COOKIE) or ""
    if len(nonce) < 32:
        nonce = secrets.token_urlsafe(32)
        request.state.csrf_new = True
    request.state.csrf = nonce
    return nonce


def renew_csrf(request: Request) -> str:
    """A fresh nonce for this response (at sign-in and sign-out)."""
    request.state.csrf = secrets.token_urlsafe(32)
    request.state.csrf_new = True
    return str(request.state.csrf)


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(
        name, value, path=COOKIE_PATH, httponly=True, samesite="strict", secure=secure
    )


def send_csrf_cookie(request: Request, response: Response) -> None:
    """Set the CSRF cookie on ``response`` if this request made a new nonce."""
    if getattr(request.state, "csrf_new", False):
        _set_cookie(request, response, CSRF_COOKIE, str(request.state.csrf))


def start_session(request: Request, response: Response, token: str) -> None:
    """Open a session for the (checked) bearer ``token``; its id goes in the cookie."""
    session_id = open_session(app_state(request).engine, token_digest(token), SESSION_SECONDS)
    _set_cookie(request, response, SESSION_COOKIE, session_id)


def end_session(request: Request, response: Response) -> None:
    """Revoke the cookie's session on the server and expire the session and CSRF
    cookies."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        close_session(app_state(request).engine, session_id)
    secure = request.url.scheme == "https"
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(
            name, path=COOKIE_PATH, httponly=True, samesite="strict", secure=secure
        )


def check_csrf(request: Request, submitted: object) -> None:
    """Refuse (403) a POST without the form's CSRF token or from another origin."""
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        ours = urlsplit(str(request.base_url))
        theirs = urlsplit(origin)
        if (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc):
            raise PermissionDeniedError("this form was sent from another site")
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    given = submitted if isinstance(submitted, str) else ""
    if not cookie or not given or not hmac.compare_digest(cookie.encode(), given.encode()):
        raise PermissionDeniedError(
            "the form's CSRF token is missing or stale: reload the page and send it again"
        )
