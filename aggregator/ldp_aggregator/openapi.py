"""The app's OpenAPI document, made to say what the app does.

FastAPI derives the document from the routes; four things it cannot know are set
right here, once, when the document is first asked for:

- error answers are ``application/problem+json`` only (FastAPI also lists
  ``application/json`` for any response with a model);
- every route with a JSON body may answer ``415 unsupported-media-type``
  (:mod:`ldp_aggregator.media_types`, a dependency of the whole app);
- ``/metrics`` needs no token when no metrics token is configured (its dependency
  declares the bearer scheme either way);
- numbers whose range the code checks itself state it as schema bounds
  (:func:`ldp_shared.wire.base.checked_range`, set where they are declared, not here).

``tests/aggregator/test_openapi.py`` runs schemathesis over the document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from ldp_aggregator.deps import AppState
from ldp_aggregator.media_types import document_415
from ldp_aggregator.problems import PROBLEM_MEDIA_TYPE


def _problem_media_types_only(schema: dict[str, Any]) -> None:
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if str(status)[0] in "45" and PROBLEM_MEDIA_TYPE in content:
                    content.pop("application/json", None)


def _open_metrics(schema: dict[str, Any], state: AppState) -> None:
    if state.tokens.metrics is not None:
        return
    operation = schema.get("paths", {}).get("/metrics", {}).get("get")
    if operation is not None:
        operation["security"] = []  # open: no token is asked for, any is ignored
        for status in ("401", "403"):
            operation.get("responses", {}).pop(status, None)


def document_truthfully(app: FastAPI) -> None:
    """Make ``app.openapi`` correct FastAPI's document as the module docstring says."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            _problem_media_types_only(schema)
            document_415(schema)
            state = app.state.ldp
            assert isinstance(state, AppState)
            _open_metrics(schema, state)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
