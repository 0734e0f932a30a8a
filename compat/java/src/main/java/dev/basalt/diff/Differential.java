package dev.basalt.diff;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.KeepDeletedCells;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The differential test: the same seeded operations through HBase's own Java client against the
 * reference Apache HBase and against Basalt, every answer compared cell by cell (row, family,
 * qualifier, timestamp, type, value, order) or by error class.
 *
 * <pre>
 * java -cp ... dev.basalt.diff.Differential --reference QUORUM --basalt QUORUM
 *     [--seed N] [--seeds K] [--ops N] [--parallel N] [--report FILE] [--max-shown N]
 *     [--trace ROW]
 * </pre>
 *
 * Each seed runs on two tables: one with HBase's classic version rules and one with {@code
 * NEW_VERSION_BEHAVIOR => true}. Exits 0 when every answer matched, 1 on any mismatch, 2 on a
 * usage or set-up error.
 */
public final class Differential {
  /** a: 3 versions; b: 1 version; c: 4 versions keeping deleted cells; d: 2 versions, 2 h TTL. */
  static final String[] FAMILIES = {"a", "b", "c", "d"};

  /** A family's VERSIONS, read off the tables' {@link #descriptor} (the same for both rules). */
  static int maxVersions(String family) {
    return SHAPE.getColumnFamily(Bytes.toBytes(family)).getMaxVersions();
  }

  private static final TableDescriptor SHAPE = descriptor(TableName.valueOf("shape"), false);

  private Differential() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    String reference = options.get("--reference");
    String basalt = options.get("--basalt");
    if (reference == null || basalt == null) {
      System.err.println(
          "usage: Differential --reference QUORUM --basalt QUORUM [--seed N[,N...]] [--seeds K]"
              + " [--ops N] [--parallel N] [--prefix NAME] [--report FILE] [--max-shown N]"
              + " [--trace ROW]");
      System.exit(2);
    }
    // --seed N with --seeds K runs N..N+K-1; --seed A,B,C runs those.
    String seedOption = options.getOrDefault("--seed", "1");
    int seeds = Integer.parseInt(options.getOrDefault("--seeds", "1"));
    List<Long> seedList = new ArrayList<>();
    if (seedOption.contains(",")) {
      for (String one : seedOption.split(",")) {
        seedList.add(Long.parseLong(one.trim()));
      }
    } else {
      long first = Long.parseLong(seedOption);
      for (long s = first; s < first + seeds; s++) {
        seedList.add(s);
      }
    }
    int ops = Integer.parseInt(options.getOrDefault("--ops", "1500"));
    int maxShown = Integer.parseInt(options.getOrDefault("--max-shown", "40"));
    traceRow = options.get("--trace");
    String reportPath = options.get("--report");

    int parallel = Integer.parseInt(options.getOrDefault("--parallel", "1"));
    // Runs against the same servers need tables of their own (a campaign and a --trace beside it).
    String prefix = options.getOrDefault("--prefix", "diff");
    Report report = new Report(maxShown);
    try (Connection referenceConnection = connect(reference);
        Connection basaltConnection = connect(basalt)) {
      Side hbase = new Side("hbase", referenceConnection, false);
      Side ours = new Side("basalt", basaltConnection, true);
      report.section("admin answers");
      AdminProbes.run(hbase, ours, report);
      // Each (seed, version rules) pair is one table of its own, so pairs run side by side
      // (--parallel): a campaign's time is mostly waiting for flushes and compactions. Their
      // reports join the main one in seed order, whatever order they finish in.
      ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, parallel));
      List<Future<Report>> tables = new ArrayList<>();
      for (long s : seedList) {
        for (boolean newVersionBehavior : new boolean[] {false, true}) {
          TableName table =
              TableName.valueOf(prefix + "_" + s + (newVersionBehavior ? "_nvb" : "_classic"));
          tables.add(
              pool.submit(
                  () -> {
                    Report part = new Report(report);
                    part.section(table.getNameAsString());
                    runSeed(s, table, newVersionBehavior, ops, hbase, ours, part);
                    // Progress of a long campaign, and what it found so far.
                    System.out.print("done: " + part.summary().split("\n", 2)[0] + "\n");
                    if (reportPath != null) {
                      synchronized (Differential.class) {
                        Files.write(
                            Path.of(reportPath + ".parts"),
                            part.full().getBytes(StandardCharsets.UTF_8),
                            java.nio.file.StandardOpenOption.CREATE,
                            java.nio.file.StandardOpenOption.APPEND);
                      }
                    }
                    return part;
                  }));
        }
      }
      pool.shutdown();
      for (Future<Report> table : tables) {
        report.absorb(table.get());
      }
    }
    String summary = report.summary();
    System.out.print(timing.table());
    System.out.println(summary);
    if (reportPath != null) {
      Files.write(Path.of(reportPath), report.full().getBytes(StandardCharsets.UTF_8));
    }
    System.exit(report.mismatches() == 0 ? 0 : 1);
  }

  static Connection connect(String quorum) throws IOException {
    Configuration conf = HBaseConfiguration.create();
    int colon = quorum.lastIndexOf(':');
    conf.set("hbase.zookeeper.quorum", colon < 0 ? quorum : quorum.substring(0, colon));
    if (colon >= 0) {
      conf.set("hbase.zookeeper.property.clientPort", quorum.substring(colon + 1));
    }
    // A wrong answer should surface as an error quickly, not after HBase's long retry chain.
    conf.setInt("hbase.client.retries.number", 5);
    conf.setLong("hbase.client.pause", 50);
    conf.setInt("hbase.client.operation.timeout", 60_000);
    conf.setInt("hbase.rpc.timeout", 30_000);
    return ConnectionFactory.createConnection(conf);
  }

  static TableDescriptor descriptor(TableName name, boolean newVersionBehavior) {
    List<ColumnFamilyDescriptor> families = new ArrayList<>();
    families.add(family("a", newVersionBehavior).setMaxVersions(3).build());
    families.add(family("b", newVersionBehavior).setMaxVersions(1).build());
    families.add(
        family("c", newVersionBehavior)
            .setMaxVersions(4)
            .setKeepDeletedCells(KeepDeletedCells.TRUE)
            .build());
    families.add(
        family("d", newVersionBehavior).setMaxVersions(2).setMinVersions(1).setTimeToLive(7200).build());
    return TableDescriptorBuilder.newBuilder(name).setColumnFamilies(families).build();
  }

  private static ColumnFamilyDescriptorBuilder family(String name, boolean newVersionBehavior) {
    return ColumnFamilyDescriptorBuilder.newBuilder(Bytes.toBytes(name))
        .setNewVersionBehavior(newVersionBehavior);
  }

  private static void runSeed(
      long seed, TableName name, boolean newVersionBehavior, int ops, Side hbase, Side ours,
      Report report) throws Exception {
    for (Side side : new Side[] {hbase, ours}) {
      side.recreate(descriptor(name, newVersionBehavior));
    }
    // An hour before now: explicit timestamps (base + 1..60 ms) are older than any the servers'
    // clocks give, and younger than family d's two-hour TTL.
    long base = System.currentTimeMillis() - TimeUnit.HOURS.toMillis(1);
    Generator generator = new Generator(seed, name, true, newVersionBehavior);
    try (Table hbaseTable = hbase.connection.getTable(name);
        Table oursTable = ours.connection.getTable(name)) {
      for (int i = 0; i < ops; i++) {
        Op op = generator.next();
        String kind = Timing.kind(op.describe());
        long started = System.nanoTime();
        String expected = hbase.apply(op, hbaseTable, base);
        long between = System.nanoTime();
        String expectedError = hbase.lastError();
        String actual =
            op.followsReference() && !expected.equals("ok")
                ? expected
                : ours.apply(op, oursTable, base);
        String actualError = ours.lastError();
        timing.add(kind, between - started, System.nanoTime() - between);
        report.compare(i, op.describe(), expected, actual);
        if (traceRow != null) {
          trace(i, op, traceRow, hbaseTable, oursTable, base);
        }
        if (!expected.equals(actual) && (expectedError != null || actualError != null)) {
          report.errors(expectedError, actualError);
        }
        if (!expected.equals(actual) && op.context() != null) {
          report.context(
              rawRows(hbaseTable, op.context(), base), rawRows(oursTable, op.context(), base));
        }
        // Server timestamps of two writes in one millisecond would meet HBase's same-timestamp
        // rule, which Basalt deliberately does not share (docs/hbase-semantics.md).
        Thread.sleep(1);
      }
      // The final state, whole: every cell of every version, then delete markers included.
      Op everything = FinalState.op(name);
      report.compare(ops, everything.describe(), hbase.apply(everything, hbaseTable, base),
          ours.apply(everything, oursTable, base));
    }
    for (Side side : new Side[] {hbase, ours}) {
      side.drop(name);
    }
  }

  /**
   * {@code --trace ROW}: after every operation naming the row, and every flush, compaction or
   * split, what each server holds of it (raw, all versions, no compaction first). A tool for
   * finding where two servers' histories part; the comparison itself is unchanged.
   */
  private static void trace(int index, Op op, String row, Table hbase, Table ours, long base) {
    String what = op.describe();
    // Row names are fixed-width (r00..r29): no name contains another.
    boolean names = what.contains(row);
    boolean maintenance = what.startsWith("flush") || what.startsWith("majorCompact")
        || what.startsWith("split") || what.startsWith("merge");
    if (!names && !maintenance) {
      return;
    }
    byte[] key = Bytes.toBytes(row);
    Scan scan = new Scan().setRaw(true).readAllVersions().withStartRow(key).withStopRow(key, true);
    System.out.println("TRACE #" + index + " " + what);
    System.out.println("  hbase:  " + rawRows(hbase, scan, base));
    System.out.println("  basalt: " + rawRows(ours, scan, base));
  }

  private static String traceRow;

  /** Where the driver's time goes, per kind of operation and server (printed with the summary). */
  static final Timing timing = new Timing();

  /** What a raw scan returns, as answer text (or the error). */
  private static String rawRows(Table table, Scan scan, long base) {
    List<Result> results = new ArrayList<>();
    try (ResultScanner scanner = table.getScanner(scan)) {
      for (Result result : scanner) {
        results.add(result);
      }
    } catch (Exception error) {
      return Answer.error(error);
    }
    return Answer.results(results, base);
  }

  /**
   * Flushes and major-compacts a table and waits, before a raw read: HBase purges delete markers,
   * masked and surplus versions in any compaction that takes all of a store's files (a split
   * daughter's first one too), at times of its own choosing, while Basalt's own compactions never
   * change a read, raw or not (docs/hbase-semantics.md, "Deviations from HBase"). After a major
   * compaction both hold the same cells.
   */
  static void compactForRawRead(Admin admin, TableName table) throws Exception {
    majorCompact(admin, table);
  }

  /** Flushes, major-compacts and waits until the compaction is done. */
  static void majorCompact(Admin admin, TableName table) throws Exception {
    admin.flush(table);
    if (COMPACTS_IN_CALL.get()) {
      admin.majorCompact(table);
      awaitCompaction(admin, table);
      return;
    }
    COMPACTIONS.lock();
    try {
      long requested = System.currentTimeMillis();
      admin.majorCompact(table);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (System.nanoTime() < deadline) {
        if (admin.getCompactionState(table) == CompactionState.NONE
            && majorCompactedSince(admin, table, requested)) {
          return;
        }
        Thread.sleep(10);
      }
    } finally {
      COMPACTIONS.unlock();
    }
    throw new IOException("major compaction of " + table + " not done after 120 s");
  }

  /**
   * Whether every region of a table holds only files a major compaction wrote since {@code
   * requested} (HBase's clock: the same machine's). The answer HBase's region metrics give, read
   * live from the region server: at most one file per store, and the oldest major-compacted file
   * (HBase's "last major compaction" of a region) no older than the request. A compaction state of
   * NONE alone is not enough: HBase reports a store's compaction only once it runs, not while it is
   * queued, and the first campaigns saw raw reads of tables HBase had not compacted yet.
   */
  private static boolean majorCompactedSince(Admin admin, TableName table, long requested)
      throws IOException {
    for (ServerName server : admin.getRegionServers()) {
      for (RegionMetrics region : admin.getRegionMetrics(server, table)) {
        int files = region.getStoreFileCount();
        if (files == 0) {
          continue;
        }
        if (files > region.getStoreCount()
            || region.getLastMajorCompactionTimestamp() < requested) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * Whether the server this thread is talking to compacts inside the compaction call (Basalt
   * does; HBase queues the compaction and answers at once): its waits need no lock and no pause,
   * only its state read until NONE (a split daughter's link rewrite runs in the background).
   */
  static final ThreadLocal<Boolean> COMPACTS_IN_CALL = ThreadLocal.withInitial(() -> false);

  /**
   * One table's queued compaction waited for at a time. HBase reports a compaction only once it
   * runs, not while it is queued: with tables run side by side its few compaction threads queue one
   * table's behind another's, and a wait that sees NONE too early lets a raw read see the table
   * uncompacted (found by the first --parallel campaign). Taken after the flush, which needs no
   * turn: a campaign's compactions wait only for each other's compactions (tens of milliseconds
   * each), not for flushes too.
   */
  private static final ReentrantLock COMPACTIONS = new ReentrantLock(true);

  /**
   * Waits until a table's compactions are done. A queued compaction may not be running yet when
   * the state is first read: after a pause, NONE twice in a row, a moment apart, is the answer.
   */
  static void awaitCompaction(Admin admin, TableName table) throws Exception {
    boolean queued = !COMPACTS_IN_CALL.get();
    if (queued) {
      COMPACTIONS.lock();
    }
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      if (queued) {
        Thread.sleep(200);
      }
      int quiet = 0;
      while (System.nanoTime() < deadline) {
        quiet = admin.getCompactionState(table) == CompactionState.NONE ? quiet + 1 : 0;
        if (quiet == (queued ? 2 : 1)) {
          return;
        }
        Thread.sleep(queued ? 100 : 20);
      }
    } finally {
      if (queued) {
        COMPACTIONS.unlock();
      }
    }
    throw new IOException("compaction of " + table + " still running after 120 s");
  }

  private static Map<String, String> parse(String[] args) {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i], args[i + 1]);
    }
    if (args.length % 2 != 0) {
      System.err.println("option without a value: " + args[args.length - 1]);
      System.exit(2);
    }
    return options;
  }

  /** One server: its connection and how an operation's answer is taken from it. */
  static final class Side {
    final String name;
    final Connection connection;

    /** Basalt compacts inside the call (see {@link #COMPACTS_IN_CALL}). */
    final boolean compactsInCall;

    Side(String name, Connection connection, boolean compactsInCall) {
      this.name = name;
      this.connection = connection;
      this.compactsInCall = compactsInCall;
    }

    String apply(Op op, Table table, long base) {
      lastError.remove();
      COMPACTS_IN_CALL.set(compactsInCall);
      try (Admin admin = connection.getAdmin()) {
        return op.apply(table, admin, base);
      } catch (Exception error) {
        Throwable root = error;
        while (root.getCause() != null) {
          root = root.getCause();
        }
        String message = String.valueOf(root.getMessage());
        lastError.set(root.getClass().getSimpleName() + ": " + message.split("\n", 2)[0]);
        return Answer.error(error);
      }
    }

    /** The innermost error of this thread's last operation here, for a mismatch's report. */
    String lastError() {
      return lastError.get();
    }

    private final ThreadLocal<String> lastError = new ThreadLocal<>();

    void recreate(TableDescriptor descriptor) throws IOException {
      try (Admin admin = connection.getAdmin()) {
        drop(descriptor.getTableName());
        admin.createTable(descriptor);
      }
    }

    void drop(TableName name) throws IOException {
      try (Admin admin = connection.getAdmin()) {
        if (admin.tableExists(name)) {
          if (admin.isTableEnabled(name)) {
            admin.disableTable(name);
          }
          admin.deleteTable(name);
        }
      }
    }
  }

  /** Counts comparisons and keeps the first mismatches in full. */
  static final class Report {
    private final int maxShown;
    /** Mismatches printed so far by this report and the parts made from it (one console). */
    private final AtomicInteger shown;
    private final StringBuilder full = new StringBuilder();
    private final Map<String, int[]> sections = new LinkedHashMap<>();
    private String section = "";
    private int compared;
    private int mismatches;

    Report(int maxShown) {
      this.maxShown = maxShown;
      this.shown = new AtomicInteger();
    }

    /** A report for one table run beside others, sharing the console's budget of shown lines. */
    Report(Report whole) {
      this.maxShown = whole.maxShown;
      this.shown = whole.shown;
    }

    /** Adds a part's counts and mismatches (after the part has finished). */
    void absorb(Report part) {
      sections.putAll(part.sections);
      compared += part.compared;
      mismatches += part.mismatches;
      full.append(part.full);
    }

    void section(String name) {
      section = name;
      sections.put(name, new int[2]);
    }

    /** Adds the servers' error messages to the mismatch just reported. */
    void errors(String hbase, String basalt) {
      note("error", hbase, basalt);
    }

    /** Adds what each server held to the mismatch just reported. */
    void context(String hbase, String basalt) {
      note("held (raw, all versions)", hbase, basalt);
    }

    private void note(String what, String hbase, String basalt) {
      if (sections.get(section)[1] > MAX_KEPT_PER_TABLE) {
        return;
      }
      String text = "  " + what + ": hbase:  " + hbase + "\n"
          + "  " + what + ": basalt: " + basalt + "\n";
      full.append(text);
      if (lastShown) {
        System.out.print(text);
      }
    }

    void compare(int index, String what, String expected, String actual) {
      compared++;
      sections.get(section)[0]++;
      if (expected.equals(actual)) {
        return;
      }
      mismatches++;
      sections.get(section)[1]++;
      if (sections.get(section)[1] > MAX_KEPT_PER_TABLE) {
        // A table's state, once it parts, makes later answers differ too: its first mismatches
        // say why; the rest are counted.
        lastShown = false;
        return;
      }
      String text =
          "MISMATCH " + section + " #" + index + ": " + what + "\n  hbase:  " + expected
              + "\n  basalt: " + actual + "\n";
      full.append(text);
      lastShown = shown.incrementAndGet() <= maxShown;
      if (lastShown) {
        System.out.print(text);
      }
    }

    /** Mismatches kept in full per table; the rest are counted only. */
    static final int MAX_KEPT_PER_TABLE = 25;

    /** Whether the last mismatch was printed (its context then is too). */
    private boolean lastShown;

    int mismatches() {
      return mismatches;
    }

    String summary() {
      StringBuilder text = new StringBuilder();
      sections.forEach(
          (name, counts) ->
              text.append(String.format("  %-24s %6d compared, %4d differ%n", name, counts[0], counts[1])));
      text.append(
          String.format(
              "differential: %d answers compared, %d differ (%s)%n",
              compared, mismatches, mismatches == 0 ? "PASS" : "FAIL"));
      return text.toString();
    }

    String full() {
      return summary() + "\n" + full;
    }
  }
}
