package dev.basalt.compat.security;

import static dev.basalt.compat.security.SecurityTestSupport.assertDenied;
import static dev.basalt.compat.security.SecurityTestSupport.eventually;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.basalt.compat.CompatBase;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.SnapshotDescription;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.client.security.SecurityCapability;
import org.apache.hadoop.hbase.security.User;
import org.apache.hadoop.hbase.security.access.AccessControlClient;
import org.apache.hadoop.hbase.security.access.Permission;
import org.apache.hadoop.hbase.security.access.UserPermission;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.security.UserGroupInformation;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * HBase's access control through its own Java client, against a server
 * run by scripts/java-suite with `[security] authorization = true`,
 * `server_user = "admin"`, superuser group `ops` and `carol` in group
 * `devs`. Clients name their user the way HBase's simple authentication
 * does (`User.create` over a remote UGI). Each case asserts both what is
 * allowed and what is refused with HBase's AccessDeniedException.
 */
@Tag("security")
class AccessControlTest {
  private static final byte[] CF = Bytes.toBytes("cf");
  private static final byte[] CF2 = Bytes.toBytes("cf2");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final byte[] ROW = Bytes.toBytes("r");

  private static Connection admin;
  private static Connection bob;
  private static Connection carol;
  private final List<TableName> created = new ArrayList<>();

  static Connection connectAs(String user) throws IOException {
    Configuration conf = CompatBase.clientConfiguration();
    conf.setInt("hbase.client.retries.number", 2);
    return ConnectionFactory.createConnection(conf,
        User.create(UserGroupInformation.createRemoteUser(user)));
  }

  @BeforeAll
  static void connect() throws IOException {
    Assumptions.assumeTrue("on".equals(System.getProperty("basalt.security")),
        "only against a server with access control on");
    admin = connectAs("admin");
    bob = connectAs("bob");
    carol = connectAs("carol");
    SecurityTestSupport.awaitMasterReady(admin);
  }

  @AfterAll
  static void disconnect() throws IOException {
    for (Connection c : new Connection[] {admin, bob, carol}) {
      if (c != null) {
        c.close();
      }
    }
  }

  @AfterEach
  void dropTables() throws IOException {
    try (Admin a = admin.getAdmin()) {
      for (TableName name : created) {
        if (a.tableExists(name)) {
          if (a.isTableEnabled(name)) {
            a.disableTable(name);
          }
          a.deleteTable(name);
        }
      }
    }
    created.clear();
  }

  /** A table with cf and cf2 made by `who`, holding one row with a cell in each. */
  private TableName tableWithARow(Connection who) throws IOException {
    TableName name = TableName.valueOf("acl_" + UUID.randomUUID().toString().substring(0, 8));
    created.add(name);
    try (Admin a = who.getAdmin()) {
      a.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF2))
          .build());
    }
    try (Table t = who.getTable(name)) {
      t.put(new Put(ROW).addColumn(CF, Q, Bytes.toBytes("v1")).addColumn(CF2, Q,
          Bytes.toBytes("v2")));
    }
    return name;
  }

  @Test
  void the_cluster_says_it_checks_grants() throws IOException {
    try (Admin a = bob.getAdmin()) {
      List<SecurityCapability> capabilities = a.getSecurityCapabilities();
      assertTrue(capabilities.contains(SecurityCapability.AUTHORIZATION), capabilities.toString());
    }
  }

  @Test
  void a_user_reads_a_table_only_after_a_grant_and_never_writes_with_read_alone() throws Throwable {
    TableName name = tableWithARow(admin);
    try (Table t = bob.getTable(name)) {
      assertDenied(() -> t.get(new Get(ROW)));
      AccessControlClient.grant(admin, name, "bob", null, null, Permission.Action.READ);
      eventually(() -> assertEquals("v1", Bytes.toString(t.get(new Get(ROW)).getValue(CF, Q))));
      assertDenied(() -> t.put(new Put(ROW).addColumn(CF, Q, Bytes.toBytes("x"))));
    }
    try (Table t = admin.getTable(name)) {
      assertEquals("v1", Bytes.toString(t.get(new Get(ROW)).getValue(CF, Q)));
    }
    assertTrue(AccessControlClient.hasPermission(admin, name.getNameAsString(), (byte[]) null,
        (byte[]) null, "bob", Permission.Action.READ));
    assertFalse(AccessControlClient.hasPermission(admin, name.getNameAsString(), (byte[]) null,
        (byte[]) null, "bob", Permission.Action.WRITE));
  }

  @Test
  void a_family_grant_shows_that_family_only_in_gets_and_scans() throws Throwable {
    TableName name = tableWithARow(admin);
    AccessControlClient.grant(admin, name, "bob", CF, null, Permission.Action.READ);
    try (Table t = bob.getTable(name)) {
      eventually(() -> t.get(new Get(ROW)));
      Result row = t.get(new Get(ROW));
      assertArrayEquals(Bytes.toBytes("v1"), row.getValue(CF, Q));
      assertNull(row.getValue(CF2, Q));
      try (ResultScanner scanner = t.getScanner(new Scan())) {
        int cells = 0;
        for (Result r : scanner) {
          cells += r.size();
          assertNull(r.getValue(CF2, Q));
        }
        assertEquals(1, cells);
      }
      assertDenied(() -> t.get(new Get(ROW).addFamily(CF2)));
    }
  }

  @Test
  void a_revoke_takes_the_right_away_and_grants_are_listed() throws Throwable {
    TableName name = tableWithARow(admin);
    AccessControlClient.grant(admin, name, "bob", null, null, Permission.Action.READ,
        Permission.Action.WRITE);
    List<UserPermission> listed = AccessControlClient.getUserPermissions(admin,
        name.getNameAsString());
    boolean bobListed = false;
    for (UserPermission p : listed) {
      if (p.getUser().equals("bob")) {
        bobListed = true;
        assertTrue(p.getPermission().implies(Permission.Action.WRITE), p.toString());
      }
    }
    assertTrue(bobListed, listed.toString());
    AccessControlClient.revoke(admin, name, "bob", null, null, Permission.Action.WRITE);
    try (Table t = bob.getTable(name)) {
      // Until the revoke arrives a probe's put may still land: on a row
      // of its own.
      eventually(() -> assertDenied(
          () -> t.put(new Put(Bytes.toBytes("probe")).addColumn(CF, Q, Bytes.toBytes("x")))));
      assertEquals("v1", Bytes.toString(t.get(new Get(ROW)).getValue(CF, Q)));
      AccessControlClient.revoke(admin, name, "bob", null, null);
      eventually(() -> assertDenied(() -> t.get(new Get(ROW))));
    }
  }

  @Test
  void only_a_user_with_create_makes_tables_and_its_creator_owns_what_it_made() throws Throwable {
    String namespace = "aclns_" + UUID.randomUUID().toString().substring(0, 8);
    try (Admin a = admin.getAdmin()) {
      a.createNamespace(NamespaceDescriptor.create(namespace).build());
    }
    TableName name = TableName.valueOf(namespace, "owned");
    try (Admin a = bob.getAdmin()) {
      assertDenied(() -> a.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build()));
      assertDenied(() -> a.createNamespace(NamespaceDescriptor.create(namespace + "x").build()));
      AccessControlClient.grant(admin, namespace, "bob", Permission.Action.CREATE);
      created.add(name);
      eventually(() -> a.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build()));
    }
    try (Table t = bob.getTable(name)) {
      eventually(() -> t.put(new Put(ROW).addColumn(CF, Q, Bytes.toBytes("mine"))));
      assertEquals("mine", Bytes.toString(t.get(new Get(ROW)).getValue(CF, Q)));
    }
    try (Table t = carol.getTable(name)) {
      assertDenied(() -> t.get(new Get(ROW)));
    }
    dropTables();
    try (Admin a = admin.getAdmin()) {
      a.deleteNamespace(namespace);
    }
  }

  @Test
  void a_snapshots_owner_lists_and_deletes_it_where_others_need_global_admin() throws Throwable {
    TableName name = tableWithARow(admin);
    String snapshot = "aclsnap_" + UUID.randomUUID().toString().substring(0, 8);
    Pattern only = Pattern.compile(snapshot);
    AccessControlClient.grant(admin, name, "bob", null, null, Permission.Action.ADMIN);
    try (Admin a = bob.getAdmin()) {
      eventually(() -> a.snapshot(snapshot, name));
      List<SnapshotDescription> listed = a.listSnapshots(only);
      assertEquals(1, listed.size(), "its owner sees it");
      assertEquals("bob", listed.get(0).getOwner());
    }
    try (Admin a = carol.getAdmin()) {
      assertTrue(a.listSnapshots(only).isEmpty(), "nobody else but global admins does");
      assertDenied(() -> a.deleteSnapshot(snapshot));
    }
    try (Admin a = admin.getAdmin()) {
      assertEquals(1, a.listSnapshots(only).size());
    }
    try (Admin a = bob.getAdmin()) {
      // A clone under another table's name needs global ADMIN, even for the owner.
      TableName copy = TableName.valueOf(name.getNameAsString() + "_copy");
      created.add(copy);
      assertDenied(() -> a.cloneSnapshot(snapshot, copy));
      a.deleteSnapshot(snapshot);
      assertTrue(a.listSnapshots(only).isEmpty());
    }
  }

  @Test
  void a_grant_to_a_group_reaches_its_members() throws Throwable {
    TableName name = tableWithARow(admin);
    try (Table t = carol.getTable(name)) {
      assertDenied(() -> t.get(new Get(ROW)));
      AccessControlClient.grant(admin, name, "@devs", null, null, Permission.Action.READ);
      eventually(() -> assertEquals("v2", Bytes.toString(t.get(new Get(ROW)).getValue(CF2, Q))));
    }
    try (Table t = bob.getTable(name)) {
      assertDenied(() -> t.get(new Get(ROW)));
    }
  }
}
