//! Access control in the core (`docs/security.md`): a database handle
//! bound to a caller checks every operation against HBase's rules, the
//! grants are durable catalog data, and a trusted handle (the embedded
//! API) is never checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::*;

/// The server user: a superuser by configuration.
const ADMIN: &str = "admin";

fn security() -> SecurityOptions {
    SecurityOptions {
        authorization: true,
        superusers: vec!["@ops".into()],
        server_user: Some(ADMIN.into()),
        groups: [
            ("carol".to_string(), vec!["readers".to_string()]),
            ("erin".to_string(), vec!["ops".to_string()]),
        ]
        .into_iter()
        .collect(),
        ..SecurityOptions::default()
    }
}

fn open(dir: &std::path::Path) -> Database {
    let mut options = Options::new(dir);
    options.security = security();
    Database::open_with(options).unwrap()
}

fn grant(db: &Database, principal: &str, scope: Scope, actions: &str) {
    db.change_permission(PermissionChange::Grant {
        grant: Grant {
            principal: principal.into(),
            scope,
            actions: Actions::parse(actions).unwrap(),
        },
        merge: false,
    })
    .unwrap();
}

fn revoke_all(db: &Database, principal: &str, scope: Scope) {
    db.change_permission(PermissionChange::Revoke {
        grant: Grant {
            principal: principal.into(),
            scope,
            actions: Actions::NONE,
        },
    })
    .unwrap();
}

fn denied<T: std::fmt::Debug>(result: Result<T>) -> String {
    match result {
        Err(e) if e.kind() == ErrorKind::AccessDenied => e.to_string(),
        other => panic!("expected an access denial, got {other:?}"),
    }
}

/// Table `t` with families a, b, c and one row holding a cell in each.
fn table_with_a_row(db: &Database) {
    db.create_table(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("b"))
            .family(ColumnFamilyDescriptor::new("c")),
    )
    .unwrap();
    let t = db.table("t").unwrap();
    t.put(
        &Put::new("r")
            .add("a", "q1", "va")
            .add("b", "q1", "vb1")
            .add("b", "q2", "vb2")
            .add("c", "q1", "vc"),
    )
    .unwrap();
}

fn columns(row: &RowResult) -> Vec<String> {
    row.cells
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(&c.qualifier)
            )
        })
        .collect()
}

#[test]
fn a_caller_with_no_grant_can_neither_read_write_nor_create_and_its_denials_read_as_hbases() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    let bob = db.acting_as_user("bob");
    let t = bob.table("t").unwrap();
    let read = denied(t.get(&Get::new("r")));
    assert_eq!(
        read,
        "Insufficient permissions for user 'bob' (table=t, action=READ)"
    );
    let write = denied(t.put(&Put::new("r").add("a", "q1", "x")));
    assert!(
        write.contains("user=bob, scope=default:t, family=a:q1"),
        "{write}"
    );
    denied(t.scan(&Scan::new()));
    let create = denied(
        bob.create_table(TableDescriptor::new("u").family(ColumnFamilyDescriptor::new("f"))),
    );
    assert!(
        create.contains("scope=default") && create.contains("action=CREATE"),
        "{create}"
    );
    let drop = denied(bob.disable_table("t"));
    assert!(drop.contains("scope=default:t"), "{drop}");
    denied(bob.create_namespace(NamespaceDescriptor::new("ns")));
    denied(bob.balancer_switch(Some(false)));
    // Reading a switch needs nothing, as in HBase.
    bob.balancer_switch(None).unwrap();
    // Nothing was written.
    let row = db.table("t").unwrap().get(&Get::new("r")).unwrap();
    assert_eq!(row.cells.len(), 4);
    assert!(!db.table_exists("u"));
}

#[test]
fn a_tables_creator_holds_every_action_on_it_and_nobody_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    grant(&db, "alice", Scope::namespace("default"), "C");
    let alice = db.acting_as_user("alice");
    alice
        .create_table(TableDescriptor::new("mine").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let held = db
        .user_permissions(&PermissionQuery::of(Scope::table("mine")))
        .unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].principal, "alice");
    assert_eq!(held[0].actions, Actions::ALL);
    let t = alice.table("mine").unwrap();
    t.put(&Put::new("r").add("f", "q", "v")).unwrap();
    assert_eq!(t.get(&Get::new("r")).unwrap().cells.len(), 1);
    alice.flush_table("mine").unwrap();
    denied(
        db.acting_as_user("bob")
            .table("mine")
            .unwrap()
            .get(&Get::new("r")),
    );
}

#[test]
fn a_read_of_a_partly_readable_row_sees_only_the_readable_families_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "bob", Scope::family("t", b"a"), "R");
    grant(&db, "bob", Scope::column("t", b"b", b"q2"), "R");
    let t = db.acting_as_user("bob").table("t").unwrap();
    let row = t.get(&Get::new("r")).unwrap();
    assert_eq!(columns(&row), ["a:q1", "b:q2"]);
    let scanned: Vec<String> = t
        .scan(&Scan::new())
        .unwrap()
        .flat_map(|row| columns(&row.unwrap()))
        .collect();
    assert_eq!(scanned, ["a:q1", "b:q2"]);
    // Asking for exactly what is readable is no narrowing.
    assert_eq!(
        columns(&t.get(&Get::new("r").family("a")).unwrap()),
        ["a:q1"]
    );
    // A qualifier asked for keeps its narrowing in a readable family.
    let asked = Get::new("r")
        .column("a", "q1")
        .column("b", "q1")
        .column("b", "q2");
    assert_eq!(columns(&t.get(&asked).unwrap()), ["a:q1", "b:q2"]);
    // Nothing readable among what was asked: refused.
    denied(t.get(&Get::new("r").family("c")));
    denied(t.get(&Get::new("r").column("b", "q1")));
}

#[test]
fn writes_need_write_on_every_column_they_touch_and_a_whole_row_delete_needs_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "bob", Scope::family("t", b"a"), "W");
    let t = db.acting_as_user("bob").table("t").unwrap();
    t.put(&Put::new("r2").add("a", "q", "v")).unwrap();
    denied(t.put(&Put::new("r2").add("a", "q", "v").add("b", "q", "v")));
    t.delete(&Delete::new("r").family("a")).unwrap();
    denied(t.delete(&Delete::new("r")));
    t.increment(&Increment::new("n").add("a", "n", 1)).unwrap();
    denied(t.increment(&Increment::new("n").add("c", "n", 1)));
    // A batch refuses the mutations it may not apply, one by one.
    let results = t.batch(&[
        Mutation::Put(Put::new("b1").add("a", "q", "v")),
        Mutation::Put(Put::new("b2").add("c", "q", "v")),
        Mutation::Put(Put::new("b3").add("a", "q", "v")),
    ]);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert_eq!(
        results[1].as_ref().unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
    let trusted = db.table("t").unwrap();
    assert!(trusted.get(&Get::new("b2")).unwrap().is_empty());
    assert!(!trusted.get(&Get::new("b3")).unwrap().is_empty());
    // A check-and-mutate needs READ and WRITE on the checked column.
    let check = CheckAndMutate::new("r2", "a", "q")
        .if_equals("v")
        .then(Put::new("r2").add("a", "q", "w"))
        .unwrap();
    denied(t.check_and_mutate(&check));
    grant(&db, "bob", Scope::family("t", b"a"), "RW");
    assert!(t.check_and_mutate(&check).unwrap());
}

#[test]
fn grants_to_a_group_reach_its_members_and_a_superuser_group_passes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "@readers", Scope::table("t"), "R");
    let carol = db.acting_as_user("carol");
    assert_eq!(
        carol
            .table("t")
            .unwrap()
            .get(&Get::new("r"))
            .unwrap()
            .cells
            .len(),
        4
    );
    denied(
        carol
            .table("t")
            .unwrap()
            .put(&Put::new("r").add("a", "q", "v")),
    );
    let erin = db.acting_as_user("erin");
    erin.create_namespace(NamespaceDescriptor::new("opsns"))
        .unwrap();
    // Only a superuser may change a superuser's grants.
    grant(&db, "alice", Scope::Global, "A");
    let alice = db.acting_as_user("alice");
    let refused = alice.change_permission(PermissionChange::Grant {
        grant: Grant {
            principal: "@ops".into(),
            scope: Scope::table("t"),
            actions: Actions::parse("R").unwrap(),
        },
        merge: false,
    });
    assert!(denied(refused).contains("superusers"));
}

#[test]
fn grant_and_revoke_need_admin_at_their_scope_and_a_revoke_takes_effect_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "alice", Scope::table("t"), "A");
    let alice = db.acting_as_user("alice");
    // Table ADMIN grants on the table, not beyond it.
    grant(&alice, "bob", Scope::family("t", b"a"), "R");
    denied(alice.change_permission(PermissionChange::Grant {
        grant: Grant {
            principal: "bob".into(),
            scope: Scope::Global,
            actions: Actions::parse("R").unwrap(),
        },
        merge: false,
    }));
    let bob = db.acting_as_user("bob");
    assert_eq!(
        columns(&bob.table("t").unwrap().get(&Get::new("r")).unwrap()),
        ["a:q1"]
    );
    revoke_all(&alice, "bob", Scope::family("t", b"a"));
    denied(bob.table("t").unwrap().get(&Get::new("r")));
    // Merging adds; a revoke of some actions leaves the rest.
    grant(&db, "bob", Scope::table("t"), "R");
    db.change_permission(PermissionChange::Grant {
        grant: Grant {
            principal: "bob".into(),
            scope: Scope::table("t"),
            actions: Actions::parse("W").unwrap(),
        },
        merge: true,
    })
    .unwrap();
    db.change_permission(PermissionChange::Revoke {
        grant: Grant {
            principal: "bob".into(),
            scope: Scope::table("t"),
            actions: Actions::parse("R").unwrap(),
        },
    })
    .unwrap();
    let held = db
        .has_user_permissions(
            Some("bob"),
            &[
                (Scope::table("t"), Actions::parse("W").unwrap()),
                (Scope::table("t"), Actions::parse("R").unwrap()),
            ],
        )
        .unwrap();
    assert_eq!(held, [true, false]);
    // Asking about another user takes ADMIN there; about oneself, not.
    assert_eq!(
        bob.has_user_permissions(None, &[(Scope::table("t"), Actions::parse("W").unwrap())])
            .unwrap(),
        [true]
    );
    denied(bob.has_user_permissions(
        Some("alice"),
        &[(Scope::Global, Actions::parse("R").unwrap())],
    ));
}

#[test]
fn grants_outlive_a_restart_and_go_with_their_table_or_namespace() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        table_with_a_row(&db);
        db.create_namespace(NamespaceDescriptor::new("ns")).unwrap();
        grant(&db, "bob", Scope::table("t"), "RW");
        grant(&db, "bob", Scope::namespace("ns"), "C");
        db.close().unwrap();
    }
    let db = open(dir.path());
    let bob = db.acting_as_user("bob");
    assert_eq!(
        bob.table("t")
            .unwrap()
            .get(&Get::new("r"))
            .unwrap()
            .cells
            .len(),
        4
    );
    // Namespace CREATE lets bob create there, and he owns what he made.
    bob.create_table(TableDescriptor::new("ns:x").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    db.disable_table("t").unwrap();
    db.drop_table("t").unwrap();
    table_with_a_row(&db);
    denied(bob.table("t").unwrap().get(&Get::new("r")));
    db.disable_table("ns:x").unwrap();
    db.drop_table("ns:x").unwrap();
    db.drop_namespace("ns").unwrap();
    db.create_namespace(NamespaceDescriptor::new("ns")).unwrap();
    denied(bob.create_table(TableDescriptor::new("ns:y").family(ColumnFamilyDescriptor::new("f"))));
    let left: Vec<Grant> = db
        .user_permissions(&PermissionQuery {
            scope: Scope::Global,
            user: Some("bob".into()),
        })
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn listing_shows_a_caller_the_tables_it_holds_rights_in_and_describing_needs_admin_or_create() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    db.create_table(TableDescriptor::new("other").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    grant(&db, "bob", Scope::column("t", b"a", b"q1"), "R");
    let bob = db.acting_as_user("bob");
    assert_eq!(bob.list_tables(), ["t"]);
    denied(bob.describe_table("t"));
    grant(&db, "bob", Scope::table("t"), "C");
    assert_eq!(bob.describe_table("t").unwrap().descriptor.name(), "t");
    assert_eq!(db.list_tables(), ["other", "t"]);
}

#[test]
fn user_permissions_answer_by_scope_user_and_group_and_list_the_superusers_globally() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "bob", Scope::family("t", b"a"), "R");
    grant(&db, "bob", Scope::table("t"), "W");
    grant(&db, "@readers", Scope::table("t"), "R");
    grant(&db, "dave", Scope::Global, "A");
    let table = |family: Option<&str>, user: Option<&str>| PermissionQuery {
        scope: match family {
            Some(f) => Scope::family("t", f.as_bytes()),
            None => Scope::table("t"),
        },
        user: user.map(str::to_string),
    };
    assert_eq!(db.user_permissions(&table(None, None)).unwrap().len(), 3);
    assert_eq!(
        db.user_permissions(&table(Some("a"), None)).unwrap().len(),
        1
    );
    // carol is in `readers`: the group's grant is hers.
    let carols = db.user_permissions(&table(None, Some("carol"))).unwrap();
    assert_eq!(carols.len(), 1);
    assert_eq!(carols[0].principal, "@readers");
    let global = db
        .user_permissions(&PermissionQuery::of(Scope::Global))
        .unwrap();
    let names: Vec<&str> = global.iter().map(|g| g.principal.as_str()).collect();
    assert!(
        names.contains(&"dave") && names.contains(&ADMIN),
        "{names:?}"
    );
    // Asking takes ADMIN at the scope, even for one's own grants.
    denied(
        db.acting_as_user("bob")
            .user_permissions(&table(None, Some("bob"))),
    );
    assert_eq!(
        db.acting_as_user("dave")
            .user_permissions(&table(None, None))
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn with_authorization_off_or_through_the_embedded_api_nothing_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    table_with_a_row(&db);
    let bob = db.acting_as_user("bob");
    assert!(bob.caller().is_none());
    assert_eq!(
        bob.table("t")
            .unwrap()
            .get(&Get::new("r"))
            .unwrap()
            .cells
            .len(),
        4
    );
    bob.create_namespace(NamespaceDescriptor::new("ns"))
        .unwrap();
}

#[test]
fn a_filter_never_sees_cells_of_families_the_caller_may_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "bob", Scope::family("t", b"a"), "R");
    let t = db.acting_as_user("bob").table("t").unwrap();
    let scan_with = |filter: &str| -> Vec<String> {
        t.scan(&Scan::new().filter(Filter::parse(filter).unwrap()))
            .unwrap()
            .flat_map(|row| columns(&row.unwrap()))
            .collect()
    };
    // A value filter on c's value cannot tell whether c holds it: the
    // answer is the same for the right value and a wrong one.
    let probe = |value: &str| {
        scan_with(&format!(
            "SingleColumnValueFilter('c', 'q1', =, 'binary:{value}', true, true)"
        ))
    };
    assert_eq!(probe("vc"), probe("not it"));
    assert!(probe("vc").is_empty());
    // Nothing of b or c comes back, whatever the filter lets through.
    assert_eq!(
        scan_with("ValueFilter(=, 'binary:vc')"),
        Vec::<String>::new()
    );
    assert_eq!(scan_with("KeyOnlyFilter()"), ["a:q1"]);
    // Gets alike.
    let row = t
        .get(&Get::new("r").filter(Filter::parse("ValueFilter(=, 'substring:v')").unwrap()))
        .unwrap();
    assert_eq!(columns(&row), ["a:q1"]);
}

// HBase's AccessController: the user who took a snapshot (its owner) sees
// it listed and may delete it, clone it under its table's name and restore
// it with ADMIN on that table; anyone else needs global ADMIN for all four.
#[test]
fn a_snapshots_owner_lists_deletes_clones_and_restores_it_where_others_need_global_admin() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    table_with_a_row(&db);
    grant(&db, "alice", Scope::table("t"), "A");
    let alice = db.acting_as_user("alice");
    let bob = db.acting_as_user("bob");
    alice.snapshot("t", "alices", false, 0).unwrap();
    db.snapshot("t", "servers", false, 0).unwrap();

    // Listed to its owner and to global admins; the owner is recorded.
    let names = |d: &Database| -> Vec<String> {
        d.list_snapshots(None)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert_eq!(names(&alice), ["alices"]);
    assert!(names(&bob).is_empty());
    assert_eq!(names(&db.acting_as_user(ADMIN)), ["alices", "servers"]);
    let listed = db.list_snapshots(Some("alices")).unwrap();
    assert_eq!(listed[0].owner.as_deref(), Some("alice"));

    // Not the owner: global ADMIN for each.
    assert!(denied(bob.delete_snapshot("alices")).contains("(global, action=ADMIN)"));
    assert!(denied(alice.delete_snapshot("servers")).contains("(global, action=ADMIN)"));
    assert!(denied(bob.clone_snapshot("alices", "copy")).contains("(global, action=ADMIN)"));
    // The owner cloning under another table's name needs global ADMIN too.
    assert!(denied(alice.clone_snapshot("alices", "copy")).contains("(global, action=ADMIN)"));

    // The owner restores with ADMIN on the table...
    alice.disable_table("t").unwrap();
    alice.restore_snapshot("alices").unwrap();
    denied(bob.restore_snapshot("alices"));
    // ...and is refused for want of it once it is revoked.
    revoke_all(&db, "alice", Scope::table("t"));
    assert!(denied(alice.restore_snapshot("alices")).contains("scope=default:t"));

    // The owner clones under the snapshotted table's own name once it is gone.
    db.drop_table("t").unwrap();
    alice.clone_snapshot("alices", "t").unwrap();
    assert_eq!(
        db.table("t")
            .unwrap()
            .get(&Get::new("r"))
            .unwrap()
            .cells
            .len(),
        4
    );

    // A snapshot that does not exist is that error, whoever asks.
    let missing = bob.delete_snapshot("none").unwrap_err();
    assert_ne!(missing.kind(), ErrorKind::AccessDenied);
    alice.delete_snapshot("alices").unwrap();
    assert_eq!(names(&db.acting_as_user(ADMIN)), ["servers"]);
}
