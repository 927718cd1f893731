"""Where the Airflow layer keeps the run ledger.

`[hbase_migration] ledger_url` in airflow.cfg (or AIRFLOW__HBASE_MIGRATION__LEDGER_URL) names any SQLAlchemy
URL; the default is a SQLite file in $AIRFLOW_HOME/.airflow/ledger.db. The dashboard plugin reads the same.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hbase_migration.ledger import Ledger


def ledger_url() -> str:
    from airflow.sdk import conf

    url = conf.get("hbase_migration", "ledger_url", fallback=None)
    if url:
        return url
    home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    os.makedirs(os.path.join(home, ".airflow"), exist_ok=True)
    return f"sqlite:///{os.path.join(home, '.airflow', 'ledger.db')}"


def open_ledger() -> "Ledger":
    from hbase_migration.ledger import Ledger

    return Ledger.open(ledger_url())
