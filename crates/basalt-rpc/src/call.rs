//! One call being answered: its decoded parameter, the cells that came in
//! its cell block, and the cells its answer sends back in one (when the
//! connection asked for cell blocks) or inside the message (when not).

use std::collections::VecDeque;

use basalt::Database;
use basalt_types::{Cell, CellType};

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::proto;

/// A method of a service: its name on the wire and its handler.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    /// The name as `RequestHeader.method_name` carries it.
    pub name: &'static str,
    /// Decodes the parameter, does the work, encodes the answer.
    pub handler: fn(&mut Call<'_>, &[u8]) -> Result<Vec<u8>, RpcError>,
}

/// One call.
#[derive(Debug)]
pub struct Call<'a> {
    /// The server's shared state.
    pub ctx: &'a RpcContext,
    /// The database as the connection's caller sees it: every operation
    /// checked for that caller when authorization is on
    /// (`basalt::access`). Internal calls use `ctx.db`, which is trusted.
    pub db: &'a Database,
    /// The connection the call came on (scanners belong to it).
    pub connection: u64,
    /// Cells of the request's cell block, consumed in order by the
    /// messages that count them (`associated_cell_count`).
    request_cells: VecDeque<Cell>,
    /// `Some` when the connection uses cell blocks: the answer's cells, in
    /// the order the answer's messages count them.
    response_cells: Option<Vec<Cell>>,
}

impl<'a> Call<'a> {
    /// A call on `connection` with the request's cell block already
    /// decoded; `cell_blocks` says whether answers carry cells in one.
    pub fn new(
        ctx: &'a RpcContext,
        db: &'a Database,
        connection: u64,
        request_cells: Vec<Cell>,
        cell_blocks: bool,
    ) -> Call<'a> {
        Call {
            ctx,
            db,
            connection,
            request_cells: request_cells.into(),
            response_cells: cell_blocks.then(Vec::new),
        }
    }

    /// Decodes the parameter as `M`, naming it when it does not decode.
    pub fn decode<M: prost::Message + Default>(param: &[u8], what: &str) -> Result<M, RpcError> {
        M::decode(param).map_err(|e| RpcError::undecodable(what, e))
    }

    /// The next `count` cells of the request's cell block.
    pub fn take_request_cells(&mut self, count: usize) -> Result<Vec<Cell>, RpcError> {
        if count > self.request_cells.len() {
            return Err(RpcError::do_not_retry(format!(
                "a message counts {count} cells in the cell block, which has {} left",
                self.request_cells.len()
            )));
        }
        Ok(self.request_cells.drain(..count).collect())
    }

    /// Cells of the request's cell block no message has counted yet.
    pub fn request_cells_left(&self) -> usize {
        self.request_cells.len()
    }

    /// True when the answer's cells go in a cell block.
    pub fn uses_cell_blocks(&self) -> bool {
        self.response_cells.is_some()
    }

    /// A `Result` of `cells`: inside the message, or counted and appended
    /// to the answer's cell block.
    pub fn result(&mut self, cells: Vec<Cell>, partial: bool) -> proto::client::Result {
        let partial = partial.then_some(true);
        match &mut self.response_cells {
            Some(block) => {
                let count = i32::try_from(cells.len()).unwrap_or(i32::MAX);
                block.extend(cells);
                proto::client::Result {
                    associated_cell_count: Some(count),
                    partial,
                    ..Default::default()
                }
            }
            None => proto::client::Result {
                cell: cells.iter().map(cell_to_proto).collect(),
                partial,
                ..Default::default()
            },
        }
    }

    /// Appends cells to the answer's cell block without a `Result` (scan
    /// answers count them in `cells_per_result`). Only called when
    /// [`Call::uses_cell_blocks`].
    pub fn push_response_cells(&mut self, cells: Vec<Cell>) {
        if let Some(block) = &mut self.response_cells {
            block.extend(cells);
        }
    }

    /// The answer's cell block, if any.
    pub fn take_response_cells(&mut self) -> Vec<Cell> {
        self.response_cells.take().unwrap_or_default()
    }
}

/// A cell as `Cell.proto` carries it.
pub fn cell_to_proto(cell: &Cell) -> proto::hbase::Cell {
    proto::hbase::Cell {
        row: Some(cell.row.clone()),
        family: Some(cell.family.clone()),
        qualifier: Some(cell.qualifier.clone()),
        timestamp: Some(cell.timestamp as u64),
        cell_type: Some(cell.cell_type as i32),
        value: Some(cell.value.clone()),
        tags: None,
    }
}

/// A cell from `Cell.proto`; `None` fields read as empty, a missing
/// timestamp as "now" (the server's clock decides), an unknown type is an
/// error.
pub fn cell_from_proto(cell: &proto::hbase::Cell) -> Result<Cell, RpcError> {
    let code = cell.cell_type.unwrap_or(CellType::Put as i32);
    let cell_type = u8::try_from(code)
        .ok()
        .and_then(CellType::from_code)
        .ok_or_else(|| RpcError::do_not_retry(format!("unknown cell type {code}")))?;
    Ok(Cell {
        row: cell.row.clone().unwrap_or_default(),
        family: cell.family.clone().unwrap_or_default(),
        qualifier: cell.qualifier.clone().unwrap_or_default(),
        timestamp: cell
            .timestamp
            .map_or(basalt_types::LATEST_TIMESTAMP, |t| t as i64),
        cell_type,
        sequence_id: 0,
        value: cell.value.clone().unwrap_or_default(),
        ttl_millis: None,
    })
}

/// Encodes an answer message.
pub fn encode<M: prost::Message>(message: &M) -> Vec<u8> {
    message.encode_to_vec()
}
