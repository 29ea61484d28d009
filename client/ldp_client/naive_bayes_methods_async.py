# The single source of both clients' naive Bayes methods: scripts/unasync.py writes
# naive_bayes_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The naive Bayes methods of :class:`~ldp_client.async_client.AsyncLDPClient`, kept
apart so that the client module stays readable in one sitting.

:class:`AsyncNaiveBayesMethods` is a mixin: the client supplies the transport
(``_call``); the requests are :mod:`ldp_client.naive_bayes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ldp_client import naive_bayes
from ldp_client.protocol import ApiCall
from ldp_shared.wire.naive_bayes import (
    CategoricalNBExport,
    CountRepair,
    NaiveBayesModel,
    NaiveBayesPredictions,
)

__all__ = ["AsyncNaiveBayesMethods"]

T = TypeVar("T")


class AsyncNaiveBayesMethods:
    """Train, read, apply and export naive Bayes models of label collections."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def train_naive_bayes(
        self,
        name: str,
        *,
        alpha: float = 1.0,
        repair: CountRepair = "posterior-mean",
        confidence: float = 0.95,
    ) -> NaiveBayesModel:
        """Train a naive Bayes model of a label collection and store it (analyst token).

        Trained from the collection's sufficient statistics only (Yilmaz et al. 2019);
        returns priors, conditional probability tables, the raw joint counts with their
        standard errors and the smoothing applied. Raises
        :class:`~ldp_shared.errors.InsufficientReportsError` below the release minimum.
        """
        call = naive_bayes.train_naive_bayes_call(name, alpha, repair, confidence)
        return await self._call(call)

    async def get_naive_bayes(self, name: str, model_id: str) -> NaiveBayesModel:
        """A stored naive Bayes model (analyst token)."""
        return await self._call(naive_bayes.get_naive_bayes_call(name, model_id))

    async def predict_naive_bayes(
        self, name: str, model_id: str, records: Sequence[Mapping[str, Any]]
    ) -> NaiveBayesPredictions:
        """Classify records (the analyst's own, sent in the clear, never stored) with a model."""
        return await self._call(naive_bayes.predict_naive_bayes_call(name, model_id, records))

    async def export_naive_bayes(self, name: str, model_id: str) -> CategoricalNBExport:
        """A model as the attributes of scikit-learn's ``CategoricalNB`` (analyst token).

        ``ldp_shared.analyses.naive_bayes.to_categorical_nb`` turns it into a fitted estimator.
        """
        return await self._call(naive_bayes.export_naive_bayes_call(name, model_id))
