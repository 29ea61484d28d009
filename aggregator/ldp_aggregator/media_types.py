"""JSON-body routes take JSON only: a body sent as another media type is answered 415.

FastAPI reads a body as JSON only when its ``Content-Type`` says so
(``application/json`` or ``application/<x>+json``); any other body reaches validation as
raw bytes and was refused with a 422 about the body's *shape* ("Input should be a valid
dictionary"), which sends a user after a defect their JSON does not have. curl's
``-d`` sends ``application/x-www-form-urlencoded``, so that is the usual case.

:func:`require_json_media_type`, a dependency of every route, answers such a request
``415 unsupported-media-type`` instead, before the body is validated. Routes without a
body, bodies that are empty (the 400 "needs a JSON body" stays), and the dashboard's
form routes are left alone. :func:`document_415` adds the answer to the OpenAPI
responses of the routes it applies to.
"""

from __future__ import annotations

import email.message
from typing import Any

from fastapi import Request
from fastapi import params as fastapi_params
from fastapi.routing import APIRoute

from ldp_aggregator.problems import PROBLEM_MEDIA_TYPE
from ldp_shared.errors import UnsupportedMediaTypeError

JSON_MEDIA_TYPE = "application/json"

_DESCRIPTION = "The body was not sent as Content-Type: application/json"


def is_json_media_type(content_type: str | None) -> bool:
    """Whether FastAPI parses a body of this ``Content-Type`` as JSON."""
    if not content_type:
        return False
    if content_type.partition(";")[0].strip().lower() == JSON_MEDIA_TYPE:
        return True  # what every JSON client sends: no header parsing on the upload path
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def takes_json_body(route: object) -> bool:
    """Whether ``route`` declares a JSON request body (not a form, not none)."""
    if not isinstance(route, APIRoute) or route.body_field is None:
        return False
    return not isinstance(route.body_field.field_info, fastapi_params.Form)


async def require_json_media_type(request: Request) -> None:
    """Refuse a non-empty body of a JSON-body route that is not declared JSON."""
    if not takes_json_body(request.scope.get("route")):
        return
    content_type = request.headers.get("content-type")
    if is_json_media_type(content_type) or not await request.body():
        return
    sent = f"Content-Type: {content_type}" if content_type else "no Content-Type"
    raise UnsupportedMediaTypeError(
        f"the body was sent with {sent}; this route takes JSON only: send it with"
        f" Content-Type: {JSON_MEDIA_TYPE}"
    )


def document_415(schema: dict[str, Any]) -> None:
    """Add the 415 problem to every operation of ``schema`` whose body is JSON."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            if JSON_MEDIA_TYPE not in content:
                continue
            operation.setdefault("responses", {})["415"] = {
                "description": _DESCRIPTION,
                "content": {
                    PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}
                },
            }


__all__ = [
    "JSON_MEDIA_TYPE",
    "document_415",
    "is_json_media_type",
    "require_json_media_type",
    "takes_json_body",
]
