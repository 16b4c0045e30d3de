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

use std::cmp::Ordering;

use cep_core::keys::KeyIndex;
use cep_core::{Match, Timestamp, Value};
use cep_time::wheel::{TimerId, TimerWheel};

use crate::buffer::{Buffer, NIL, Node, NodeId};
use crate::idle::{self, IdleParts};
use crate::program::{FrameSlot, Program, RegOp, RegUpdate, Selection, SharedFramePred, SkipTo, Strategy, Window};

use crate::engines::api::{MatchEngine, MatchQueue};
use crate::engines::error::RestoreError;
// At their old paths, so that other crates keep compiling.
pub use crate::engines::api::{LateEvent, Stats, StreamEvent};

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Run {
    /// Last bound element.
    elem: u16,
    /// Smallest `after` of a negation triggered since the last binding:
    /// forward edges to elements beyond it are blocked.
    block_at: u16,
    /// Events bound to `elem`.
    count: u32,
    start_ts: Timestamp,
    last_ts: Timestamp,
    start_pos: u64,
    last_pos: u64,
    /// After this ts the run can bind nothing (for a pending match: `end`).
    expires: Timestamp,
    /// After this position the run can bind nothing.
    expires_pos: u64,
    node: NodeId,
}

/// Runs with their registers, `stride` values each.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RunSet {
    runs: Vec<Run>,
    regs: Vec<Value>,
    stride: usize,
}

impl RunSet {
    fn new(stride: usize) -> RunSet {
        RunSet { runs: Vec::new(), regs: Vec::new(), stride }
    }

    fn push(&mut self, run: Run, regs: &[Value]) {
        self.runs.push(run);
        self.regs.extend_from_slice(regs);
    }

    fn regs(&self, i: usize) -> &[Value] {
        &self.regs[i * self.stride..(i + 1) * self.stride]
    }

    fn len(&self) -> usize {
        self.runs.len()
    }

    /// Moves run `from` to slot `to` (`to <= from`).
    fn move_to(&mut self, from: usize, to: usize) {
        if from != to {
            self.runs[to] = self.runs[from];
            let s = self.stride;
            self.regs.copy_within(from * s..(from + 1) * s, to * s);
        }
    }

    fn truncate(&mut self, n: usize) {
        self.runs.truncate(n);
        self.regs.truncate(n * self.stride);
    }

    fn append(&mut self, other: &mut RunSet) {
        self.runs.append(&mut other.runs);
        self.regs.append(&mut other.regs);
    }

    /// Removes the runs `drop` selects, releasing their nodes.
    fn retain(&mut self, buffer: &mut Buffer, mut drop: impl FnMut(&Run) -> bool) {
        let mut w = 0;
        for i in 0..self.runs.len() {
            if drop(&self.runs[i]) {
                buffer.release(self.runs[i].node);
            } else {
                self.move_to(i, w);
                w += 1;
            }
        }
        self.truncate(w);
    }

    /// Removes the first `n` runs (the oldest created), releasing their
    /// nodes; returns `n`.
    fn drop_oldest(&mut self, n: usize, buffer: &mut Buffer) -> usize {
        for r in &self.runs[..n] {
            buffer.release(r.node);
        }
        self.runs.drain(..n);
        self.regs.drain(..n * self.stride);
        n
    }

    fn clear(&mut self, buffer: &mut Buffer) {
        for r in &self.runs {
            buffer.release(r.node);
        }
        self.runs.clear();
        self.regs.clear();
    }
}

/// Places in an engine's cache of type-test answers. An event's kind is
/// its type's symbol number, which can be large (symbols are numbered
/// across all the strings a process interned): a cache indexed by it grew
/// to 24 bytes times the largest, in every engine. Direct-mapped, it is a
/// fixed 384 bytes, and streams of up to 16 types (of numbers distinct
/// modulo 16) run every type test once per type.
const KIND_WAYS: usize = 16;

/// The type tests' answers for one kind of event.
#[derive(Clone, Copy, Debug)]
struct KindAnswer {
    /// `u32::MAX`: no answer held.
    kind: u32,
    /// Whether the trailing negation accepts it.
    trail: bool,
    /// Bit j: element j accepts it.
    acc: u64,
    /// Bit g: negation g accepts it.
    neg: u64,
}

const NO_ANSWER: KindAnswer = KindAnswer { kind: u32::MAX, trail: false, acc: 0, neg: 0 };

/// Shape of the per-partition `PREV` history: the last `depth` events'
/// `cols` values, a ring. A small ring lives inside the partition's [`Hot`]
/// record; a larger one in a flat vector shared by all partitions.
#[derive(Clone, Copy, Debug)]
struct HistoryShape {
    cols: usize,
    depth: usize,
}

/// Ring values kept inside [`Hot`].
const INLINE_RING: usize = 1;

impl HistoryShape {
    fn stride(self) -> usize {
        self.cols * self.depth
    }

    fn inline(self) -> bool {
        self.stride() <= INLINE_RING
    }

    /// Column `col` of the event `n` (≥ 1) positions back.
    #[inline(always)]
    fn get(self, ring: &[Value], head: u16, len: u16, n: usize, col: usize) -> Value {
        if n == 0 || n > len as usize {
            return Value::Null;
        }
        if self.depth == 1 {
            // `PREV(x)`, the common case: the ring is the previous row.
            return ring[col];
        }
        // head + depth - n < 2 * depth: one conditional subtraction, no division.
        let mut row = head as usize + self.depth - n;
        if row >= self.depth {
            row -= self.depth;
        }
        ring[row * self.cols + col]
    }

    /// Makes room for the newest row: returns where its `cols` values go.
    #[inline(always)]
    fn push(self, head: &mut u16, len: &mut u16) -> usize {
        if self.depth == 1 {
            *len = 1;
            return 0;
        }
        let base = *head as usize * self.cols;
        *head = if *head as usize + 1 == self.depth { 0 } else { *head + 1 };
        *len = (*len + 1).min(self.depth as u16);
        base
    }
}

/// Candidate events of deferred negations: (position, which negations'
/// types accept it) and its frame, oldest first. Entries before `start` are
/// dead; they are compacted away once they are the majority.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct NegLog {
    pos: Vec<(u64, u64)>,
    frames: Vec<Value>,
    start: usize,
}

impl NegLog {
    fn push(&mut self, pos: u64, mask: u64, frame: &[Value]) {
        self.pos.push((pos, mask));
        self.frames.extend_from_slice(frame);
    }

    /// Forgets entries before position `min`.
    fn prune(&mut self, min: u64, width: usize) {
        while self.pos.get(self.start).is_some_and(|&(p, _)| p < min) {
            self.start += 1;
        }
        if self.start > 32 && self.start * 2 > self.pos.len() {
            self.pos.drain(..self.start);
            self.frames.drain(..self.start * width);
            self.start = 0;
        }
    }

    /// Whether no entry is live.
    fn is_empty(&self) -> bool {
        self.start == self.pos.len()
    }

    /// Live entries: (position, mask, frame).
    fn entries(&self, width: usize) -> impl Iterator<Item = (u64, u64, &[Value])> {
        self.pos[self.start..].iter().enumerate().map(move |(i, &(p, m))| {
            let at = (self.start + i) * width;
            (p, m, &self.frames[at..at + width])
        })
    }
}

/// The state of a partition that every one of its events touches, kept
/// apart from [`Partition`] so that an event of a partition without live
/// partial matches reads one small struct and its `PREV` ring.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[repr(align(32))]
struct Hot {
    next_pos: u64,
    /// Live runs and pending matches: when 0, [`Partition`] is not read.
    live: u32,
    hist_head: u16,
    hist_len: u16,
    /// The `PREV` ring when it is small ([`HistoryShape::inline`]).
    ring: [Value; INLINE_RING],
}

/// Whether `prog` may give partitions up: not when it keeps `PREV`
/// history per key (a key's next event needs it, however long after).
fn may_give_up<E>(prog: &Program<E>) -> bool {
    prog.history_depth == 0 && prog.history.is_empty()
}

/// A partition's timer on the wheel, if it has one (the handle carries the
/// deadline).
type Armed = Option<TimerId>;

/// The deadline of a partition's timer (`MAX`: none).
fn armed_at(armed: Armed) -> Timestamp {
    armed.map_or(Timestamp::MAX, |id| id.deadline())
}

/// The partial matches of a partition.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Partition {
    key: Value,
    runs: RunSet,
    pending: RunSet,
    log: NegLog,
}

/// A match that became final, before selection and skipping.
#[derive(Debug)]
struct Done {
    part: u32,
    node: NodeId,
    start: Timestamp,
    end: Timestamp,
    start_pos: u64,
    last_pos: u64,
    rows: Vec<u64>,
    ends: Vec<u32>,
    /// Start positions of the partial matches its emission discards
    /// (after-match skip), inclusive.
    discard: Option<(u64, u64)>,
    discarded: bool,
}

/// The saved state of an [`Engine`] (see [`Engine::snapshot`]): plain
/// data, serialisable with serde; strings are saved as text.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct EngineSnapshot {
    parts: Vec<Partition>,
    scheduled: Vec<Timestamp>,
    hot: Vec<Hot>,
    ring: Vec<Value>,
    nodes: Vec<(u32, Node)>,
    watermark: Timestamp,
    seq: u64,
    stats: SavedStats,
}

/// The counters as an [`EngineSnapshot`] holds them: the fields, in their
/// order, that [`Stats`] had before it gained the stack engine's, so that a
/// checkpoint's bytes stay as they were (the engine counts `events`,
/// `matches` and `dropped`; the gauges are measured when asked).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct SavedStats {
    events: u64,
    matches: u64,
    runs: usize,
    pending: usize,
    nodes: usize,
    partitions: usize,
    state_bytes: usize,
    dropped: u64,
}

impl SavedStats {
    fn of(s: Stats) -> SavedStats {
        let Stats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped, .. } = s;
        SavedStats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped }
    }

    fn stats(self) -> Stats {
        let SavedStats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped } = self;
        Stats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped, ..Stats::default() }
    }
}

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
    done_runs: Vec<Run>,
    deferred_mask: u64,
    /// Most runs per partition (`usize::MAX`: no cap).
    max_runs: usize,
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
            done_runs: Vec::new(),
            deferred_mask,
            max_runs: usize::MAX,
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
        let per_run = std::mem::size_of::<Run>() + self.prog.regs * std::mem::size_of::<Value>();
        s.state_bytes = (s.runs + s.pending) * per_run + s.nodes * Buffer::NODE_BYTES;
        s
    }

    /// The engine's matching state, for a checkpoint: every partition's
    /// partial matches with their registers, `PREV` history and negation
    /// log, the match buffer, the watermark and the counters. Take it
    /// between events, after the matches emitted so far were taken (they are
    /// not part of it); timers and caches are rebuilt by
    /// [`restore`](Self::restore).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let q = "PATTERN SEQ(A a, B b) WITHIN 10";
    /// let prog = || compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog());
    /// engine.push(&Event::new(Sym::new("A"), 1, 0, vec![])).unwrap();
    /// let saved = engine.snapshot();
    ///
    /// let mut resumed = Engine::new(prog()); // e.g. in a new process
    /// resumed.restore(saved).unwrap();
    /// resumed.push(&Event::new(Sym::new("B"), 5, 1, vec![])).unwrap();
    /// assert_eq!(resumed.pop().unwrap().rows, [0, 1]);
    /// ```
    pub fn snapshot(&self) -> EngineSnapshot {
        debug_assert!(!self.out.has_matches() && self.done.is_empty(), "snapshot between events, matches taken");
        // Partitions given up are left out (nothing refers to them). Only a
        // query without history gives any up, so the ring is empty then.
        debug_assert!(self.idle.none_given_up() || self.ring.is_empty());
        let pids = || (0..self.parts.len()).filter(|&pid| self.in_use(pid));
        EngineSnapshot {
            parts: pids().map(|pid| self.parts[pid].clone()).collect(),
            scheduled: pids().map(|pid| armed_at(self.armed[pid])).collect(),
            hot: pids().map(|pid| self.hot[pid]).collect(),
            ring: self.ring.clone(),
            nodes: self.buffer.nodes(),
            watermark: self.watermark,
            seq: self.seq,
            stats: SavedStats::of(self.stats),
        }
    }

    /// Replaces this engine's state with a [`snapshot`](Self::snapshot) of
    /// an engine of the same program. An error (and the state left empty)
    /// when the snapshot does not fit the program.
    pub fn restore(&mut self, mut snap: EngineSnapshot) -> Result<(), RestoreError> {
        let fits = snap.parts.len() == snap.hot.len()
            && snap.parts.len() == snap.scheduled.len()
            && snap.parts.iter().all(|p| p.runs.stride == self.prog.regs && p.pending.stride == self.prog.regs)
            && (self.shape.inline() || snap.ring.len() == snap.parts.len() * self.shape.stride());
        if !fits {
            return Err(RestoreError::unfit(&self.prog.name));
        }
        let buffer = self.checked_state(&mut snap)?;
        let mut index = KeyIndex::default();
        for (pid, p) in snap.parts.iter().enumerate() {
            index.insert(p.key, pid as u32);
        }
        let mut timers = TimerWheel::new();
        let mut none = Vec::new();
        if snap.watermark > Timestamp::MIN {
            timers.advance_to(snap.watermark, &mut none);
        }
        let armed = snap
            .scheduled
            .iter()
            .enumerate()
            .map(|(pid, &at)| (at < Timestamp::MAX).then(|| timers.insert(at, pid as u32)))
            .collect();
        self.next_due = timers.next_bound().unwrap_or(Timestamp::MAX);
        self.timers = timers;
        self.armed = armed;
        self.index = index;
        self.buffer = buffer;
        self.idle.restored(snap.parts.len());
        self.parts = snap.parts;
        self.hot = snap.hot;
        self.ring = snap.ring;
        self.watermark = snap.watermark;
        self.seq = snap.seq;
        self.stats = snap.stats.stats();
        self.kind_cache = [NO_ANSWER; KIND_WAYS];
        self.out.clear();
        Ok(())
    }

    /// The buffer of a saved state, after checking what the engine relies
    /// on and no engine writes otherwise: every run's element and node
    /// exist, registers and negation logs have their widths, `PREV` rings
    /// their shape, and each node's reference count is the number of runs
    /// and nodes that refer to it (recounted, not read). A state that fails
    /// (made by hand, or by another program) would make the engine panic
    /// later.
    fn checked_state(&self, snap: &mut EngineSnapshot) -> Result<Buffer, RestoreError> {
        let bad = |what: &str| RestoreError::inconsistent(&self.prog.name, what);
        let elements = self.prog.elements.len();
        let (width, depth) = (self.frame.len(), self.shape.depth);
        let counts = [snap.seq, snap.stats.events, snap.stats.matches, snap.stats.dropped];
        if !crate::select::saved_counts_fit(counts.into_iter().chain(snap.hot.iter().map(|h| h.next_pos))) {
            return Err(bad("a count beyond 2^62"));
        }
        let (mut buffer, ids) = Buffer::from_nodes(std::mem::take(&mut snap.nodes), elements).map_err(|e| bad(&e))?;
        for (p, hot) in snap.parts.iter_mut().zip(&snap.hot) {
            for set in [&mut p.runs, &mut p.pending] {
                if set.regs.len() != set.runs.len() * set.stride {
                    return Err(bad("registers of another width"));
                }
                for r in &mut set.runs {
                    if r.elem as usize >= elements {
                        return Err(bad("a run at an element the query lacks"));
                    }
                    if r.start_pos > r.last_pos || r.last_pos >= hot.next_pos || r.start_ts > r.last_ts {
                        return Err(bad("a run whose events are out of order"));
                    }
                    if r.node != NIL {
                        r.node = *ids.get(&r.node).ok_or_else(|| bad("a run whose buffer node is missing"))?;
                    }
                }
            }
            let log = &p.log;
            if log.start > log.pos.len() || log.frames.len() != log.pos.len() * width {
                return Err(bad("a negation log of another width"));
            }
        }
        let ring_ok = |h: &Hot| depth == 0 || (usize::from(h.hist_head) < depth && usize::from(h.hist_len) <= depth);
        if !snap.hot.iter().all(ring_ok) {
            return Err(bad("a `PREV` history of another depth"));
        }
        let refs = snap.parts.iter().flat_map(|p| p.runs.runs.iter().chain(&p.pending.runs)).map(|r| r.node);
        buffer.count_refs(refs).map_err(|e| bad(&e))?;
        Ok(buffer)
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

    /// The partition of `e`, created when it is the key's first event.
    #[inline]
    fn partition_of(&mut self, e: &E) -> u32 {
        let prog = &self.prog;
        let key = partition_key(prog, e);
        match self.index.get(&key) {
            Some(p) => p,
            None => self.new_partition(key),
        }
    }

    /// A partition for `key`, which has none: a given-up one reused, or a
    /// new one. (Out of line: most events find their partition.)
    #[inline(never)]
    fn new_partition(&mut self, key: Value) -> u32 {
        let prog = &self.prog;
        let hot = Hot { next_pos: 0, live: 0, hist_head: 0, hist_len: 0, ring: [Value::Null; INLINE_RING] };
        let p = match self.idle.reuse() {
            // Given up with nothing in it (no history, so no ring either).
            Some(p) => {
                self.parts[p as usize].key = key;
                self.hot[p as usize] = hot;
                p
            }
            None => {
                self.parts.push(Partition {
                    key,
                    runs: RunSet::new(prog.regs),
                    pending: RunSet::new(prog.regs),
                    log: NegLog::default(),
                });
                self.armed.push(None);
                self.hot.push(hot);
                if !self.shape.inline() {
                    self.ring.resize(self.ring.len() + self.shape.stride(), Value::Null);
                }
                (self.parts.len() - 1) as u32
            }
        };
        self.index.insert(key, p);
        p
    }

    /// Gives up every partition with nothing a later event of its key could
    /// need — no partial match, no pending match, no live negation log (and
    /// the query keeps no `PREV` history, else none is given up) — so that a
    /// stream of ever new keys (an order id, a session) keeps memory in
    /// proportion to the keys with partial matches, not to all keys seen.
    /// A key that comes back gets a fresh partition, as its first event
    /// would: positions within a partition only order its own partial
    /// matches. Called before an event when the partitions in use have
    /// doubled since the last call, and are at least the first look's
    /// count ([`IdleParts`]), so it costs O(1) amortised per partition
    /// created.
    fn drop_idle_partitions(&mut self) {
        debug_assert!(self.done.is_empty(), "between events");
        for pid in 0..self.parts.len() {
            let part = &self.parts[pid];
            if part.runs.len() + part.pending.len() > 0 || !part.log.is_empty() || !self.in_use(pid) {
                continue;
            }
            // A timer armed for runs since gone would find nothing.
            if let Some(id) = self.armed[pid].take() {
                self.timers.discard(id);
            }
            self.index.remove(&part.key);
            self.parts[pid].log = NegLog::default();
            self.idle.give_up(pid as u32);
        }
        self.idle.looked(self.parts.len());
    }

    /// [`drop_idle_partitions`](Self::drop_idle_partitions) when the
    /// partitions in use have doubled since the last look.
    #[inline(always)]
    fn drop_idle_partitions_when_due(&mut self) {
        if self.idle.due(self.parts.len()) {
            self.drop_idle_partitions();
        }
    }

    /// Whether partition `pid` is not given up ([`idle::in_use`]).
    fn in_use(&self, pid: usize) -> bool {
        idle::in_use(&self.index, &self.parts[pid].key, pid)
    }

    /// Runs the type tests for `e` into `acc` / `neg_acc`; returns whether
    /// anything accepts it and whether the trailing negation does.
    #[inline(always)]
    fn accept(&mut self, e: &E) -> (bool, bool) {
        // (Kind `u32::MAX` marks an empty place, so it is not cached.)
        let kind = if self.prog.accepts_by_kind { e.kind().filter(|&k| k != NO_ANSWER.kind) } else { None };
        if let Some(k) = kind
            && let answer = self.kind_cache[k as usize % KIND_WAYS]
            && answer.kind == k
        {
            let (acc, neg, trail) = (answer.acc, answer.neg, answer.trail);
            self.acc = acc;
            self.neg_acc = neg;
            return (acc != 0 || neg != 0 || trail, trail);
        }
        self.run_type_tests(e, kind)
    }

    /// [`accept`](Self::accept) without a cached answer: runs the tests
    /// (and caches the answer for the kind).
    #[inline(never)]
    fn run_type_tests(&mut self, e: &E, kind: Option<u32>) -> (bool, bool) {
        let prog = &self.prog;
        let mut acc = 0u64;
        for (j, el) in prog.elements.iter().enumerate() {
            acc |= u64::from((el.accepts)(e)) << j;
        }
        let mut neg = 0u64;
        for (g, n) in prog.negations.iter().enumerate() {
            neg |= u64::from((n.accepts)(e)) << g;
        }
        let trail = prog.trailing.as_ref().is_some_and(|t| (t.accepts)(e));
        if let Some(kind) = kind {
            self.kind_cache[kind as usize % KIND_WAYS] = KindAnswer { kind, trail, acc, neg };
        }
        self.acc = acc;
        self.neg_acc = neg;
        (acc != 0 || neg != 0 || trail, trail)
    }

    /// Moves the watermark to `wm`: every deadline before it fires. The
    /// watermark never moves back.
    #[inline]
    pub fn advance(&mut self, wm: Timestamp) {
        if wm <= self.watermark {
            return;
        }
        if wm <= self.next_due {
            self.watermark = wm;
            return;
        }
        self.fire(wm);
    }

    /// Fires the deadlines before `wm` and moves the watermark there.
    #[inline(never)]
    fn fire(&mut self, wm: Timestamp) {
        let mut fired = std::mem::take(&mut self.fired);
        self.timers.advance_to(wm, &mut fired);
        for &(_, pid) in &fired {
            self.armed[pid as usize] = None;
        }
        for &(_, pid) in &fired {
            self.sweep(pid, wm);
        }
        fired.clear();
        self.fired = fired;
        self.next_due = self.timers.next_bound().unwrap_or(Timestamp::MAX);
        self.watermark = wm;
        self.emit_done();
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
            for r in pending.runs {
                self.queue_done(pid as u32, &r);
            }
            self.parts[pid].log = NegLog::default();
            self.hot[pid].live = 0;
        }
        let mut fired = std::mem::take(&mut self.fired);
        self.timers.drain(&mut fired);
        fired.clear();
        self.fired = fired;
        self.armed.iter_mut().for_each(|a| *a = None);
        self.next_due = Timestamp::MAX;
        self.emit_done();
    }

    /// Drops expired runs and collects due pending matches of a partition.
    fn sweep(&mut self, pid: u32, wm: Timestamp) {
        let part = &mut self.parts[pid as usize];
        part.runs.retain(&mut self.buffer, |r| r.expires < wm);
        let mut due = std::mem::take(&mut self.done_runs);
        let mut w = 0;
        for i in 0..part.pending.len() {
            let r = part.pending.runs[i];
            if r.expires < wm {
                due.push(r);
            } else {
                part.pending.move_to(i, w);
                w += 1;
            }
        }
        part.pending.truncate(w);
        for r in &due {
            self.queue_done(pid, r);
        }
        due.clear();
        self.done_runs = due;
        self.reschedule(pid);
    }

    /// Updates a partition's live count and its place in the deadline heap
    /// after its partial matches changed.
    fn reschedule(&mut self, pid: u32) {
        let part = &self.parts[pid as usize];
        let hot = &mut self.hot[pid as usize];
        hot.live = (part.runs.len() + part.pending.len()) as u32;
        let d = part.runs.runs.iter().chain(&part.pending.runs).map(|r| r.expires).min().unwrap_or(Timestamp::MAX);
        let armed = &mut self.armed[pid as usize];
        if d < armed_at(*armed) {
            if let Some(old) = armed.take() {
                self.timers.discard(old);
            }
            *armed = Some(self.timers.insert(d, pid));
            self.next_due = self.next_due.min(d);
        }
    }

    /// Turns a final run into a [`Done`] (taking over its node reference).
    fn queue_done(&mut self, pid: u32, r: &Run) {
        self.buffer.path(r.node, &mut self.path);
        let n = self.prog.elements.len();
        let (mut rows, mut ends) = match self.out.take_spare() {
            Some(m) => (m.rows, m.ends),
            None => (Vec::with_capacity(self.path.len()), Vec::with_capacity(n)),
        };
        rows.clear();
        ends.clear();
        ends.resize(n, 0);
        for node in &self.path {
            rows.push(node.row);
            ends[node.elem as usize] += 1;
        }
        let discard = skip_range(self.prog.skip, &self.path);
        let mut acc = 0;
        for e in ends.iter_mut() {
            acc += *e;
            *e = acc;
        }
        let end = match &self.prog.trailing {
            Some(_) => r.expires,
            None => r.last_ts,
        };
        self.done.push(Done {
            part: pid,
            node: r.node,
            start: r.start_ts,
            end,
            start_pos: r.start_pos,
            last_pos: r.last_pos,
            rows,
            ends,
            discard,
            discarded: false,
        });
    }

    /// One event of partition `pid`: its frame, the partition's live runs
    /// (out of line: most events of most keys find none), new partial
    /// matches, the `PREV` history and the deadlines.
    #[inline(always)]
    fn process(&mut self, pid: u32, e: &E, ts: Timestamp, row: u64, any: bool, trail_acc: bool) {
        let shape = self.shape;
        let h = &mut self.hot[pid as usize];
        let pos = h.next_pos;
        h.next_pos += 1;
        let live = h.live > 0;
        if any {
            let frame = &mut self.frame[..];
            // `PREV` values first: they are read before the event joins the
            // history.
            match self.prev1 {
                Some(p) => frame[p.prev] = if h.hist_len > 0 { h.ring[0] } else { Value::Null },
                None => {
                    let ring: &[Value] = if shape.inline() {
                        &h.ring[..shape.stride()]
                    } else {
                        &self.ring[pid as usize * shape.stride()..(pid as usize + 1) * shape.stride()]
                    };
                    for &(slot, col, n) in &self.plan.prevs {
                        frame[slot as usize] = shape.get(ring, h.hist_head, h.hist_len, n as usize, col as usize);
                    }
                }
            }
            for &(slot, i) in &self.plan.fields {
                frame[slot as usize] = e.field(i);
            }
            for &slot in &self.plan.computed {
                if let FrameSlot::Field(x) = &self.prog.frame[slot as usize] {
                    frame[slot as usize] = x(e);
                }
            }
            if let Some(p) = self.prev1 {
                // From the event, not from the frame: reloading a value just
                // stored would stall store forwarding.
                h.ring[0] = e.field(p.column);
                h.hist_len = 1;
            }
        }
        if live {
            self.offer(pid, e, ts, pos, row, any, trail_acc);
        }
        let mut started = false;
        if any {
            for s in 0..self.starts.len() {
                let t = &self.starts[s];
                let j = t.elem as usize;
                let (frame, regs) = (&self.frame[..], &self.null_regs[..]);
                if self.acc >> j & 1 == 1
                    && t.frame.iter().all(|p| p(frame, regs))
                    && t.event.iter().all(|&c| (self.prog.elements[j].conds[c].pred)(e, frame, regs))
                {
                    self.start(pid, j, ts, pos, row);
                    started = true;
                }
            }
        }
        if shape.depth > 0 && !(any && self.prev1.is_some()) {
            self.remember(pid, e);
        }
        if live || started {
            self.settle_partition(pid, pos);
        }
        self.emit_done();
    }

    /// Offers the event to the live runs of partition `pid`: a trailing
    /// negation kills pending matches whose quiet period it falls in; each
    /// run may bind it (children go to `extra`, matches to `done_runs`) and
    /// survives or not by the strategy; middle negations block edges.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn offer(&mut self, pid: u32, e: &E, ts: Timestamp, pos: u64, row: u64, any: bool, trail_acc: bool) {
        let Engine { prog, parts, buffer, frame, acc, neg_acc, child_regs, extra, done_runs, .. } = self;
        let (frame, acc, neg_acc) = (&frame[..], *acc, *neg_acc);
        let part = &mut parts[pid as usize];

        if trail_acc && let Some(t) = &prog.trailing {
            let mut w = 0;
            for i in 0..part.pending.len() {
                let r = part.pending.runs[i];
                let kill = ts <= r.expires && t.conds.iter().all(|c| c.test(e, frame, part.pending.regs(i)));
                if kill {
                    buffer.release(r.node);
                } else {
                    part.pending.move_to(i, w);
                    w += 1;
                }
            }
            part.pending.truncate(w);
        }

        let strategy = prog.strategy;
        let stride = prog.regs;
        let g = &prog.graph;
        let mut w = 0;
        for i in 0..part.runs.len() {
            let mut run = part.runs.runs[i];
            if run.expires < ts || run.expires_pos < pos {
                buffer.release(run.node);
                continue;
            }
            let k = run.elem as usize;
            let mut relevant = false;
            if any {
                let regs = &part.runs.regs[i * stride..(i + 1) * stride];
                let mut left_ok: Option<bool> = None;
                for &j in &g.cands[k] {
                    let j = j as usize;
                    if acc >> j & 1 == 0 || !window_ok(prog, &run, j, ts, pos) {
                        continue;
                    }
                    if j != k {
                        let ok = *left_ok.get_or_insert_with(|| completions_ok(prog, k, k + 1, regs));
                        if !ok || !completions_ok(prog, k + 1, j, regs) {
                            continue;
                        }
                    }
                    let count_before = if j == k { run.count } else { 0 };
                    if !conds_ok(prog, j, e, frame, regs, count_before) {
                        continue;
                    }
                    relevant = true;
                    if (run.block_at as usize) < j {
                        continue;
                    }
                    child_regs.copy_from_slice(regs);
                    let step = Step { frame, ts, pos, row };
                    if let Some(child) = bind(prog, buffer, &part.log, step, child_regs, Some(&run), j, count_before) {
                        settle(prog, buffer, child, child_regs, &part.log, extra, &mut part.pending, done_runs);
                    }
                }
            }
            let keep = match strategy {
                Strategy::AnyMatch => true,
                Strategy::NextMatch => !relevant,
                Strategy::Strict => false,
            };
            if !keep {
                buffer.release(run.node);
                continue;
            }
            if any && neg_acc != 0 {
                let regs = &part.runs.regs[i * stride..(i + 1) * stride];
                for (gi, neg) in prog.negations.iter().enumerate() {
                    if neg_acc >> gi & 1 == 0
                        || neg.deferred.is_some()
                        || neg.after < k
                        || neg.after >= run.block_at as usize
                    {
                        continue;
                    }
                    if neg.early.iter().all(|c| c.test(e, frame, regs)) {
                        run.block_at = neg.after as u16;
                    }
                }
                // Not Kleene and every forward edge blocked: the run is dead.
                if !g.kleene[k] && g.next[k].first().is_some_and(|&j| (run.block_at as usize) < j as usize) {
                    buffer.release(run.node);
                    continue;
                }
            }
            part.runs.runs[i] = run;
            part.runs.move_to(i, w);
            w += 1;
        }
        part.runs.truncate(w);
    }

    /// The event starts a partial match at element `j` (its conditions
    /// hold).
    #[inline(never)]
    fn start(&mut self, pid: u32, j: usize, ts: Timestamp, pos: u64, row: u64) {
        let Engine { prog, parts, buffer, frame, null_regs, child_regs, extra, done_runs, .. } = self;
        let part = &mut parts[pid as usize];
        child_regs.copy_from_slice(null_regs);
        let step = Step { frame, ts, pos, row };
        if let Some(child) = bind(prog, buffer, &part.log, step, child_regs, None, j, 0) {
            settle(prog, buffer, child, child_regs, &part.log, extra, &mut part.pending, done_runs);
        }
    }

    /// Pushes the event's `PREV` columns onto partition `pid`'s history.
    #[inline(always)]
    fn remember(&mut self, pid: u32, e: &E) {
        let shape = self.shape;
        let h = &mut self.hot[pid as usize];
        let base = shape.push(&mut h.hist_head, &mut h.hist_len);
        let row = if shape.inline() {
            &mut h.ring[base..base + shape.cols]
        } else {
            let at = pid as usize * shape.stride() + base;
            &mut self.ring[at..at + shape.cols]
        };
        // From the event, not from the frame just filled: reloading values
        // just stored would stall store forwarding.
        for (v, f) in row.iter_mut().zip(&self.prog.history) {
            *v = match f {
                FrameSlot::At(i) => e.field(*i),
                FrameSlot::Field(x) => x(e),
                FrameSlot::Prev { .. } => Value::Null,
            };
        }
    }

    /// After an event changed partition `pid`'s partial matches: adds the
    /// new runs (within the key's cap), logs the event for deferred
    /// negations, queues the matches that became final, and reschedules
    /// the partition's timer.
    #[inline(never)]
    fn settle_partition(&mut self, pid: u32, pos: u64) {
        let Engine { parts, buffer, frame, neg_acc, extra, deferred_mask, max_runs, stats, .. } = self;
        let part = &mut parts[pid as usize];
        if !extra.runs.is_empty() {
            part.runs.append(extra);
            // Only new runs can take a key past its cap.
            if part.runs.len() > *max_runs {
                stats.dropped += part.runs.drop_oldest(part.runs.len() - *max_runs, buffer) as u64;
            }
        }
        if *deferred_mask != 0 {
            let mask = *neg_acc & *deferred_mask;
            if mask != 0 && !part.runs.runs.is_empty() {
                part.log.push(pos, mask, frame);
            }
            let min_start = part.runs.runs.iter().map(|r| r.start_pos).min().unwrap_or(u64::MAX);
            part.log.prune(min_start, frame.len());
        }
        if !self.done_runs.is_empty() {
            let mut finished = std::mem::take(&mut self.done_runs);
            for r in &finished {
                self.queue_done(pid, r);
            }
            finished.clear();
            self.done_runs = finished;
        }
        self.reschedule(pid);
    }

    /// Emits the queued final matches: selection, order, after-match skip.
    #[inline]
    fn emit_done(&mut self) {
        if !self.done.is_empty() {
            self.emit_queued();
        }
    }

    #[inline(never)]
    fn emit_queued(&mut self) {
        let mut done = std::mem::take(&mut self.done);
        if self.prog.select != Selection::All {
            let latest = self.prog.select == Selection::Latest;
            done.sort_by(|a, b| {
                (a.part, a.last_pos).cmp(&(b.part, b.last_pos)).then_with(|| {
                    let o = cmp_start_rows(a, b);
                    if latest { o.reverse() } else { o }
                })
            });
            let mut prev: Option<(u32, u64)> = None;
            for d in done.iter_mut() {
                let group = Some((d.part, d.last_pos));
                if group == prev {
                    d.discarded = true;
                }
                prev = group;
            }
        }
        done.sort_by(|a, b| a.end.cmp(&b.end).then_with(|| cmp_start_rows(a, b)));
        for i in 0..done.len() {
            if done[i].discarded {
                continue;
            }
            let d = &done[i];
            let key = self.parts[d.part as usize].key;
            let m = Match {
                query: 0,
                key,
                start: d.start,
                end: d.end,
                rows: std::mem::take(&mut done[i].rows),
                ends: std::mem::take(&mut done[i].ends),
            };
            self.out.emit(m);
            self.stats.matches += 1;
            let d = &done[i];
            if let Some((lo, hi)) = d.discard {
                let pid = d.part;
                let part = &mut self.parts[pid as usize];
                let hit = |s: u64| lo <= s && s <= hi;
                part.runs.retain(&mut self.buffer, |r| hit(r.start_pos));
                part.pending.retain(&mut self.buffer, |r| hit(r.start_pos));
                self.hot[pid as usize].live = (part.runs.len() + part.pending.len()) as u32;
                for later in done[i + 1..].iter_mut() {
                    if later.part == pid && hit(later.start_pos) {
                        later.discarded = true;
                    }
                }
            }
        }
        for d in &done {
            self.buffer.release(d.node);
        }
        done.clear();
        self.done = done;
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

    fn snapshot(&self) -> EngineSnapshot {
        self.snapshot()
    }

    fn restore(&mut self, snap: EngineSnapshot) -> Result<(), RestoreError> {
        self.restore(snap)
    }
}

/// The event being processed.
#[derive(Clone, Copy)]
struct Step<'a> {
    frame: &'a [Value],
    ts: Timestamp,
    pos: u64,
    row: u64,
}

/// Positions whose partial matches a skip discards after match `d`.
fn skip_range(skip: SkipTo, path: &[Node]) -> Option<(u64, u64)> {
    let first = path.first()?.pos;
    let last = path.last()?.pos;
    let of = |x: usize| path.iter().filter(move |n| n.elem as usize == x).map(|n| n.pos);
    match skip {
        SkipTo::None => None,
        SkipTo::NextEvent => Some((first, first)),
        SkipTo::PastLastEvent => Some((first, last)),
        SkipTo::First(x) => of(x).next().filter(|&p| p > first).map(|p| (first, p - 1)),
        SkipTo::Last(x) => of(x).next_back().filter(|&p| p > first).map(|p| (first, p - 1)),
    }
}

fn cmp_start_rows(a: &Done, b: &Done) -> Ordering {
    a.start.cmp(&b.start).then_with(|| cmp_vars(a, b))
}

/// Rows compared variable by variable, each as a sequence.
fn cmp_vars(a: &Done, b: &Done) -> Ordering {
    cep_core::cmp_rows_by_var(&a.rows, &a.ends, &b.rows, &b.ends)
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

fn window_ok<E>(prog: &Program<E>, run: &Run, j: usize, ts: Timestamp, pos: u64) -> bool {
    match prog.window {
        Some(Window::Time(w)) if beyond(ts, run.start_ts, w) => return false,
        Some(Window::Events(n)) if pos - run.start_pos > n => return false,
        _ => {}
    }
    if j != run.elem as usize {
        match prog.elements[j].within {
            Some(Window::Time(w)) if beyond(ts, run.last_ts, w) => return false,
            Some(Window::Events(n)) if pos - run.last_pos > n => return false,
            _ => {}
        }
    }
    true
}

/// Whether `ts` lies more than `w` after `from`. A gap too wide for a
/// timestamp is wider than any window: saturating it to `Timestamp::MAX`
/// would let it pass a window of exactly that width.
fn beyond(ts: Timestamp, from: Timestamp, w: Timestamp) -> bool {
    ts.checked_sub(from).is_none_or(|gap| gap > w)
}

/// Completion conditions of the elements `lo..hi` hold.
fn completions_ok<E>(prog: &Program<E>, lo: usize, hi: usize, regs: &[Value]) -> bool {
    prog.elements[lo..hi].iter().all(|el| el.completion.iter().all(|c| (c.pred)(regs)))
}

fn conds_ok<E>(prog: &Program<E>, j: usize, e: &E, frame: &[Value], regs: &[Value], count_before: u32) -> bool {
    prog.elements[j].conds.iter().all(|c| (c.skip_first && count_before == 0) || c.test(e, frame, regs))
}

/// Whether a deferred negation's region holds a matching candidate.
fn negated_in_region<E>(prog: &Program<E>, gi: usize, log: &NegLog, regs: &[Value]) -> bool {
    let neg = &prog.negations[gi];
    let Some(d) = neg.deferred else { return false };
    let (Some(lo), Some(hi)) = (regs[d.lo as usize].as_i64(), regs[d.hi as usize].as_i64()) else {
        return false;
    };
    let width = prog.frame.len();
    log.entries(width).any(|(p, mask, frame)| {
        let p = p as i64;
        p > lo && p < hi && mask >> gi & 1 == 1 && neg.late.iter().all(|c| (c.pred)(frame, regs))
    })
}

/// Binds the event to element `j` as a child of `from` (or as a new
/// partial match): sets negation regions, runs deferred negation checks,
/// updates the registers and adds a buffer node. `None` when a deferred
/// negation rules the binding out.
#[allow(clippy::too_many_arguments)]
fn bind<E>(
    prog: &Program<E>,
    buffer: &mut Buffer,
    log: &NegLog,
    step: Step<'_>,
    regs: &mut [Value],
    from: Option<&Run>,
    j: usize,
    count_before: u32,
) -> Option<Run> {
    if let Some(r) = from {
        let k = r.elem as usize;
        for neg in &prog.negations {
            if let Some(d) = neg.deferred
                && k <= neg.after
                && neg.after < j
            {
                regs[d.lo as usize] = Value::Int(r.last_pos as i64);
                regs[d.hi as usize] = Value::Int(step.pos as i64);
            }
        }
        for (gi, neg) in prog.negations.iter().enumerate() {
            if let Some(d) = neg.deferred
                && k <= d.check_after
                && d.check_after < j
                && negated_in_region(prog, gi, log, regs)
            {
                return None;
            }
        }
    }
    apply_updates(&prog.elements[j].updates, regs, step.frame, count_before);
    if count_before == 0 && prog.elements[j].completion.iter().any(|c| c.at_first && !(c.pred)(regs)) {
        // A condition fixed by the first event already fails: no match can follow.
        return None;
    }
    let node = buffer.push(from.map_or(NIL, |r| r.node), j as u16, step.row, step.pos);
    let mut run = Run {
        elem: j as u16,
        block_at: u16::MAX,
        count: count_before + 1,
        start_ts: from.map_or(step.ts, |r| r.start_ts),
        last_ts: step.ts,
        start_pos: from.map_or(step.pos, |r| r.start_pos),
        last_pos: step.pos,
        expires: Timestamp::MAX,
        expires_pos: u64::MAX,
        node,
    };
    (run.expires, run.expires_pos) = deadlines(prog, &run);
    Some(run)
}

/// After a binding: a complete run becomes a match (or a pending one); a
/// run that can still grow is kept.
#[allow(clippy::too_many_arguments)]
fn settle<E>(
    prog: &Program<E>,
    buffer: &mut Buffer,
    child: Run,
    regs: &[Value],
    log: &NegLog,
    keep: &mut RunSet,
    pending: &mut RunSet,
    done: &mut Vec<Run>,
) {
    let j = child.elem as usize;
    let g = &prog.graph;
    if g.accepting[j] && completions_ok(prog, j, prog.elements.len(), regs) {
        let negated = prog.negations.iter().enumerate().any(|(gi, neg)| {
            neg.deferred.is_some_and(|d| d.check_after >= j) && negated_in_region(prog, gi, log, regs)
        });
        if !negated {
            buffer.retain(child.node);
            match &prog.trailing {
                Some(t) => {
                    let mut p = child;
                    p.expires = child.last_ts.saturating_add(t.quiet);
                    p.expires_pos = u64::MAX;
                    pending.push(p, regs);
                }
                None => done.push(child),
            }
        }
    }
    if g.kleene[j] || !g.next[j].is_empty() {
        keep.push(child, regs);
    } else {
        buffer.release(child.node);
    }
}

/// A program's frame slots by kind, so that filling a frame runs three
/// simple loops rather than a `match` per slot (whose merged arms compile
/// to a piecewise copy through the stack).
#[derive(Clone, Debug, Default)]
struct FramePlan {
    /// (slot, field index).
    fields: Vec<(u16, u32)>,
    /// (slot, history column, events back).
    prevs: Vec<(u16, u32, u32)>,
    /// Slots read by closures.
    computed: Vec<u16>,
}

impl FramePlan {
    fn of<E>(prog: &Program<E>) -> FramePlan {
        let mut plan = FramePlan::default();
        for (slot, f) in prog.frame.iter().enumerate() {
            let slot = slot as u16;
            match f {
                FrameSlot::At(i) => plan.fields.push((slot, *i)),
                FrameSlot::Prev { col, n } => plan.prevs.push((slot, *col as u32, *n as u32)),
                FrameSlot::Field(_) => plan.computed.push(slot),
            }
        }
        plan
    }
}

/// The common `PREV` shape: one history column, a field, one event back.
/// The history is then the field's last value, kept in [`Hot`] while the
/// frame is filled.
#[derive(Clone, Copy, Debug)]
struct Prev1 {
    /// The frame slot of `PREV(x)`.
    prev: usize,
    /// The event field `x`.
    column: u32,
}

impl Prev1 {
    fn of<E>(prog: &Program<E>) -> Option<Prev1> {
        let [FrameSlot::At(col_field)] = &prog.history[..] else { return None };
        let mut prevs = prog.frame.iter().enumerate().filter(|(_, f)| matches!(f, FrameSlot::Prev { .. }));
        let (prev, FrameSlot::Prev { col: 0, n: 1 }) = prevs.next()? else { return None };
        if prevs.next().is_some() || prog.history_depth != 1 {
            return None;
        }
        Some(Prev1 { prev, column: *col_field })
    }
}

/// The partition key of `e` (NULL without a partition).
#[inline]
pub(crate) fn partition_key<E: StreamEvent>(prog: &Program<E>, e: &E) -> Value {
    match &prog.key {
        None => Value::Null,
        Some((_, FrameSlot::At(i))) => e.field(*i),
        Some((_, FrameSlot::Field(f))) => f(e),
        Some((_, FrameSlot::Prev { .. })) => Value::Null,
    }
}

pub(crate) fn apply_updates(updates: &[RegUpdate], regs: &mut [Value], frame: &[Value], count_before: u32) {
    for u in updates {
        let r = u.reg as usize;
        match u.op {
            RegOp::Count => regs[r] = Value::Int(i64::from(count_before) + 1),
            RegOp::Last(s) => regs[r] = frame[s as usize],
            RegOp::First(s) => {
                if count_before == 0 {
                    regs[r] = frame[s as usize];
                }
            }
            RegOp::Nth(k, s) => {
                if count_before + 1 == k {
                    regs[r] = frame[s as usize];
                }
            }
            RegOp::Sum(s) => {
                if count_before == 0 {
                    regs[r] = Value::Null;
                    regs[r + 1] = Value::Null;
                }
                let (sum, n) = crate::compile::ops::sum_step(regs[r], regs[r + 1], frame[s as usize]);
                regs[r] = sum;
                regs[r + 1] = n;
            }
            RegOp::Avg(s) => {
                if count_before == 0 {
                    regs[r..r + 3].fill(Value::Null);
                }
                let (lo, hi, n) = crate::compile::ops::avg_step(regs[r], regs[r + 1], regs[r + 2], frame[s as usize]);
                regs[r] = lo;
                regs[r + 1] = hi;
                regs[r + 2] = n;
            }
            RegOp::Min(s) => regs[r] = crate::compile::ops::extreme_step(regs[r], frame[s as usize], Ordering::Less),
            RegOp::Max(s) => regs[r] = crate::compile::ops::extreme_step(regs[r], frame[s as usize], Ordering::Greater),
        }
    }
}

/// The latest ts and position at which a run can still bind an event.
fn deadlines<E>(prog: &Program<E>, run: &Run) -> (Timestamp, u64) {
    let (st, sp) = match prog.window {
        Some(Window::Time(w)) => (run.start_ts.saturating_add(w), u64::MAX),
        Some(Window::Events(n)) => (Timestamp::MAX, run.start_pos.saturating_add(n)),
        None => (Timestamp::MAX, u64::MAX),
    };
    let j = run.elem as usize;
    let mut t = Timestamp::MIN;
    let mut p = 0u64;
    for &o in &prog.graph.cands[j] {
        let (mut ot, mut op) = (st, sp);
        if o as usize != j {
            match prog.elements[o as usize].within {
                Some(Window::Time(w)) => ot = ot.min(run.last_ts.saturating_add(w)),
                Some(Window::Events(n)) => op = op.min(run.last_pos.saturating_add(n)),
                None => {}
            }
        }
        t = t.max(ot);
        p = p.max(op);
    }
    (t, p)
}
