package dev.basalt.ycsb;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB binding for HBase's own 2.x client, written against YCSB's {@code site.ycsb.DB} API.
 *
 * <p>YCSB makes one instance per client thread. All instances of a JVM share one {@link
 * Connection} (as an application would: a connection is heavy and thread-safe, tables are light
 * and are not); each instance holds its own {@link Table}.
 *
 * <p>Properties (YCSB's {@code -p}):
 *
 * <ul>
 *   <li>{@code table}: read by YCSB itself and passed to every call (default {@code usertable}).
 *   <li>{@code columnfamily}: the family every field lives in (default {@code family}).
 *   <li>{@code hbase.zookeeper.quorum} and any other {@code hbase.*} or {@code zookeeper.*}
 *       property: copied into the client's configuration.
 *   <li>{@code clientbuffering}: {@code false} by default, so every insert, update and delete is
 *       sent and acknowledged (durable as {@code durability} says) before the call returns, as a
 *       real application's write. {@code true} batches them in a {@link BufferedMutator} of
 *       {@code writebuffersize} bytes (default 12 MiB), flushed when the thread ends.
 *   <li>{@code durability}: the durability of every mutation, one of {@link Durability}'s names
 *       (default {@code USE_DEFAULT}, the server's own setting).
 * </ul>
 *
 * <p>A failed call answers {@link Status#ERROR} (YCSB counts those as {@code Return=ERROR}); the
 * first few failures of the JVM are printed with their cause.
 */
public class HBaseClient2 extends DB {
  private static final Object CONNECTION_LOCK = new Object();
  private static Connection connection;
  private static int connectionUsers;
  /** Failures printed in full per JVM; after that only counted by YCSB. */
  private static final long PRINTED_FAILURES = 10;

  private static final AtomicLong failures = new AtomicLong();

  private byte[] family;
  private Durability durability;
  private boolean clientBuffering;
  private long writeBufferSize;
  private String tableName;
  private Table table;
  private BufferedMutator mutator;

  @Override
  public void init() throws DBException {
    Properties props = getProperties();
    family = Bytes.toBytes(props.getProperty("columnfamily", "family"));
    clientBuffering = Boolean.parseBoolean(props.getProperty("clientbuffering", "false"));
    writeBufferSize = Long.parseLong(props.getProperty("writebuffersize", "12582912"));
    try {
      durability = Durability.valueOf(props.getProperty("durability", "USE_DEFAULT"));
    } catch (IllegalArgumentException e) {
      throw new DBException("unknown durability '" + props.getProperty("durability") + "'");
    }
    synchronized (CONNECTION_LOCK) {
      if (connection == null) {
        Configuration conf = HBaseConfiguration.create();
        for (String name : props.stringPropertyNames()) {
          if (name.startsWith("hbase.") || name.startsWith("zookeeper.")) {
            conf.set(name, props.getProperty(name));
          }
        }
        try {
          connection = ConnectionFactory.createConnection(conf);
        } catch (IOException e) {
          throw new DBException("cannot connect to HBase", e);
        }
      }
      connectionUsers++;
    }
  }

  @Override
  public void cleanup() throws DBException {
    try {
      if (mutator != null) {
        mutator.close(); // flushes what is still buffered
      }
      if (table != null) {
        table.close();
      }
    } catch (IOException e) {
      throw new DBException("closing the table failed", e);
    } finally {
      mutator = null;
      table = null;
      synchronized (CONNECTION_LOCK) {
        connectionUsers--;
        if (connectionUsers == 0 && connection != null) {
          try {
            connection.close();
          } catch (IOException e) {
            System.err.println("HBaseClient2: closing the connection failed: " + e);
          }
          connection = null;
        }
      }
    }
  }

  /** This thread's table (YCSB passes the name on every call; it never changes in a run). */
  private Table table(String name) throws IOException {
    if (table == null || !name.equals(tableName)) {
      if (table != null) {
        table.close();
      }
      if (mutator != null) {
        mutator.close();
        mutator = null;
      }
      tableName = name;
      table = connection.getTable(TableName.valueOf(name));
      if (clientBuffering) {
        mutator = connection.getBufferedMutator(
            new BufferedMutatorParams(TableName.valueOf(name)).writeBufferSize(writeBufferSize));
      }
    }
    return table;
  }

  private Status failed(String what, String key, Exception e) {
    if (failures.incrementAndGet() <= PRINTED_FAILURES) {
      System.err.println("HBaseClient2: " + what + " of '" + key + "' failed:");
      e.printStackTrace();
    }
    return Status.ERROR;
  }

  private static HashMap<String, ByteIterator> fields(Result result) {
    HashMap<String, ByteIterator> fields = new HashMap<>();
    for (Cell cell : result.rawCells()) {
      fields.put(
          Bytes.toString(CellUtil.cloneQualifier(cell)),
          new ByteArrayByteIterator(CellUtil.cloneValue(cell)));
    }
    return fields;
  }

  @Override
  public Status read(
      String tableName, String key, Set<String> fieldNames, Map<String, ByteIterator> result) {
    Get get = new Get(Bytes.toBytes(key));
    if (fieldNames == null) {
      get.addFamily(family);
    } else {
      for (String field : fieldNames) {
        get.addColumn(family, Bytes.toBytes(field));
      }
    }
    try {
      Result row = table(tableName).get(get);
      if (row.isEmpty()) {
        return Status.NOT_FOUND;
      }
      result.putAll(fields(row));
      return Status.OK;
    } catch (IOException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status scan(
      String tableName,
      String startKey,
      int recordCount,
      Set<String> fieldNames,
      Vector<HashMap<String, ByteIterator>> result) {
    // At most recordCount rows, in as few round trips as the server allows.
    Scan scan = new Scan().withStartRow(Bytes.toBytes(startKey)).setLimit(recordCount)
        .setCaching(Math.max(1, recordCount));
    if (fieldNames == null) {
      scan.addFamily(family);
    } else {
      for (String field : fieldNames) {
        scan.addColumn(family, Bytes.toBytes(field));
      }
    }
    try (ResultScanner scanner = table(tableName).getScanner(scan)) {
      for (Result row : scanner) {
        result.add(fields(row));
        if (result.size() >= recordCount) {
          break;
        }
      }
      return Status.OK;
    } catch (IOException e) {
      return failed("scan", startKey, e);
    }
  }

  private Status write(String what, String tableName, String key, Mutation mutation) {
    mutation.setDurability(durability);
    try {
      Table t = table(tableName);
      if (mutator != null) {
        mutator.mutate(mutation);
      } else if (mutation instanceof Put) {
        t.put((Put) mutation);
      } else {
        t.delete((Delete) mutation);
      }
      return Status.OK;
    } catch (IOException e) {
      return failed(what, key, e);
    }
  }

  private Put put(String key, Map<String, ByteIterator> values) {
    Put put = new Put(Bytes.toBytes(key));
    for (Map.Entry<String, ByteIterator> value : values.entrySet()) {
      put.addColumn(family, Bytes.toBytes(value.getKey()), value.getValue().toArray());
    }
    return put;
  }

  @Override
  public Status update(String tableName, String key, Map<String, ByteIterator> values) {
    return write("update", tableName, key, put(key, values));
  }

  @Override
  public Status insert(String tableName, String key, Map<String, ByteIterator> values) {
    return write("insert", tableName, key, put(key, values));
  }

  @Override
  public Status delete(String tableName, String key) {
    return write("delete", tableName, key, new Delete(Bytes.toBytes(key)));
  }
}
