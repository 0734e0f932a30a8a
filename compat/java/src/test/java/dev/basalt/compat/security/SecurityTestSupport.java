package dev.basalt.compat.security;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.util.UUID;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.function.Executable;

/** What the access control and the Kerberos tests share. */
final class SecurityTestSupport {
  private SecurityTestSupport() {}

  /**
   * HBase's master answers calls before it has initialized (it creates
   * hbase:acl first): wait until `superuser` can create a table. Hang guard
   * only; Basalt is ready at once.
   */
  static void awaitMasterReady(Connection superuser) throws IOException {
    TableName probe =
        TableName.valueOf("acl_probe_" + UUID.randomUUID().toString().substring(0, 8));
    long deadline = System.nanoTime() + 180_000_000_000L;
    try (Admin a = superuser.getAdmin()) {
      while (true) {
        try {
          a.createTable(TableDescriptorBuilder.newBuilder(probe)
              .setColumnFamily(ColumnFamilyDescriptorBuilder.of(Bytes.toBytes("cf"))).build());
          a.disableTable(probe);
          a.deleteTable(probe);
          return;
        } catch (IOException e) {
          if (System.nanoTime() > deadline) {
            throw e;
          }
          try {
            Thread.sleep(500);
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new IOException(interrupted);
          }
        }
      }
    }
  }

  /**
   * Runs `what`, which must fail with HBase's AccessDeniedException
   * somewhere in its causes; returns that exception's message.
   */
  static String assertDenied(Executable what) {
    try {
      what.execute();
    } catch (Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t.getClass().getName().endsWith("AccessDeniedException")
            || String.valueOf(t.getMessage()).contains("AccessDeniedException")) {
          return String.valueOf(t.getMessage());
        }
      }
      fail("expected AccessDeniedException, got " + e, e);
    }
    return fail("expected AccessDeniedException, but the call was allowed");
  }

  /**
   * A grant or revoke reaches HBase's region servers through ZooKeeper, a
   * moment after the call returns (Basalt's process that took the call
   * applies it at once; its other servers follow the catalog): retries
   * `what` until it passes. Hang guard only.
   */
  static void eventually(Executable what) throws Throwable {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      try {
        what.execute();
        return;
      } catch (Throwable e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }
}
