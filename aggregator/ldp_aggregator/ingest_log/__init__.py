"""Log mode: ingestion through a replicated log (NATS JetStream), then fold workers.

``ldpcollect serve --log nats://h1:p1,h2:p2,h3:p3`` judges every batch as direct mode
does and publishes its new reports to a JetStream stream
(:mod:`~ldp_aggregator.ingest_log.publisher`); ``ldpcollect fold`` workers write them
to the database in batches (:mod:`~ldp_aggregator.ingest_log.fold`). docs/log-mode.md
says what each answer promises in this mode.
"""
