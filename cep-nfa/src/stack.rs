//! The stack engine (active instance stacks, DESIGN.md §2.3): sequences of
//! single-event elements under skip-till-any-match, where building the
//! matches, not finding them, is the cost.
//!
//! Per partition there is one stack per element. An event that an element
//! accepts (its type, and its conditions on the event alone) is pushed on
//! that element's stack with a *link*: the most recent entry of the previous
//! stack that came before it. Every entry at or below the link is a valid
//! predecessor, so the matches ending at an accepting entry are the paths
//! that follow links downwards. Stacks are in event-time order, so a window
//! pops old entries from the bottom.
//!
//! Conditions between variables are checked while paths are built: a
//! condition is checked at the earliest element it names (by then every
//! element it reads is chosen), so a failing prefix is cut at once.
//!
//! Two ways to build matches ([`Construction`]):
//! - **per event** (SASE): when an accepting event arrives, a depth-first
//!   walk from it enumerates its matches at once;
//! - **aggregated-link batches**: accepting entries wait; at each batch
//!   boundary (the window length after the batch began, an explicit
//!   watermark past it, or the end of the input) consecutive accepting
//!   entries with the same link form a *cluster*, whose prefix paths are
//!   enumerated once and combined with every member. A match then comes out
//!   up to one window length (in event time) after its last event.

use std::ops::ControlFlow;

use cep_core::keys::KeyIndex;
use cep_core::{Match, Timestamp, Value};

use crate::engines::api::{LateEvent, MatchEngine, MatchQueue, Stats, StreamEvent};
use crate::engines::error::{EngineError, RestoreError};
use crate::idle::{self, IdleParts};
use crate::program::{FrameSlot, Program, SharedFramePred, Strategy, Window};
use crate::syntax::ast::{Quant, Selection};

/// A match as the stack engine builds it, borrowed for the duration of a
/// call: one row per variable, in `SEQ` order. Taking matches this way
/// ([`StackEngine::push_to`]) allocates nothing per match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchRef<'a> {
    /// The partition key (NULL without a partition).
    pub key: Value,
    /// ts of the first event.
    pub start: Timestamp,
    /// ts of the last event.
    pub end: Timestamp,
    /// The rows bound, one per variable.
    pub rows: &'a [u64],
}

impl MatchRef<'_> {
    /// An owned [`Match`] (for query 0).
    pub fn to_match(&self) -> Match {
        let mut m = Match { query: 0, key: self.key, start: 0, end: 0, rows: Vec::new(), ends: Vec::new() };
        self.fill(&mut m);
        m
    }

    /// [`to_match`](Self::to_match) into `m`, reusing its vectors.
    pub fn fill(&self, m: &mut Match) {
        (m.query, m.key, m.start, m.end) = (0, self.key, self.start, self.end);
        m.rows.clear();
        m.rows.extend_from_slice(self.rows);
        m.ends.clear();
        m.ends.extend(1..=self.rows.len() as u32);
    }
}

/// Counting mode's report: how many matches end at one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchCount {
    /// The partition key (NULL without a partition).
    pub key: Value,
    /// ts of the event.
    pub end: Timestamp,
    /// Its row.
    pub row: u64,
    /// Matches ending at it (at least 1).
    pub count: u128,
}

/// Where the matches an engine call finds go.
enum Sink<'a> {
    /// Every match, borrowed, until the visitor says stop.
    Matches(&'a mut dyn FnMut(&MatchRef<'_>) -> ControlFlow<()>),
    /// Per event, the number of matches ending at it.
    Counts(&'a mut dyn FnMut(&MatchCount)),
}

/// A [`Sink`] and whether its visitor has asked to stop.
struct Out<'a> {
    sink: Sink<'a>,
    stopped: bool,
}

impl<'a> Out<'a> {
    fn matches(f: &'a mut dyn FnMut(&MatchRef<'_>) -> ControlFlow<()>) -> Out<'a> {
        Out { sink: Sink::Matches(f), stopped: false }
    }

    fn counts(f: &'a mut dyn FnMut(&MatchCount)) -> Out<'a> {
        Out { sink: Sink::Counts(f), stopped: false }
    }

    fn is_counts(&self) -> bool {
        matches!(self.sink, Sink::Counts(_))
    }

    /// Hands over a match; false once the visitor has asked to stop.
    #[inline]
    fn send(&mut self, m: &MatchRef<'_>) -> bool {
        if let Sink::Matches(f) = &mut self.sink
            && !self.stopped
            && f(m).is_break()
        {
            self.stopped = true;
        }
        !self.stopped
    }

    fn count(&mut self, c: &MatchCount) {
        if let Sink::Counts(f) = &mut self.sink {
            f(c);
        }
    }
}

/// How the stack engine builds matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Construction {
    /// A depth-first walk from each accepting event as it arrives.
    PerEvent,
    /// Aggregated-link clusters, built in batches at window boundaries.
    Batch,
    /// Beyond the paper: each accepting event's matches as it arrives,
    /// enumerated forwards in row order from the stacks' link structure,
    /// touching only entries that lead to a match. Moving to the next match
    /// advances the deepest level that can (O(1)) and refills the levels
    /// above it by binary search, so the work is O(1) per match when
    /// prefixes have many extensions and O(k log w) at worst (k elements, w
    /// entries in the window); it stops as soon as a consumer does
    /// ([`StackEngine::push_until`]). Queries with conditions between
    /// variables fall back to `PerEvent`.
    Direct,
}

/// Why a program cannot run on the stack engine, or `Ok` when it can.
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::stack::qualifies;
/// let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 500";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// assert_eq!(qualifies(p), Ok(()));
/// let q = "PATTERN SEQ(A a, B+ b[], D d) WHERE skip-till-any-match";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// let err = qualifies(p).unwrap_err();
/// assert_eq!(err.to_string(), "element `b` is not a single event (`+`, `*` and `?` need the run engine)");
/// assert_eq!(err.variable(), Some("b"));
/// ```
pub fn qualifies<E>(prog: &Program<E>) -> Result<(), EngineError> {
    if prog.strategy != Strategy::AnyMatch {
        return Err(EngineError::strategy(prog.strategy.name()));
    }
    if let Some(e) = prog.elements.iter().find(|e| e.quant != Quant::One) {
        return Err(EngineError::not_single(&e.var));
    }
    if let Some(n) = prog.negations.first() {
        return Err(EngineError::negation(&n.var));
    }
    if let Some(t) = &prog.trailing {
        return Err(EngineError::trailing(&t.var));
    }
    if prog.select != Selection::All {
        return Err(EngineError::select());
    }
    if prog.skip != crate::program::SkipTo::None {
        return Err(EngineError::skip());
    }
    if let Some(e) = prog.elements.iter().find(|e| e.within.is_some()) {
        return Err(EngineError::element_window(&e.var));
    }
    if prog.history_depth > 0 {
        return Err(EngineError::prev());
    }
    for e in &prog.elements {
        for c in e.conds.iter().filter(|c| !c.skip_first) {
            if c.own_regs {
                return Err(EngineError::own_regs(&c.text, &e.var));
            }
            if c.earliest.is_some() && c.frame_pred.is_none() {
                return Err(EngineError::later(&c.text, &e.var));
            }
        }
    }
    Ok(())
}

/// One stack entry.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    ts: Timestamp,
    /// Position in its partition.
    pos: u64,
    row: u64,
    /// Absolute index of the most recent entry of the previous stack before
    /// this one (`NONE` on the first stack).
    link: u64,
}

const NONE: u64 = u64::MAX;

/// One element's stack. Entries are addressed by absolute index (stable
/// while old entries are popped from the bottom).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Stack {
    entries: Vec<Entry>,
    /// Frame values, `width` per entry.
    frames: Vec<Value>,
    /// Entries before this are popped (compacted away now and then).
    start: usize,
    /// Absolute index of `entries[0]`.
    offset: u64,
}

impl Stack {
    /// Absolute index of the bottom live entry.
    fn bottom(&self) -> u64 {
        self.offset + self.start as u64
    }

    /// One past the absolute index of the top entry.
    fn end(&self) -> u64 {
        self.offset + self.entries.len() as u64
    }

    fn get(&self, abs: u64) -> &Entry {
        &self.entries[(abs - self.offset) as usize]
    }

    fn frame(&self, abs: u64, width: usize) -> &[Value] {
        let i = (abs - self.offset) as usize * width;
        &self.frames[i..i + width]
    }

    fn push(&mut self, e: Entry, frame: &[Value]) -> u64 {
        self.entries.push(e);
        self.frames.extend_from_slice(frame);
        self.end() - 1
    }

    /// Pops entries from the bottom while `old` holds.
    fn expire(&mut self, width: usize, old: impl Fn(&Entry) -> bool) {
        while self.start < self.entries.len() && old(&self.entries[self.start]) {
            self.start += 1;
        }
        if self.start > 64 && self.start * 2 > self.entries.len() {
            self.entries.drain(..self.start);
            self.frames.drain(..self.start * width);
            self.offset += self.start as u64;
            self.start = 0;
        }
    }

    fn live(&self) -> usize {
        self.entries.len() - self.start
    }

    /// Empties the stack, keeping its capacity.
    fn clear(&mut self) {
        self.entries.clear();
        self.frames.clear();
        self.start = 0;
        self.offset = 0;
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Part {
    key: Value,
    next_pos: u64,
    stacks: Vec<Stack>,
    /// Batch mode: accepting entries not built yet, oldest first.
    pending: Vec<u64>,
}

impl Part {
    /// What the engine relies on and never breaks itself (a saved state that
    /// breaks it was made by hand, or by another program): each stack's
    /// popped entries are among its entries, the first stack's entries link
    /// nowhere, every other entry links nowhere or below the top of the
    /// previous stack, and the entries waiting for their batch are on the
    /// last stack.
    fn consistent(&self) -> bool {
        let stacks_ok = self
            .stacks
            .iter()
            .all(|s| s.start <= s.entries.len() && s.offset.checked_add(s.entries.len() as u64).is_some());
        let links_ok = self.stacks.iter().enumerate().all(|(k, s)| {
            let below = if k == 0 { 0 } else { self.stacks[k - 1].end() };
            s.entries.iter().all(|e| e.link == NONE || e.link < below)
        });
        let pending_ok =
            self.stacks.last().is_none_or(|last| self.pending.iter().all(|&i| i >= last.bottom() && i < last.end()));
        stacks_ok && links_ok && pending_ok
    }
}

/// The counters as a [`StackSnapshot`] holds them: the fields, in their
/// order, of the stack engine's own statistics before both engines shared
/// [`Stats`], so that a checkpoint's bytes stay as they were (`entries` is
/// [`Stats::runs`]; the gauges are measured when asked).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct SavedStats {
    events: u64,
    matches: u64,
    entries: usize,
    pending: usize,
    partitions: usize,
    clusters: u64,
    prefixes: u64,
    state_bytes: usize,
    dropped: u64,
}

impl SavedStats {
    fn of(s: Stats) -> SavedStats {
        let Stats { events, matches, runs, pending, partitions, clusters, prefixes, state_bytes, dropped, .. } = s;
        SavedStats { events, matches, entries: runs, pending, partitions, clusters, prefixes, state_bytes, dropped }
    }

    fn stats(self) -> Stats {
        let SavedStats { events, matches, entries, pending, partitions, clusters, prefixes, state_bytes, dropped } =
            self;
        Stats {
            events,
            matches,
            runs: entries,
            pending,
            partitions,
            clusters,
            prefixes,
            state_bytes,
            dropped,
            ..Stats::default()
        }
    }
}

/// The saved state of a [`StackEngine`] (see [`StackEngine::snapshot`]):
/// plain data, serialisable with serde.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StackSnapshot {
    parts: Vec<Part>,
    watermark: Timestamp,
    seq: u64,
    due: Timestamp,
    events_since_batch: u64,
    dirty: Vec<u32>,
    stats: SavedStats,
}

/// The stack engine over a qualifying [`Program`] (see [`qualifies`]).
///
/// # Examples
/// The aggregated-link paper's example (window 9): `a1 b3 a4 d5 b6 d7 d9`
/// has 7 matches of `SEQ(A, B, D)`; in a batch, `d7` and `d9` share the link
/// to `b6` and form one cluster.
/// ```
/// use cep_core::{Event, Schema, Sym};
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::stack::{Construction, StackEngine};
///
/// let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 9";
/// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
/// let mut engine = StackEngine::new(prog, Construction::Batch).unwrap();
/// for (ty, ts) in [("A", 1), ("B", 3), ("A", 4), ("D", 5), ("B", 6), ("D", 7), ("D", 9)] {
///     engine.push(&Event::new(Sym::new(ty), ts, ts as u64, vec![])).unwrap();
/// }
/// engine.finish();
/// let mut rows: Vec<Vec<u64>> = engine.drain().map(|m| m.rows).collect();
/// rows.sort();
/// assert_eq!(rows, [vec![1, 3, 5], vec![1, 3, 7], vec![1, 3, 9], vec![1, 6, 7], vec![1, 6, 9],
///                   vec![4, 6, 7], vec![4, 6, 9]]);
/// assert_eq!(engine.stats().clusters, 2); // {d5} and {d7, d9}
/// ```
pub struct StackEngine<E> {
    prog: Program<E>,
    construction: Construction,
    index: KeyIndex,
    parts: Vec<Part>,
    /// Partitions given up (nothing in their stacks a later event of the
    /// key could link to, no accepting entry waiting), to reuse; see
    /// [`drop_idle_partitions`](Self::drop_idle_partitions). A partition
    /// is given up exactly when the index no longer maps its key to it.
    idle: IdleParts,
    /// Matches found, to the callback or queued, and the matches handed
    /// back ([`recycle`](Self::recycle)), to fill again: a match-heavy
    /// query otherwise allocates two vectors per match.
    out: MatchQueue,
    watermark: Timestamp,
    seq: u64,
    width: usize,
    frame: Vec<Value>,
    /// Registers of the conditions on one event (all NULL).
    null_regs: Vec<Value>,
    /// Per element: indices of its conditions on the event alone.
    own: Vec<Vec<usize>>,
    /// Per level (earliest element named): the cross conditions checked
    /// there, as (owner, frame predicate).
    cross: Vec<Vec<(usize, SharedFramePred)>>,
    /// Batch mode: the next boundary, and the parts with pending entries.
    due: Timestamp,
    events_since_batch: u64,
    dirty: Vec<u32>,
    build: Build,
    stats: Stats,
    /// Some condition links two variables (or a completion condition
    /// reads registers): matches must be built to be checked.
    linked: bool,
    /// Most entries per stack and key (`u64::MAX`: no cap).
    max_entries: u64,
}

impl<E> std::fmt::Debug for StackEngine<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackEngine")
            .field("query", &self.prog.name)
            .field("construction", &self.construction)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Scratch of match construction.
#[derive(Debug, Default)]
struct Build {
    /// The path being built (absolute indices, by element).
    path: Vec<u64>,
    regs: Vec<Value>,
    /// Prefixes of a cluster: `n - 1` indices each, and their registers.
    prefixes: Vec<u64>,
    prefix_regs: Vec<Value>,
    /// Prefix numbers in row order.
    order: Vec<u32>,
    /// The rows of the match being emitted.
    rows: Vec<u64>,
    /// Counting mode's prefix sums (this level and the next).
    counts: Vec<u128>,
    counts_next: Vec<u128>,
}

/// Events between batches when the query has no window.
const UNWINDOWED_BATCH: u64 = 1024;

impl<E: StreamEvent> StackEngine<E> {
    /// An engine for `prog`, or why it cannot run here.
    pub fn new(prog: Program<E>, construction: Construction) -> Result<StackEngine<E>, EngineError> {
        qualifies(&prog)?;
        let n = prog.elements.len();
        let mut own = vec![Vec::new(); n];
        let mut cross = vec![Vec::new(); n];
        for (k, e) in prog.elements.iter().enumerate() {
            for (i, c) in e.conds.iter().enumerate().filter(|(_, c)| !c.skip_first) {
                match c.earliest {
                    None => own[k].push(i),
                    Some(j) => cross[j.min(k)].push((k, c.frame_pred.clone().expect("checked by qualifies"))),
                }
            }
        }
        let linked = cross.iter().any(|c| !c.is_empty()) || prog.elements.iter().any(|e| !e.completion.is_empty());
        Ok(StackEngine {
            linked,
            max_entries: u64::MAX,
            width: prog.frame.len(),
            frame: vec![Value::Null; prog.frame.len()],
            null_regs: vec![Value::Null; prog.regs],
            own,
            cross,
            construction,
            index: KeyIndex::default(),
            parts: Vec::new(),
            idle: IdleParts::new(true),
            out: MatchQueue::default(),
            watermark: Timestamp::MIN,
            seq: 0,
            due: Timestamp::MIN,
            events_since_batch: 0,
            dirty: Vec::new(),
            build: Build { path: vec![0; n], regs: vec![Value::Null; prog.regs], ..Build::default() },
            stats: Stats::default(),
            prog,
        })
    }

    /// The program.
    pub fn program(&self) -> &Program<E> {
        &self.prog
    }

    /// How matches are built.
    pub fn construction(&self) -> Construction {
        self.construction
    }

    /// Sends matches to `f` as they are found instead of queueing them.
    pub fn set_callback(&mut self, f: impl FnMut(Match) + Send + 'static) {
        self.out.set_callback(f);
    }

    /// Runs `step` with a visitor that queues each match (or hands it to
    /// the callback).
    fn collecting(&mut self, step: impl FnOnce(&mut Self, &mut dyn FnMut(&MatchRef<'_>))) {
        let mut out = std::mem::take(&mut self.out);
        let mut visit = |m: &MatchRef<'_>| {
            // A callback gets a new match; a queued one reuses a spare.
            let spare = if out.has_callback() { None } else { out.take_spare() };
            let owned = match spare {
                Some(mut owned) => {
                    m.fill(&mut owned);
                    owned
                }
                None => m.to_match(),
            };
            out.emit(owned);
        };
        step(self, &mut visit);
        self.out = out;
    }

    /// Gives up idle partitions (see the crate's README, "Memory per
    /// engine") only once at least `n` partitions are in use (default
    /// [`FIRST_LOOK`](crate::idle::FIRST_LOOK), 16,384): fewer keys keep
    /// their partitions however idle, so keys that come back after their
    /// window do not remake theirs.
    pub fn set_first_idle_look(&mut self, n: usize) {
        self.idle.set_first_look(n);
    }

    /// Bounds each element's stack to `cap` entries per key: when one
    /// holds more, entries of events more than `cap` of the key's events
    /// ago are dropped, oldest first (counted in [`Stats::dropped`]);
    /// matches that needed them are lost. An accepting entry waiting for its
    /// batch is never dropped. (The run engine's method of the same name
    /// bounds its runs per key; a stack entry is this engine's partial
    /// match.)
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog, Construction::Direct).unwrap();
    /// engine.set_max_partials_per_key(2);
    /// for (row, ty) in ["A", "A", "A", "B"].into_iter().enumerate() {
    ///     engine.push(&Event::new(Sym::new(ty), row as i64, row as u64, vec![])).unwrap();
    /// }
    /// assert_eq!(engine.stats().dropped, 1); // the first A
    /// let rows: Vec<Vec<u64>> = engine.drain().map(|m| m.rows).collect();
    /// assert_eq!(rows, [vec![1, 3], vec![2, 3]]);
    /// ```
    pub fn set_max_partials_per_key(&mut self, cap: usize) {
        self.max_entries = u64::try_from(cap).unwrap_or(u64::MAX).max(1);
    }

    /// The current watermark (`i64::MIN` before any event).
    pub fn watermark(&self) -> Timestamp {
        self.watermark
    }

    /// Counters and gauges: live stack entries count as runs (partial
    /// matches), accepting entries waiting for their batch as pending.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.runs = self.parts.iter().flat_map(|p| &p.stacks).map(Stack::live).sum();
        s.pending = self.parts.iter().map(|p| p.pending.len()).sum();
        s.partitions = self.idle.in_use(self.parts.len());
        s.state_bytes = s.runs * (std::mem::size_of::<Entry>() + self.width * std::mem::size_of::<Value>());
        s
    }

    /// The engine's state, for a checkpoint: every partition's stacks
    /// (entries, links and frames) and unbuilt batch entries, the watermark,
    /// the batch clock and the counters. Take it between events, after the
    /// matches emitted so far were taken.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 10";
    /// let prog = || compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog(), Construction::Direct).unwrap();
    /// engine.push(&Event::new(Sym::new("A"), 1, 0, vec![])).unwrap();
    /// let saved = engine.snapshot();
    ///
    /// let mut resumed = StackEngine::new(prog(), Construction::Direct).unwrap();
    /// resumed.restore(saved).unwrap();
    /// resumed.push(&Event::new(Sym::new("B"), 5, 1, vec![])).unwrap();
    /// assert_eq!(resumed.pop().unwrap().rows, [0, 1]);
    /// ```
    pub fn snapshot(&self) -> StackSnapshot {
        debug_assert!(!self.out.has_matches(), "snapshot between events, matches taken");
        // Partitions given up are left out, the others renumbered in order
        // (only `dirty` refers to them by number).
        let mut renumbered = vec![u32::MAX; self.parts.len()];
        let mut parts = Vec::with_capacity(self.idle.in_use(self.parts.len()));
        for (pid, part) in self.parts.iter().enumerate().filter(|&(pid, _)| self.in_use(pid)) {
            renumbered[pid] = parts.len() as u32;
            parts.push(part.clone());
        }
        StackSnapshot {
            parts,
            watermark: self.watermark,
            seq: self.seq,
            due: self.due,
            events_since_batch: self.events_since_batch,
            dirty: self.dirty.iter().map(|&pid| renumbered[pid as usize]).collect(),
            stats: SavedStats::of(self.stats),
        }
    }

    /// Replaces this engine's state with a [`snapshot`](Self::snapshot) of
    /// an engine of the same program; an error when it does not fit.
    pub fn restore(&mut self, snap: StackSnapshot) -> Result<(), RestoreError> {
        let n = self.prog.elements.len();
        let fits =
            snap.parts.iter().all(|p| {
                p.stacks.len() == n && p.stacks.iter().all(|s| s.frames.len() == s.entries.len() * self.width)
            }) && snap.dirty.iter().all(|&d| (d as usize) < snap.parts.len());
        if !fits {
            return Err(RestoreError::unfit(&self.prog.name));
        }
        let bad = |what: &str| RestoreError::inconsistent(&self.prog.name, what);
        let st = &snap.stats;
        let counts = [snap.seq, st.events, st.matches, st.clusters, st.prefixes, st.dropped];
        if !crate::select::saved_counts_fit(counts.into_iter().chain(snap.parts.iter().map(|p| p.next_pos))) {
            return Err(bad("a count beyond 2^62"));
        }
        if !snap.parts.iter().all(Part::consistent) {
            return Err(bad("its stacks' links"));
        }
        let mut index = KeyIndex::default();
        for (pid, p) in snap.parts.iter().enumerate() {
            index.insert(p.key, pid as u32);
        }
        self.index = index;
        self.idle.restored(snap.parts.len());
        self.parts = snap.parts;
        self.watermark = snap.watermark;
        self.seq = snap.seq;
        self.due = snap.due;
        self.events_since_batch = snap.events_since_batch;
        self.dirty = snap.dirty;
        self.stats = snap.stats.stats();
        self.out.clear();
        Ok(())
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
    /// one).
    #[inline]
    pub fn has_matches(&self) -> bool {
        self.out.has_matches()
    }

    /// Processes one event. Events must come in non-decreasing `ts` order
    /// (ties in arrival order); an event behind the watermark is rejected.
    pub fn push(&mut self, e: &E) -> Result<(), LateEvent> {
        let mut result = Ok(());
        self.collecting(|me, visit| result = me.push_to(e, visit));
        result
    }

    /// Processes events in order, as [`push`](Self::push) would one by one;
    /// stops at the first late event, with its index (the events before it
    /// were processed, it and the rest were not).
    pub fn push_batch(&mut self, events: &[E]) -> Result<(), (usize, LateEvent)> {
        let mut result = Ok(());
        self.collecting(|me, visit| {
            for (i, e) in events.iter().enumerate() {
                if let Err(late) = me.push_to(e, visit) {
                    result = Err((i, late));
                    return;
                }
            }
        });
        result
    }

    /// [`push`](Self::push), handing each match found to `visit` as a
    /// borrowed [`MatchRef`] instead of queueing an owned [`Match`].
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    /// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog, Construction::PerEvent).unwrap();
    /// let mut seen = Vec::new();
    /// for (row, ty) in ["A", "A", "B"].into_iter().enumerate() {
    ///     let e = Event::new(Sym::new(ty), row as i64, row as u64, vec![]);
    ///     engine.push_to(&e, &mut |m| seen.push(m.rows.to_vec())).unwrap();
    /// }
    /// assert_eq!(seen, [vec![0, 2], vec![1, 2]]);
    /// ```
    pub fn push_to(&mut self, e: &E, visit: &mut dyn FnMut(&MatchRef<'_>)) -> Result<(), LateEvent> {
        let mut go = |m: &MatchRef<'_>| {
            visit(m);
            ControlFlow::Continue(())
        };
        self.push_out(e, &mut Out::matches(&mut go))
    }

    /// [`push_to`](Self::push_to) for a visitor that may stop early: once it
    /// returns `Break`, no more matches of this call are built (with direct
    /// construction the enumeration stops right there, so a consumer that
    /// takes a few of an event's millions of matches pays for a few). The
    /// rest of this call's matches are dropped; the engine's state is as
    /// after a full call, so later events match as usual.
    ///
    /// # Examples
    /// ```
    /// use std::ops::ControlFlow;
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    /// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog, Construction::Direct).unwrap();
    /// let mut first = Vec::new();
    /// for row in 0..1000 {
    ///     engine.push_until(&Event::new(Sym::new("A"), row, row as u64, vec![]), &mut |_| ControlFlow::Continue(())).unwrap();
    /// }
    /// // 1,000 matches end at this B; take two.
    /// let b = Event::new(Sym::new("B"), 1000, 1000, vec![]);
    /// engine.push_until(&b, &mut |m| {
    ///     first.push(m.rows.to_vec());
    ///     if first.len() == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// }).unwrap();
    /// assert_eq!(first, [vec![0, 1000], vec![1, 1000]]);
    /// ```
    pub fn push_until(
        &mut self,
        e: &E,
        visit: &mut dyn FnMut(&MatchRef<'_>) -> ControlFlow<()>,
    ) -> Result<(), LateEvent> {
        self.push_out(e, &mut Out::matches(visit))
    }

    /// Counting mode: [`push`](Self::push), reporting for each event that
    /// ends matches how many, without building them when no condition links
    /// two variables (then the cost per event is linear in the entries in
    /// its window, not in its matches); with such conditions the matches
    /// are enumerated and counted.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    /// let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 9";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog, Construction::PerEvent).unwrap();
    /// let mut counts = Vec::new();
    /// for (ty, ts) in [("A", 1), ("B", 3), ("A", 4), ("D", 5), ("B", 6), ("D", 7), ("D", 9)] {
    ///     let e = Event::new(Sym::new(ty), ts, ts as u64, vec![]);
    ///     engine.push_count(&e, &mut |c| counts.push((c.row, c.count))).unwrap();
    /// }
    /// assert_eq!(counts, [(5, 1), (7, 3), (9, 3)]);
    /// ```
    pub fn push_count(&mut self, e: &E, visit: &mut dyn FnMut(&MatchCount)) -> Result<(), LateEvent> {
        self.push_out(e, &mut Out::counts(visit))
    }

    /// Counting mode's [`advance`](Self::advance).
    pub fn advance_count(&mut self, wm: Timestamp, visit: &mut dyn FnMut(&MatchCount)) {
        self.advance_out(wm, &mut Out::counts(visit));
    }

    /// Counting mode's [`finish`](Self::finish).
    pub fn finish_count(&mut self, visit: &mut dyn FnMut(&MatchCount)) {
        self.finish_out(&mut Out::counts(visit));
    }

    fn push_out(&mut self, e: &E, out: &mut Out<'_>) -> Result<(), LateEvent> {
        let ts = e.timestamp();
        if ts < self.watermark {
            return Err(LateEvent { ts, watermark: self.watermark });
        }
        self.advance_out(ts, out);
        if self.idle.due(self.parts.len()) {
            self.drop_idle_partitions();
        }
        let row = e.row().unwrap_or(self.seq);
        self.seq += 1;
        self.stats.events += 1;
        let key = crate::engine::partition_key(&self.prog, e);
        let pid = match self.index.get(&key) {
            Some(p) => p,
            None => self.new_partition(key),
        };
        let prog = &self.prog;
        let n = prog.elements.len();
        let part = &mut self.parts[pid as usize];
        let pos = part.next_pos;
        part.next_pos += 1;
        self.events_since_batch += 1;
        let mut acc = 0u64;
        for (k, el) in prog.elements.iter().enumerate() {
            acc |= u64::from((el.accepts)(e)) << k;
        }
        if acc == 0 {
            return Ok(());
        }
        expire(part, prog.window, ts, pos, self.width);
        if self.max_entries < u64::MAX {
            self.stats.dropped += cap_entries(part, pos, self.max_entries, self.width);
        }
        for (slot, f) in self.frame.iter_mut().zip(&prog.frame) {
            *slot = match f {
                FrameSlot::At(i) => e.field(*i),
                FrameSlot::Field(x) => x(e),
                FrameSlot::Prev { .. } => Value::Null,
            };
        }
        // Last element first, so an event both elements k and k + 1 accept
        // does not become its own predecessor.
        for k in (0..n).rev() {
            if acc >> k & 1 == 0 {
                continue;
            }
            let el = &prog.elements[k];
            if !self.own[k].iter().all(|&i| (el.conds[i].pred)(e, &self.frame, &self.null_regs)) {
                continue;
            }
            let link = if k == 0 {
                NONE
            } else {
                let below = &part.stacks[k - 1];
                if below.live() == 0 {
                    continue; // no predecessor
                }
                below.end() - 1
            };
            let abs = part.stacks[k].push(Entry { ts, pos, row, link }, &self.frame);
            if k == n - 1 {
                match self.construction {
                    Construction::Direct if !self.linked && !out.is_counts() => {
                        let x = *part.stacks[n - 1].get(abs);
                        self.stats.matches += enumerate_direct(prog.window, part, &x, &mut self.build, out);
                        self.stats.clusters += 1;
                    }
                    Construction::PerEvent | Construction::Direct => {
                        let q = QueryRef { prog, cross: &self.cross, width: self.width, linked: self.linked };
                        let (p, m) = build_cluster(&q, part, &[abs], &mut self.build, out);
                        self.stats.clusters += 1;
                        self.stats.prefixes += p;
                        self.stats.matches += m;
                    }
                    Construction::Batch => {
                        if part.pending.is_empty() {
                            self.dirty.push(pid);
                        }
                        part.pending.push(abs);
                    }
                }
            }
        }
        if self.construction == Construction::Batch && self.batch_due(ts) {
            self.build_batches(out);
        }
        Ok(())
    }

    /// A partition for `key`, which has none: a given-up one reused (its
    /// stacks emptied when it was given up), or a new one.
    #[inline(never)]
    fn new_partition(&mut self, key: Value) -> u32 {
        let p = match self.idle.reuse() {
            Some(p) => {
                self.parts[p as usize].key = key;
                p
            }
            None => {
                let stacks = (0..self.prog.elements.len()).map(|_| Stack::default()).collect();
                self.parts.push(Part { key, next_pos: 0, stacks, pending: Vec::new() });
                (self.parts.len() - 1) as u32
            }
        };
        self.index.insert(key, p);
        p
    }

    /// Gives up every partition that nothing a later event of its key
    /// could use: no accepting entry waits for its batch, and once the
    /// window is applied at the watermark, no stack but the last holds an
    /// entry (the last stack's entries are never a predecessor). So a
    /// stream of ever new keys keeps memory in proportion to the keys
    /// within a window of their last accepted event, not to all keys seen.
    /// A key that comes back gets a fresh partition, as its first event
    /// would: positions in a partition only order its own entries. (A
    /// query without a window, or with a window in events, gives up only
    /// partitions whose first stacks are empty: its entries wait for the
    /// key's next events however long it takes.) Called before an event
    /// when the partitions in use have doubled since the last call, and
    /// are at least the first look's count ([`IdleParts`]), so it costs
    /// O(1) amortised per partition created.
    fn drop_idle_partitions(&mut self) {
        let n = self.prog.elements.len();
        for pid in 0..self.parts.len() {
            if !self.in_use(pid) || !self.parts[pid].pending.is_empty() {
                continue;
            }
            let part = &mut self.parts[pid];
            // What the key's next event would expire (its ts is at least
            // the watermark, its position `next_pos`).
            expire(part, self.prog.window, self.watermark, part.next_pos, self.width);
            if part.stacks[..n - 1].iter().any(|s| s.live() > 0) {
                continue;
            }
            part.stacks.iter_mut().for_each(Stack::clear);
            part.next_pos = 0;
            self.index.remove(&part.key);
            self.idle.give_up(pid as u32);
        }
        self.idle.looked(self.parts.len());
    }

    /// Whether partition `pid` is not given up ([`idle::in_use`]).
    fn in_use(&self, pid: usize) -> bool {
        idle::in_use(&self.index, &self.parts[pid].key, pid)
    }

    /// Whether the batch that began earlier is due at watermark `wm`.
    fn batch_due(&mut self, wm: Timestamp) -> bool {
        let due = match self.prog.window {
            Some(Window::Time(_)) => wm >= self.due,
            Some(Window::Events(n)) => self.events_since_batch >= n.max(1),
            None => self.events_since_batch >= UNWINDOWED_BATCH,
        };
        due && !self.dirty.is_empty()
    }

    /// Moves the watermark to `wm`; in batch mode, a batch whose boundary it
    /// passes is built. The watermark never moves back.
    pub fn advance(&mut self, wm: Timestamp) {
        self.collecting(|me, visit| me.advance_to(wm, visit));
    }

    /// [`advance`](Self::advance), handing matches to `visit`.
    pub fn advance_to(&mut self, wm: Timestamp, visit: &mut dyn FnMut(&MatchRef<'_>)) {
        let mut go = |m: &MatchRef<'_>| {
            visit(m);
            ControlFlow::Continue(())
        };
        self.advance_out(wm, &mut Out::matches(&mut go));
    }

    fn advance_out(&mut self, wm: Timestamp, out: &mut Out<'_>) {
        if wm <= self.watermark {
            return;
        }
        self.watermark = wm;
        if self.construction == Construction::Batch && self.dirty.is_empty() {
            // A new batch begins with the next accepting entry's time.
            self.due = match self.prog.window {
                Some(Window::Time(w)) => wm.saturating_add(w.max(1)),
                _ => Timestamp::MAX,
            };
            self.events_since_batch = 0;
        } else if self.construction == Construction::Batch && self.batch_due(wm) {
            self.build_batches(out);
        }
    }

    /// Ends the input: every waiting accepting entry is built.
    pub fn finish(&mut self) {
        self.collecting(|me, visit| me.finish_to(visit));
    }

    /// [`finish`](Self::finish), handing matches to `visit`.
    pub fn finish_to(&mut self, visit: &mut dyn FnMut(&MatchRef<'_>)) {
        let mut go = |m: &MatchRef<'_>| {
            visit(m);
            ControlFlow::Continue(())
        };
        self.finish_out(&mut Out::matches(&mut go));
    }

    fn finish_out(&mut self, out: &mut Out<'_>) {
        if !self.dirty.is_empty() {
            self.build_batches(out);
        }
        self.watermark = Timestamp::MAX;
    }

    /// Builds every pending cluster of every partition.
    fn build_batches(&mut self, out: &mut Out<'_>) {
        let dirty = std::mem::take(&mut self.dirty);
        for &pid in &dirty {
            let part = &mut self.parts[pid as usize];
            let pending = std::mem::take(&mut part.pending);
            let last = &part.stacks[self.prog.elements.len() - 1];
            let mut i = 0;
            while i < pending.len() {
                let link = last.get(pending[i]).link;
                let j = i + pending[i..].iter().take_while(|&&a| last.get(a).link == link).count();
                let members = &pending[i..j];
                let q = QueryRef { prog: &self.prog, cross: &self.cross, width: self.width, linked: self.linked };
                let (p, m) = build_cluster(&q, part, members, &mut self.build, out);
                self.stats.clusters += 1;
                self.stats.prefixes += p;
                self.stats.matches += m;
                i = j;
            }
            let mut pending = pending;
            pending.clear();
            part.pending = pending;
        }
        self.dirty = dirty;
        self.dirty.clear();
        self.events_since_batch = 0;
        self.due = match self.prog.window {
            Some(Window::Time(w)) => self.watermark.saturating_add(w.max(1)),
            _ => Timestamp::MAX,
        };
    }
}

impl<E: StreamEvent> MatchEngine<E> for StackEngine<E> {
    type Snapshot = StackSnapshot;

    fn program(&self) -> &Program<E> {
        self.program()
    }

    fn watermark(&self) -> Timestamp {
        self.watermark()
    }

    /// A batch boundary passing builds the batch's matches.
    #[inline]
    fn emits_on_advance(&self) -> bool {
        self.construction == Construction::Batch
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

    fn snapshot(&self) -> StackSnapshot {
        self.snapshot()
    }

    fn restore(&mut self, snap: StackSnapshot) -> Result<(), RestoreError> {
        self.restore(snap)
    }
}

/// Pops the entries no match ending now (or later) can use: older than the
/// window before the oldest waiting accepting entry, or before now.
fn expire(part: &mut Part, window: Option<Window>, ts: Timestamp, pos: u64, width: usize) {
    let Some(window) = window else { return };
    let oldest = part.pending.first().map(|&a| *part.stacks.last().expect("an element").get(a));
    match window {
        Window::Time(w) => {
            let from = oldest.map_or(ts, |e| e.ts).saturating_sub(w);
            for s in &mut part.stacks {
                s.expire(width, |e| e.ts < from);
            }
        }
        Window::Events(n) => {
            let from = oldest.map_or(pos, |e| e.pos).saturating_sub(n);
            for s in &mut part.stacks {
                s.expire(width, |e| e.pos < from);
            }
        }
    }
}

/// Keeps each stack of a partition within `cap` entries: when one holds
/// more, entries of events more than `cap` of the key's events ago are
/// dropped, oldest first (never an accepting entry waiting for its batch).
/// Returns the number dropped.
fn cap_entries(part: &mut Part, pos: u64, cap: u64, width: usize) -> u64 {
    if part.stacks.iter().all(|s| s.live() as u64 <= cap) {
        return 0;
    }
    let waiting = part.pending.first().map_or(u64::MAX, |&a| part.stacks.last().expect("an element").get(a).pos);
    let from = pos.saturating_sub(cap).min(waiting);
    let mut dropped = 0;
    for s in &mut part.stacks {
        let before = s.live();
        s.expire(width, |e| e.pos < from);
        dropped += (before - s.live()) as u64;
    }
    dropped
}

/// What match construction reads of the query.
struct QueryRef<'a, E> {
    prog: &'a Program<E>,
    /// Cross conditions by the level they are checked at.
    cross: &'a [Vec<(usize, SharedFramePred)>],
    /// Frame width.
    width: usize,
    /// Some condition links variables (matches must be built to be checked).
    linked: bool,
}

impl<E> Clone for QueryRef<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for QueryRef<'_, E> {}

/// Builds the matches of a cluster: accepting entries (absolute indices in
/// the last stack, oldest first) that share one link. The prefix paths are
/// enumerated once; each member is then checked against each. Hands the
/// matches to `visit`, per member in row order; returns the number of
/// prefixes enumerated and of matches.
fn build_cluster<E>(q: &QueryRef<'_, E>, part: &Part, members: &[u64], b: &mut Build, out: &mut Out<'_>) -> (u64, u64) {
    let QueryRef { prog, cross, width, linked } = *q;
    let n = prog.elements.len();
    let last = &part.stacks[n - 1];
    if out.stopped {
        return (0, 0);
    }
    if out.is_counts() && !linked {
        // No condition between variables: count by dynamic programming.
        let mut total = 0;
        for &m in members {
            let x = *last.get(m);
            let count = count_paths(prog.window, part, &x, &mut b.counts, &mut b.counts_next);
            if count > 0 {
                out.count(&MatchCount { key: part.key, end: x.ts, row: x.row, count });
            }
            total += count;
        }
        return (0, u64::try_from(total).unwrap_or(u64::MAX));
    }
    let first = *last.get(members[0]);
    b.prefixes.clear();
    b.prefix_regs.clear();
    b.regs.fill(Value::Null);
    if n > 1 {
        // The loosest bound on the first event: the oldest member's.
        let bound = Bound::of(prog.window, &first);
        prefixes(prog, cross, part, n - 2, first.link, &bound, width, b);
    } else {
        b.prefix_regs.extend_from_slice(&b.regs);
    }
    let count = if n > 1 { b.prefixes.len() / (n - 1) } else { 1 };
    // Row order (indices ascend with rows in every stack), so each member's
    // matches come out in the run engine's order without sorting them.
    b.order.clear();
    b.order.extend(0..count as u32);
    if n > 1 {
        let (pre, w) = (&b.prefixes, n - 1);
        b.order.sort_unstable_by(|&p, &q| {
            pre[p as usize * w..(p as usize + 1) * w].cmp(&pre[q as usize * w..(q as usize + 1) * w])
        });
    }
    let el = &prog.elements[n - 1];
    let mut matches = 0;
    for &m in members {
        let x = *last.get(m);
        let frame = last.frame(m, width);
        let bound = Bound::of(prog.window, &x);
        let before = matches;
        // Prefixes are in row order, so by their first event: those this
        // member's window admits are a suffix. Every prefix visited below
        // is a match unless a condition fails.
        let first_event = |p: u32| *part.stacks[0].get(b.prefixes[p as usize * (n - 1)]);
        let skip = if n > 1 { b.order.partition_point(|&p| !bound.admits(&first_event(p))) } else { 0 };
        for &p in &b.order[skip..] {
            let p = p as usize;
            let path = &b.prefixes[p * (n - 1)..(p + 1) * (n - 1)];
            let e1 = if n > 1 { *part.stacks[0].get(path[0]) } else { x };
            b.regs.clear();
            b.regs.extend_from_slice(&b.prefix_regs[p * prog.regs..(p + 1) * prog.regs]);
            crate::engine::apply_updates(&el.updates, &mut b.regs, frame, 0);
            let cross_ok = (0..n)
                .all(|lvl| cross[lvl].iter().filter(|(owner, _)| *owner == n - 1).all(|(_, f)| f(frame, &b.regs)));
            let complete = prog.elements.iter().all(|e| e.completion.iter().all(|c| (c.pred)(&b.regs)));
            if !cross_ok || !complete {
                continue;
            }
            b.rows.clear();
            b.rows.extend(path.iter().enumerate().map(|(k, &a)| part.stacks[k].get(a).row));
            b.rows.push(x.row);
            matches += 1;
            if !out.send(&MatchRef { key: part.key, start: e1.ts, end: x.ts, rows: &b.rows }) {
                return (count as u64, matches);
            }
        }
        if out.is_counts() && matches > before {
            out.count(&MatchCount { key: part.key, end: x.ts, row: x.row, count: u128::from(matches - before) });
        }
    }
    (count as u64, matches)
}

/// The entries of each level that can be on a path ending at `x` within the
/// window: `(first, last)` absolute indices for levels `0..n - 1`, where
/// `first` is the oldest entry the window admits *and* that links down to a
/// usable entry of the level below (so every listed entry leads to a
/// match); `None` when no path exists. Links ascend with the entries, so
/// each bound is a binary search.
fn usable_ranges(window: Option<Window>, part: &Part, x: &Entry) -> Option<[(u64, u64); 64]> {
    let n = part.stacks.len();
    let bound = Bound::of(window, x);
    let mut ranges = [(0u64, 0u64); 64];
    let mut upper = x.link;
    for k in (0..n - 1).rev() {
        let s = &part.stacks[k];
        if upper == NONE || upper < s.bottom() {
            return None;
        }
        let top = upper.min(s.end() - 1);
        let first = first_in(s, s.bottom(), top, |e| bound.admits(e))?;
        ranges[k] = (first, top);
        upper = if k > 0 { s.get(top).link } else { NONE };
    }
    for k in 1..n - 1 {
        let below = ranges[k - 1].0;
        let (first, top) = ranges[k];
        ranges[k].0 = first_in(&part.stacks[k], first, top, |e| e.link != NONE && e.link >= below)?;
    }
    Some(ranges)
}

/// The first entry of `s` in `lo..=hi` for which the monotone `ok` holds.
fn first_in(s: &Stack, lo: u64, hi: u64, ok: impl Fn(&Entry) -> bool) -> Option<u64> {
    let (mut lo, mut end) = (lo, hi + 1);
    while lo < end {
        let mid = lo + (end - lo) / 2;
        if ok(s.get(mid)) { end = mid } else { lo = mid + 1 }
    }
    (lo <= hi).then_some(lo)
}

/// Hands every match ending at `x` to `visit` in row order, enumerating
/// forwards: each level's entries from the first that links down to the
/// entry chosen below, up to the range's end. Every step extends a path
/// that completes, so the work is O(k log w) per match. Returns the number
/// of matches.
fn enumerate_direct(window: Option<Window>, part: &Part, x: &Entry, b: &mut Build, out: &mut Out<'_>) -> u64 {
    let n = part.stacks.len();
    b.rows.clear();
    if n == 1 {
        b.rows.push(x.row);
        out.send(&MatchRef { key: part.key, start: x.ts, end: x.ts, rows: &b.rows });
        return 1;
    }
    let Some(ranges) = usable_ranges(window, part, x) else { return 0 };
    let last = n - 2;
    let cur = &mut b.path;
    cur[0] = ranges[0].0;
    let mut from = 1; // levels from here up are filled with their first choice
    let mut count = 0;
    loop {
        for k in from..=last {
            let (first, top) = ranges[k];
            let below = cur[k - 1];
            cur[k] =
                first_in(&part.stacks[k], first, top, |e| e.link >= below).expect("the range's top links at or above");
        }
        b.rows.clear();
        b.rows.extend((0..=last).map(|k| part.stacks[k].get(cur[k]).row));
        b.rows.push(x.row);
        let start = part.stacks[0].get(cur[0]).ts;
        count += 1;
        if !out.send(&MatchRef { key: part.key, start, end: x.ts, rows: &b.rows }) {
            break;
        }
        // The next path in row order: advance the deepest level that can.
        let Some(k) = (0..=last).rev().find(|&k| cur[k] < ranges[k].1) else { break };
        cur[k] += 1;
        from = k + 1;
    }
    count
}

/// The number of paths ending at accepting entry `x` whose first event is
/// in the window, without enumerating them: level by level, the number of
/// paths ending at each entry is the prefix sum of the previous level's up
/// to the entry's link. Only the entries between the window's start and
/// the link chain from `x` take part, so the cost is linear in the entries
/// of the window.
fn count_paths(window: Option<Window>, part: &Part, x: &Entry, prefix: &mut Vec<u128>, next: &mut Vec<u128>) -> u128 {
    let n = part.stacks.len();
    if n == 1 {
        return 1;
    }
    let Some(ranges) = usable_ranges(window, part, x) else { return 0 };
    // prefix[i] = paths ending at or below entry start + i of the current level.
    let (start0, top0) = ranges[0];
    let mut prev_start = start0;
    prefix.clear();
    prefix.extend((1..=top0 - start0 + 1).map(u128::from));
    for (k, &(start, top)) in ranges.iter().enumerate().take(n - 1).skip(1) {
        let s = &part.stacks[k];
        next.clear();
        let mut acc = 0u128;
        for abs in start..=top {
            let link = s.get(abs).link;
            let below = if link == NONE || link < prev_start {
                0
            } else {
                prefix[((link - prev_start) as usize).min(prefix.len() - 1)]
            };
            acc += below;
            next.push(acc);
        }
        std::mem::swap(prefix, next);
        prev_start = start;
    }
    *prefix.last().unwrap_or(&0)
}

/// The window bound a path's first event must meet for a match ending at a
/// given entry.
#[derive(Clone, Copy, Debug)]
enum Bound {
    None,
    Ts(Timestamp),
    Pos(u64),
}

impl Bound {
    fn of(window: Option<Window>, end: &Entry) -> Bound {
        match window {
            None => Bound::None,
            Some(Window::Time(w)) => Bound::Ts(end.ts.saturating_sub(w)),
            Some(Window::Events(n)) => Bound::Pos(end.pos.saturating_sub(n)),
        }
    }

    /// Whether an entry is recent enough to be (or to lead back to) a
    /// match's first event.
    fn admits(&self, e: &Entry) -> bool {
        match *self {
            Bound::None => true,
            Bound::Ts(t) => e.ts >= t,
            Bound::Pos(p) => e.pos >= p,
        }
    }
}

/// Enumerates prefix paths from stack `k` down to stack 0, taking entries
/// of stack `k` at or below `upper`, newest first; checks the cross
/// conditions of elements before the last at their earliest element.
#[allow(clippy::too_many_arguments)]
fn prefixes<E>(
    prog: &Program<E>,
    cross: &[Vec<(usize, SharedFramePred)>],
    part: &Part,
    k: usize,
    upper: u64,
    bound: &Bound,
    width: usize,
    b: &mut Build,
) {
    let n = prog.elements.len();
    let stack = &part.stacks[k];
    if upper == NONE || upper < stack.bottom() {
        return;
    }
    let top = upper.min(stack.end() - 1);
    let mut abs = top + 1;
    while abs > stack.bottom() {
        abs -= 1;
        let c = stack.get(abs);
        // Entries below are older still: none can lead to a first event in
        // the window.
        if !bound.admits(c) {
            break;
        }
        b.path[k] = abs;
        let frame = stack.frame(abs, width);
        crate::engine::apply_updates(&prog.elements[k].updates, &mut b.regs, frame, 0);
        let ok = cross[k].iter().filter(|(owner, _)| *owner < n - 1).all(|&(owner, ref f)| {
            let of = part.stacks[owner].frame(b.path[owner], width);
            f(of, &b.regs)
        });
        if !ok {
            continue;
        }
        if k == 0 {
            b.prefixes.extend_from_slice(&b.path[..n - 1]);
            b.prefix_regs.extend_from_slice(&b.regs);
        } else {
            prefixes(prog, cross, part, k - 1, c.link, bound, width, b);
        }
    }
}
