package local.hbasemigration.jvm;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.MetricsConnection;
import org.apache.hadoop.hbase.ipc.NettyRpcClient;

/**
 * HBase's RPC client (Netty's, the default) whose connections to the region servers and the master leave from one
 * local address: {@link #BIND_ADDRESS}. HBase's client has no setting of its own for it (its RpcClientFactory
 * passes no local address), so a connection names this class in {@code hbase.rpc.client.impl} (a connection's
 * {@code client_bind_address}: hbase_migration/data/datapath/native.py {@code client_properties}). On a host with
 * several interfaces it picks the one whose route (and firewall, and accounting) leads to that cluster; the test
 * bed's WAN (realhbase/rpclink.py) tells a remote datacenter's reads from a local one's by it.
 *
 * <p>Both constructors call Netty's four-argument one, which HBase 2.5, 2.6 and 3.0 have; HBase 2.6's factory
 * calls the five-argument one, whose connection attributes (none unless an application sets them on its
 * connection; the toolkit never does) are dropped.
 */
public class BoundRpcClient extends NettyRpcClient {
  /** The local address (an IP address of this host) the client's connections leave from. */
  public static final String BIND_ADDRESS = "hbase-migration.rpc.client.bind.address";

  public BoundRpcClient(Configuration conf, String clusterId, SocketAddress localAddr, MetricsConnection metrics) {
    super(conf, clusterId, bindAddress(conf, localAddr), metrics);
  }

  public BoundRpcClient(Configuration conf, String clusterId, SocketAddress localAddr, MetricsConnection metrics,
      Map<String, byte[]> connectionAttributes) {
    this(conf, clusterId, localAddr, metrics);
  }

  /** {@link #BIND_ADDRESS} with any free port; without it, what HBase's factory gave (none). */
  static SocketAddress bindAddress(Configuration conf, SocketAddress given) {
    String host = conf.getTrimmed(BIND_ADDRESS, "");
    return host.isEmpty() ? given : new InetSocketAddress(host, 0);
  }

  /** The address this client's connections leave from (null: the kernel's choice). */
  SocketAddress localAddress() {
    return localAddr;
  }
}
