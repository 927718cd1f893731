-- Ledger schema, version 1. Portable SQL: the same text runs on SQLite (>= 3.24) and PostgreSQL (>= 9.5),
-- so there is no PostgreSQL variant. Conventions, chosen for portability:
--   * instants are BIGINT milliseconds since the epoch (HBase's own unit; T0 compares with cell timestamps);
--   * flags are INTEGER 0/1 (no BOOLEAN: SQLite has none and PostgreSQL will not take 1 for one);
--   * JSON is TEXT (JSONB would be PostgreSQL only);
--   * row keys are bytes in HBase: they are stored as lower-case hex TEXT, '' meaning an open end;
--   * natural primary keys only (no SERIAL/AUTOINCREMENT), so every write can be an idempotent upsert.
-- Applied by hbase_migration/ledger.py inside one transaction together with its schema_version row.

-- One migration run (one Airflow DAG run, or one CLI run).
CREATE TABLE IF NOT EXISTS migration_runs (
    run_id        TEXT   NOT NULL PRIMARY KEY,
    dag_id        TEXT   NOT NULL,
    plan_name     TEXT   NOT NULL,
    source_key    TEXT   NOT NULL,   -- HBase cluster key quorum:port:/znode-parent
    target_key    TEXT   NOT NULL,
    peer_id       TEXT   NOT NULL,
    tables_json   TEXT   NOT NULL,   -- JSON list of table names, in plan order
    params_json   TEXT   NOT NULL,   -- JSON object of the run's parameters (no secrets)
    copy_id       TEXT   NOT NULL,   -- the copy_partitions.copy_id of this run's full copy
    t0_ms         BIGINT,            -- the instant the peer was added: edits from here on are in the backlog
    status        TEXT   NOT NULL,   -- running | success | failed
    started_ms    BIGINT NOT NULL,
    ended_ms      BIGINT
);
CREATE INDEX IF NOT EXISTS migration_runs_started ON migration_runs (started_ms);

-- Per-table phases; table_name '*' holds a phase that covers every table of the run (add_peer, catch_up).
CREATE TABLE IF NOT EXISTS migration_phases (
    run_id        TEXT   NOT NULL REFERENCES migration_runs (run_id),
    table_name    TEXT   NOT NULL,
    phase         TEXT   NOT NULL,   -- preflight | create_tables | add_peer | copy | enable_peer | catch_up | verify | report
    status        TEXT   NOT NULL,   -- pending | running | success | failed | skipped
    started_ms    BIGINT,            -- first time it went running; kept across retries
    ended_ms      BIGINT,            -- last time it reached success/failed/skipped; cleared when it runs again
    detail        TEXT,              -- what the latest status change said (error text, counts)
    updated_ms    BIGINT NOT NULL,
    PRIMARY KEY (run_id, table_name, phase)
);

-- Finished copy partitions: what a resumed copy skips. Keyed by copy_id, not run_id, because a copy can run
-- on its own (CLI, backfill DAG); a run names its copy in migration_runs.copy_id.
CREATE TABLE IF NOT EXISTS copy_partitions (
    copy_id       TEXT   NOT NULL,
    table_name    TEXT   NOT NULL,
    partition_id  TEXT   NOT NULL,
    start_row_hex TEXT   NOT NULL,   -- hex of the first row key (inclusive), '' = start of table
    stop_row_hex  TEXT   NOT NULL,   -- hex of the stop row key (exclusive), '' = end of table
    row_count     BIGINT NOT NULL,
    cell_count    BIGINT NOT NULL,
    byte_count    BIGINT NOT NULL,
    started_ms    BIGINT,
    finished_ms   BIGINT NOT NULL,
    attempt       INTEGER NOT NULL,  -- which attempt finished it (1 = first try)
    PRIMARY KEY (copy_id, table_name, partition_id)
);

-- Replication lag: one row per (region server, queue) per sample; one sample = one instant for all queues.
CREATE TABLE IF NOT EXISTS lag_samples (
    run_id                    TEXT    NOT NULL REFERENCES migration_runs (run_id),
    peer_id                   TEXT    NOT NULL,
    sampled_ms                BIGINT  NOT NULL,
    server                    TEXT    NOT NULL,   -- region server name host,port,startcode
    queue_id                  TEXT    NOT NULL,   -- peer id, or <peer>-<dead server>... for a recovered queue
    recovered                 INTEGER NOT NULL,   -- 1 for a recovered queue
    size_of_log_queue         BIGINT  NOT NULL,
    age_of_last_shipped_op_ms BIGINT  NOT NULL,
    shipped_ops               BIGINT  NOT NULL,
    PRIMARY KEY (run_id, peer_id, sampled_ms, server, queue_id)
);

-- HDFS quota pressure on oldWALs and on every ancestor carrying a quota. NULL quota = none set (HDFS's -1).
CREATE TABLE IF NOT EXISTS quota_samples (
    run_id                  TEXT   NOT NULL REFERENCES migration_runs (run_id),
    path                    TEXT   NOT NULL,
    sampled_ms              BIGINT NOT NULL,
    space_consumed          BIGINT NOT NULL,   -- bytes including replication
    space_quota             BIGINT,
    ns_consumed             BIGINT NOT NULL,   -- directories + files
    ns_quota                BIGINT,
    growth_bytes_per_s      DOUBLE PRECISION,  -- NULL until two samples exist
    projected_exhaustion_ms BIGINT,            -- NULL: no quota, or not growing
    PRIMARY KEY (run_id, path, sampled_ms)
);

-- Verification of one table over one time window [window_start_ms, window_end_ms); VerifyReplication's counters.
CREATE TABLE IF NOT EXISTS verification_results (
    run_id            TEXT   NOT NULL REFERENCES migration_runs (run_id),
    table_name        TEXT   NOT NULL,
    window_start_ms   BIGINT NOT NULL,
    window_end_ms     BIGINT NOT NULL,
    source_rows       BIGINT NOT NULL,
    target_rows       BIGINT NOT NULL,
    matching          BIGINT NOT NULL,
    content_different BIGINT NOT NULL,
    only_in_source    BIGINT NOT NULL,
    only_in_target    BIGINT NOT NULL,
    sample_keys_json  TEXT   NOT NULL,   -- JSON list of hex row keys (capped by the verifier)
    verified_ms       BIGINT NOT NULL,
    PRIMARY KEY (run_id, table_name, window_start_ms, window_end_ms)
);

-- What happened to the peer and why; a run that fails with its peer DISABLED leaves the reason here,
-- because a disabled peer pins every WAL from T0 on until someone acts.
CREATE TABLE IF NOT EXISTS peer_notes (
    run_id    TEXT   NOT NULL REFERENCES migration_runs (run_id),
    peer_id   TEXT   NOT NULL,
    noted_ms  BIGINT NOT NULL,
    state     TEXT   NOT NULL,   -- ENABLED | DISABLED | REMOVED
    reason    TEXT   NOT NULL,
    PRIMARY KEY (run_id, peer_id, noted_ms)
);
