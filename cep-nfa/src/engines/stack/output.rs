//! What the stack engine's calls hand out: a borrowed match
//! ([`MatchRef`], built without allocating), a count of matches
//! ([`MatchCount`]), and the sink a call sends them to.

use std::ops::ControlFlow;

use cep_core::{EmitValue, Match, Timestamp, Value};

/// A match as the stack engine builds it, borrowed for the duration of a
/// call: one row per variable, in `SEQ` order. Taking matches this way
/// ([`StackEngine::push_to`](super::StackEngine::push_to)) allocates
/// nothing per match.
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
    /// The values of the query's `EMIT` items, in order (empty without
    /// `EMIT`).
    pub emit: &'a [EmitValue],
}

impl MatchRef<'_> {
    /// An owned [`Match`] (for query 0).
    pub fn to_match(&self) -> Match {
        let mut m = Match {
            query: 0,
            key: self.key,
            start: 0,
            end: 0,
            rows: Vec::new(),
            ends: Vec::new(),
            emit: Vec::new(),
            unverified: false,
        };
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
        // Both empty without `EMIT`: the copy is out of line, so that a
        // match without values costs what it did before `EMIT`.
        if !(self.emit.is_empty() && m.emit.is_empty()) {
            copy_emit(self.emit, &mut m.emit);
        }
    }
}

#[cold]
#[inline(never)]
fn copy_emit(from: &[EmitValue], to: &mut Vec<EmitValue>) {
    to.clear();
    to.extend_from_slice(from);
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
pub(super) enum Sink<'a> {
    /// Every match, borrowed, until the visitor says stop.
    Matches(&'a mut dyn FnMut(&MatchRef<'_>) -> ControlFlow<()>),
    /// Per event, the number of matches ending at it.
    Counts(&'a mut dyn FnMut(&MatchCount)),
}

/// A [`Sink`] and whether its visitor has asked to stop.
pub(super) struct Out<'a> {
    pub(super) sink: Sink<'a>,
    pub(super) stopped: bool,
}

impl<'a> Out<'a> {
    pub(super) fn matches(f: &'a mut dyn FnMut(&MatchRef<'_>) -> ControlFlow<()>) -> Out<'a> {
        Out { sink: Sink::Matches(f), stopped: false }
    }

    pub(super) fn counts(f: &'a mut dyn FnMut(&MatchCount)) -> Out<'a> {
        Out { sink: Sink::Counts(f), stopped: false }
    }

    pub(super) fn is_counts(&self) -> bool {
        matches!(self.sink, Sink::Counts(_))
    }

    /// Hands over a match; false once the visitor has asked to stop.
    #[inline]
    pub(super) fn send(&mut self, m: &MatchRef<'_>) -> bool {
        if let Sink::Matches(f) = &mut self.sink
            && !self.stopped
            && f(m).is_break()
        {
            self.stopped = true;
        }
        !self.stopped
    }

    pub(super) fn count(&mut self, c: &MatchCount) {
        if let Sink::Counts(f) = &mut self.sink {
            f(c);
        }
    }
}
