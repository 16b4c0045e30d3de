//! Parse jobs: a block and what parsing it needs, run by whichever thread
//! takes the job (a parser thread, the reader while it waits, a shard with
//! nothing to run). One block's reader is reopened at the block's offset,
//! so blocks parse independently.

use std::io;
use std::sync::Arc;
use std::sync::mpsc;

use crossbeam_channel::Sender;

use crate::read::{InputPosition, Reader, StrCache};
use cep_core::{Event, Timestamp};

use super::Partition;
use super::block::{Block, Meta, Parsed, Pool};

/// A block waiting to be parsed, for any thread to [`run`](Self::run):
/// the reader's parser threads, the reader itself while it waits for its
/// next block, and any thread given [`ParallelReader::parse_jobs`](super::ParallelReader::parse_jobs).
pub struct ParseJob {
    pub(super) block: Block,
    pub(super) parser: Arc<Parser>,
}

impl ParseJob {
    /// Parses the block and hands it to the reader.
    pub fn run(self) {
        self.parser.run(self.block);
    }
}

impl std::fmt::Debug for ParseJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseJob").field("seq", &self.block.seq).field("start", &self.block.start).finish()
    }
}

/// What parsing a block needs, shared by every thread that parses.
pub(super) struct Parser {
    /// The reader the blocks continue (no input of its own).
    pub(super) template: Reader<io::Empty>,
    pub(super) free: Pool,
    pub(super) results: Sender<Parsed>,
    pub(super) bufs: mpsc::Sender<Vec<u8>>,
    pub(super) partition: Option<Partition>,
    /// String caches kept from one block to the next, one taken per block
    /// being parsed (so as many as threads parse at once): a block's reader
    /// has an empty one of its own, and every block then looked up each of
    /// its distinct strings in the process's interner, under its lock (`cep
    /// run --threads 2` on W1 with 5,000 string keys took more CPU than
    /// `--threads 1`). Dropped with the reader, not kept by the threads
    /// that parsed.
    pub(super) strings: parking_lot::Mutex<Vec<StrCache>>,
}

impl Parser {
    pub(super) fn run(&self, block: Block) {
        let mut p = self.free.take();
        p.reset(block.seq);
        p.reserve(block.bytes.len(), self.template.schema().field_count(), self.partition.as_ref());
        let at = InputPosition { byte: block.start, row: 0, line: 1 };
        let mut r = self.template.reopen(&block.bytes[..], at);
        r.set_observe(false);
        let mut strings = self.strings.lock().pop().unwrap_or_default();
        r.swap_strings(&mut strings);
        Parser::parse(&mut r, &mut p, self.partition.as_ref());
        r.swap_strings(&mut strings);
        self.strings.lock().push(strings);
        let end = r.position();
        (p.rows, p.lines) = (end.row, end.line - 1);
        let _ = self.bufs.send(block.bytes);
        let _ = self.results.send(p);
    }

    /// Parses a block into `p.events` or, with a partition, into its
    /// parts (each event read into one event reused for the whole block,
    /// then appended to its part, flat).
    pub(super) fn parse(r: &mut Reader<&[u8]>, p: &mut Parsed, partition: Option<&Partition>) {
        let mut one = Event::default();
        let mut last_ts = Timestamp::MIN;
        loop {
            if partition.is_none() && p.len == p.events.len() {
                p.events.push(Event::default());
            }
            let e = if partition.is_some() { &mut one } else { &mut p.events[p.len] };
            match r.next_event(e) {
                Ok(true) => {
                    p.meta.push(Meta { line: r.last_line(), after: r.position() });
                    let ts = match partition {
                        Some(partition) => {
                            let part = partition.part_of(&one);
                            p.parts[part].push(&one);
                            p.order.push(part as u32);
                            one.ts
                        }
                        None => p.events[p.len].ts,
                    };
                    p.sorted &= ts >= last_ts;
                    last_ts = ts;
                    p.len += 1;
                }
                Ok(false) => break,
                Err(e) if e.is_bad_row() => p.errors.push((p.len, e)),
                Err(e) => {
                    p.fatal = Some(e);
                    break;
                }
            }
        }
    }
}
