"""What a cluster is and how to reach it (the bottom room: imports nothing else of the library).

The cluster description and its keys (`cluster`, `security`, `connections`), Kerberos and SASL/SPNEGO
(`kerberos`, `sasl`, `spnego`, `thrift_transports`), and `channels`, the one module that opens every channel to a
cluster: ZooKeeper (`zk`: znode codecs and reads), Thrift1/Thrift2 (`thrift`; HBase's IDLs in `idl`), HTTP for
`/jmx`, `/conf` (`hbase_conf`) and WebHDFS (`hdfs`), and the HBase shell (`shell`, the runner). Whether an error
means an endpoint did not answer or answered a fact: `reachability`.
"""
