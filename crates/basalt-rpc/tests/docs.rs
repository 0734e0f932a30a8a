//! docs/native-rpc.md names every method the server serves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_native_rpc_document_lists_every_served_method() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/native-rpc.md");
    let doc = std::fs::read_to_string(path).unwrap();
    for (service, methods) in basalt_rpc::services::services() {
        assert!(
            doc.contains(&format!("`{service}`")),
            "docs/native-rpc.md does not name {service}"
        );
        for method in methods {
            assert!(
                doc.contains(&format!("`{}`", method.name)),
                "docs/native-rpc.md does not list {service}.{}",
                method.name
            );
        }
    }
}
