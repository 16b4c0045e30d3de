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
//!
//! The files, by job: `qualifies` (which programs it runs), `stacks` (an
//! entry, a stack, a partition's stacks, the window and cap that pop them),
//! `per_event` (one event onto the stacks), `cluster` (building the matches
//! of accepting entries that share a link: per event, a cluster of one),
//! `batch` (the batch boundaries), `direct` (direct construction), `count`
//! (counting mode), `output` (what a call hands out), `emit` (a match's
//! `EMIT` values, from its path) and `snapshot` (checkpoints).

mod batch;
mod bound;
mod cluster;
mod count;
mod direct;
mod emit;
mod output;
mod per_event;
mod qualifies;
mod snapshot;
mod stacks;

pub use output::{MatchCount, MatchRef};
pub use qualifies::qualifies;
pub use snapshot::StackSnapshot;

use std::ops::ControlFlow;

use cep_core::keys::KeyIndex;
use cep_core::{EmitValue, Match, Timestamp, Value};

use crate::engines::api::{LateEvent, MatchEngine, MatchQueue, Stats, StreamEvent};
use crate::engines::error::{EngineError, RestoreError};
use crate::idle::IdleParts;
use crate::program::{Program, SharedFramePred};

use output::Out;
use stacks::{Entry, Part, Stack};

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
    /// Bit `k`: element `k`'s entries keep their event's object, for an
    /// `EMIT x.*` item (0 without one: no object is made).
    objects: u64,
    /// Most entries per stack and key (`u64::MAX`: no cap).
    max_entries: u64,
    /// The job's state bound, this engine's share of it (see `bound`).
    meter: cep_core::budget::Meter,
    /// Bytes pushed since the state was last weighed.
    grown: usize,
    /// Stopped at the state bound: events are ignored.
    halted: bool,
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
    /// Its `EMIT` values (empty without `EMIT`).
    emit: Vec<EmitValue>,
    /// Counting mode's prefix sums (this level and the next).
    counts: Vec<u128>,
    counts_next: Vec<u128>,
}

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
        let objects = if prog.object.is_some() { prog.object_mask() } else { 0 };
        Ok(StackEngine {
            linked,
            objects,
            max_entries: u64::MAX,
            meter: cep_core::budget::Meter::default(),
            grown: 0,
            halted: false,
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
        let objects: usize = self.parts.iter().flat_map(|p| &p.stacks).map(|s| s.object_bytes).sum();
        s.state_bytes = s.runs * (std::mem::size_of::<Entry>() + self.width * std::mem::size_of::<Value>()) + objects;
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

    fn set_state_budget(&mut self, budget: std::sync::Arc<cep_core::budget::StateBudget>) {
        self.set_state_budget(budget);
    }

    fn halted(&self) -> bool {
        self.halted()
    }

    fn snapshot(&self) -> StackSnapshot {
        self.snapshot()
    }

    fn restore(&mut self, snap: StackSnapshot) -> Result<(), RestoreError> {
        self.restore(snap)
    }
}
