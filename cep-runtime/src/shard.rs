//! [`ShardedRunner`]: the runtime on several threads. Keys are independent,
//! so each shard thread runs every query (and the level alerts) for the
//! keys that hash to it.
//!
//! ```text
//!          front Runner (watermark, reorder buffer, late events)
//! events --> released in ts order --> hash(key) --> batch of shard 0 ... shard n-1
//!                                     (flat batches, bounded channels)     |
//! output <----------------------------- JSON lines per batch <-------------+
//! ```
//!
//! The calling thread is the reader and the emitter: [`ShardedRunner::push`]
//! hands an event to the front, copies each event the front releases into
//! the batch of the shard its key hashes to ([`shard_of`]: for each query
//! its partition key, a query without a partition on shard 0; for the level
//! alerts the event's `key` field), with a mask of the queries it is for
//! there, and writes whatever output the shards have sent. Batches are
//! recycled: once its shard has dropped one, the reader copies events into
//! the events it kept, so the reader allocates nothing per event once warm.
//!
//! Batches go out (every shard's at once, each with the watermark — the
//! last released `ts`, or the caller's — in band after its events, so quiet
//! shards fire their deadlines too) when they hold 4,096 events, when the
//! caller moves the watermark, at the end, and, so that a slow stream's
//! matches are not held back until a batch fills, when the oldest unsent
//! event has waited [`ShardedRunner::set_flush_after`] (250 µs by default) of
//! wall time and the shards have taken every batch sent before (when they
//! have not, the system is busy and batches fill instead). The reader looks at the clock and at the shards' output every
//! few pushes: every 256 on a fast stream, every push on a slow one. A
//! caller that stops pushing calls [`ShardedRunner::sync`] first: the held
//! events go out at once (with the front's watermark, which a delay puts
//! ahead of the last released `ts`), and it returns once every shard has
//! run them and their lines are written (`cep run` does, whenever a
//! stream's next record would wait for input).
//!
//! Channels to the shards are bounded — 16 batches of 4,096 events each — so
//! a fast producer blocks instead of growing memory; they are that deep
//! because the reader and the shards share the cores: a shard the scheduler
//! sets aside for a few milliseconds must not stall the reader, and with
//! it the other shards. The shards send formatted output back over an
//! unbounded channel and never wait on the reader: no deadlock. A shard that
//! fails sends its error and stops; the caller gets it at the next send or
//! look, or from `finish`.
//!
//! Changes to a shard's queries or alerts ([`ShardedRunner::control`]) and
//! checkpoint barriers ([`ShardedRunner::checkpoint`]) travel in band too:
//! the batches so far go out first, so a change or a snapshot falls between
//! the same two events on every shard.
//!
//! Broadcasting each batch to every shard, each picking its own events, was
//! measured too (W5, 2 shards on 2 cores): it moves the hashing off the
//! reader, but every shard then reads and hashes every event, and it ran
//! 10–20 % slower than routing.
//!
//! A shard hands a batch's events (all of them, when every query is keyed
//! by one field; else each run of events bound for the same queries) to its
//! runner at once ([`Runner::push_batch_for`]): with one query, its engine
//! looks the partitions of the run up ahead, so their cache misses overlap
//! (W5: the two-thread runtime went from about 25 M to 31–34 M events/s).
//! The reader copies each event into an event of a batch sent before, which
//! keeps its field vector, and the shard runs the events where they are.
//!
//! A reader that parses on threads of its own can also split its blocks of
//! events by shard itself ([`ShardedRunner::partition`] for
//! [`ParallelReader::open_partitioned`](cep_io::parallel::ParallelReader::open_partitioned)):
//! [`ShardedRunner::push_block`] then sends the whole block to every shard,
//! each running its own part, and the calling thread does nothing per
//! event. A shard holds at most three blocks at a time (it says when it is
//! done with one), so that the parsers write into memory the caches still
//! hold. Such a reader's shards can do its parsing too
//! ([`ShardedRunner::help_parse`]): a shard with no message waiting parses
//! the next block instead of sleeping. With as many shards as cores and no
//! parser threads, no thread competes with the shards for the cores: `cep
//! run --threads 2` on the 3 M-row W1 CSV, two cores, made 850 context
//! switches instead of 1,800, and in three sets of rounds alternating with
//! two parser threads (each round also timing one thread and the file split
//! by key in two processes, the ceiling) the speed-up over one thread went
//! from 1.38× to 1.43×, 1.55× to 1.77× and 1.33× to 1.53× (medians; the
//! ceiling 1.45×, 1.99× and 1.58×).
//!
//! # The calling thread as a shard: [`ShardedRunner::balanced`]
//!
//! With [`ShardedRunner::new`], the calling thread orders, routes and
//! copies every event, and the shard threads run the queries: on two cores
//! with two shards, three busy threads share two cores. The balanced
//! runtime instead cuts the keys into more *slices* than threads (a slice:
//! the keys that [`shard_of`] puts there among as many; a runner of its
//! own) and lets the calling thread run some slices itself, as a shard
//! would ([`ShardedRunner::slices_for`]: two slices per thread); each such
//! slice gathers up to 64 of its events and runs them as one batch, at
//! every send and every look at the clock at the latest.
//! The calling thread starts with half a fair share: it also orders,
//! routes and copies every event. Which thread runs which slice then
//! follows the load, measured: the busy time of each thread and each
//! worker's cost per event predict what moving one slice would do to the
//! busiest thread, and a slice moves only when that gains at least 5 %
//! (the private `balance` module). A slice moves between threads whole,
//! with its runner and so with all its keys' state, in band:
//!
//! - given away: the runner goes down the worker's queue after the events
//!   sent before, and the slice's next events follow it;
//! - taken back: the worker sends the runner back once it has run what
//!   was sent before; until it comes, the slice's events wait on the calling
//!   thread, which then runs them and carries on.
//!
//! A worker gets its slices' events in one message per send (a bundle),
//! a batch per slice, each of which it hands to the slice's runner whole.
//! The events of a bundle's batches are allocated one after another when
//! the bundle is new, so that each batch lies in order in memory, as the
//! reader writes it (grown one event at a time while all slices' events
//! come, they lay scattered and the reader's copies missed the caches).
//! Checkpoints hold a state per slice, wherever it runs.
//!
//! Measured on W5 (rise_spike over the W1 ticks, no parsing), two cores,
//! nine alternating rounds (the example `w5_inline_split`, medians): one
//! thread 17.0 M events/s, [`ShardedRunner::new`] with two shard threads
//! 22.3 M (1.31×), the balanced runtime on two threads 24.8 M (1.46×). A
//! hand-written two-thread loop with one runner per thread (no front, no
//! moves, no watermarks; the same example) ran 1.5–1.9× in such rounds: what
//! is left is mostly the reader's work per event (the front, routing to a
//! slice, a batch per slice) and a runner per slice.
//!
//! Matches are the same multiset as on one thread; their order between
//! shards is not (within a key it is), unless the output is
//! [ordered](ShardedRunner::set_ordered_output): then each batch's lines
//! are merged, once every shard has run the batch, in the order one
//! runner writes them (the `order` module says how a line's place follows
//! from its own match or fire), byte for byte what one runner writes.

use std::io::{self, Write};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cep_core::{Event, FieldId, FlatCursor, Timestamp, Value};
use cep_io::parallel::{ParseJob, PartedBlock};
use cep_nfa::program::Program;
use crossbeam_channel::{
    Receiver, RecvError, RecvTimeoutError, Sender, TryRecvError, TrySendError, bounded, select, unbounded,
};
use std::sync::atomic::{AtomicU64, Ordering};

mod balance;
mod route;

pub use route::{HASH_VERSION, KeyRoute, int_hash, shard_cached, shard_of};
use route::{Routes, field_shard};

use self::balance::{Balance, Load, Step};
use crate::checkpoint::ShardedSnapshot;
use crate::order::{KeyedLines, Lines, Merger};
use crate::{
    JsonLines, LEVELS_BIT, MASK_QUERIES, PushError, QueryInfo, Runner, RunnerError, RunnerSnapshot, RunnerStats, Sink,
    Summary,
};

/// Events per batch (per shard).
const BATCH: usize = 4096;
/// Batches queued per shard before the reader waits. Deep (64 k events), so
/// that a shard the scheduler sets aside for a few milliseconds does not
/// stall the reader — and with it the other shards.
const IN_FLIGHT: usize = 16;
/// Blocks ([`ShardedRunner::push_block`]) a shard may hold, sent and not
/// yet done with (a block's memory goes back to the parsers when the slowest
/// shard is done with it): few, as a block's events stay where its parser thread wrote them
/// until the shards have run them, and more blocks ahead only spread the
/// events over more memory than the caches hold.
const BLOCKS_IN_FLIGHT: usize = 3;

/// How often a wait on the shards looks whether one has ended without a
/// word (see `ShardedRunner::take_until`).
const STOPPED_CHECK: Duration = Duration::from_millis(50);
/// Events of a parsed block's part a shard rebuilds at a time, each few run
/// before the next are rebuilt (a part's worth, thousands, would leave the
/// nearest cache before they ran).
const UNPACK_CHUNK: usize = 256;
/// The most pushes between two looks at the clock and at the output: a
/// look reads the clock and the output channel, so on a fast stream it is
/// rare (W5 on the balanced runtime, six sets of three alternating rounds:
/// 26.1 M events/s at most every 256 pushes against 24.7 M every 64). It
/// only comes this rarely when 256 pushes take under an eighth of the
/// flush wait (see `Clock`), so at most 31 µs late by default.
const MAX_CHECK_EVERY: u32 = 256;
/// Events a slice run on the calling thread gathers before it runs them
/// as one batch ([`Runner::push_batch_for`], whose lookahead overlaps the
/// cache misses of its events, and whose per-event path is shorter): few,
/// so that they are still in the first-level cache when run.
const HERE_RUN: usize = 64;
/// How long a partial batch may wait by default.
const FLUSH_AFTER: Duration = Duration::from_micros(250);

/// A slice's events in one [`Bundle`], with the queries each is for. The
/// events are copied into the events of a bundle sent before (once its
/// worker has dropped it), which keep their field vectors: filling a batch
/// allocates nothing once they have grown, and the worker runs the events
/// where they are. (Flat rows, [`FlatEvents`](cep_core::FlatEvents), as the
/// partitioned reader's blocks use, cost the shard a rebuild of every
/// event: W5 through 2 shards made 10 % more instructions on the shards and
/// 5 % more CPU time.)
#[derive(Debug, Default)]
struct Batch {
    /// The events: the first `len`, copied into events kept from before
    /// (each keeps its field vector, so that once grown nothing is
    /// allocated), which the shard runs where they are.
    events: Vec<Event>,
    len: usize,
    /// Per event, the queries (bit `i` for query `i`, [`LEVELS_BIT`]) it
    /// is for; empty when every event is for the queries of `mask`.
    masks: Vec<u64>,
    /// The queries of every event, when `masks` is empty: the routes are
    /// fixed while a batch fills (they change only between batches), and
    /// with every query keyed by one field each event is for all of them.
    mask: u64,
    /// An event was added past those kept (see [`Bundle::lay_out`]).
    grew: bool,
}

impl Batch {
    /// Appends `e`, for the queries of `mask`. (A batch is filled one way
    /// only: the routes change only right after a send, when the bundles
    /// are empty and no slice holds events on its way back, since changing
    /// them goes through `control` on every slice.)
    #[inline]
    fn push(&mut self, e: &Event, mask: u64) {
        debug_assert!(self.masks.len() == self.len, "a batch's events are routed one way");
        self.copy(e);
        self.masks.push(mask);
    }

    /// Copies `e` after the batch's events.
    #[inline(always)]
    fn copy(&mut self, e: &Event) {
        match self.events.get_mut(self.len) {
            Some(slot) => slot.clone_from(e),
            None => {
                self.events.push(e.clone());
                self.grew = true;
            }
        }
        self.len += 1;
    }

    /// Appends `e`, for the queries of `mask`, the same for every event of
    /// the batch (see [`mask`](Self::mask)).
    #[inline]
    fn push_for_all(&mut self, e: &Event, mask: u64) {
        debug_assert!(self.masks.is_empty(), "a batch's events are routed one way");
        self.copy(e);
        self.mask = mask;
    }

    /// Empties the batch, keeping its capacity.
    fn clear(&mut self) {
        self.len = 0;
        self.masks.clear();
    }

    /// Whether, as a part of a bundle, it should be laid out (again): it
    /// has no events yet, or it grew past those it kept.
    fn needs_layout(&self) -> bool {
        self.events.is_empty() || self.grew
    }

    /// Runs the events on `runner`, where they are: at once when all are
    /// for the same queries (no per-event masks), else run by run of events
    /// for the same queries.
    fn run_on(&self, runner: &mut Runner, sink: &mut impl Sink) -> Result<(), PushError> {
        let events = &self.events[..self.len];
        if self.masks.is_empty() && !events.is_empty() {
            runner.push_batch_for(events, self.mask, sink)?;
        }
        let mut start = 0;
        while start < self.masks.len() {
            let mask = self.masks[start];
            let len = self.masks[start..].iter().take_while(|&&m| m == mask).count();
            runner.push_batch_for(&events[start..start + len], mask, sink)?;
            start += len;
        }
        Ok(())
    }
}

/// What the reader sends a worker thread at once: per slice, its events
/// (none for the slices the worker does not run), then the watermark. One
/// message per worker and send, whatever the number of slices, so the
/// bounded queue counts sends.
#[derive(Debug, Default)]
struct Bundle {
    /// Per slice (by index), its events.
    parts: Vec<Batch>,
    /// The watermark to apply after the events (`Timestamp::MIN`: none).
    wm: Timestamp,
}

impl Bundle {
    /// Appends `e`, for slice `j` and the queries of `mask`, the same for
    /// every event (see [`Batch::mask`]).
    #[inline(always)]
    fn push_for_all(&mut self, e: &Event, j: usize, mask: u64) {
        self.parts[j].push_for_all(e, mask);
    }

    /// Appends `e`, for slice `j` and the queries of `mask`.
    #[inline]
    fn push(&mut self, e: &Event, j: usize, mask: u64) {
        self.parts[j].push(e, mask);
    }

    /// An empty bundle for `slices` slices.
    fn new(slices: usize) -> Bundle {
        Bundle { parts: (0..slices).map(|_| Batch::default()).collect(), wm: Timestamp::MIN }
    }

    /// Empties the bundle, keeping its capacity.
    fn clear(&mut self) {
        self.parts.iter_mut().for_each(Batch::clear);
        self.wm = Timestamp::MIN;
    }

    /// Whether a part of one of the slices `mine` says its worker runs
    /// should be laid out (again): it has no events yet, or it grew past
    /// those it kept.
    fn needs_layout(&self, mine: impl Fn(usize) -> bool) -> bool {
        self.parts.iter().enumerate().any(|(j, p)| mine(j) && p.needs_layout())
    }

    /// Lays the parts out anew: each part's events (as many as it held at
    /// most, and at least its share of a batch, with a quarter more),
    /// allocated one after the other with `width` fields each. So that a
    /// part's events lie in order in memory, as they are written: grown one
    /// by one while events of every slice come, they lay scattered, each
    /// copy into them missed the caches, and the calling thread copied into
    /// 8 parts at a third of the speed of 1 (46 against 13.5 ns an event).
    /// Only the parts of the slices `mine` says the bundle's worker runs
    /// now: the others stay as they are (empty, in a new bundle), since the
    /// worker gets none of their events; with a part for every slice, a
    /// worker of 4 threads' runtime kept 8 parts of events and filled 2. A
    /// slice given to the worker later grows its part as its events come,
    /// and the part is laid out when the bundle is next filled.
    ///
    /// The share laid out ahead of need is bounded by [`LAYOUT_BYTES`] of
    /// values: with 100,000 columns, 2,560 events of a part laid out ahead
    /// were 4 GB, and `--threads 2` on 300 such rows reached 20 GB.
    fn lay_out(&mut self, slices: usize, width: usize, mine: impl Fn(usize) -> bool) {
        self.parts.resize_with(slices, Batch::default);
        let share = (BATCH / slices).min(LAYOUT_BYTES / (width.max(1) * std::mem::size_of::<Value>()));
        // One template (each `Event::default()` interns its type name).
        let blank = Event { fields: vec![Value::Null; width], ..Event::default() };
        for (j, part) in self.parts.iter_mut().enumerate() {
            if !(mine(j) && part.needs_layout()) {
                continue;
            }
            let want = part.events.len().max(share) * 5 / 4;
            part.events = Vec::with_capacity(want);
            part.events.resize(want, blank.clone());
            part.grew = false;
        }
    }
}

/// The most memory of field values a bundle's part lays out before its
/// events come (see [`Bundle::lay_out`]): W1's share of a batch is 80 KB.
const LAYOUT_BYTES: usize = 1 << 20;

/// [`Batcher::worker_of`] for a slice run on the calling thread.
const HERE: u32 = u32::MAX;

/// Where a slice's runner is.
enum Slot {
    /// On the calling thread, with the slice's events gathered and not yet
    /// run (at most [`HERE_RUN`]; every send runs them first, so nothing
    /// else sees the runner behind the events routed to it).
    Here(Box<Runner>, Batch),
    /// On worker `w`, which gets the slice's events in bundles.
    There(usize),
    /// Asked back from its worker (see the `balance` module): the slice's events wait
    /// in the batch until the runner comes back, after the worker has run
    /// every bundle sent before.
    Coming(Batch),
}

/// What the reader sends a worker.
enum ToShard {
    /// Events, then the watermark.
    Bundle(Arc<Bundle>),
    /// A block split by [`ShardedRunner::partition`]: each slice's part,
    /// for the queries of the mask, then the watermark.
    Block(Arc<PartedBlock>, u64, Timestamp),
    /// A checkpoint barrier: reply with the state of each slice.
    Checkpoint,
    /// A change to a slice's runner, in band (queries or alerts added
    /// or removed while events flow).
    Control(usize, Control),
    /// Run slice `j` from now on.
    Adopt(usize, Box<Runner>),
    /// Send slice `j`'s runner back.
    Release(usize),
    /// Blocks to parse whenever the worker has nothing else to do.
    Help(Receiver<ParseJob>),
    /// From now on, send each step's lines with their keys
    /// ([`ShardedRunner::set_ordered_output`]), filling again the lines
    /// that come back on this channel once written.
    Ordered(Receiver<Lines>),
    /// Reply [`FromShard::Synced`] once everything sent before has run
    /// and its output has gone out ([`ShardedRunner::sync`]).
    Sync,
    /// The end of the run: with `input_ended`, the end of the input
    /// (every slice finishes); without, a stop (see
    /// [`ShardedRunner::stop`]). Either way, reply with each slice's counts.
    End { input_ended: bool },
}

/// A change applied to a shard's runner between two batches.
pub type Control = Box<dyn FnOnce(&mut Runner) -> Result<(), RunnerError> + Send>;

/// What a worker sends back.
enum FromShard {
    /// Output lines.
    Out(Vec<u8>),
    /// Worker `i`'s lines of its next step, with their keys (ordered
    /// output: one such message per bundle, block, checkpoint and end,
    /// even without a line).
    Lines(usize, Lines),
    /// Slice `j` has finished; its counts and statistics.
    Done(usize, Summary, RunnerStats),
    /// Slice `j`'s state at a checkpoint barrier.
    Snapshot(usize, Box<RunnerSnapshot>),
    /// Slice `j`'s runner, asked back.
    Released(usize, Box<Runner>),
    /// The worker stopped on an error.
    Failed(String),
    /// Worker `i` is done with a block (and has dropped it).
    BlockDone(usize),
    /// A worker has run everything sent before a [`ToShard::Sync`].
    Synced,
}

/// The runtime on `n` shard threads (see the [module](self) docs).
///
/// # Examples
/// ```
/// use cep_core::{Event, Schema, Sym, Value};
/// use cep_nfa::compile::{compile, Options};
/// use cep_runtime::{Runner, shard::ShardedRunner};
///
/// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
/// let mut schema = Schema::new();
/// schema.field("k");
/// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
/// let shards = (0..2).map(|_| runner(&mut schema.clone())).collect();
/// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), shards);
/// let mut out = Vec::new();
/// for (row, (ty, k)) in [("A", 1), ("A", 2), ("B", 1), ("B", 2)].into_iter().enumerate() {
///     let e = Event::new(Sym::new(ty), row as i64, row as u64, vec![Value::Int(k)]);
///     sharded.push(&e, &mut out).unwrap();
/// }
/// let summary = sharded.finish(&mut out).unwrap();
/// assert_eq!(summary.matches, [2]);
/// assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
/// ```
pub struct ShardedRunner {
    front: Runner,
    batches: Batcher,
    handles: Vec<Option<JoinHandle<()>>>,
    rx: Receiver<FromShard>,
    infos: Vec<QueryInfo>,
    /// The summaries of the shards that have finished.
    done: Vec<Summary>,
    /// The shards' statistics, as they finish.
    stats: Vec<(usize, RunnerStats)>,
    /// Shard states arrived at a checkpoint barrier.
    snapshots: Vec<(usize, RunnerSnapshot)>,
    failed: Option<String>,
    /// Output bytes written so far.
    written: u64,
    clock: Clock,
    /// Per shard, the blocks sent to it that it has not said it is done
    /// with.
    blocks_held: Vec<usize>,
    /// With ordered output, the shards' steps waiting to be merged.
    merger: Option<Merger>,
    /// Workers that have answered the last [`ToShard::Sync`].
    synced: usize,
}

impl std::fmt::Debug for ShardedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedRunner").field("shards", &self.batches.txs.len()).finish_non_exhaustive()
    }
}

impl ShardedRunner {
    /// A runtime whose `front` (no queries; its delay and late policy apply)
    /// orders events and whose `shards` (each with every query, and each
    /// with the level alerts of its keys) run one thread each. At most 63
    /// queries (a mask per event).
    ///
    /// # Panics
    /// With no shard, or more than 63 queries; or if the system cannot
    /// start a thread ([`try_new`](Self::try_new) returns that error).
    pub fn new(front: Runner, shards: Vec<Runner>) -> ShardedRunner {
        ShardedRunner::try_new(front, shards).expect("spawn a shard thread")
    }

    /// [`new`](Self::new), with the error of a thread the system could not
    /// start (too many threads for its limits, say) instead of a panic. The
    /// threads started before it stop.
    ///
    /// # Panics
    /// With no shard, or more than 63 queries.
    pub fn try_new(front: Runner, shards: Vec<Runner>) -> io::Result<ShardedRunner> {
        let n = shards.len();
        ShardedRunner::start(front, shards, (0..n).map(Some).collect(), n, None)
    }

    /// A runtime on `workers` threads besides the calling thread, over
    /// `slices` (each a runner with every query and the level alerts of its
    /// keys, a key's slice being [`shard_of`] its key among as many): the
    /// calling thread runs some slices itself, a few events at a time, and
    /// hands the others' events to the workers in batches. Which thread runs
    /// which slice follows the load: the calling thread also orders, routes
    /// and copies every event, so it starts with half a fair share of the
    /// slices; then, from each thread's measured busy time, a slice moves
    /// when that is predicted to make the busiest thread at least 5 %
    /// faster (see the [module](self) docs). Slices are whole runners, so a
    /// slice moves between threads with its state, in band, and the
    /// matches stay those of one thread.
    ///
    /// On two cores this runs W5 (rise_spike over the W1 ticks, no
    /// parsing) about a tenth faster than [`new`](Self::new) with two shard
    /// threads, where the calling thread is a third thread competing for
    /// the cores (nine rounds: 24.8 against 22.3 M events/s, one thread
    /// 17.0 M).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{Runner, shard::ShardedRunner};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    /// let mut schema = Schema::new();
    /// schema.field("k");
    /// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    /// let slices = (0..8).map(|_| runner(&mut schema.clone())).collect();
    /// let mut sharded = ShardedRunner::balanced(Runner::new(Vec::new()), slices, 1);
    /// let mut out = Vec::new();
    /// for row in 0..1000u64 {
    ///     let (ty, k) = if row % 2 == 0 { ("A", row / 2) } else { ("B", row / 2) };
    ///     let e = Event::new(Sym::new(ty), row as i64, row, vec![Value::Int(k as i64)]);
    ///     sharded.push(&e, &mut out).unwrap();
    /// }
    /// assert_eq!(sharded.finish(&mut out).unwrap().matches, [500]);
    /// assert_eq!(String::from_utf8(out).unwrap().lines().count(), 500);
    /// ```
    ///
    /// # Panics
    /// With no worker, fewer slices than workers, or more than 63 queries.
    pub fn balanced(front: Runner, slices: Vec<Runner>, workers: usize) -> ShardedRunner {
        // Half a fair share for the calling thread, the rest dealt out.
        let here = slices.len() / (2 * (workers + 1));
        ShardedRunner::split(front, slices, workers, here, true)
    }

    /// [`balanced`](Self::balanced), starting with the first `here` slices
    /// on the calling thread, and moving slices only if `follow` (for
    /// measurements and tests).
    #[doc(hidden)]
    pub fn split(front: Runner, slices: Vec<Runner>, workers: usize, here: usize, follow: bool) -> ShardedRunner {
        assert!(workers > 0 && slices.len() >= workers, "a balanced runtime needs a worker and a slice for each");
        let owners = (0..slices.len()).map(|j| (j >= here).then_some(j % workers)).collect();
        let mut balance = Balance::new();
        balance.follow = follow;
        ShardedRunner::start(front, slices, owners, workers, Some(balance)).expect("spawn a worker thread")
    }

    /// The slices [`balanced`](Self::balanced) uses for `threads` threads
    /// in all (the calling thread among them): two per thread. Each slice
    /// is a runner of its own, and a worker's bundles hold a part per
    /// slice, so more slices cost: W5 on two threads, in the same rounds,
    /// ran at 24.7 M events/s with 4 slices (one on the calling thread)
    /// and 22.2 M with 8 (two), and the same events on one thread split
    /// over 16 runners ran a fifth slower than on one.
    pub fn slices_for(threads: usize) -> usize {
        2 * threads.max(1)
    }

    /// Starts `workers` worker threads, each with the runners of the slices
    /// `owners` puts on it (`None`: on the calling thread). If one cannot
    /// be started, those started before it stop as their queues close.
    fn start(
        mut front: Runner,
        slices: Vec<Runner>,
        owners: Vec<Option<usize>>,
        workers: usize,
        balance: Option<Balance>,
    ) -> io::Result<ShardedRunner> {
        assert!(!slices.is_empty(), "a sharded runtime needs a shard");
        let keys = slices[0].partition_fields();
        assert!(keys.len() <= MASK_QUERIES, "a sharded runtime runs at most {MASK_QUERIES} queries");
        let level_key = slices[0].levels_key_field();
        let infos = slices[0].queries().to_vec();
        front.forward_released();
        let n = slices.len();
        let mut owned: Vec<Vec<Option<Box<Runner>>>> = (0..workers).map(|_| (0..n).map(|_| None).collect()).collect();
        let mut slots = Vec::with_capacity(n);
        for (runner, owner) in slices.into_iter().zip(owners) {
            match owner {
                Some(w) => {
                    owned[w][slots.len()] = Some(Box::new(runner));
                    slots.push(Slot::There(w));
                }
                None => slots.push(Slot::Here(Box::new(runner), Batch::default())),
            }
        }
        let (out_tx, rx) = unbounded();
        let busy: Arc<Vec<AtomicU64>> = Arc::new((0..workers).map(|_| AtomicU64::new(0)).collect());
        let mut txs = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for (i, runners) in owned.into_iter().enumerate() {
            let (tx, shard_rx) = bounded(IN_FLIGHT);
            let shard = Shard {
                me: i,
                runners,
                rx: shard_rx,
                out: out_tx.clone(),
                events: Vec::new(),
                busy: Arc::clone(&busy),
            };
            let handle = std::thread::Builder::new().name(format!("cep-shard-{i}")).spawn(move || shard.run())?;
            txs.push(tx);
            handles.push(Some(handle));
        }
        Ok(ShardedRunner {
            front,
            batches: Batcher::new(txs, slots, keys, level_key, balance, Meter::new(busy)),
            handles,
            rx,
            infos,
            done: Vec::new(),
            stats: Vec::new(),
            snapshots: Vec::new(),
            failed: None,
            written: 0,
            clock: Clock::new(FLUSH_AFTER),
            blocks_held: vec![0; workers],
            merger: None,
            synced: 0,
        })
    }

    /// From now on, writes the matches and fires in the order one
    /// [`Runner`] fed the same events writes them, byte for byte, instead
    /// of as each shard sends them (see the `order` module): each line
    /// gets its place in that order from its own match or fire, and the
    /// lines of each batch are written, merged, once every shard has run
    /// it. Call it before the first event. Not with
    /// [`balanced`](Self::balanced), whose calling thread writes the
    /// output of its own slices as it goes: an error.
    ///
    /// (Under the stack engine's batch construction, which one runner also
    /// emits batch by batch, the order is by each match's last event; the
    /// same multiset.)
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{JsonLines, Runner, shard::ShardedRunner};
    ///
    /// let q = "PATTERN SEQ(A a, NOT B b WITHIN 5) WHERE [k]";
    /// let mut schema = Schema::new();
    /// schema.field("k");
    /// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    /// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), (0..3).map(|_| runner(&mut schema.clone())).collect());
    /// sharded.set_ordered_output().unwrap();
    /// let (mut one, mut out, mut want) = (runner(&mut schema.clone()), Vec::new(), JsonLines::new(Vec::new()));
    /// for row in 0..40u64 {
    ///     let e = Event::new(Sym::new("A"), row as i64 / 4, row, vec![Value::Int(row as i64 % 7)]);
    ///     sharded.push(&e, &mut out).unwrap();
    ///     one.push(&e, &mut want).unwrap();
    /// }
    /// sharded.finish(&mut out).unwrap();
    /// one.finish(&mut want).unwrap();
    /// assert_eq!(out, want.into_inner().unwrap());
    /// ```
    pub fn set_ordered_output(&mut self) -> io::Result<()> {
        if self.batches.balance.is_some() {
            return Err(io::Error::other("ordered output needs every key on a shard thread (ShardedRunner::new)"));
        }
        let (merger, spares) = Merger::new(self.batches.txs.len());
        for (w, spare) in spares.into_iter().enumerate() {
            self.batches.deliver(w, ToShard::Ordered(spare))?;
        }
        self.merger = Some(merger);
        Ok(())
    }

    /// How long a partial batch may wait, in wall-clock time, before it is
    /// sent to the shards (default 250 µs; checked every few pushes, and only
    /// once the shards have taken every batch before): about the delay that
    /// batching adds to a match on a slow stream. Shorter sends more, smaller
    /// batches when events are slow; at a high rate batches fill first.
    pub fn set_flush_after(&mut self, wait: Duration) {
        self.clock.flush_after = wait;
    }

    /// The queries' names and variables.
    pub fn queries(&self) -> &[QueryInfo] {
        &self.infos
    }

    /// Output bytes written so far.
    pub fn output_bytes(&self) -> u64 {
        self.written
    }

    /// The front's watermark.
    pub fn watermark(&self) -> Timestamp {
        self.front.watermark()
    }

    /// Counts so far: events and late events from the front; matches and
    /// fires once the shards have finished.
    pub fn summary(&self) -> Summary {
        let mut s = self.front.summary().clone();
        s.matches = vec![0; self.infos.len()];
        for d in &self.done {
            for (m, n) in s.matches.iter_mut().zip(&d.matches) {
                *m += n;
            }
            s.fires += d.fires;
        }
        s
    }

    /// The number of shard (worker) threads.
    pub fn shards(&self) -> usize {
        self.handles.len()
    }

    /// The number of slices: keys go to slice [`shard_of`] their key among
    /// as many (with [`new`](Self::new), one per shard thread).
    pub fn slices(&self) -> usize {
        self.batches.slots.len()
    }

    /// For tests: from now on, at every send, move a slice at random (one
    /// run here to a worker, or one on a worker back here), by a generator
    /// seeded with `seed`. Only with [`balanced`](Self::balanced) (or
    /// [`split`](Self::split)); no effect otherwise.
    #[doc(hidden)]
    pub fn shuffle_slices(&mut self, seed: u64) {
        if let Some(b) = &mut self.batches.balance {
            b.chaos = Some(seed | 1);
        }
    }

    /// Slices moved between threads so far ([`balanced`](Self::balanced)).
    pub fn moves(&self) -> u64 {
        self.batches.balance.as_ref().map_or(0, |b| b.moves)
    }

    /// The front's statistics (events routed, late events, events held
    /// for reordering).
    pub fn front_stats(&self) -> RunnerStats {
        self.front.stats()
    }

    /// Each slice's statistics, in slice order (with [`new`](Self::new),
    /// one per shard), once the shards have finished (empty before
    /// [`finish`](Self::finish)).
    pub fn shard_stats(&self) -> Vec<RunnerStats> {
        let mut v = self.stats.clone();
        v.sort_by_key(|s| s.0);
        v.into_iter().map(|s| s.1).collect()
    }

    /// Processes one event: the front orders it; what it releases joins the
    /// batch, sent when full or when it has waited long enough; the shards'
    /// output so far is written to `out` every few pushes.
    #[inline]
    pub fn push(&mut self, e: &Event, out: &mut impl Write) -> Result<(), PushError> {
        // Straight to the batches when the front holds nothing back.
        let pushed = if self.front.forward_in_order(e.ts) {
            self.batches.route(e).map_err(PushError::Io)
        } else {
            self.front.push(e, &mut self.batches)
        };
        self.pushed(pushed, out)
    }

    /// After events were pushed: their error, if any, or a look at the
    /// clock and the output every few pushes.
    #[inline(always)]
    fn pushed(&mut self, pushed: Result<(), PushError>, out: &mut impl Write) -> Result<(), PushError> {
        self.after(pushed, out)?;
        if self.clock.tick() {
            self.look(out)?;
        }
        Ok(())
    }

    /// How to split events by shard the way this runtime routes them, when
    /// every query (and the level alerts) is keyed by one field: for
    /// [`ParallelReader::open_partitioned`](cep_io::parallel::ParallelReader::open_partitioned),
    /// whose blocks [`push_block`](Self::push_block) then hands to the shards
    /// whole. `None` when events may go to several shards.
    pub fn partition(&self) -> Option<KeyRoute> {
        let (field, _) = self.batches.routes.single()?;
        if self.batches.balance.is_some() {
            return None; // slices move between threads
        }
        let shards = self.handles.len();
        Some(KeyRoute::new(shards, field))
    }

    /// Processes a block of events split by [`partition`](Self::partition):
    /// each shard gets its part as the parser wrote it (nothing is copied on
    /// the calling thread) when the front forwards events as they come (no
    /// `max_delay`) and none of the block is late; otherwise its events are
    /// pushed one by one, in input order. Either way as if each had been
    /// [pushed](Self::push).
    pub fn push_block(&mut self, block: Arc<PartedBlock>, out: &mut impl Write) -> Result<(), PushError> {
        let whole = match self.batches.routes.single() {
            Some((_, mask))
                if block.parts() == self.handles.len() && self.batches.balance.is_none() && !block.is_empty() =>
            {
                Some(mask)
            }
            _ => None,
        };
        match whole {
            Some(mask) if self.front.forward_block(block.first_ts(), block.last_ts(), block.len() as u64) => {
                self.wait_for_blocks(BLOCKS_IN_FLIGHT - 1, out)?;
                self.blocks_held.iter_mut().for_each(|held| *held += 1);
                let sent = self.batches.send_block(block, mask).map_err(PushError::Io);
                self.pushed(sent, out)
            }
            _ => block.try_for_each_in_order(|e| self.push(e, out)),
        }
    }

    /// Waits until no shard holds more than `n` blocks, writing the output
    /// meanwhile.
    fn wait_for_blocks(&mut self, n: usize, out: &mut impl Write) -> Result<(), PushError> {
        // Each shard says when it is done with a block (`take`).
        self.take_until(out, |r| r.blocks_held.iter().all(|&held| held <= n))?;
        Ok(()) // a shard's error comes with the next send
    }

    /// Moves the watermark (see [`Runner::advance_watermark`]); every shard
    /// gets it at once.
    pub fn advance_watermark(&mut self, wm: Timestamp, out: &mut impl Write) -> Result<(), PushError> {
        let moved = self.front.advance_watermark(wm, &mut self.batches);
        self.after(moved, out)?;
        let sent = self.batches.send(wm);
        self.after(sent.map_err(PushError::Io), out)?;
        self.write_output(out)
    }

    /// Runs everything pushed so far and writes its output: the events the
    /// calling thread holds for a batch go out at once, and the call
    /// returns once every shard has run everything sent to it (and, with
    /// [ordered output](Self::set_ordered_output), every line is merged
    /// and written). Between pushes the runtime holds events for a batch,
    /// and their matches wait until the next push or look at the clock; a
    /// caller about to wait for input (a quiet stream) calls this first,
    /// so that no match waits with it. Events the front holds for
    /// reordering (a `max_delay`) stay held: only the watermark releases
    /// them.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{Runner, shard::ShardedRunner};
    ///
    /// let q = "QUERY pair PATTERN SEQ(A a, B b) WHERE [k]";
    /// let mut schema = Schema::new();
    /// schema.field("k");
    /// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    /// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), vec![runner(&mut schema.clone()), runner(&mut schema)]);
    /// sharded.set_flush_after(std::time::Duration::from_secs(3600));
    /// let mut out = Vec::new();
    /// sharded.push(&Event::new(Sym::new("A"), 1, 0, vec![Value::Int(7)]), &mut out).unwrap();
    /// sharded.push(&Event::new(Sym::new("B"), 2, 1, vec![Value::Int(7)]), &mut out).unwrap();
    /// assert!(out.is_empty(), "held for a batch");
    /// sharded.sync(&mut out).unwrap();
    /// assert!(String::from_utf8(out).unwrap().starts_with(r#"{"query":"pair","key":7,"start":1,"end":2"#));
    /// ```
    pub fn sync(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        // The front's watermark, not only the last released `ts`: with a
        // delay it is ahead, and one runner's engines would have fired the
        // deadlines it passed. (Every event released later is at or after
        // it: one before it is late.)
        let wm = self.batches.released_ts.max(self.front.watermark());
        if self.batches.len > 0 || wm > self.batches.sent_wm {
            let sent = self.batches.send(wm);
            self.after(sent.map_err(PushError::Io), out)?;
        }
        // (A send may ask a slice back.)
        self.settle(out)?;
        self.synced = 0;
        for w in 0..self.batches.txs.len() {
            let sent = self.batches.deliver(w, ToShard::Sync).map_err(PushError::Io);
            self.after(sent, out)?;
        }
        self.take_until(out, |r| r.synced == r.batches.txs.len())?;
        self.write_output(out)
    }

    /// An aligned checkpoint: every event released so far is sent, then a
    /// barrier to every shard; each shard answers with its state once it
    /// has processed everything before the barrier, and the output they
    /// sent before it is written to `out`. No event is sent meanwhile, so
    /// all states are at the same input position. With
    /// [`Runner::restore`] on the front and on shards built alike, and
    /// [`resume_released`](Self::resume_released), a new runtime continues
    /// from here.
    pub fn checkpoint(&mut self, out: &mut impl Write) -> io::Result<ShardedSnapshot> {
        let sent = self.batches.send(self.batches.released_ts).map_err(PushError::Io);
        self.after(sent, out).map_err(into_io)?;
        // (A send may ask a slice back.)
        self.settle(out).map_err(into_io)?;
        for tx in &self.batches.txs {
            if tx.send(ToShard::Checkpoint).is_err() {
                break; // the shard stopped; its error is on the output channel
            }
        }
        for (j, slot) in self.batches.slots.iter_mut().enumerate() {
            if let Slot::Here(runner, gathered) = slot {
                debug_assert_eq!(gathered.len, 0, "a send ran what the slice gathered");
                let snap = runner.snapshot().map_err(|e| io::Error::other(format!("checkpoint: {e}")))?;
                self.snapshots.push((j, snap));
            }
        }
        self.take_until(out, |r| r.snapshots.len() == r.slices())?;
        if let Some(why) = &self.failed {
            return Err(io::Error::other(why.clone()));
        }
        // Every match before the barrier is out, the calling thread's too.
        self.write_here(out)?;
        let mut snaps = std::mem::take(&mut self.snapshots);
        snaps.sort_by_key(|s| s.0);
        Ok(ShardedSnapshot {
            front: self.front.snapshot()?,
            shards: snaps.into_iter().map(|s| s.1).collect(),
            released: self.batches.released_ts,
        })
    }

    /// Has every shard parse blocks of a
    /// [`ParallelReader`](cep_io::parallel::ParallelReader) (its
    /// [`parse_jobs`](cep_io::parallel::ParallelReader::parse_jobs))
    /// whenever it has no events to run: with as many shards as cores, the
    /// shards can do all the parsing, with no parser threads of their own
    /// competing with them for the cores.
    ///
    /// # Examples
    /// ```
    /// use cep_io::parallel::ParallelReader;
    /// use cep_io::read::EventSource;
    /// use cep_core::Event;
    /// use cep_io::{Format, Reader};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{Runner, shard::ShardedRunner};
    ///
    /// let path = std::env::temp_dir().join(format!("cep-help-parse-doc-{}.csv", std::process::id()));
    /// let mut text = String::from("type,ts,k\n");
    /// for k in 0..500 {
    ///     text.push_str(&format!("A,{},{k}\nB,{},{k}\n", 2 * k, 2 * k + 1));
    /// }
    /// std::fs::write(&path, &text).unwrap();
    /// let head = Reader::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()), "t.csv", Format::Csv).unwrap();
    /// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    /// let runner = || Runner::new(compile(q, &mut head.schema().clone(), &Options::default()).unwrap().programs);
    /// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), vec![runner(), runner()]);
    /// // No parser threads: the shards (and the reader, while it waits)
    /// // parse the blocks.
    /// let partition = sharded.partition().expect("one partition key");
    /// let mut rest = ParallelReader::open_partitioned(&path, &head, head.position(), 0, None, partition).unwrap();
    /// sharded.help_parse(&rest.parse_jobs());
    /// let (mut out, mut e) = (Vec::new(), Event::default());
    /// loop {
    ///     if let Some(block) = rest.take_block(|_| true) {
    ///         sharded.push_block(block, &mut out).unwrap();
    ///     } else if rest.next_event(&mut e).unwrap() {
    ///         sharded.push(&e, &mut out).unwrap();
    ///     } else {
    ///         break;
    ///     }
    /// }
    /// assert_eq!(sharded.finish(&mut out).unwrap().matches, [500]);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn help_parse(&mut self, jobs: &Receiver<ParseJob>) {
        for tx in &self.batches.txs {
            // A shard that stopped has its error on the output channel.
            let _ = tx.send(ToShard::Help(jobs.clone()));
        }
    }

    /// Applies a change to slice `slice`'s runner (with [`new`](Self::new),
    /// shard `slice`'s), in band: after every event released so far and
    /// before any released later. An error it returns stops the shard and
    /// reaches the caller with the next push (on the calling thread's own
    /// slices, it is returned at once).
    pub fn control(&mut self, slice: usize, change: Control) -> Result<(), PushError> {
        self.batches.send(self.batches.released_ts)?;
        if matches!(self.batches.slots[slice], Slot::Coming(..)) {
            // No writer here: what comes meanwhile waits with the calling
            // thread's output, in the order it came.
            let (mut held, written) = (Vec::new(), self.written);
            self.settle(&mut held)?;
            self.written = written;
            held.extend_from_slice(self.batches.here.get_mut());
            *self.batches.here.get_mut() = held;
        }
        match &mut self.batches.slots[slice] {
            Slot::Here(runner, _) => change(runner).map_err(|why| PushError::Io(io::Error::other(why))),
            Slot::There(w) => {
                // A shard that stopped has its error on the output channel.
                let _ = self.batches.txs[*w].send(ToShard::Control(slice, change));
                Ok(())
            }
            Slot::Coming(..) => unreachable!("settled"),
        }
    }

    /// Waits until every slice asked back from a worker has come, writing
    /// the output meanwhile.
    fn settle(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        Ok(self.take_until(out, |r| r.batches.coming() == 0)?)
    }

    /// Takes the shards' messages, writing their output, until `done`
    /// holds or a shard has failed. A shard thread that has ended while
    /// the runtime still waits on it sent its error (taken first) or
    /// panicked: that is a failure too, so that no wait outlives it.
    fn take_until(&mut self, out: &mut impl Write, done: impl Fn(&ShardedRunner) -> bool) -> io::Result<()> {
        while !done(self) && self.failed.is_none() {
            match self.rx.recv_timeout(STOPPED_CHECK) {
                Ok(msg) => self.take(msg, out)?,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if self.handles.iter().flatten().any(JoinHandle::is_finished) {
                        self.failed.get_or_insert_with(|| "a shard thread stopped".into());
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds a query while events flow, from one program per slice
    /// (compiled alike): it starts at the current watermark on every slice
    /// (see [`Runner::add_query`]); the slices' engine choice must run it.
    pub fn add_query(&mut self, programs: Vec<Program<Event>>) -> Result<(), RunnerError> {
        if programs.len() != self.slices() {
            return Err(RunnerError::refused(format!("{} programs for {} slices", programs.len(), self.slices())));
        }
        if self.infos.len() >= MASK_QUERIES {
            return Err(RunnerError::refused(format!("a sharded runtime runs at most {MASK_QUERIES} queries")));
        }
        let key = crate::partition_field(&programs[0]);
        let info = crate::query_info(&programs[0]);
        for (i, p) in programs.into_iter().enumerate() {
            self.control(i, Box::new(move |r: &mut Runner| r.add_query(p).map(|_| ())))
                .map_err(|e| RunnerError::refused(e.to_string()))?;
        }
        self.batches.keys.push(key);
        self.batches.reroute();
        self.infos.push(info);
        Ok(())
    }

    /// Removes the query named `name` on every shard (see
    /// [`Runner::remove_query`]); false if there is none.
    pub fn remove_query(&mut self, name: &str) -> Result<bool, PushError> {
        let Some(i) = self.infos.iter().position(|q| q.name == name) else { return Ok(false) };
        for s in 0..self.slices() {
            let name = name.to_owned();
            self.control(
                s,
                Box::new(move |r: &mut Runner| {
                    r.remove_query(&name);
                    Ok(())
                }),
            )?;
        }
        self.batches.keys.remove(i);
        self.batches.reroute();
        self.infos.remove(i);
        Ok(true)
    }

    /// After restoring from a [`checkpoint`](Self::checkpoint): the `ts` of
    /// the last event released then, which the next batches carry to the
    /// shards as their watermark.
    pub fn resume_released(&mut self, ts: Timestamp) {
        self.batches.released_ts = ts;
    }

    /// Ends the input: held events are released and sent, every shard
    /// finishes, and all output is written. Returns the run's counts.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<Summary> {
        let finished = self.front.finish(&mut self.batches).map_err(PushError::Io);
        self.after(finished, out).map_err(into_io)?;
        self.end(true, out)
    }

    /// Stops the run where it is, as a caller does on an error in its input
    /// (a bad row, a late event under `LatePolicy::Fail`):
    /// every event the front has released is run and its matches are
    /// written, then every shard stops, its counts taken, **without** the
    /// end of the input. Deadlines the watermark has not passed stay pending
    /// and events the front still holds back are not run, so the output is
    /// what one [`Runner`] fed the same events and then dropped has emitted
    /// (the same multiset). Returns the counts so far; the runtime takes no
    /// more events.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{Runner, shard::ShardedRunner};
    ///
    /// let q = "PATTERN SEQ(A a, NOT B b WITHIN 5) WHERE [k]";
    /// let mut schema = Schema::new();
    /// schema.field("k");
    /// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    /// let shards = (0..2).map(|_| runner(&mut schema.clone())).collect();
    /// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), shards);
    /// let mut out = Vec::new();
    /// for row in 0..6u64 {
    ///     let e = Event::new(Sym::new("A"), 10 * row as i64, row, vec![Value::Int(row as i64 % 3)]);
    ///     sharded.push(&e, &mut out).unwrap();
    /// }
    /// // Stopped at watermark 50: the quiet periods of rows 0-4 ended
    /// // before it (at 5, 15, … 45), row 5's (at 55) has not.
    /// let summary = sharded.stop(&mut out).unwrap();
    /// assert_eq!(summary.matches, [5]);
    /// assert_eq!(String::from_utf8(out).unwrap().lines().count(), 5);
    /// ```
    pub fn stop(&mut self, out: &mut impl Write) -> io::Result<Summary> {
        self.end(false, out)
    }

    /// [`finish`](Self::finish) (`input_ended`) or [`stop`](Self::stop)
    /// after the front: sends what it released, ends every slice and
    /// collects their counts.
    fn end(&mut self, input_ended: bool, out: &mut impl Write) -> io::Result<Summary> {
        let sent = self.batches.send(self.batches.released_ts).map_err(PushError::Io);
        self.after(sent, out).map_err(into_io)?;
        self.settle(out).map_err(into_io)?;
        for tx in &self.batches.txs {
            // A shard that stopped on an error has dropped its receiver.
            let _ = tx.send(ToShard::End { input_ended });
        }
        for (j, slot) in self.batches.slots.iter_mut().enumerate() {
            if let Slot::Here(runner, gathered) = slot {
                debug_assert_eq!(gathered.len, 0, "a send ran what the slice gathered");
                if input_ended {
                    runner.finish(&mut self.batches.here)?;
                }
                self.done.push(runner.summary().clone());
                self.stats.push((j, runner.stats()));
            }
        }
        while self.done.len() < self.slices() && self.failed.is_none() {
            match self.rx.recv() {
                Ok(msg) => self.take(msg, out)?,
                Err(_) => break,
            }
        }
        for h in &mut self.handles {
            if let Some(h) = h.take()
                && h.join().is_err()
            {
                self.failed.get_or_insert_with(|| "a shard thread panicked".into());
            }
        }
        let written = self.write_output(out);
        // Ordered, a shard that stopped on an error leaves the steps after
        // it unfinished: what the others sent goes out, merged.
        if let Some(merger) = &mut self.merger {
            self.written += merger.flush(out)?;
        }
        written.map_err(into_io)?;
        match &self.failed {
            Some(why) => Err(io::Error::other(why.clone())),
            None => Ok(self.summary()),
        }
    }

    /// After the front has run: an error sending to a shard is replaced by
    /// the shard's own error, if it sent one.
    fn after(&mut self, result: Result<(), PushError>, out: &mut impl Write) -> Result<(), PushError> {
        match result {
            Err(PushError::Io(e)) if self.batches.stopped => {
                self.write_output(out)?;
                Err(PushError::Io(e))
            }
            other => other,
        }
    }

    /// The periodic look: sends the batches if their oldest event has
    /// waited long enough and the shards have run every batch sent before
    /// (otherwise the batches would wait in the queue anyway: under load
    /// they fill instead), and writes the output so far.
    fn look(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        let now = self.clock.look();
        let waited = self.batches.len > 0 && now - self.batches.first_at >= self.clock.flush_after;
        if waited && self.batches.caught_up() {
            let sent = self.batches.send(self.batches.released_ts);
            self.after(sent.map_err(PushError::Io), out)?;
        } else {
            // The slices run here do not wait for a send: their output is
            // as late as a look at most.
            let ran = self.batches.run_gathered();
            self.after(ran.map_err(PushError::Io), out)?;
        }
        self.write_output(out)
    }

    /// Writes the output the shards have sent so far, and the calling
    /// thread's own (without waiting).
    fn write_output(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg, out)?;
        }
        self.write_here(out)?;
        match &self.failed {
            Some(why) => Err(PushError::Io(io::Error::other(why.clone()))),
            None => Ok(()),
        }
    }

    /// Handles one message from a shard.
    fn take(&mut self, msg: FromShard, out: &mut impl Write) -> io::Result<()> {
        match msg {
            FromShard::Out(bytes) => {
                // The calling thread's output first: a slice it gave away
                // has its earlier matches there.
                self.write_here(out)?;
                out.write_all(&bytes)?;
                self.written += bytes.len() as u64;
            }
            FromShard::Lines(i, lines) => {
                let merger = self.merger.as_mut().expect("keyed lines come only when ordered");
                self.written += merger.take(i, lines, out)?;
            }
            FromShard::Released(j, runner) => self.batches.arrive(j, runner).map_err(into_io)?,
            FromShard::Done(i, summary, stats) => {
                self.done.push(summary);
                self.stats.push((i, stats));
            }
            FromShard::Snapshot(j, snap) => self.snapshots.push((j, *snap)),
            FromShard::Failed(why) => {
                self.failed.get_or_insert(why);
            }
            FromShard::BlockDone(i) => self.blocks_held[i] -= 1,
            FromShard::Synced => self.synced += 1,
        }
        Ok(())
    }
}

impl ShardedRunner {
    /// Writes the matches of the slices the calling thread runs so far.
    fn write_here(&mut self, out: &mut impl Write) -> io::Result<()> {
        let bytes = self.batches.here.get_mut();
        if !bytes.is_empty() {
            out.write_all(bytes)?;
            self.written += bytes.len() as u64;
            bytes.clear();
        }
        Ok(())
    }
}

/// A push error as an I/O error.
fn into_io(e: PushError) -> io::Error {
    match e {
        PushError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

/// When the reader looks at the clock: every push on a slow stream, every
/// [`MAX_CHECK_EVERY`] pushes on a fast one (the interval halves when a
/// look finds more than an eighth of `flush_after` gone since the last,
/// and doubles otherwise).
#[derive(Debug)]
struct Clock {
    flush_after: Duration,
    /// Pushes between looks.
    every: u32,
    /// Pushes left until the next look.
    left: u32,
    last_look: Instant,
}

impl Clock {
    fn new(flush_after: Duration) -> Clock {
        Clock { flush_after, every: 1, left: 1, last_look: Instant::now() }
    }

    /// Counts a push; true when it is time to look.
    #[inline]
    fn tick(&mut self) -> bool {
        self.left -= 1;
        self.left == 0
    }

    /// A look: the time now, and the next look planned.
    fn look(&mut self) -> Instant {
        let now = Instant::now();
        let slow = (now - self.last_look) * 8 > self.flush_after;
        self.every = if slow { (self.every / 2).max(1) } else { (self.every * 2).min(MAX_CHECK_EVERY) };
        self.left = self.every;
        self.last_look = now;
        now
    }
}

/// The reader's side of the slices: the front's sink, which runs each
/// released event on the calling thread's runner of its slice, or copies it
/// into the bundle of the worker that runs the slice, and sends the
/// bundles when they hold enough.
struct Batcher {
    /// Per worker, its queue.
    txs: Vec<Sender<ToShard>>,
    /// Per query, the field its partition key is in.
    keys: Vec<Option<FieldId>>,
    /// The field level alerts are keyed by, if there are alerts.
    level_key: Option<FieldId>,
    /// Where events go, from `keys` and `level_key`.
    routes: Routes,
    /// Scratch: per slice, the mask of the event at hand.
    masks: Vec<u64>,
    /// Per slice, where its runner is.
    slots: Vec<Slot>,
    /// `slices - 1` when the count of slices is a power of two.
    pow2_mask: Option<u64>,
    /// Per slice, the worker that runs it, or [`HERE`] (on the calling
    /// thread, or on its way back to it): `slots` in a form that routing
    /// reads fast (an enum with a batch in it took 10 instructions an event
    /// to tell apart).
    worker_of: Vec<u32>,
    /// The output of the slices run here, until written.
    here: JsonLines<Vec<u8>>,
    /// Per worker, the bundle being filled.
    filling: Vec<Bundle>,
    /// Events released since the last send (run here or in the bundles).
    len: usize,
    /// When the first of them was released.
    first_at: Instant,
    /// The latest released ts: the watermark sent with the next bundles.
    released_ts: Timestamp,
    /// The last watermark sent.
    sent_wm: Timestamp,
    /// The fields of an event sent last (to lay out bundles).
    width: usize,
    /// Per worker, bundles sent before; one the worker has dropped is
    /// refilled (at most `IN_FLIGHT + 2` per worker ever exist: its queue,
    /// the bundle it runs, and one being handed over).
    pool: Vec<Vec<Arc<Bundle>>>,
    /// Moving slices between the threads ([`ShardedRunner::balanced`]).
    balance: Option<Balance>,
    /// What the balancing measures.
    meter: Meter,
    /// A worker has stopped (its receiver is gone).
    stopped: bool,
}

impl Batcher {
    fn new(
        txs: Vec<Sender<ToShard>>,
        slots: Vec<Slot>,
        keys: Vec<Option<FieldId>>,
        level_key: Option<FieldId>,
        balance: Option<Balance>,
        meter: Meter,
    ) -> Batcher {
        let (workers, slices) = (txs.len(), slots.len());
        Batcher {
            txs,
            routes: Routes::new(&keys, level_key),
            keys,
            level_key,
            masks: vec![0; slices],
            pow2_mask: slices.is_power_of_two().then(|| slices as u64 - 1),
            worker_of: slots.iter().map(|s| if let Slot::There(w) = s { *w as u32 } else { HERE }).collect(),
            slots,
            here: JsonLines::new(Vec::new()),
            filling: (0..workers).map(|_| Bundle::new(slices)).collect(),
            len: 0,
            first_at: Instant::now(),
            released_ts: Timestamp::MIN,
            sent_wm: Timestamp::MIN,
            width: 0,
            pool: vec![Vec::new(); workers],
            balance,
            meter,
            stopped: false,
        }
    }

    /// Routes by the queries as they are now (after one was added or
    /// removed; the batches sent before carry the masks of before).
    fn reroute(&mut self) {
        self.routes = Routes::new(&self.keys, self.level_key);
    }

    /// Sends every worker its bundle (maybe empty) and the watermark `wm`,
    /// waiting while a worker's queue is full; the slices run here move to
    /// `wm` too. Then, when balancing, maybe moves a slice.
    fn send(&mut self, wm: Timestamp) -> io::Result<()> {
        self.run_gathered()?;
        let full = self.len >= BATCH;
        self.meter.released += self.len as u64;
        self.len = 0;
        for w in 0..self.txs.len() {
            let pool = &mut self.pool[w];
            let i = free_bundle(pool, self.slots.len());
            let bundle = Arc::get_mut(&mut pool[i]).expect("no shard holds a free bundle");
            std::mem::swap(bundle, &mut self.filling[w]);
            bundle.wm = wm;
            if let Some(p) = bundle.parts.iter().find(|p| p.len > 0) {
                self.width = p.events[p.len - 1].fields.len();
            }
            let next = &mut self.filling[w];
            next.clear();
            let worker_of = &self.worker_of;
            let mine = |j: usize| worker_of[j] == w as u32;
            if next.needs_layout(mine) {
                next.lay_out(self.slots.len(), self.width, mine);
            }
            let bundle = ToShard::Bundle(Arc::clone(&pool[i]));
            self.deliver_timed(w, bundle)?;
        }
        if wm > Timestamp::MIN {
            for slot in &mut self.slots {
                if let Slot::Here(runner, _) = slot {
                    runner.advance_watermark(wm, &mut self.here).map_err(into_io)?;
                }
            }
            // (A `sync` may have sent a later one.)
            self.sent_wm = self.sent_wm.max(wm);
        }
        self.rebalance(full)
    }

    /// [`deliver`](Self::deliver), counting the time waited when the queue
    /// is full (for the balancing) and the events of a bundle.
    fn deliver_timed(&mut self, w: usize, msg: ToShard) -> io::Result<()> {
        if let ToShard::Bundle(b) = &msg {
            self.meter.sent[w] += b.parts.iter().map(|p| p.len as u64).sum::<u64>();
        }
        match self.txs[w].try_send(msg) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(msg)) => {
                let start = Instant::now();
                let sent = self.deliver(w, msg);
                self.meter.waited += start.elapsed();
                sent
            }
            // Fails there, and says so.
            Err(TrySendError::Disconnected(msg)) => self.deliver(w, msg),
        }
    }

    /// Sends `msg` to worker `w`; an error if the worker has stopped (its
    /// receiver is gone).
    fn deliver(&mut self, w: usize, msg: ToShard) -> io::Result<()> {
        if self.txs[w].send(msg).is_err() {
            self.stopped = true;
            return Err(io::Error::other(format!("shard {w} stopped")));
        }
        Ok(())
    }

    /// Sends the bundles being filled, if any, then `block` to every worker
    /// (each runs its slices' parts, for the queries of `mask`, then the
    /// watermark: the block's last `ts`).
    fn send_block(&mut self, block: Arc<PartedBlock>, mask: u64) -> io::Result<()> {
        if self.len > 0 {
            self.send(self.released_ts)?;
        }
        self.released_ts = block.last_ts();
        self.sent_wm = self.released_ts;
        for w in 0..self.txs.len() {
            self.deliver(w, ToShard::Block(Arc::clone(&block), mask, self.released_ts))?;
        }
        Ok(())
    }

    /// Whether every worker has taken every bundle sent to it.
    fn caught_up(&self) -> bool {
        self.txs.iter().all(Sender::is_empty)
    }

    /// How many slices are on their way back from a worker.
    fn coming(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Coming(..))).count()
    }

    /// Slice `j`'s runner is back from its worker: it runs the events that
    /// waited for it and the watermark, and from now on every event of the
    /// slice as it comes.
    fn arrive(&mut self, j: usize, mut runner: Box<Runner>) -> Result<(), PushError> {
        let Slot::Coming(mut held) = std::mem::replace(&mut self.slots[j], Slot::Coming(Batch::default())) else {
            return Err(PushError::Io(io::Error::other(format!("slice {j} came back unasked"))));
        };
        held.run_on(&mut runner, &mut self.here)?;
        if self.sent_wm > Timestamp::MIN {
            runner.advance_watermark(self.sent_wm, &mut self.here)?;
        }
        held.clear(); // from now on, it gathers the slice's events
        self.set_slot(j, Slot::Here(runner, held));
        Ok(())
    }

    /// Puts slice `j` at `slot`, keeping [`worker_of`](Self::worker_of) in
    /// step; returns where it was.
    fn set_slot(&mut self, j: usize, slot: Slot) -> Slot {
        self.worker_of[j] = if let Slot::There(w) = slot { w as u32 } else { HERE };
        std::mem::replace(&mut self.slots[j], slot)
    }

    /// After a send, when balancing: every [`Balance::EVERY`] sends, looks
    /// at the load (see the `balance` module) and maybe moves a slice.
    fn rebalance(&mut self, full: bool) -> io::Result<()> {
        let Some(balance) = &mut self.balance else { return Ok(()) };
        let step = if let Some(state) = &mut balance.chaos {
            chaos_move(state, &self.slots, self.txs.len())
        } else if balance.count_send(full) {
            let load = self.meter.take(&self.slots);
            let step = balance.look(&load);
            step.and_then(|s| self.pick(s))
        } else {
            None
        };
        let Some(step) = step else { return Ok(()) };
        if let Some(b) = &mut self.balance {
            b.moves += 1;
        }
        match step {
            Move::Give(j, w) => {
                let Slot::Here(runner, gathered) = self.set_slot(j, Slot::There(w)) else {
                    unreachable!("only a slice run here is given away")
                };
                debug_assert_eq!(gathered.len, 0, "a send ran what the slice gathered");
                // In band: after the bundles sent so far (none of them has
                // events of the slice), before the next.
                self.deliver(w, ToShard::Adopt(j, runner))
            }
            Move::TakeBack(j, w) => {
                // The bundles were just sent: none being filled holds events
                // of the slice.
                self.set_slot(j, Slot::Coming(Batch::default()));
                self.deliver(w, ToShard::Release(j))
            }
        }
    }

    /// The slice a step moves: the last of the worker's, or the first of
    /// the calling thread's; none while one is on its way back.
    fn pick(&self, step: Step) -> Option<Move> {
        if self.coming() > 0 {
            return None;
        }
        match step {
            Step::TakeBack(w) => {
                let j = self.slots.iter().rposition(|s| matches!(s, Slot::There(v) if *v == w))?;
                Some(Move::TakeBack(j, w))
            }
            Step::Give(w) => Some(Move::Give(self.slots.iter().position(|s| matches!(s, Slot::Here(..)))?, w)),
        }
    }
}

/// What the reader measures for the balancing, between two looks.
struct Meter {
    /// When the last look was.
    since: Instant,
    /// The time the calling thread waited on full queues since.
    waited: Duration,
    /// Per worker, the events sent to it since.
    sent: Vec<u64>,
    /// Events released since.
    released: u64,
    /// Per worker, its busy nanoseconds so far (it adds to them).
    busy: Arc<Vec<AtomicU64>>,
    /// `busy` at the last look.
    busy_then: Vec<u64>,
}

impl Meter {
    /// A meter of the workers whose busy times `busy` holds.
    fn new(busy: Arc<Vec<AtomicU64>>) -> Meter {
        let workers = busy.len();
        Meter {
            since: Instant::now(),
            waited: Duration::ZERO,
            sent: vec![0; workers],
            released: 0,
            busy,
            busy_then: vec![0; workers],
        }
    }

    /// The load since the last look, which starts a new window.
    fn take(&mut self, slots: &[Slot]) -> Load {
        let now = Instant::now();
        let wall = now - std::mem::replace(&mut self.since, now);
        let here_ns = wall.saturating_sub(std::mem::take(&mut self.waited)).as_nanos() as u64;
        let sent_all: u64 = self.sent.iter().sum();
        let here_events = std::mem::take(&mut self.released).saturating_sub(sent_all);
        let workers = (0..self.sent.len())
            .map(|w| {
                let busy = self.busy[w].load(Ordering::Relaxed);
                let ns = busy.saturating_sub(std::mem::replace(&mut self.busy_then[w], busy));
                let slices = slots.iter().filter(|s| matches!(s, Slot::There(v) if *v == w)).count();
                (ns, std::mem::take(&mut self.sent[w]), slices)
            })
            .collect();
        let here_slices = slots.iter().filter(|s| matches!(s, Slot::Here(..))).count();
        Load { here_ns, here_events, here_slices, workers }
    }
}

/// A slice to move: give slice `j`, run here, to worker `w`, or take it
/// back from worker `w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    Give(usize, usize),
    TakeBack(usize, usize),
}

/// A random move (for tests of moving slices): a slice run here to a
/// random worker, or one run on a worker back here.
fn chaos_move(state: &mut u64, slots: &[Slot], workers: usize) -> Option<Move> {
    // xorshift64
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state as usize
    };
    let first = next();
    // The first slice from a random one on that is not on its way back.
    (0..slots.len()).map(|i| (first + i) % slots.len()).find_map(|j| match slots[j] {
        Slot::Here(..) => Some(Move::Give(j, next() % workers)),
        Slot::There(w) => Some(Move::TakeBack(j, w)),
        Slot::Coming(..) => None,
    })
}

/// The index of a bundle of `pool` that no worker holds: of those, the one
/// sent longest ago (a new one, for `slices` slices, if all are held). It
/// moves to the end, so the pool stays in the order its bundles were sent.
/// Reusing the bundle sent longest ago rather than the one just run lets
/// its memory leave the caches of the worker's core before the calling
/// thread writes it again: on W5 with two shards the calling thread's CPU
/// went from about 23 to 18 ns an event, and the throughput up by a tenth.
fn free_bundle(pool: &mut Vec<Arc<Bundle>>, slices: usize) -> usize {
    match pool.iter_mut().position(|b| Arc::get_mut(b).is_some()) {
        Some(i) => {
            let bundle = pool.remove(i);
            pool.push(bundle);
        }
        None => pool.push(Arc::new(Bundle::new(slices))),
    }
    pool.len() - 1
}

impl Batcher {
    /// The slice of `e`, keyed by its field `f` ([`field_shard`], with the
    /// remainder worked out once for the usual count of slices, a power
    /// of two).
    #[inline(always)]
    fn slice_of(&self, e: &Event, f: FieldId) -> usize {
        match (self.pow2_mask, e.fields.get(f as usize)) {
            (Some(m), Some(&Value::Int(i))) => (int_hash(i) & m) as usize,
            _ => field_shard(e, f, self.worker_of.len()),
        }
    }
}

impl Sink for Batcher {
    fn on_match(&mut self, _: &QueryInfo, _: &cep_core::Match) -> io::Result<()> {
        Ok(()) // the front runs no query
    }

    fn on_released(&mut self, e: &Event) -> io::Result<()> {
        self.route(e)
    }
}

impl Batcher {
    /// Hands `e` to each slice it is for: run at once when the slice is
    /// run here, else copied into its worker's bundle; sends the bundles
    /// when they hold enough.
    #[inline(always)]
    fn route(&mut self, e: &Event) -> io::Result<()> {
        if let Some((f, mask)) = self.routes.single() {
            // Without a branch on each slice's mask (which mispredicts),
            // and without a mask per event.
            let j = self.slice_of(e, f);
            match self.worker_of[j] {
                HERE => match &mut self.slots[j] {
                    Slot::Here(runner, gathered) => {
                        gather(runner, gathered, &mut self.here, |b| b.push_for_all(e, mask))?;
                    }
                    Slot::Coming(held) => held.push_for_all(e, mask),
                    Slot::There(_) => unreachable!("`worker_of` follows `slots`"),
                },
                w => self.filling[w as usize].push_for_all(e, j, mask),
            }
        } else {
            self.routes.masks(e, &mut self.masks);
            for (j, (slot, &mask)) in self.slots.iter_mut().zip(&self.masks).enumerate() {
                if mask == 0 {
                    continue;
                }
                match slot {
                    Slot::There(w) => self.filling[*w].push(e, j, mask),
                    Slot::Here(runner, gathered) => gather(runner, gathered, &mut self.here, |b| b.push(e, mask))?,
                    Slot::Coming(held) => held.push(e, mask),
                }
            }
        }
        // Events run here count too: the bundles go out (with the
        // watermark, which quiet slices need for their deadlines) every
        // `BATCH` events released, wherever they ran.
        if self.len == 0 {
            self.first_at = Instant::now(); // once per batch
        }
        self.len += 1;
        self.released_ts = e.ts;
        if self.len >= BATCH {
            return self.send(e.ts);
        }
        Ok(())
    }
}

/// Adds an event (by `add`) to the events `gathered` for a slice run on
/// the calling thread, and runs them on `runner` once [`HERE_RUN`] wait.
#[inline(always)]
fn gather(
    runner: &mut Runner,
    gathered: &mut Batch,
    sink: &mut JsonLines<Vec<u8>>,
    add: impl FnOnce(&mut Batch),
) -> io::Result<()> {
    add(gathered);
    if gathered.len >= HERE_RUN {
        run_gathered(gathered, runner, sink)?;
    }
    Ok(())
}

/// Runs the events `gathered` for a slice on its runner `runner`, and
/// empties it.
#[inline(never)]
fn run_gathered(gathered: &mut Batch, runner: &mut Runner, sink: &mut JsonLines<Vec<u8>>) -> io::Result<()> {
    let ran = gathered.run_on(runner, sink);
    gathered.clear();
    ran.map_err(into_io)
}

impl Batcher {
    /// Runs the events every slice run here has gathered (before anything
    /// else looks at those runners: a send, a move, a checkpoint).
    fn run_gathered(&mut self) -> io::Result<()> {
        for slot in &mut self.slots {
            if let Slot::Here(runner, gathered) = slot
                && gathered.len > 0
            {
                run_gathered(gathered, runner, &mut self.here)?;
            }
        }
        Ok(())
    }
}

/// Why worker `me` cannot run a message for slice `j`.
fn not_here(j: usize, me: usize) -> String {
    format!("slice {j} is not on shard {me}")
}

/// A worker thread's state.
struct Shard {
    me: usize,
    /// Per slice, its runner if this worker runs it.
    runners: Vec<Option<Box<Runner>>>,
    rx: Receiver<ToShard>,
    out: Sender<FromShard>,
    /// A block's events, rebuilt from their flat rows (reused: each keeps
    /// its fields vector).
    events: Vec<Event>,
    /// Per worker, the nanoseconds it spent running bundles (this one adds
    /// to its own; the reader reads them to balance the load).
    busy: Arc<Vec<AtomicU64>>,
}

impl Shard {
    /// The next message, parsing blocks of `help` while there is none
    /// (until its reader is gone).
    fn next(&self, help: &mut Option<Receiver<ParseJob>>) -> Result<ToShard, RecvError> {
        loop {
            let Some(jobs) = help else { return self.rx.recv() };
            match self.rx.try_recv() {
                Ok(msg) => return Ok(msg),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
            select! {
                recv(self.rx) -> msg => return msg,
                recv(jobs) -> job => match job {
                    Ok(job) => job.run(),
                    Err(_) => *help = None,
                },
            }
        }
    }

    /// The runners of the slices this worker runs, with their index.
    fn mine(&mut self) -> impl Iterator<Item = (usize, &mut Runner)> {
        self.runners.iter_mut().enumerate().filter_map(|(j, r)| Some((j, &mut **r.as_mut()?)))
    }

    /// Slice `j`'s runner; an error if this worker does not run it.
    fn runner(&mut self, j: usize) -> Result<&mut Runner, String> {
        let me = self.me;
        self.runners.get_mut(j).and_then(Option::as_deref_mut).ok_or_else(|| not_here(j, me))
    }

    /// Runs the bundles until the end of the input or an error, which it
    /// sends back before stopping.
    fn run(mut self) {
        let mut sink = KeyedLines::new();
        let mut help: Option<Receiver<ParseJob>> = None;
        while let Ok(msg) = self.next(&mut help) {
            let finish = matches!(msg, ToShard::End { .. });
            let was_block = matches!(msg, ToShard::Block(..));
            // A checkpoint and the end send their step's lines themselves.
            let step = matches!(msg, ToShard::Bundle(..) | ToShard::Block(..));
            let result = match msg {
                ToShard::Bundle(bundle) => {
                    let start = Instant::now();
                    let ran = self.bundle(&bundle, &mut sink).map_err(|e| e.to_string());
                    self.busy[self.me].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    ran
                }
                ToShard::Block(block, mask, wm) => self.block(&block, mask, wm, &mut sink).map_err(|e| e.to_string()),
                ToShard::Control(j, change) => self.runner(j).and_then(|r| change(r).map_err(|e| e.to_string())),
                ToShard::Checkpoint => self.checkpoint(&mut sink),
                ToShard::End { input_ended } => self.end(input_ended, &mut sink),
                ToShard::Adopt(j, runner) => {
                    self.runners[j] = Some(runner);
                    Ok(())
                }
                ToShard::Release(j) => match self.runners.get_mut(j).and_then(Option::take) {
                    Some(runner) => {
                        self.send_output(&mut sink, false);
                        let _ = self.out.send(FromShard::Released(j, runner));
                        Ok(())
                    }
                    None => Err(not_here(j, self.me)),
                },
                ToShard::Help(jobs) => {
                    help = Some(jobs);
                    Ok(())
                }
                ToShard::Ordered(spare) => {
                    sink.keep_keys(spare);
                    Ok(())
                }
                ToShard::Sync => {
                    // After the output (and, ordered, after the lines of
                    // every step before, each sent at its step's end).
                    self.send_output(&mut sink, false);
                    let _ = self.out.send(FromShard::Synced);
                    Ok(())
                }
            };
            if let Err(err) = result {
                let _ = self.out.send(FromShard::Failed(format!("shard {}: {err}", self.me)));
                return;
            }
            self.send_output(&mut sink, step);
            if was_block {
                let _ = self.out.send(FromShard::BlockDone(self.me));
            }
            if finish {
                return;
            }
        }
    }

    /// Sends the output so far, if any; with ordered output, only at the
    /// end of a step (`step_end`), and then even none.
    fn send_output(&self, sink: &mut KeyedLines, step_end: bool) {
        if sink.keeps_keys() {
            if step_end {
                let _ = self.out.send(FromShard::Lines(self.me, sink.take()));
            }
        } else if !sink.is_empty() {
            let _ = self.out.send(FromShard::Out(sink.take().bytes));
        }
    }

    /// Sends the output so far, then the state of each slice.
    fn checkpoint(&mut self, sink: &mut KeyedLines) -> Result<(), String> {
        let mut snaps = Vec::new();
        for (j, runner) in self.mine() {
            snaps.push((j, runner.snapshot().map_err(|e| format!("checkpoint: {e}"))?));
        }
        self.send_output(sink, true);
        for (j, snap) in snaps {
            let _ = self.out.send(FromShard::Snapshot(j, Box::new(snap)));
        }
        Ok(())
    }

    /// Ends each slice: its last matches when `input_ended`, then its
    /// counts.
    fn end(&mut self, input_ended: bool, sink: &mut KeyedLines) -> Result<(), String> {
        let mut done = Vec::new();
        for (j, runner) in self.mine() {
            if input_ended {
                runner.finish(sink).map_err(|e| e.to_string())?;
            }
            done.push(FromShard::Done(j, runner.summary().clone(), runner.stats()));
        }
        self.send_output(sink, true);
        for msg in done {
            let _ = self.out.send(msg);
        }
        Ok(())
    }

    /// Runs each of this worker's slices' part of a block, then the
    /// watermark `wm`.
    fn block(&mut self, block: &PartedBlock, mask: u64, wm: Timestamp, sink: &mut KeyedLines) -> Result<(), PushError> {
        let mut events = std::mem::take(&mut self.events);
        for (j, runner) in self.mine() {
            let part = block.part(j);
            let mut from = FlatCursor::default();
            while from.index() < part.len() {
                let (chunk, next) = part.unpack_chunk(from, UNPACK_CHUNK, &mut events, block.row_base());
                runner.push_batch_for(chunk, mask, sink)?;
                from = next;
            }
            runner.advance_watermark(wm, sink)?;
        }
        self.events = events;
        Ok(())
    }

    /// Runs a bundle's events, where they are, each slice's on its runner,
    /// then moves every slice it runs to the bundle's watermark.
    fn bundle(&mut self, bundle: &Bundle, sink: &mut KeyedLines) -> Result<(), PushError> {
        for (j, part) in bundle.parts.iter().enumerate() {
            if part.len == 0 {
                continue;
            }
            let runner = self.runner(j).map_err(|why| PushError::Io(io::Error::other(why)))?;
            part.run_on(runner, sink)?;
        }
        if bundle.wm > Timestamp::MIN {
            for (_, runner) in self.mine() {
                runner.advance_watermark(bundle.wm, sink)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::Sym;

    /// A batch refilled with events of other widths holds exact copies
    /// (each event's fields overwritten in place when the widths agree,
    /// cloned otherwise: `Event::clone_from`).
    #[test]
    fn a_refilled_batch_holds_exact_copies() {
        let event = |i: i64, width: usize| {
            let fields = (0..width as i64).map(|f| if f % 2 == 0 { Value::Int(i * 10 + f) } else { Value::str("s") });
            Event::new(Sym::new(if i % 2 == 0 { "A" } else { "B" }), i, i as u64, fields.collect())
        };
        let mut batch = Batch::default();
        for (round, widths) in [[2, 3, 2, 0, 5], [3, 3, 1, 0, 2], [0, 3, 1, 4, 2]].into_iter().enumerate() {
            batch.clear();
            let events: Vec<Event> = widths.iter().enumerate().map(|(i, &w)| event((i + round) as i64, w)).collect();
            events.iter().for_each(|e| batch.push_for_all(e, 1));
            assert_eq!(&batch.events[..batch.len], &events[..]);
        }
    }

    /// A bundle lays out events only for the slices its worker runs; a part
    /// that grew past them (its slice given to the worker since) is laid
    /// out when the bundle is next filled, and its events stay exact.
    #[test]
    fn a_bundle_lays_out_only_its_workers_slices() {
        let mine = |j: usize| j == 1 || j == 3;
        let mut bundle = Bundle::new(4);
        assert!(bundle.needs_layout(mine));
        bundle.lay_out(4, 3, mine);
        assert!(!bundle.needs_layout(mine));
        let held: Vec<usize> = bundle.parts.iter().map(|p| p.events.len()).collect();
        assert_eq!(held[0], 0);
        assert_eq!(held[2], 0);
        assert!(held[1] >= BATCH / 4 && held[3] >= BATCH / 4, "{held:?}");
        assert!(bundle.parts[1].events.iter().all(|e| e.fields.len() == 3));
        // Slice 2 comes to the worker: its part grows as events come.
        let e = |i: i64| Event::new(Sym::new("A"), i, i as u64, vec![Value::Int(i); 3]);
        let events: Vec<Event> = (0..10).map(e).collect();
        events.iter().for_each(|e| bundle.push_for_all(e, 2, 1));
        assert_eq!(&bundle.parts[2].events[..bundle.parts[2].len], &events[..]);
        let now_mine = |j: usize| mine(j) || j == 2;
        assert!(!bundle.needs_layout(mine), "a part the worker does not run is left as it is");
        assert!(bundle.needs_layout(now_mine));
        bundle.clear();
        bundle.lay_out(4, 3, now_mine);
        assert!(bundle.parts[2].events.len() >= BATCH / 4);
        assert_eq!(bundle.parts[0].events.len(), 0);
        events.iter().for_each(|e| bundle.push_for_all(e, 2, 1));
        assert_eq!(&bundle.parts[2].events[..bundle.parts[2].len], &events[..]);
    }

    /// Wide events: what a part lays out ahead of its events is bounded in
    /// bytes; a part that held more lays out what it held.
    #[test]
    fn a_bundle_lays_out_wide_events_within_its_budget() {
        // 16,000 bytes an event: 65 in the budget, against a share of 2,048.
        let width = 1000;
        let all = |_: usize| true;
        let mut bundle = Bundle::new(2);
        bundle.lay_out(2, width, all);
        let bytes = |b: &Bundle, j: usize| b.parts[j].events.len() * width * std::mem::size_of::<Value>();
        assert_eq!(bundle.parts[0].events.len(), 81, "the budget's 65, a quarter more");
        assert!(bytes(&bundle, 0) <= LAYOUT_BYTES * 5 / 4, "{}", bytes(&bundle, 0));
        let e = |i: i64| Event::new(Sym::new("A"), i, i as u64, vec![Value::Int(i); width]);
        let events: Vec<Event> = (0..100).map(e).collect();
        events.iter().for_each(|e| bundle.push_for_all(e, 0, 1));
        assert_eq!(&bundle.parts[0].events[..bundle.parts[0].len], &events[..]);
        bundle.clear();
        bundle.lay_out(2, width, all);
        assert_eq!(bundle.parts[0].events.len(), 125, "what it held, a quarter more");
        // Narrow events: a whole share of a batch.
        let mut bundle = Bundle::new(2);
        bundle.lay_out(2, 3, all);
        assert_eq!(bundle.parts[1].events.len(), BATCH / 2 * 5 / 4);
    }

    /// Backpressure: while a shard takes no batch, the caller fills that
    /// shard's queue and then waits, instead of queueing more; no shard ever
    /// gets more than `IN_FLIGHT + 2` batches (its queue, the one it runs,
    /// one being handed over), however many events are pushed.
    #[test]
    fn a_stalled_shard_holds_back_the_caller() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let q = "QUERY p PATTERN SEQ(A a, A b) WHERE [k] WITHIN 150";
        let mut schema = cep_core::Schema::new();
        schema.field("k");
        let compiled = |schema: &mut cep_core::Schema| {
            cep_nfa::compile::compile(q, schema, &cep_nfa::compile::Options::default()).expect("compiles").programs
        };
        let shards = (0..2).map(|_| Runner::new(compiled(&mut schema.clone()))).collect();
        let mut r = ShardedRunner::new(Runner::new(Vec::new()), shards);
        // Only full batches go out, so the count where the caller stops is
        // known.
        r.set_flush_after(Duration::from_secs(3600));
        // Shard 1 stalls until released; a second thread waits until the
        // pushes stop, notes how many there were, and releases it.
        let (release, stalled) = bounded::<()>(0);
        r.control(1, Box::new(move |_| stalled.recv().map_err(|e| RunnerError::refused(e.to_string()))))
            .expect("shard 1 runs");
        let pushed = Arc::new(AtomicUsize::new(0));
        let watcher = {
            let pushed = Arc::clone(&pushed);
            std::thread::spawn(move || {
                let (mut last, mut still) = (0, 0);
                while still < 3 {
                    std::thread::sleep(Duration::from_millis(100));
                    let now = pushed.load(Ordering::SeqCst);
                    still = if now == last && now > 0 { still + 1 } else { 0 };
                    last = now;
                }
                release.send(()).expect("shard 1 waits");
                last
            })
        };
        let (n, mut out) = (1_000_000usize, Vec::new());
        for i in 0..n {
            let e = Event::new(Sym::new("A"), i as i64, i as u64, vec![Value::Int(i as i64 % 100)]);
            r.push(&e, &mut out).expect("pushed");
            pushed.store(i + 1, Ordering::SeqCst);
        }
        let by_then = watcher.join().expect("the watcher");
        // The caller stops in the push that fills the batch after a full
        // queue: IN_FLIGHT batches queued, one more waiting to go.
        assert!(by_then < (IN_FLIGHT + 1) * BATCH, "{by_then} events pushed past a stalled shard");
        assert!(by_then >= IN_FLIGHT * BATCH, "the caller stopped at {by_then} events, before the queue was full");
        assert!(r.batches.pool.iter().all(|pool| pool.len() <= IN_FLIGHT + 2), "batches grew past the bound");
        let summary = r.finish(&mut out).expect("finished");
        // Each event pairs with the next of its key (100 later), but the
        // last of each key.
        assert_eq!(summary.matches, [(n - 100) as u64]);
    }
}
