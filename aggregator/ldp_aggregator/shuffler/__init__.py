"""The shuffler (``ldpcollect shuffle``): a separate party between devices and the
aggregator that holds sealed reports and forwards them in batches in random order.

It imports only :mod:`ldp_shared`, FastAPI and httpx, never the aggregator, so it can run
under another operator (docs/shuffler.md).
"""
