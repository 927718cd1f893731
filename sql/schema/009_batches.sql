-- Ledger schema, version 9: a run's tables in batches, each with its own peer (issue 42). Same portable conventions
-- as 001.

-- The run's batches as planned once (hbase_migration/migration/batches.py): a retried plan finds them here, so a
-- batch's peer never changes under a running migration.
CREATE TABLE IF NOT EXISTS migration_batches (
    run_id       TEXT    NOT NULL REFERENCES migration_runs (run_id),
    batch        TEXT    NOT NULL,   -- b1, b2, ...
    batch_index  INTEGER NOT NULL,   -- the mapped task group's map index
    peer_id      TEXT    NOT NULL,   -- the batch's own peer (the run's peer_id when the run is one batch)
    tables_json  TEXT    NOT NULL,   -- JSON list of its tables
    bytes        BIGINT  NOT NULL,   -- store file bytes the sizing found (0: not sized)
    t0_ms        BIGINT,             -- its peer added: its own T0
    planned_ms   BIGINT  NOT NULL,
    PRIMARY KEY (run_id, batch)
);

-- Batches copying side by side: a batch holds one of the run's `batches_at_once` numbered slots from its peer's
-- addition to the end of its copies; the primary key makes taking one atomic on SQLite and PostgreSQL alike.
CREATE TABLE IF NOT EXISTS batch_slots (
    run_id    TEXT    NOT NULL,
    slot      INTEGER NOT NULL,
    batch     TEXT    NOT NULL,
    taken_ms  BIGINT  NOT NULL,
    PRIMARY KEY (run_id, slot)
);
CREATE UNIQUE INDEX IF NOT EXISTS batch_slots_batch ON batch_slots (run_id, batch);
