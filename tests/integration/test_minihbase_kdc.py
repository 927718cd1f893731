"""minihbase's KDC: a real MIT krb5kdc serving two realms on loopback, joined (or not) by a cross-realm trust."""
from __future__ import annotations

import os
import subprocess

import pytest

from bedkit.kdc import Kdc, KdcError


def _krb(kdc: Kdc, ccache, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **kdc.env(), "KRB5CCNAME": f"FILE:{ccache}"}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def trusting_kdc(tmp_path_factory):
    kdc = Kdc(tmp_path_factory.mktemp("kdc"), ticket_lifetime_s=120).start()
    yield kdc
    kdc.stop()


def test_a_keytab_gets_a_ticket_and_crosses_into_the_other_realm(trusting_kdc, tmp_path):
    keytab = trusting_kdc.keytab(["migration@DC1.TEST"], tmp_path / "migration.keytab")
    trusting_kdc.add_principal("hbase/localhost@DC2.TEST")
    assert oct(keytab.stat().st_mode & 0o777) == "0o600"
    assert _krb(trusting_kdc, tmp_path / "cc", "kinit", "-kt", str(keytab), "migration@DC1.TEST").returncode == 0
    kvno = _krb(trusting_kdc, tmp_path / "cc", "kvno", "hbase/localhost@DC2.TEST")
    assert kvno.returncode == 0, kvno.stderr
    tickets = _krb(trusting_kdc, tmp_path / "cc", "klist").stdout
    assert "krbtgt/DC2.TEST@DC1.TEST" in tickets  # the cross-realm ticket the path went through
    assert "hbase/localhost@DC2.TEST" in tickets


def test_a_keytab_exported_twice_keeps_its_keys(trusting_kdc, tmp_path):
    first = trusting_kdc.keytab(["svc/localhost@DC1.TEST"], tmp_path / "a.keytab")
    second = trusting_kdc.keytab(["svc/localhost@DC1.TEST"], tmp_path / "b.keytab")
    assert _krb(trusting_kdc, tmp_path / "cc", "kinit", "-kt", str(first), "svc/localhost@DC1.TEST").returncode == 0
    assert _krb(trusting_kdc, tmp_path / "cc", "kinit", "-kt", str(second), "svc/localhost@DC1.TEST").returncode == 0


def test_without_the_trust_the_other_realm_is_refused(tmp_path):
    with Kdc(tmp_path / "kdc", cross_realm=False) as kdc:
        keytab = kdc.keytab(["migration@DC1.TEST"], tmp_path / "m.keytab")
        kdc.add_principal("hbase/localhost@DC2.TEST")
        assert _krb(kdc, tmp_path / "cc", "kinit", "-kt", str(keytab), "migration@DC1.TEST").returncode == 0
        kvno = _krb(kdc, tmp_path / "cc", "kvno", "hbase/localhost@DC2.TEST")
        assert kvno.returncode != 0
        assert "krbtgt/DC2.TEST@DC1.TEST not found" in kvno.stderr


def test_a_wrong_keytab_is_refused(trusting_kdc, tmp_path):
    keytab = trusting_kdc.keytab(["other@DC1.TEST"], tmp_path / "other.keytab")
    trusting_kdc.add_principal("migration@DC1.TEST")
    kinit = _krb(trusting_kdc, tmp_path / "cc", "kinit", "-kt", str(keytab), "migration@DC1.TEST")
    assert kinit.returncode != 0
    assert "Keytab contains no suitable keys" in kinit.stderr or "not found" in kinit.stderr


def test_bad_realms_and_principals_are_refused_before_anything_starts(tmp_path):
    with pytest.raises(KdcError, match="upper-case"):
        Kdc(tmp_path, realms=("dc1.test",))
    with pytest.raises(KdcError, match="at least 10"):
        Kdc(tmp_path, ticket_lifetime_s=1)
    kdc = Kdc(tmp_path / "kdc").start()
    try:
        with pytest.raises(KdcError, match="not served"):
            kdc.add_principal("x@ELSEWHERE.TEST")
        with pytest.raises(KdcError, match="no realm"):
            kdc.add_principal("x")
    finally:
        kdc.stop()


def test_a_one_way_trust_lets_one_realm_in_and_not_the_other(tmp_path):
    """(DC2.TEST, DC1.TEST): DC2's principals reach DC1's services; DC1's get nothing in DC2."""
    with Kdc(tmp_path / "kdc", cross_realm=[("DC2.TEST", "DC1.TEST")]) as kdc:
        dc1 = kdc.keytab(["migration@DC1.TEST"], tmp_path / "dc1.keytab")
        dc2 = kdc.keytab(["hbase/localhost@DC2.TEST"], tmp_path / "dc2.keytab")
        kdc.add_principal("zookeeper/localhost@DC1.TEST")
        assert _krb(kdc, tmp_path / "cc2", "kinit", "-kt", str(dc2), "hbase/localhost@DC2.TEST").returncode == 0
        assert _krb(kdc, tmp_path / "cc2", "kvno", "zookeeper/localhost@DC1.TEST").returncode == 0
        assert _krb(kdc, tmp_path / "cc1", "kinit", "-kt", str(dc1), "migration@DC1.TEST").returncode == 0
        kvno = _krb(kdc, tmp_path / "cc1", "kvno", "hbase/localhost@DC2.TEST")
        assert kvno.returncode != 0
        assert "krbtgt/DC2.TEST@DC1.TEST not found" in kvno.stderr


def test_a_trust_naming_an_unknown_realm_is_refused(tmp_path):
    with pytest.raises(KdcError, match="two different realms"):
        Kdc(tmp_path, cross_realm=[("DC1.TEST", "DC9.TEST")])
