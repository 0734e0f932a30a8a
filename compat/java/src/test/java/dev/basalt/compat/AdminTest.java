package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.replication.ReplicationPeerConfig;
import org.apache.hadoop.hbase.replication.ReplicationPeerDescription;
import org.junit.jupiter.api.Test;

/** Admin: tables, families, regions, namespaces, cluster, replication peers. */
class AdminTest extends CompatBase {

  @Test
  void a_created_table_exists_and_is_enabled() throws Exception {
    TableName name = createTable("create");
    assertTrue(admin.tableExists(name));
    assertTrue(admin.isTableEnabled(name));
    assertTrue(admin.isTableAvailable(name));
  }

  @Test
  void creating_an_existing_table_is_refused() throws Exception {
    TableName name = createTable("dup");
    assertThrows(org.apache.hadoop.hbase.TableExistsException.class, () -> admin.createTable(
        TableDescriptorBuilder.newBuilder(name)
            .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build()));
  }

  @Test
  void create_with_split_keys_makes_one_region_per_range() throws Exception {
    TableName name = createTable("splits", new byte[][] {b("g"), b("p")});
    List<RegionInfo> regions = admin.getRegions(name);
    assertEquals(3, regions.size());
    assertEquals(0, regions.get(0).getStartKey().length);
    assertArrayEquals(b("g"), regions.get(1).getStartKey());
    assertArrayEquals(b("p"), regions.get(2).getStartKey());
  }

  @Test
  void create_with_a_key_range_and_region_count() throws Exception {
    TableName name = uniqueName("range");
    admin.createTable(TableDescriptorBuilder.newBuilder(name)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build(), b("a"), b("z"), 5);
    assertEquals(5, admin.getRegions(name).size());
  }

  @Test
  void get_descriptor_answers_families_and_settings() throws Exception {
    TableName name = createTable("descr");
    TableDescriptor d = admin.getDescriptor(name);
    assertEquals(name, d.getTableName());
    assertEquals(2, d.getColumnFamilyCount());
    assertEquals(3, d.getColumnFamily(CF).getMaxVersions());
  }

  @Test
  void get_descriptor_of_a_missing_table_is_table_not_found() {
    assertThrows(TableNotFoundException.class,
        () -> admin.getDescriptor(TableName.valueOf("jc_absent_" + System.nanoTime())));
  }

  @Test
  void modify_table_changes_a_family_setting() throws Exception {
    TableName name = createTable("modify");
    TableDescriptor d = admin.getDescriptor(name);
    admin.modifyTable(TableDescriptorBuilder.newBuilder(d)
        .modifyColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(d.getColumnFamily(CF))
            .setMaxVersions(7).build()).build());
    assertEquals(7, admin.getDescriptor(name).getColumnFamily(CF).getMaxVersions());
  }

  @Test
  void modify_column_family_changes_time_to_live() throws Exception {
    TableName name = createTable("modfam");
    admin.modifyColumnFamily(name, ColumnFamilyDescriptorBuilder.newBuilder(CF2)
        .setTimeToLive(3600).setMaxVersions(2).build());
    ColumnFamilyDescriptor f = admin.getDescriptor(name).getColumnFamily(CF2);
    assertEquals(3600, f.getTimeToLive());
    assertEquals(2, f.getMaxVersions());
  }

  @Test
  void add_column_family_makes_it_writable() throws Exception {
    TableName name = createTable("addfam");
    admin.addColumnFamily(name, ColumnFamilyDescriptorBuilder.of("cf3"));
    assertEquals(3, admin.getDescriptor(name).getColumnFamilyCount());
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("r")).addColumn(b("cf3"), Q, b("v")));
      assertEquals("v", s(t.get(new Get(b("r"))).getValue(b("cf3"), Q)));
    }
  }

  @Test
  void delete_column_family_removes_it_and_its_data() throws Exception {
    TableName name = createTable("delfam");
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("keep")).addColumn(CF2, Q, b("drop")));
    }
    admin.deleteColumnFamily(name, CF2);
    assertFalse(admin.getDescriptor(name).hasColumnFamily(CF2));
    try (Table t = conn.getTable(name)) {
      Result r = t.get(new Get(b("r")));
      assertEquals(1, r.size());
      assertEquals("keep", s(r.getValue(CF, Q)));
    }
  }

  @Test
  void disable_and_enable_round_trip() throws Exception {
    TableName name = createTable("disable");
    admin.disableTable(name);
    assertTrue(admin.isTableDisabled(name));
    try (Table t = conn.getTable(name)) {
      assertThrows(Exception.class, () -> t.get(new Get(b("r"))));
    }
    admin.enableTable(name);
    assertTrue(admin.isTableEnabled(name));
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("v")));
      assertTrue(t.exists(new Get(b("r"))));
    }
  }

  @Test
  void deleting_an_enabled_table_is_refused() throws Exception {
    TableName name = createTable("delenabled");
    assertThrows(org.apache.hadoop.hbase.TableNotDisabledException.class,
        () -> admin.deleteTable(name));
  }

  @Test
  void delete_table_removes_it() throws Exception {
    TableName name = createTable("delete");
    admin.disableTable(name);
    admin.deleteTable(name);
    assertFalse(admin.tableExists(name));
  }

  @Test
  void truncate_preserving_splits_keeps_regions_and_drops_rows() throws Exception {
    TableName name = createTable("trunckeep", new byte[][] {b("m")});
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("a")).addColumn(CF, Q, b("v")));
    }
    admin.disableTable(name);
    admin.truncateTable(name, true);
    assertTrue(admin.isTableEnabled(name));
    assertEquals(2, admin.getRegions(name).size());
    try (Table t = conn.getTable(name)) {
      assertEquals(0, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void truncate_without_preserving_splits_leaves_one_region() throws Exception {
    TableName name = createTable("truncdrop", new byte[][] {b("m")});
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("z")).addColumn(CF, Q, b("v")));
    }
    admin.disableTable(name);
    admin.truncateTable(name, false);
    assertEquals(1, admin.getRegions(name).size());
    try (Table t = conn.getTable(name)) {
      assertEquals(0, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void namespaces_can_be_created_listed_and_deleted() throws Exception {
    String ns = "jcns" + System.nanoTime();
    admin.createNamespace(NamespaceDescriptor.create(ns).addConfiguration("k", "v").build());
    try {
      NamespaceDescriptor d = admin.getNamespaceDescriptor(ns);
      assertEquals("v", d.getConfigurationValue("k"));
      assertTrue(Arrays.stream(admin.listNamespaces()).anyMatch(ns::equals));
      assertTrue(Arrays.stream(admin.listNamespaceDescriptors())
          .anyMatch(n -> n.getName().equals("default")));
    } finally {
      admin.deleteNamespace(ns);
    }
    assertFalse(Arrays.stream(admin.listNamespaces()).anyMatch(ns::equals));
  }

  @Test
  void a_table_in_a_non_default_namespace_works() throws Exception {
    String ns = "jcns" + System.nanoTime();
    admin.createNamespace(NamespaceDescriptor.create(ns).build());
    TableName name = TableName.valueOf(ns, "t");
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build());
      try (Table t = conn.getTable(name)) {
        t.put(new Put(b("r")).addColumn(CF, Q, b("v")));
        assertEquals("v", s(t.get(new Get(b("r"))).getValue(CF, Q)));
      }
      assertEquals(List.of(name), Arrays.asList(admin.listTableNamesByNamespace(ns)));
      assertThrows(Exception.class, () -> admin.deleteNamespace(ns));
    } finally {
      if (admin.tableExists(name)) {
        admin.disableTable(name);
        admin.deleteTable(name);
      }
      admin.deleteNamespace(ns);
    }
  }

  @Test
  void list_table_names_with_a_pattern_answers_only_matches() throws Exception {
    TableName a = createTable("listA");
    TableName b2 = createTable("listB");
    List<TableName> found = Arrays.asList(admin.listTableNames(Pattern.compile(".*_listA_.*")));
    assertTrue(found.contains(a));
    assertFalse(found.contains(b2));
  }

  @Test
  void list_table_names_without_a_pattern_answers_every_user_table() throws Exception {
    TableName a = createTable("listall");
    assertTrue(Arrays.asList(admin.listTableNames()).contains(a));
    assertTrue(admin.listTableDescriptors().stream().anyMatch(d -> d.getTableName().equals(a)));
  }

  @Test
  void get_regions_answers_the_tables_regions_only() throws Exception {
    TableName a = createTable("regA", new byte[][] {b("k")});
    createTable("regAB");
    List<RegionInfo> regions = admin.getRegions(a);
    assertEquals(2, regions.size());
    for (RegionInfo r : regions) {
      assertEquals(a, r.getTable());
    }
  }

  @Test
  void split_at_a_key_makes_two_regions() throws Exception {
    TableName name = createTable("split");
    try (Table t = conn.getTable(name)) {
      for (int i = 0; i < 100; i++) {
        t.put(new Put(b(String.format("r%03d", i))).addColumn(CF, Q, b("v")));
      }
    }
    admin.split(name, b("r050"));
    ScanTest.waitForRegions(name, 2);
    List<RegionInfo> regions = admin.getRegions(name);
    assertArrayEquals(b("r050"), regions.get(1).getStartKey());
    try (Table t = conn.getTable(name)) {
      assertEquals(100, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void merging_two_regions_makes_one() throws Exception {
    TableName name = createTable("merge", new byte[][] {b("m")});
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("a")).addColumn(CF, Q, b("1")));
      t.put(new Put(b("z")).addColumn(CF, Q, b("2")));
    }
    List<RegionInfo> regions = admin.getRegions(name);
    admin.mergeRegionsAsync(new byte[][] {regions.get(0).getEncodedNameAsBytes(),
        regions.get(1).getEncodedNameAsBytes()}, false).get();
    for (int i = 0; i < 600 && admin.getRegions(name).size() != 1; i++) {
      Thread.sleep(100);
    }
    assertEquals(1, admin.getRegions(name).size());
    try (Table t = conn.getTable(name)) {
      assertEquals(2, ScanTest.count(t, new Scan()));
    }
  }

  @Test
  void flush_compact_and_major_compact_keep_data() throws Exception {
    TableName name = createTable("compact");
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b("r")).addColumn(CF, Q, b("v")));
      admin.flush(name);
      t.put(new Put(b("r2")).addColumn(CF, Q, b("v2")));
      admin.flush(name);
      admin.compact(name);
      admin.majorCompact(name);
      assertEquals(2, ScanTest.count(t, new Scan()));
      assertEquals("v2", s(t.get(new Get(b("r2"))).getValue(CF, Q)));
    }
  }

  @Test
  void the_balancer_switch_answers_its_previous_state() throws Exception {
    boolean before = admin.balancerSwitch(false, true);
    try {
      assertFalse(admin.isBalancerEnabled());
      assertFalse(admin.balancerSwitch(true, true));
      assertTrue(admin.isBalancerEnabled());
    } finally {
      admin.balancerSwitch(before, true);
    }
  }

  @Test
  void cluster_metrics_name_a_master_and_live_servers() throws Exception {
    ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.MASTER,
        ClusterMetrics.Option.LIVE_SERVERS, ClusterMetrics.Option.CLUSTER_ID));
    assertNotNull(m.getMasterName());
    assertFalse(m.getLiveServerMetrics().isEmpty());
    assertNotNull(m.getClusterId());
    assertFalse(admin.getRegionServers().isEmpty());
  }

  /**
   * A peer HBase's master accepts: its cluster key must reach a ZooKeeper
   * (the master reads the peer's cluster id there), so the suite's own
   * ZooKeeper under a base znode no cluster uses. Basalt keeps peers and
   * ships no edits to them (docs/native-rpc.md).
   */
  private static ReplicationPeerConfig peerConfig() {
    String quorum = System.getProperty("basalt.zookeeper.quorum",
        System.getProperty("hbase.zookeeper.quorum", ""));
    org.junit.jupiter.api.Assumptions.assumeFalse(quorum.isEmpty(),
        "a replication peer needs a reachable ZooKeeper (basalt.zookeeper.quorum)");
    return ReplicationPeerConfig.newBuilder().setClusterKey(quorum + ":/jc-peer").build();
  }

  @Test
  void replication_peers_can_be_added_disabled_enabled_and_removed() throws Exception {
    String id = "jc" + (System.nanoTime() % 100000);
    admin.addReplicationPeer(id, peerConfig(), true);
    try {
      List<ReplicationPeerDescription> peers = admin.listReplicationPeers();
      ReplicationPeerDescription p = peers.stream().filter(d -> d.getPeerId().equals(id))
          .findFirst().orElseThrow();
      assertTrue(p.isEnabled());
      admin.disableReplicationPeer(id);
      assertFalse(admin.listReplicationPeers(Pattern.compile(id)).get(0).isEnabled());
      admin.enableReplicationPeer(id);
      assertTrue(admin.listReplicationPeers(Pattern.compile(id)).get(0).isEnabled());
      admin.updateReplicationPeerConfig(id,
          ReplicationPeerConfig.newBuilder(peerConfig()).setBandwidth(1000).build());
      ReplicationPeerConfig updated = admin.getReplicationPeerConfig(id);
      assertEquals(1000, updated.getBandwidth());
      assertEquals(peerConfig().getClusterKey(), updated.getClusterKey());
    } finally {
      admin.removeReplicationPeer(id);
    }
    assertTrue(admin.listReplicationPeers(Pattern.compile(id)).isEmpty());
  }

  @Test
  void replication_peer_failures_keep_hbases_exception_classes() throws Exception {
    String id = "jce" + (System.nanoTime() % 100000);
    ReplicationPeerConfig config = peerConfig();
    admin.addReplicationPeer(id, config, false);
    try {
      org.apache.hadoop.hbase.DoNotRetryIOException taken = assertThrows(
          org.apache.hadoop.hbase.DoNotRetryIOException.class,
          () -> admin.addReplicationPeer(id, config, true));
      assertTrue(taken.getMessage().contains("Replication peer " + id + " already exists"),
          taken.getMessage());
      assertThrows(org.apache.hadoop.hbase.DoNotRetryIOException.class,
          () -> admin.disableReplicationPeer(id), "a disabled peer cannot be disabled again");
      assertFalse(admin.listReplicationPeers(Pattern.compile(id)).get(0).isEnabled());
    } finally {
      admin.removeReplicationPeer(id);
    }
    assertThrows(org.apache.hadoop.hbase.ReplicationPeerNotFoundException.class,
        () -> admin.removeReplicationPeer(id));
    assertThrows(org.apache.hadoop.hbase.ReplicationPeerNotFoundException.class,
        () -> admin.getReplicationPeerConfig(id));
    assertThrows(org.apache.hadoop.hbase.DoNotRetryIOException.class,
        () -> admin.addReplicationPeer("jc-dash", config, true), "an id holding '-'");
  }

  @Test
  void region_locator_answers_the_region_holding_each_row() throws Exception {
    TableName name = createTable("locator", new byte[][] {b("m")});
    try (RegionLocator l = conn.getRegionLocator(name)) {
      List<HRegionLocation> all = l.getAllRegionLocations();
      assertEquals(2, all.size());
      HRegionLocation low = l.getRegionLocation(b("a"));
      HRegionLocation high = l.getRegionLocation(b("x"), true);
      assertEquals(0, low.getRegion().getStartKey().length);
      assertArrayEquals(b("m"), high.getRegion().getStartKey());
      assertNotNull(high.getServerName());
      assertEquals(2, l.getStartKeys().length);
      assertArrayEquals(b("m"), l.getEndKeys()[0]);
    }
  }

  @Test
  void a_get_on_the_namespace_table_is_answered() throws Exception {
    // Older clients and tools read hbase:namespace directly: a row per
    // namespace, info:d holding its NamespaceDescriptor message.
    String ns = "jcns" + (System.nanoTime() % 100000);
    admin.createNamespace(NamespaceDescriptor.create(ns).addConfiguration("owner", "jc").build());
    try (Table t = conn.getTable(TableName.NAMESPACE_TABLE_NAME)) {
      byte[] d = t.get(new Get(b("default"))).getValue(b("info"), b("d"));
      assertNotNull(d, "the default row has info:d");
      assertEquals("default", namespaceDescriptor(d).getName());
      assertTrue(t.exists(new Get(b(ns))));
      assertFalse(t.exists(new Get(b(ns + "-missing"))));
      List<NamespaceDescriptor> scanned = new ArrayList<>();
      try (ResultScanner s = t.getScanner(new Scan().addFamily(b("info")))) {
        for (Result row : s) {
          NamespaceDescriptor nd = namespaceDescriptor(row.getValue(b("info"), b("d")));
          assertEquals(s(row.getRow()), nd.getName(), "the row key is the namespace's name");
          scanned.add(nd);
        }
      }
      NamespaceDescriptor created = scanned.stream().filter(nd -> nd.getName().equals(ns))
          .findFirst().orElseThrow();
      assertEquals("jc", created.getConfigurationValue("owner"));
      assertTrue(scanned.stream().anyMatch(nd -> nd.getName().equals("hbase")));
    } finally {
      admin.deleteNamespace(ns);
    }
    try (Table t = conn.getTable(TableName.NAMESPACE_TABLE_NAME)) {
      assertFalse(t.exists(new Get(b(ns))), "a deleted namespace leaves the table");
    }
  }

  @Test
  void system_tables_are_listed_and_described_as_hbase_lists_them() throws Exception {
    List<TableName> system = Arrays.asList(admin.listTableNames((Pattern) null, true));
    assertTrue(system.contains(TableName.META_TABLE_NAME));
    assertTrue(system.contains(TableName.NAMESPACE_TABLE_NAME));
    assertFalse(Arrays.asList(admin.listTableNames()).contains(TableName.NAMESPACE_TABLE_NAME));
    TableDescriptor ns = admin.getDescriptor(TableName.NAMESPACE_TABLE_NAME);
    assertEquals(10, ns.getColumnFamily(b("info")).getMaxVersions());
    assertTrue(admin.tableExists(TableName.NAMESPACE_TABLE_NAME));
    assertTrue(admin.isTableEnabled(TableName.NAMESPACE_TABLE_NAME));
    assertEquals(1, admin.getRegions(TableName.NAMESPACE_TABLE_NAME).size());
  }

  private static NamespaceDescriptor namespaceDescriptor(byte[] value) throws Exception {
    return org.apache.hadoop.hbase.shaded.protobuf.ProtobufUtil.toNamespaceDescriptor(
        org.apache.hadoop.hbase.shaded.protobuf.generated.HBaseProtos.NamespaceDescriptor
            .parseFrom(value));
  }

  @Test
  void list_table_names_with_an_empty_pattern_answers_no_error() throws Exception {
    TableName a = createTable("emptypat");
    List<TableName> all = Arrays.asList(admin.listTableNames(Pattern.compile(""), false));
    assertNotNull(all);
    assertTrue(Arrays.asList(admin.listTableNames(Pattern.compile(".*"), false)).contains(a));
  }
}
