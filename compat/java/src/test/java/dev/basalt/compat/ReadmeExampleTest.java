package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

/** README.md's Java example, verbatim between the markers, kept passing here. */
class ReadmeExampleTest {

  static String example(String quorum) throws Exception {
    StringBuilder out = new StringBuilder();
    // README-BEGIN
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", quorum); // e.g. "127.0.0.1:2181"
    try (Connection conn = ConnectionFactory.createConnection(conf);
         Admin admin = conn.getAdmin()) {
      TableName name = TableName.valueOf("readme_example");
      admin.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of("cf")).build());
      try (Table table = conn.getTable(name)) {
        table.put(new Put(Bytes.toBytes("row1"))
            .addColumn(Bytes.toBytes("cf"), Bytes.toBytes("greeting"), Bytes.toBytes("hello")));
        Result row = table.get(new Get(Bytes.toBytes("row1")));
        out.append(Bytes.toString(row.getValue(Bytes.toBytes("cf"), Bytes.toBytes("greeting"))));
        try (ResultScanner scanner = table.getScanner(new Scan())) {
          for (Result r : scanner) {
            out.append(" ").append(Bytes.toString(r.getRow()));
          }
        }
      }
      admin.disableTable(name);
      admin.deleteTable(name);
    }
    // README-END
    return out.toString();
  }

  @Test
  void the_readme_example_connects_writes_reads_and_scans() throws Exception {
    String quorum = System.getProperty("hbase.zookeeper.quorum");
    org.junit.jupiter.api.Assumptions.assumeTrue(quorum != null && !quorum.isEmpty(),
        "the README example connects through ZooKeeper");
    assertEquals("hello row1", example(quorum));
  }
}
