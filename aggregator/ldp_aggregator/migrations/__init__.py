"""Alembic environment and revisions (run by :func:`ldp_aggregator.storage.migrate.upgrade`)."""
