//! Giving up idle partitions: the bookkeeping both engines share.
//!
//! An engine keeps one partition per key. A stream whose key is new on
//! almost every event (an order id, a session) would make that one per key
//! *ever seen*, so an engine gives up a partition once nothing in it could
//! matter to a later event of its key, and reuses it for a key that comes
//! later. What "nothing could matter" means is the engine's business (its
//! partial matches, its stacks); this module only decides *when* to look
//! and which partition to reuse:
//!
//! - an engine looks when the partitions in use have doubled since it last
//!   looked (and are at least [`MIN_DROP`]), so a look, which walks every
//!   partition, costs O(1) amortised per partition created, and the hot
//!   path pays one comparison per event;
//! - the lowest given-up partition is reused first, so those in use stay
//!   packed at the front.
//!
//! A partition given up is recognised by its key no longer mapping to it
//! in the engine's key index, so no flag per partition is kept beside it.
//!
//! # Examples
//! ```
//! use cep_nfa::idle::{IdleParts, MIN_DROP};
//! let mut idle = IdleParts::new(true);
//! assert!(!idle.due(MIN_DROP - 1));
//! assert!(idle.due(MIN_DROP));
//! // A look gives up partitions 5 and 2 of MIN_DROP.
//! idle.give_up(5);
//! idle.give_up(2);
//! idle.looked(MIN_DROP);
//! assert_eq!(idle.in_use(MIN_DROP), MIN_DROP - 2);
//! assert_eq!(idle.reuse(), Some(2)); // lowest first
//! assert_eq!(idle.reuse(), Some(5));
//! assert_eq!(idle.reuse(), None);
//! // The next look comes when twice as many are in use.
//! assert!(!idle.due(2 * MIN_DROP - 5));
//! assert!(idle.due(2 * MIN_DROP - 4));
//! ```

/// Partitions in use before idle ones are first looked for.
pub const MIN_DROP: usize = 1024;

/// When to look for idle partitions, and the ones given up to reuse.
#[derive(Clone, Debug)]
pub struct IdleParts {
    /// Given up, to reuse; highest first, so `pop` takes the lowest.
    free: Vec<u32>,
    /// Partitions in use at which the next look comes (`usize::MAX`:
    /// never).
    look_at: usize,
    /// Whether partitions may be given up at all (a query that keeps
    /// history per key, such as `PREV`, gives up none).
    enabled: bool,
}

impl IdleParts {
    /// Bookkeeping for an engine with no partition yet; `enabled` false
    /// when none may ever be given up.
    pub fn new(enabled: bool) -> IdleParts {
        IdleParts { free: Vec::new(), look_at: if enabled { MIN_DROP } else { usize::MAX }, enabled }
    }

    /// After a restore: `held` partitions, all in use, none given up.
    pub fn restored(&mut self, held: usize) {
        *self = IdleParts::new(self.enabled);
        self.looked(held);
    }

    /// Partitions in use out of `held` (every partition the engine has,
    /// given up or not).
    #[inline(always)]
    pub fn in_use(&self, held: usize) -> usize {
        held - self.free.len()
    }

    /// Whether it is time to look for idle partitions, `held` partitions
    /// being held.
    #[inline(always)]
    pub fn due(&self, held: usize) -> bool {
        self.in_use(held) >= self.look_at
    }

    /// Records that partition `pid` was given up (during a look).
    pub fn give_up(&mut self, pid: u32) {
        self.free.push(pid);
    }

    /// Ends a look over `held` partitions: the next comes when twice as
    /// many as now are in use.
    pub fn looked(&mut self, held: usize) {
        self.free.sort_unstable_by_key(|&pid| std::cmp::Reverse(pid));
        if self.enabled {
            self.look_at = MIN_DROP.max(2 * self.in_use(held));
        }
    }

    /// A given-up partition to reuse for a new key: the lowest.
    #[inline]
    pub fn reuse(&mut self) -> Option<u32> {
        self.free.pop()
    }

    /// Whether no partition is given up.
    pub fn none_given_up(&self) -> bool {
        self.free.is_empty()
    }
}
