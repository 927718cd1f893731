package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;

/**
 * How to reach one cluster with HBase's client: the client properties the Python driver computed from the
 * cluster's connection (hbase_migration/data/datapath/native.py {@code client_properties}: the ZooKeeper quorum,
 * znode parent, timeouts, retries and, on a Kerberized cluster, the client's principal and keytab and the servers'
 * principals). Serializable: it travels inside each Spark task.
 */
final class ClusterSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  final String name;
  final TreeMap<String, String> properties = new TreeMap<>();

  ClusterSpec(String name, Map<String, String> properties) {
    this.name = name;
    this.properties.putAll(properties);
  }

  static ClusterSpec fromJson(JsonNode node) {
    TreeMap<String, String> props = new TreeMap<>();
    JsonNode p = node.get("properties");
    if (p != null) {
      for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        props.put(e.getKey(), e.getValue().asText());
      }
    }
    return new ClusterSpec(Json.getText(node, "name"), props);
  }

  /** One connection per distinct set of properties in a JVM (the key names no secret: a keytab's path). */
  String key() {
    return properties.toString();
  }

  Configuration configuration() {
    Configuration conf = HBaseConfiguration.create();
    properties.forEach(conf::set);
    return conf;
  }
}
