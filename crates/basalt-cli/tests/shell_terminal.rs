//! The interactive shell in a real terminal (tmux): tab completion of
//! command, table and family names, history saved in `$HOME`, and bad
//! input that prints an error while the shell goes on.
//!
//! Needs `tmux` (Debian package `tmux`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Tells apart the tmux servers of tests running at once.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Hang guard only: how long to wait for the screen to show something.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A tmux server of our own (its own socket), killed on drop.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux is needed for this test: apt-get install -y tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn start(home: &Path, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: format!(
                "basalt-shell-test-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ),
            session: "shell".into(),
        };
        let shell_command = format!("env HOME={} USER=tester {command}", home.display());
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            &tmux.session,
            "-x",
            "160",
            "-y",
            "50",
            &shell_command,
        ]);
        tmux
    }

    /// Types keys: literal text, or tmux key names such as `Tab`, `Enter`.
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn screen(&self) -> String {
        // The whole scrollback, lines joined where the terminal wrapped them.
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", &self.session]);
        String::from_utf8(out.stdout).unwrap()
    }

    /// Waits until the screen shows `text`; returns the screen.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < TIMEOUT,
                "the screen never showed {text:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn interactive_shell_on_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let command = format!(
        "{} shell --data-dir {}",
        env!("CARGO_BIN_EXE_basalt"),
        data.display()
    );
    completes_and_goes_on_after_errors(dir.path(), &command);
}

#[test]
fn interactive_shell_on_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(&dir.path().join("data"));
    let command = format!(
        "{} shell --port {}",
        env!("CARGO_BIN_EXE_basalt"),
        server.port
    );
    completes_and_goes_on_after_errors(dir.path(), &command);
}

fn completes_and_goes_on_after_errors(dir: &Path, command: &str) {
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    let tmux = Tmux::start(&home, command);
    // Keys typed before the shell reads again are dropped by the terminal
    // (as with any line editor), so each line waits for its prompt.
    tmux.wait_for("basalt:001:0>");
    tmux.keys(&["create 'mytable', 'colfam1'", "Enter"]);
    tmux.wait_for("=> Hbase::Table - mytable");

    // A command name: `li<TAB>` becomes `list `.
    tmux.wait_for("basalt:002:0>");
    tmux.keys(&["li", "Tab"]);
    // (tmux trims the trailing space from the screen.)
    tmux.wait_for("basalt:002:0> list");
    tmux.keys(&["Enter"]);
    tmux.wait_for("=> [\"mytable\"]");

    // A table name inside quotes, after a completed command name.
    tmux.wait_for("basalt:003:0>");
    tmux.keys(&["descr", "Tab", "'my", "Tab"]);
    tmux.wait_for("basalt:003:0> describe 'mytable'");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Table mytable is ENABLED");

    // A family name in a column argument.
    tmux.wait_for("basalt:004:0>");
    tmux.keys(&["put 'mytable', 'r1', 'co", "Tab"]);
    tmux.wait_for("basalt:004:0> put 'mytable', 'r1', 'colfam1:");
    tmux.keys(&["q', \"v\\x01\"", "Enter"]);

    // Bad input: an error, and the shell goes on.
    tmux.wait_for("basalt:005:0>");
    tmux.keys(&["get 'mytable', 'r1", "Enter"]);
    tmux.wait_for("ERROR: syntax error at column 16: unterminated string");
    tmux.wait_for("basalt:006:0>");
    tmux.keys(&["nosuchcommand", "Enter"]);
    tmux.wait_for("ERROR: Unknown command 'nosuchcommand'");
    tmux.wait_for("basalt:007:0>");
    tmux.keys(&["get 'mytable', 7", "Enter"]);
    tmux.wait_for("ERROR: the row must be a string, not integer (7)");

    tmux.wait_for("basalt:008:0>");
    tmux.keys(&["scan 'mytable'", "Enter"]);
    let screen = tmux.wait_for("column=colfam1:q, timestamp=");
    assert!(screen.contains("value=v\\x01"), "scan output:\n{screen}");

    tmux.wait_for("basalt:009:0>");
    tmux.keys(&["exit", "Enter"]);
    // History survives in $HOME/.basalt_history.
    let history = home.join(".basalt_history");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&history).unwrap_or_default();
        if text.contains("exit") {
            assert!(text.contains("describe 'mytable'"), "{text}");
            assert!(text.contains("put 'mytable', 'r1', 'colfam1:q'"), "{text}");
            break;
        }
        assert!(start.elapsed() < TIMEOUT, "history never written: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
