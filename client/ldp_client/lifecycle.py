"""The lifecycle endpoints seen from the client, without I/O (shared by both clients).

An admin closes a collection to new reports (uploads are then refused with
:class:`~ldp_shared.errors.CollectionClosedError`), reopens it, or deletes it with all its
reports, statistics, models and jobs; the deletion must repeat the collection's name as
``confirm``. An admin also sets how many days reports keep their bits (a
:class:`~ldp_shared.wire.lifecycle.Retention`). An analyst reads whether it is open and
how many reports it holds.
"""

from __future__ import annotations

from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.errors import InvalidQueryError
from ldp_shared.validation import validated
from ldp_shared.wire.lifecycle import CollectionStatus, Retention


def collection_status_call(name: str) -> ApiCall[CollectionStatus]:
    """``GET /v1/collections/{name}/status`` (analyst)."""
    return ApiCall(
        "GET", collection_path(name) + "/status", CollectionStatus.model_validate_json, auth=True
    )


def set_closed_call(name: str, closed: bool) -> ApiCall[CollectionStatus]:
    """``POST /v1/collections/{name}/close`` or ``.../reopen`` (admin; idempotent, so
    retried like a read)."""
    action = "/close" if closed else "/reopen"
    return ApiCall(
        "POST", collection_path(name) + action, CollectionStatus.model_validate_json, auth=True
    )


def _retention(days: int | None) -> Retention:
    """The checked body: :class:`InvalidQueryError` (before any request) for a number of
    days the aggregator would refuse."""
    return validated(Retention, {"days": days}, InvalidQueryError, "retention")


def set_retention_call(name: str, days: int | None) -> ApiCall[CollectionStatus]:
    """``PUT /v1/collections/{name}/retention`` (admin; idempotent)."""
    return ApiCall(
        "PUT",
        collection_path(name) + "/retention",
        CollectionStatus.model_validate_json,
        body=_retention(days).model_dump_json().encode("utf-8"),
        auth=True,
    )


def _no_content(_content: bytes) -> None:
    return None


def delete_collection_call(name: str, confirm: str) -> ApiCall[None]:
    """``DELETE /v1/collections/{name}?confirm=...`` (admin).

    Not repeated after a failure that may have reached the application: a repeat of a
    deletion that took place would answer 404.
    """
    return ApiCall(
        "DELETE",
        collection_path(name),
        _no_content,
        params={"confirm": confirm},
        auth=True,
        idempotent=False,
    )
