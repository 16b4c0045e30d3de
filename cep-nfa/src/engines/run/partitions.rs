//! A key's state: finding an event's partition (the part every event
//! touches is the small [`Hot`] record), making one for a new key, and
//! giving up idle ones so that memory follows the keys with partial
//! matches, not all keys seen.

use cep_core::Value;

use crate::engines::api::StreamEvent;
use crate::idle;
use crate::program::{FrameSlot, Program};

use super::Engine;
use super::history::INLINE_RING;
use super::negation::NegLog;
use super::runs::RunSet;

/// The state of a partition that every one of its events touches, kept
/// apart from [`Partition`] so that an event of a partition without live
/// partial matches reads one small struct and its `PREV` ring.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[repr(align(32))]
pub(super) struct Hot {
    pub(super) next_pos: u64,
    /// Live runs and pending matches: when 0, [`Partition`] is not read.
    pub(super) live: u32,
    pub(super) hist_head: u16,
    pub(super) hist_len: u16,
    /// The `PREV` ring when it is small ([`HistoryShape::inline`]).
    pub(super) ring: [Value; INLINE_RING],
}

/// Whether `prog` may give partitions up: not when it keeps `PREV`
/// history per key (a key's next event needs it, however long after).
pub(super) fn may_give_up<E>(prog: &Program<E>) -> bool {
    prog.history_depth == 0 && prog.history.is_empty()
}

/// The partial matches of a partition.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Partition {
    pub(super) key: Value,
    pub(super) runs: RunSet,
    pub(super) pending: RunSet,
    pub(super) log: NegLog,
}

impl<E: StreamEvent> Engine<E> {
    /// The partition of `e`, created when it is the key's first event.
    #[inline]
    pub(super) fn partition_of(&mut self, e: &E) -> u32 {
        let prog = &self.prog;
        let key = partition_key(prog, e);
        match self.index.get(&key) {
            Some(p) => p,
            None => self.new_partition(key),
        }
    }

    /// A partition for `key`, which has none: a given-up one reused, or a
    /// new one. (Out of line: most events find their partition.)
    #[inline(never)]
    pub(super) fn new_partition(&mut self, key: Value) -> u32 {
        let prog = &self.prog;
        let hot = Hot { next_pos: 0, live: 0, hist_head: 0, hist_len: 0, ring: [Value::Null; INLINE_RING] };
        let p = match self.idle.reuse() {
            // Given up with nothing in it (no history, so no ring either).
            Some(p) => {
                self.parts[p as usize].key = key;
                self.hot[p as usize] = hot;
                p
            }
            None => {
                self.parts.push(Partition {
                    key,
                    runs: RunSet::new(prog.regs),
                    pending: RunSet::new(prog.regs),
                    log: NegLog::default(),
                });
                self.armed.push(None);
                self.hot.push(hot);
                if !self.shape.inline() {
                    self.ring.resize(self.ring.len() + self.shape.stride(), Value::Null);
                }
                (self.parts.len() - 1) as u32
            }
        };
        self.index.insert(key, p);
        p
    }

    /// Gives up every partition with nothing a later event of its key could
    /// need — no partial match, no pending match, no live negation log (and
    /// the query keeps no `PREV` history, else none is given up) — so that a
    /// stream of ever new keys (an order id, a session) keeps memory in
    /// proportion to the keys with partial matches, not to all keys seen.
    /// A key that comes back gets a fresh partition, as its first event
    /// would: positions within a partition only order its own partial
    /// matches. Called before an event when the partitions in use have
    /// doubled since the last call, and are at least the first look's
    /// count ([`IdleParts`]), so it costs O(1) amortised per partition
    /// created.
    pub(super) fn drop_idle_partitions(&mut self) {
        debug_assert!(self.done.is_empty(), "between events");
        for pid in 0..self.parts.len() {
            let part = &self.parts[pid];
            if part.runs.len() + part.pending.len() > 0 || !part.log.is_empty() || !self.in_use(pid) {
                continue;
            }
            // A timer armed for runs since gone would find nothing.
            if let Some(id) = self.armed[pid].take() {
                self.timers.discard(id);
            }
            self.index.remove(&part.key);
            self.parts[pid].log = NegLog::default();
            self.idle.give_up(pid as u32);
        }
        self.idle.looked(self.parts.len());
    }

    /// [`drop_idle_partitions`](Self::drop_idle_partitions) when the
    /// partitions in use have doubled since the last look.
    #[inline(always)]
    pub(super) fn drop_idle_partitions_when_due(&mut self) {
        if self.idle.due(self.parts.len()) {
            self.drop_idle_partitions();
        }
    }

    /// Whether partition `pid` is not given up ([`idle::in_use`]).
    pub(super) fn in_use(&self, pid: usize) -> bool {
        idle::in_use(&self.index, &self.parts[pid].key, pid)
    }
}

/// The partition key of `e` (NULL without a partition).
#[inline]
pub(crate) fn partition_key<E: StreamEvent>(prog: &Program<E>, e: &E) -> Value {
    match &prog.key {
        None => Value::Null,
        Some((_, FrameSlot::At(i))) => e.field(*i),
        Some((_, FrameSlot::Field(f))) => f(e),
        Some((_, FrameSlot::Prev { .. })) => Value::Null,
    }
}
