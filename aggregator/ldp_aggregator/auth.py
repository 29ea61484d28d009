"""Bearer-token roles: ``admin`` (every right) and ``analyst`` (read analyses), and the
metrics token that opens ``/metrics`` only."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ldp_aggregator.deps import app_state
from ldp_aggregator.settings import Role
from ldp_shared.errors import AuthenticationError, PermissionDeniedError

_bearer = HTTPBearer(auto_error=False, description="the admin or analyst token")

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def authenticate(request: Request, credentials: Credentials) -> Role:
    """The role of the request's bearer token; 401 when there is none or it is unknown."""
    if credentials is None:
        raise AuthenticationError("send an 'Authorization: Bearer <token>' header")
    role = app_state(request).tokens.role_of(credentials.credentials)
    if role is None:
        raise AuthenticationError("the bearer token matches no role")
    return role


def require_analyst(role: Annotated[Role, Depends(authenticate)]) -> Role:
    """Analyst or admin."""
    return role


def require_admin(role: Annotated[Role, Depends(authenticate)]) -> Role:
    """Admin only; 403 for an analyst."""
    if role != "admin":
        raise PermissionDeniedError("this needs the admin role")
    return role


def require_metrics_reader(request: Request, credentials: Credentials) -> None:
    """Open when no metrics token is configured; else the metrics or the admin token.

    401 without a token or with an unknown one, 403 with the analyst's.
    """
    tokens = app_state(request).tokens
    if tokens.metrics is None:
        return
    if credentials is None:
        raise AuthenticationError("/metrics needs an 'Authorization: Bearer <token>' header")
    if tokens.reads_metrics(credentials.credentials):
        return
    if tokens.role_of(credentials.credentials) == "analyst":
        raise PermissionDeniedError("/metrics needs the metrics or the admin token")
    raise AuthenticationError("the bearer token does not open /metrics")


def require_shuffler(request: Request, credentials: Credentials) -> None:
    """The shuffler's token only (docs/shuffler.md): 401 without it, 403 for a role's."""
    tokens = app_state(request).tokens
    if credentials is None:
        raise AuthenticationError("send the shuffler's 'Authorization: Bearer <token>' header")
    if tokens.is_shuffler(credentials.credentials):
        return
    if tokens.role_of(credentials.credentials) is not None:
        raise PermissionDeniedError("shuffled batches need the shuffler token")
    raise AuthenticationError("the bearer token is not the shuffler's")
