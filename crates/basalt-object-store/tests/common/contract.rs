//! The `FileStore` contract (the module docs of `basalt_engine::fs`) as
//! checks any implementation must pass. Each check works in its own
//! directory below `root`, so one store can run them all.

use std::io;
use std::path::Path;

use basalt_engine::fs::FileStore;
use basalt_engine::wal::object::OBJECT_WAL_DIR;
use basalt_types::Error;

fn write(store: &dyn FileStore, path: &Path, data: &[u8]) {
    let mut w = store.create(path).unwrap();
    w.write_all(data).unwrap();
    assert_eq!(w.finish().unwrap(), data.len() as u64);
}

fn io_kind(e: &Error) -> Option<io::ErrorKind> {
    match e {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

/// Runs every check.
pub fn check_all(store: &dyn FileStore, root: &Path) {
    nothing_is_visible_until_finish(store, &root.join("visible"));
    a_second_publication_of_a_name_loses(store, &root.join("collide"));
    a_one_step_publication_is_create_if_absent_too(store, &root.join("publish"));
    a_dropped_writer_publishes_nothing(store, &root.join("dropped"));
    range_reads_return_exact_bytes_and_refuse_the_past_end(store, &root.join("ranges"));
    listings_show_files_and_directories_one_level_down(store, &root.join("lists"));
    prefix_listing_and_deletion_cover_every_depth(store, &root.join("prefix"));
    deleting_is_idempotent(store, &root.join("delete"));
    a_visible_publication_is_create_if_absent_and_can_be_synced_later(
        store,
        &root.join("visible-first"),
    );
    // Only the write-ahead log appends, in its own directory (which a disk
    // cache leaves alone: its files grow).
    an_appendable_file_shows_every_append_at_once_or_is_refused_where_the_store_cannot(
        store,
        &root.join(OBJECT_WAL_DIR).join("contract"),
    );
}

/// Where the store can append (a shared directory, memory when asked), an
/// appendable file is created only if absent, each append is visible to
/// every reader when it returns, and a truncation cuts it back; elsewhere
/// creating one is refused as unsupported.
pub fn an_appendable_file_shows_every_append_at_once_or_is_refused_where_the_store_cannot(
    store: &dyn FileStore,
    dir: &Path,
) {
    let path = dir.join("00000000000000000001");
    if !store.can_append() {
        let err = store.create_appendable(&path).unwrap_err();
        assert_eq!(io_kind(&err), Some(io::ErrorKind::Unsupported), "{err}");
        assert!(!store.exists(&path).unwrap());
        return;
    }
    let mut file = store.create_appendable(&path).unwrap();
    assert!(store.exists(&path).unwrap());
    assert_eq!(store.size(&path).unwrap(), 0);
    file.append(b"one").unwrap();
    assert_eq!(&store.read_all(&path).unwrap()[..], b"one");
    file.append(b"two").unwrap();
    assert_eq!(store.size(&path).unwrap(), 6);
    assert_eq!(&store.read_all(&path).unwrap()[..], b"onetwo");
    assert_eq!(&store.read_range(&path, 3, 3).unwrap()[..], b"two");
    file.truncate(3).unwrap();
    assert_eq!(&store.read_all(&path).unwrap()[..], b"one");
    file.sync().unwrap();
    assert_eq!(store.list(dir).unwrap(), vec![path.clone()]);
    for again in [
        store.create_appendable(&path).map(|_| ()).unwrap_err(),
        store.publish(&path, b"other").unwrap_err(),
    ] {
        assert_eq!(
            io_kind(&again),
            Some(io::ErrorKind::AlreadyExists),
            "{again}"
        );
    }
    store.delete(&path).unwrap();
    assert!(!store.exists(&path).unwrap());
}

/// `publish_visible` is `publish` for every reader (create-if-absent,
/// whole once it returns); `sync_published` takes what it published, and
/// a file deleted since.
pub fn a_visible_publication_is_create_if_absent_and_can_be_synced_later(
    store: &dyn FileStore,
    dir: &Path,
) {
    let a = dir.join("log/1");
    let b = dir.join("log/2");
    store.publish_visible(&a, b"first").unwrap();
    assert_eq!(&store.read_all(&a).unwrap()[..], b"first");
    let again = store.publish_visible(&a, b"second").unwrap_err();
    assert_eq!(
        io_kind(&again),
        Some(io::ErrorKind::AlreadyExists),
        "{again}"
    );
    assert_eq!(&store.read_all(&a).unwrap()[..], b"first");
    store.publish_visible(&b, b"other").unwrap();
    store.delete(&b).unwrap();
    store.sync_published(&[a.clone(), b]).unwrap();
    assert_eq!(&store.read_all(&a).unwrap()[..], b"first");
}

pub fn nothing_is_visible_until_finish(store: &dyn FileStore, dir: &Path) {
    let a = dir.join("sub/a");
    let mut w = store.create(&a).unwrap();
    w.write_all(b"hello ").unwrap();
    w.write_all(b"world").unwrap();
    assert_eq!(w.bytes_written(), 11);
    assert!(!store.exists(&a).unwrap());
    assert!(store.list(&dir.join("sub")).unwrap().is_empty());
    assert!(store.list_prefix(dir).unwrap().is_empty());
    assert!(store.size(&a).is_err());
    assert!(store.read_range(&a, 0, 1).is_err());
    assert_eq!(w.finish().unwrap(), 11);
    assert!(store.exists(&a).unwrap());
    assert_eq!(store.size(&a).unwrap(), 11);
    assert_eq!(&store.read_all(&a).unwrap()[..], b"hello world");
    assert_eq!(store.list(&dir.join("sub")).unwrap(), vec![a]);
}

pub fn a_second_publication_of_a_name_loses(store: &dyn FileStore, dir: &Path) {
    let b = dir.join("b");
    // Two writers started before either finished: the first finish wins.
    let mut w1 = store.create(&b).unwrap();
    let mut w2 = store.create(&b).unwrap();
    w1.write_all(b"one").unwrap();
    w2.write_all(b"two, longer").unwrap();
    w1.finish().unwrap();
    let err = w2.finish().unwrap_err();
    assert_eq!(
        io_kind(&err),
        Some(io::ErrorKind::AlreadyExists),
        "the losing finish says AlreadyExists: {err}"
    );
    assert_eq!(&store.read_all(&b).unwrap()[..], b"one");
    // Creating an existing name fails at once.
    assert!(store.create(&b).is_err(), "create of an existing file");
    assert_eq!(&store.read_all(&b).unwrap()[..], b"one");
}

pub fn a_one_step_publication_is_create_if_absent_too(store: &dyn FileStore, dir: &Path) {
    let c = dir.join("sub/c");
    store.publish(&c, b"first").unwrap();
    assert_eq!(&store.read_all(&c).unwrap()[..], b"first");
    assert_eq!(store.list(&dir.join("sub")).unwrap(), vec![c.clone()]);
    // Against a one-step publication and against a writer's: the name
    // keeps the bytes that took it, and the loser says AlreadyExists.
    let err = store.publish(&c, b"second").unwrap_err();
    assert_eq!(io_kind(&err), Some(io::ErrorKind::AlreadyExists), "{err}");
    let d = dir.join("d");
    let mut w = store.create(&d).unwrap();
    w.write_all(b"writer").unwrap();
    store.publish(&d, b"one step").unwrap();
    let err = w.finish().unwrap_err();
    assert_eq!(io_kind(&err), Some(io::ErrorKind::AlreadyExists), "{err}");
    assert_eq!(&store.read_all(&c).unwrap()[..], b"first");
    assert_eq!(&store.read_all(&d).unwrap()[..], b"one step");
    // An empty file is a file.
    let e = dir.join("e");
    store.publish(&e, b"").unwrap();
    assert!(store.exists(&e).unwrap());
    assert_eq!(store.size(&e).unwrap(), 0);
}

pub fn a_dropped_writer_publishes_nothing(store: &dyn FileStore, dir: &Path) {
    let c = dir.join("c");
    let mut w = store.create(&c).unwrap();
    w.write_all(b"abandoned").unwrap();
    drop(w);
    assert!(!store.exists(&c).unwrap());
    assert!(store.list(dir).unwrap().is_empty());
    assert!(store.list_prefix(dir).unwrap().is_empty());
    // The name is still free.
    write(store, &c, b"later");
    assert_eq!(&store.read_all(&c).unwrap()[..], b"later");
}

pub fn range_reads_return_exact_bytes_and_refuse_the_past_end(store: &dyn FileStore, dir: &Path) {
    let f = dir.join("f");
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    write(store, &f, &data);
    assert_eq!(&store.read_range(&f, 0, 10).unwrap()[..], &data[..10]);
    assert_eq!(
        &store.read_range(&f, 4321, 1234).unwrap()[..],
        &data[4321..5555]
    );
    assert_eq!(
        &store.read_range(&f, 9_990, 10).unwrap()[..],
        &data[9_990..]
    );
    assert_eq!(&store.read_range(&f, 0, data.len()).unwrap()[..], &data[..]);
    assert!(store.read_range(&f, 5, 0).unwrap().is_empty());
    for (offset, len) in [(9_995, 10), (10_000, 1), (20_000, 5), (u64::MAX - 2, 5)] {
        let err = store.read_range(&f, offset, len).unwrap_err();
        assert!(
            io_kind(&err).is_some(),
            "a read of {len} at {offset} past the end is an I/O error: {err:?}"
        );
    }
    let missing = dir.join("missing");
    let err = store.read_range(&missing, 0, 1).unwrap_err();
    assert_eq!(io_kind(&err), Some(io::ErrorKind::NotFound), "{err}");
    assert_eq!(
        io_kind(&store.size(&missing).unwrap_err()),
        Some(io::ErrorKind::NotFound)
    );
    // An empty file exists and has size 0.
    let empty = dir.join("empty");
    write(store, &empty, b"");
    assert!(store.exists(&empty).unwrap());
    assert_eq!(store.size(&empty).unwrap(), 0);
    assert!(store.read_range(&empty, 0, 1).is_err());
}

pub fn listings_show_files_and_directories_one_level_down(store: &dyn FileStore, dir: &Path) {
    let top1 = dir.join("a-file");
    let top2 = dir.join("b-file");
    let deep = dir.join("x/inner");
    let deeper = dir.join("y/z/innermost");
    for path in [&top2, &deep, &top1, &deeper] {
        write(store, path, b"1");
    }
    assert_eq!(store.list(dir).unwrap(), vec![top1, top2]);
    assert_eq!(
        store.list_dirs(dir).unwrap(),
        vec![dir.join("x"), dir.join("y")]
    );
    assert_eq!(
        store.list(&dir.join("y")).unwrap(),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(
        store.list_dirs(&dir.join("y")).unwrap(),
        vec![dir.join("y/z")]
    );
    assert!(store.list(&dir.join("nothing")).unwrap().is_empty());
    assert!(store.list_dirs(&dir.join("nothing")).unwrap().is_empty());
    // A sibling whose name starts like a directory is not inside it.
    let sibling = dir.join("xylophone");
    write(store, &sibling, b"1");
    assert_eq!(store.list(&dir.join("x")).unwrap(), vec![deep]);
}

pub fn prefix_listing_and_deletion_cover_every_depth(store: &dyn FileStore, dir: &Path) {
    let deep = dir.join("tree/x/y/deep");
    let shallow = dir.join("tree/top");
    let other = dir.join("tree/z/file");
    let outside = dir.join("treehouse/file");
    for path in [&deep, &shallow, &other, &outside] {
        write(store, path, b"1");
    }
    assert_eq!(
        store.list_prefix(&dir.join("tree")).unwrap(),
        vec![shallow.clone(), deep.clone(), other.clone()]
    );
    store.delete_prefix(&dir.join("tree/x")).unwrap();
    store.delete_prefix(&dir.join("tree/x")).unwrap();
    assert!(!store.exists(&deep).unwrap());
    assert_eq!(
        store.list_prefix(&dir.join("tree")).unwrap(),
        vec![shallow.clone(), other.clone()]
    );
    assert_eq!(
        store.list_dirs(&dir.join("tree")).unwrap(),
        vec![dir.join("tree/z")]
    );
    store.delete_prefix(&dir.join("tree")).unwrap();
    assert!(store.list_prefix(&dir.join("tree")).unwrap().is_empty());
    assert!(store.exists(&outside).unwrap(), "a prefix is whole names");
    assert!(store.list_prefix(&dir.join("missing")).unwrap().is_empty());
    store.delete_prefix(&dir.join("missing")).unwrap();
}

pub fn deleting_is_idempotent(store: &dyn FileStore, dir: &Path) {
    let f = dir.join("f");
    write(store, &f, b"x");
    store.delete(&f).unwrap();
    store.delete(&f).unwrap();
    store.delete(&dir.join("never-was")).unwrap();
    assert!(!store.exists(&f).unwrap());
    assert!(store.read_range(&f, 0, 1).is_err());
}
