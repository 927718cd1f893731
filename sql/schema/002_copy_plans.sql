-- The copy's plan per table: how many partitions it was split into, the denominator of the dashboard's
-- "partitions done of total" and of its ETA (copy_partitions holds the numerator). Written by the copy job
-- when it plans (hbase_migration/runner.py); a resumed copy plans again and overwrites the figures, keeping
-- the first planning instant. Keyed like copy_partitions (a copy can run without a migration run).
CREATE TABLE IF NOT EXISTS copy_plans (
    copy_id       TEXT   NOT NULL,
    table_name    TEXT   NOT NULL,
    partitions    BIGINT NOT NULL,   -- every partition of the plan, finished ones included
    est_rows      BIGINT,            -- rows the plan expects (sampled regions), NULL when unknown
    planned_ms    BIGINT NOT NULL,   -- first planning of this copy of this table
    replanned_ms  BIGINT NOT NULL,   -- latest planning (a resumed copy plans again)
    PRIMARY KEY (copy_id, table_name)
);
