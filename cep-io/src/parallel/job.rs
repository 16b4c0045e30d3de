//! Parse jobs: a block and what parsing it needs, run by whichever thread
//! takes the job (a parser thread, the reader while it waits, a shard with
//! nothing to run). One block's reader is reopened at the block's offset,
//! so blocks parse independently.

use std::io;
use std::sync::Arc;
use std::sync::mpsc;

use crossbeam_channel::Sender;

use crate::read::{InputPosition, Reader, StrCache};
use cep_core::{Event, Timestamp, Value};

use super::Route;
use super::block::{Block, Meta, Parsed, Pool};

/// A block waiting to be parsed, for any thread to [`run`](Self::run):
/// the reader's parser threads, the reader itself while it waits for its
/// next block, and any thread given [`ParallelReader::parse_jobs`](super::ParallelReader::parse_jobs).
pub struct ParseJob {
    pub(super) block: Block,
    pub(super) parser: Arc<dyn BlockParser>,
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

/// A [`Parser`] with its route's type erased: the one virtual call is per
/// block, where a job is run; the events of the block are parsed and routed
/// by the parser's monomorphised loop.
pub(super) trait BlockParser: Send + Sync {
    /// Parses `block` and hands it to the reader.
    fn run(&self, block: Block);
}

impl<R: Route> BlockParser for Parser<R> {
    fn run(&self, block: Block) {
        Parser::run(self, block);
    }
}

/// What parsing a block needs, shared by every thread that parses; generic
/// over the [`Route`] the blocks are split by, so that routing an event is
/// a static call inlined into the parse loop.
pub(super) struct Parser<R> {
    /// The reader the blocks continue (no input of its own).
    pub(super) template: Reader<io::Empty>,
    pub(super) free: Pool,
    pub(super) results: Sender<Parsed>,
    pub(super) bufs: mpsc::Sender<Vec<u8>>,
    pub(super) route: Option<R>,
    /// String caches kept from one block to the next, one taken per block
    /// being parsed (so as many as threads parse at once): a block's reader
    /// has an empty one of its own, and every block then looked up each of
    /// its distinct strings in the process's interner, under its lock (`cep
    /// run --threads 2` on W1 with 5,000 string keys took more CPU than
    /// `--threads 1`). Dropped with the reader, not kept by the threads
    /// that parsed.
    pub(super) strings: parking_lot::Mutex<Vec<StrCache>>,
}

impl<R: Route> Parser<R> {
    pub(super) fn run(&self, block: Block) {
        let mut p = self.free.take();
        p.reset(block.seq);
        let parts = self.route.as_ref().map(|route| route.parts().max(1));
        p.reserve(block.bytes.len(), self.template.schema().field_count(), parts);
        let at = InputPosition { byte: block.start, row: 0, line: 1 };
        let mut r = self.template.reopen(&block.bytes[..], at);
        r.set_observe(false);
        let mut strings = self.strings.lock().pop().unwrap_or_default();
        r.swap_strings(&mut strings);
        Parser::parse(&mut r, &mut p, self.route.as_ref());
        r.swap_strings(&mut strings);
        self.strings.lock().push(strings);
        let end = r.position();
        (p.rows, p.lines) = (end.row, end.line - 1);
        if block.cut_long {
            // Its lines, the one it ends inside included (the readers differ
            // on whether a line cut short by the end of their input counts).
            p.lines = memchr::memchr_iter(b'\n', &block.bytes).count() as u64 + 1;
        }
        let _ = self.bufs.send(block.bytes);
        let _ = self.results.send(p);
    }

    /// Parses a block into `p.events` or, with a route, into its parts
    /// (each event read into one event reused for the whole block, then
    /// appended to its part, flat).
    pub(super) fn parse(r: &mut Reader<&[u8]>, p: &mut Parsed, route: Option<&R>) {
        let partition = route.map(|route| (route, route.field() as usize, route.parts().max(1)));
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
                        Some((route, field, parts)) => {
                            let key = one.fields.get(field).unwrap_or(&Value::Null);
                            let part = route.part_of(key).min(parts - 1);
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
