"""The tables of the device's ledger (:mod:`ldp_client.ledger`), one SQLite file.

``spending``, ``participations`` and ``memo`` are described by the ledger;
``distinct_values`` (one row per distinct memoised key of a longitudinal attribute,
charged its ε∞ once) by :mod:`ldp_client.longitudinal`. Every table is created if
missing, so a ledger written before one existed gains it when opened.
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS spending (
    id INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    reports INTEGER NOT NULL CHECK (reports > 0),
    charged INTEGER NOT NULL CHECK (charged >= 0 AND charged <= reports),
    epsilon_per_record REAL NOT NULL CHECK (epsilon_per_record >= 0),
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    made_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS spending_by_config ON spending (config_hash);
CREATE INDEX IF NOT EXISTS spending_by_collection ON spending (collection);
CREATE TABLE IF NOT EXISTS participations (
    collection TEXT NOT NULL,
    job TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL CHECK (delta >= 0),
    made_at TEXT NOT NULL,
    PRIMARY KEY (collection, job)
);
CREATE TABLE IF NOT EXISTS memo (
    config_hash TEXT NOT NULL,
    record_key BLOB NOT NULL,
    bits BLOB NOT NULL,
    PRIMARY KEY (config_hash, record_key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS distinct_values (
    config_hash TEXT NOT NULL,
    collection TEXT NOT NULL,
    attribute TEXT NOT NULL,
    value_key BLOB NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    made_at TEXT NOT NULL,
    PRIMARY KEY (config_hash, attribute, value_key)
) WITHOUT ROWID;
"""
