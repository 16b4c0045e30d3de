//! What every engine takes and gives: the events it reads
//! ([`StreamEvent`]), the event it refuses ([`LateEvent`]), where its
//! matches go ([`MatchQueue`]), its counters ([`Stats`]), and the one
//! interface every engine implements ([`MatchEngine`]).
//!
//! These lived in the run engine's module, and the stack engine imported
//! them from there, copied the match queue and kept its own statistics,
//! which [`QueryEngine`](crate::engines::select::QueryEngine) converted by hand.
//! One definition here keeps the engines' outputs alike (same queue, same
//! recycling, same counters), lets `QueryEngine` be a plain dispatch, and
//! gives a new engine one trait to implement.

use std::collections::VecDeque;

use cep_core::{Event, Match, Timestamp, Value};

use crate::engines::error::RestoreError;
use crate::program::Program;
use crate::spare::SpareMatches;

/// One engine running one query: what [`QueryEngine`](crate::engines::select::QueryEngine)
/// dispatches to, and all a new engine needs to provide to run beside the
/// others.
///
/// Each engine keeps these as inherent methods too (the trait's methods
/// call them), so that callers of one engine need not import the trait.
/// The calls are static: `QueryEngine` is an enum whose methods `match` on
/// the engine, never a virtual call per event.
///
/// Events come in non-decreasing timestamp order (ties in arrival order);
/// matches come out in the order the engine makes them final, into its
/// [`MatchQueue`].
pub trait MatchEngine<E: StreamEvent> {
    /// The engine's saved state (plain data, serialisable).
    type Snapshot;

    /// The program it runs.
    fn program(&self) -> &Program<E>;

    /// The watermark: the largest of the events' timestamps and the
    /// watermarks it was moved to (`i64::MIN` before any).
    fn watermark(&self) -> Timestamp;

    /// Whether moving the watermark alone can make matches final (else
    /// matches come out only as events are pushed, and at the end), so a
    /// caller knows whether to look for matches after [`advance`](Self::advance).
    fn emits_on_advance(&self) -> bool;

    /// Processes one event; an event behind the watermark is refused.
    fn push(&mut self, e: &E) -> Result<(), LateEvent>;

    /// Processes events in order, as [`push`](Self::push) one by one would;
    /// stops at the first late event, with its index (the events before it
    /// were processed, it and the rest were not).
    fn push_batch(&mut self, events: &[E]) -> Result<(), (usize, LateEvent)>;

    /// Moves the watermark to `wm` (never back): deadlines before it fire.
    fn advance(&mut self, wm: Timestamp);

    /// Ends the input: every match still to come becomes final.
    fn finish(&mut self);

    /// The matches made final and not yet taken.
    fn matches(&self) -> &MatchQueue;

    /// [`matches`](Self::matches), to take them or hand them back.
    fn matches_mut(&mut self) -> &mut MatchQueue;

    /// Counters and gauges.
    fn stats(&self) -> Stats;

    /// Bounds the live partial state of each key to `cap` (at least 1), so
    /// that a hostile stream cannot exhaust memory; what is dropped is
    /// counted in [`Stats::dropped`].
    fn set_max_partials_per_key(&mut self, cap: usize);

    /// Bounds the engine's state by a job's shared budget of bytes
    /// (`--max-state`, see [`cep_core::budget`]): past it, the engine drops
    /// its oldest partial matches (counted in [`Stats::dropped`]) or halts
    /// and trips the budget, as the budget's policy says.
    fn set_state_budget(&mut self, budget: std::sync::Arc<cep_core::budget::StateBudget>);

    /// Where the query's remote conditions are asked (LANGUAGE.md §8); an
    /// engine whose programs have none ignores it.
    fn set_remote(&mut self, _link: std::sync::Arc<cep_core::remote::RemoteLink>) {}

    /// Evaluates the remote conditions lazily where that gives the same
    /// matches (after [`set_remote`](Self::set_remote)); whether it does.
    fn set_lazy(&mut self) -> bool {
        false
    }

    /// Chooses between lazy and blocking from the measured answer delay,
    /// where lazy gives the same matches; whether it may be lazy.
    fn set_auto(&mut self) -> bool {
        false
    }

    /// Takes the remote answers that have come, without waiting, and
    /// settles the final matches that waited for them (lazy evaluation);
    /// returns how many still wait. A job calls it while its input is idle,
    /// so that such a match goes out when its answer comes, not with the
    /// next event.
    fn settle_answers(&mut self) -> usize {
        0
    }

    /// Whether the engine stopped at the state bound (it ignores events
    /// from then on).
    fn halted(&self) -> bool;

    /// The matching state, for a checkpoint (between events, after the
    /// matches emitted so far were taken).
    fn snapshot(&self) -> Self::Snapshot;

    /// Replaces the state with a [`snapshot`](Self::snapshot) of an engine
    /// of the same program; an error when it does not fit or holds what no
    /// engine writes.
    fn restore(&mut self, snap: Self::Snapshot) -> Result<(), RestoreError>;

    /// Takes the oldest match not yet taken.
    #[inline]
    fn pop(&mut self) -> Option<Match> {
        self.matches_mut().pop()
    }

    /// Hands back a match taken and done with, to build a later one in.
    #[inline]
    fn recycle(&mut self, m: Match) {
        self.matches_mut().recycle(m);
    }

    /// Whether a match waits to be taken.
    #[inline]
    fn has_matches(&self) -> bool {
        self.matches().has_matches()
    }
}

/// Counters and gauges of an engine, the same for every engine so that
/// callers sum and print them alike; a field one engine has no use for is 0
/// there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Events pushed (late ones excluded).
    pub events: u64,
    /// Matches emitted.
    pub matches: u64,
    /// Live partial matches: the run engine's runs, the stack engine's
    /// stack entries.
    pub runs: usize,
    /// Complete matches not final yet: the run engine's matches waiting for
    /// a quiet period, the stack engine's accepting entries waiting for
    /// their batch.
    pub pending: usize,
    /// Live buffer nodes (the run engine's; the stack engine has none).
    pub nodes: usize,
    /// Partitions held: one per key seen, but an engine gives up a
    /// partition that nothing in it could matter to a later event of its
    /// key (see the crate's README, "Memory per engine").
    pub partitions: usize,
    /// Bytes of live matching state: the run engine's runs and pending
    /// matches (with their registers) and buffer nodes, the stack engine's
    /// entries with their frames. Excludes spare capacity and the
    /// per-partition table.
    pub state_bytes: usize,
    /// Partial matches (stack entries) dropped to keep a key within its cap
    /// ([`MatchEngine::set_max_partials_per_key`]).
    pub dropped: u64,
    /// The stack engine's clusters built (one per accepting entry when it
    /// builds matches per event); 0 on the run engine.
    pub clusters: u64,
    /// The stack engine's prefix paths enumerated (shared by a cluster's
    /// members); 0 on the run engine.
    pub prefixes: u64,
}

impl Stats {
    /// Live partial matches (runs and pending matches).
    pub fn partials(&self) -> usize {
        self.runs + self.pending
    }

    /// Bytes of state per live partial match (0 when there is none).
    pub fn bytes_per_partial(&self) -> usize {
        self.state_bytes.checked_div(self.partials()).unwrap_or(0)
    }
}

/// What the engine needs from an event besides the program's closures.
pub trait StreamEvent {
    /// Event time.
    fn timestamp(&self) -> Timestamp;
    /// The event's row number in its input, if it has one; otherwise the
    /// engine numbers events in push order.
    fn row(&self) -> Option<u64> {
        None
    }
    /// A small integer naming the event's type, when it has one. When the
    /// program's type tests depend on the type only
    /// ([`Program::accepts_by_kind`](crate::program::Program::accepts_by_kind)),
    /// the engine runs them once per kind and remembers the answer.
    fn kind(&self) -> Option<u32> {
        None
    }
    /// The value of field `i`, for programs whose frame reads fields by
    /// index ([`FrameSlot::At`](crate::program::FrameSlot::At)); NULL by
    /// default.
    fn field(&self, _i: u32) -> Value {
        Value::Null
    }
}

impl StreamEvent for Event {
    #[inline]
    fn field(&self, i: u32) -> Value {
        self.get(i)
    }
    fn timestamp(&self) -> Timestamp {
        self.ts
    }
    fn row(&self) -> Option<u64> {
        Some(self.row)
    }
    fn kind(&self) -> Option<u32> {
        Some(self.ty.index())
    }
}

/// An event older than the watermark: it can no longer be processed in
/// event-time order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LateEvent {
    /// The event's timestamp.
    pub ts: Timestamp,
    /// The watermark it fell behind.
    pub watermark: Timestamp,
}

impl std::fmt::Display for LateEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event at ts {} is behind the watermark {}", self.ts, self.watermark)
    }
}

impl std::error::Error for LateEvent {}

/// Where an engine's final matches go: to a callback when one is set,
/// else into a queue the caller takes them from, oldest first. It also
/// keeps the matches the caller hands back ([`recycle`](Self::recycle)),
/// so that the next ones are built in their vectors: a query that
/// completes several matches per event otherwise allocates (and frees) two
/// vectors per match.
#[derive(Default)]
pub struct MatchQueue {
    out: VecDeque<Match>,
    spare: SpareMatches,
    callback: Option<Box<dyn FnMut(Match) + Send>>,
}

impl MatchQueue {
    /// Matches emitted and not yet taken.
    pub fn drain(&mut self) -> std::collections::vec_deque::Drain<'_, Match> {
        self.out.drain(..)
    }

    /// Takes the oldest match not yet taken.
    #[inline]
    pub fn pop(&mut self) -> Option<Match> {
        self.out.pop_front()
    }

    /// Hands back a match taken with [`pop`](Self::pop) and done with: a
    /// later match is built in its vectors. (At most
    /// [`SPARE_MATCHES`](crate::spare::SPARE_MATCHES) are kept.)
    #[inline]
    pub fn recycle(&mut self, m: Match) {
        self.spare.keep(m);
    }

    /// Whether a match waits to be taken ([`pop`](Self::pop) would give
    /// one). Cheap: callers look before they pop, since most events
    /// complete nothing.
    #[inline]
    pub fn has_matches(&self) -> bool {
        !self.out.is_empty()
    }

    /// Matches waiting to be taken.
    pub(crate) fn len(&self) -> usize {
        self.out.len()
    }

    /// Delivers matches to `f` as they become final instead of queueing
    /// them.
    pub(crate) fn set_callback(&mut self, f: impl FnMut(Match) + Send + 'static) {
        self.callback = Some(Box::new(f));
    }

    /// Whether a callback takes the matches (then none is queued).
    #[inline]
    pub(crate) fn has_callback(&self) -> bool {
        self.callback.is_some()
    }

    /// A match handed back, to build the next one in, if one is kept.
    #[inline]
    pub(crate) fn take_spare(&mut self) -> Option<Match> {
        self.spare.take()
    }

    /// A final match: to the callback, or to the back of the queue.
    #[inline]
    pub(crate) fn emit(&mut self, m: Match) {
        match &mut self.callback {
            Some(f) => f(m),
            None => self.out.push_back(m),
        }
    }

    /// Forgets the queued matches (a restored engine starts with none);
    /// the spare matches and the callback stay.
    pub(crate) fn clear(&mut self) {
        self.out.clear();
    }
}

impl std::fmt::Debug for MatchQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchQueue")
            .field("queued", &self.out.len())
            .field("callback", &self.callback.is_some())
            .finish_non_exhaustive()
    }
}
