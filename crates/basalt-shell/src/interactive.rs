//! The interactive shell: line editing and history (rustyline), a prompt
//! like HBase's `hbase:001:0> `, and tab completion of command names, and of
//! table and family names inside quotes.

use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use basalt::admin::{AdminReply, AdminRequest};

use crate::{command_names, LineOutcome, SharedBackend, Shell};

/// Commands whose later arguments are columns (`family:qualifier`).
const COLUMN_COMMANDS: &[&str] = &[
    "put",
    "get",
    "scan",
    "delete",
    "deleteall",
    "incr",
    "get_counter",
    "append",
];

/// Where the history lives: `$HOME/.basalt_history`.
pub fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".basalt_history"))
}

/// Completes from the backend's tables and families.
pub struct ShellHelper {
    backend: SharedBackend,
}

impl std::fmt::Debug for ShellHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellHelper").finish_non_exhaustive()
    }
}

/// Where the cursor is in the command being typed.
#[derive(Debug, PartialEq, Eq)]
enum Spot {
    /// Typing the command name, which starts at this byte.
    Command { start: usize },
    /// Inside a quoted argument: its index, the opening quote and where
    /// its text starts; `table` is the first argument when already closed.
    Quoted {
        command: String,
        index: usize,
        quote: char,
        start: usize,
        table: Option<String>,
    },
    /// Anywhere else: nothing to complete.
    Other,
}

/// Reads the text before the cursor just far enough to know what is typed.
fn locate(before: &str) -> Spot {
    let command_start = before.rfind(';').map_or(0, |i| i + 1);
    let text = &before[command_start..];
    let leading = text.len() - text.trim_start().len();
    let body = &text[leading..];
    let name_len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    if name_len == body.len() {
        return Spot::Command {
            start: command_start + leading,
        };
    }
    let command = body[..name_len].to_string();
    let mut index = 0;
    let mut quote: Option<(char, usize)> = None;
    let mut current = String::new();
    let mut first: Option<String> = None;
    let base = command_start + leading;
    let mut depth = 0usize;
    for (i, c) in body.char_indices().skip(name_len) {
        match quote {
            Some((q, _)) if c == q => {
                if index == 0 && depth == 0 && first.is_none() {
                    first = Some(std::mem::take(&mut current));
                }
                quote = None;
            }
            Some(_) => current.push(c),
            None => match c {
                '\'' | '"' => {
                    current.clear();
                    quote = Some((c, base + i + 1));
                }
                '[' | '{' | '(' => depth += 1,
                ']' | '}' | ')' => depth = depth.saturating_sub(1),
                ',' if depth <= 1 => index += 1,
                _ => {}
            },
        }
    }
    match quote {
        Some((quote, start)) => Spot::Quoted {
            command,
            index,
            quote,
            start,
            table: first,
        },
        None => Spot::Other,
    }
}

impl ShellHelper {
    /// A completer over `backend`.
    pub fn new(backend: SharedBackend) -> Self {
        ShellHelper { backend }
    }

    fn tables(&self) -> Vec<String> {
        self.backend.borrow_mut().list_tables().unwrap_or_default()
    }

    fn families(&self, table: &str) -> Vec<String> {
        match self.backend.borrow_mut().admin(AdminRequest::Describe {
            table: table.to_string(),
        }) {
            Ok(AdminReply::Table(t)) => t.families.into_iter().map(|f| f.name).collect(),
            _ => Vec::new(),
        }
    }

    /// Candidates for the text before the cursor: where the replaced word
    /// starts and what may replace it.
    pub fn candidates(&self, before: &str) -> (usize, Vec<String>) {
        match locate(before) {
            Spot::Command { start } => {
                let typed = &before[start..];
                let names = command_names()
                    .into_iter()
                    .filter(|n| n.starts_with(typed))
                    .map(|n| format!("{n} "))
                    .collect();
                (start, names)
            }
            Spot::Quoted {
                command,
                index,
                quote,
                start,
                table,
            } => {
                let typed = &before[start..];
                let found: Vec<String> = if index == 0 {
                    self.tables()
                        .into_iter()
                        .filter(|t| t.starts_with(typed))
                        .map(|t| format!("{t}{quote}"))
                        .collect()
                } else if let Some(table) = table {
                    let column = COLUMN_COMMANDS.contains(&command.as_str());
                    self.families(&table)
                        .into_iter()
                        .map(|f| {
                            if column {
                                format!("{f}:")
                            } else {
                                format!("{f}{quote}")
                            }
                        })
                        .filter(|f| f.starts_with(typed))
                        .collect()
                } else {
                    Vec::new()
                };
                (start, found)
            }
            Spot::Other => (before.len(), Vec::new()),
        }
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = self.candidates(&line[..pos]);
        Ok((
            start,
            found
                .into_iter()
                .map(|c| Pair {
                    display: c.trim_end_matches([' ', '\'', '"']).to_string(),
                    replacement: c,
                })
                .collect(),
        ))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}
impl Highlighter for ShellHelper {}
impl Validator for ShellHelper {}
impl Helper for ShellHelper {}

/// Runs the interactive loop until `exit` or end of input. Errors are
/// printed and the shell goes on.
pub fn run(shell: &mut Shell, banner: &str) -> Result<(), ReadlineError> {
    let mut editor: Editor<ShellHelper, DefaultHistory> = Editor::new()?;
    editor.set_helper(Some(ShellHelper::new(shell.backend())));
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is the normal first run.
        let _ = editor.load_history(path);
    }
    println!("{banner}");
    println!("Type 'help' for the list of commands, 'exit' to leave.");
    let mut counter = 1u32;
    loop {
        let prompt = format!("basalt:{counter:03}:0> ");
        match editor.readline(&prompt) {
            Ok(line) => {
                counter = counter.saturating_add(1);
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(path) = &history {
                        if let Err(e) = editor.history_mut().append(path) {
                            // Keep going: losing history must not stop work.
                            eprintln!("warning: cannot save history to {}: {e}", path.display());
                        }
                    }
                }
                if shell.run_line(&line) == LineOutcome::Exit {
                    return Ok(());
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_command_names_and_quoted_arguments() {
        assert_eq!(locate("li"), Spot::Command { start: 0 });
        assert_eq!(locate("list; de"), Spot::Command { start: 6 });
        assert_eq!(
            locate("desc 'my"),
            Spot::Quoted {
                command: "desc".into(),
                index: 0,
                quote: '\'',
                start: 6,
                table: None
            }
        );
        assert_eq!(
            locate("get 't1', \"r1\", 'c"),
            Spot::Quoted {
                command: "get".into(),
                index: 2,
                quote: '\'',
                start: 17,
                table: Some("t1".into())
            }
        );
        assert_eq!(
            locate("scan 't1', {COLUMNS => ['c"),
            Spot::Quoted {
                command: "scan".into(),
                index: 1,
                quote: '\'',
                start: 25,
                table: Some("t1".into())
            }
        );
        assert_eq!(locate("get 't1', "), Spot::Other);
    }
}
