package dev.basalt.diff;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * One answer in a canonical text form that two servers' answers can be compared by: every cell
 * with its row, family, qualifier, timestamp, type and value, in the order the server sent them;
 * or the class of the error.
 *
 * <p>Timestamps the client chose are written relative to the run's base time, so both servers'
 * answers read the same; timestamps a server chose (the clock at the write) cannot match between
 * two servers and are written as {@code srv}: their order among the cells still has to match.
 */
final class Answer {
  /**
   * Explicit timestamps stay within this distance of the base; the base is an hour before the
   * run, so anything later is server time.
   */
  static final long EXPLICIT_SPAN_MS = 1_000_000L;

  private Answer() {}

  static String timestamp(long ts, long base) {
    if (ts == Long.MAX_VALUE) {
      return "max";
    }
    long offset = ts - base;
    return offset > EXPLICIT_SPAN_MS ? "srv" : Long.toString(offset);
  }

  static String cell(Cell cell, long base) {
    return Bytes.toStringBinary(CellUtil.cloneRow(cell))
        + "/"
        + Bytes.toStringBinary(CellUtil.cloneFamily(cell))
        + ":"
        + Bytes.toStringBinary(CellUtil.cloneQualifier(cell))
        + "/"
        + timestamp(cell.getTimestamp(), base)
        + "/"
        + cell.getType()
        + "="
        + Bytes.toStringBinary(CellUtil.cloneValue(cell));
  }

  static String result(Result result, long base) {
    if (result == null) {
      return "null";
    }
    List<String> cells = new ArrayList<>();
    for (Cell cell : result.rawCells()) {
      cells.add(cell(cell, base));
    }
    return "[" + String.join(", ", cells) + "]";
  }

  static String results(List<Result> results, long base) {
    List<String> texts = new ArrayList<>();
    for (Result result : results) {
      texts.add(result(result, base));
    }
    return texts.size() + " results " + String.join(" ", texts);
  }

  /**
   * An error by class: the messages are each server's own words, the class is what a program
   * catches. A batch's per-action errors are named by their causes' classes.
   */
  /**
   * A batch scan whose row filter meets a row wider than the batch: HBase's server throws
   * IncompatibleFilterException as a retriable error, so its client retries until it gives up
   * (RetriesExhaustedException); Basalt refuses at once (DoNotRetryIOException naming the row).
   * A named deviation (docs/hbase-semantics.md): both fail on the same rows.
   */
  private static boolean isIncompatibleFilter(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      String message = String.valueOf(t.getMessage());
      if (message.contains("IncompatibleFilterException")
          || message.contains("than the scan's batch")) {
        return true;
      }
    }
    return false;
  }

  static String error(Throwable error) {
    // A scanner's iterator wraps the server's error in an UncheckedIOException, and the client
    // may wrap that again: name the error the server sent.
    while ((error instanceof java.io.UncheckedIOException
            || error.getClass() == java.io.IOException.class
            || error.getClass() == RuntimeException.class)
        && error.getCause() != null) {
      error = error.getCause();
    }
    if (isIncompatibleFilter(error)) {
      return "error IncompatibleFilterException (named deviation)";
    }
    StringBuilder text = new StringBuilder("error " + error.getClass().getSimpleName());
    if (error instanceof RetriesExhaustedWithDetailsException) {
      RetriesExhaustedWithDetailsException details = (RetriesExhaustedWithDetailsException) error;
      List<String> causes = new ArrayList<>();
      for (int i = 0; i < details.getNumExceptions(); i++) {
        causes.add(details.getCause(i).getClass().getSimpleName());
      }
      text.append(" ").append(causes);
    }
    return text.toString();
  }
}
