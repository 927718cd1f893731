"""Where the dashboard finds the run ledger: the toolkit's one rule (`hbase_migration.ledger.location`),
fed from Airflow's configuration."""
from __future__ import annotations

import os

from hbase_migration.ledger.location import (  # noqa: F401 - re-exported for the dashboard
    CMD_OPTION,
    CONFIG_OPTION,
    CONFIG_SECTION,
    CONN_OPTION,
    DEFAULT_URL,
    ENV_VAR,
    LedgerLocation,
    LedgerUrlError,
    configured_connection,
    connection_url,
    resolve_ledger_url,
)


def configured_ledger_location() -> LedgerLocation:
    """The ledger this Airflow installation uses, read from Airflow's configuration and the environment."""
    from airflow.configuration import AIRFLOW_HOME, conf
    from airflow.models.connection import Connection

    option = conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None)
    connection = configured_connection(conf.get(CONFIG_SECTION, CONN_OPTION, fallback=None),
                                       Connection.get_connection_from_secrets)
    return resolve_ledger_url(option, os.environ.get(ENV_VAR), AIRFLOW_HOME, connection,
                              conf.get(CONFIG_SECTION, CMD_OPTION, fallback=None))
