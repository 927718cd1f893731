"""The security preflight's decisions over gathered facts (pure): each failure names the principal or endpoint
and says the fix; passing checks say what was checked."""
from hbase_migration.migration.checks import ERROR, WARNING
from hbase_migration.migration.preflight_security import LoginFact, Probe, SecurityFacts, evaluate

OK_LOGIN = LoginFact("source", "hbase_source", "hbase-migration@DC1.TEST", "/k/m.keytab")
OK_TARGET = LoginFact("target", "hbase_target", "hbase-migration@DC1.TEST", "/k/m.keytab")


def probe(which="target", channel="thrift2", endpoint="localhost:9091", service="hbase/localhost@DC2.TEST", **kw):
    return Probe(which, f"hbase_{which}", channel, endpoint, service, **kw)


def by_name(results):
    return {r.name: r for r in results}


def test_everything_accepted_passes_and_says_what_was_checked():
    facts = SecurityFacts((OK_LOGIN, OK_TARGET), (
        probe("source", "zookeeper", "127.0.0.1:2181", "zookeeper/localhost@DC1.TEST", skew_s=None),
        probe("source", "thrift1", "localhost:9090", "hbase/localhost@DC1.TEST", wanted_qop="auth-conf",
              offered_qop=("auth-conf",)),
        probe("target", "jmx", "localhost:16030", "HTTP/localhost@DC2.TEST", skew_s=0.4),
    ))
    results = by_name(evaluate(facts))
    assert all(r.ok for r in results.values())
    assert results["source_kerberos_login"].reason == ("hbase_source: hbase-migration@DC1.TEST has a ticket from "
                                                       "keytab /k/m.keytab")
    assert results["source_authentication"].reason == ("hbase_source: accepted by all 2 endpoint(s) (thrift1, "
                                                       "zookeeper)")
    assert results["source_thrift_qop"].reason == "hbase_source: every gateway agreed on QOP auth-conf"
    assert results["clock_skew"].reason == "worst: hbase_target jmx localhost:16030 0s ahead of this host"


def test_a_failed_login_is_one_error_and_that_clusters_endpoints_are_not_blamed_again():
    bad = LoginFact("source", "hbase_source", "hbase-migration@DC1.TEST", "/k/other.keytab",
                    "keytab /k/other.keytab does not hold hbase-migration@DC1.TEST", "bad_key", "ktadd ...")
    results = evaluate(SecurityFacts((bad, OK_TARGET), (probe(),)))
    names = [r.name for r in results]
    assert names.count("source_kerberos_login") == 1 and "source_authentication" not in names
    login = by_name(results)["source_kerberos_login"]
    assert not login.ok and login.severity == ERROR and login.fix == "ktadd ..."
    assert "does not hold hbase-migration@DC1.TEST" in login.reason


def test_endpoints_failing_for_one_reason_are_one_error_naming_each_endpoint_and_principal():
    trust = dict(kind="no_trust", fix="create krbtgt/DC2.TEST@DC1.TEST ...", error="no cross-realm trust")
    facts = SecurityFacts((OK_LOGIN, OK_TARGET), (
        probe(channel="thrift2", endpoint="localhost:9091", **trust),
        probe(channel="jmx", endpoint="localhost:16030", service="HTTP/localhost@DC2.TEST", **trust),
        probe(channel="webhdfs", endpoint="http://localhost:9870", service="HTTP/localhost@DC2.TEST",
              error="HTTP 401", kind="refused", fix="check spnego_principal"),
    ))
    failed = [r for r in evaluate(facts) if r.name == "target_authentication"]
    assert len(failed) == 2
    trust_result = next(r for r in failed if "krbtgt" in r.fix)
    assert trust_result.reason == ("hbase_target: thrift2 localhost:9091 (hbase/localhost@DC2.TEST): no cross-realm "
                                   "trust; jmx localhost:16030 (HTTP/localhost@DC2.TEST): no cross-realm trust")


def test_gateways_offering_another_qop_are_one_error_naming_each_and_both_qops():
    facts = SecurityFacts((OK_LOGIN,), (
        probe("source", "thrift1", "localhost:9090", wanted_qop="auth-conf", offered_qop=("auth-int",),
              error="QopMismatch", kind="qop"),
        probe("source", "thrift2", "localhost:9091", wanted_qop="auth-conf", offered_qop=("auth-int",),
              error="QopMismatch", kind="qop"),))
    results = [r for r in evaluate(facts) if r.name == "source_thrift_qop"]
    assert len(results) == 1
    result = results[0]
    assert not result.ok
    assert result.reason == ("hbase_source: thrift1 gateway localhost:9090, thrift2 gateway localhost:9091 offer "
                             "SASL QOP auth-int, the connection's thrift_qop is auth-conf")
    assert result.fix.startswith("set thrift_qop to auth-int")
    assert by_name(evaluate(facts))["source_authentication"].ok  # authenticated; only the QOP disagrees


def test_skew_beyond_kerberos_limit_is_an_error_and_explains_the_refusals_it_caused():
    facts = SecurityFacts((OK_LOGIN, OK_TARGET), (
        probe(channel="jmx", endpoint="localhost:16030", skew_s=612.0, error="HTTP 401", kind="refused"),
        probe(channel="thrift2", error="Clock skew too great", kind="skew"),
    ))
    results = evaluate(facts)
    skew = by_name(results)["clock_skew"]
    assert not skew.ok and skew.severity == ERROR
    assert "hbase_target jmx localhost:16030: its clock is 612s ahead of this host's" in skew.reason
    assert "hbase_target thrift2 localhost:9091: Clock skew too great" in skew.reason
    assert "KRB_AP_ERR_SKEW" in skew.reason and "synchronize the clocks" in skew.fix
    assert not [r for r in results if r.name == "target_authentication" and not r.ok]  # the skew explains them


def test_a_gateway_refusing_on_a_host_whose_clock_is_skewed_is_put_down_to_the_skew():
    facts = SecurityFacts((OK_LOGIN, OK_TARGET), (
        probe(channel="jmx", endpoint="10.0.0.2:16030", skew_s=-400.0),
        probe(channel="thrift1", endpoint="10.0.0.2:9090", error="GSS initiate failed", kind="refused"),
        probe(channel="thrift2", endpoint="10.0.0.3:9091", error="GSS initiate failed", kind="refused"),
    ))
    results = evaluate(facts)
    skew = by_name(results)["clock_skew"]
    assert skew.reason.startswith("hbase_target jmx 10.0.0.2:16030: its clock is 400s behind this host's; refused "
                                  "on those hosts: hbase_target thrift1 10.0.0.2:9090")
    auth = [r for r in results if r.name == "target_authentication"]
    assert len(auth) == 1 and "10.0.0.3:9091" in auth[0].reason and "10.0.0.2" not in auth[0].reason


def test_a_small_skew_warns_and_no_skew_measured_says_nothing():
    warn = by_name(evaluate(SecurityFacts((OK_LOGIN,), (probe("source", "jmx", skew_s=-90.0),))))["clock_skew"]
    assert (warn.ok, warn.severity) == (False, WARNING)
    assert "90s behind this host's" in warn.reason
    assert "clock_skew" not in by_name(evaluate(SecurityFacts((OK_LOGIN,), (probe("source", "zookeeper"),))))


def test_different_krb5_conf_files_are_refused():
    result = by_name(evaluate(SecurityFacts((), (), "the connections name different krb5.conf files")))["krb5_conf"]
    assert not result.ok and "same krb5.conf" in result.fix


def test_an_endpoint_or_kdc_that_did_not_answer_is_retried_a_refusal_is_not():
    silent = probe(error="ConnectionRefusedError: [Errno 111] Connection refused", kind="unreachable")
    refused = probe("source", error="SaslError: GSS failure: bad key", kind="bad_key", fix="ktadd ...")
    no_kdc = LoginFact("target", "hbase_target", "hbase-migration@DC1.TEST", "/k/m.keytab",
                       "Cannot contact any KDC for realm 'DC2.TEST'", "kdc_unreachable")
    results = by_name(evaluate(SecurityFacts((OK_LOGIN, OK_TARGET), (silent, refused))))
    assert results["target_authentication"].transient and not results["source_authentication"].transient
    login = by_name(evaluate(SecurityFacts((OK_LOGIN, no_kdc), ())))["target_kerberos_login"]
    assert not login.ok and login.transient
