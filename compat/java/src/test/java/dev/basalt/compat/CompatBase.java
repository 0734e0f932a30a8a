package dev.basalt.compat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * What every test class shares: one connection configured only from the
 * system properties scripts/java-suite passes, and tables named with a
 * per-test unique prefix that are dropped after each test.
 */
public abstract class CompatBase {
  protected static final byte[] CF = Bytes.toBytes("cf");
  protected static final byte[] CF2 = Bytes.toBytes("cf2");
  protected static final byte[] Q = Bytes.toBytes("q");

  protected static Connection conn;
  protected static Admin admin;
  private final List<TableName> created = new ArrayList<>();

  /** The client configuration from the runner's system properties only. */
  public static Configuration clientConfiguration() {
    Configuration conf = HBaseConfiguration.create();
    for (String key : new String[] {"hbase.zookeeper.quorum", "zookeeper.znode.parent",
        "hbase.client.registry.impl", "hbase.client.bootstrap.servers",
        "hbase.client.netty.tls.enabled", "hbase.rpc.tls.truststore.location",
        "hbase.rpc.tls.truststore.type"}) {
      String value = System.getProperty(key);
      if (value != null && !value.isEmpty()) {
        conf.set(key, value);
      }
    }
    // Hang guards only: a broken server fails a test instead of stalling the run.
    conf.setInt("hbase.client.retries.number", Integer.getInteger("basalt.retries", 6));
    conf.setInt("hbase.client.operation.timeout", 120_000);
    conf.setInt("hbase.rpc.timeout", 60_000);
    return conf;
  }

  @BeforeAll
  static void connect() throws IOException {
    if (conn == null || conn.isClosed()) {
      conn = ConnectionFactory.createConnection(clientConfiguration());
      admin = conn.getAdmin();
    }
  }

  @AfterAll
  static void disconnect() throws IOException {
    if (admin != null) {
      admin.close();
    }
    if (conn != null) {
      conn.close();
    }
    conn = null;
    admin = null;
  }

  /** A table name no other test (or earlier run) uses. */
  protected TableName uniqueName(String what) {
    String name = "jc_" + getClass().getSimpleName() + "_" + what + "_"
        + UUID.randomUUID().toString().substring(0, 8);
    TableName table = TableName.valueOf(name);
    created.add(table);
    return table;
  }

  /** A table with families cf and cf2 (three versions each). */
  protected TableName createTable(String what) throws IOException {
    return createTable(what, null);
  }

  protected TableName createTable(String what, byte[][] splits) throws IOException {
    TableName name = uniqueName(what);
    TableDescriptorBuilder b = TableDescriptorBuilder.newBuilder(name)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(CF).setMaxVersions(3).build())
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(CF2).setMaxVersions(3).build());
    if (splits == null) {
      admin.createTable(b.build());
    } else {
      admin.createTable(b.build(), splits);
    }
    return name;
  }

  protected void remember(TableName name) {
    created.add(name);
  }

  @AfterEach
  void dropTables() {
    for (TableName name : created) {
      try {
        if (admin.tableExists(name)) {
          if (admin.isTableEnabled(name)) {
            admin.disableTable(name);
          }
          admin.deleteTable(name);
        }
      } catch (IOException e) {
        // Cleanup is best effort: the test's own assertions decide.
        System.err.println("cleanup of " + name + " failed: " + e);
      }
    }
    created.clear();
  }

  protected static byte[] b(String s) {
    return Bytes.toBytes(s);
  }

  protected static String s(byte[] v) {
    return v == null ? null : Bytes.toString(v);
  }
}
