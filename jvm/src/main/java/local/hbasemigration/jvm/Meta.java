package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.KeepDeletedCells;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.util.Bytes;

/** What the driver asks a cluster before it plans: a table's families, its regions, the cluster's id; and the
 * key sample of one region that splits a big one (a task of its own). */
final class Meta {
  private Meta() {}

  /** family -> {versions, keep_deleted_cells}; {} when the table does not exist. */
  static ObjectNode families(Connection connection, String table) throws IOException {
    ObjectNode out = Json.object();
    try (Admin admin = connection.getAdmin()) {
      TableDescriptor descriptor = admin.getDescriptor(TableName.valueOf(table));
      for (ColumnFamilyDescriptor family : descriptor.getColumnFamilies()) {
        ObjectNode f = out.putObject(Bytes.toString(family.getName()));
        f.put("versions", family.getMaxVersions());
        f.put("keep_deleted_cells", family.getKeepDeletedCells() != KeepDeletedCells.FALSE);
      }
    } catch (TableNotFoundException e) {
      return Json.object();
    }
    return out;
  }

  /** The table's regions sorted by start key, each with the host of its region server; [] when there is none. */
  static ArrayNode regions(Connection connection, String table) throws IOException {
    ArrayNode out = Json.array();
    List<HRegionLocation> locations;
    try (RegionLocator locator = connection.getRegionLocator(TableName.valueOf(table))) {
      locations = new ArrayList<>(locator.getAllRegionLocations());
    } catch (TableNotFoundException e) {
      return out;
    }
    locations.sort((a, b) -> Bytes.compareTo(a.getRegion().getStartKey(), b.getRegion().getStartKey()));
    for (HRegionLocation location : locations) {
      ObjectNode r = out.addObject();
      r.put("start_key", Json.hex(location.getRegion().getStartKey()));
      r.put("end_key", Json.hex(location.getRegion().getEndKey()));
      r.put("name", Json.hex(location.getRegion().getRegionName()));
      r.put("host", location.getServerName() == null ? "" : location.getHostname());
    }
    return out;
  }

  static String clusterId(Connection connection) throws IOException {
    try (Admin admin = connection.getAdmin()) {
      return admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.CLUSTER_ID)).getClusterId();
    }
  }

  /** Row count and evenly spaced keys of one region (hbase_migration/data/partitions.py {@code sample_region}):
   * every stride-th key, the stride doubled whenever max_keys are held. */
  static ObjectNode sample(JsonNode spec, JsonNode region) throws IOException {
    ClusterSpec source = ClusterSpec.fromJson(spec.get("source"));
    ReadSpec read = ReadSpec.fromJson(spec, spec.get("table").asText(), true, false);
    byte[] start = Json.unhex(region.get("start_row").asText());
    byte[] stop = Json.unhex(region.get("stop_row").asText());
    int maxKeys = (int) Json.getLong(spec, "max_keys", 1024);
    ReadSpec keysOnly = new ReadSpec(read.table, read.families, read.startMs, read.endMs, 1, false, 2000, 0,
        read.maxResultBytes);
    List<byte[]> keys = new ArrayList<>();
    long rows = 0;
    int stride = 1;
    org.apache.hadoop.hbase.client.Scan scan = keysOnly.scan(start, stop);
    scan.setFilter(new org.apache.hadoop.hbase.filter.FilterList(
        org.apache.hadoop.hbase.filter.FilterList.Operator.MUST_PASS_ALL,
        new org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter(), new org.apache.hadoop.hbase.filter.KeyOnlyFilter()));
    Connection connection = Connections.get(source);
    try (org.apache.hadoop.hbase.client.Table t = connection.getTable(TableName.valueOf(read.table));
        org.apache.hadoop.hbase.client.ResultScanner scanner = t.getScanner(scan)) {
      for (Result r = scanner.next(); r != null; r = scanner.next()) {
        if (rows % stride == 0) {
          keys.add(r.getRow());
          if (keys.size() >= maxKeys) {
            List<byte[]> half = new ArrayList<>();
            for (int i = 0; i < keys.size(); i += 2) {
              half.add(keys.get(i));
            }
            keys = half;
            stride *= 2;
          }
        }
        rows++;
      }
    }
    ObjectNode out = Json.object();
    out.put("name", region.path("name").asText(""));
    out.put("rows", rows);
    ArrayNode k = out.putArray("keys");
    keys.forEach(key -> k.add(Json.hex(key)));
    return out;
  }
}
