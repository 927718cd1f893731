-- Ledger schema, version 4: stable resume and the dry run's sizing. Same portable conventions as 001.

-- Finished partitions are key ranges independent of regions: a resume subtracts them from its new plan
-- (hbase_migration/resume.py). The scope fingerprint (window, versions, families) they were copied under is
-- kept with them; rows written before this version have NULL here and count when their partition id is the
-- id of their range under the resuming copy's fingerprint (the test the id matching made until now).
ALTER TABLE copy_partitions ADD COLUMN scope_fingerprint TEXT;

-- The source's split/merge and normalizer switches, held off while copies run (hbase_migration/switches.py).
-- One row per source cluster: the state found before the first copy turned them off, kept until the last
-- copy restores it, so a copy killed and retried restores the original state, not the "off" it left.
-- The lock columns serialise the changes of several copies of one source (a lease: a holder that died
-- loses it when it expires).
CREATE TABLE IF NOT EXISTS switch_guards (
    source_key       TEXT   NOT NULL PRIMARY KEY,   -- the source's cluster key quorum:port:/znode-parent
    split_found      INTEGER,                       -- 0/1 as found before the first hold; NULL: nothing held
    merge_found      INTEGER,
    normalizer_found INTEGER,
    found_ms         BIGINT,
    lock_owner       TEXT,                          -- who holds the lease, NULL: free
    lock_expires_ms  BIGINT,
    updated_ms       BIGINT NOT NULL
);

-- Who needs the switches off right now: one row per running copy of one table (reference counting).
CREATE TABLE IF NOT EXISTS switch_holds (
    source_key  TEXT   NOT NULL,
    holder      TEXT   NOT NULL,   -- "copy <copy id> <table>": a retry of the same copy reuses its row
    run_id      TEXT,              -- the migration run, when there is one (state_left_behind releases its holds)
    held_ms     BIGINT NOT NULL,
    PRIMARY KEY (source_key, holder)
);

-- The dry run's sizing, per run and table (preflight writes it; the dashboard shows it before the copy).
CREATE TABLE IF NOT EXISTS copy_sizings (
    run_id       TEXT   NOT NULL REFERENCES migration_runs (run_id),
    table_name   TEXT   NOT NULL,   -- '*' holds the run's projection (copy time, oldWALs growth, limits)
    sized_ms     BIGINT NOT NULL,
    sizing_json  TEXT   NOT NULL,   -- JSON object of the figures (hbase_migration/sizing.py)
    PRIMARY KEY (run_id, table_name)
);
