use basalt::*;
#[test]
fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_table(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("b")),
    )
    .unwrap();
    let t = db.table("t").unwrap();
    for i in 0..10 {
        t.put(
            &Put::new(format!("r{i}"))
                .add("a", "q", format!("v{i}"))
                .add("b", "x", "y"),
        )
        .unwrap();
    }
    let r = t.get(&Get::new("r3")).unwrap();
    assert_eq!(r.cells.len(), 2, "{r:?}");
    let rows: Vec<_> = t
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap().row)
        .collect();
    assert_eq!(rows.len(), 10);
    let rows: Vec<_> = t
        .scan(&Scan::new().reversed(true).start_row("r5").stop_row("r2"))
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().row.to_vec()).unwrap())
        .collect();
    assert_eq!(rows, vec!["r5", "r4", "r3"]);
    assert_eq!(t.increment_column("c", "a", "n", 5).unwrap(), 5);
    assert_eq!(t.increment_column("c", "a", "n", 5).unwrap(), 10);
    t.delete(&Delete::new("r3")).unwrap();
    assert!(t.get(&Get::new("r3")).unwrap().is_empty());
    drop(t);
    drop(db);
}
