"""Shuffled collections on the device: seal each report to the aggregator's key and send
the blobs to the shuffler (docs/shuffler.md). Requests only, no I/O (the clients do it).

The sealed bytes are the report's JSON, exactly the object a direct upload carries in
``reports``; :mod:`ldp_shared.sealing` binds each blob to the collection's name, its
config hash and the key id. The key a server publishes is accepted only when its id is
the hash of its bytes and it names the config hash the device verified itself
(:func:`~ldp_shared.collection.verify_config`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError
from ldp_shared.sealing import SealingKey, seal_report, to_text
from ldp_shared.wire.reports import Report

__all__ = [
    "MAX_SEALED_PER_REQUEST",
    "refuse_direct",
    "seal_reports",
    "sealed_upload_call",
    "sealing_key_call",
]

MAX_SEALED_PER_REQUEST = 1000


def refuse_direct(config: CollectionConfig) -> None:
    """:class:`ConfigurationError` for a shuffled collection: its aggregator refuses
    direct uploads, so the SDK says so before a record is perturbed or charged."""
    if config.spec.shuffled:
        raise ConfigurationError(
            f"collection {config.name!r} is shuffled: send its reports with"
            " submit_shuffled(..., shuffler_url=...), not directly to the aggregator"
        )


def sealing_key_call(name: str, config_hash: str) -> ApiCall[SealingKey]:
    """``GET /v1/collections/{name}/sealing-key``, checked against ``config_hash``."""

    def parse(content: bytes) -> SealingKey:
        document = json.loads(content)
        if document.get("config_hash") != config_hash:
            raise ConfigurationError(
                f"collection {name!r}: the sealing key is published for another config"
            )
        return SealingKey.published(str(document["key_id"]), str(document["public_key"]))

    return ApiCall("GET", collection_path(name) + "/sealing-key", parse)


def seal_reports(config: CollectionConfig, key: SealingKey, reports: Sequence[Report]) -> list[str]:
    """Each report sealed for ``config`` (unpadded base64url blobs, in the same order)."""
    if not config.spec.shuffled:
        raise ConfigurationError(
            f"collection {config.name!r} is not shuffled: upload its reports directly"
        )
    return [
        to_text(seal_report(r.model_dump_json().encode(), key, config.name, config.config_hash))
        for r in reports
    ]


def sealed_upload_call(shuffler_url: str, name: str, blobs: list[str]) -> ApiCall[int]:
    """``POST {shuffler}/v1/collections/{name}/sealed-reports``: how many it now holds.

    Safe to retry: a blob sent twice is held and forwarded twice, and the aggregator
    counts its report once (by the report id inside).
    """
    body = json.dumps({"blobs": blobs}).encode("utf-8")
    url = shuffler_url.rstrip("/") + collection_path(name) + "/sealed-reports"
    return ApiCall("POST", url, lambda content: int(json.loads(content)["held"]), body=body)
