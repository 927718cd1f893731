-- Ledger schema, version 6: the initial copy by snapshot (issue 27). Same portable conventions as 001.

-- How each table of a run gets its initial copy: 'scan' (the Thrift copy) or 'snapshot' (a snapshot exported
-- over WebHDFS and cloned on the target), and why (the run's initial_copy, or auto's reading of the sizing).
-- Decided once by preflight; a retried or cleared run keeps the first decision (the two paths leave different
-- states behind: a target table created empty, or a clone).
CREATE TABLE IF NOT EXISTS initial_copies (
    run_id      TEXT   NOT NULL REFERENCES migration_runs (run_id),
    table_name  TEXT   NOT NULL,
    method      TEXT   NOT NULL,   -- scan | snapshot
    reason      TEXT   NOT NULL,
    decided_ms  BIGINT NOT NULL,
    PRIMARY KEY (run_id, table_name)
);

-- One snapshot export per copy and table (hbase_migration/data/snapshot_export.py): where it stands, its totals
-- and progress (the dashboard's and the logs' bytes and files done, rate and ETA), and what it leaves where.
CREATE TABLE IF NOT EXISTS snapshot_exports (
    copy_id           TEXT   NOT NULL,   -- the run's copy id (a CLI export's own)
    table_name        TEXT   NOT NULL,
    snapshot_name     TEXT   NOT NULL,   -- on both clusters
    source_key        TEXT   NOT NULL,
    target_key        TEXT   NOT NULL,
    state             TEXT   NOT NULL,   -- started | snapshot_taken | manifest_copied | files_copied | published
                                         -- | cloned | cleaned | failed
    files_total       BIGINT,
    bytes_total       BIGINT,
    files_done        BIGINT NOT NULL DEFAULT 0,
    bytes_done        BIGINT NOT NULL DEFAULT 0,
    bytes_per_s       DOUBLE PRECISION,
    eta_s             DOUBLE PRECISION,
    detail            TEXT,              -- JSON: the last failure and what it left where, the summary's figures
    started_ms        BIGINT NOT NULL,
    updated_ms        BIGINT NOT NULL,
    snapshot_taken_ms BIGINT,
    cloned_ms         BIGINT,
    cleaned_ms        BIGINT,
    PRIMARY KEY (copy_id, table_name)
);

-- Every file an export finished (copied and verified, or found already there, same length and checksum): a
-- resumed export skips them. Keyed by the file's path under the target's archive/ (data/<ns>/<t>/<region>/<cf>/<f>).
CREATE TABLE IF NOT EXISTS snapshot_files (
    copy_id        TEXT   NOT NULL,
    table_name     TEXT   NOT NULL,
    relative_path  TEXT   NOT NULL,
    snapshot_name  TEXT   NOT NULL,
    size           BIGINT NOT NULL,
    status         TEXT   NOT NULL,   -- copied | matched
    found_in       TEXT,              -- where the source had it: data | mobdir | archive
    verified_by    TEXT,              -- hdfs-checksum | md5 | length
    checksum       TEXT,              -- the verified checksum, JSON
    attempts       INTEGER NOT NULL,
    seconds        DOUBLE PRECISION,
    finished_ms    BIGINT NOT NULL,
    PRIMARY KEY (copy_id, table_name, relative_path)
);
