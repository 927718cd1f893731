"""The tests' PostgreSQL server is the deployment's (`deploy/postgres.py`): one bootstrap for both."""
from deploy.postgres import PostgresServer, server_binaries  # noqa: F401
