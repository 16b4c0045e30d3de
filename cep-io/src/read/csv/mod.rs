//! CSV: the per-record state ([`CsvState`]) that ties the record splitter,
//! the header's columns and cell typing together. The pieces live in their
//! own files: `header` (the columns), `cell` (typing cells into an event),
//! `fast` (the one-pass path for simple lines) and `records` (splitting the
//! byte stream into records).

pub(crate) mod cell;
pub(crate) mod fast;
pub(crate) mod header;
pub(crate) mod records;

use super::*;
use cell::*;
use fast::*;
pub(crate) use header::*;
use records::*;

pub(crate) struct CsvState<R: BufRead> {
    pub(crate) records: CsvRecords<R>,
    pub(crate) cols: Vec<Col>,
    pub(crate) names: Vec<Box<str>>,
    /// Whether a record that is a simple line is read in one pass
    /// ([`simple_record`]); off only in tests, to compare with the paths
    /// that read every record.
    pub(crate) simple: bool,
}

impl<R: BufRead> CsvState<R> {
    pub(crate) fn next(
        &mut self,
        event: &mut Event,
        schema: &mut Schema,
        strings: &mut StrCache,
        rows: &mut u64,
        default_ty: Sym,
    ) -> Result<bool, RawError> {
        let (cols, names) = (&self.cols, &self.names);
        if self.simple {
            let max = self.records.max_line();
            let read = |buf: &[u8]| simple_record(buf, max, cols, names, event, schema, strings, default_ty);
            if self.records.simple_line(read) {
                event.row = *rows;
                *rows += 1;
                return Ok(true);
            }
        }
        loop {
            let read = self.records.next(|bytes, cells, line, open| {
                // A blank line of a CRLF file.
                if let [(a, b)] = *cells
                    && &bytes[a..b] == b"\r"
                    && !open
                {
                    return None;
                }
                let row = *rows;
                *rows += 1;
                let filled = if open {
                    Err(unterminated_message(names, cells.len()))
                } else {
                    fill_event(cols, names, bytes, cells, event, schema, strings, default_ty)
                };
                Some(filled.map_err(|message| RawError { line, row: Some(row), message }).map(|()| event.row = row))
            });
            match read {
                Ok(Some(Some(filled))) => return filled.map(|()| true),
                Ok(Some(None)) => {}
                Ok(None) => return Ok(false),
                Err(RecordError::Fatal(line, message)) => return Err(RawError { line, row: None, message }),
                // A bad row: the line was skipped, and reading goes on.
                Err(RecordError::TooLong(line)) => {
                    let row = *rows;
                    *rows += 1;
                    let message = too_long_message(self.records.max_line());
                    return Err(RawError { line, row: Some(row), message });
                }
            }
        }
    }
}

/// The message for a record whose last cell, cell `cells` (1-based), is a
/// quoted field still open at the end of the input. It is a bad row, not an
/// event: the cell holds every line after its quote (rows the input meant
/// to be rows), and taking it would lose them silently.
#[cold]
pub(crate) fn unterminated_message(names: &[Box<str>], cells: usize) -> String {
    match names.get(cells.wrapping_sub(1)) {
        Some(name) => {
            format!("unterminated quoted field in column `{name}` (no closing quote before the end of the input)")
        }
        None => format!(
            "unterminated quoted field in cell {cells} of {} columns (no closing quote before the end of the input)",
            names.len()
        ),
    }
}
