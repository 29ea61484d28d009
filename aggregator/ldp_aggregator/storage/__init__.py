"""Persistence: tables, engine factory, migrations and the SQL of each use case."""

# The jobs table lives in its own module on the same metadata; importing it here
# registers it whenever any part of the storage (and so the metadata) is used.
from ldp_aggregator.storage import jobs as _jobs  # noqa: F401
