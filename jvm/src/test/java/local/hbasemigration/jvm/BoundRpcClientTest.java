package local.hbasemigration.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.ipc.RpcClient;
import org.apache.hadoop.hbase.ipc.RpcClientFactory;
import org.junit.jupiter.api.Test;

/** HBase's own factory, given {@code hbase.rpc.client.impl}, builds the client bound where the property says. */
class BoundRpcClientTest {
  @Test
  void hbasesFactoryBuildsTheClientBoundToTheConfiguredAddress() throws Exception {
    Configuration conf = new Configuration(false);
    conf.set(RpcClientFactory.CUSTOM_RPC_CLIENT_IMPL_CONF_KEY, BoundRpcClient.class.getName());
    conf.set(BoundRpcClient.BIND_ADDRESS, " 127.41.0.2 ");
    try (RpcClient client = RpcClientFactory.createClient(conf, HConstants.CLUSTER_ID_DEFAULT)) {
      assertTrue(client instanceof BoundRpcClient, client.getClass().getName());
      assertEquals(new InetSocketAddress("127.41.0.2", 0), ((BoundRpcClient) client).localAddress());
    }
  }

  @Test
  void withoutTheAddressTheKernelChoosesAsHBasesOwnClientLetsIt() {
    assertNull(BoundRpcClient.bindAddress(new Configuration(false), null));
  }
}
