//! The `basalt top` command line: options, the source, then the batch
//! printer or the terminal UI.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::batch::{self, BatchPlan};
use crate::filter::Filter;
use crate::model::{Field, Mode, ViewOptions};
use crate::source::{EmbeddedSource, RemoteSource, Source};
use crate::tui::{self, App};
use crate::TopError;

/// The longest delay `-d` takes (a day): a longer one is surely a typo.
const MAX_DELAY_SECONDS: f64 = 86_400.0;
/// The shortest delay: a refresh asks one question per table.
const MIN_DELAY_SECONDS: f64 = 0.1;

/// `basalt top`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct TopArgs {
    /// Server to watch.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Its Thrift port.
    #[arg(long, default_value_t = 9090)]
    pub port: u16,
    /// Open this data directory in this process instead of watching a
    /// server (only when no server holds it; counters start at zero).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["host", "port"])]
    pub data_dir: Option<PathBuf>,
    /// Seconds between refreshes.
    #[arg(short = 'd', long, value_name = "SECS", default_value_t = 3.0)]
    pub delay: f64,
    /// What a row stands for: region, table or server.
    #[arg(short = 'm', long, value_name = "MODE", default_value = "region")]
    pub mode: Mode,
    /// Stop after this many refreshes (default: run until quit).
    #[arg(short = 'n', long, value_name = "N")]
    pub iterations: Option<u64>,
    /// No terminal UI: print each refresh as plain text to standard output.
    #[arg(long)]
    pub batch: bool,
    /// Sort column by its header (#REQ/S, WRITE/S, SF, SKEY, ...).
    /// Numbers sort largest first, names and keys in order.
    #[arg(long, value_name = "COLUMN")]
    pub sort: Option<String>,
    /// Reverse the sort order.
    #[arg(long)]
    pub reverse: bool,
    /// Keep only rows matching this filter, e.g. 'TABLE==orders #REQ/S>10'
    /// (see docs/top.md).
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Seconds a connect or a call to the server may take.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
}

/// Runs `basalt top`; errors are printed on standard error, exit 1.
pub fn run(args: TopArgs) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("basalt top: {e}");
            ExitCode::FAILURE
        }
    }
}

fn seconds(what: &str, value: f64, min: f64, max: f64) -> Result<Duration, TopError> {
    if !(min..=max).contains(&value) {
        return Err(TopError::Usage(format!(
            "{what} must be between {min} and {max} seconds, not {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

/// The table options the arguments ask for.
fn view_options(args: &TopArgs) -> Result<ViewOptions, TopError> {
    let sort = match &args.sort {
        Some(name) => Field::parse(name).ok_or_else(|| {
            TopError::Usage(format!(
                "--sort: unknown column {name:?}; the columns of {} mode are {}",
                args.mode.name(),
                args.mode
                    .fields(true)
                    .iter()
                    .map(|f| f.header())
                    .collect::<Vec<_>>()
                    .join(" ")
            ))
        })?,
        None => Field::Requests,
    };
    let filter = match &args.filter {
        Some(text) => Filter::parse(text).map_err(|e| TopError::Usage(format!("--filter: {e}")))?,
        None => Filter::default(),
    };
    Ok(ViewOptions {
        mode: args.mode,
        drill: None,
        filter,
        sort,
        descending: sort.descending_by_default() != args.reverse,
    })
}

fn run_inner(args: TopArgs) -> Result<(), TopError> {
    let delay = seconds("--delay", args.delay, MIN_DELAY_SECONDS, MAX_DELAY_SECONDS)?;
    let timeout = seconds(
        "--timeout",
        args.timeout,
        MIN_DELAY_SECONDS,
        MAX_DELAY_SECONDS,
    )?;
    let view = view_options(&args)?;
    if !args.batch && !std::io::stdout().is_terminal() {
        return Err(TopError::Usage(
            "standard output is not a terminal: use --batch for plain text".into(),
        ));
    }
    let mut source: Box<dyn Source> = match &args.data_dir {
        Some(dir) => Box::new(EmbeddedSource::open(dir)?),
        None => Box::new(RemoteSource::connect(&args.host, args.port, timeout)?),
    };
    // The first snapshot before any screen is drawn: a server that answers
    // the connect but not the questions is reported as plainly.
    let first = source.snapshot()?;
    if args.batch {
        let plan = BatchPlan {
            view,
            iterations: args.iterations,
            delay,
        };
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        batch::run(
            source.as_mut(),
            first,
            &plan,
            &mut out,
            &mut std::thread::sleep,
        )
    } else {
        let app = App::new(view, delay, first);
        tui::run(source.as_mut(), app, args.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        top: TopArgs,
    }

    fn parse(args: &[&str]) -> TopArgs {
        Cli::try_parse_from(std::iter::once("top").chain(args.iter().copied()))
            .unwrap()
            .top
    }

    #[test]
    fn the_defaults_are_region_mode_sorted_by_requests_every_three_seconds() {
        let args = parse(&[]);
        assert_eq!((args.host.as_str(), args.port), ("127.0.0.1", 9090));
        assert_eq!(args.delay, 3.0);
        assert_eq!(args.mode, Mode::Region);
        let view = view_options(&args).unwrap();
        assert_eq!((view.sort, view.descending), (Field::Requests, true));
    }

    #[test]
    fn short_options_match_hbtop() {
        let args = parse(&["-d", "1", "-m", "table", "-n", "2", "--batch"]);
        assert_eq!(
            (args.delay, args.mode, args.iterations),
            (1.0, Mode::Table, Some(2))
        );
        assert!(args.batch);
    }

    #[test]
    fn a_text_column_sorts_ascending_and_reverse_flips_it() {
        let view = view_options(&parse(&["--sort", "SKEY"])).unwrap();
        assert_eq!((view.sort, view.descending), (Field::StartKey, false));
        let view = view_options(&parse(&["--sort", "write/s", "--reverse"])).unwrap();
        assert_eq!((view.sort, view.descending), (Field::Writes, false));
    }

    #[test]
    fn bad_options_are_named() {
        let e = view_options(&parse(&["--sort", "bogus"])).unwrap_err();
        assert!(e.to_string().contains("unknown column \"bogus\""), "{e}");
        let e = view_options(&parse(&["--filter", "#SF>x"])).unwrap_err();
        assert!(e.to_string().starts_with("--filter:"), "{e}");
        assert!(seconds("--delay", 0.0, MIN_DELAY_SECONDS, MAX_DELAY_SECONDS).is_err());
        assert!(Cli::try_parse_from(["top", "-m", "cluster"]).is_err());
        assert!(Cli::try_parse_from(["top", "--data-dir", "x", "--port", "1"]).is_err());
    }
}
