-- Ledger schema, version 7: the Spark jobs' summaries handed to the Airflow task (issue 30). Same portable
-- conventions as 001.

-- A job's JSON summary, written by its Spark driver under a key the submitting task chose, read (and deleted) by
-- that task once spark-submit returns. The driver may run in a YARN or Kubernetes container (cluster mode), where
-- no file of the Airflow worker can be reached; the ledger is the one store both sides already open.
CREATE TABLE IF NOT EXISTS job_summaries (
    summary_key TEXT   NOT NULL PRIMARY KEY,   -- chosen by the task: kind, table, dag run, try, a random suffix
    job         TEXT   NOT NULL,               -- copy | verify | snapshot-export
    written_ms  BIGINT NOT NULL,
    summary     TEXT   NOT NULL                -- the JSON summary line the job also prints
);
