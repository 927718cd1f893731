-- Ledger schema, version 3 (additive): the copy's load-aware throttle decisions. Same portable conventions as 001.
-- The cut-over and rollback runs need no table of their own: they are runs (migration_runs, dag_id
-- hbase_cutover / hbase_rollback, params_json naming the migration or cut-over run), with their steps in
-- migration_phases and their peers' changes in peer_notes.

-- One decision of the load-aware throttle per sample of the source's region servers, written by the copy's
-- driver. Keyed by copy_id as copy_partitions is (a run names its copy in migration_runs.copy_id).
CREATE TABLE IF NOT EXISTS throttle_decisions (
    copy_id     TEXT             NOT NULL,
    table_name  TEXT             NOT NULL,
    decided_ms  BIGINT           NOT NULL,
    state       TEXT             NOT NULL,   -- full | slow | paused | aborted
    factor      DOUBLE PRECISION NOT NULL,   -- fraction of the copy's natural rate (0 while paused)
    reason      TEXT             NOT NULL,   -- which metric passed which limit, on which server
    load_json   TEXT             NOT NULL,   -- JSON {metric: {value, server}}: the worst figure of each watched metric
    PRIMARY KEY (copy_id, table_name, decided_ms)
);
