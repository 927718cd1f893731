"""minihbase's security, the pure parts: auth_to_local rules, AccessController's messages, znode ACLs, the
security settings' validation, the shell's data formatting."""
from __future__ import annotations

import time

import pytest
from kazoo.security import ACL, Id, Permissions

from bedkit.security import names, zk
from minihbase.security import authz
from minihbase.security.settings import SecurityConfigError, SecuritySettings
from minihbase.shell_data import local_date_time, to_string_binary, two_columns


# ---------------------------------------------------------------------------------------------- auth_to_local
def test_default_rule_maps_the_default_realm_only():
    rules = names.parse_rules("DEFAULT")
    assert names.short_name("hbase/localhost@DC1.TEST", rules, "DC1.TEST") == "hbase"
    assert names.short_name("intruder@DC1.TEST", rules, "DC1.TEST") == "intruder"
    with pytest.raises(names.NoMatchingRule, match=r"\$NoMatchingRule: No rules applied to hbase/localhost@DC2.TEST"):
        names.short_name("hbase/localhost@DC2.TEST", rules, "DC1.TEST")


def test_cross_realm_rules_map_the_trusted_realm_to_first_components():
    text = names.cross_realm_rules(["DC2.TEST"])
    assert text == r"RULE:[1:$1@$0](.*@DC2\.TEST)s/@.*// RULE:[2:$1@$0](.*@DC2\.TEST)s/@.*// DEFAULT"
    rules = names.parse_rules(text)
    assert names.short_name("hbase/localhost@DC2.TEST", rules, "DC1.TEST") == "hbase"
    assert names.short_name("hbase@DC2.TEST", rules, "DC1.TEST") == "hbase"
    assert names.short_name("hbase-migration@DC1.TEST", rules, "DC1.TEST") == "hbase-migration"
    with pytest.raises(names.NoMatchingRule):
        names.short_name("hbase/localhost@DC3.TEST", rules, "DC1.TEST")


def test_rules_with_substitution_lowercase_and_a_non_simple_result():
    rules = names.parse_rules("RULE:[2:$1-$2@$0](svc-.*@EX\\.COM)s/-.*@EX\\.COM/X/L")
    assert names.short_name("svc/host@EX.COM", rules, "OTHER") == "svcx"
    with pytest.raises(names.NoMatchingRule):  # the regex is case-sensitive
        names.short_name("SVC/host@EX.COM", rules, "OTHER")
    with pytest.raises(names.NoMatchingRule, match="Non-simple name"):
        names.short_name("a/b@EX.COM", names.parse_rules("RULE:[2:$1/$2]"), "OTHER")
    with pytest.raises(names.BadRules, match="Invalid rule: BOGUS"):
        names.parse_rules("DEFAULT BOGUS")


# ---------------------------------------------------------------------------------------------- authz texts
def test_access_controller_messages_are_byte_for_byte_hbases():
    ade = "org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient permissions"
    assert authz.global_denied("intruder", "ADMIN") == f"{ade} for user 'intruder' (global, action=ADMIN)"
    assert authz.namespace_denied("intruder@DC1.TEST", "t", ["b", "a"], "CREATE") == (
        f"{ade} (user=intruder@DC1.TEST, scope=default, params=[namespace=default,table=default:t,family=a|b],"
        "action=CREATE)")
    assert authz.table_denied("i@R", "ns:t", "CREATE", filter_user=True) == (
        f"{ade} (user=i@R, scope=ns:t, params=[table=ns:t,],action=CREATE)")
    assert authz.table_denied("i@R", "t", "WRITE", family="cf:q") == (
        f"{ade} (user=i@R, scope=default:t, family=cf:q, params=[table=default:t,family=cf:q],action=WRITE)")
    assert authz.read_denied("i", "default:t") == f"{ade} for user 'i' (table=t, action=READ)"


def test_only_superusers_change_the_control_api():
    from minihbase.httpserver import Request

    authorizer = authz.Authorizer(["hbase-migration"])

    def request(method, path, short, body=b"{}"):
        return Request(method, path, {}, {}, body, user=f"{short}@DC1.TEST", short_user=short)
    assert authorizer.control_policy(request("POST", "/control/kill-rs", "hbase")) is None
    assert authorizer.control_policy(request("POST", "/control/kill-rs", "hbase-migration")) is None
    assert authorizer.control_policy(request("GET", "/control/status", "intruder")) is None
    assert "global, action=ADMIN" in authorizer.control_policy(request("POST", "/control/kill-rs", "intruder"))
    denied = authorizer.control_policy(request("POST", "/control/disable-table", "intruder", b'{"table": "t"}'))
    assert denied.endswith("(user=intruder@DC1.TEST, scope=default:t, params=[table=default:t,],action=CREATE)")
    assert authorizer.replication_policy(request("POST", "/replicateWALEntry", "hbase")) is None
    assert "action=WRITE" in authorizer.replication_policy(request("POST", "/replicateWALEntry", "intruder"))


# ---------------------------------------------------------------------------------------------- znode ACLs
def test_znode_acls_as_zkutil_create_acl():
    world = ACL(Permissions.READ, Id("world", "anyone"))
    base = "/hbase-dc1"
    private = zk.hbase_acls(f"{base}/replication/peers/1", base, ["hbase-migration", "hbase"])
    assert private == [ACL(Permissions.ALL, Id("sasl", "hbase")), ACL(Permissions.ALL, Id("sasl", "hbase-migration")),
                       zk.CREATOR_ALL]
    for readable in ("", "/master", "/hbaseid", "/rs", "/meta-region-server", "/meta-region-server-1", "/table",
                     "/table/t1"):
        assert world in zk.hbase_acls(base + readable, base, []), readable
    for hidden in ("/rs/host,1,2", "/replication", "/table-lock", "/splitWAL", "/master-maintenance"):
        assert world not in zk.hbase_acls(base + hidden, base, []), hidden
    assert zk.hbase_acls("/elsewhere", base, []) == list(zk.OPEN_ACL_UNSAFE)
    assert zk.hbase_acls("/hbase-dc10", base, []) == list(zk.OPEN_ACL_UNSAFE)


# ---------------------------------------------------------------------------------------------- settings
def test_security_settings_refuse_a_gateway_without_authentication_and_name_the_fix():
    with pytest.raises(SecurityConfigError, match="need security.thrift_qop .* or security.thrift_http"):
        SecuritySettings.from_dict("dc1", {"realm": "DC1.TEST"})
    with pytest.raises(SecurityConfigError, match="set one of them"):
        SecuritySettings.from_dict("dc1", {"realm": "DC1.TEST", "thrift_qop": "auth", "thrift_http": True})
    with pytest.raises(SecurityConfigError, match="thrift_ssl needs thrift_http"):
        SecuritySettings.from_dict("dc1", {"realm": "DC1.TEST", "thrift_qop": "auth", "thrift_ssl": True})
    with pytest.raises(SecurityConfigError, match="must be auth, auth-int or auth-conf"):
        SecuritySettings.from_dict("dc1", {"realm": "DC1.TEST", "thrift_qop": "secret"})
    with pytest.raises(SecurityConfigError, match="unknown security setting"):
        SecuritySettings.from_dict("dc1", {"realm": "DC1.TEST", "thrift_qop": "auth", "qop": "auth"})
    with pytest.raises(SecurityConfigError, match="upper-case realm"):
        SecuritySettings.from_dict("dc1", {"realm": "dc1.test", "thrift_qop": "auth"})


def test_security_settings_defaults_and_qop_aliases():
    s = SecuritySettings.from_dict("dc2", {"realm": "DC2.TEST", "thrift_qop": "privacy"})
    assert (s.thrift_qop, s.hbase_principal, s.spnego_principal) == ("auth-conf", "hbase/_HOST@DC2.TEST",
                                                                      "HTTP/_HOST@DC2.TEST")
    assert SecuritySettings.from_dict("x", {"realm": "R", "thrift_qop": "integrity"}).thrift_qop == "auth-int"


# ---------------------------------------------------------------------------------------------- shell output
def test_to_string_binary_is_bytes_to_string_binary():
    assert to_string_binary(b"row-1 ok~") == "row-1 ok~"
    assert to_string_binary(b"\x00\x7f\\\xff\n") == "\\x00\\x7F\\x5C\\xFF\\x0A"


def test_local_date_time_drops_zero_seconds_and_millis(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert local_date_time(1700000000123) == "2023-11-14T22:13:20.123"
        assert local_date_time(1700000000100) == "2023-11-14T22:13:20.100"
        assert local_date_time(1700000000000) == "2023-11-14T22:13:20"
        assert local_date_time(1699999980000) == "2023-11-14T22:13"
        assert local_date_time(5) == "1970-01-01T00:00:00.005"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_two_columns_at_width_zero():
    assert two_columns("ROW", "COLUMN+CELL", inset=False) == "ROW  COLUMN+CELL"
    assert two_columns("r1", "column=cf:a, timestamp=1, value=v") == " r1 column=cf:a, timestamp=1, value=v"
