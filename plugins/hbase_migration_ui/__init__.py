"""The migration dashboard behind `plugins/hbase_migration_plugin.py`.

Not a plugin folder of its own: `plugins/.airflowignore` keeps Airflow's plugin loader out of it, and the
plugin file imports it as `plugins.hbase_migration_ui` (the repository root is on PYTHONPATH, as for
`operators/`). The package marker imports nothing; FastAPI and the ledger are imported where they are used.
"""
