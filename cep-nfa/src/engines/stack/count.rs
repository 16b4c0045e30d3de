//! Counting mode: how many matches end at each event, by dynamic
//! programming over the stacks when no condition links two variables (so
//! the cost is linear in the window's entries, not in the matches).

use cep_core::Timestamp;

use crate::engines::api::{LateEvent, StreamEvent};
use crate::program::Window;

use super::StackEngine;
use super::direct::usable_ranges;
use super::output::{MatchCount, Out};
use super::stacks::{Entry, NONE, Part};

impl<E: StreamEvent> StackEngine<E> {
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
}

/// The number of paths ending at accepting entry `x` whose first event is
/// in the window, without enumerating them: level by level, the number of
/// paths ending at each entry is the prefix sum of the previous level's up
/// to the entry's link. Only the entries between the window's start and
/// the link chain from `x` take part, so the cost is linear in the entries
/// of the window.
pub(super) fn count_paths(
    window: Option<Window>,
    part: &Part,
    x: &Entry,
    prefix: &mut Vec<u128>,
    next: &mut Vec<u128>,
) -> u128 {
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
