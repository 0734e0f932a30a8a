package dev.basalt.compat.security;

import static dev.basalt.compat.security.SecurityTestSupport.assertDenied;
import static dev.basalt.compat.security.SecurityTestSupport.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.basalt.compat.CompatBase;
import java.io.IOException;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
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
import org.junit.jupiter.api.function.Executable;

/**
 * Kerberos (SASL GSSAPI) on the native RPC through HBase 2.6's own client,
 * configured as a user configures it (docs/rfcs/kerberos.md, section 2):
 * keytab logins of `alice`, `bob` and the superuser `hbaseadmin` in one
 * JVM, each opening its connections inside its UGI's doAs.
 *
 * <p>Run by scripts/java-suite (`--kerberos`, `--kerberos-oracle`) against
 * a server with Kerberos and access control on, principal
 * `hbase/localhost@REALM`, superuser `hbaseadmin`; once with the server's
 * protection `authentication`, once `privacy`. System properties:
 * `basalt.kerberos=on`, `basalt.kerberos.realm`,
 * `basalt.kerberos.keytab.<user>` (alice, bob, hbaseadmin),
 * `basalt.kerberos.protection` (what the server offers: its
 * hbase.rpc.protection), optionally `basalt.kerberos.bootstrap.servers`
 * (a master's host:port, for the RPC registry case); the JVM gets
 * `-Djava.security.krb5.conf`.
 */
@Tag("kerberos")
class KerberosTest {
  private static final byte[] CF = Bytes.toBytes("cf");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final byte[] ROW = Bytes.toBytes("r");

  private static String realm;
  /** The protection the server offers, which every connection asks for unless a test says. */
  private static String protection;
  private static UserGroupInformation adminUser;
  private static UserGroupInformation aliceUser;
  private static UserGroupInformation bobUser;
  private static Connection admin;
  private static Connection alice;
  private static Connection bob;
  private final List<TableName> created = new ArrayList<>();
  private final List<String> namespaces = new ArrayList<>();

  /** The client configuration of a Kerberos user asking for `rpcProtection`. */
  static Configuration kerberos(String rpcProtection) {
    Configuration conf = CompatBase.clientConfiguration();
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set("hbase.security.authentication", "kerberos");
    conf.set("hbase.master.kerberos.principal", "hbase/_HOST@" + realm);
    conf.set("hbase.regionserver.kerberos.principal", "hbase/_HOST@" + realm);
    conf.set("hbase.rpc.protection", rpcProtection);
    conf.setInt("hbase.client.retries.number", 3);
    conf.setInt("hbase.rpc.timeout", 20_000);
    conf.setInt("hbase.client.operation.timeout", 60_000);
    return conf;
  }

  /**
   * For a connection that must be refused: one attempt (so the failure
   * reported is the server's answer, not "in the failed servers list" of a
   * retry), short timeouts, and the client's Kerberos re-login after a
   * failed SASL exchange waits at most 100 ms (5 s by default).
   */
  static Configuration failingFast(Configuration conf) {
    conf.setInt("hbase.client.retries.number", 0);
    conf.setInt("hbase.client.pause", 100);
    conf.setInt("hbase.rpc.timeout", 10_000);
    conf.setInt("hbase.client.operation.timeout", 20_000);
    conf.setInt("hbase.client.meta.operation.timeout", 20_000);
    conf.setInt("hbase.security.relogin.maxbackoff", 100);
    return conf;
  }

  static UserGroupInformation login(String user) throws IOException {
    String keytab = System.getProperty("basalt.kerberos.keytab." + user);
    assertNotNull(keytab, "no keytab for " + user + " (basalt.kerberos.keytab." + user + ")");
    return UserGroupInformation.loginUserFromKeytabAndReturnUGI(user + "@" + realm, keytab);
  }

  /** A connection opened as `user` (its doAs), with `conf`. */
  static Connection connect(UserGroupInformation user, Configuration conf) throws Exception {
    return user.doAs((PrivilegedExceptionAction<Connection>) () ->
        ConnectionFactory.createConnection(conf));
  }

  @BeforeAll
  static void loginAndConnect() throws Throwable {
    Assumptions.assumeTrue("on".equals(System.getProperty("basalt.kerberos")),
        "only against a server with Kerberos on");
    realm = System.getProperty("basalt.kerberos.realm", "BASALT.TEST");
    protection = System.getProperty("basalt.kerberos.protection", "authentication");
    // Hadoop's UGI: Kerberos for every login below (without this a keytab
    // login silently stays SIMPLE).
    UserGroupInformation.setConfiguration(kerberos(protection));
    adminUser = login("hbaseadmin");
    aliceUser = login("alice");
    bobUser = login("bob");
    assertTrue(aliceUser.hasKerberosCredentials(), aliceUser.toString());
    admin = connect(adminUser, kerberos(protection));
    alice = connect(aliceUser, kerberos(protection));
    bob = connect(bobUser, kerberos(protection));
    SecurityTestSupport.awaitMasterReady(admin);
  }

  @AfterAll
  static void disconnect() throws IOException {
    for (Connection c : new Connection[] {admin, alice, bob}) {
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
      for (String namespace : namespaces) {
        a.deleteNamespace(namespace);
      }
    }
    created.clear();
    namespaces.clear();
  }

  private static String unique(String prefix) {
    return prefix + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A table the superuser made, on which alice may read and write. */
  private TableName aliceTable() throws Throwable {
    TableName name = TableName.valueOf(unique("krb_"));
    created.add(name);
    try (Admin a = admin.getAdmin()) {
      a.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build());
    }
    AccessControlClient.grant(admin, name, "alice", null, null, Permission.Action.READ,
        Permission.Action.WRITE);
    try (Table t = alice.getTable(name)) {
      // A grant reaches HBase's region server a moment after the call.
      eventually(() -> t.get(new Get(ROW)));
    }
    return name;
  }

  private static Put put(String value) {
    return new Put(ROW).addColumn(CF, Q, Bytes.toBytes(value));
  }

  private static String read(Connection who, TableName name) throws IOException {
    try (Table t = who.getTable(name)) {
      Result row = t.get(new Get(ROW));
      return row.isEmpty() ? null : Bytes.toString(row.getValue(CF, Q));
    }
  }

  /**
   * `what` (which opens its own connection) must fail; returns the text of
   * the failure and of all its causes (a RetriesExhaustedException carries
   * the attempts' exceptions in its message only), printed for the record.
   */
  private static String refused(Executable what) {
    Throwable e = assertThrows(Throwable.class, what);
    StringBuilder chain = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      chain.append("\n  ").append(t.getClass().getName()).append(": ").append(t.getMessage());
    }
    System.err.println("refused as expected:" + chain);
    return chain.toString();
  }

  @Test
  void alice_writes_and_reads_what_she_was_granted_and_bob_is_refused_by_name() throws Throwable {
    TableName name = aliceTable();
    try (Table t = alice.getTable(name)) {
      t.put(put("from alice"));
    }
    assertEquals("from alice", read(alice, name));
    try (Table t = bob.getTable(name)) {
      // HBase words a refused read with the caller's short name (the
      // principal bob@REALM through auth_to_local) and a refused write
      // with the full principal (AuthResult's user=).
      String denied = assertDenied(() -> t.get(new Get(ROW)));
      System.err.println("bob's get: " + denied);
      assertTrue(denied.contains("Insufficient permissions for user 'bob'"), denied);
      assertFalse(denied.contains("alice"), denied);
      denied = assertDenied(() -> t.put(put("from bob")));
      System.err.println("bob's put: " + denied);
      assertTrue(denied.contains("user=bob@" + realm + ","), denied);
    }
    // Granting needs ADMIN: bob cannot grant himself.
    String denied = assertDenied(() -> AccessControlClient.grant(bob, name, "bob", null, null,
        Permission.Action.READ));
    System.err.println("bob's grant: " + denied);
    assertTrue(denied.contains("bob"), denied);
    assertEquals("from alice", read(alice, name));
  }

  @Test
  void the_server_records_a_kerberos_user_by_her_short_name() throws Throwable {
    // alice may create tables in a namespace; the table she creates is
    // hers: HBase grants its creator every action, under the name the
    // server knows her by.
    String namespace = unique("krbns_");
    try (Admin a = admin.getAdmin()) {
      a.createNamespace(NamespaceDescriptor.create(namespace).build());
    }
    namespaces.add(namespace);
    AccessControlClient.grant(admin, namespace, "alice", Permission.Action.CREATE);
    TableName name = TableName.valueOf(namespace, "owned");
    created.add(name);
    try (Admin a = alice.getAdmin()) {
      eventually(() -> a.createTable(TableDescriptorBuilder.newBuilder(name)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build()));
    }
    List<UserPermission> listed = AccessControlClient.getUserPermissions(admin,
        name.getNameAsString());
    boolean owner = false;
    for (UserPermission p : listed) {
      assertFalse(p.getUser().contains("@"), "a full principal in " + listed);
      if (p.getUser().equals("alice")) {
        owner = p.getPermission().implies(Permission.Action.ADMIN)
            && p.getPermission().implies(Permission.Action.WRITE);
      }
    }
    assertTrue(owner, "alice owns what she created: " + listed);
    // And, as its owner, she may list its grants herself.
    assertFalse(AccessControlClient.getUserPermissions(alice, name.getNameAsString()).isEmpty());
    try (Table t = bob.getTable(name)) {
      assertDenied(() -> t.get(new Get(ROW)));
    }
  }

  @Test
  void a_client_without_kerberos_is_refused_even_naming_a_granted_user() throws Throwable {
    TableName name = aliceTable();
    // HBase's simple authentication: the client only names its user.
    Configuration simple = failingFast(CompatBase.clientConfiguration());
    simple.set("hbase.security.authentication", "simple");
    for (String claimed : new String[] {"alice", "hbaseadmin"}) {
      String failure = refused(() -> {
        try (Connection c = ConnectionFactory.createConnection(simple,
                User.create(UserGroupInformation.createRemoteUser(claimed)));
            Table t = c.getTable(name)) {
          t.put(put("unauthenticated " + claimed));
        }
      });
      // HBase answers the SIMPLE preamble with a fatal AccessDeniedException
      // ("Authentication is required", call id -1) and closes: its client
      // reports the connection closed.
      assertTrue(failure.contains("ConnectionClosedException")
          || failure.contains("Authentication is required"), failure);
    }
    TableName other = TableName.valueOf(unique("krb_simple_"));
    created.add(other);
    refused(() -> {
      try (Connection c = ConnectionFactory.createConnection(simple,
              User.create(UserGroupInformation.createRemoteUser("hbaseadmin")));
          Admin a = c.getAdmin()) {
        a.createTable(TableDescriptorBuilder.newBuilder(other)
            .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build());
      }
    });
    assertEquals(null, read(alice, name), "nothing was written");
    try (Admin a = admin.getAdmin()) {
      assertFalse(a.tableExists(other));
    }
  }

  @Test
  void an_authenticated_user_cannot_act_as_another_through_the_connection_header()
      throws Throwable {
    TableName name = aliceTable();
    // bob authenticates with his own ticket and names alice (and the
    // superuser) as the effective user: a proxy user, which the server
    // allows only to users its proxy-user rules name (none here).
    for (String target : new String[] {"alice", "hbaseadmin"}) {
      UserGroupInformation proxy = UserGroupInformation.createProxyUser(target, bobUser);
      String failure = refused(() -> {
        try (Connection c = connect(proxy, failingFast(kerberos(protection)));
            Table t = c.getTable(name)) {
          t.put(put("bob as " + target));
        }
      });
      assertTrue(failure.contains("AccessDeniedException")
          || failure.contains("ConnectionClosedException"), failure);
    }
    assertEquals(null, read(alice, name), "nothing was written");
  }

  @Test
  void the_cluster_says_it_authenticates_with_kerberos_and_checks_grants() throws IOException {
    try (Admin a = bob.getAdmin()) {
      List<SecurityCapability> capabilities = a.getSecurityCapabilities();
      System.err.println("security capabilities: " + capabilities);
      assertTrue(capabilities.contains(SecurityCapability.SECURE_AUTHENTICATION),
          capabilities.toString());
      assertTrue(capabilities.contains(SecurityCapability.AUTHORIZATION), capabilities.toString());
      assertFalse(capabilities.contains(SecurityCapability.SIMPLE_AUTHENTICATION),
          capabilities.toString());
    }
  }

  @Test
  void a_client_gets_the_protection_it_asks_for_only_if_the_server_offers_it() throws Throwable {
    TableName name = aliceTable();
    // Asking for exactly what the server offers (privacy: every frame
    // after the handshake wrapped and encrypted).
    try (Connection c = connect(aliceUser, kerberos(protection)); Table t = c.getTable(name)) {
      t.put(put("asked " + protection));
      assertEquals("asked " + protection, read(c, name));
    }
    // A client that accepts either takes what the server offers.
    try (Connection c = connect(aliceUser, kerberos("privacy,authentication"));
        Table t = c.getTable(name)) {
      t.put(put("either"));
      assertEquals("either", read(c, name));
    }
    // A client that insists on the other one is refused, writing nothing.
    // The Java client finds no layer both accept in the server's offer.
    String other = protection.equals("privacy") ? "authentication" : "privacy";
    String failure = refused(() -> {
      try (Connection c = connect(aliceUser, failingFast(kerberos(other)));
          Table t = c.getTable(name)) {
        t.put(put("insisted on " + other));
      }
    });
    assertTrue(failure.contains("No common protection layer between client and server"),
        failure);
    assertEquals("either", read(alice, name));
  }

  /** alice, expecting the servers to be `principal`, writes to one of her tables: refused. */
  private void refusedExpecting(String principal) throws Throwable {
    TableName name = aliceTable();
    Configuration conf = failingFast(kerberos(protection));
    conf.set("hbase.master.kerberos.principal", principal);
    conf.set("hbase.regionserver.kerberos.principal", principal);
    String failure = refused(() -> {
      try (Connection c = connect(aliceUser, conf); Table t = c.getTable(name)) {
        t.put(put("to " + principal));
      }
    });
    // The server's GSSAPI acceptor refuses the ticket: a SASL error reply.
    assertTrue(failure.contains("RemoteException(javax.security.sasl.SaslException)"), failure);
    assertEquals(null, read(alice, name), "nothing was written");
  }

  @Test
  void a_ticket_for_another_service_of_the_host_is_refused() throws Throwable {
    // HTTP/localhost exists (the server's keytab may hold it too, for
    // SPNEGO): the RPC server accepts only tickets for hbase/<host>.
    refusedExpecting("HTTP/_HOST@" + realm);
  }

  @Test
  void a_ticket_for_the_service_on_another_host_is_refused() throws Throwable {
    // hbase/otherhost exists in the KDC, but it is not this server.
    refusedExpecting("hbase/otherhost@" + realm);
  }

  @Test
  void the_rpc_registry_finds_the_cluster_under_kerberos() throws Throwable {
    String bootstrap = System.getProperty("basalt.kerberos.bootstrap.servers");
    Assumptions.assumeTrue(bootstrap != null && !bootstrap.isEmpty(),
        "needs basalt.kerberos.bootstrap.servers");
    TableName name = aliceTable();
    Configuration conf = kerberos(protection);
    conf.unset("hbase.zookeeper.quorum");
    conf.set("hbase.client.registry.impl",
        "org.apache.hadoop.hbase.client.RpcConnectionRegistry");
    conf.set("hbase.client.bootstrap.servers", bootstrap);
    try (Connection c = connect(aliceUser, conf); Table t = c.getTable(name)) {
      t.put(put("through the registry"));
      assertEquals("through the registry", read(c, name));
    }
  }
}
