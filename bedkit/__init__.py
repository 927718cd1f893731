"""What both test beds are built from: realhbase (real Apache HBase and HDFS) and minihbase (the stand-in) start the
same Debian ZooKeeper, the same MIT KDC and secured stack (realms, keytabs, TLS files, SASL ZooKeeper), take free
loopback ports the same way and probe their gateways with the same Thrift IDLs. It imports neither bed and nothing
of the toolkit (which keeps its own IDL and its own Kerberos code: each side is the other's check).

    ports.py           free ports, and ports below the kernel's ephemeral range for servers that bind later
    zookeeper.py       Debian's ZooKeeper, plain or SASL
    kdc.py             an MIT KDC with realms and cross-realm trusts, principals, keytabs
    security/          the secured stack (stack.py: KDC + keytabs + TLS + SASL ZooKeeper), GSSAPI on python-gssapi
                       (gss.py), auth_to_local rules (names.py), test certificates (tls.py), SASL kazoo (zk.py)
    idl.py             HBase's Thrift1 (Hbase.thrift) and Thrift2 (hbase2.thrift) IDLs as thriftpy2 modules
"""
