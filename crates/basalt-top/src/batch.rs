//! `--batch`: refreshes printed as plain text, for scripts and tests. Each
//! refresh is the summary lines, a blank line, the header and one line per
//! row (columns two spaces apart, numbers right-aligned, nothing cut),
//! then a blank line.

use std::io::Write;
use std::time::Duration;

use crate::model::{build_view, View, ViewOptions};
use crate::source::{Snapshot, Source};
use crate::{summary, TopError};

/// What a batch run does.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchPlan {
    /// How the table is built.
    pub view: ViewOptions,
    /// Refreshes to print; `None` prints until the output closes.
    pub iterations: Option<u64>,
    /// Time between refreshes.
    pub delay: Duration,
}

/// Prints `first` and then a refresh every `plan.delay` (waiting through
/// `sleep`, so tests need not), until `plan.iterations` are printed. A
/// failed snapshot ends the run with its error; so does output that can no
/// longer be written (a closed pipe ends it quietly).
pub fn run(
    source: &mut dyn Source,
    first: Snapshot,
    plan: &BatchPlan,
    out: &mut dyn Write,
    sleep: &mut dyn FnMut(Duration),
) -> Result<(), TopError> {
    let mut previous: Option<Snapshot> = None;
    let mut current = first;
    let mut printed = 0u64;
    loop {
        let view = build_view(previous.as_ref(), &current, &plan.view);
        let text = render(&current, &view, plan);
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(TopError::Output(e)),
        }
        printed += 1;
        if plan.iterations.is_some_and(|n| printed >= n) {
            return Ok(());
        }
        sleep(plan.delay);
        let next = source.snapshot()?;
        previous = Some(std::mem::replace(&mut current, next));
    }
}

/// One refresh as text.
pub fn render(snapshot: &Snapshot, view: &View, plan: &BatchPlan) -> String {
    let mut out = String::new();
    for line in summary::lines(snapshot, view) {
        out.push_str(&line);
        out.push('\n');
    }
    let mut status = format!("Mode: {}", plan.view.mode.name());
    if let Some(d) = &plan.view.drill {
        status.push_str(&format!(" ({})", d.describe()));
    }
    let (sort, descending) = plan.view.effective_sort(&view.fields);
    status.push_str(&format!(
        "; sort: {} {}",
        sort.header(),
        if descending {
            "descending"
        } else {
            "ascending"
        }
    ));
    if !plan.view.filter.is_empty() {
        status.push_str(&format!("; filter: {}", plan.view.filter.text()));
    }
    out.push_str(&status);
    out.push_str("\n\n");
    out.push_str(&table(view));
    out.push('\n');
    out
}

/// The header and rows, aligned.
pub fn table(view: &View) -> String {
    let rows: Vec<Vec<String>> = view
        .records
        .iter()
        .map(|r| {
            view.fields
                .iter()
                .map(|f| r.get(*f).map(|v| v.display()).unwrap_or_default())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = view
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([f.header().len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let width = widths[i];
            if view.fields[i].is_numeric() {
                s.push_str(&format!("{cell:>width$}"));
            } else {
                s.push_str(&format!("{cell:<width$}"));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(view.fields.iter().map(|f| f.header()).collect());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    if rows.is_empty() {
        out.push_str("(no rows)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;
    use crate::model::Mode;

    /// A source whose snapshots are given in advance.
    struct Fake(Vec<Snapshot>);

    impl Source for Fake {
        fn snapshot(&mut self) -> Result<Snapshot, TopError> {
            if self.0.is_empty() {
                return Err(TopError::Server {
                    location: "fake".into(),
                    message: "no more".into(),
                });
            }
            Ok(self.0.remove(0))
        }
    }

    fn plan(mode: Mode, iterations: u64) -> BatchPlan {
        BatchPlan {
            view: ViewOptions {
                mode,
                ..ViewOptions::default()
            },
            iterations: Some(iterations),
            delay: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_batch_run_prints_each_refresh_with_rates_from_the_second_on() {
        let mut source = Fake(vec![sample(3_000, [0, 0, 0, 300])]);
        let mut out = Vec::new();
        let mut slept = Vec::new();
        run(
            &mut source,
            sample(0, [0, 0, 0, 0]),
            &plan(Mode::Region, 2),
            &mut out,
            &mut |d| slept.push(d),
        )
        .unwrap();
        assert_eq!(slept, [Duration::from_secs(3)]);
        let text = String::from_utf8(out).unwrap();
        let refreshes: Vec<&str> = text.split("basalt top ").skip(1).collect();
        assert_eq!(refreshes.len(), 2);
        let rows: Vec<&str> = refreshes[1]
            .lines()
            .skip_while(|l| !l.starts_with("NAMESPACE"))
            .skip(1)
            .filter(|l| !l.is_empty())
            .collect();
        assert!(rows[0].contains(" t2 "), "{}", refreshes[1]);
        assert!(rows[0].contains("150.0"), "{}", rows[0]);
        assert_eq!(rows.len(), 4);
        assert!(refreshes[1].contains("Mode: region; sort: #REQ/S descending"));
    }

    #[test]
    fn a_failed_refresh_ends_the_run_with_its_error() {
        let mut source = Fake(Vec::new());
        let mut out = Vec::new();
        let e = run(
            &mut source,
            sample(0, [0, 0, 0, 0]),
            &plan(Mode::Table, 3),
            &mut out,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("no more"), "{e}");
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("NAMESPACE  TABLE  #REGION"));
    }

    #[test]
    fn columns_line_up_with_numbers_right_aligned() {
        let snap = sample(0, [0, 0, 0, 0]);
        let view = build_view(None, &snap, &plan(Mode::Table, 1).view);
        let text = table(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "NAMESPACE  TABLE  #REGION  #REQ/S  #READ/S  #FREAD/S  #WRITE/S     SF  #SF  MEMSTORE"
        );
        assert_eq!(
            lines[1],
            "default    t            3     0.0      0.0       0.0       0.0  3.0MB    6     3.0KB"
        );
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn an_empty_table_says_so() {
        let snap = crate::model::tests::snapshot(0, Vec::new());
        let view = build_view(None, &snap, &ViewOptions::default());
        assert!(table(&view).ends_with("(no rows)\n"));
    }
}
