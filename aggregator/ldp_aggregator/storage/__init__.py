"""Persistence: tables, engine factory, migrations and the SQL of each use case."""
