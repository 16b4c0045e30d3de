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
//! threads also split each block's events by a [`Partition`] — a sharded
//! runtime's shard of each event — into one [`FlatEvents`] per part, and
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

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use crossbeam_channel::{Receiver, Sender, TryRecvError, select, unbounded};

use crate::read::{EventSource, Format, InputPosition, MAX_LINE_LEN, ReadError, ReadErrorKind, Reader, StrCache};
use cep_core::keys::shard_cached;
use cep_core::{Event, FieldId, FlatEvents, Timestamp, Value};

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

/// Parsed blocks handed back for reuse, the last handed back taken first:
/// the memory most recently read is rewritten, so the blocks that go round
/// are as few as are in use at once, not all that were ever made.
#[derive(Clone, Default)]
struct Pool(Arc<parking_lot::Mutex<Vec<Parsed>>>);

impl Pool {
    fn put(&self, p: Parsed) {
        self.0.lock().push(p);
    }

    /// The block handed back last, or a new one.
    fn take(&self) -> Parsed {
        self.0.lock().pop().unwrap_or_default()
    }
}

/// A run of whole records and where it starts.
struct Block {
    seq: u64,
    /// Byte offset of `bytes[0]` in the file.
    start: u64,
    bytes: Vec<u8>,
}

/// A block's events and errors, numbered from the block's start.
#[derive(Default)]
struct Parsed {
    seq: u64,
    /// The events; only the first `len` are this block's (the rest keep
    /// their field vectors for later blocks).
    events: Vec<Event>,
    len: usize,
    /// Per event, where it was and what followed it.
    meta: Vec<Meta>,
    /// Bad rows, each with the number of events before it.
    errors: Vec<(usize, ReadError)>,
    /// An error that ends the input, after all the rest.
    fatal: Option<ReadError>,
    /// Rows (good and bad) and physical lines in the block.
    rows: u64,
    lines: u64,
    /// Read [partitioned](ParallelReader::open_partitioned): the events
    /// are in `parts` (part `i`'s in input order) instead of `events`, and
    /// `order` gives each event's part, in input order.
    parts: Vec<FlatEvents>,
    order: Vec<u32>,
    /// Whether `ts` never decreases from one event to the next.
    sorted: bool,
}

impl Parsed {
    fn reset(&mut self, seq: u64) {
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
    /// part of it (which [`Parser::parse`] fills), so that a fresh `Parsed` does not
    /// grow while it is filled: each growth copies its vectors into new
    /// memory that the kernel first zeroes, and over the first blocks of a
    /// run that was half the page faults of `cep run --threads 2`.
    /// (Capacity beyond what a block fills is never touched, so it costs no
    /// memory.)
    fn reserve(&mut self, bytes: usize, fields: usize, partition: Option<&Partition>) {
        let rows = bytes / 16 + 1;
        // At most a value per byte and one per row (a CSV row has a comma
        // between two cells): with a wide JSON-lines schema, `rows * fields`
        // asked for gigabytes that no block fills.
        let values = rows.saturating_mul(fields).min(bytes + rows);
        self.meta.reserve(rows);
        if let Some(partition) = partition {
            self.order.reserve(rows);
            if self.parts.len() != partition.parts {
                self.parts.resize_with(partition.parts, FlatEvents::default);
            }
            for part in &mut self.parts {
                part.reserve(rows, values);
            }
        }
    }

    /// Reads the next event of part `part` into `e`; `cursor` is where the
    /// reading of that part stands (events and values read).
    fn read_part(&self, part: usize, cursor: &mut (usize, usize), e: &mut Event) {
        let (i, at) = cursor;
        *at = self.parts[part].read(*i, *at, e);
        *i += 1;
    }

    /// Whether the block can be handed on whole: with events, all in `ts`
    /// order, and no bad row.
    fn whole(&self) -> bool {
        self.len > 0 && self.sorted && self.errors.is_empty() && self.fatal.is_none()
    }
}

/// How the parser threads split each block's events into parts — for a
/// sharded runtime, one part per shard — so that a caller can hand a whole
/// block on, each part to its own consumer, without touching its events
/// ([`ParallelReader::take_block`]).
///
/// # Examples
/// ```
/// use cep_core::keys::shard_of;
/// use cep_io::parallel::Partition;
/// use cep_core::{Event, Sym, Value};
/// // By the key in field 0, as a sharded runtime routes it.
/// let by_key = Partition::by_field(2, 0);
/// let e = Event::new(Sym::new("Tick"), 0, 0, vec![Value::Int(7)]);
/// assert_eq!(by_key.part_of(&e), shard_of(&Value::Int(7), 2));
/// // By any rule.
/// let odd = Partition::new(2, |e: &Event| e.ts as usize % 2);
/// assert_eq!(odd.part_of(&Event::new(Sym::new("Tick"), 3, 0, vec![])), 1);
/// ```
#[derive(Clone)]
pub struct Partition {
    parts: usize,
    rule: Rule,
}

/// What a [`Partition`] splits by.
#[derive(Clone)]
enum Rule {
    /// [`shard_cached`] of a field (NULL when an event has no such field),
    /// computed in the parse loop: through a closure it was a call the
    /// compiler could not inline, 28 instructions an event on W5.
    Field(FieldId),
    Custom(Arc<dyn Fn(&Event) -> usize + Send + Sync>),
}

impl Partition {
    /// `parts` parts (at least one); `part_of` gives an event's part (a
    /// value of `parts` or more counts as the last part).
    pub fn new(parts: usize, part_of: impl Fn(&Event) -> usize + Send + Sync + 'static) -> Partition {
        Partition { parts: parts.max(1), rule: Rule::Custom(Arc::new(part_of)) }
    }

    /// `parts` parts (at least one) by the value of field `field`: an
    /// event goes to part [`shard_of`](cep_core::keys::shard_of) its value
    /// among `parts` (of NULL when it has no such field), which is where a
    /// sharded runtime with `parts` shards routes it.
    pub fn by_field(parts: usize, field: FieldId) -> Partition {
        Partition { parts: parts.max(1), rule: Rule::Field(field) }
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// The part of `e`, below [`parts`](Self::parts).
    #[inline(always)]
    pub fn part_of(&self, e: &Event) -> usize {
        let part = match &self.rule {
            Rule::Field(f) => shard_cached(e.fields.get(*f as usize).unwrap_or(&Value::Null), self.parts),
            Rule::Custom(part_of) => part_of(e),
        };
        part.min(self.parts - 1)
    }
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("parts", &self.parts).finish_non_exhaustive()
    }
}

/// What [`ParallelReader::take_block`] shows its caller of the next block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The row number of its first row.
    pub first_row: u64,
    /// Its rows (all of them events: a block with a bad row is not offered).
    pub rows: u64,
}

/// A whole block of events split by a [`Partition`], taken from a
/// [`ParallelReader`]: shared (in an `Arc`) by the consumers of its parts,
/// and handed back to the parser threads for reuse when the last drops it.
pub struct PartedBlock {
    parsed: Parsed,
    /// The row number of the block's first row: the parts' rows count
    /// from the block's start.
    row_base: u64,
    free: Pool,
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

/// A whole block of events taken from a [`ParallelReader`] opened without
/// a partition ([`ParallelReader::take_events`]); its memory goes back to
/// the parser threads for reuse when dropped.
pub struct EventBlock {
    parsed: Parsed,
    free: Pool,
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
struct Meta {
    /// Its physical line (1 = the block's first).
    line: u64,
    /// The input's position after it: byte, rows of the block before it
    /// (and it), the line after it.
    after: InputPosition,
}

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
        ParallelReader::open_in_blocks(path, reader, at, threads, counter, EVENT_BLOCK, None)
    }

    /// [`open`](Self::open), the parser threads splitting each block of
    /// events in `ts` order (and without bad rows) by `partition`, so that
    /// [`take_block`](Self::take_block) can hand it on whole. Reading event
    /// by event gives what [`open`](Self::open) gives.
    pub fn open_partitioned<R: io::BufRead>(
        path: &std::path::Path,
        reader: &Reader<R>,
        at: InputPosition,
        threads: usize,
        counter: Option<Arc<AtomicU64>>,
        partition: Partition,
    ) -> io::Result<ParallelReader> {
        ParallelReader::open_in_blocks(path, reader, at, threads, counter, BLOCK, Some(partition))
    }

    /// [`open`](Self::open), reading `block` bytes at a time.
    fn open_in_blocks<R: io::BufRead>(
        path: &std::path::Path,
        reader: &Reader<R>,
        at: InputPosition,
        threads: usize,
        counter: Option<Arc<AtomicU64>>,
        block: usize,
        partition: Option<Partition>,
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
            partition,
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
    /// use cep_io::parallel::{ParallelReader, Partition};
    /// use cep_io::read::EventSource;
    /// use cep_core::Value;
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
    /// let odd = move |e: &cep_core::Event| matches!(e.fields[key], Value::Int(k) if k % 2 == 1) as usize;
    /// let mut rest =
    ///     ParallelReader::open_partitioned(&path, &head, head.position(), 2, None, Partition::new(2, odd)).unwrap();
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

/// What reads the file and cuts it into blocks of whole records, one at a
/// time, on the reader's own thread.
struct Cutter {
    file: File,
    name: String,
    format: Format,
    /// Where the next block starts, and its number (once the input has
    /// ended: the number of blocks, counting a read error's as one).
    at: u64,
    seq: u64,
    /// Bytes read after the last block's last record: the next one's start.
    carry: Vec<u8>,
    /// Whether the input (or a read error) has ended the blocks.
    ended: bool,
    /// Bytes read at a time.
    block: usize,
    parser: Arc<Parser>,
    work: Sender<ParseJob>,
    results: Sender<Parsed>,
    bufs: mpsc::Receiver<Vec<u8>>,
    counter: Option<Arc<AtomicU64>>,
}

impl Cutter {
    /// Reads the next block and queues it for a parser, unless the input
    /// has ended.
    fn cut(&mut self) {
        if self.ended {
            return;
        }
        let mut buf = self.bufs.try_recv().unwrap_or_default();
        buf.clear();
        buf.append(&mut self.carry);
        loop {
            let n = match read_more(&mut self.file, &mut buf, self.block) {
                Ok(n) => n,
                Err(e) => {
                    let mut p = Parsed::default();
                    p.reset(self.seq);
                    p.fatal = Some(ReadError {
                        file: self.name.clone(),
                        line: 1,
                        row: None,
                        message: format!("read error: {e}"),
                        kind: ReadErrorKind::Fatal,
                    });
                    let _ = self.results.send(p);
                    (self.seq, self.ended) = (self.seq + 1, true);
                    return;
                }
            };
            if let Some(c) = &self.counter {
                c.fetch_add(n as u64, Ordering::Relaxed);
            }
            if n == 0 {
                self.ended = true;
                break;
            }
            if let Some(cut) = last_record_end(&buf[..], self.format) {
                self.carry.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                break;
            }
            // A record longer than any line may be: the parser says so.
            if buf.len() > MAX_LINE_LEN + self.block {
                self.ended = true;
                break;
            }
        }
        if !buf.is_empty() {
            let len = buf.len() as u64;
            let block = Block { seq: self.seq, start: self.at, bytes: buf };
            let _ = self.work.send(ParseJob { block, parser: Arc::clone(&self.parser) });
            self.seq += 1;
            self.at += len;
        }
    }
}

/// Appends up to `n` bytes of `f` to `buf` (fewer only at the end of the
/// input); the bytes read. (Through `read_to_end`, which reads into the
/// vector's spare capacity without zeroing it first.)
fn read_more(f: &mut File, buf: &mut Vec<u8>, n: usize) -> io::Result<usize> {
    buf.reserve(n);
    f.take(n as u64).read_to_end(buf)
}

/// Where the last record that ends in `buf` ends (after its newline), if
/// one does; `buf` starts at a record's start. JSON lines end at every
/// newline; CSV records at newlines outside quoted fields.
fn last_record_end(buf: &[u8], format: Format) -> Option<usize> {
    match format {
        Format::Jsonl => Some(memchr::memrchr(b'\n', buf)? + 1),
        // Without a quote, every newline ends a record.
        Format::Csv if memchr::memchr(b'"', buf).is_none() => csv_cut(buf, memchr::memrchr(b'\n', buf)?),
        Format::Csv => csv_cut(buf, last_csv_record_end(buf)?),
    }
}

/// Where to cut CSV text whose last record ends at the newline at `nl`:
/// after it, but before the blank lines that end the text, so that they
/// begin the next block. (The `csv` parser skips blank lines and reports
/// the record after them on the first of them; a block beginning after
/// them would report it on its own line.)
fn csv_cut(buf: &[u8], nl: usize) -> Option<usize> {
    let mut cut = nl + 1;
    while cut >= 2 && buf[cut - 2] == b'\n' {
        cut -= 1;
    }
    (cut > 1).then_some(cut)
}

/// The last newline of `buf` outside a quoted field, following the CSV
/// rules the reader's parser follows: a quote opens a quoted field only at
/// a field's start, and within one a doubled quote stands for a quote.
fn last_csv_record_end(buf: &[u8]) -> Option<usize> {
    scan_csv(buf).0
}

/// The last newline of `buf` outside a quoted field (see
/// [`last_csv_record_end`]), and whether `buf` ends inside a quoted field.
pub(crate) fn scan_csv(buf: &[u8]) -> (Option<usize>, bool) {
    let mut last = None;
    let mut quoted = false;
    let mut field_start = true;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        if quoted {
            if b == b'"' {
                if buf.get(i + 1) == Some(&b'"') {
                    i += 1;
                } else {
                    quoted = false;
                }
            }
        } else {
            match b {
                b'"' if field_start => quoted = true,
                b'\n' => last = Some(i),
                _ => {}
            }
            // Not after a `\r`: the parser ends records at `\n` only, so a
            // lone `\r` is a character of its field, and a quote after it
            // is one too.
            field_start = matches!(b, b',' | b'\n');
        }
        i += 1;
    }
    (last, quoted)
}

/// A block waiting to be parsed, for any thread to [`run`](Self::run):
/// the reader's parser threads, the reader itself while it waits for its
/// next block, and any thread given [`ParallelReader::parse_jobs`].
pub struct ParseJob {
    block: Block,
    parser: Arc<Parser>,
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
struct Parser {
    /// The reader the blocks continue (no input of its own).
    template: Reader<io::Empty>,
    free: Pool,
    results: Sender<Parsed>,
    bufs: mpsc::Sender<Vec<u8>>,
    partition: Option<Partition>,
    /// String caches kept from one block to the next, one taken per block
    /// being parsed (so as many as threads parse at once): a block's reader
    /// has an empty one of its own, and every block then looked up each of
    /// its distinct strings in the process's interner, under its lock (`cep
    /// run --threads 2` on W1 with 5,000 string keys took more CPU than
    /// `--threads 1`). Dropped with the reader, not kept by the threads
    /// that parsed.
    strings: parking_lot::Mutex<Vec<StrCache>>,
}

impl Parser {
    fn run(&self, block: Block) {
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
    fn parse(r: &mut Reader<&[u8]>, p: &mut Parsed, partition: Option<&Partition>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::Value;
    use proptest::prelude::*;

    /// What a reader yields, with rows, lines and positions: `limit`
    /// items at most; whether it ended.
    fn take(src: &mut impl EventSource, limit: usize, got: &mut Vec<String>) -> bool {
        take_fields(src, limit, usize::MAX, got)
    }

    /// [`take`], showing only the first `width` fields of each event.
    fn take_fields(src: &mut impl EventSource, limit: usize, width: usize, got: &mut Vec<String>) -> bool {
        let mut e = Event::default();
        for _ in 0..limit {
            match src.next_event(&mut e) {
                Ok(true) => {
                    if e.fields.len() > width {
                        e.fields.truncate(width);
                        while e.fields.pop_if(|v| v.is_null()).is_some() {}
                    }
                    got.push(format!("{} {}", show(&e), at(src)))
                }
                Ok(false) => return true,
                Err(err) => {
                    got.push(format!("error {err} row {:?} {:?}", err.row, err.kind));
                    if !err.is_bad_row() {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// `text` read by one reader, and by a parallel reader (in blocks of
    /// `block` bytes on `threads` threads) after `skip` items of a plain
    /// one. The parallel reader keeps only the fields the plain one knew
    /// when it opened it (`Reader::fix_fields`), so only those of the one
    /// reader's events are shown.
    fn both(text: &str, format: Format, skip: usize, block: usize, threads: usize) -> (Vec<String>, Vec<String>) {
        let name = format!("cep-parallel-{}-{:?}.txt", std::process::id(), std::thread::current().id());
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).unwrap();
        // What was read, and the fields known when the parallel reader
        // opened.
        let read = |skip: Option<usize>, width: usize| -> (Vec<String>, usize) {
            let src = std::io::BufReader::new(File::open(&path).unwrap());
            let mut head = match Reader::new(src, "t", format) {
                Ok(r) => r,
                Err(e) => return (vec![format!("open {e}")], usize::MAX),
            };
            let mut got = Vec::new();
            let ended = take_fields(&mut head, skip.unwrap_or(usize::MAX), width, &mut got);
            let known = head.schema().field_count();
            if !ended {
                let at = head.position();
                let mut rest = ParallelReader::open_in_blocks(&path, &head, at, threads, None, block, None).unwrap();
                take_fields(&mut rest, usize::MAX, width, &mut got);
                got.push(format!("rows {}", rest.rows()));
                (got, known)
            } else {
                got.push(format!("rows {}", head.rows()));
                (got, usize::MAX)
            }
        };
        let (par, known) = read(Some(skip), usize::MAX);
        let (one, _) = read(None, known);
        std::fs::remove_file(&path).unwrap();
        (one, par)
    }

    /// An event as [`take`] shows it, without where the input stands.
    fn show(e: &Event) -> String {
        format!("row {} ts {} {:?} {:?}", e.row, e.ts, e.ty, e.fields)
    }

    /// Where `src` stands, as [`take`] shows it.
    fn at(src: &impl EventSource) -> String {
        format!("line {} at {:?}", src.last_line(), src.position())
    }

    /// Blocks parsed one after another share one string cache, which ends
    /// up with the keys of both (each block's reader alone starts with an
    /// empty one); and blocks of 64 bytes read through it read as one
    /// reader reads.
    #[test]
    fn parsers_keep_their_strings_across_blocks() {
        let rows: String = (0..200).map(|i| format!("{i},key{}\n", i % 40)).collect();
        let (one, par) = both(&format!("ts,key\n{rows}"), Format::Csv, 0, 64, 0);
        assert_eq!(one, par);
        assert!(par.len() > 200, "{par:?}");

        let head = Reader::new(&b"ts,key\n"[..], "t", Format::Csv).unwrap();
        let free = Pool::default();
        let (results, parsed) = unbounded();
        let (bufs, _bufs_rx) = mpsc::channel();
        let template = head.reopen(io::empty(), head.position());
        let parser = Parser { template, free, results, bufs, partition: None, strings: Default::default() };
        for seq in 0..2 {
            let rows: String = (0..20).map(|i| format!("{i},key{}\n", i + 20 * seq)).collect();
            parser.run(Block { seq, start: 7, bytes: rows.into_bytes() });
            assert_eq!(parsed.recv().unwrap().len, 20);
        }
        let caches = parser.strings.lock();
        assert_eq!(caches.len(), 1);
        assert_eq!(caches[0].len(), 40);
    }

    /// A partition by a field puts each event where `shard_of` puts its
    /// value (NULL when the event is too short for the field), whatever
    /// the number of parts and the kind of the value; a custom rule's part
    /// past the last counts as the last.
    #[test]
    fn parts_by_field_follow_shard_of() {
        use cep_core::Sym;
        use cep_core::keys::shard_of;
        let values = (0..300).map(|i| match i % 5 {
            0 => Value::Int(i * 7919 - 1000),
            1 => Value::str(&format!("key{i}")),
            2 => Value::Float(i as f64 / 3.0),
            3 => Value::Bool(i % 2 == 0),
            _ => Value::Null,
        });
        let mut seen = [[false; 3]; 4];
        for (i, v) in values.enumerate() {
            for parts in 1..=4 {
                let by = Partition::by_field(parts, 1);
                let e = Event::new(Sym::new("T"), 0, 0, vec![Value::Int(0), v]);
                let part = by.part_of(&e);
                assert_eq!(part, shard_of(&v, parts), "{v:?} among {parts}");
                seen[parts - 1][part.min(2)] = true;
                // Twice: the string's hash is then cached.
                assert_eq!(by.part_of(&e), part);
                let short = Event::new(Sym::new("T"), 0, i as u64, vec![v]);
                assert_eq!(by.part_of(&short), shard_of(&Value::Null, parts));
            }
        }
        // Keys spread over the parts.
        assert_eq!(seen, [[true, false, false], [true, true, false], [true, true, true], [true, true, true]]);
        assert_eq!(Partition::new(3, |_: &Event| 9).part_of(&Event::default()), 2);
    }

    /// A part for tests: by the debug text of the first field.
    fn test_partition(parts: usize) -> Partition {
        Partition::new(parts, move |e: &Event| e.fields.first().map_or(0, |v| format!("{v:?}").len() * 7) % parts)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Read partitioned (or not), taking whole the blocks `admit`
        /// picks (at random) with `take_block` (or `take_events`) and the
        /// rest event by event: the same events, rows and errors as one
        /// reader, the input standing where one reader's does after each
        /// block; each part holds its own events in input order.
        #[test]
        fn whole_blocks_read_as_one_reader(
            text in prop_oneof![csv_text_sorted(true), csv_text()],
            skip in 0usize..5,
            block in 1usize..200,
            threads in 0usize..4,
            helper: bool,
            parts in 1usize..4,
            picks in prop::collection::vec(any::<bool>(), 64),
            split: bool,
        ) {
            let path = std::env::temp_dir().join(format!("cep-parted-{}-{:?}.csv", std::process::id(), std::thread::current().id()));
            std::fs::write(&path, &text).unwrap();
            let open = || Reader::new(std::io::BufReader::new(File::open(&path).unwrap()), "t", Format::Csv).unwrap();
            // One reader: each event (or error) and where the input stands after it.
            let mut one = Vec::new();
            let mut plain = open();
            let mut e = Event::default();
            loop {
                match plain.next_event(&mut e) {
                    Ok(true) => one.push((show(&e), at(&plain))),
                    Ok(false) => break,
                    Err(err) => one.push((format!("error {err}"), String::new())),
                }
            }
            let mut head = open();
            let mut got = Vec::new();
            for _ in 0..skip {
                match head.next_event(&mut e) {
                    Ok(true) => got.push((show(&e), Some(at(&head)))),
                    Ok(false) => break,
                    Err(err) => got.push((format!("error {err}"), None)),
                }
            }
            let partition = test_partition(parts);
            // Split by the partition and taken with `take_block`, or not
            // split and taken with `take_events`.
            let mut rest = ParallelReader::open_in_blocks(&path, &head, head.position(), threads, None, block, split.then(|| partition.clone())).unwrap();
            // Another thread parsing blocks too, as a sharded runtime's
            // shards do (it stops when the reader is dropped).
            if helper {
                let jobs = rest.parse_jobs();
                std::thread::spawn(move || jobs.iter().for_each(ParseJob::run));
            }
            let mut pick = picks.iter().cycle();
            loop {
                if !split && let Some(b) = rest.take_events(|_| *pick.next().unwrap()) {
                    let mut shown: Vec<String> = b.events().iter().map(show).collect();
                    prop_assert!(b.events().windows(2).all(|w| w[0].row < w[1].row && w[0].ts <= w[1].ts));
                    let last = shown.pop();
                    got.extend(shown.into_iter().map(|e| (e, None)));
                    got.extend(last.map(|e| (e, Some(at(&rest)))));
                    continue;
                }
                if let Some(b) = rest.take_block(|_| *pick.next().unwrap()) {
                    let mut events = Vec::new();
                    for i in 0..b.parts() {
                        let mut rows = Vec::new();
                        for e in b.part(i).unpack_into(&mut events, b.row_base()) {
                            prop_assert_eq!(partition.part_of(e), i);
                            rows.push(e.row);
                        }
                        prop_assert!(rows.windows(2).all(|w| w[0] < w[1]));
                    }
                    let mut shown = Vec::new();
                    b.try_for_each_in_order(|e| {
                        shown.push(show(e));
                        Ok::<_, ()>(())
                    })
                    .unwrap();
                    prop_assert_eq!(shown.len(), b.len());
                    let last = shown.pop();
                    got.extend(shown.into_iter().map(|e| (e, None)));
                    got.extend(last.map(|e| (e, Some(at(&rest)))));
                    continue;
                }
                match rest.next_event(&mut e) {
                    Ok(true) => got.push((show(&e), Some(at(&rest)))),
                    Ok(false) => break,
                    Err(err) => {
                        got.push((format!("error {err}"), None));
                        if !err.is_bad_row() {
                            break;
                        }
                    }
                }
            }
            std::fs::remove_file(&path).unwrap();
            prop_assert_eq!(got.len(), one.len());
            for ((event, stands), (want, want_at)) in got.iter().zip(&one) {
                prop_assert_eq!(event, want);
                if let Some(stands) = stands {
                    prop_assert_eq!(stands, want_at);
                }
            }
        }
    }

    /// A CSV cell: plain, quoted with commas, newlines and doubled quotes,
    /// or a bad number in `ts`.
    fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0i64..50).prop_map(|n| n.to_string()),
            1 => "[a-c]{0,3}".prop_map(|s| s),
            1 => "[a-c,\n\"]{0,6}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
            1 => Just("x\"y".to_owned()),
            1 => Just("\r\"y".to_owned()),
        ]
    }

    fn csv_text() -> impl Strategy<Value = String> {
        csv_text_sorted(false)
    }

    /// [`csv_text`], with the numeric `ts` in order if `sorted`.
    fn csv_text_sorted(sorted: bool) -> impl Strategy<Value = String> {
        let row =
            (prop_oneof![9 => (0i64..1000).prop_map(|t| t.to_string()), 1 => Just("oops".to_owned())], cell(), cell());
        (prop::collection::vec(row, 0..60), any::<bool>(), any::<bool>()).prop_map(move |(mut rows, crlf, blank)| {
            if sorted {
                let mut ts: Vec<i64> = rows.iter().filter_map(|r| r.0.parse().ok()).collect();
                ts.sort_unstable();
                let mut ts = ts.into_iter();
                for r in rows.iter_mut().filter(|r| r.0 != "oops") {
                    r.0 = ts.next().expect("as many").to_string();
                }
            }
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut t = format!("ts,a,b{nl}");
            for (i, (ts, a, b)) in rows.iter().enumerate() {
                t.push_str(&format!("{ts},{a},{b}{nl}"));
                if blank && i % 7 == 3 {
                    t.push_str(nl);
                }
            }
            t
        })
    }

    fn jsonl_text() -> impl Strategy<Value = String> {
        let row = prop_oneof![
            8 => ((0i64..1000), "[a-c\n]{0,4}", "[stu]").prop_map(|(t, s, k)| format!("{{\"ts\":{t},\"{k}\":{}}}", serde_json::to_string(&s).unwrap())),
            1 => Just("{\"ts\":\"bad\"}".to_owned()),
            1 => Just("not json".to_owned()),
            1 => Just(String::new()),
        ];
        // With or without a byte order mark before the first line.
        (prop::collection::vec(row, 0..60), any::<bool>()).prop_map(|(rows, bom)| {
            let start = if bom { "\u{feff}" } else { "" };
            rows.iter().fold(start.to_owned(), |text, r| format!("{text}{r}\n"))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn parallel_csv_reads_as_one_reader(text in csv_text(), skip in 0usize..5, block in 1usize..200, threads in 0usize..4) {
            let (one, par) = both(&text, Format::Csv, skip, block, threads);
            prop_assert_eq!(one, par);
        }

        #[test]
        fn parallel_jsonl_reads_as_one_reader(text in jsonl_text(), skip in 0usize..5, block in 1usize..200, threads in 0usize..4) {
            let (one, par) = both(&text, Format::Jsonl, skip, block, threads);
            prop_assert_eq!(one, par);
        }
    }

    #[test]
    fn a_fatal_error_in_a_later_block_reads_as_one_reader() {
        // Line 7 is longer than the limit: fatal, after the rows before it.
        let text = "ts,a\n1,x\n2,y\n3,z\n4,w\n5,v\n6,0123456789012345678901234567890123456789\n7,u\n";
        let path = std::env::temp_dir().join(format!("cep-parallel-fatal-{}.csv", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let mut one = Vec::new();
        take(&mut Reader::with_max_line(text.as_bytes(), "t", Format::Csv, 30).unwrap(), usize::MAX, &mut one);
        for skip in [0, 1, 3] {
            let mut head = Reader::with_max_line(text.as_bytes(), "t", Format::Csv, 30).unwrap();
            let mut got = Vec::new();
            take(&mut head, skip, &mut got);
            for block in [1, 7, 64] {
                let mut par = got.clone();
                let mut rest =
                    ParallelReader::open_in_blocks(&path, &head, head.position(), 2, None, block, None).unwrap();
                take(&mut rest, usize::MAX, &mut par);
                assert_eq!(par, one, "skip {skip}, blocks of {block}");
            }
        }
        assert!(one.last().unwrap().contains("t:7:"), "{one:?}");
        std::fs::remove_file(&path).unwrap();
    }

    /// A reader that leaves its blocks to helpers ([`ParallelReader::set_patience`])
    /// reads what one reader reads, whether a helper thread parses them or
    /// nobody does (it then parses each itself after the patience).
    #[test]
    fn a_patient_reader_reads_as_one_reader_with_or_without_helpers() {
        let text: String =
            std::iter::once("ts,a\n".to_owned()).chain((0..400).map(|i| format!("{i},{}\n", i % 7))).collect();
        let path = std::env::temp_dir().join(format!("cep-parallel-patient-{}.csv", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let mut one = Vec::new();
        take(&mut Reader::new(text.as_bytes(), "t", Format::Csv).unwrap(), usize::MAX, &mut one);
        for helped in [false, true] {
            let head = Reader::new(text.as_bytes(), "t", Format::Csv).unwrap();
            let mut rest = ParallelReader::open_in_blocks(&path, &head, head.position(), 0, None, 64, None).unwrap();
            rest.set_patience(std::time::Duration::from_micros(100));
            let helper = helped.then(|| {
                let jobs = rest.parse_jobs();
                std::thread::spawn(move || {
                    while let Ok(job) = jobs.recv() {
                        job.run();
                    }
                })
            });
            let mut got = Vec::new();
            take(&mut rest, usize::MAX, &mut got);
            drop(rest);
            if let Some(h) = helper {
                h.join().unwrap();
            }
            assert_eq!(got, one, "helped: {helped}");
        }
        assert_eq!(one.len(), 400);
        std::fs::remove_file(&path).unwrap();
    }

    /// JSON lines after a byte order mark, read by the parallel reader
    /// from the start (its first block begins with the mark) and from
    /// later rows: what one reader gives, which ignores the mark.
    #[test]
    fn parallel_jsonl_after_a_bom_reads_as_one_reader() {
        let mut text = String::from("\u{feff}");
        for i in 0..50 {
            text.push_str(&format!("{{\"ts\":{i},\"type\":\"A\",\"x\":{i}}}\n"));
        }
        for skip in [0, 1, 7] {
            for (block, threads) in [(1, 0), (7, 2), (64, 1), (1 << 20, 2)] {
                let (one, par) = both(&text, Format::Jsonl, skip, block, threads);
                assert_eq!(one, par, "skip {skip}, blocks of {block}, {threads} threads");
                assert_eq!(one.len(), 51);
                assert!(one[0].starts_with("row 0 ts 0"), "{}", one[0]);
            }
        }
    }

    /// JSON lines that bring a new key per row: the parallel reader keeps
    /// the fields its opener knew, and drops the keys that are new (they
    /// have no name outside the block that would number them), so its
    /// events stay as narrow as those fields; each had been widened to all
    /// the keys before it in its block (`cep run` on 20,000 such rows: 2.1
    /// GB).
    #[test]
    fn parallel_jsonl_keeps_only_the_known_fields() {
        let text: String = (0..3000).map(|i| format!("{{\"ts\":{i},\"k{i}\":1,\"k1\":{i}}}\n")).collect();
        let path = std::env::temp_dir().join(format!("cep-parallel-keys-{}.jsonl", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let mut head = Reader::new(text.as_bytes(), "t", Format::Jsonl).unwrap();
        let mut e = Event::default();
        for _ in 0..3 {
            assert!(head.next_event(&mut e).unwrap());
        }
        // A field registered without being read (as a query's is) is kept.
        head.schema_mut().field("k2999");
        let known = head.schema().field_count();
        assert_eq!(known, 4);
        for threads in [0, 2] {
            let mut rest =
                ParallelReader::open_in_blocks(&path, &head, head.position(), threads, None, 4096, None).unwrap();
            let mut n = 3;
            while rest.next_event(&mut e).unwrap() {
                assert!(e.fields.len() <= known, "row {}: {} fields", e.row, e.fields.len());
                assert_eq!(e.get(1), Value::Int(n));
                assert_eq!(e.get(3), if n == 2999 { Value::Int(1) } else { Value::Null });
                n += 1;
            }
            assert_eq!(n, 3000);
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn csv_record_ends_follow_quotes() {
        assert_eq!(last_csv_record_end(b"1,\"a\nb\"\n2,c"), Some(7));
        assert_eq!(last_csv_record_end(b"1,\"a\nb"), None);
        // A quote inside an unquoted field is a character, not a quote.
        assert_eq!(last_csv_record_end(b"1,x\"y\n2"), Some(5));
        // A doubled quote in a quoted field.
        assert_eq!(last_csv_record_end(b"1,\"a\"\"\nb\"\n"), Some(9));
        // A quote after a lone `\r` is a character: the newline after it
        // ends the record, the one in the quoted field after does not.
        assert_eq!(last_csv_record_end(b"1,\r\"y\n2,\"a\nb"), Some(5));
    }
}
