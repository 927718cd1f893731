"""The run ledger as the Airflow layer opens it (the same location rule as the dashboard and the CLI: the
connection `[hbase_migration] ledger_conn_id`, else `[hbase_migration] ledger_url`, else what
`[hbase_migration] ledger_url_cmd` prints, else HBASE_MIGRATION_LEDGER_URL, else $AIRFLOW_HOME/.state/ledger.db)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hbase_migration.ledger.store import Ledger


def ledger_url() -> str:
    from airflow.sdk import BaseHook, conf

    from hbase_migration.ledger.location import (
        CMD_OPTION,
        CONFIG_OPTION,
        CONFIG_SECTION,
        CONN_OPTION,
        ENV_VAR,
        configured_connection,
        resolve_ledger_url,
    )

    home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    connection = configured_connection(conf.get(CONFIG_SECTION, CONN_OPTION, fallback=None), BaseHook.get_connection)
    location = resolve_ledger_url(conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None), os.environ.get(ENV_VAR),
                                  home, connection, conf.get(CONFIG_SECTION, CMD_OPTION, fallback=None))
    if location.sqlite_file is not None:
        location.sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    return location.url


def open_ledger() -> "Ledger":
    from hbase_migration.ledger.store import Ledger

    return Ledger.open(ledger_url())
