//! The blocks the parallel reader passes around: the text a parse job
//! reads ([`Block`]), what it makes of it ([`Parsed`], recycled through a
//! [`Pool`]), and the forms a caller takes a whole block in
//! ([`PartedBlock`], [`EventBlock`]). Kept apart from the reader so that
//! the cutter, the parse jobs and the reader share one definition of a block.

use std::sync::Arc;

use crate::read::{InputPosition, ReadError};
use cep_core::{Event, FlatEvents, Timestamp};

/// Parsed blocks handed back for reuse, the last handed back taken first:
/// the memory most recently read is rewritten, so the blocks that go round
/// are as few as are in use at once, not all that were ever made.
#[derive(Clone, Default)]
pub(super) struct Pool(Arc<parking_lot::Mutex<Vec<Parsed>>>);

impl Pool {
    pub(super) fn put(&self, p: Parsed) {
        self.0.lock().push(p);
    }

    /// The block handed back last, or a new one.
    pub(super) fn take(&self) -> Parsed {
        self.0.lock().pop().unwrap_or_default()
    }
}

/// A run of whole records and where it starts.
pub(super) struct Block {
    pub(super) seq: u64,
    /// Byte offset of `bytes[0]` in the file.
    pub(super) start: u64,
    pub(super) bytes: Vec<u8>,
    /// Whether it ends inside a line too long for any block, whose rest
    /// (and newline) the cutter skipped: the line counts as one.
    pub(super) cut_long: bool,
}

/// A block's events and errors, numbered from the block's start.
#[derive(Default)]
pub(super) struct Parsed {
    pub(super) seq: u64,
    /// The events; only the first `len` are this block's (the rest keep
    /// their field vectors for later blocks).
    pub(super) events: Vec<Event>,
    pub(super) len: usize,
    /// Per event, where it was and what followed it.
    pub(super) meta: Vec<Meta>,
    /// Bad rows, each with the number of events before it.
    pub(super) errors: Vec<(usize, ReadError)>,
    /// An error that ends the input, after all the rest.
    pub(super) fatal: Option<ReadError>,
    /// Rows (good and bad) and physical lines in the block.
    pub(super) rows: u64,
    pub(super) lines: u64,
    /// Read [partitioned](super::ParallelReader::open_partitioned): the events
    /// are in `parts` (part `i`'s in input order) instead of `events`, and
    /// `order` gives each event's part, in input order.
    pub(super) parts: Vec<FlatEvents>,
    pub(super) order: Vec<u32>,
    /// Whether `ts` never decreases from one event to the next.
    pub(super) sorted: bool,
}

impl Parsed {
    pub(super) fn reset(&mut self, seq: u64) {
        self.seq = seq;
        self.len = 0;
        self.meta.clear();
        self.errors.clear();
        self.fatal = None;
        self.rows = 0;
        self.lines = 0;
        for part in &mut self.parts {
            part.clear();
        }
        self.order.clear();
        self.sorted = true;
    }

    /// Room for the events of a block of `bytes` bytes with `fields` fields
    /// each (rows of 16 bytes or more), and with a partition one part per
    /// part of it (which [`Parser::parse`](super::job::Parser::parse) fills), so that a fresh `Parsed` does not
    /// grow while it is filled: each growth copies its vectors into new
    /// memory that the kernel first zeroes, and over the first blocks of a
    /// run that was half the page faults of `cep run --threads 2`.
    /// (Capacity beyond what a block fills is never touched, so it costs no
    /// memory.)
    pub(super) fn reserve(&mut self, bytes: usize, fields: usize, parts: Option<usize>) {
        let rows = bytes / 16 + 1;
        // At most a value per byte and one per row (a CSV row has a comma
        // between two cells): with a wide JSON-lines schema, `rows * fields`
        // asked for gigabytes that no block fills.
        let values = rows.saturating_mul(fields).min(bytes + rows);
        self.meta.reserve(rows);
        if let Some(parts) = parts {
            self.order.reserve(rows);
            if self.parts.len() != parts {
                self.parts.resize_with(parts, FlatEvents::default);
            }
            for part in &mut self.parts {
                part.reserve(rows, values);
            }
        }
    }

    /// Reads the next event of part `part` into `e`; `cursor` is where the
    /// reading of that part stands (events and values read).
    pub(super) fn read_part(&self, part: usize, cursor: &mut (usize, usize), e: &mut Event) {
        let (i, at) = cursor;
        *at = self.parts[part].read(*i, *at, e);
        *i += 1;
    }

    /// Whether the block can be handed on whole: with events, all in `ts`
    /// order, and no bad row.
    pub(super) fn whole(&self) -> bool {
        self.len > 0 && self.sorted && self.errors.is_empty() && self.fatal.is_none()
    }
}

/// What [`ParallelReader::take_block`](super::ParallelReader::take_block) shows its caller of the next block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The row number of its first row.
    pub first_row: u64,
    /// Its rows (all of them events: a block with a bad row is not offered).
    pub rows: u64,
}

/// A whole block of events split by a [`Route`](super::Route), taken from a
/// [`ParallelReader`](super::ParallelReader): shared (in an `Arc`) by the consumers of its parts,
/// and handed back to the parser threads for reuse when the last drops it.
pub struct PartedBlock {
    pub(super) parsed: Parsed,
    /// The row number of the block's first row: the parts' rows count
    /// from the block's start.
    pub(super) row_base: u64,
    pub(super) free: Pool,
}

impl PartedBlock {
    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parsed.parts.len()
    }

    /// Part `i`'s events, in input order (so in `ts` order), their rows
    /// counted from [`row_base`](Self::row_base).
    pub fn part(&self, i: usize) -> &FlatEvents {
        &self.parsed.parts[i]
    }

    /// The row number of the block's first row, to add to the rows of
    /// [`part`](Self::part)'s events.
    pub fn row_base(&self) -> u64 {
        self.row_base
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.parsed.len
    }

    /// Whether it has no event (never, for a block taken).
    pub fn is_empty(&self) -> bool {
        self.parsed.len == 0
    }

    /// The first event's `ts` (the smallest).
    pub fn first_ts(&self) -> Timestamp {
        let first = self.parsed.order[0] as usize;
        self.parsed.parts[first].ts(0)
    }

    /// The last event's `ts` (the largest).
    pub fn last_ts(&self) -> Timestamp {
        let last = self.parsed.order[self.parsed.len - 1] as usize;
        let part = &self.parsed.parts[last];
        part.ts(part.len() - 1)
    }

    /// Calls `f` with each event in input order (rows numbered for the
    /// whole input), until it fails.
    pub fn try_for_each_in_order<E>(&self, mut f: impl FnMut(&Event) -> Result<(), E>) -> Result<(), E> {
        let mut cursors = vec![(0, 0); self.parts()];
        let mut e = Event::default();
        for &part in &self.parsed.order {
            self.parsed.read_part(part as usize, &mut cursors[part as usize], &mut e);
            e.row += self.row_base;
            f(&e)?;
        }
        Ok(())
    }
}

/// A whole block of events taken from a [`ParallelReader`](super::ParallelReader) opened without
/// a partition ([`ParallelReader::take_events`](super::ParallelReader::take_events)); its memory goes back to
/// the parser threads for reuse when dropped.
pub struct EventBlock {
    pub(super) parsed: Parsed,
    pub(super) free: Pool,
}

impl EventBlock {
    /// The events, in input order (so in `ts` order), their rows numbered
    /// for the whole input.
    pub fn events(&self) -> &[Event] {
        &self.parsed.events[..self.parsed.len]
    }
}

impl Drop for EventBlock {
    fn drop(&mut self) {
        self.free.put(std::mem::take(&mut self.parsed));
    }
}

impl std::fmt::Debug for EventBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBlock").field("len", &self.parsed.len).finish()
    }
}

impl Drop for PartedBlock {
    fn drop(&mut self) {
        self.free.put(std::mem::take(&mut self.parsed));
    }
}

impl std::fmt::Debug for PartedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartedBlock").field("parts", &self.parts()).field("len", &self.len()).finish()
    }
}

/// An event's place, relative to its block (the byte is absolute).
#[derive(Clone, Copy)]
pub(super) struct Meta {
    /// Its physical line (1 = the block's first).
    pub(super) line: u64,
    /// The input's position after it: byte, rows of the block before it
    /// (and it), the line after it.
    pub(super) after: InputPosition,
}
