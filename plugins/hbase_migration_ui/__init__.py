"""The migration dashboard behind `hbase_migration.plugins.hbase_migration_plugin` (Airflow loads that by the
distribution's `airflow.plugins` entry point; no plugins folder holds either). The package marker imports nothing;
FastAPI and the ledger are imported where they are used.
"""
