"""The toolkit's Kerberos login against a real MIT KDC (bedkit.kdc) with a 10 s ticket lifetime: renewed from
the keytab before it expires, service tickets across the realms' trust, the shell's ticket cache kept fresh, and a
wrong keytab, a re-keyed principal and a missing trust each named with its fix."""
from __future__ import annotations

import os
import stat
import subprocess
import time

import pytest

from bedkit.kdc import Kdc
from hbase_migration.clusters import kerberos
from hbase_migration.clusters.kerberos import KerberosError, KeytabLogin, ShellTicketCache
from tests.polling import wait_for

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/krb5kdc"), reason="needs Debian's krb5-kdc")
LIFETIME_S = 10


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    kdc = Kdc(tmp_path_factory.mktemp("kdc"), ticket_lifetime_s=LIFETIME_S, renew_lifetime_s=LIFETIME_S).start()
    kerberos.forget_krb5_conf()
    kerberos.use_krb5_conf(str(kdc.krb5_conf), "test")
    for p in ("hbase/localhost@DC1.TEST", "hbase/localhost@DC2.TEST"):
        kdc.add_principal(p)
    yield kdc
    kerberos.forget_krb5_conf()
    kdc.stop()


def test_the_login_is_renewed_from_the_keytab_and_service_tickets_outlive_the_first_ticket(kdc, tmp_path):
    keytab = kdc.keytab(["renewing@DC1.TEST"], tmp_path / "renewing.keytab")
    login = KeytabLogin("renewing@DC1.TEST", str(keytab))
    login.credentials()
    first_expiry = login.expires
    assert first_expiry - time.time() <= LIFETIME_S
    # A service ticket every half second, across the realms' trust, until well past the first ticket's end.
    wait_for(lambda: login.service_ticket("hbase/localhost@DC2.TEST", "DC2's region servers") or
             time.time() > first_expiry + 2, timeout=LIFETIME_S + 10, interval=0.5, what="the first ticket's end")
    assert login.renewals >= 1
    assert login.expires > first_expiry


def test_a_keytab_without_the_principal_is_named_with_what_it_holds(kdc, tmp_path):
    kdc.add_principal("wanted@DC1.TEST")
    keytab = kdc.keytab(["other@DC1.TEST"], tmp_path / "other.keytab")
    with pytest.raises(KerberosError, match=r"does not hold wanted@DC1.TEST \(it holds: other@DC1.TEST\)"
                                            r".*ktadd .* -norandkey wanted@DC1.TEST") as err:
        KeytabLogin("wanted@DC1.TEST", str(keytab)).credentials()
    assert err.value.kind == "bad_key"


def test_a_keytab_of_a_re_keyed_principal_is_named_stale(kdc, tmp_path):
    keytab = kdc.keytab(["rekeyed@DC1.TEST"], tmp_path / "rekeyed.keytab")
    kdc.kadmin("DC1.TEST", "cpw -randkey rekeyed@DC1.TEST")
    with pytest.raises(KerberosError, match="holds no valid key for rekeyed@DC1.TEST") as err:
        KeytabLogin("rekeyed@DC1.TEST", str(keytab)).credentials()
    assert err.value.kind == "bad_key"


def test_without_the_trust_the_other_realm_is_refused_naming_the_krbtgt_to_create(kdc, tmp_path):
    keytab = kdc.keytab(["untrusted@DC1.TEST"], tmp_path / "untrusted.keytab")
    kdc.kadmin("DC1.TEST", "delprinc -force krbtgt/DC2.TEST@DC1.TEST")
    try:
        login = KeytabLogin("untrusted@DC1.TEST", str(keytab))
        with pytest.raises(KerberosError, match="no cross-realm trust from DC1.TEST to DC2.TEST") as err:
            login.service_ticket("hbase/localhost@DC2.TEST", "the Thrift gateway localhost:9090 of dc2")
        assert err.value.kind == "no_trust"
        assert "the Thrift gateway localhost:9090 of dc2" in str(err.value)
        assert "krbtgt/DC2.TEST@DC1.TEST" in str(err.value)
        login.service_ticket("hbase/localhost@DC1.TEST", "DC1's own region servers")  # its own realm still works
    finally:
        kdc._add_trusts("DC1.TEST")  # put the trust back for the module's other tests


def test_the_shells_ticket_cache_is_private_filled_and_replaced_before_it_expires(kdc, tmp_path):
    keytab = kdc.keytab(["shell-user@DC1.TEST"], tmp_path / "shell.keytab")
    cache = ShellTicketCache("shell-user@DC1.TEST", str(keytab))
    with cache.kept_fresh() as env:
        assert env["KRB5CCNAME"] == f"FILE:{cache.path}"
        assert env["KRB5_CONFIG"] == str(kdc.krb5_conf.resolve())
        assert f"-Djava.security.krb5.conf={kdc.krb5_conf.resolve()}" in env["HBASE_SHELL_OPTS"]
        assert stat.S_IMODE(os.stat(cache.directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(cache.path).st_mode) == 0o600
        listed = subprocess.run(["klist"], env={**os.environ, **env}, capture_output=True, text=True)
        assert "Default principal: shell-user@DC1.TEST" in listed.stdout
        first_expiry = cache.expires
        wait_for(lambda: cache.fills >= 2, timeout=LIFETIME_S + 5, what="the cache renewed while in use")
        assert cache.expires > first_expiry
        renewed = subprocess.run(["klist"], env={**os.environ, **env}, capture_output=True, text=True)
        assert renewed.returncode == 0 and "krbtgt/DC1.TEST@DC1.TEST" in renewed.stdout
