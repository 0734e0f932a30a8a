//! The access control property: random grants, revokes (to users and a
//! group, at every kind of scope), and reads and writes by random users
//! against a database with authorization on, each compared with a naive
//! reference of HBase's rules written apart from Basalt's (`Reference`
//! below): a flat list of grants, the covering rule spelled out per pair
//! of scopes, and reads answered cell by cell.
//!
//! The rules the reference states (HBase 2.6's `AccessController`,
//! docs/security.md):
//! - a write is allowed when the caller holds WRITE on the table, or, for
//!   every family it writes, on the family or on each column it writes;
//!   a whole-row delete needs the table;
//! - a read returns the asked-for cells whose column the caller holds
//!   READ on (at any wider scope); it is refused when nothing it asks for
//!   could be read: no asked family readable whole, no asked column
//!   readable, and for a family asked whole no column of it granted;
//! - superusers (the server user) pass everything.

use std::collections::{BTreeMap, BTreeSet};

use basalt::{
    Actions, ColumnFamilyDescriptor, Database, Delete, ErrorKind, Get, Grant, Options,
    PermissionChange, Put, Scope, SecurityOptions, TableDescriptor,
};
use proptest::prelude::*;

const TABLE: &str = "t";
const FAMILIES: [&str; 2] = ["a", "b"];
const QUALIFIERS: [&str; 2] = ["q1", "q2"];
const ROWS: [&str; 2] = ["r1", "r2"];
/// `admin` is the server user; `carol` is in group `devs`.
const USERS: [&str; 3] = ["admin", "bob", "carol"];
const PRINCIPALS: [&str; 3] = ["bob", "carol", "@devs"];

#[derive(Debug, Clone)]
pub enum AccessStep {
    Grant {
        principal: &'static str,
        scope: Scope,
        actions: Actions,
        merge: bool,
    },
    Revoke {
        principal: &'static str,
        scope: Scope,
        actions: Actions,
    },
    Put {
        user: &'static str,
        row: &'static str,
        cells: Vec<(&'static str, &'static str)>,
    },
    DeleteRow {
        user: &'static str,
        row: &'static str,
    },
    Get {
        user: &'static str,
        row: &'static str,
        /// Families asked whole, and single columns; both empty: the row.
        families: Vec<&'static str>,
        columns: Vec<(&'static str, &'static str)>,
    },
}

fn scope() -> impl Strategy<Value = Scope> {
    let family = prop::sample::select(&FAMILIES[..]);
    let qualifier = prop::sample::select(&QUALIFIERS[..]);
    prop_oneof![
        Just(Scope::Global),
        Just(Scope::namespace("default")),
        Just(Scope::namespace("other")),
        Just(Scope::table(TABLE)),
        Just(Scope::table("u")),
        family
            .clone()
            .prop_map(|f| Scope::family(TABLE, f.as_bytes())),
        (family, qualifier).prop_map(|(f, q)| Scope::column(TABLE, f.as_bytes(), q.as_bytes())),
    ]
}

fn actions() -> impl Strategy<Value = Actions> {
    prop::sample::select(&["R", "W", "RW", "RWXCA", "A", "C"][..])
        .prop_map(|letters| Actions::parse(letters).unwrap_or(Actions::NONE))
}

fn column() -> impl Strategy<Value = (&'static str, &'static str)> {
    (
        prop::sample::select(&FAMILIES[..]),
        prop::sample::select(&QUALIFIERS[..]),
    )
}

pub fn access_step() -> impl Strategy<Value = AccessStep> {
    let principal = prop::sample::select(&PRINCIPALS[..]);
    let user = prop::sample::select(&USERS[..]);
    let row = prop::sample::select(&ROWS[..]);
    prop_oneof![
        3 => (principal.clone(), scope(), actions(), any::<bool>()).prop_map(
            |(principal, scope, actions, merge)| AccessStep::Grant { principal, scope, actions, merge }
        ),
        1 => (principal, scope(), prop_oneof![Just(Actions::NONE), actions()]).prop_map(
            |(principal, scope, actions)| AccessStep::Revoke { principal, scope, actions }
        ),
        3 => (user.clone(), row.clone(), prop::collection::vec(column(), 1..4))
            .prop_map(|(user, row, cells)| AccessStep::Put { user, row, cells }),
        1 => (user.clone(), row.clone()).prop_map(|(user, row)| AccessStep::DeleteRow { user, row }),
        4 => (
            user,
            row,
            prop::collection::vec(prop::sample::select(&FAMILIES[..]), 0..2),
            prop::collection::vec(column(), 0..3),
        )
            .prop_map(|(user, row, families, columns)| AccessStep::Get { user, row, families, columns }),
    ]
}

/// The reference: grants as a flat list, the data as the latest value of
/// each cell.
#[derive(Default)]
struct Reference {
    grants: Vec<(String, Scope, Actions)>,
    cells: BTreeMap<(String, String, String), String>,
}

fn groups_of(user: &str) -> Vec<&'static str> {
    if user == "carol" {
        vec!["devs"]
    } else {
        Vec::new()
    }
}

/// Whether a grant at `granted` applies to a request at `asked`, spelled
/// out pair by pair.
fn applies(granted: &Scope, asked: &Scope) -> bool {
    match granted {
        Scope::Global => true,
        Scope::Namespace { namespace } => match asked {
            Scope::Namespace { namespace: n } => n == namespace,
            Scope::Table { table, .. } => {
                let ns = table.split_once(':').map_or("default", |(ns, _)| ns);
                ns == namespace
            }
            Scope::Global => false,
        },
        Scope::Table {
            table,
            family,
            qualifier,
        } => match asked {
            Scope::Table {
                table: t,
                family: f,
                qualifier: q,
            } => {
                t == table
                    && (family.is_none() || f == family)
                    && (qualifier.is_none() || q == qualifier)
            }
            _ => false,
        },
    }
}

impl Reference {
    fn holds(&self, user: &str, action: basalt::Action, asked: &Scope) -> bool {
        if user == "admin" {
            return true;
        }
        let mine = |principal: &str| {
            principal == user
                || principal
                    .strip_prefix('@')
                    .is_some_and(|g| groups_of(user).contains(&g))
        };
        self.grants
            .iter()
            .any(|(p, scope, actions)| mine(p) && actions.contains(action) && applies(scope, asked))
    }

    fn apply(&mut self, change: &PermissionChange) {
        let (grant, after): (&Grant, Box<dyn Fn(Actions) -> Actions>) = match change {
            PermissionChange::Grant { grant, merge } => {
                let actions = grant.actions;
                let merge = *merge;
                (
                    grant,
                    Box::new(
                        move |held: Actions| if merge { held.union(actions) } else { actions },
                    ),
                )
            }
            PermissionChange::Revoke { grant } => {
                let actions = grant.actions;
                (
                    grant,
                    Box::new(move |held: Actions| {
                        if actions.is_empty() {
                            Actions::NONE
                        } else {
                            held.without(actions)
                        }
                    }),
                )
            }
        };
        let at = self
            .grants
            .iter()
            .position(|(p, s, _)| *p == grant.principal && *s == grant.scope);
        let held = at.map_or(Actions::NONE, |i| self.grants[i].2);
        let new = after(held);
        if let Some(i) = at {
            self.grants.remove(i);
        }
        if !new.is_empty() {
            self.grants
                .push((grant.principal.clone(), grant.scope.clone(), new));
        }
    }

    fn may_write(&self, user: &str, cells: &[(&str, &str)]) -> bool {
        let write = basalt::Action::Write;
        if self.holds(user, write, &Scope::table(TABLE)) {
            return true;
        }
        let families: BTreeSet<&str> = cells.iter().map(|(f, _)| *f).collect();
        // A whole-row delete names no family: it needs the table.
        !families.is_empty()
            && families.iter().all(|f| {
                self.holds(user, write, &Scope::family(TABLE, f.as_bytes()))
                    || cells.iter().filter(|(f2, _)| f2 == f).all(|(_, q)| {
                        self.holds(
                            user,
                            write,
                            &Scope::column(TABLE, f.as_bytes(), q.as_bytes()),
                        )
                    })
            })
    }

    /// The cells a read returns, or `None` when it is refused.
    fn read(
        &self,
        user: &str,
        row: &str,
        families: &[&str],
        columns: &[(&str, &str)],
    ) -> Option<BTreeSet<(String, String)>> {
        let read = basalt::Action::Read;
        // What is asked: (family, None) for a whole family.
        let mut asked: BTreeMap<&str, Option<BTreeSet<&str>>> = BTreeMap::new();
        for f in families {
            asked.insert(f, None);
        }
        for (f, q) in columns {
            // A column of a family asked whole is in it already.
            if let Some(set) = asked.entry(f).or_insert_with(|| Some(BTreeSet::new())) {
                set.insert(q);
            }
        }
        if asked.is_empty() {
            for f in FAMILIES {
                asked.insert(f, None);
            }
        }
        let column_readable = |f: &str, q: &str| {
            self.holds(
                user,
                read,
                &Scope::column(TABLE, f.as_bytes(), q.as_bytes()),
            )
        };
        let something_readable = asked.iter().any(|(f, qs)| {
            self.holds(user, read, &Scope::family(TABLE, f.as_bytes()))
                || match qs {
                    Some(qs) => qs.iter().any(|q| column_readable(f, q)),
                    // A whole family: any column grant in it counts.
                    None => self.grants.iter().any(|(p, scope, actions)| {
                        (p == user
                            || p.strip_prefix('@')
                                .is_some_and(|g| groups_of(user).contains(&g)))
                            && actions.contains(read)
                            && matches!(scope, Scope::Table { table, family: Some(fam), .. }
                                if table == TABLE && fam.as_ref() == f.as_bytes())
                    }),
                }
        });
        if !something_readable {
            return None;
        }
        Some(
            self.cells
                .keys()
                .filter(|(r, f, q)| {
                    r == row
                        && asked
                            .get(f.as_str())
                            .is_some_and(|qs| qs.as_ref().is_none_or(|qs| qs.contains(q.as_str())))
                        && column_readable(f, q)
                })
                .map(|(_, f, q)| (f.clone(), q.clone()))
                .collect(),
        )
    }
}

fn open(dir: &std::path::Path) -> Database {
    let mut options = Options::new(dir);
    options.security = SecurityOptions {
        authorization: true,
        server_user: Some("admin".into()),
        groups: [("carol".to_string(), vec!["devs".to_string()])]
            .into_iter()
            .collect(),
        ..SecurityOptions::default()
    };
    let db = Database::open_with(options).unwrap();
    let mut descriptor = TableDescriptor::new(TABLE);
    for f in FAMILIES {
        descriptor = descriptor.family(ColumnFamilyDescriptor::new(f));
    }
    db.create_table(descriptor).unwrap();
    db
}

/// Runs `steps`; the first difference from the reference is the error.
pub fn run_access_steps(steps: &[AccessStep]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = open(dir.path());
    let mut reference = Reference::default();
    let denied =
        |r: &basalt::Result<()>| matches!(r, Err(e) if e.kind() == ErrorKind::AccessDenied);
    for (i, step) in steps.iter().enumerate() {
        let at = format!("step {i} ({step:?})");
        match step {
            AccessStep::Grant {
                principal,
                scope,
                actions,
                merge,
            } => {
                let change = PermissionChange::Grant {
                    grant: Grant {
                        principal: principal.to_string(),
                        scope: scope.clone(),
                        actions: *actions,
                    },
                    merge: *merge,
                };
                // A grant of no action is refused, and changes nothing.
                if actions.is_empty() {
                    if db.change_permission(change).is_ok() {
                        return Err(format!("{at}: a grant of no action was accepted"));
                    }
                    continue;
                }
                db.change_permission(change.clone())
                    .map_err(|e| format!("{at}: {e}"))?;
                reference.apply(&change);
            }
            AccessStep::Revoke {
                principal,
                scope,
                actions,
            } => {
                let change = PermissionChange::Revoke {
                    grant: Grant {
                        principal: principal.to_string(),
                        scope: scope.clone(),
                        actions: *actions,
                    },
                };
                db.change_permission(change.clone())
                    .map_err(|e| format!("{at}: {e}"))?;
                reference.apply(&change);
            }
            AccessStep::Put { user, row, cells } => {
                let mut put = Put::new(*row);
                for (f, q) in cells {
                    put = put.add(*f, *q, format!("{i}"));
                }
                let table = db.acting_as_user(user).table(TABLE).unwrap();
                let result = table.put(&put);
                let expected = reference.may_write(user, cells);
                if expected != result.is_ok() || (!expected && !denied(&result)) {
                    return Err(format!("{at}: expected allowed={expected}, got {result:?}"));
                }
                crate::stat(if expected {
                    "access: write allowed"
                } else {
                    "access: write refused"
                });
                if expected {
                    for (f, q) in cells {
                        reference.cells.insert(
                            (row.to_string(), f.to_string(), q.to_string()),
                            i.to_string(),
                        );
                    }
                }
            }
            AccessStep::DeleteRow { user, row } => {
                let table = db.acting_as_user(user).table(TABLE).unwrap();
                let result = table.delete(&Delete::new(*row));
                let expected = reference.may_write(user, &[]);
                if expected != result.is_ok() || (!expected && !denied(&result)) {
                    return Err(format!("{at}: expected allowed={expected}, got {result:?}"));
                }
                if expected {
                    reference.cells.retain(|(r, _, _), _| r != row);
                }
            }
            AccessStep::Get {
                user,
                row,
                families,
                columns,
            } => {
                let mut get = Get::new(*row);
                for f in families {
                    get = get.family(*f);
                }
                for (f, q) in columns {
                    if !families.contains(f) {
                        get = get.column(*f, *q);
                    }
                }
                let kept: Vec<(&str, &str)> = columns
                    .iter()
                    .filter(|(f, _)| !families.contains(f))
                    .copied()
                    .collect();
                let table = db.acting_as_user(user).table(TABLE).unwrap();
                let got = table.get(&get);
                let expected = reference.read(user, row, families, &kept);
                match (expected, got) {
                    (None, Err(e)) if e.kind() == ErrorKind::AccessDenied => {
                        crate::stat("access: read refused");
                    }
                    (Some(cells), Ok(result)) => {
                        let all = reference
                            .read("admin", row, families, &kept)
                            .unwrap_or_default();
                        crate::stat(if all == cells {
                            "access: read whole"
                        } else {
                            "access: read narrowed"
                        });
                        let seen: BTreeSet<(String, String)> = result
                            .cells
                            .iter()
                            .map(|c| {
                                (
                                    String::from_utf8_lossy(&c.family).into_owned(),
                                    String::from_utf8_lossy(&c.qualifier).into_owned(),
                                )
                            })
                            .collect();
                        if seen != cells {
                            return Err(format!("{at}: expected {cells:?}, got {seen:?}"));
                        }
                    }
                    (expected, got) => {
                        return Err(format!("{at}: expected {expected:?}, got {got:?}"));
                    }
                }
            }
        }
    }
    Ok(())
}
