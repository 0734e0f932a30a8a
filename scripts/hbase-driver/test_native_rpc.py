"""Basalt's native RPC through hbase-driver's public API.

Run by scripts/hbase-driver-suite against `basalt serve --zookeeper`, with
BASALT_ZK naming the ZooKeeper quorum: the client is given nothing else.
Each test uses its own table so the tests do not depend on each other.
"""

import os
import uuid

import pytest

from hbasedriver.client.client import Client
from hbasedriver.exceptions.RemoteException import RemoteException
from hbasedriver.filter.binary_comparator import BinaryComparator
from hbasedriver.filter.compare_operator import CompareOperator
from hbasedriver.filter.filter_list import FilterList
from hbasedriver.filter.key_only_filter import KeyOnlyFilter
from hbasedriver.filter.page_filter import PageFilter
from hbasedriver.filter.prefix_filter import PrefixFilter
from hbasedriver.filter.single_column_value_filter import SingleColumnValueFilter
from hbasedriver.filter.value_filter import ValueFilter
from hbasedriver.operations.append import Append
from hbasedriver.operations.column_family_builder import ColumnFamilyDescriptorBuilder
from hbasedriver.operations.delete import Delete
from hbasedriver.operations.get import Get
from hbasedriver.operations.increment import CheckAndPut, Increment
from hbasedriver.operations.put import Put
from hbasedriver.operations.row_mutations import RowMutations
from hbasedriver.operations.scan import Scan
from hbasedriver.table_name import TableName

CONF = {"hbase.zookeeper.quorum": os.environ["BASALT_ZK"]}


@pytest.fixture()
def client():
    # One client per test: hbase-driver's connection-wide region cache is
    # keyed by region id and key range only, not by table, so a client
    # reused across tables can route a scan to another table's region.
    c = Client(CONF)
    yield c
    c.close()


@pytest.fixture()
def table(client):
    """A fresh table with families cf (3 versions) and cf2."""
    name = ("t_" + uuid.uuid4().hex[:8]).encode()
    tn = TableName.value_of(b"default", name)
    admin = client.get_admin()
    admin.create_table(tn, [
        ColumnFamilyDescriptorBuilder(b"cf").set_max_versions(3).build(),
        ColumnFamilyDescriptorBuilder(b"cf2").build(),
    ])
    t = client.get_table(b"default", name)
    yield t
    t.close()
    admin.disable_table(tn)
    admin.delete_table(tn)


def rows_of(scanner):
    with scanner:
        return [r.rowkey for r in scanner]


def test_admin_creates_describes_alters_disables_and_deletes_a_table(client):
    admin = client.get_admin()
    tn = TableName.value_of(b"default", b"admin_t")
    admin.create_table(tn, [ColumnFamilyDescriptorBuilder(b"cf").set_max_versions(5).build()],
                       split_keys=[b"m"])
    assert admin.table_exists(tn)
    described = admin.describe_table(tn)
    families = {f.name for f in described.column_families} if hasattr(described, "column_families") \
        else {f.name for f in described.table_schema[0].column_families}
    assert b"cf" in families
    admin.add_column_family(tn, b"extra", max_versions=2)
    admin.delete_column_family(tn, b"extra")
    assert admin.is_table_enabled(tn)
    admin.disable_table(tn)
    assert admin.is_table_disabled(tn)
    admin.enable_table(tn)
    admin.disable_table(tn)
    admin.delete_table(tn)
    assert not admin.table_exists(tn)


def test_namespaces_are_created_listed_and_deleted(client):
    admin = client.get_admin()
    admin.create_namespace(b"ns_driver")
    assert "ns_driver" in [n if isinstance(n, str) else n.decode() for n in admin.list_namespaces()]
    tn = TableName.value_of(b"ns_driver", b"t")
    admin.create_table(tn, [ColumnFamilyDescriptorBuilder(b"cf").build()])
    t = client.get_table(b"ns_driver", b"t")
    t.put(Put(b"r").add_column(b"cf", b"q", b"in-namespace"))
    assert t.get(Get(b"r")).get(b"cf", b"q") == b"in-namespace"
    admin.disable_table(tn)
    admin.delete_table(tn)
    admin.delete_namespace(b"ns_driver")
    assert "ns_driver" not in [n if isinstance(n, str) else n.decode() for n in admin.list_namespaces()]


def test_put_get_and_delete_follow_hbase(table):
    table.put(Put(b"r1").add_column(b"cf", b"a", b"1").add_column(b"cf2", b"b", b"2"))
    row = table.get(Get(b"r1"))
    assert row.get(b"cf", b"a") == b"1" and row.get(b"cf2", b"b") == b"2"
    only_cf2 = table.get(Get(b"r1").add_family(b"cf2"))
    assert only_cf2.get(b"cf", b"a") is None and only_cf2.get(b"cf2", b"b") == b"2"
    assert table.exists(Get(b"r1"))
    assert not table.exists(Get(b"nope"))
    table.delete(Delete(b"r1").add_column(b"cf", b"a"))
    row = table.get(Get(b"r1"))
    assert row.get(b"cf", b"a") is None and row.get(b"cf2", b"b") == b"2"
    table.delete(Delete(b"r1"))
    assert table.get(Get(b"r1")) is None


def test_explicit_timestamps_and_versions_are_kept(table):
    # hbase-driver 1.1.1 cannot send a time range (Get.set_time_range fails
    # inside the driver; Scan never sends one) and its Row keeps one cell
    # per column: the newest version is what it can check.
    for ts, v in [(100, b"old"), (300, b"new"), (200, b"mid")]:
        table.put(Put(b"v").add_column(b"cf", b"q", v, ts=ts))
    assert table.get(Get(b"v")).get(b"cf", b"q") == b"new"
    table.delete(Delete(b"v").add_column(b"cf", b"q", ts=300))
    assert table.get(Get(b"v")).get(b"cf", b"q") == b"mid"


def test_scans_honour_ranges_reversal_caching_and_limits(table):
    for i in range(30):
        table.put(Put(b"row%02d" % i).add_column(b"cf", b"q", b"v%d" % i))
    assert rows_of(table.scan(Scan())) == [b"row%02d" % i for i in range(30)]
    # hbase-driver's Scan includes its end row unless told otherwise.
    assert rows_of(table.scan(Scan(b"row05", b"row10"))) == [b"row%02d" % i for i in range(5, 11)]
    exclusive = Scan(b"row05", b"row10").with_end_row(b"row10", inclusive=False)
    assert rows_of(table.scan(exclusive)) == [b"row%02d" % i for i in range(5, 10)]
    after = Scan(b"row05", b"row07").with_start_row(b"row05", inclusive=False)
    assert rows_of(table.scan(after)) == [b"row06", b"row07"]
    cached = Scan()
    cached.setCaching(4)
    assert len(rows_of(table.scan(cached))) == 30
    reversed_scan = Scan(b"row09")
    reversed_scan.setReversed(True)
    got = rows_of(table.scan(reversed_scan))
    assert got[:3] == [b"row09", b"row08", b"row07"] and got[-1] == b"row00"


def test_scans_apply_server_side_filters(table):
    for i in range(20):
        table.put(Put(b"k%02d" % i).add_column(b"cf", b"q", b"even" if i % 2 == 0 else b"odd"))
    table.put(Put(b"other").add_column(b"cf", b"q", b"even"))
    prefix = Scan()
    prefix.set_filter(PrefixFilter(b"k1"))
    assert rows_of(table.scan(prefix)) == [b"k%02d" % i for i in range(10, 20)]
    value = Scan()
    value.set_filter(ValueFilter(CompareOperator.EQUAL, BinaryComparator(b"odd")))
    assert len(rows_of(table.scan(value))) == 10
    scvf = Scan()
    scvf.set_filter(SingleColumnValueFilter(b"cf", b"q", CompareOperator.EQUAL, BinaryComparator(b"even")))
    assert len(rows_of(table.scan(scvf))) == 11
    both = Scan()
    both.set_filter(FilterList(FilterList.Operator.MUST_PASS_ALL,
                               [PrefixFilter(b"k"), PageFilter(3)]))
    assert rows_of(table.scan(both)) == [b"k00", b"k01", b"k02"]
    keys = Scan()
    keys.set_filter(KeyOnlyFilter())
    with table.scan(keys) as scanner:
        first = next(iter(scanner))
    assert first.get(b"cf", b"q") == b""


def test_batches_write_and_read_many_rows(table):
    from hbasedriver.operations.batch import BatchGet, BatchPut
    bp = BatchPut()
    for i in range(50):
        bp.add_put(Put(b"b%02d" % i).add_column(b"cf", b"q", b"%d" % i))
    assert all(table.batch_put(bp))
    got = table.batch_get(BatchGet([b"b00", b"b25", b"b49", b"missing"]))
    assert got[b"b25"].get(b"cf", b"q") == b"25"
    assert got[b"missing"] is None


def test_increment_append_and_check_and_mutate_are_atomic_on_the_server(table):
    inc = Increment(b"c").add_column(b"cf", b"n", 5)
    table.increment(inc)
    assert table.increment(Increment(b"c").add_column(b"cf", b"n", 2)) == 7
    table.append(Append(b"a").add_column(b"cf", b"s", b"ab"))
    row = table.append(Append(b"a").add_column(b"cf", b"s", b"cd"))
    assert row.get(b"cf", b"s") == b"abcd"
    cap = CheckAndPut(b"lock")
    cap.set_check(b"cf", b"owner", None)
    cap.set_put(Put(b"lock").add_column(b"cf", b"owner", b"me"))
    assert table.check_and_put(cap)
    again = CheckAndPut(b"lock")
    again.set_check(b"cf", b"owner", None)
    again.set_put(Put(b"lock").add_column(b"cf", b"owner", b"you"))
    assert not table.check_and_put(again)
    swap = CheckAndPut(b"lock")
    swap.set_check(b"cf", b"owner", b"me")
    swap.set_put(Put(b"lock").add_column(b"cf", b"owner", b"you"))
    assert table.check_and_put(swap)
    assert table.get(Get(b"lock")).get(b"cf", b"owner") == b"you"
    assert table.check_and_delete(b"lock", b"cf", b"owner", b"you", Delete(b"lock"))
    assert table.get(Get(b"lock")) is None
    rm = RowMutations(b"rm").add_put(Put(b"rm").add_column(b"cf", b"x", b"1")) \
        .add_put(Put(b"rm").add_column(b"cf2", b"y", b"2"))
    assert table.mutate_row(rm)
    row = table.get(Get(b"rm"))
    assert row.get(b"cf", b"x") == b"1" and row.get(b"cf2", b"y") == b"2"


def test_a_client_with_a_stale_location_is_redirected_after_a_split(client, table):
    rows = [b"s%03d" % i for i in range(100)]
    for r in rows:
        table.put(Put(r).add_column(b"cf", b"q", r))
    # The table's one region, as the driver cached it.
    old = table.locate_target_region(b"s000")
    admin = client.get_admin()
    # A split key that is not a row: see docs/native-rpc.md on hbase-driver
    # and rows equal to a region's start key.
    admin.split_region(old.region_info, b"s050x")
    with pytest.raises(RemoteException) as stale:
        table.get(Get(b"s010"))
    assert "NotServingRegionException" in str(stale.value.args)
    # The driver's documented way to re-read hbase:meta.
    table.invalidate_cache()
    for r in rows:
        assert table.get(Get(r)).get(b"cf", b"q") == r
    # hbase-driver moves to the next region at "last row + \\x00", not at
    # the region's end key, so one scan stops at the first region's end
    # (docs/native-rpc.md); each region's rows scan whole.
    assert rows_of(table.scan(Scan(b"s000", b"s050"))) == rows[:51]
    # Not Scan(b"s050x"): hbase-driver looks a row up in hbase:meta from
    # "<table>,<row>," and so misses the region that starts exactly at the
    # row (docs/native-rpc.md); HBase answers it the same way.
    assert rows_of(table.scan(Scan(b"s051"))) == rows[51:]
    left = table.locate_target_region(b"s000")
    right = table.locate_target_region(b"s099")
    assert left.region_encoded != right.region_encoded
    assert right.region_info.start_key == b"s050x"


def test_snapshots_are_taken_listed_cloned_restored_and_deleted(client):
    admin = client.get_admin()
    name = ("s_" + uuid.uuid4().hex[:8]).encode()
    tn = TableName.value_of(b"default", name)
    admin.create_table(tn, [ColumnFamilyDescriptorBuilder(b"cf").build()])
    t = client.get_table(b"default", name)
    t.put(Put(b"r1").add_column(b"cf", b"q", b"before"))
    snap = "snap_" + name.decode()
    admin.create_snapshot(tn, snap)
    assert admin.snapshot_exists(snap)
    listed = [s for s in admin.list_snapshots() if s["name"] == snap]
    assert len(listed) == 1 and listed[0]["table"] == name.decode()
    t.put(Put(b"r1").add_column(b"cf", b"q", b"after"))
    t.close()

    clone = ("c_" + uuid.uuid4().hex[:8]).encode()
    ctn = TableName.value_of(b"default", clone)
    admin.clone_snapshot(snap, ctn)
    # A client per table (see the `client` fixture) and after the restore,
    # whose regions are new.
    with_clone = Client(CONF)
    assert with_clone.get_table(b"default", clone).get(Get(b"r1")).get(b"cf", b"q") == b"before"
    with_clone.close()

    admin.disable_table(tn)
    admin.restore_snapshot(snap)
    admin.enable_table(tn)
    restored = Client(CONF)
    assert restored.get_table(b"default", name).get(Get(b"r1")).get(b"cf", b"q") == b"before"
    restored.close()

    admin.delete_snapshot(snap)
    assert not admin.snapshot_exists(snap)
    for table_name in (tn, ctn):
        admin.disable_table(table_name)
        admin.delete_table(table_name)
