package dev.basalt.diff;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/**
 * The whole table at the end of a run: every version, then a raw scan (markers included) once both
 * servers have major-compacted the table (see {@link Differential#compactForRawRead}).
 */
final class FinalState {
  private FinalState() {}

  static Op op(TableName tableName) {
    return new Op() {
      public String describe() {
        return "final state: every version, then a raw scan after a major compaction";
      }

      public String apply(Table table, Admin admin, long base) throws Exception {
        String versions = Answer.results(scanAll(table, new Scan().readAllVersions()), base);
        Differential.compactForRawRead(admin, tableName);
        String raw = Answer.results(scanAll(table, new Scan().setRaw(true).readAllVersions()), base);
        return versions + "\n  raw: " + raw;
      }
    };
  }

  private static List<Result> scanAll(Table table, Scan scan) throws Exception {
    List<Result> results = new ArrayList<>();
    try (ResultScanner scanner = table.getScanner(scan)) {
      for (Result result : scanner) {
        results.add(result);
      }
    }
    return results;
  }
}
