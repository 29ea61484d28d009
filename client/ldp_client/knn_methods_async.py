# The single source of both clients' kNN methods: scripts/unasync.py writes
# knn_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The kNN methods of :class:`~ldp_client.async_client.AsyncLDPClient`, kept apart so that
the client module stays readable in one sitting.

:class:`AsyncKnnMethods` is a mixin: the client supplies the transport (``_call``), the
config (``get_config``) and the upload (``submit``); the requests are
:mod:`ldp_client.knn`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from ldp_client import knn
from ldp_client.batching import DEFAULT_BATCH_SIZE, SubmitSummary
from ldp_client.protocol import ApiCall
from ldp_shared.codec import Record
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.knn import KnnClassification

__all__ = ["AsyncKnnMethods"]

T = TypeVar("T")


class AsyncKnnMethods:
    """Report to a kNN collection and classify query points from it."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def get_config(self, name: str) -> CollectionConfig:
        """The collection's public config (the client defines it)."""
        raise NotImplementedError

    async def submit(
        self,
        name: str,
        records: Iterable[Record],
        *,
        batch_size: int,
    ) -> SubmitSummary:
        """Privatize and upload records (the client defines it)."""
        raise NotImplementedError

    async def submit_knn(
        self,
        name: str,
        points: Any,
        labels: Sequence[str],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> SubmitSummary:
        """Report raw feature rows (a category as its value's index) and their classes to
        a kNN collection: each becomes its cells in the public hyperplanes' tables, and is
        then privatized and sent like any record (:meth:`submit`); no raw feature leaves.
        """
        records = knn.knn_records(await self.get_config(name), points, labels)
        return await self.submit(name, records, batch_size=batch_size)

    async def classify_knn(self, name: str, points: Any, *, k: int = 25) -> KnnClassification:
        """Classify query points (analyst token): per point the predicted class, the
        debiased class scores and their standard errors."""
        return await self._call(knn.classify_knn_call(name, points, k))
