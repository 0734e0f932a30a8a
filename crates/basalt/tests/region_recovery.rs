//! Region recovery in cluster mode: region servers sharing one storage,
//! each with its own log; a region reopened on another server after its
//! server died (its log fenced, its edits replayed from it), or moved
//! between live servers; region epochs fencing every older opening.
//!
//! Every scenario runs on a shared local directory, on an in-memory file
//! store and on object storage in a directory (`file://`, with its disk
//! cache). A "dead" server is leaked without shutdown or close, so its
//! log has no closed object and its memstores are never flushed, as after
//! a crash; a "zombie" is one kept alive after the master fenced it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use basalt::fs::{FaultOp, FaultyFileStore, FileStore, LocalFileStore, MemFileStore};
use basalt::{
    delete_log, fence_log, layout, list_logs, replay_log, ColumnFamilyDescriptor, Error,
    FamilyState, Get, ManualClock, ObjectWalOptions, Options, Put, Region, RegionAssignment,
    RegionInfo, RegionServer, RegionSpec,
};

use basalt_object_store::{open_storage, StorageConfig};

const TABLE: &str = "t";
const FAMILY: &str = "cf";
/// The gap a new owner's store file ids start above the previous one's
/// (`basalt_engine::manifest::FENCE_FILE_ID_GAP`).
const FILE_ID_GAP: u64 = 1 << 20;

/// One shared storage and the servers' private directories.
struct Cluster {
    files: Arc<dyn FileStore>,
    root: PathBuf,
    /// Holds the local storage directory (if any) and the servers' own
    /// directories.
    dir: tempfile::TempDir,
    clock: ManualClock,
    servers: Cell<usize>,
}

impl Cluster {
    /// Each kind of storage, one scenario run on each.
    fn each(scenario: impl Fn(&Cluster)) {
        for kind in ["local", "memory", "memory, appending", "file://"] {
            let dir = tempfile::tempdir().unwrap();
            let (files, root): (Arc<dyn FileStore>, PathBuf) = match kind {
                "local" => (Arc::new(LocalFileStore::new()), dir.path().join("shared")),
                "memory" => (Arc::new(MemFileStore::new()), PathBuf::from("/shared")),
                // The log in segments, as on a shared directory.
                "memory, appending" => (
                    Arc::new(MemFileStore::appending()),
                    PathBuf::from("/shared"),
                ),
                _ => {
                    // One store for every server of the process: the paths
                    // below `root` are the keys every server sees.
                    let root = dir.path().join("root");
                    let url = format!("file://{}", dir.path().join("objects").display());
                    let storage = open_storage(&StorageConfig::for_url(url), &root)
                        .unwrap()
                        .unwrap();
                    (storage.file_store(), root)
                }
            };
            let cluster = Cluster {
                files,
                root,
                dir,
                clock: ManualClock::new(1_000_000),
                servers: Cell::new(0),
            };
            scenario(&cluster);
        }
    }

    /// Starts a region server over the shared storage. Maintenance runs
    /// inline (no background threads): the tests decide when flushes and
    /// retirement happen.
    fn member(&self) -> RegionServer {
        self.member_over(Arc::clone(&self.files))
    }

    /// A region server reaching the shared storage through `files`.
    fn member_over(&self, files: Arc<dyn FileStore>) -> RegionServer {
        let n = self.servers.get();
        self.servers.set(n + 1);
        let own = self.dir.path().join(format!("server-{n}"));
        let mut options = Options::new(own);
        options.background_threads = 0;
        RegionServer::start_member(
            &self.root,
            options,
            Arc::new(self.clock.clone()),
            files,
            ObjectWalOptions {
                group_commit_window: Duration::from_millis(1),
                ..ObjectWalOptions::default()
            },
        )
        .unwrap()
    }

    fn store_dir(&self, region: u64) -> PathBuf {
        layout::store_dir(&layout::region_dir(&self.root, TABLE, region), FAMILY)
    }

    /// The ids of the store files of `region`'s family on the storage.
    fn file_ids(&self, region: u64) -> Vec<u64> {
        self.files
            .list(&self.store_dir(region))
            .unwrap()
            .iter()
            .filter(|p| layout::is_store_file(p))
            .filter_map(|p| file_id(p))
            .collect()
    }
}

fn file_id(path: &Path) -> Option<u64> {
    path.file_name()?.to_str()?.get(..20)?.parse().ok()
}

/// Region `id` of table `t`, the whole key space.
fn spec(id: u64) -> RegionSpec {
    RegionSpec {
        info: RegionInfo {
            id,
            table: TABLE.into(),
            start_key: Default::default(),
            end_key: Default::default(),
        },
        families: vec![FamilyState {
            descriptor: ColumnFamilyDescriptor::new(FAMILY),
            first_sequence: 1,
        }],
        indexes: Vec::new(),
    }
}

fn assign(id: u64, epoch: u64, recover_from: Vec<u64>) -> RegionAssignment {
    RegionAssignment {
        spec: spec(id),
        epoch,
        recover_from,
    }
}

fn put(region: &Region, row: &str, value: &str) -> basalt::Result<()> {
    region.put(&Put::new(row.to_string()).add(FAMILY, "q", value.to_string()))
}

fn value(region: &Region, row: &str) -> Option<String> {
    let result = region.get(&Get::new(row.to_string())).unwrap();
    result
        .value(FAMILY.as_bytes(), b"q")
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

fn log_id(server: &RegionServer) -> u64 {
    server.fence().unwrap().epoch()
}

/// A crash: no flush, no closed object at the end of its log.
fn crash(server: RegionServer) {
    std::mem::forget(server);
}

#[test]
fn a_region_reopened_after_its_server_died_has_every_acknowledged_write_and_takes_new_ones() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        for i in 0..20 {
            put(&r, &format!("row{i:02}"), &format!("a{i}")).unwrap();
        }
        // Some of it reaches store files before the crash: replay must skip
        // what the stores hold and apply the rest.
        a.flush_region(1).unwrap();
        for i in 20..30 {
            put(&r, &format!("row{i:02}"), &format!("a{i}")).unwrap();
        }
        put(&r, "row00", "overwritten").unwrap();
        let dead_log = log_id(&a);
        drop(r);
        crash(a);

        // The master: the dead server's log first, then the region elsewhere.
        fence_log(cluster.files.as_ref(), &cluster.root, dead_log, 11).unwrap();
        let b = cluster.member();
        let r = b.open_assigned(assign(1, 11, vec![dead_log])).unwrap();
        assert_eq!(value(&r, "row00").as_deref(), Some("overwritten"));
        for i in 1..30 {
            assert_eq!(
                value(&r, &format!("row{i:02}")),
                Some(format!("a{i}")),
                "row{i:02}"
            );
        }
        // Replayed edits were flushed before serving: the dead log is no
        // longer needed for this region.
        assert!(r.flushed_through() > 0);
        assert_eq!(r.memstore_bytes(), 0);

        put(&r, "row30", "b").unwrap();
        assert_eq!(value(&r, "row30").as_deref(), Some("b"));
        // New writes get sequence ids above the replayed ones: after a
        // second crash, both generations come back.
        let b_log = log_id(&b);
        drop(r);
        crash(b);
        fence_log(cluster.files.as_ref(), &cluster.root, b_log, 12).unwrap();
        let c = cluster.member();
        let r = c
            .open_assigned(assign(1, 12, vec![dead_log, b_log]))
            .unwrap();
        assert_eq!(value(&r, "row00").as_deref(), Some("overwritten"));
        assert_eq!(value(&r, "row30").as_deref(), Some("b"));
        c.shutdown().unwrap();
    });
}

#[test]
fn a_zombie_server_cannot_write_flush_or_serve_once_its_log_is_fenced_and_its_region_reopened() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let r_on_a = a.open_assigned(assign(1, 10, vec![])).unwrap();
        let s_on_a = a.open_assigned(assign(2, 10, vec![])).unwrap();
        put(&r_on_a, "before", "1").unwrap();
        put(&s_on_a, "other", "1").unwrap();
        let a_log = log_id(&a);

        // A is only paused: the master believes it dead.
        fence_log(cluster.files.as_ref(), &cluster.root, a_log, 11).unwrap();
        let b = cluster.member();
        let r_on_b = b.open_assigned(assign(1, 11, vec![a_log])).unwrap();
        assert_eq!(value(&r_on_b, "before").as_deref(), Some("1"));

        // A wakes up: its next write collides with the fence.
        let err = put(&r_on_a, "zombie", "1").unwrap_err();
        assert!(matches!(err, Error::Fenced { epoch: 11, .. }), "{err}");
        assert!(a.fence().unwrap().is_tripped());
        assert_eq!(value(&r_on_b, "zombie"), None);
        // Its flush of the region fails too: nothing more is committed.
        let err = a.flush_region(1).unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
        // And its other regions refuse reads and writes: the log fence is
        // the whole server's.
        assert!(matches!(
            put(&s_on_a, "other", "2"),
            Err(Error::Fenced { .. })
        ));
        assert!(matches!(
            s_on_a.get(&Get::new("other")),
            Err(Error::Fenced { .. })
        ));
        assert!(matches!(
            r_on_a.get(&Get::new("before")),
            Err(Error::Fenced { .. })
        ));
        // The zombie learned nothing new was published: B still serves it all.
        put(&r_on_b, "after", "1").unwrap();
        assert_eq!(value(&r_on_b, "after").as_deref(), Some("1"));
        drop(a);
        b.shutdown().unwrap();
    });
}

#[test]
fn a_newer_opening_elsewhere_fences_only_that_region_on_the_old_server() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let r_on_a = a.open_assigned(assign(1, 10, vec![])).unwrap();
        let s_on_a = a.open_assigned(assign(2, 10, vec![])).unwrap();
        put(&r_on_a, "r", "1").unwrap();
        put(&s_on_a, "s", "1").unwrap();
        a.flush_region(1).unwrap();
        put(&r_on_a, "r", "2").unwrap();

        // R opened elsewhere at a newer epoch (without the move's close):
        // its manifests now carry epoch 11.
        let b = cluster.member();
        b.open_assigned(assign(1, 11, vec![])).unwrap();

        // A's next commit of R collides: R refuses from then on, on A only.
        let err = a.flush_region(1).unwrap_err();
        assert!(matches!(err, Error::Fenced { epoch: 11, .. }), "{err}");
        assert!(matches!(
            r_on_a.get(&Get::new("r")),
            Err(Error::Fenced { .. })
        ));
        assert!(!a.fence().unwrap().is_tripped());
        put(&s_on_a, "s", "2").unwrap();
        assert_eq!(value(&s_on_a, "s").as_deref(), Some("2"));
        a.flush_region(2).unwrap();
        a.shutdown().unwrap();
        b.shutdown().unwrap();
    });
}

#[test]
fn a_region_moved_between_live_servers_keeps_its_data_and_leaves_nothing_writable_behind() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        put(&r, "a", "1").unwrap();
        a.flush_region(1).unwrap();
        let a_max = cluster.file_ids(1).into_iter().max().unwrap();
        let a_log = log_id(&a);
        drop(r);
        crash(a);
        fence_log(cluster.files.as_ref(), &cluster.root, a_log, 11).unwrap();

        let b = cluster.member();
        let r_on_b = b.open_assigned(assign(1, 11, vec![a_log])).unwrap();
        put(&r_on_b, "b", "1").unwrap();
        b.close_for_move(1).unwrap();
        assert!(b.region(1).is_none());
        // A handle still held on B takes no write.
        assert!(matches!(
            put(&r_on_b, "late", "1"),
            Err(Error::NotServingRegion(_))
        ));
        let b_files = cluster.file_ids(1);
        let b_min = b_files
            .iter()
            .copied()
            .filter(|&id| id > a_max)
            .min()
            .unwrap();
        let b_max = b_files.into_iter().max().unwrap();
        // Fencing invariant M3 at the region epoch: B's files start a gap
        // above A's, which a zombie A could still be writing.
        assert!(b_min > a_max + FILE_ID_GAP, "{b_min} after {a_max}");

        let c = cluster.member();
        let r_on_c = c.open_assigned(assign(1, 12, vec![])).unwrap();
        assert_eq!(value(&r_on_c, "a").as_deref(), Some("1"));
        assert_eq!(value(&r_on_c, "b").as_deref(), Some("1"));
        assert_eq!(value(&r_on_c, "late"), None);
        put(&r_on_c, "c", "1").unwrap();
        c.flush_region(1).unwrap();
        // And again at the next epoch, not only at the first.
        let c_min = cluster
            .file_ids(1)
            .into_iter()
            .filter(|&id| id > b_max)
            .min()
            .unwrap();
        assert!(c_min > b_max + FILE_ID_GAP, "{c_min} after {b_max}");
        // B, alive, no longer has the region to write to.
        assert!(b.region(1).is_none());
        assert!(matches!(
            b.close_for_move(1),
            Err(Error::NotServingRegion(_))
        ));
        b.shutdown().unwrap();
        c.shutdown().unwrap();
    });
}

#[test]
fn an_opening_at_an_older_epoch_is_refused_as_fenced_and_serves_nothing() {
    Cluster::each(|cluster| {
        let b = cluster.member();
        let r = b.open_assigned(assign(1, 11, vec![])).unwrap();
        put(&r, "row", "1").unwrap();
        b.flush_region(1).unwrap();

        let d = cluster.member();
        let err = d.open_assigned(assign(1, 9, vec![])).unwrap_err();
        assert!(matches!(err, Error::Fenced { epoch: 11, .. }), "{err}");
        assert!(d.region(1).is_none());
        assert!(d.online_regions().is_empty());
        // The refused opening fenced nothing: B goes on, and D's other
        // regions too.
        assert!(!d.fence().unwrap().is_tripped());
        d.open_assigned(assign(2, 9, vec![])).unwrap();
        put(&r, "row", "2").unwrap();
        b.flush_region(1).unwrap();
        assert_eq!(value(&r, "row").as_deref(), Some("2"));
        b.shutdown().unwrap();
        d.shutdown().unwrap();
    });
}

#[test]
fn opening_a_region_already_online_here_is_an_invalid_argument_naming_it() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        a.open_assigned(assign(1, 10, vec![])).unwrap();
        let err = a.open_assigned(assign(1, 11, vec![])).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains("id 1") && m.contains("already online")),
            "{err}"
        );
        a.shutdown().unwrap();
    });
}

#[test]
fn logs_are_replayed_only_once_ended_fenced_idempotently_and_deleted_from_the_listing() {
    Cluster::each(|cluster| {
        let files = cluster.files.as_ref();
        let root = &cluster.root;
        let a = cluster.member();
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        put(&r, "row", "1").unwrap();
        let a_log = log_id(&a);
        let b = cluster.member();
        assert_eq!(list_logs(files, root).unwrap(), vec![a_log, log_id(&b)]);

        // A live log: replaying it now could miss its next edits.
        let err = replay_log(files, root, a_log, |_| Ok(())).unwrap_err();
        assert!(
            matches!(&err, Error::WalFailed(m) if m.contains(&a_log.to_string())),
            "{err}"
        );
        // Opening a region from it is refused the same way, serving nothing.
        assert!(matches!(
            b.open_assigned(assign(1, 11, vec![a_log])),
            Err(Error::WalFailed(_))
        ));
        assert!(b.region(1).is_none());

        drop(r);
        crash(a);
        fence_log(files, root, a_log, 11).unwrap();
        fence_log(files, root, a_log, 11).unwrap();
        let mut edits = 0;
        replay_log(files, root, a_log, |e| {
            assert_eq!(e.region_id, 1);
            edits += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(edits, 1);
        b.open_assigned(assign(1, 12, vec![a_log])).unwrap();

        delete_log(files, root, a_log).unwrap();
        assert_eq!(list_logs(files, root).unwrap(), vec![log_id(&b)]);
        // A server started later still claims above the deleted log.
        let c = cluster.member();
        assert!(log_id(&c) > a_log);
        b.shutdown().unwrap();
        c.shutdown().unwrap();
    });
}

/// The edits of `region` left in `log` (which must have ended).
fn edits_of(cluster: &Cluster, log: u64, region: u64) -> usize {
    let mut count = 0;
    replay_log(cluster.files.as_ref(), &cluster.root, log, |e| {
        count += usize::from(e.region_id == region);
        Ok(())
    })
    .unwrap();
    count
}

#[test]
fn a_moved_regions_edits_leave_the_old_servers_log_once_the_others_flush() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        let s = a.open_assigned(assign(2, 10, vec![])).unwrap();
        for i in 0..5 {
            put(&r, &format!("r{i}"), "1").unwrap();
            put(&s, &format!("s{i}"), "1").unwrap();
        }
        // The newest object holds only S's edits.
        put(&s, "last", "1").unwrap();
        a.close_for_move(1).unwrap();
        a.flush_region(2).unwrap();
        let a_log = log_id(&a);
        drop((r, s));
        crash(a);
        fence_log(cluster.files.as_ref(), &cluster.root, a_log, 11).unwrap();
        assert_eq!(edits_of(cluster, a_log, 1), 0);
    });
}

#[test]
fn a_clean_stop_after_a_move_retires_the_moved_regions_edits_too() {
    Cluster::each(|cluster| {
        let a = cluster.member();
        let s = a.open_assigned(assign(2, 10, vec![])).unwrap();
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        put(&s, "s", "1").unwrap();
        // The newest object holds R's edit: an open log keeps its newest
        // object, so the move alone cannot retire it.
        put(&r, "r", "1").unwrap();
        a.close_for_move(1).unwrap();
        let a_log = log_id(&a);
        // Its claim, S's object (S is not flushed) and R's, the newest;
        // where the log appends, the claim and the one segment holding
        // both.
        let log_dir = cluster.root.join("wal").join(format!("{a_log:020}"));
        let expected = if cluster.files.can_append() { 2 } else { 3 };
        assert_eq!(cluster.files.list(&log_dir).unwrap().len(), expected);
        // At the stop the log is closed; R counts as flushed as far as it
        // was when it moved, though it is no longer online here.
        a.shutdown().unwrap();
        drop((r, s));
        assert_eq!(edits_of(cluster, a_log, 1), 0);
        assert_eq!(edits_of(cluster, a_log, 2), 0);
    });
}

#[test]
fn a_failed_flush_fails_the_move_and_leaves_the_region_online_and_serving() {
    Cluster::each(|cluster| {
        let faulty = Arc::new(FaultyFileStore::new(Arc::clone(&cluster.files)));
        let a = cluster.member_over(Arc::clone(&faulty) as Arc<dyn FileStore>);
        let r = a.open_assigned(assign(1, 10, vec![])).unwrap();
        put(&r, "row", "1").unwrap();
        // The flush's store file cannot be created.
        faulty.fail_nth(FaultOp::Create, 1);
        assert!(matches!(a.close_for_move(1), Err(Error::Io { .. })));
        assert!(a.region(1).is_some());
        put(&r, "row", "2").unwrap();
        assert_eq!(value(&r, "row").as_deref(), Some("2"));
        // Once the storage is back, the move goes through, with every write.
        a.close_for_move(1).unwrap();
        let b = cluster.member();
        let r = b.open_assigned(assign(1, 11, vec![])).unwrap();
        assert_eq!(value(&r, "row").as_deref(), Some("2"));
        a.shutdown().unwrap();
        b.shutdown().unwrap();
    });
}
