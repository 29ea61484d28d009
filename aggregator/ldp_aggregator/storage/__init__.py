"""Persistence: tables, engine factory, migrations and the SQL of each use case."""

# The jobs and training tables live in their own modules on the same metadata; importing
# them here registers them whenever any part of the storage (and so the metadata) is used.
from ldp_aggregator.storage import jobs as _jobs  # noqa: F401
from ldp_aggregator.storage import sessions as _sessions  # noqa: F401
from ldp_aggregator.storage import training as _training  # noqa: F401
