//! What a Thrift scanner carries between calls, and reading its rows into
//! answers.
//!
//! The scanners themselves live in the gateways' one table
//! (`basalt::gateways::scanners`): random 32-bit ids bound to the
//! connection that opened them (another connection that learns or guesses
//! an id is told it is invalid), released when that connection goes away,
//! expired after the lease (HBase: 60 s) without being used. Thrift1 and
//! Thrift2 servers each keep one such table.

use std::time::Duration;

use basalt::gateways::scanners::ScannerTable;

/// The open scanners of one Thrift server.
pub(crate) type Scanners = ScannerTable<i32, ThriftScan>;

/// One open Thrift scanner's state.
#[derive(Debug)]
pub(crate) struct ThriftScan {
    /// Results carry `sortedColumns` instead of the column map.
    pub sorted: bool,
    /// The engine's scanner; `None` once it has run out of rows.
    pub rows: Option<basalt::Scanner>,
}

impl ThriftScan {
    /// A scanner over `rows`.
    pub(crate) fn new(rows: basalt::Scanner, sorted: bool) -> Self {
        ThriftScan {
            sorted,
            rows: Some(rows),
        }
    }

    /// The next rows with cells (see [`take_rows`]). Both gateways'
    /// "next rows" calls read through this.
    pub(crate) fn next_rows(
        &mut self,
        rows: usize,
        limits: AnswerLimits,
    ) -> Result<Vec<basalt::RowResult>, basalt::Error> {
        take_rows(&mut self.rows, rows, limits)
    }
}

/// How large one answer of rows may grow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerLimits {
    /// Soft cap on the cell bytes of one answer (`max_answer_bytes`, and at
    /// most half the frame limit): fewer rows than asked come back rather
    /// than a reply over it.
    pub max_bytes: usize,
    /// How long an answer waits for room in the process's answer budget
    /// before the call fails as busy.
    pub patience: Duration,
}

/// Counts a row's share of the answer being built in the call's answer
/// room (see `basalt::guard::count_answer`); returns the row's bytes, what
/// `max_answer_bytes` counts.
pub(crate) fn count_row(result: &basalt::RowResult) -> usize {
    let bytes = result
        .cells
        .iter()
        .map(|c| c.value.len() + c.qualifier.len() + c.family.len() + 16)
        .sum::<usize>();
    basalt::guard::count_answer(basalt::guard::answer_estimate(bytes, result.cells.len()));
    bytes
}

/// Before a read of several rows: room in the answer budget, waiting while
/// the budget is full (as a scanner answer does before its first row). The
/// rows are then answered whole, each counted.
pub(crate) fn room_for_rows(limits: AnswerLimits) -> Result<(), basalt::Error> {
    basalt::guard::take_answer_room(FIRST_ROOM, limits.patience)
        .map_err(|full| basalt::Error::TimedOut(full.to_string()))
}

/// Room an answer takes in the answer budget before its first row is read:
/// enough for an ordinary answer, so a full budget holds the call back
/// before it reads anything.
const FIRST_ROOM: usize = 64 * 1024;

/// The next rows with cells of `state`'s scanner, at most `rows` of them
/// and stopping once about `limits.max_bytes` of cells are collected (so a
/// reply stays under the frame limit), or once the process's answer budget
/// is full and some rows are collected; fewer (or none) once the scanner
/// runs out, which (as an error does) leaves `state` empty. A call stopped
/// by its time budget answers the rows it has, or fails with nothing,
/// leaving the scanner where it stopped. Registered scanners and Thrift2's
/// one-call `getScannerResults` share it.
pub(crate) fn take_rows(
    state: &mut Option<basalt::Scanner>,
    rows: usize,
    limits: AnswerLimits,
) -> Result<Vec<basalt::RowResult>, basalt::Error> {
    let budget = basalt::guard::answer_budget();
    // Held in the call's room while the answer is built, encoded and
    // written (the server holds the room until then).
    basalt::guard::take_answer_room(FIRST_ROOM, limits.patience)
        .map_err(|full| basalt::Error::TimedOut(full.to_string()))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < rows && bytes < limits.max_bytes {
        if !out.is_empty() && budget.in_use() >= budget.total() {
            break;
        }
        let Some(scanner) = state.as_mut() else {
            break;
        };
        match scanner.next() {
            Some(Ok(result)) => {
                bytes += count_row(&result);
                if !result.is_empty() {
                    out.push(result);
                }
            }
            Some(Err(e)) if e.kind() == basalt::ErrorKind::TimedOut && !out.is_empty() => break,
            // Stopped between rows: the scanner may go on later.
            Some(Err(e))
                if matches!(
                    e.kind(),
                    basalt::ErrorKind::TimedOut | basalt::ErrorKind::Cancelled
                ) =>
            {
                return Err(e)
            }
            Some(Err(e)) => {
                *state = None;
                return Err(e);
            }
            // Exhausted: later calls answer with no rows.
            None => *state = None,
        }
    }
    Ok(out)
}
