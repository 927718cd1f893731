"""`python -m minihbase up --secure`: the KDC, every keytab of the contract, the SASL ZooKeeper and the secured
dc1/dc2 from one command; `endpoints --json` names all of it and each cluster's connection extras; `down` stops
everything, the KDC included, and returns once every process has exited."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minihbase import process

pytestmark = pytest.mark.integration


def minihbase(*argv, env=None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minihbase", *map(str, argv)], capture_output=True, text=True,
                          timeout=180, input=stdin, env={**os.environ, **(env or {})})


def _pids(workdir: Path) -> dict[str, int]:
    pids = {name: process.read_pid(workdir, name) for name in ("dc1", "dc2")}
    for name, path in (("zookeeper", workdir / "zookeeper" / "zookeeper.pid"), ("kdc", workdir / "kdc" / "kdc.pid")):
        pids[name] = int(path.read_text()) if path.exists() else None
    return pids


def _lifetime_s(klist: str) -> float:
    """Expires - Valid starting of the krbtgt line of `klist`."""
    line = next(line for line in klist.splitlines() if "krbtgt/DC1.TEST@DC1.TEST" in line)
    parts = line.split()
    start = datetime.datetime.strptime(" ".join(parts[0:2]), "%m/%d/%y %H:%M:%S")
    end = datetime.datetime.strptime(" ".join(parts[2:4]), "%m/%d/%y %H:%M:%S")
    return (end - start).total_seconds()


def test_up_secure_endpoints_and_down(tmp_path):
    workdir = tmp_path / "instance"
    up = minihbase("up", "--secure", "--workdir", workdir, "--ticket-lifetime-s", 120)
    try:
        assert up.returncode == 0, up.stderr
        pids = _pids(workdir)
        assert all(pids.values()), pids
        endpoints = json.loads(minihbase("endpoints", "--json", "--workdir", workdir).stdout)
        security = endpoints["security"]
        assert security["realms"] == ["DC1.TEST", "DC2.TEST"]
        assert security["kdc"].startswith("127.0.0.1:") and security["ticket_lifetime_s"] == 120
        assert Path(security["krb5_conf"]).is_file()
        roles = security["principals"]
        assert roles["toolkit"] == ["hbase-migration@DC1.TEST"] and roles["intruder"] == ["intruder@DC1.TEST"]
        assert roles["admin"] == ["hbase@DC1.TEST", "hbase@DC2.TEST"]
        for principal in sum(roles.values(), []):
            keytab = Path(security["keytabs"][principal])
            assert keytab.is_file() and oct(keytab.stat().st_mode & 0o777) == "0o600", principal
        toolkit_keytab = security["toolkit"]["keytab"]
        for name, realm in (("dc1", "DC1.TEST"), ("dc2", "DC2.TEST")):
            extra = endpoints["clusters"][name]["connection"]["extra"]
            assert {k: extra[k] for k in ("principal", "keytab", "krb5_conf", "hbase_principal", "spnego_principal",
                                          "zookeeper_principal")} == {
                "principal": "hbase-migration@DC1.TEST", "keytab": toolkit_keytab, "krb5_conf": security["krb5_conf"],
                "hbase_principal": f"hbase/_HOST@{realm}", "spnego_principal": f"HTTP/_HOST@{realm}",
                "zookeeper_principal": "zookeeper/_HOST@DC1.TEST"}
            assert endpoints["clusters"][name]["security"]["realm"] == realm
        assert endpoints["clusters"]["dc1"]["connection"]["extra"]["thrift_qop"] == "auth-conf"
        dc2 = endpoints["clusters"]["dc2"]["connection"]["extra"]
        assert dc2["thrift_http"] is True and dc2["thrift_ssl"] is True and Path(dc2["ssl_ca"]).is_file()
        # The toolkit's keytab gets a ticket of the configured lifetime, crosses into DC2, and drives the shell.
        env = {"KRB5_CONFIG": security["krb5_conf"], "KRB5CCNAME": f"FILE:{tmp_path / 'toolkit.cc'}"}
        kinit = subprocess.run(["kinit", "-kt", toolkit_keytab, "hbase-migration@DC1.TEST"], capture_output=True,
                               text=True, env={**os.environ, **env}, timeout=30)
        assert kinit.returncode == 0, kinit.stderr
        klist = subprocess.run(["klist"], capture_output=True, text=True, env={**os.environ, **env}, timeout=30)
        assert _lifetime_s(klist.stdout) <= 120  # the KDC's configured ticket lifetime, not a measured time
        kvno = subprocess.run(["kvno", "hbase/localhost@DC2.TEST"], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=30)
        assert kvno.returncode == 0, kvno.stderr
        shell = subprocess.run(dc2["shell_command"], shell=True, input="list\n", capture_output=True, text=True,
                               env={**os.environ, **env}, timeout=60)
        assert shell.returncode == 0 and "0 row(s)" in shell.stdout, shell.stdout + shell.stderr
    finally:
        down = minihbase("down", "--workdir", workdir)
    assert down.returncode == 0, down.stderr
    assert not any(process.pid_alive(pid) for pid in pids.values() if pid), pids
    assert not (workdir / "kdc" / "kdc.pid").exists()


def test_up_secure_with_an_outside_zookeeper_is_refused_before_anything_starts(tmp_path):
    result = minihbase("up", "--secure", "--zookeeper", "127.0.0.1:2181", "--workdir", tmp_path / "w")
    assert result.returncode == 2
    assert "--zookeeper cannot be used with --secure" in result.stderr
    assert not (tmp_path / "w" / "kdc").exists()


def test_a_security_file_without_a_cluster_or_with_paths_is_refused(tmp_path):
    bad = tmp_path / "secure.toml"
    bad.write_text('[clusters.dc1.security]\nrealm = "DC1.TEST"\nthrift_qop = "auth"\n')
    result = minihbase("up", "--secure", "--security-config", bad, "--workdir", tmp_path / "w")
    assert result.returncode == 2 and "cluster dc2 has no [clusters.dc2.security] table" in result.stderr
    bad.write_text('[clusters.dc1.security]\nrealm = "DC1.TEST"\nthrift_qop = "auth"\nhbase_keytab = "/x"\n'
                   '[clusters.dc2.security]\nrealm = "DC2.TEST"\nthrift_http = true\n')
    result = minihbase("up", "--secure", "--security-config", bad, "--workdir", tmp_path / "w")
    assert result.returncode == 2 and "sets hbase_keytab" in result.stderr
    assert not (tmp_path / "w" / "kdc").exists()
