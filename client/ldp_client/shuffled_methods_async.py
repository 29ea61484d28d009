# The single source of both clients' shuffled upload: scripts/unasync.py writes
# shuffled_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""Uploads of a shuffled collection (docs/shuffler.md) for
:class:`~ldp_client.async_client.AsyncLDPClient`, kept apart so that the client module
stays readable in one sitting.

:class:`AsyncShuffledMethods` is a mixin: the client supplies the transport (``_call``)
and its verified configs (``get_config``); sealing and the requests are
:mod:`ldp_client.sealed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ldp_client import batching, sealed
from ldp_client.protocol import ApiCall
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.reports import Report

__all__ = ["AsyncShuffledMethods"]

T = TypeVar("T")


class AsyncShuffledMethods:
    """Seal reports to the aggregator's key and hand them to a shuffler."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def get_config(self, name: str) -> CollectionConfig:
        """The verified config of ``name`` (the client defines it)."""
        raise NotImplementedError

    async def submit_shuffled(
        self,
        name: str,
        reports: Sequence[Report],
        *,
        shuffler_url: str,
        batch_size: int = sealed.MAX_SEALED_PER_REQUEST,
    ) -> int:
        """Seal already perturbed reports of a shuffled collection to the aggregator's
        key and send them to the shuffler at ``shuffler_url``; how many it acknowledged.

        The key is fetched from the aggregator and checked against the config this
        client verified (docs/shuffler.md). The shuffler answers for holding the blobs
        only: the aggregator judges the reports when a batch reaches it.
        """
        batching.check_batch_size(batch_size)
        config = await self.get_config(name)
        key = await self._call(sealed.sealing_key_call(name, config.config_hash))
        blobs = sealed.seal_reports(config, key, reports)
        held = 0
        for start in range(0, len(blobs), batch_size):
            chunk = blobs[start : start + batch_size]
            held += await self._call(sealed.sealed_upload_call(shuffler_url, name, chunk))
        return held
