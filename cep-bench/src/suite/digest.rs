//! Counting a pass's matches and folding them into a digest that does not
//! depend on the process's symbol numbering, so that contenders (and
//! processes) with the same matches agree; and `measure`, the timed loop's
//! frame. Apart because every contender shares it.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use cep_core::{Event, Match, Value};
use cep_index::Fire;
use cep_nfa::stack::{MatchCount, MatchRef};

use crate::suite::{Partials, Pass};

/// Counts matches; when checking, folds each into a multiset digest.
#[derive(Debug)]
pub(crate) struct Tally {
    pub(crate) check: bool,
    pub(crate) matches: u64,
    pub(crate) digest: u64,
}

impl Tally {
    #[inline]
    pub(crate) fn add(&mut self, m: &Match) {
        self.matches += 1;
        if self.check {
            self.digest = self.digest.wrapping_add(match_digest(m));
        }
    }

    /// As [`add`](Self::add), for a borrowed stack-engine match (same digest).
    #[inline]
    pub(crate) fn add_ref(&mut self, m: &MatchRef<'_>) {
        self.matches += 1;
        if self.check {
            self.digest = self.digest.wrapping_add(digest_parts(&m.key, m.start, m.end, m.rows, &ENDS[..m.rows.len()]));
        }
    }

    /// One output line (its text digests the same whatever order lines come in).
    #[inline]
    pub(crate) fn add_line(&mut self, line: &str) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            line.hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    /// An event read (W5's parsing rows): counted as a match, its row, `ts`,
    /// type and fields digested.
    #[inline]
    pub(crate) fn add_event(&mut self, e: &Event) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (e.row, e.ts, e.ty.as_str()).hash(&mut h);
            e.fields.iter().for_each(|v| hash_value(v, &mut h));
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    /// Every line of `out` (JSON lines), as [`add_line`](Self::add_line).
    pub(crate) fn add_output(&mut self, out: &[u8]) {
        for line in String::from_utf8_lossy(out).lines() {
            self.add_line(line);
        }
    }

    /// Counting mode: `c.count` matches ending at one event.
    #[inline]
    pub(crate) fn add_count(&mut self, c: &MatchCount) {
        self.matches += u64::try_from(c.count).unwrap_or(u64::MAX);
        if self.check {
            let mut h = DefaultHasher::new();
            hash_value(&c.key, &mut h);
            (c.row, c.count).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    #[inline]
    pub(crate) fn add_timer(&mut self, deadline: i64, value: u32) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (deadline, value).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    #[inline]
    pub(crate) fn add_fire(&mut self, f: &Fire<'_>) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (f.row, f.id).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }
}

/// Hashes a value by content (a string by its text, not its symbol number).
pub(crate) fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Int(x) => (1u8, x).hash(h),
        Value::Float(x) => (2u8, x.to_bits()).hash(h),
        Value::Bool(b) => (3u8, b).hash(h),
        Value::Str(s) => (4u8, s.as_str()).hash(h),
    }
}

/// `Match::ends` of a match with one event per variable: 1, 2, 3, …
pub(crate) const ENDS: [u32; 64] = {
    let mut a = [0; 64];
    let mut i = 0;
    while i < 64 {
        a[i] = i as u32 + 1;
        i += 1;
    }
    a
};

/// The digest of one match: `(key, start, end, rows, ends)`.
pub fn match_digest(m: &Match) -> u64 {
    digest_parts(&m.key, m.start, m.end, &m.rows, &m.ends)
}

/// [`match_digest`] of a match given by its parts (a borrowed stack-engine
/// match digests like the owned one).
pub(crate) fn digest_parts(key: &Value, start: i64, end: i64, rows: &[u64], ends: &[u32]) -> u64 {
    let mut h = DefaultHasher::new();
    hash_value(key, &mut h);
    (start, end, rows, ends).hash(&mut h);
    h.finish()
}

/// Runs `body` as the timed loop of a pass over `events` events.
pub(crate) fn measure(events: usize, check: bool, body: impl FnOnce(&mut Tally) -> Option<Partials>) -> Pass {
    let mut tally = Tally { check, matches: 0, digest: 0 };
    let before = crate::alloc::counts();
    let start = Instant::now();
    let partials = body(&mut tally);
    let seconds = start.elapsed().as_secs_f64();
    let allocations = crate::alloc::counts().since(before).allocations();
    Pass {
        events: events as u64,
        matches: tally.matches,
        digest: check.then_some(tally.digest),
        seconds,
        allocations,
        partials,
        setup: None,
        latency: None,
    }
}
