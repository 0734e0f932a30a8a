//! `basalt shell`: HBase's shell for Basalt, with HBase's commands, Ruby-hash
//! argument syntax and output.
//!
//! - [`parse`]: the Ruby-literal input language;
//! - [`format`](mod@format): HBase's output look;
//! - [`backend`]: a server over Thrift1 plus Basalt's admin extension, or a
//!   data directory opened in-process;
//! - [`Shell`]: runs lines of input against a backend;
//! - [`interactive`]: line editing, history and completion.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod backend;
mod commands;
pub mod format;
pub mod interactive;
pub mod parse;

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use basalt::admin::{AdminReply, AdminRequest};

pub use backend::{Backend, EmbeddedBackend, RemoteBackend, ShellError, ShellResult};

/// A backend shared by the shell and its completer.
pub type SharedBackend = Rc<RefCell<dyn Backend>>;

/// What running one line came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOutcome {
    /// Every command succeeded.
    Ok,
    /// A command (or the line's syntax) failed; the error was printed.
    Failed,
    /// `exit` or `quit`.
    Exit,
}

/// Runs commands against a backend, printing to `out`.
pub struct Shell {
    backend: SharedBackend,
    out: Box<dyn Write>,
    echo: bool,
}

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell").finish_non_exhaustive()
    }
}

/// The names of every command, for completion and help.
pub fn command_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = commands::COMMANDS.iter().map(|c| c.name).collect();
    names.push("quit");
    names.sort_unstable();
    names
}

impl Shell {
    /// A shell over `backend`, printing to `out`.
    pub fn new(backend: SharedBackend, out: Box<dyn Write>) -> Self {
        Shell {
            backend,
            out,
            echo: false,
        }
    }

    /// In scripts, print each line as `> line` before its output (a
    /// transcript of the session).
    pub fn set_echo(&mut self, echo: bool) {
        self.echo = echo;
    }

    /// The backend (the completer reads table and family names from it).
    pub fn backend(&self) -> SharedBackend {
        Rc::clone(&self.backend)
    }

    fn print(&mut self, text: &str) {
        // Output that cannot be written (a closed pipe) has nowhere to go.
        let _ = writeln!(self.out, "{text}");
    }

    /// Parses and runs one line of input. Errors are printed as
    /// `ERROR: ...`; the caller decides whether to go on.
    pub fn run_line(&mut self, line: &str) -> LineOutcome {
        let commands = match parse::parse_line(line) {
            Ok(c) => c,
            Err(e) => {
                self.print(&format!("ERROR: {e}"));
                self.print(&format!("  {line}"));
                self.print(&format!("  {}^", " ".repeat(e.column.saturating_sub(1))));
                let _ = self.out.flush();
                return LineOutcome::Failed;
            }
        };
        for command in commands {
            let outcome = self.run_command(&command);
            let _ = self.out.flush();
            if outcome != LineOutcome::Ok {
                return outcome;
            }
        }
        LineOutcome::Ok
    }

    fn run_command(&mut self, command: &parse::Command) -> LineOutcome {
        let name = if command.name == "quit" {
            "exit"
        } else {
            command.name.as_str()
        };
        let Some(spec) = commands::find(name) else {
            self.print(&format!(
                "ERROR: Unknown command '{}'. Type 'help' for the list of commands.",
                command.name
            ));
            return LineOutcome::Failed;
        };
        let Some(run) = spec.run else {
            return LineOutcome::Exit;
        };
        let started = Instant::now();
        let result = {
            let mut backend = self.backend.borrow_mut();
            let mut ctx = commands::Ctx {
                backend: &mut *backend,
                out: &mut *self.out,
            };
            run(&mut ctx, &command.args)
        };
        match result {
            Ok(returned) => {
                // As in HBase, help is not timed.
                if spec.name != "help" {
                    self.print(&format::took(started.elapsed()));
                }
                if let Some(r) = returned {
                    self.print(&format!("=> {r}"));
                }
                LineOutcome::Ok
            }
            Err(e) => {
                self.backend.borrow_mut().after_error(&e);
                let message = self.error_message(&e, command);
                self.print(&format!("ERROR: {message}"));
                self.print("");
                self.print("Here is some help for this command:");
                self.print(spec.usage);
                self.print("");
                LineOutcome::Failed
            }
        }
    }

    fn error_message(&mut self, e: &ShellError, command: &parse::Command) -> String {
        let ShellError::UnknownFamily { table, .. } = e else {
            return e.to_string();
        };
        // HBase lists the table's families so the user sees the right names.
        let table = table.clone().or_else(|| match command.args.first() {
            Some(parse::Arg::Str(t)) => Some(String::from_utf8_lossy(t).into_owned()),
            _ => None,
        });
        let families = table.and_then(|t| {
            match self
                .backend
                .borrow_mut()
                .admin(AdminRequest::Describe { table: t })
            {
                Ok(AdminReply::Table(t)) => Some(t.families),
                _ => None,
            }
        });
        match families {
            Some(f) => {
                let names: Vec<String> = f.iter().map(|f| format!("{}:*", f.name)).collect();
                format!(
                    "Unknown column family! Valid column names: {}",
                    names.join(", ")
                )
            }
            None => e.to_string(),
        }
    }

    /// Runs a whole script, line by line. Without `keep_going` it stops at
    /// the first failing line. Returns true when every line succeeded.
    pub fn run_script(&mut self, script: &str, keep_going: bool) -> bool {
        self.run_lines(script.lines().map(|l| Ok(l.to_string())), keep_going)
    }

    /// Runs lines as they come (standard input is read a line at a time,
    /// so a pipe that stays open is served as it goes). A line that cannot
    /// be read ends the run as a failure.
    pub fn run_lines(
        &mut self,
        lines: impl Iterator<Item = std::io::Result<String>>,
        keep_going: bool,
    ) -> bool {
        let mut ok = true;
        for line in lines {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    self.print(&format!("ERROR: cannot read input: {e}"));
                    return false;
                }
            };
            if self.echo {
                self.print(&format!("> {line}"));
            }
            match self.run_line(&line) {
                LineOutcome::Ok => {}
                LineOutcome::Exit => break,
                LineOutcome::Failed => {
                    ok = false;
                    if !keep_going {
                        break;
                    }
                }
            }
        }
        ok
    }
}
