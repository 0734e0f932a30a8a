package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotDisabledException;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.snapshot.SnapshotDoesNotExistException;
import org.apache.hadoop.hbase.snapshot.SnapshotExistsException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Snapshots through HBase's Admin: take, list, clone, restore, delete (docs/snapshots.md). */
class SnapshotTest extends CompatBase {

  private final List<String> snapshots = new java.util.ArrayList<>();

  private String snapshotName(String what) {
    String name = "jc_snap_" + what + "_" + UUID.randomUUID().toString().substring(0, 8);
    snapshots.add(name);
    return name;
  }

  @AfterEach
  void deleteSnapshots() {
    for (String name : snapshots) {
      try {
        admin.deleteSnapshot(name);
      } catch (Exception e) {
        // Deleted by the test itself, or never taken.
      }
    }
    snapshots.clear();
  }

  private void put(TableName name, String row, String value) throws Exception {
    try (Table t = conn.getTable(name)) {
      t.put(new Put(b(row)).addColumn(CF, Q, b(value)).addColumn(CF2, Q, b(value)));
    }
  }

  private String get(TableName name, String row) throws Exception {
    try (Table t = conn.getTable(name)) {
      Result r = t.get(new Get(b(row)));
      return r.isEmpty() ? null : s(r.getValue(CF, Q));
    }
  }

  private List<String> names(List<SnapshotDescription> listed) {
    return listed.stream().map(SnapshotDescription::getName).collect(Collectors.toList());
  }

  @Test
  void a_snapshot_is_listed_with_its_table_and_cloned_into_a_table_with_its_cells()
      throws Exception {
    TableName source = createTable("snapsrc", new byte[][] {b("m")});
    put(source, "a", "before");
    put(source, "z", "before");
    String snap = snapshotName("clone");
    admin.snapshot(snap, source);
    put(source, "a", "after");

    List<SnapshotDescription> listed = admin.listSnapshots(Pattern.compile(Pattern.quote(snap)));
    assertEquals(List.of(snap), names(listed));
    assertEquals(source, listed.get(0).getTableName());
    assertEquals(SnapshotType.FLUSH, listed.get(0).getType());

    TableName copy = uniqueName("snapcopy");
    admin.cloneSnapshot(snap, copy);
    assertTrue(admin.isTableEnabled(copy));
    assertEquals("before", get(copy, "a"));
    assertEquals("before", get(copy, "z"));
    assertEquals(2, admin.getRegions(copy).size());
    assertEquals("after", get(source, "a"));
  }

  @Test
  void restore_returns_a_disabled_table_to_the_snapshot() throws Exception {
    TableName table = createTable("snaprestore");
    put(table, "r", "kept");
    String snap = snapshotName("restore");
    admin.snapshot(snap, table);
    put(table, "r", "overwritten");
    put(table, "later", "gone after the restore");

    assertThrows(TableNotDisabledException.class, () -> admin.restoreSnapshot(snap));
    admin.disableTable(table);
    admin.restoreSnapshot(snap);
    admin.enableTable(table);
    assertEquals("kept", get(table, "r"));
    assertNull(get(table, "later"));
  }

  @Test
  void snapshot_names_are_unique_and_a_deleted_snapshot_is_gone() throws Exception {
    TableName table = createTable("snapdel");
    put(table, "r", "v");
    String snap = snapshotName("del");
    admin.snapshot(snap, table, SnapshotType.SKIPFLUSH);
    assertThrows(SnapshotExistsException.class, () -> admin.snapshot(snap, table));
    assertThrows(TableExistsException.class, () -> admin.cloneSnapshot(snap, table));
    admin.deleteSnapshot(snap);
    assertFalse(names(admin.listSnapshots()).contains(snap));
    assertThrows(SnapshotDoesNotExistException.class, () -> admin.deleteSnapshot(snap));
  }
}
