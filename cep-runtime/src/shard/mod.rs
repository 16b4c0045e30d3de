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
mod batch;
mod message;
mod receive;
mod route;
mod send;
mod worker;

pub use message::Control;
pub use route::{HASH_VERSION, KeyRoute, int_hash, shard_cached, shard_of};
use route::{Routes, field_shard};

use self::balance::{Balance, Load, Step};
use self::batch::*;
use self::message::*;
use self::receive::*;
use self::send::*;
use self::worker::*;
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
    /// Matches waiting for remote answers at the last [`sync`](Self::sync).
    waiting_answers: usize,
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
            waiting_answers: 0,
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
        s.queries = self.infos.iter().map(|q| q.name.clone()).collect();
        s.removed = Vec::new();
        for d in &self.done {
            for (m, n) in s.matches.iter_mut().zip(&d.matches) {
                *m += n;
            }
            // Every slice saw the same removals, in the same order.
            for (i, (name, n)) in d.removed.iter().enumerate() {
                match s.removed.get_mut(i) {
                    Some((_, m)) => *m += n,
                    None => s.removed.push((name.clone(), *n)),
                }
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
        // Matches whose remote answers came, on the slices run here (each
        // worker settles its own at the `Sync`).
        let mut waiting = 0;
        let batches = &mut self.batches;
        for slot in &mut batches.slots {
            if let Slot::Here(runner, _) = slot {
                waiting += runner.settle_answers(&mut batches.here)?;
            }
        }
        self.waiting_answers = waiting;
        self.synced = 0;
        for w in 0..self.batches.txs.len() {
            let sent = self.batches.deliver(w, ToShard::Sync).map_err(PushError::Io);
            self.after(sent, out)?;
        }
        self.take_until(out, |r| r.synced == r.batches.txs.len())?;
        self.write_output(out)
    }

    /// Matches that were waiting for remote answers at the last
    /// [`sync`](Self::sync) (lazy evaluation): while some are, a job whose
    /// input is idle syncs again, so that they go out as their answers come.
    pub fn waiting_answers(&self) -> usize {
        self.waiting_answers
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
