"""realhbase's choice of the shell and Thrift gateway that go with an HBase release (pom.xml's properties)."""
from realhbase.jars import companions, pom_properties


def test_the_default_hbase_keeps_the_2_4_shell_with_its_htrace_compat_jars():
    props = pom_properties()
    chosen = companions(props["hbase.version"], props)
    assert chosen == {"shell": props["hbase.shell.version"], "thrift": props["hbase.thrift.version"],
                      "compat": props["shell.compat.artifacts"].split(",")}
    assert chosen["shell"] == "2.4.17" and len(chosen["compat"]) == 2
    assert companions("2.5.13-hadoop3", props)["shell"] == "2.4.17"


def test_hbase_3_takes_the_3_x_shell_and_gateway_and_no_compat_jars():
    """The 2.4 shell cannot load on 3.x's client (HColumnDescriptor is gone); the 3.x shell has the sync
    replication commands."""
    props = pom_properties()
    for version in ("3.0.0-alpha-4", "3.0.0", "4.0.0-alpha-1"):
        chosen = companions(version, props)
        assert chosen == {"shell": props["hbase3.shell.version"], "thrift": props["hbase3.thrift.version"],
                          "compat": []}, version
    assert props["hbase3.shell.version"].startswith("3.")
