//! The README stays true to the code: its embedded example is the example
//! program `cargo test` compiles, its Configuration section names every
//! option `basalt serve` reads, and the project's documents link only to
//! files inside the repository.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

#[test]
fn readme_shows_the_quickstart_example_as_it_is() {
    let example = read("crates/basalt/examples/quickstart.rs");
    // The README shows the program without its leading `//!` comment.
    let code: Vec<&str> = example
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .collect();
    let block = format!("```rust\n{}\n```", code.join("\n"));
    assert!(
        read("README.md").contains(&block),
        "README.md's embedded example is not crates/basalt/examples/quickstart.rs; \
         put this block in its place:\n{block}"
    );
}

#[test]
fn readme_configuration_names_every_serve_option() {
    let readme = read("README.md");
    let start = readme
        .find("## Configuration")
        .expect("a Configuration section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    // The options as `basalt serve` deserializes them: whatever serde
    // writes for the defaults is exactly the set of keys it accepts.
    let thrift = toml::to_string(&basalt_thrift::ServerConfig::default()).unwrap();
    let rest = toml::to_string(&basalt_rest::RestConfig::default()).unwrap();
    let database = toml::to_string(&basalt::Options::default()).unwrap();
    let rpc = toml::to_string(&basalt_rpc::RpcConfig::default()).unwrap();
    let storage = toml::to_string(&basalt_object_store::StorageConfig::default()).unwrap();
    let info = toml::to_string(&basalt_info::InfoConfig::default()).unwrap();
    for line in thrift
        .lines()
        .chain(rest.lines())
        .chain(database.lines())
        .chain(rpc.lines())
        .chain(storage.lines())
        .chain(info.lines())
    {
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        assert!(
            section.contains(&format!("\n{key} = ")) || section.contains(&format!("# {key} =")),
            "README's Configuration section does not list `{key}`"
        );
    }
    for flag in [
        "--data-dir",
        "--storage",
        "--thrift-port",
        "--rest-port",
        "--info-port",
        "--no-info",
        "--bind",
        "--config",
        "--zookeeper",
        "--native-rpc",
        "--master-port",
        "--region-server-port",
    ] {
        assert!(section.contains(flag), "README does not list {flag}");
    }
}

#[test]
fn documents_link_only_inside_the_repository() {
    let mut documents = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            documents.push(format!("docs/{name}"));
        }
    }
    for document in documents {
        let text = read(&document);
        assert!(
            !text.contains("shared/"),
            "{document} points at the workspace's shared/ folder, outside the repository"
        );
        let base = root().join(&document);
        let base = base.parent().unwrap();
        // Markdown links `](target)` that are not web addresses or anchors.
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") {
                continue;
            }
            let resolved = base.join(path);
            assert!(
                resolved.exists(),
                "{document} links to {target}, which does not exist"
            );
            let resolved = resolved.canonicalize().unwrap();
            assert!(
                resolved.starts_with(root().canonicalize().unwrap()),
                "{document} links to {target}, outside the repository"
            );
        }
    }
}
