//! What every engine takes and gives: the events it reads
//! ([`StreamEvent`]), the event it refuses ([`LateEvent`]) and where its
//! matches go ([`MatchQueue`]).
//!
//! These lived in the run engine's module, and the stack engine imported
//! them from there and copied the match queue; one definition here keeps
//! the engines' outputs alike (same queue, same recycling) and gives a new
//! engine the same types to use.

use std::collections::VecDeque;

use cep_core::{Event, Match, Timestamp, Value};

use crate::spare::SpareMatches;

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
