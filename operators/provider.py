"""The distribution as an Airflow provider: the `hbase` connection type and its form.

Airflow finds providers through the `apache_airflow_provider` entry point of installed distributions; this
module is the `hbase-migration` distribution's (pyproject.toml; docs/install.md). Airflow then lists `hbase` among
the connection types (`airflow providers hooks`), builds `hbase_migration.operators.hooks.HBaseClusterHook` for
it, and the Connections form shows the fields below:
Airflow 3 reads them declaratively from here (`conn-fields`, `ui-field-behaviour`), without importing the
hook or WTForms. Each extra is stored in the connection's extra JSON under its own name, which is what
`hbase_migration.clusters.cluster.Cluster.from_connection` reads (docs/configuration.md "Connections"); a test keeps
the two lists equal.

Self-contained on purpose (no import beyond the empty package markers above it): a provider whose entry point
fails to import would break Airflow's provider discovery for every command.
"""
from __future__ import annotations

from typing import Any

PACKAGE = "hbase-migration"
VERSION = "0.1.0"  # pyproject.toml's


def _field(label: str, description: str, kind: str = "string", **schema: Any) -> dict[str, Any]:
    return {"label": label, "description": description, "schema": {"type": [kind, "null"], **schema}}


CONN_FIELDS: dict[str, dict[str, Any]] = {
    "zookeeper_quorum": _field("ZooKeeper quorum", "Required. Comma-separated hosts of the cluster's quorum "
                                                   "(hbase.zookeeper.quorum)."),
    "zookeeper_port": _field("ZooKeeper port", "hbase.zookeeper.property.clientPort", "integer", default=2181),
    "znode_parent": _field("Znode parent", "zookeeper.znode.parent", default="/hbase"),
    "info_port": _field("Region server info port", "For /jmx. Empty: each region server's own, read from its "
                                                   "rs/ znode.", "integer"),
    "webhdfs_url": _field("WebHDFS URL", "The namenode's WebHDFS, e.g. http://namenode:9870 (the oldWALs quota "
                                         "watch). Empty: oldWALs is not watched."),
    "webhdfs_user": _field("WebHDFS user", "Without Kerberos: the user WebHDFS calls run as (user.name), HBase's "
                                           "own (e.g. hbase): others may not read <rootdir>. Empty: anonymous."),
    "rootdir": _field("HBase root directory", "hbase.rootdir as an HDFS path; oldWALs is <rootdir>/oldWALs.",
                      default="/hbase"),
    "peer_admin": _field("Peer admin backend", "shell: HBase 2.x+ (the master's procedures through hbase shell "
                                               "-n); zookeeper: HBase 1.x (peer znodes written directly).",
                         default="shell", enum=["shell", "zookeeper"]),
    "shell_command": _field("HBase shell command", "How to run `hbase shell -n` for this cluster (it reads "
                                                   "statements on stdin).", default="hbase shell -n"),
    "shell_timeout_s": _field("Shell timeout (s)", "How long one hbase shell run may take (a real shell spends "
                                                   "10-30 s starting its JVM).", "number", default=180),
    "timeout_s": _field("Call timeout (s)", "Per-call timeout for ZooKeeper, /jmx, WebHDFS and Thrift.",
                        "number", default=10),
    "thrift_transport": _field("Thrift transport", "As the Thrift1 server runs (HBase's default: buffered).",
                               default="buffered", enum=["buffered", "framed"]),
    "thrift_protocol": _field("Thrift protocol", "As the Thrift1 server runs (HBase's default: binary).",
                              default="binary", enum=["binary", "compact"]),
    "zk_legacy_table_cfs": _field("Legacy TABLE_CFS znode", "HBase 1.0-1.2 peers keep TABLE_CFS in their own "
                                                            "znode (zookeeper backend).", "boolean", default=False),
    "thrift_servers": _field("Thrift1 gateways", "Every Thrift1 gateway as host:port, comma-separated (the "
                                                 "host/port above is always one of them)."),
    "thrift2_servers": _field("Thrift2 gateways", "Every Thrift2 gateway (`hbase thrift2`) as host:port, "
                                                  "comma-separated. The lossless data path: every version."),
    "data_path": _field("Data path", "How copy and verify read and write cells. native: HBase's own client in "
                                     "Spark's JVMs (raw: delete markers too). auto: thrift2 when Thrift2 gateways "
                                     "are set, else thrift1.", default="auto",
                        enum=["auto", "native", "thrift1", "thrift2"]),
    "client_bind_address": _field("Client bind address", "native: the local IP address HBase's client connects "
                                                          "to this cluster from (a host with several interfaces). "
                                                          "Empty: the system's choice."),
    # Secured clusters (docs/secured-clusters.md): names and paths only; the keytab is read where the task runs.
    "principal": _field("Kerberos principal", "The toolkit's own principal on this cluster, with its realm "
                                              "(hbase-migration@DC1.EXAMPLE.COM). Empty: an open cluster."),
    "keytab": _field("Keytab", "Path of the principal's keytab on the Airflow workers (and shipped to Spark "
                               "executors). Read by the toolkit, never logged."),
    "krb5_conf": _field("krb5.conf", "krb5.conf to use (both connections of a run name the same file). Empty: the "
                                     "system's."),
    "hbase_principal": _field("HBase server principal", "hbase.regionserver.kerberos.principal, e.g. "
                                                        "hbase/_HOST@DC2.EXAMPLE.COM (_HOST: the host connected to)."),
    "thrift_principal": _field("Thrift server principal", "hbase.thrift.kerberos.principal, when it differs from "
                                                          "the HBase server principal."),
    "spnego_principal": _field("SPNEGO principal", "HTTP/_HOST@REALM: /jmx, /conf, WebHDFS and Thrift's HTTP mode "
                                                   "(hbase.security.authentication.spnego.kerberos.principal)."),
    "zookeeper_principal": _field("ZooKeeper principal", "zookeeper/_HOST@REALM of the quorum's servers. Empty: "
                                                         "ZooKeeper without SASL."),
    "thrift_qop": _field("Thrift SASL QOP", "hbase.thrift.security.qop of the binary gateways (SASL GSSAPI). Empty: "
                                            "plain Thrift.", enum=["auth", "auth-int", "auth-conf"]),
    "thrift_http": _field("Thrift HTTP mode", "hbase.regionserver.thrift.http: Thrift over HTTP, SPNEGO per "
                                              "request.", "boolean", default=False),
    "thrift_ssl": _field("Thrift TLS", "hbase.thrift.ssl.enabled (HTTP mode).", "boolean", default=False),
    "ssl_ca": _field("CA bundle", "PEM file of the CA that signed the servers' certificates. Empty: the system's."),
    "ssl_verify": _field("Verify certificates", "Check the servers' TLS certificates (leave on).", "boolean",
                         default=True),
}

UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden-fields": ["schema", "login", "password"],  # no password: Kerberos authenticates with the keytab
    "relabeling": {"host": "Thrift host", "port": "Thrift port"},
    "placeholders": {"host": "thrift.dc1.example", "port": "9090",
                     "extra": '{"zookeeper_quorum": "zk1,zk2,zk3", "webhdfs_url": "http://namenode:9870"}'},
}


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": PACKAGE,
        "name": "HBase migration toolkit",
        "description": "Migrate live Apache HBase tables between datacenters: the `hbase` connection type (one "
                       "cluster: Thrift1, ZooKeeper, region servers' /jmx, WebHDFS).",
        "versions": [VERSION],
        "connection-types": [{
            "connection-type": "hbase",
            "hook-class-name": "hbase_migration.operators.hooks.HBaseClusterHook",
            "hook-name": "HBase cluster (migration toolkit)",
            "ui-field-behaviour": UI_FIELD_BEHAVIOUR,
            "conn-fields": CONN_FIELDS,
        }],
    }
