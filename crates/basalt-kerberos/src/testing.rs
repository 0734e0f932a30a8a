//! A real MIT KDC for tests (feature `testing`): one per test process,
//! started through `scripts/throwaway_kdc.py` (the one implementation
//! every test shares), stopped when the process ends.
//!
//! [`ThrowawayKdc::get`] starts it once and points MIT Kerberos at it
//! through the environment, before any test goes on: every test calls it
//! first, so no thread reads the environment while it changes. The
//! process then accepts contexts for the server principals
//! (`hbase/localhost`, `HTTP/localhost`, from one server keytab) and
//! initiates them as any user principal (`alice`, `bob`, `hbase/localhost`
//! itself, from one client keytab), each user's tickets in its own cache
//! of a cache collection.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The realm the test KDC serves.
pub const REALM: &str = "BASALT.TEST";

/// Principals every test KDC has: the servers', then the users'.
const SERVER_PRINCIPALS: [&str; 2] = ["hbase/localhost", "HTTP/localhost"];
const USER_PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];

/// The test process's KDC.
#[derive(Debug)]
pub struct ThrowawayKdc {
    /// Keys of the server principals (`hbase/localhost`, `HTTP/localhost`).
    pub server_keytab: PathBuf,
    /// Keys of every principal, for clients (users, and the servers'
    /// own calls).
    pub client_keytab: PathBuf,
    /// The environment a child process needs to use this KDC
    /// (`KRB5_CONFIG`, `KRB5RCACHEDIR`).
    pub environment: Vec<(String, String)>,
    /// The directory holding it all (kept for the process's life).
    pub directory: PathBuf,
}

impl ThrowawayKdc {
    /// The KDC, started on first use. Panics with the reason when it
    /// cannot start (tests only).
    #[allow(clippy::expect_used)]
    pub fn get() -> &'static ThrowawayKdc {
        static KDC: OnceLock<ThrowawayKdc> = OnceLock::new();
        KDC.get_or_init(|| ThrowawayKdc::start().expect("the test KDC did not start"))
    }

    fn start() -> Result<ThrowawayKdc, String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let directory = std::env::temp_dir().join(format!("basalt-kdc-{}", std::process::id()));
        std::fs::create_dir_all(&directory).map_err(|e| e.to_string())?;
        let mut command = Command::new("python3");
        command
            .arg(root.join("scripts/throwaway_kdc.py"))
            .arg("start")
            .arg(&directory)
            .args(["--realm", REALM])
            .args(["--watch-pid", &std::process::id().to_string()]);
        for principal in SERVER_PRINCIPALS.iter().chain(&USER_PRINCIPALS) {
            command.args(["--principal", principal]);
        }
        let out = command.output().map_err(|e| format!("python3: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/throwaway_kdc.py start failed (Debian: krb5-kdc krb5-admin-server krb5-user): {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let started: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("its answer: {e}"))?;
        let keytab = |name: &str| -> Result<PathBuf, String> {
            started["keytabs"][name]
                .as_str()
                .map(PathBuf::from)
                .ok_or_else(|| format!("no keytab for {name} in {started}"))
        };
        let server_keytab = directory.join("server.keytab");
        let servers: Vec<PathBuf> = SERVER_PRINCIPALS
            .iter()
            .map(|p| keytab(p))
            .collect::<Result<_, _>>()?;
        merge_keytabs(&servers, &server_keytab)?;
        let client_keytab = directory.join("clients.keytab");
        let everyone: Vec<PathBuf> = SERVER_PRINCIPALS
            .iter()
            .chain(&USER_PRINCIPALS)
            .map(|p| keytab(p))
            .collect::<Result<_, _>>()?;
        merge_keytabs(&everyone, &client_keytab)?;
        let mut environment: Vec<(String, String)> = started["env"]
            .as_object()
            .ok_or("no env in its answer")?
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .filter(|(k, _)| k != "KRB5CCNAME")
            .collect();
        let caches = directory.join("caches");
        std::fs::create_dir_all(&caches).map_err(|e| e.to_string())?;
        // Clocks here are one clock: a skew of a second lets a test see a
        // ticket expire in seconds rather than MIT's default five minutes.
        let skew = directory.join("skew.conf");
        std::fs::write(&skew, "[libdefaults]\n  clockskew = 1\n").map_err(|e| e.to_string())?;
        for (name, value) in environment.iter_mut() {
            if name == "KRB5_CONFIG" {
                *value = format!("{}:{value}", skew.display());
            }
        }
        for (name, value) in &environment {
            std::env::set_var(name, value);
        }
        std::env::set_var("KRB5_KTNAME", format!("FILE:{}", server_keytab.display()));
        std::env::set_var(
            "KRB5_CLIENT_KTNAME",
            format!("FILE:{}", client_keytab.display()),
        );
        // A cache collection: several users' tickets side by side.
        std::env::set_var("KRB5CCNAME", format!("DIR:{}", caches.display()));
        environment
            .retain(|(k, _)| k == "KRB5_CONFIG" || k == "KRB5RCACHEDIR" || k == "KRB5_KDC_PROFILE");
        Ok(ThrowawayKdc {
            server_keytab,
            client_keytab,
            environment,
            directory,
        })
    }

    /// Makes tickets of user principal `name` last at most `seconds`
    /// (its maximum ticket life), for tests of expired tickets.
    pub fn limit_ticket_life(name: &str, seconds: u32) -> Result<(), String> {
        // Debian puts it in /usr/sbin, not on every user's PATH.
        let tool = ["/usr/sbin/kadmin.local", "/sbin/kadmin.local"]
            .into_iter()
            .find(|path| Path::new(path).exists())
            .unwrap_or("kadmin.local");
        let out = Command::new(tool)
            .args([
                "-q",
                &format!(
                    "modprinc -maxlife \"{seconds} seconds\" {}",
                    Self::principal(name)
                ),
            ])
            .output()
            .map_err(|e| format!("kadmin.local: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(())
    }

    /// `name@REALM`.
    pub fn principal(name: &str) -> String {
        format!("{name}@{REALM}")
    }
}

/// Writes the keys of `parts` into one keytab `into`, readable by its
/// owner only.
fn merge_keytabs(parts: &[PathBuf], into: &Path) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mut script = String::new();
    for part in parts {
        script.push_str(&format!("rkt {}\n", part.display()));
    }
    script.push_str(&format!("wkt {}\nquit\n", into.display()));
    let mut child = Command::new("ktutil")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("ktutil: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("ktutil's stdin")?
        .write_all(script.as_bytes())
        .map_err(|e| e.to_string())?;
    if !child.wait().map_err(|e| e.to_string())?.success() {
        return Err(format!("ktutil could not write {}", into.display()));
    }
    std::fs::set_permissions(into, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())
}
