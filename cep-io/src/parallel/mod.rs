//! [`ParallelReader`]: a CSV or JSON-lines file parsed on several threads,
//! its events and errors delivered in input order, numbered as one
//! [`Reader`] would number them.
//!
//! ```text
//! file --> the cutter, on the caller's thread: blocks of ~32 KiB (~256
//!          KiB when split by a partition, see below), each
//!          cut after the last record that ends in it (for CSV, a newline
//!          outside quotes), one more each time the caller is done with one
//!      --> parse jobs: each block parsed by a Reader reopened at the
//!          block's byte offset, rows and lines numbered from the block's start,
//!          on the parser threads, on the caller's while it waits, and on any
//!          thread that runs ParallelReader::parse_jobs
//!      --> the caller: blocks taken back in order, rows and lines renumbered
//! ```
//!
//! Parsing is most of the cost of reading (see docs/perf-log.md,
//! 2026-12-01, W5-cli), and a block can be parsed without
//! the ones before it once it is known where a record starts. Only the
//! cutter reads the whole file, with a scan for newlines (and, for CSV
//! blocks holding a quote, for quotes).
//!
//! The cutter runs on the caller's thread, not a thread of its own: it
//! reads a block each time the caller is done with one, so the blocks
//! ahead stay as many without a thread to wake per block. On two cores a
//! cutter thread of its own preempted the threads that parse and run the
//! queries; a parse job that cuts its own block under a lock was slower
//! too (see docs/perf-log.md, 2026-12-04, W5 through `cep run`).
//!
//! Who parses is open: a block is a [`ParseJob`] on a channel that the
//! reader's own parser threads (any number, even none) take from, and so
//! does the reader itself whenever it waits for its next block (at once, or
//! after a [patience](ParallelReader::set_patience) when other threads parse
//! for it), so it never waits long for a block nobody parses. A sharded
//! runtime's shards take from it too whenever they have no events to run
//! (`cep_runtime::ShardedRunner::help_parse`): with as many shards as
//! cores, the shards do all the parsing and no parser thread competes with
//! them for the cores.
//!
//! The blocks are read with the fields the reader it continues knew when it
//! was opened: for JSON lines, a key none of them names is checked but not
//! kept (`Reader::fix_fields`). A block's reader has a copy of the schema,
//! so the ids it gave new keys would be its own (the same id for different
//! keys in different blocks), which no caller could name; and every event
//! of a block whose rows each bring a new key would grow to the width of
//! all the keys before it (see docs/perf-log.md, 2026-12-02, JSON lines
//! with new keys).
//!
//! At most a few blocks are ahead of the caller (the cutter reads a block
//! when the caller has finished one), so memory stays
//! bounded whatever the speed of the caller. Blocks, parsed events and their
//! field vectors are recycled.
//!
//! # Blocks split by a partition
//!
//! Opened [partitioned](ParallelReader::open_partitioned), the parser
//! threads also split each block's events by a [`Route`] — a sharded
//! runtime's shard of each event — into one [`FlatEvents`](cep_core::FlatEvents) per part, and
//! [`ParallelReader::take_block`] hands a whole block on (in an `Arc`: each
//! part to its own consumer thread, the block back to the parsers when the
//! last is done with it). The caller then does nothing per event, where
//! handing each event to its shard was about a third of the CPU that
//! sharding added (see docs/perf-log.md, 2026-12-01, partitioned blocks).
//! Each event is parsed into one event reused for the whole block and then
//! copied flat into its part, not parsed into an event of its own: the
//! blocks wait in the shards' queues, and parsing into events whose field
//! vectors had last been read by another core made parsing itself twice as
//! slow. Reading event by event (the blocks a caller does not take) gives
//! what the unpartitioned reader gives.

mod block;
mod cut;
mod job;
mod route;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;

use crossbeam_channel::{Receiver, TryRecvError, select, unbounded};

use crate::read::{EventSource, InputPosition, ReadError, Reader};
use cep_core::Event;

pub use block::{BlockInfo, EventBlock, PartedBlock};
use block::{Meta, Parsed, Pool};
use cut::Cutter;
#[cfg(test)]
pub(crate) use cut::scan_csv;
pub use job::ParseJob;
use job::Parser;
use route::NoRoute;
pub use route::Route;

/// Bytes read at a time for blocks split by a partition
/// ([`ParallelReader::open_partitioned`]): a block is this much, up to its
/// last record. Each goes to every shard whole and costs each of them a
/// turn, so smaller blocks are slower (see docs/perf-log.md, 2026-12-04, W5
/// met).
pub const BLOCK: usize = 256 << 10;

/// Bytes read at a time for blocks read without a partition
/// ([`ParallelReader::open`]), by the one thread that takes every event. Smaller than [`BLOCK`]: a block's parsed
/// events (about 110 bytes each on W1, four times the text) pass through
/// that thread's cache, and several 256 KiB blocks' worth (several MB)
/// would push out the per-key state of the queries it runs. With 16 KiB,
/// the parser thread often waits for a block and the wake-ups cost more
/// than the cache gives back (see docs/perf-log.md, 2026-12-04, W5 met).
pub const EVENT_BLOCK: usize = 32 << 10;

/// A CSV or JSON-lines file read on several threads (see the
/// [module](self) docs); it yields what a [`Reader`] over the same bytes
/// would, in the same order, except that in JSON lines the values of keys
/// the opening reader's schema does not know are left out.
///
/// # Examples
/// ```
/// use cep_io::parallel::ParallelReader;
/// use cep_io::read::EventSource;
/// use cep_core::Event;
/// use cep_io::{Format, Reader};
///
/// let path = std::env::temp_dir().join(format!("cep-parallel-doc-{}.csv", std::process::id()));
/// let mut text = String::from("ts,price\n");
/// for i in 0..100_000 {
///     text.push_str(&format!("{i},{}\n", i % 7));
/// }
/// std::fs::write(&path, &text).unwrap();
///
/// // The header (and maybe a few rows) read by a plain reader…
/// let file = std::fs::File::open(&path).unwrap();
/// let head = Reader::new(std::io::BufReader::new(file), "t.csv", Format::Csv).unwrap();
/// // …and the rest on two threads, from where it stands.
/// let mut rest = ParallelReader::open(&path, &head, head.position(), 2, None).unwrap();
/// let mut e = Event::default();
/// let mut n = 0;
/// while rest.next_event(&mut e).unwrap() {
///     assert_eq!((e.row, e.ts), (n, n as i64));
///     n += 1;
/// }
/// assert_eq!(n, 100_000);
/// assert_eq!(rest.position().line, 100_002);
/// std::fs::remove_file(&path).unwrap();
/// ```
pub struct ParallelReader {
    file: String,
    results: Receiver<Parsed>,
    /// Blocks waiting for a parser: the reader parses one itself when it
    /// has waited `patience` for its next block.
    work: Receiver<ParseJob>,
    /// How long the reader waits for its next block before it parses one
    /// itself ([`set_patience`](Self::set_patience)); `None`: at once.
    patience: Option<std::time::Duration>,
    /// Blocks parsed ahead of their turn.
    ahead: BTreeMap<u64, Parsed>,
    /// The block being delivered, and how far (for a partitioned block,
    /// also per part: events and values read).
    current: Option<Parsed>,
    cursors: Vec<(usize, usize)>,
    next_event: usize,
    next_error: usize,
    /// The number of the next block to deliver.
    next_seq: u64,
    /// Rows and the physical line at the current block's start.
    row_base: u64,
    line_base: u64,
    position: InputPosition,
    last_line: u64,
    /// Parsed blocks handed back for reuse.
    free: Pool,
    /// Reads the file and cuts it into blocks, on the reader's thread.
    cutter: Cutter,
    failed: Option<ReadError>,
}

impl std::fmt::Debug for ParallelReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelReader").field("file", &self.file).field("position", &self.position).finish()
    }
}

impl ParallelReader {
    /// Reads `path` from `at` (a [position](Reader::position) of `reader`,
    /// which read the file up to there: its columns, schema and format go
    /// on) with `threads` parser threads, the reader cutting the file into
    /// blocks itself. The reader also parses a block itself whenever it waits
    /// for its next one, so `threads` may be 0 (the blocks are then parsed
    /// by the reader and by whatever threads run its
    /// [`parse_jobs`](Self::parse_jobs)). Bytes read are added to `counter`,
    /// if given.
    pub fn open<R: io::BufRead>(
        path: &std::path::Path,
        reader: &Reader<R>,
        at: InputPosition,
        threads: usize,
        counter: Option<Arc<AtomicU64>>,
    ) -> io::Result<ParallelReader> {
        ParallelReader::open_in_blocks::<R, NoRoute>(path, reader, at, threads, counter, EVENT_BLOCK, None)
    }

    /// [`open`](Self::open), the parser threads splitting each block of
    /// events in `ts` order (and without bad rows) by `route`, so that
    /// [`take_block`](Self::take_block) can hand it on whole. Reading event
    /// by event gives what [`open`](Self::open) gives.
    pub fn open_partitioned<R: io::BufRead, P: Route>(
        path: &std::path::Path,
        reader: &Reader<R>,
        at: InputPosition,
        threads: usize,
        counter: Option<Arc<AtomicU64>>,
        route: P,
    ) -> io::Result<ParallelReader> {
        ParallelReader::open_in_blocks(path, reader, at, threads, counter, BLOCK, Some(route))
    }

    /// [`open`](Self::open), reading `block` bytes at a time, split by
    /// `route` if given. Generic over the route so that the parser's loop
    /// is compiled for it (see [`Route`]).
    fn open_in_blocks<R: io::BufRead, P: Route>(
        path: &std::path::Path,
        reader: &Reader<R>,
        at: InputPosition,
        threads: usize,
        counter: Option<Arc<AtomicU64>>,
        block: usize,
        route: Option<P>,
    ) -> io::Result<ParallelReader> {
        let mut f = File::open(path)?;
        f.seek(SeekFrom::Start(at.byte))?;

        let (work_tx, work) = unbounded::<ParseJob>();
        let (results_tx, results) = unbounded::<Parsed>();
        let free = Pool::default();
        let (bufs_tx, bufs_rx) = mpsc::channel::<Vec<u8>>();
        // Blocks are read with the fields the reader knows now (see
        // `Reader::fix_fields`).
        let mut template = reader.reopen(io::empty(), at);
        template.fix_fields();
        let parser = Arc::new(Parser {
            template,
            free: free.clone(),
            results: results_tx.clone(),
            bufs: bufs_tx,
            route,
            strings: Default::default(),
        });
        for i in 0..threads {
            let jobs = work.clone();
            std::thread::Builder::new().name(format!("cep-parse-{i}")).spawn(move || {
                while let Ok(job) = jobs.recv() {
                    job.run();
                }
            })?;
        }
        let mut cutter = Cutter {
            file: f,
            name: reader.file().to_owned(),
            format: reader.format(),
            at: at.byte,
            seq: 0,
            carry: Vec::new(),
            ended: false,
            block,
            parser,
            work: work_tx,
            results: results_tx,
            bufs: bufs_rx,
            counter,
        };
        // Blocks ahead of the caller: enough to keep every parser busy.
        for _ in 0..2 * threads.max(2) + 1 {
            cutter.cut();
        }
        Ok(ParallelReader {
            file: reader.file().to_owned(),
            results,
            work,
            patience: None,
            ahead: BTreeMap::new(),
            current: None,
            cursors: Vec::new(),
            next_event: 0,
            next_error: 0,
            next_seq: 0,
            row_base: at.row,
            line_base: at.line,
            position: at,
            last_line: 0,
            free,
            cutter,
            failed: None,
        })
    }

    /// The blocks waiting for a parser, for threads that would otherwise
    /// wait (a sharded runtime's shards, say) to [run](ParseJob::run).
    pub fn parse_jobs(&self) -> Receiver<ParseJob> {
        self.work.clone()
    }

    /// Lets the threads that run [`parse_jobs`](Self::parse_jobs) parse
    /// the blocks: the reader, waiting for its next block, parses one
    /// itself only once it has waited `patience` (it does at once by
    /// default). For a reader whose caller only hands blocks on — a sharded
    /// runtime whose shards, as many as the cores, parse when they have
    /// nothing to run — the caller parsing too makes one busy thread more
    /// than there are cores. The patience bounds the wait should the
    /// helpers stop parsing (a shard that failed, say): the reader never
    /// waits for a block nobody parses for longer than that.
    ///
    /// `cep run --threads 2` on the 3 M-row W1 CSV, two cores, a patience
    /// of 200 µs against none, rounds alternating (medians): wall time
    /// 0.285 → 0.27 s over ten rounds (one thread 0.49 s), 0.29 → 0.28 s
    /// and CPU time 0.55 → 0.53 s over fifteen; a caller that never parsed
    /// gave 0.36 → 0.33 s in a slower hour (one thread 0.525 s).
    pub fn set_patience(&mut self, patience: std::time::Duration) {
        self.patience = Some(patience);
    }

    /// The next block in order, waiting for it; `None` at the end.
    fn next_block(&mut self) -> Option<Parsed> {
        loop {
            if let Some(p) = self.ahead.remove(&self.next_seq) {
                self.next_seq += 1;
                return Some(p);
            }
            if self.cutter.ended && self.next_seq == self.cutter.seq {
                return None;
            }
            // A parsed block if one is ready (or comes within the patience);
            // else parse one while waiting.
            let ready = match (self.results.try_recv(), self.patience) {
                (Err(TryRecvError::Empty), Some(patience)) => self.results.recv_timeout(patience).ok(),
                (ready, _) => ready.ok(),
            };
            let p = match ready {
                Some(p) => p,
                None => select! {
                    recv(self.results) -> p => p.ok()?,
                    recv(self.work) -> job => {
                        if let Ok(job) = job {
                            job.run();
                        }
                        continue;
                    }
                },
            };
            self.ahead.insert(p.seq, p);
        }
    }

    /// A block-relative error renumbered for the whole input.
    fn renumber(&self, mut e: ReadError) -> ReadError {
        e.line = self.line_base + e.line.saturating_sub(1);
        e.row = e.row.map(|r| r + self.row_base);
        e
    }
}

impl ParallelReader {
    /// The next block whole, if the reader was opened
    /// [partitioned](Self::open_partitioned), the input stands at a block's
    /// start (no event of the block read yet, or the block before read to
    /// its end), the block was split (its events are in `ts` order, none of
    /// its rows is bad) and `admit` takes it; the input then stands after
    /// its last event, as if all were read one by one. Otherwise `None`,
    /// and reading goes on event by event.
    ///
    /// # Examples
    /// ```
    /// use cep_io::parallel::{ParallelReader, Route};
    /// use cep_io::read::EventSource;
    /// use cep_core::{FieldId, Value};
    /// use cep_io::{Format, Reader};
    ///
    /// let path = std::env::temp_dir().join(format!("cep-take-block-doc-{}.csv", std::process::id()));
    /// let mut text = String::from("ts,key\n");
    /// for i in 0..1000 {
    ///     text.push_str(&format!("{i},{}\n", i % 3));
    /// }
    /// std::fs::write(&path, &text).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// let head = Reader::new(std::io::BufReader::new(file), "t.csv", Format::Csv).unwrap();
    /// let key = head.schema().lookup("key").unwrap() as usize;
    /// // Two parts: even keys and odd keys.
    /// struct Odd(FieldId);
    /// impl Route for Odd {
    ///     fn parts(&self) -> usize {
    ///         2
    ///     }
    ///     fn field(&self) -> FieldId {
    ///         self.0
    ///     }
    ///     fn part_of(&self, key: &Value) -> usize {
    ///         matches!(key, Value::Int(k) if k % 2 == 1) as usize
    ///     }
    /// }
    /// let odd = Odd(key as FieldId);
    /// let mut rest = ParallelReader::open_partitioned(&path, &head, head.position(), 2, None, odd).unwrap();
    /// let block = rest.take_block(|info| info.first_row == 0).expect("the whole file is one block");
    /// assert_eq!((block.len(), block.first_ts(), block.last_ts()), (1000, 0, 999));
    /// let mut odds = Vec::new();
    /// let odds = block.part(1).unpack_into(&mut odds, block.row_base());
    /// assert!(odds.iter().all(|e| e.fields[key] == Value::Int(1)));
    /// let mut rows = Vec::new();
    /// block
    ///     .try_for_each_in_order(|e| {
    ///         rows.push(e.row);
    ///         Ok::<_, ()>(())
    ///     })
    ///     .unwrap();
    /// assert_eq!(rows, (0..1000).collect::<Vec<u64>>());
    /// assert_eq!(rest.rows(), 1000);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn take_block(&mut self, admit: impl FnOnce(&BlockInfo) -> bool) -> Option<Arc<PartedBlock>> {
        let (parsed, row_base) = self.next_whole(true, admit)?;
        Some(Arc::new(PartedBlock { parsed, row_base, free: self.free.clone() }))
    }

    /// The next block's events whole, if the reader was opened without a
    /// partition and the block qualifies as for
    /// [`take_block`](Self::take_block); the input then stands after its
    /// last event. Otherwise `None`, and reading goes on event by event.
    ///
    /// The events are where the parser thread put them, their rows
    /// renumbered for the whole input: a caller that runs them as a batch
    /// takes them over without a copy or a swap each (`cep run --threads 2
    /// --parallel pipeline` on the 3 M-row W1 CSV: see the `cep_cli` crate's
    /// `split` module).
    ///
    /// # Examples
    /// ```
    /// use cep_io::parallel::ParallelReader;
    /// use cep_io::read::EventSource;
    /// use cep_io::{Format, Reader};
    ///
    /// let path = std::env::temp_dir().join(format!("cep-take-events-doc-{}.csv", std::process::id()));
    /// let mut text = String::from("ts,key\n");
    /// for i in 0..1000 {
    ///     text.push_str(&format!("{i},{}\n", i % 3));
    /// }
    /// std::fs::write(&path, &text).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// let head = Reader::new(std::io::BufReader::new(file), "t.csv", Format::Csv).unwrap();
    /// let mut rest = ParallelReader::open(&path, &head, head.position(), 1, None).unwrap();
    /// let block = rest.take_events(|info| info.first_row == 0).expect("the whole file is one block");
    /// let rows: Vec<u64> = block.events().iter().map(|e| e.row).collect();
    /// assert_eq!(rows, (0..1000).collect::<Vec<u64>>());
    /// assert_eq!(rest.rows(), 1000);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn take_events(&mut self, admit: impl FnOnce(&BlockInfo) -> bool) -> Option<EventBlock> {
        let (mut parsed, row_base) = self.next_whole(false, admit)?;
        for e in &mut parsed.events[..parsed.len] {
            e.row += row_base;
        }
        Some(EventBlock { parsed, free: self.free.clone() })
    }

    /// The next block, if it is whole, read `partitioned` or not as asked,
    /// and `admit` takes it, with the row number of its first row; the
    /// input then stands after it.
    fn next_whole(&mut self, partitioned: bool, admit: impl FnOnce(&BlockInfo) -> bool) -> Option<(Parsed, u64)> {
        if let Some(p) = &self.current {
            // Only a block read to its end (and without an error to report
            // after its last event) gives way to the next.
            if self.next_event < p.len || self.next_error < p.errors.len() || p.fatal.is_some() {
                return None;
            }
            self.finish_block();
        }
        if self.failed.is_some() {
            return None;
        }
        let p = self.next_block()?;
        let info = BlockInfo { first_row: self.row_base, rows: p.rows };
        if !p.whole() || p.parts.is_empty() == partitioned || !admit(&info) {
            self.start(p);
            return None;
        }
        self.stand_after(p.meta[p.len - 1]);
        let row_base = self.row_base;
        self.pass(&p);
        Some((p, row_base))
    }

    /// The input stands after the current block's event whose place is `m`.
    fn stand_after(&mut self, m: Meta) {
        self.last_line = self.line_base + m.line - 1;
        self.position = InputPosition {
            byte: m.after.byte,
            row: self.row_base + m.after.row,
            line: self.line_base + m.after.line - 1,
        };
    }

    /// Moves the row and line numbering past block `p`, done with, and
    /// cuts another block in its place. (Cutting it only when the reader
    /// next looks for a block, after the caller has handed this one on,
    /// measured the same.)
    fn pass(&mut self, p: &Parsed) {
        self.row_base += p.rows;
        self.line_base += p.lines;
        self.cutter.cut();
    }

    /// Ends the block being delivered: the next starts where it ends. Its
    /// fatal error, if it has one, is the reader's from now on.
    fn finish_block(&mut self) -> Option<ReadError> {
        let p = self.current.take().expect("a block");
        let fatal = p.fatal.clone().map(|e| self.renumber(e));
        self.pass(&p);
        self.free.put(p);
        if let Some(e) = &fatal {
            self.failed = Some(e.clone());
        }
        fatal
    }

    /// Starts delivering block `p` event by event.
    fn start(&mut self, p: Parsed) {
        (self.next_event, self.next_error) = (0, 0);
        self.cursors.clear();
        self.cursors.resize(p.parts.len(), (0, 0));
        self.current = Some(p);
    }
}

impl EventSource for ParallelReader {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        loop {
            let Some(p) = &mut self.current else {
                match self.next_block() {
                    Some(p) => {
                        self.start(p);
                        continue;
                    }
                    None => return Ok(false),
                }
            };
            if let Some((before, _)) = p.errors.get(self.next_error)
                && *before == self.next_event
            {
                let e = p.errors[self.next_error].1.clone();
                self.next_error += 1;
                let e = self.renumber(e);
                self.position.row = e.row.map_or(self.position.row, |r| r + 1);
                return Err(e);
            }
            if self.next_event < p.len {
                let k = self.next_event;
                self.next_event += 1;
                if p.order.is_empty() {
                    std::mem::swap(event, &mut p.events[k]);
                } else {
                    let part = p.order[k] as usize;
                    p.read_part(part, &mut self.cursors[part], event);
                }
                let m = p.meta[k];
                event.row += self.row_base;
                self.stand_after(m);
                return Ok(true);
            }
            if let Some(e) = self.finish_block() {
                return Err(e);
            }
        }
    }

    fn last_line(&self) -> u64 {
        self.last_line
    }

    fn position(&self) -> InputPosition {
        self.position
    }

    fn rows(&self) -> u64 {
        self.position.row
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn take_block(&mut self, admit: &mut dyn FnMut(&BlockInfo) -> bool) -> Option<Arc<PartedBlock>> {
        ParallelReader::take_block(self, admit)
    }

    fn take_events(&mut self, admit: &mut dyn FnMut(&BlockInfo) -> bool) -> Option<EventBlock> {
        ParallelReader::take_events(self, admit)
    }
}
