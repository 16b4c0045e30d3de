//! Which queries each engine of a runner stands for: one, or the members
//! of a shared program ([`cep_nfa::share`]), whose matches carry the set of
//! members they are matches of. The runner numbers matches and counts them
//! by query through this map, so that sharing is invisible in its output.

use cep_core::Match;
use cep_nfa::share::take_members;

/// A removed member of a shared program: its bit is ignored.
const GONE: usize = usize::MAX;

/// The queries of one engine, by index into the runner's queries.
#[derive(Clone, Debug)]
pub(super) struct Owners {
    /// One query, or the members by bit of the member set.
    queries: Vec<usize>,
    /// The engine's matches carry a member set.
    shared: bool,
    /// The first live query: its bit of a routing mask stands for all (the
    /// members of a shared program have one partition key).
    first: usize,
}

impl Owners {
    /// An engine of one query.
    pub(super) fn one(query: usize) -> Owners {
        Owners { queries: vec![query], shared: false, first: query }
    }

    /// A shared program's engine, `members` ascending.
    pub(super) fn shared(members: Vec<usize>) -> Owners {
        let first = members[0];
        Owners { queries: members, shared: true, first }
    }

    /// The query whose routing bit stands for the engine.
    #[inline]
    pub(super) fn first(&self) -> usize {
        self.first
    }

    /// The live queries, ascending.
    pub(super) fn queries(&self) -> impl Iterator<Item = usize> + '_ {
        self.queries.iter().copied().filter(|&q| q != GONE)
    }

    /// Whether `query` is one of them.
    pub(super) fn holds(&self, query: usize) -> bool {
        self.queries().any(|q| q == query)
    }

    /// Hands `m` to `each` once per query it is a match of, numbered by
    /// that query (a shared program's member set taken off first); stops at
    /// the first error.
    #[inline]
    pub(super) fn each<E>(&self, m: &mut Match, mut each: impl FnMut(&Match) -> Result<(), E>) -> Result<(), E> {
        if !self.shared {
            m.query = self.queries[0];
            return each(m);
        }
        let mut set = take_members(m);
        while set != 0 {
            let bit = set.trailing_zeros() as usize;
            set &= set - 1;
            match self.queries.get(bit) {
                Some(&q) if q != GONE => {
                    m.query = q;
                    each(m)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Forgets `query` (removed from the runner) and moves later queries
    /// down one index; true when no query is left (the engine goes too).
    pub(super) fn remove(&mut self, query: usize) -> bool {
        for q in &mut self.queries {
            if *q == query {
                *q = GONE;
            } else if *q != GONE && *q > query {
                *q -= 1;
            }
        }
        let first = self.queries().next();
        match first {
            Some(first) => {
                self.first = first;
                false
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::{EmitValue, Value};

    fn shared_match(set: u64) -> Match {
        Match {
            query: 0,
            key: Value::Null,
            start: 0,
            end: 0,
            rows: vec![0, 1],
            ends: vec![1, 2],
            emit: vec![EmitValue::Value(Value::Int(7)), EmitValue::Value(Value::Int(set as i64))],
            unverified: false,
        }
    }

    #[test]
    fn a_shared_match_goes_to_each_member_in_its_set() {
        let owners = Owners::shared(vec![3, 4, 5]);
        let mut got = Vec::new();
        owners
            .each(&mut shared_match(0b101), |m| {
                got.push((m.query, m.emit.len()));
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(got, [(3, 1), (5, 1)], "members 0 and 2, their own EMIT value only");
    }

    #[test]
    fn removed_members_get_nothing_and_later_ones_move_down() {
        let mut owners = Owners::shared(vec![3, 4, 5]);
        assert!(!owners.remove(3));
        assert_eq!(owners.first(), 3, "query 4 is now 3");
        let mut got = Vec::new();
        owners
            .each(&mut shared_match(0b111), |m| {
                got.push(m.query);
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(got, [3, 4]);
        assert!(!owners.remove(4));
        assert!(owners.remove(3));
        let mut one = Owners::one(2);
        assert!(!one.remove(1));
        assert!(one.holds(1));
    }
}
