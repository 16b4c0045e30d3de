//! The run engine: one NFA run per partial match, over the shared buffer.
//!
//! Per event, in event-time order: fire the deadlines it passes (window
//! expiry, trailing-`NOT` quiet periods), find the event's partition (one
//! hash lookup), build its frame once, then offer it to every live run of
//! the partition. A run whose next event may bind an element (a Kleene loop
//! or a forward edge) spawns a child for each such binding; whether the run
//! itself survives depends on the strategy: always under
//! skip-till-any-match, only when the event was irrelevant to it under
//! skip-till-next-match, never under strict contiguity. Runs that reach an
//! accepting element produce matches (or pending matches awaiting a quiet
//! period); selection and after-match skip are applied to the matches that
//! become final at the same moment.
//!
//! A run is a small plain struct in a `Vec` (state, start, last binding,
//! deadline, a buffer node); its registers live beside it in a flat `Vec`.
//! Runs of one partition sit together; partitions are found through a
//! dense index (small integer and string keys) or a hash map. Each
//! partition with partial matches has one timer, at its earliest deadline,
//! on `cep-time`'s hierarchical timing wheel; an event that passes no
//! deadline does not touch the wheel.
//!
//! The per-key record an event reads first (`Hot`: position, live count,
//! `PREV` value) is half a cache line; [`Engine::push_batch`] looks the
//! partitions of the next events up and reads their records before it
//! processes them, so that their cache misses overlap. Filling the frame,
//! testing start conditions and keeping `PREV` are inline; everything about
//! live partial matches is out of line, since most events of most keys find
//! none.
//!
//! The files, by job: `runs` (a run and a partition's set of them, their
//! windows and deadlines), `step` (one event against a partition: how
//! runs bind it, Kleene loops and forward edges, and what becomes a match),
//! `emit` (final matches: selection, order, after-match skip),
//! `partitions` (finding, creating and giving up a key's state),
//! `timers` (the watermark and deadlines), `history` (`PREV` and the
//! frame), `negation` (deferred negations' log), `kind_cache` (type
//! tests once per kind) and `snapshot` (checkpoints).

mod bound;
mod emit;
mod history;
mod kind_cache;
mod lazy;
mod negation;
mod partitions;
mod runs;
mod snapshot;
mod step;
mod timers;

pub use lazy::lazy_fits;

// At their old paths (`cep_nfa::engine::…`), so that other crates keep
// compiling.
pub use crate::engines::api::{LateEvent, Stats, StreamEvent};
pub use snapshot::EngineSnapshot;
// Shared with the stack engine.
pub(crate) use partitions::partition_key;
pub(crate) use step::apply_updates;

use cep_core::budget::Meter;
use cep_core::keys::KeyIndex;
use cep_core::{Match, Timestamp, Value};
use cep_time::wheel::TimerWheel;

use crate::buffer::{Buffer, Node};
use crate::engines::api::{MatchEngine, MatchQueue};
use crate::engines::error::RestoreError;
use crate::idle::IdleParts;
use crate::program::{Program, SharedFramePred};

use emit::Done;
use history::{FramePlan, HistoryShape, Prev1};
use kind_cache::{KIND_WAYS, KindAnswer, NO_ANSWER};
use negation::NegLog;
use partitions::{Hot, Partition, may_give_up};
use runs::{Finals, RunSet};
use step::completions_ok;
use timers::Armed;

/// The run engine for one query.
///
/// # Examples
/// ```
/// use cep_core::{Event, Schema, Sym, Value};
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::engine::Engine;
///
/// let mut schema = Schema::new();
/// let x = schema.field("x");
/// let q = compile("PATTERN SEQ(A a, B b) WHERE b.x > a.x", &mut schema, &Options::default()).unwrap();
/// let mut engine = Engine::new(q.programs.into_iter().next().unwrap());
/// let ev = |ty: &str, ts, row, v| Event::new(Sym::new(ty), ts, row, vec![Value::Int(v)]);
/// engine.push(&ev("A", 1, 0, 5)).unwrap();
/// engine.push(&ev("B", 2, 1, 3)).unwrap();   // not above 5: skipped
/// engine.push(&ev("B", 3, 2, 7)).unwrap();
/// engine.finish();
/// let rows: Vec<Vec<u64>> = engine.drain().map(|m| m.rows).collect();
/// assert_eq!(rows, [vec![0, 2]]);
/// assert_eq!(engine.stats().nodes, 0);
/// # let _ = x;
/// ```
pub struct Engine<E> {
    prog: Program<E>,
    parts: Vec<Partition>,
    hot: Vec<Hot>,
    ring: Vec<Value>,
    shape: HistoryShape,
    /// The type tests' answers for the last kinds of event seen, by kind
    /// modulo [`KIND_WAYS`].
    kind_cache: [KindAnswer; KIND_WAYS],
    index: KeyIndex,
    buffer: Buffer,
    /// One timer per partition with partial matches, at its earliest
    /// deadline (window expiry or the end of a quiet period).
    timers: TimerWheel<u32>,
    /// Each partition's timer; apart from [`Hot`] so that the record every
    /// event reads stays half a cache line.
    armed: Vec<Armed>,
    /// No timer is due before this (a lower bound, so `advance` can skip the
    /// wheel on most events).
    next_due: Timestamp,
    fired: Vec<(Timestamp, u32)>,
    /// Partitions given up (no partial match, no `PREV` history, no
    /// negation log: nothing a later event of the key could need), to
    /// reuse, and when to look for more; see
    /// [`drop_idle_partitions`](Self::drop_idle_partitions). A partition
    /// is given up exactly when the index no longer maps its key to it.
    idle: IdleParts,
    watermark: Timestamp,
    seq: u64,
    /// Final matches, to the callback or queued, and the matches handed
    /// back ([`recycle`](Self::recycle)), whose vectors the next final
    /// runs fill.
    out: MatchQueue,
    stats: Stats,
    // Scratch, reused across events.
    frame: Vec<Value>,
    /// Bit j: element j accepts the current event's type.
    acc: u64,
    /// Bit g: negation g accepts it.
    neg_acc: u64,
    null_regs: Vec<Value>,
    child_regs: Vec<Value>,
    extra: RunSet,
    done: Vec<Done>,
    path: Vec<Node>,
    done_runs: Finals,
    deferred_mask: u64,
    /// Most runs per partition (`usize::MAX`: no cap).
    max_runs: usize,
    /// The job's state bound, this engine's share of it (see `bound`).
    meter: Meter,
    /// Live runs and pending matches of all partitions (the sum of their
    /// `Hot::live`), for the state's weight in O(1).
    live_total: usize,
    /// Stopped at the state bound: events are ignored.
    halted: bool,
    /// Children of this event's runs not made: they would not fit in the
    /// state bound.
    refused: u64,
    /// Where remote conditions are asked (`None`: they do not hold).
    remote: Option<std::sync::Arc<cep_core::remote::RemoteLink>>,
    /// Lazy remote evaluation, when chosen (`lazy`).
    lazy: Option<Box<lazy::Lazy>>,
    /// How to fill the frame, by kind of slot.
    plan: FramePlan,
    /// The one `PREV` is `PREV(x)` of a field `x`: the history is that
    /// field's last value, kept while filling the frame.
    prev1: Option<Prev1>,
    /// The elements an event can start a partial match at, less those
    /// whose skipped elements' completion conditions fail on empty
    /// registers (a constant), with their conditions.
    starts: Vec<StartTest>,
}

/// A start element and its conditions, gathered once so that testing an
/// event for a new partial match calls the predicates directly.
struct StartTest {
    elem: u16,
    /// Conditions over the frame (every condition compiled from text).
    frame: Vec<SharedFramePred>,
    /// Indexes of the element's other conditions (builder closures).
    event: Vec<usize>,
}

impl StartTest {
    fn of<E>(prog: &Program<E>, j: u16) -> StartTest {
        let conds = &prog.elements[j as usize].conds;
        // `skip_first` conditions never apply to an element's first event.
        let live = || conds.iter().enumerate().filter(|(_, c)| !c.skip_first);
        StartTest {
            elem: j,
            frame: live().filter_map(|(_, c)| c.frame_pred.clone()).collect(),
            event: live().filter(|(_, c)| c.frame_pred.is_none()).map(|(i, _)| i).collect(),
        }
    }
}

impl<E: StreamEvent> Engine<E> {
    /// An engine for `prog`.
    pub fn new(prog: Program<E>) -> Engine<E> {
        let stride = prog.regs;
        let n = prog.elements.len();
        let nneg = prog.negations.len();
        assert!(nneg <= 64, "at most 64 negations per query");
        assert!(n <= 64, "at most 64 positive elements per query");
        let deferred_mask =
            prog.negations.iter().enumerate().filter(|(_, g)| g.deferred.is_some()).fold(0u64, |m, (i, _)| m | 1 << i);
        let shape = HistoryShape { cols: prog.history.len(), depth: prog.history_depth };
        Engine {
            parts: Vec::new(),
            hot: Vec::new(),
            ring: Vec::new(),
            shape,
            kind_cache: [NO_ANSWER; KIND_WAYS],
            index: KeyIndex::default(),
            buffer: Buffer::default(),
            timers: TimerWheel::new(),
            armed: Vec::new(),
            next_due: Timestamp::MAX,
            fired: Vec::new(),
            idle: IdleParts::new(may_give_up(&prog)),
            watermark: Timestamp::MIN,
            seq: 0,
            out: MatchQueue::default(),
            stats: Stats::default(),
            frame: vec![Value::Null; prog.frame.len()],
            acc: 0,
            neg_acc: 0,
            null_regs: vec![Value::Null; stride],
            child_regs: vec![Value::Null; stride],
            extra: RunSet::new(stride),
            done: Vec::new(),
            path: Vec::new(),
            done_runs: Finals::new(if prog.emit.is_empty() { 0 } else { stride }),
            deferred_mask,
            max_runs: usize::MAX,
            meter: Meter::default(),
            live_total: 0,
            halted: false,
            refused: 0,
            remote: None,
            lazy: None,
            plan: FramePlan::of(&prog),
            prev1: Prev1::of(&prog),
            starts: prog
                .graph
                .start
                .iter()
                .filter(|&&j| completions_ok(&prog, 0, j as usize, &vec![Value::Null; stride]))
                .map(|&j| StartTest::of(&prog, j))
                .collect(),
            prog,
        }
    }

    /// Delivers matches to `f` as they become final, instead of queueing
    /// them for [`drain`](Engine::drain) and [`pop`](Engine::pop).
    ///
    /// # Examples
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let prog = compile("PATTERN SEQ(A a, B b)", &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog);
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// engine.set_callback(move |m| sink.lock().unwrap().push(m.rows));
    /// for (row, ty) in ["A", "B"].into_iter().enumerate() {
    ///     engine.push(&Event::new(Sym::new(ty), row as i64, row as u64, vec![])).unwrap();
    /// }
    /// assert_eq!(*seen.lock().unwrap(), [vec![0, 1]]);
    /// assert!(engine.pop().is_none());
    /// ```
    pub fn set_callback(&mut self, f: impl FnMut(Match) + Send + 'static) {
        self.out.set_callback(f);
    }

    /// Gives up idle partitions (see the crate's README, "Memory per
    /// engine") only once at least `n` partitions are in use (default
    /// [`FIRST_LOOK`](crate::idle::FIRST_LOOK), 16,384): fewer keys keep
    /// their partitions however idle, so keys that come back after their
    /// window do not remake theirs.
    pub fn set_first_idle_look(&mut self, n: usize) {
        self.idle.set_first_look(n);
    }

    /// Asks this query's remote conditions (LANGUAGE.md §8) through `link`,
    /// blocking: a candidate whose local conditions hold waits for each
    /// call's answer before the run goes on. Without a link, a remote
    /// condition does not hold.
    pub fn set_remote(&mut self, link: std::sync::Arc<cep_core::remote::RemoteLink>) {
        self.remote = Some(link);
    }

    /// Bounds the partial matches (runs) of each key to `cap`, so that a
    /// hostile stream cannot exhaust memory: when an event leaves a key
    /// with more, the oldest created are dropped (counted in
    /// [`Stats::dropped`]); matches that needed them are lost. Complete
    /// matches waiting for a deadline are not partial and never dropped.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let prog = compile("PATTERN SEQ(A a, B b)", &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog);
    /// engine.set_max_partials_per_key(2);
    /// for (row, ty) in ["A", "A", "A", "B"].into_iter().enumerate() {
    ///     engine.push(&Event::new(Sym::new(ty), row as i64, row as u64, vec![])).unwrap();
    /// }
    /// assert_eq!(engine.stats().dropped, 1);
    /// let rows: Vec<Vec<u64>> = engine.drain().map(|m| m.rows).collect();
    /// assert_eq!(rows, [vec![1, 3], vec![2, 3]]); // the first A was dropped
    /// ```
    pub fn set_max_partials_per_key(&mut self, cap: usize) {
        self.max_runs = cap.max(1);
    }

    /// The program.
    pub fn program(&self) -> &Program<E> {
        &self.prog
    }

    /// The current watermark (`i64::MIN` before any event).
    pub fn watermark(&self) -> Timestamp {
        self.watermark
    }

    /// Counters and gauges.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.runs = self.parts.iter().map(|p| p.runs.len()).sum();
        s.pending = self.parts.iter().map(|p| p.pending.len()).sum();
        s.nodes = self.buffer.len();
        s.partitions = self.idle.in_use(self.parts.len());
        s.state_bytes =
            (s.runs + s.pending) * self.run_bytes() + s.nodes * Buffer::NODE_BYTES + self.buffer.object_bytes();
        s
    }

    /// Matches emitted and not yet taken.
    pub fn drain(&mut self) -> std::collections::vec_deque::Drain<'_, Match> {
        self.out.drain()
    }

    /// Takes the oldest match not yet taken.
    #[inline]
    pub fn pop(&mut self) -> Option<Match> {
        self.out.pop()
    }

    /// Hands back a match taken with [`pop`](Self::pop) and done with: a
    /// later match is built in its vectors. (At most
    /// [`SPARE_MATCHES`](crate::spare::SPARE_MATCHES) are kept.)
    #[inline]
    pub fn recycle(&mut self, m: Match) {
        self.out.recycle(m);
    }

    /// Whether a match waits to be taken ([`pop`](Self::pop) would give
    /// one). Cheap: callers look before they pop, since most events
    /// complete nothing.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let prog = compile("PATTERN SEQ(A a, B b)", &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog);
    /// engine.push(&Event::new(Sym::new("A"), 1, 0, vec![])).unwrap();
    /// assert!(!engine.has_matches());
    /// engine.push(&Event::new(Sym::new("B"), 2, 1, vec![])).unwrap();
    /// assert!(engine.has_matches());
    /// ```
    #[inline]
    pub fn has_matches(&self) -> bool {
        self.out.has_matches()
    }

    /// Processes one event. Events must come in non-decreasing `ts` order
    /// (ties in arrival order); an event behind the watermark is rejected.
    #[inline]
    pub fn push(&mut self, e: &E) -> Result<(), LateEvent> {
        self.drop_idle_partitions_when_due();
        self.push_at(e, None)
    }

    /// Processes events in order, as [`push`](Self::push) would one by one,
    /// and faster: the partitions of a few events ahead are looked up and
    /// their state brought into the cache before those events are
    /// processed, so the cache misses of several events overlap instead of
    /// following one another. Stops at the first late event: its index and
    /// why (the events before it were processed, it and the rest were not).
    ///
    /// The matches of the whole slice wait in the queue until taken, so a
    /// query with many matches per event wants short slices: the lookahead
    /// spans 8 events, and slices of 8 to 16 get all of its gain.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog);
    /// let ev = |ty: &str, ts, k| Event::new(Sym::new(ty), ts, ts as u64, vec![Value::Int(k)]);
    /// let events = [ev("A", 0, 1), ev("A", 1, 2), ev("B", 2, 2), ev("B", 3, 1), ev("A", 1, 1)];
    /// let (at, late) = engine.push_batch(&events).unwrap_err();
    /// assert_eq!((at, late.ts, late.watermark), (4, 1, 3));
    /// let rows: Vec<Vec<u64>> = engine.drain().map(|m| m.rows).collect();
    /// assert_eq!(rows, [vec![1, 2], vec![0, 3]]);
    /// ```
    #[inline]
    pub fn push_batch(&mut self, events: &[E]) -> Result<(), (usize, LateEvent)> {
        /// Events looked up ahead: enough misses to overlap, few enough
        /// that their lines are still cached when the events come.
        const AHEAD: usize = 8;
        let mut pids = [u32::MAX; AHEAD];
        for (c, chunk) in events.chunks(AHEAD).enumerate() {
            // Not while the chunk holds partitions looked up ahead.
            self.drop_idle_partitions_when_due();
            let mut touched = 0u32;
            for (slot, e) in pids.iter_mut().zip(chunk) {
                // A partition the chunk creates is looked up again below.
                *slot = self.index.get(&partition_key(&self.prog, e)).unwrap_or(u32::MAX);
                if let Some(h) = self.hot.get(*slot as usize) {
                    touched |= h.live;
                }
            }
            std::hint::black_box(touched);
            for (i, e) in chunk.iter().enumerate() {
                let hint = (pids[i] != u32::MAX).then_some(pids[i]);
                self.push_at(e, hint).map_err(|late| (c * AHEAD + i, late))?;
            }
        }
        Ok(())
    }

    /// [`push`](Self::push), with the event's partition when the caller
    /// knows it.
    #[inline(always)]
    fn push_at(&mut self, e: &E, pid: Option<u32>) -> Result<(), LateEvent> {
        let ts = e.timestamp();
        if ts < self.watermark {
            return Err(LateEvent { ts, watermark: self.watermark });
        }
        if self.halted {
            return Ok(());
        }
        if self.lazy.is_some() {
            self.pump(None);
        }
        self.advance(ts);
        let row = e.row().unwrap_or(self.seq);
        self.seq += 1;
        self.stats.events += 1;
        let (any, trail_acc) = self.accept(e);
        let pid = match pid {
            Some(p) => p,
            None => self.partition_of(e),
        };
        self.process(pid, e, ts, row, any, trail_acc);
        Ok(())
    }

    /// Ends the input: every pending match becomes final and all state is
    /// released (the buffer is empty afterwards).
    pub fn finish(&mut self) {
        if self.watermark < Timestamp::MAX {
            self.advance(Timestamp::MAX);
        }
        for pid in 0..self.parts.len() {
            let part = &mut self.parts[pid];
            part.runs.clear(&mut self.buffer);
            let pending = std::mem::replace(&mut part.pending, RunSet::new(self.prog.regs));
            for (i, r) in pending.runs.iter().enumerate() {
                self.queue_done(pid as u32, r, pending.regs(i));
            }
            self.parts[pid].log = NegLog::default();
            self.set_live(pid as u32, 0);
        }
        let mut fired = std::mem::take(&mut self.fired);
        self.timers.drain(&mut fired);
        fired.clear();
        self.fired = fired;
        self.armed.iter_mut().for_each(|a| *a = None);
        self.next_due = Timestamp::MAX;
        self.emit_done();
        self.pump_to_the_end();
    }
}

impl<E: StreamEvent> MatchEngine<E> for Engine<E> {
    type Snapshot = EngineSnapshot;

    fn program(&self) -> &Program<E> {
        self.program()
    }

    fn watermark(&self) -> Timestamp {
        self.watermark()
    }

    /// A trailing `NOT`'s quiet period ending makes its matches final.
    #[inline]
    fn emits_on_advance(&self) -> bool {
        self.prog.trailing.is_some()
    }

    #[inline]
    fn push(&mut self, e: &E) -> Result<(), LateEvent> {
        self.push(e)
    }

    #[inline]
    fn push_batch(&mut self, events: &[E]) -> Result<(), (usize, LateEvent)> {
        self.push_batch(events)
    }

    #[inline]
    fn advance(&mut self, wm: Timestamp) {
        self.advance(wm);
    }

    fn settle_answers(&mut self) -> usize {
        self.pump(None);
        self.parked()
    }

    fn finish(&mut self) {
        self.finish();
    }

    #[inline]
    fn matches(&self) -> &MatchQueue {
        &self.out
    }

    #[inline]
    fn matches_mut(&mut self) -> &mut MatchQueue {
        &mut self.out
    }

    fn stats(&self) -> Stats {
        self.stats()
    }

    fn set_max_partials_per_key(&mut self, cap: usize) {
        self.set_max_partials_per_key(cap);
    }

    fn set_state_budget(&mut self, budget: std::sync::Arc<cep_core::budget::StateBudget>) {
        self.set_state_budget(budget);
    }

    fn set_remote(&mut self, link: std::sync::Arc<cep_core::remote::RemoteLink>) {
        self.set_remote(link);
    }

    fn set_lazy(&mut self) -> bool {
        self.set_lazy()
    }

    fn set_auto(&mut self) -> bool {
        self.set_auto()
    }

    fn halted(&self) -> bool {
        self.halted()
    }

    fn snapshot(&self) -> EngineSnapshot {
        self.snapshot()
    }

    fn restore(&mut self, snap: EngineSnapshot) -> Result<(), RestoreError> {
        self.restore(snap)
    }
}

impl<E> std::fmt::Debug for Engine<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("query", &self.prog.name)
            .field("watermark", &self.watermark)
            .field("partitions", &self.parts.len())
            .field("nodes", &self.buffer.len())
            .field("queued", &self.out.len())
            .finish_non_exhaustive()
    }
}
