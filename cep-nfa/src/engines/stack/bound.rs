//! The state bound (`--max-state`, LANGUAGE.md §6) in the stack engine.
//! A stack grows by at most one entry per element and event, so the engine
//! does not weigh its state at every event: it counts the bytes it pushes,
//! and once they pass a grain (or the partitions' count, whichever is
//! larger, so that the weighing, which visits every partition, costs O(1)
//! per event amortised) it weighs the stacks and tells the job's budget.
//! Past the bound it drops the oldest entries of its largest keys
//! (`drop-oldest`) or halts and names the key that holds the most (`fail`).

use std::sync::Arc;

use cep_core::Value;
use cep_core::budget::{GRAIN, LimitHit, Meter, OnLimit, StateBudget};

use crate::engines::api::StreamEvent;

use super::StackEngine;
use super::stacks::{Entry, Part, Stack};

/// What a partition costs besides its entries: its record and an index
/// entry.
const PER_PARTITION: usize = std::mem::size_of::<Part>() + std::mem::size_of::<Value>() + 8;

impl<E: StreamEvent> StackEngine<E> {
    /// Bounds this engine's state by `budget`, shared with the other parts
    /// of a job (see [`cep_core::budget`] and
    /// [`Engine::set_state_budget`](crate::engine::Engine::set_state_budget)).
    pub fn set_state_budget(&mut self, budget: Arc<StateBudget>) {
        self.meter = Meter::new(Some(budget));
        self.weigh();
    }

    /// Whether the engine stopped at the state bound: it takes no more
    /// events and makes no more matches, and its budget says why.
    pub fn halted(&self) -> bool {
        self.halted
    }

    /// The bytes of an entry with its frame.
    fn entry_bytes(&self) -> usize {
        std::mem::size_of::<Entry>() + self.width * std::mem::size_of::<Value>()
    }

    /// The stacks' weight: every entry held (popped ones not compacted away
    /// yet included) with its frame and, for `EMIT x.*`, its event's object,
    /// and the partitions' records.
    fn state_bytes_now(&self) -> usize {
        let entries: usize = self.parts.iter().flat_map(|p| &p.stacks).map(|s| s.entries.len()).sum();
        let objects: usize = self.parts.iter().flat_map(|p| &p.stacks).map(|s| s.object_bytes).sum();
        let pending: usize = self.parts.iter().map(|p| p.pending.len()).sum();
        entries * self.entry_bytes()
            + objects
            + pending * 8
            + self.parts.len() * (PER_PARTITION + self.prog.elements.len() * std::mem::size_of::<Stack>())
    }

    /// `n` entries were pushed, with `objects` bytes of event objects:
    /// weighs the state once enough were.
    #[inline]
    pub(super) fn grew(&mut self, n: usize, objects: usize) {
        self.grown += n * self.entry_bytes() + objects;
        if self.grown >= GRAIN.max(self.parts.len() * 64) {
            self.weigh();
        }
    }

    /// Weighs the state, tells the budget, and applies the policy past it.
    #[cold]
    #[inline(never)]
    fn weigh(&mut self) {
        self.grown = 0;
        let bytes = self.state_bytes_now();
        if !self.meter.update(bytes) {
            return;
        }
        let Some(budget) = self.meter.budget().cloned() else { return };
        if budget.policy() == OnLimit::DropOldest {
            let dropped = self.shed(budget.limit() / 8);
            self.stats.dropped += dropped;
            budget.count_dropped(dropped);
            if !self.meter.update(self.state_bytes_now()) {
                return;
            }
        }
        self.halt(&budget);
    }

    /// Drops the oldest half of the largest key's entries until the job's
    /// total leaves `free` bytes, or nothing is left to drop.
    fn shed(&mut self, free: usize) -> u64 {
        let mut dropped = 0;
        loop {
            let bytes = self.state_bytes_now();
            self.meter.update(bytes);
            if self.meter.headroom(bytes) >= free {
                return dropped;
            }
            let live = |p: &Part| p.stacks.iter().map(Stack::live).sum::<usize>();
            let Some(part) = self.parts.iter_mut().filter(|p| live(p) > 0).max_by_key(|p| live(p)) else {
                return dropped;
            };
            let waiting = part.pending.first().map(|&a| part.stacks.last().expect("an element").get(a).pos);
            let oldest = part.stacks.iter().filter(|s| s.live() > 0).map(|s| s.get(s.bottom()).pos).min();
            let Some(oldest) = oldest else { return dropped };
            // Entries of the key's older half of events (never an accepting
            // entry waiting for its batch).
            let from = (oldest + (part.next_pos - oldest).div_ceil(2)).min(waiting.unwrap_or(u64::MAX));
            let width = self.width;
            let mut n = 0;
            for s in &mut part.stacks {
                let before = s.live();
                s.expire(width, |e| e.pos < from);
                n += before - s.live();
                if s.start > 0 {
                    s.compact(s.start, width);
                    s.start = 0;
                    s.entries.shrink_to_fit();
                    s.frames.shrink_to_fit();
                    s.objects.shrink_to_fit();
                }
            }
            if n == 0 {
                return dropped;
            }
            dropped += n as u64;
        }
    }

    /// Stops at the bound: trips the budget with the largest key, and lets
    /// the state go.
    fn halt(&mut self, budget: &StateBudget) {
        let bytes = self.state_bytes_now();
        let live = |p: &Part| p.stacks.iter().map(Stack::live).sum::<usize>();
        let largest = self.parts.iter().max_by_key(|p| live(p)).map(|p| (p.key, live(p)));
        budget.trip(LimitHit::of_query(&self.prog.name, self.prog.key.is_some(), largest, self.entry_bytes(), bytes));
        self.halted = true;
        for p in &mut self.parts {
            for s in &mut p.stacks {
                *s = Stack::default();
            }
            p.pending = Vec::new();
        }
        self.dirty.clear();
        self.meter.clear();
    }
}
