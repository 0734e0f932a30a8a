package dev.basalt.diff;

import java.util.Map;
import java.util.TreeMap;

/**
 * Time spent per kind of operation on each server: a campaign's speed is set by its slowest kinds
 * (compactions, splits), and this table shows which. Thread-safe, as seeds may run in parallel.
 */
final class Timing {
  /** kind -> {count, hbase nanos, basalt nanos} */
  private final Map<String, long[]> byKind = new TreeMap<>();

  /** The kind of an operation: the first word of its description, and "raw" for a raw scan. */
  static String kind(String description) {
    if (description.startsWith("scan raw")) {
      return "scan raw";
    }
    int space = description.indexOf(' ');
    return space < 0 ? description : description.substring(0, space);
  }

  synchronized void add(String kind, long hbaseNanos, long basaltNanos) {
    long[] counts = byKind.computeIfAbsent(kind, k -> new long[3]);
    counts[0]++;
    counts[1] += hbaseNanos;
    counts[2] += basaltNanos;
  }

  synchronized String table() {
    StringBuilder text = new StringBuilder("time per kind (count, total s and ms per op on each):\n");
    byKind.forEach(
        (kind, counts) ->
            text.append(
                String.format(
                    "  %-16s %7d  hbase %8.1f s %8.2f ms  basalt %8.1f s %8.2f ms%n",
                    kind,
                    counts[0],
                    counts[1] / 1e9,
                    counts[1] / 1e6 / counts[0],
                    counts[2] / 1e9,
                    counts[2] / 1e6 / counts[0])));
    return text.toString();
  }
}
