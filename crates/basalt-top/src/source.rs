//! Where the numbers come from. A [`Source`] takes a [`Snapshot`]: the
//! server's summary and every region of every table with its load
//! totals, sizes and (when the server reports them) its own rates.
//!
//! Two sources ask the same questions of Basalt's typed admin API
//! (`basalt::admin`), so they answer alike:
//! - [`RemoteSource`]: a running server, over the Thrift1 gateway and its
//!   `basaltAdmin` extension (as `basalt shell --host` reaches it);
//! - [`EmbeddedSource`]: a data directory opened in this process (only
//!   when no server holds it; its counters start at zero, so it shows
//!   sizes more than load).
//!
//! A snapshot is `Status`, the table names, then `ListRegions` per table;
//! a table dropped (or disabled) between the listing and its regions is
//! left out rather than failing the refresh.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use basalt::admin::{Admin, AdminReply, AdminRequest, RegionInfoReply, StatusReply};
use basalt::{Database, ErrorKind};
use basalt_thrift::admin::{self as wire, AdminCallError};
use basalt_thrift::client::{Client, ClientError};
use basalt_thrift::Protocol;

use crate::model::{split_table, Rates};
use crate::TopError;

/// Something `basalt top` can take snapshots of. The contract: each call
/// returns the state *now* (totals only grow while a region stays open),
/// with `at_ms` from one monotonic clock per source, so the difference of
/// two snapshots' totals over the difference of their `at_ms` is a rate.
pub trait Source {
    /// Takes one snapshot: the summary and the regions of every table.
    fn snapshot(&mut self) -> Result<Snapshot, TopError>;
}

/// Everything one refresh shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// When it was taken, in milliseconds of the source's monotonic clock.
    pub at_ms: u64,
    /// When it was taken, in milliseconds since the Unix epoch (shown).
    pub wall_ms: i64,
    /// The summary lines' facts.
    pub summary: Summary,
    /// Every region of every table, in table then key order.
    pub regions: Vec<RegionSample>,
}

/// What the summary lines show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Where the numbers come from (`host:port`, or the data directory).
    pub location: String,
    /// The server's uptime, when it reports one.
    pub uptime_ms: Option<u64>,
    /// Tables.
    pub tables: usize,
    /// Regions across tables.
    pub regions: usize,
    /// Regions that could not be opened.
    pub failed_regions: usize,
    /// The server's own reads and writes per second over the last minute,
    /// across the regions it holds.
    pub requests_per_second: f64,
    /// The cluster, for a cluster member; `None` in one process.
    pub cluster: Option<ClusterSummary>,
}

/// The cluster as its active master sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSummary {
    /// The active master's server name (the closest thing to HBase's
    /// cluster id Basalt has).
    pub master: String,
    /// The catalog version the master answered from.
    pub catalog_version: u64,
    /// Standby masters.
    pub backup_masters: usize,
    /// Live region servers, in name order.
    pub live_servers: Vec<String>,
    /// Servers declared dead whose recovery is not over.
    pub dead_servers: usize,
    /// Regions not open on a live server.
    pub in_transition: usize,
}

/// One region as a snapshot saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionSample {
    /// Full table name (`ns:table`, or `table` in the default namespace).
    pub table: String,
    /// Encoded region name.
    pub encoded_name: String,
    /// The region server holding it, in a cluster.
    pub server: Option<String>,
    /// First row (inclusive); empty is the start of the table.
    pub start_key: Bytes,
    /// End row (exclusive); empty is the end of the table.
    pub end_key: Bytes,
    /// Gets and scans served since the region opened.
    pub read_requests: u64,
    /// Reads whose filter dropped something, since the region opened.
    pub filtered_read_requests: u64,
    /// Row mutations applied since the region opened.
    pub write_requests: u64,
    /// The server's own rates over its last minute, when it reports them.
    pub reported: Option<Rates>,
    /// Store files across families.
    pub store_files: usize,
    /// Bytes in store files.
    pub store_file_bytes: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
    /// Progress of the running compaction (0.0-1.0); `None` when idle or
    /// not reported.
    pub compaction_progress: Option<f64>,
    /// When the last major compaction finished (ms since the epoch);
    /// `None` for never or not reported.
    pub last_major_compaction_ms: Option<i64>,
    /// HBase's region state name (`OPEN`, `FAILED_OPEN`, ...).
    pub state: String,
}

impl RegionSample {
    /// The sample of a region as the admin API describes it; `holder` is
    /// the server the cluster status names for it, used when the reply
    /// itself names none.
    pub fn from_reply(table: &str, holder: Option<String>, r: &RegionInfoReply) -> RegionSample {
        RegionSample {
            table: table.to_string(),
            encoded_name: r.encoded_name.clone(),
            server: r.server.clone().or(holder),
            start_key: r.start_key.clone(),
            end_key: r.end_key.clone(),
            read_requests: r.read_requests,
            filtered_read_requests: r.filtered_read_requests,
            write_requests: r.write_requests,
            // An older server leaves the rates out (they decode as zero):
            // indistinguishable from an idle region, and shown the same.
            reported: Some(Rates {
                // Another server's region in a cluster status carries only
                // the sum.
                requests: r
                    .requests_per_sec
                    .max(r.read_requests_per_sec + r.write_requests_per_sec),
                read: r.read_requests_per_sec,
                filtered_read: r.filtered_read_requests_per_sec,
                write: r.write_requests_per_sec,
            }),
            store_files: r.store_files,
            store_file_bytes: r.store_file_bytes,
            memstore_bytes: r.memstore_bytes,
            compaction_progress: r.compaction_progress,
            last_major_compaction_ms: (r.last_major_compaction_ms > 0)
                .then_some(r.last_major_compaction_ms),
            state: r.state.clone(),
        }
    }
}

impl Summary {
    fn from_status(location: String, status: &StatusReply) -> Summary {
        Summary {
            location,
            // Zero from a server that predates the field.
            uptime_ms: u64::try_from(status.uptime_ms).ok().filter(|ms| *ms > 0),
            tables: status.tables,
            regions: status.regions,
            failed_regions: status.failed_regions,
            requests_per_second: status.requests_per_second,
            cluster: status.cluster.as_ref().map(|c| ClusterSummary {
                master: c.master.clone(),
                catalog_version: c.catalog_version,
                backup_masters: c.backup_masters.len(),
                live_servers: c.servers.iter().map(|s| s.name.clone()).collect(),
                dead_servers: c.dead_servers.len(),
                in_transition: c.in_transition.len(),
            }),
        }
    }
}

/// How one admin call failed, as far as a snapshot cares.
#[derive(Debug)]
enum CallError {
    /// The table went away (or was disabled) since the listing: skip it.
    TableGone,
    /// The connection broke: the next snapshot reconnects.
    Disconnected(String),
    /// Anything else.
    Failed(String),
}

/// The questions a snapshot asks, over whichever connection.
trait Endpoint {
    fn admin(&mut self, request: AdminRequest) -> Result<AdminReply, CallError>;
    fn table_names(&mut self) -> Result<Vec<String>, CallError>;
}

/// Asks `endpoint` for the summary and every table's regions.
fn collect(
    endpoint: &mut dyn Endpoint,
    location: &str,
) -> Result<(Summary, Vec<RegionSample>), CallError> {
    let status = match endpoint.admin(AdminRequest::Status)? {
        AdminReply::Status(s) => s,
        other => {
            return Err(CallError::Failed(format!(
                "the server answered status with {other:?}"
            )))
        }
    };
    // In a cluster: which server holds each region, and the region as the
    // status shows it when its server's load is there (this member's own,
    // and what the others reported to the master). A member's
    // `list_regions` knows the counters of its own regions only.
    let mut holder: HashMap<&str, &str> = HashMap::new();
    let mut loaded: HashMap<&str, &RegionInfoReply> = HashMap::new();
    for server in status.cluster.iter().flat_map(|c| &c.servers) {
        for r in &server.regions {
            holder.insert(&r.encoded_name, &server.name);
            if server.load.is_some() {
                loaded.insert(&r.encoded_name, r);
            }
        }
    }
    let mut regions = Vec::new();
    let mut tables = endpoint.table_names()?;
    // Namespace, then table (`default`'s tables first), as the table mode
    // lists them.
    tables.sort_by(|a, b| split_table(a).cmp(&split_table(b)));
    for table in tables {
        let reply = match endpoint.admin(AdminRequest::ListRegions {
            table: table.clone(),
        }) {
            Ok(reply) => reply,
            Err(CallError::TableGone) => continue,
            Err(e) => return Err(e),
        };
        let AdminReply::Regions { regions: listed } = reply else {
            return Err(CallError::Failed(format!(
                "the server answered list_regions of {table} with something else"
            )));
        };
        regions.extend(listed.iter().map(|r| {
            let encoded = r.encoded_name.as_str();
            let server = holder.get(encoded).map(|s| s.to_string());
            let r = loaded.get(encoded).copied().unwrap_or(r);
            RegionSample::from_reply(&table, server, r)
        }));
    }
    Ok((Summary::from_status(location.to_string(), &status), regions))
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A running server, over its Thrift1 port and the admin extension.
/// Reconnects on the next snapshot after a broken connection.
#[derive(Debug)]
pub struct RemoteSource {
    host: String,
    port: u16,
    timeout: Duration,
    client: Option<Client>,
    started: Instant,
}

impl RemoteSource {
    /// Connects to `host:port`; `timeout` bounds the connect and every
    /// call after it (a server that is down or hung is reported, never
    /// waited for).
    pub fn connect(host: &str, port: u16, timeout: Duration) -> Result<RemoteSource, TopError> {
        let mut source = RemoteSource {
            host: host.to_string(),
            port,
            timeout,
            client: None,
            started: Instant::now(),
        };
        source.client()?;
        Ok(source)
    }

    fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    fn connect_error(&self, reason: impl std::fmt::Display) -> TopError {
        TopError::Connect {
            address: self.address(),
            reason: reason.to_string(),
        }
    }

    fn client(&mut self) -> Result<&mut Client, TopError> {
        if self.client.is_none() {
            let addr = self.reachable_address()?;
            // The Thrift client connects without a time limit; the probe
            // above has just shown this address answers within one.
            let client = Client::connect(addr, false, Protocol::Binary { strict: true })
                .map_err(|e| self.connect_error(e))?;
            client
                .set_timeout(Some(self.timeout))
                .map_err(|e| self.connect_error(e))?;
            self.client = Some(client);
        }
        self.client.as_mut().ok_or_else(|| TopError::Connect {
            address: format!("{}:{}", self.host, self.port),
            reason: "not connected".into(),
        })
    }

    /// The first of the host's addresses that accepts a connection within
    /// the timeout.
    fn reachable_address(&self) -> Result<SocketAddr, TopError> {
        let addresses = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| self.connect_error(format!("cannot resolve {}: {e}", self.host)))?;
        let mut last = None;
        for addr in addresses {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(_) => return Ok(addr),
                Err(e) => last = Some(e),
            }
        }
        Err(self.connect_error(match last {
            Some(e) => e.to_string(),
            None => format!("{} has no address", self.host),
        }))
    }
}

struct RemoteEndpoint<'a>(&'a mut Client);

fn client_error(e: ClientError) -> CallError {
    match e {
        ClientError::Transport(e) => CallError::Disconnected(e.to_string()),
        other => CallError::Failed(other.to_string()),
    }
}

impl Endpoint for RemoteEndpoint<'_> {
    fn admin(&mut self, request: AdminRequest) -> Result<AdminReply, CallError> {
        self.0.admin(request).map_err(|e| match e {
            AdminCallError::Admin(a)
                if matches!(
                    a.kind,
                    wire::ErrorKind::TableNotFound | wire::ErrorKind::TableDisabled
                ) =>
            {
                CallError::TableGone
            }
            AdminCallError::Admin(a) => CallError::Failed(a.message),
            AdminCallError::Client(c) => client_error(c),
        })
    }

    fn table_names(&mut self) -> Result<Vec<String>, CallError> {
        let mut names: Vec<String> = self
            .0
            .get_table_names()
            .map_err(client_error)?
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

impl Source for RemoteSource {
    fn snapshot(&mut self) -> Result<Snapshot, TopError> {
        let location = self.address();
        let client = self.client()?;
        let outcome = collect(&mut RemoteEndpoint(client), &location);
        let (summary, regions) = outcome.map_err(|e| match e {
            CallError::Disconnected(m) => {
                self.client = None;
                TopError::Connect {
                    address: location.clone(),
                    reason: format!("the connection broke ({m}); the next refresh reconnects"),
                }
            }
            CallError::Failed(m) => TopError::Server {
                location: location.clone(),
                message: m,
            },
            CallError::TableGone => TopError::Server {
                location: location.clone(),
                message: "a table went away during the refresh".into(),
            },
        })?;
        Ok(Snapshot {
            at_ms: since(self.started),
            wall_ms: wall_ms(),
            summary,
            regions,
        })
    }
}

/// A data directory opened in this process.
#[derive(Debug)]
pub struct EmbeddedSource {
    db: Database,
    started: Instant,
}

impl EmbeddedSource {
    /// Opens the data directory (fails when a server holds it).
    pub fn open(dir: &Path) -> Result<EmbeddedSource, TopError> {
        let db = Database::open(dir).map_err(|e| TopError::Open {
            dir: dir.display().to_string(),
            message: match e.kind() {
                ErrorKind::Locked => {
                    format!("{e}: a server holds it; watch that server with --host/--port instead")
                }
                _ => e.to_string(),
            },
        })?;
        Ok(EmbeddedSource::with_database(db))
    }

    /// A source over a database this process already has open.
    pub fn with_database(db: Database) -> EmbeddedSource {
        EmbeddedSource {
            db,
            started: Instant::now(),
        }
    }
}

impl Drop for EmbeddedSource {
    fn drop(&mut self) {
        if let Err(e) = self.db.close() {
            eprintln!("warning: closing the database failed: {e}");
        }
    }
}

struct EmbeddedEndpoint<'a>(&'a Database);

impl Endpoint for EmbeddedEndpoint<'_> {
    fn admin(&mut self, request: AdminRequest) -> Result<AdminReply, CallError> {
        self.0.execute(request).map_err(|e| match e.kind() {
            ErrorKind::TableNotFound | ErrorKind::TableDisabled => CallError::TableGone,
            _ => CallError::Failed(e.to_string()),
        })
    }

    fn table_names(&mut self) -> Result<Vec<String>, CallError> {
        let mut names = self.0.list_tables();
        names.sort();
        Ok(names)
    }
}

impl Source for EmbeddedSource {
    fn snapshot(&mut self) -> Result<Snapshot, TopError> {
        let location = format!("data directory {}", self.db.path().display());
        let (summary, regions) =
            collect(&mut EmbeddedEndpoint(&self.db), &location).map_err(|e| TopError::Server {
                location: location.clone(),
                message: match e {
                    CallError::Disconnected(m) | CallError::Failed(m) => m,
                    CallError::TableGone => "a table went away during the refresh".into(),
                },
            })?;
        Ok(Snapshot {
            at_ms: since(self.started),
            wall_ms: wall_ms(),
            summary,
            regions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::admin::FamilySpec;

    #[test]
    fn an_embedded_snapshot_lists_every_region_of_every_table_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        for (table, splits) in [("b", vec!["m"]), ("a", vec!["c", "k"])] {
            db.execute(AdminRequest::Create {
                table: table.into(),
                families: vec![FamilySpec {
                    name: "f".into(),
                    ..FamilySpec::default()
                }],
                splits: splits.into_iter().map(Bytes::from).collect(),
                num_regions: None,
                split_algo: None,
            })
            .unwrap();
        }
        let t = db.table("a").unwrap();
        t.put(&basalt::Put::new("d").add("f", "q", "v")).unwrap();
        let mut source = EmbeddedSource::with_database(db);
        let snap = source.snapshot().unwrap();
        let seen: Vec<(&str, &[u8])> = snap
            .regions
            .iter()
            .map(|r| (r.table.as_str(), &r.start_key[..]))
            .collect();
        assert_eq!(
            seen,
            [
                ("a", &b""[..]),
                ("a", b"c"),
                ("a", b"k"),
                ("b", b""),
                ("b", b"m")
            ]
        );
        assert_eq!(snap.regions[1].write_requests, 1);
        assert_eq!((snap.summary.tables, snap.summary.regions), (2, 5));
        assert!(snap.summary.cluster.is_none());
        assert!(snap.summary.location.starts_with("data directory"));
        assert!(snap.regions.iter().all(|r| r.reported.is_some()));
    }

    /// Answers from documents given in advance.
    struct Scripted {
        status: StatusReply,
        regions: Vec<RegionInfoReply>,
    }

    impl Endpoint for Scripted {
        fn admin(&mut self, request: AdminRequest) -> Result<AdminReply, CallError> {
            match request {
                AdminRequest::Status => Ok(AdminReply::Status(self.status.clone())),
                AdminRequest::ListRegions { table } if table == "t" => Ok(AdminReply::Regions {
                    regions: self.regions.clone(),
                }),
                _ => Err(CallError::TableGone),
            }
        }

        fn table_names(&mut self) -> Result<Vec<String>, CallError> {
            Ok(vec!["t".into(), "dropped".into()])
        }
    }

    #[test]
    fn a_cluster_members_snapshot_takes_other_servers_regions_load_from_the_status() {
        let region = |encoded: &str, start: &'static str| RegionInfoReply {
            encoded_name: encoded.into(),
            start_key: Bytes::from_static(start.as_bytes()),
            ..RegionInfoReply::default()
        };
        let reported = RegionInfoReply {
            read_requests: 100,
            write_requests: 20,
            requests_per_sec: 5.0,
            store_files: 3,
            ..region("a", "")
        };
        let status: StatusReply = serde_json::from_value(serde_json::json!({
            "tables": 1, "regions": 2, "read_requests": 0, "write_requests": 0,
        }))
        .unwrap();
        let status = StatusReply {
            cluster: Some(basalt::admin::ClusterReply {
                master: "m,1,1".into(),
                backup_masters: vec!["m2,1,1".into()],
                servers: vec![
                    basalt::admin::ServerReply {
                        name: "rs1,1,1".into(),
                        regions: vec![reported],
                        load: Some(Default::default()),
                    },
                    basalt::admin::ServerReply {
                        name: "rs2,1,1".into(),
                        regions: vec![region("b", "m")],
                        load: None,
                    },
                ],
                ..Default::default()
            }),
            ..status
        };
        let listed = vec![
            region("a", ""),
            RegionInfoReply {
                write_requests: 7,
                ..region("b", "m")
            },
        ];
        let mut endpoint = Scripted {
            status,
            regions: listed,
        };
        let (summary, regions) = collect(&mut endpoint, "here").unwrap();
        assert_eq!(regions.len(), 2, "the dropped table is left out");
        let a = &regions[0];
        assert_eq!(
            (a.read_requests, a.write_requests, a.store_files),
            (100, 20, 3)
        );
        assert_eq!(a.reported.map(|r| r.requests), Some(5.0));
        assert_eq!(a.server.as_deref(), Some("rs1,1,1"));
        let b = &regions[1];
        assert_eq!(
            (b.write_requests, b.server.as_deref()),
            (7, Some("rs2,1,1"))
        );
        let c = summary.cluster.unwrap();
        assert_eq!((c.backup_masters, c.live_servers.len()), (1, 2));
    }

    #[test]
    fn a_region_reply_carries_hbtops_columns_into_the_sample() {
        let reply = RegionInfoReply {
            encoded_name: "e".into(),
            read_requests: 10,
            filtered_read_requests: 3,
            read_requests_per_sec: 1.5,
            filtered_read_requests_per_sec: 0.5,
            write_requests_per_sec: 2.0,
            compaction_progress: Some(0.25),
            last_major_compaction_ms: 1_700_000_000_000,
            ..RegionInfoReply::default()
        };
        let s = RegionSample::from_reply("ns:t", Some("rs1,1,1".into()), &reply);
        assert_eq!((s.read_requests, s.filtered_read_requests), (10, 3));
        assert_eq!(s.reported, Some(Rates::of(1.5, 0.5, 2.0)));
        assert_eq!(s.compaction_progress, Some(0.25));
        assert_eq!(s.last_major_compaction_ms, Some(1_700_000_000_000));
        assert_eq!(s.server.as_deref(), Some("rs1,1,1"));
        let named = RegionInfoReply {
            server: Some("rs2,1,1".into()),
            ..RegionInfoReply::default()
        };
        let s = RegionSample::from_reply("t", Some("rs1,1,1".into()), &named);
        assert_eq!(s.server.as_deref(), Some("rs2,1,1"));
        assert_eq!(s.last_major_compaction_ms, None);
    }

    #[test]
    fn a_server_that_is_down_is_a_connect_error_naming_the_address() {
        // A port nothing listens on: bind one, learn it, let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = RemoteSource::connect("127.0.0.1", port, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(e, TopError::Connect { .. }), "{e:?}");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
