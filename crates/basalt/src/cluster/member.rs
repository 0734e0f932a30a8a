//! A cluster member: what a `Database` in cluster mode adds to the three
//! roles. It reads the catalog the active master writes, opens and closes
//! the regions the master assigns to this server, and publishes a route
//! for every region of every table to the locator: the region itself when
//! it is open here, the server holding it otherwise.
//!
//! Opening a region the master assigned (`open_assigned`), in order:
//! 1. read the newest catalog (the deltas after the version held); the
//!    region must be `OPENING` on this
//!    server there (the master commits before it asks), else the request
//!    is stale and refused;
//! 2. if it is already open here at that epoch, answer at once (the
//!    master asks again after losing an answer);
//! 3. open it at the catalog's region epoch, replaying the logs the
//!    catalog lists for it (`RegionServer::open_assigned`);
//! 4. publish the routes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use basalt_engine::fs::FileStore;
use basalt_types::{Error, Result};

use super::control::{MasterAnswer, MasterCall, MasterControl, MasterLink, ServerName};
use crate::catalog::{region_spec, Catalog, RegionEntry, RegionState};
use crate::locator::{RegionLocator, RegionRoute, TableLocation};
use crate::region_server::{RegionAssignment, RegionServer};
use crate::remote::ServerAddress;

/// The cluster side of a member `Database`.
pub struct ClusterMember {
    pub(super) root: PathBuf,
    files: Arc<dyn FileStore>,
    /// This region server's name (`host,port,startcode`); `None` for a
    /// member that hosts no regions (the master's own gateways).
    pub(super) name: Option<String>,
    control: Arc<dyn MasterControl>,
    /// The newest catalog read (shared with readers: a new version
    /// replaces it whole).
    catalog: RwLock<Arc<Catalog>>,
    /// Serializes catalog reloads and route publication with opens and
    /// closes, so routes never go back to an older catalog.
    pub(super) routing: Mutex<()>,
}

impl std::fmt::Debug for ClusterMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterMember")
            .field("root", &self.root)
            .field("name", &self.name)
            .field("catalog_version", &self.catalog.read().version)
            .finish_non_exhaustive()
    }
}

impl ClusterMember {
    /// A member of the cluster whose data is at `root` on `files`, as
    /// region server `name` (none: hosts nothing), asking `control` for
    /// DDL.
    pub fn new(
        root: &Path,
        files: Arc<dyn FileStore>,
        name: Option<String>,
        control: Arc<dyn MasterControl>,
    ) -> ClusterMember {
        ClusterMember {
            root: root.to_path_buf(),
            files,
            name,
            control,
            catalog: RwLock::new(Arc::new(Catalog::default())),
            routing: Mutex::new(()),
        }
    }

    /// This server's name, if it hosts regions.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The active master (DDL, assignment, status).
    pub fn control(&self) -> &Arc<dyn MasterControl> {
        &self.control
    }

    /// The newest catalog read.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read())
    }

    /// Reads the newest catalog and, when it is newer than the one held,
    /// publishes every table's routes (and forgets dropped tables).
    /// Returns the catalog version now held.
    pub fn refresh(&self, server: Option<&RegionServer>, locator: &RegionLocator) -> Result<u64> {
        let _routing = self.routing.lock();
        // Reading after the held version lists first, so a call that
        // finds nothing new is one listing (meta reads call this on every
        // look-up), and a newer catalog costs only the deltas after it.
        let held = self.catalog();
        let Some(newest) = Catalog::read_after(Some(&held), self.files.as_ref(), &self.root)?
        else {
            return Ok(held.version);
        };
        self.publish(&newest, server, locator);
        if let Some(server) = server {
            self.close_retired(server, &newest);
        }
        let version = newest.version;
        *self.catalog.write() = Arc::new(newest);
        Ok(version)
    }

    /// Publishes routes for `catalog` (the caller holds `routing`).
    fn publish(&self, catalog: &Catalog, server: Option<&RegionServer>, locator: &RegionLocator) {
        for (name, table) in &catalog.tables {
            let routes = table
                .regions
                .iter()
                .map(|entry| self.route(name, entry, server))
                .collect();
            locator.publish(Arc::new(TableLocation::with_routes(
                table.descriptor.clone(),
                table.enabled,
                routes,
            )));
        }
        for name in locator.table_names() {
            if !catalog.tables.contains_key(&name) {
                locator.forget(&name);
            }
        }
    }

    fn route(
        &self,
        table: &str,
        entry: &RegionEntry,
        server: Option<&RegionServer>,
    ) -> RegionRoute {
        let info = entry.info(table);
        let mine = entry.server.is_some() && entry.server.as_deref() == self.name.as_deref();
        if mine {
            if let Some(region) = server.and_then(|s| s.region(entry.id)) {
                return RegionRoute::Local(region);
            }
        }
        match (&entry.state, &entry.server) {
            (RegionState::Open, Some(holder)) if !mine => match ServerName::parse(holder) {
                Ok(name) => RegionRoute::Remote {
                    info,
                    server: ServerAddress::new(name.host.clone(), name.port),
                },
                Err(_) => RegionRoute::Offline { info },
            },
            _ => RegionRoute::Offline { info },
        }
    }

    /// Steps 1-4 of the module docs.
    pub(crate) fn open_assigned(
        &self,
        server: &RegionServer,
        locator: &RegionLocator,
        table: &str,
        region: u64,
    ) -> Result<()> {
        let _routing = self.routing.lock();
        let held = self.catalog();
        let catalog = match Catalog::read_after(Some(&held), self.files.as_ref(), &self.root)? {
            Some(newer) => Arc::new(newer),
            None => held,
        };
        let (_, entry, spec_entry) = catalog
            .region(region)
            .filter(|(t, _, _)| *t == table)
            .ok_or_else(|| {
                Error::NotServingRegion(format!("region {region} of {table} is not in the catalog"))
            })?;
        if spec_entry.state != RegionState::Opening
            || spec_entry.server.as_deref() != self.name.as_deref()
        {
            return Err(Error::NotServingRegion(format!(
                "region {region} of {table} is not being opened here (catalog version {}: {:?} on {:?})",
                catalog.version, spec_entry.state, spec_entry.server
            )));
        }
        if let Some(open) = server.region(region) {
            if server.region_epoch(region) == Some(spec_entry.epoch) {
                drop(open);
                self.publish(&catalog, Some(server), locator);
                *self.catalog.write() = catalog;
                return Ok(());
            }
            // Open here at an older epoch (the master lost track): close it
            // first; the new opening fences the old one anyway.
            server.close_region(region);
        }
        server.open_assigned(RegionAssignment {
            spec: region_spec(table, &entry.descriptor, spec_entry),
            epoch: spec_entry.epoch,
            recover_from: spec_entry.recover_from.clone(),
        })?;
        // A split's daughter or a merged region: before routes lead to it.
        self.adopt_predecessors(server, &catalog, table, region);
        self.publish(&catalog, Some(server), locator);
        *self.catalog.write() = catalog;
        Ok(())
    }

    /// Closes a region here for the master (flushed first, so none of its
    /// edits is left only in this server's log). A region not open here is
    /// already closed.
    pub(crate) fn close_assigned(
        &self,
        server: &RegionServer,
        locator: &RegionLocator,
        region: u64,
    ) -> Result<()> {
        let _routing = self.routing.lock();
        if server.region(region).is_some() {
            server.close_for_move(region)?;
        }
        let catalog = self.catalog();
        self.publish(&catalog, Some(server), locator);
        Ok(())
    }
}

/// A member's way to the active master ([`MasterLink`]): the call goes
/// over the member's [`MasterControl`]; the catalog it committed is read
/// back from the shared storage before the call returns, so the routes
/// show its outcome.
#[derive(Debug)]
pub(crate) struct MemberLink {
    member: Arc<ClusterMember>,
    server: Arc<RegionServer>,
    locator: Arc<RegionLocator>,
}

impl MemberLink {
    /// The link of `member`, whose routes go to `locator` and whose own
    /// regions are `server`'s.
    pub(crate) fn new(
        member: Arc<ClusterMember>,
        server: Arc<RegionServer>,
        locator: Arc<RegionLocator>,
    ) -> MemberLink {
        MemberLink {
            member,
            server,
            locator,
        }
    }
}

impl MasterLink for MemberLink {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        let answer = self.member.control().call(call)?;
        self.refresh()?;
        Ok(answer)
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.member.catalog()
    }

    fn refresh(&self) -> Result<()> {
        self.member
            .refresh(Some(&self.server), &self.locator)
            .map(drop)
    }

    /// The active master is another process: it stops with that process.
    fn stop(&self) {}
}
