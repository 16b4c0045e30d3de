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
//!   looked, and are at least [`FIRST_LOOK`] (or what the engine was set
//!   to), so a look, which walks every partition, costs O(1) amortised per
//!   partition created, and the hot path pays one comparison per event;
//! - the lowest given-up partition is reused first, so those in use stay
//!   packed at the front.
//!
//! A partition given up is recognised by its key no longer mapping to it
//! in the engine's key index, so no flag per partition is kept beside it.
//!
//! Why not look from the first partitions on: a key that comes back after
//! its partition was given up gets a fresh one, which costs a key index
//! removal and insertion and its share of the looks. Keys that come back
//! after their window would remake their partition on nearly every event;
//! looks from 1,024 partitions on doubled the engine's instructions on such
//! a stream (see docs/perf-log.md, 2026-12-02, memory). Up to
//! [`FIRST_LOOK`] partitions (a few MB per engine) are kept however idle;
//! past that, memory follows the keys in flight.
//!
//! # Examples
//! ```
//! use cep_nfa::idle::{IdleParts, FIRST_LOOK};
//! let mut idle = IdleParts::new(true);
//! assert!(!idle.due(FIRST_LOOK - 1));
//! assert!(idle.due(FIRST_LOOK));
//! idle.set_first_look(1_000);
//! assert!(idle.due(1_000));
//! // A look gives up partitions 5 and 2 of 1,000.
//! idle.give_up(5);
//! idle.give_up(2);
//! idle.looked(1_000);
//! assert_eq!(idle.in_use(1_000), 998);
//! assert_eq!(idle.reuse(), Some(2)); // lowest first
//! assert_eq!(idle.reuse(), Some(5));
//! assert_eq!(idle.reuse(), None);
//! // The next look comes when twice as many are in use.
//! assert!(!idle.due(2 * 998 - 1));
//! assert!(idle.due(2 * 998));
//! ```

use cep_core::Value;
use cep_core::keys::KeyIndex;

/// Whether partition `pid`, last given to `key`, is in use: not given up,
/// which is when the engine's key index still maps its key to it.
#[inline]
pub(crate) fn in_use(index: &KeyIndex, key: &Value, pid: usize) -> bool {
    index.get(key) == Some(pid as u32)
}

/// Partitions in use before idle ones are first looked for, by default.
pub const FIRST_LOOK: usize = 16_384;

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
    /// Partitions in use before the first look, and the least at which any
    /// look comes.
    first_look: usize,
}

impl IdleParts {
    /// Bookkeeping for an engine with no partition yet; `enabled` false
    /// when none may ever be given up.
    pub fn new(enabled: bool) -> IdleParts {
        let look_at = if enabled { FIRST_LOOK } else { usize::MAX };
        IdleParts { free: Vec::new(), look_at, enabled, first_look: FIRST_LOOK }
    }

    /// Looks for idle partitions once at least `n` (at least 1) are in use,
    /// and after a look when twice as many as it left are, but never below
    /// `n`.
    pub fn set_first_look(&mut self, n: usize) {
        self.first_look = n.max(1);
        if self.enabled {
            self.look_at = self.first_look;
        }
    }

    /// After a restore: `held` partitions, all in use, none given up.
    pub fn restored(&mut self, held: usize) {
        self.free.clear();
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
            self.look_at = self.first_look.max(2 * self.in_use(held));
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
