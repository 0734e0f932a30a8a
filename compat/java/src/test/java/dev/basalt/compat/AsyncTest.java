package dev.basalt.compat;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** AsyncConnection and AsyncTable basics. */
class AsyncTest extends CompatBase {
  private static AsyncConnection async;

  @BeforeAll
  static void openAsync() throws Exception {
    async = ConnectionFactory.createAsyncConnection(clientConfiguration()).get();
  }

  @AfterAll
  static void closeAsync() throws Exception {
    async.close();
  }

  @Test
  void an_async_put_reads_back_through_an_async_get() throws Exception {
    AsyncTable<AdvancedScanResultConsumer> t = async.getTable(createTable("putget"));
    t.put(new Put(b("r")).addColumn(CF, Q, b("v"))).get();
    assertEquals("v", s(t.get(new Get(b("r"))).get().getValue(CF, Q)));
  }

  @Test
  void async_puts_in_parallel_all_land() throws Exception {
    AsyncTable<AdvancedScanResultConsumer> t = async.getTable(createTable("parallel"));
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      futures.add(t.put(new Put(b(String.format("r%03d", i))).addColumn(CF, Q, b("v" + i))));
    }
    CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).get();
    assertEquals(200, t.scanAll(new Scan()).get().size());
  }

  @Test
  void async_scan_all_answers_rows_in_order() throws Exception {
    AsyncTable<AdvancedScanResultConsumer> t = async.getTable(createTable("scanall"));
    for (int i = 0; i < 5; i++) {
      t.put(new Put(b("r" + i)).addColumn(CF, Q, b("v"))).get();
    }
    List<Result> rs = t.scanAll(new Scan().withStartRow(b("r1")).withStopRow(b("r4"))).get();
    assertEquals(3, rs.size());
    assertEquals("r1", Bytes.toString(rs.get(0).getRow()));
  }

  @Test
  void async_increment_and_check_and_mutate_answer() throws Exception {
    AsyncTable<AdvancedScanResultConsumer> t = async.getTable(createTable("incr"));
    assertEquals(4L, t.incrementColumnValue(b("r"), CF, Q, 4).get());
    CheckAndMutateResult res = t.checkAndMutate(CheckAndMutate.newBuilder(b("r"))
        .ifEquals(CF, Q, Bytes.toBytes(4L)).build(new Put(b("r")).addColumn(CF, b("ok"), b("y"))))
        .get();
    assertTrue(res.isSuccess());
    assertEquals("y", s(t.get(new Get(b("r"))).get().getValue(CF, b("ok"))));
  }

  @Test
  void async_admin_creates_and_lists_a_table() throws Exception {
    TableName name = uniqueName("admin");
    AsyncAdmin a = async.getAdmin();
    a.createTable(TableDescriptorBuilder.newBuilder(name)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build()).get();
    assertTrue(a.tableExists(name).get());
    assertTrue(a.listTableNames().get().contains(name));
  }

  @Test
  void async_region_locator_finds_the_region() throws Exception {
    TableName name = createTable("locator", new byte[][] {b("m")});
    assertArrayEquals(b("m"),
        async.getRegionLocator(name).getRegionLocation(b("q")).get().getRegion().getStartKey());
  }
}
