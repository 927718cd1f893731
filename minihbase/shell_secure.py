"""The shell lookalike on a secured cluster: it acts as the principal of the ticket in `KRB5CCNAME` (with the
krb5.conf in `KRB5_CONFIG`), as `hbase shell` does after `kinit`, never with a keytab of its own.

- Without a valid ticket-granting ticket (none, or expired) the first statement fails the way HBase's RPC client
  fails: stdout `ERROR: SASL authentication failed. The most likely cause is missing or invalid credentials.
  Consider 'kinit'.` and on stderr the cause, `javax.security.sasl.SaslException: GSS initiate failed [Caused by
  GSSException: No valid credentials provided (Mechanism level: Failed to find any Kerberos tgt)]`; with `-n`
  the shell exits 1.
- The control endpoint (DDL, data commands, status) is called with SPNEGO as that principal; ZooKeeper (peers)
  with SASL GSSAPI as that principal. What its principal may not do comes back as HBase's
  AccessDeniedException text (the cluster decides; a ZooKeeper NoAuth on the replication znodes is what
  AccessController's `Insufficient permissions for user '<short name>' (global, action=ADMIN)` stands for).
"""
from __future__ import annotations

import sys
import time

from minihbase import process
from minihbase.shell import Shell, ShellError

NO_TGT = "SASL authentication failed. The most likely cause is missing or invalid credentials. Consider 'kinit'."
NO_TGT_CAUSE = ("javax.security.sasl.SaslException: GSS initiate failed [Caused by GSSException: No valid "
                "credentials provided (Mechanism level: Failed to find any Kerberos tgt)]")


class SecureShell(Shell):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._principal: str | None = None

    @property
    def security(self) -> dict:
        return self.endpoints["security"]

    def login(self) -> str:
        """The ticket cache's principal; ShellError with HBase's text when there is no valid TGT."""
        if self._principal is None:
            from bedkit.security import gss

            try:
                self._principal = gss.credentials_principal(gss.ticket_cache_credentials())
            except gss.KerberosError as e:
                print(f"{NO_TGT_CAUSE} ({e})", file=sys.stderr, flush=True)
                raise ShellError(NO_TGT) from None
        return self._principal

    def short_name(self) -> str:
        return self.login().split("@")[0].split("/")[0]

    def execute(self, statement) -> None:
        from kazoo.exceptions import NoAuthError

        if self._principal is None:
            started = time.monotonic()
            try:
                self.login()
            except ShellError:
                self.print(f"Took {time.monotonic() - started:.4f} seconds")
                raise
        try:
            super().execute(statement)
        except NoAuthError:
            raise ShellError(f"org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient permissions "
                             f"for user '{self.short_name()}' (global, action=ADMIN)") from None

    def _auth(self, url: str) -> dict[str, str]:
        from urllib.parse import urlsplit

        from bedkit.security import gss

        target = gss.expand_host(self.security["spnego_principal"], urlsplit(url).hostname or "127.0.0.1")
        return {"Authorization": gss.negotiate_header(gss.ticket_cache_credentials(), target)}

    def control(self, path: str, body: dict | None = None) -> dict:
        self.login()
        try:
            return process.control(self.endpoints["control_url"], path, body, timeout=120, auth=self._auth)
        except process.MiniHBaseError as e:
            message = str(e).partition(": ")[2] or str(e)
            raise ShellError(message) from None

    @property
    def zk(self):
        if self._zk is None:
            from bedkit.security import zk as secure_zk

            self.login()
            hosts = self.endpoints["zookeeper"]["hosts"]
            client = secure_zk.secure_client(hosts, 15, self.endpoints["zookeeper"]["znode_parent"],
                                             self.security["superusers"], self.security["zookeeper_principal"])
            try:
                client.start(timeout=15)
            except Exception as e:
                raise ShellError(f"org.apache.hadoop.hbase.ZooKeeperConnectionException: cannot reach ZooKeeper "
                                 f"{hosts}: {e}") from None
            self._zk = client
        return self._zk


def open_shell(workdir, cluster: str) -> Shell:
    """The shell for `cluster`: SecureShell when the cluster is secured (its endpoints name a `security`)."""
    shell = Shell(workdir, cluster)
    try:
        secured = bool(shell.endpoints.get("security"))
    except ShellError:
        return shell  # not running: the first statement says so
    return SecureShell(workdir, cluster) if secured else shell
