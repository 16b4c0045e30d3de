//! The state bound (`--max-state`, LANGUAGE.md §6) in the run engine: what
//! its state weighs, checked after each event that changed a partition's
//! partial matches, and what it does when the job's total would pass the
//! bound: drop the oldest runs of its largest keys, or halt and name the
//! key that holds the most.
//!
//! The weight is kept in O(1): the live runs and pending matches (their
//! sum is kept beside each partition's live count), the buffer's nodes,
//! and the per-key records and `PREV` rings. An event can add a child run
//! per candidate element of each live run of its key, so a single event of
//! a key with a million runs under skip-till-any-match may double it;
//! [`Engine::spawn_room`] tells `offer` how many children still fit, so
//! that one event cannot carry the state far past the bound either.

use std::sync::Arc;

use cep_core::Value;
use cep_core::budget::{LimitHit, Meter, OnLimit, StateBudget};

use crate::buffer::Buffer;
use crate::engines::api::StreamEvent;

use super::Engine;
use super::partitions::{Hot, Partition};
use super::runs::Run;
use super::timers::Armed;

/// What a partition costs besides its runs: its records and an index
/// entry (a key and an integer, about).
const PER_PARTITION: usize = std::mem::size_of::<Partition>()
    + std::mem::size_of::<Hot>()
    + std::mem::size_of::<Armed>()
    + std::mem::size_of::<Value>()
    + 8;

/// After dropping runs at the bound, the engine's share of the budget it
/// leaves free: an eighth, so that it does not drop again at the next event.
const SHED_TO: usize = 8;

impl<E: StreamEvent> Engine<E> {
    /// Bounds this engine's state by `budget`, shared with the other parts
    /// of a job (see [`cep_core::budget`]). Under [`OnLimit::DropOldest`]
    /// the engine drops its oldest runs (counted in
    /// [`Stats::dropped`](crate::engines::api::Stats::dropped)); under
    /// [`OnLimit::Fail`] it halts ([`halted`](Self::halted)) and
    /// [`trips`](StateBudget::trip) the budget with its largest key.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use cep_core::budget::{OnLimit, StateBudget};
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let q = "QUERY grow PATTERN SEQ(A+ a[], B b) WHERE skip-till-any-match AND [k]";
    /// let prog = compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog);
    /// let budget = Arc::new(StateBudget::new(1 << 20, OnLimit::Fail));
    /// engine.set_state_budget(budget.clone());
    /// for row in 0..100u64 {
    ///     engine.push(&Event::new(Sym::new("A"), row as i64, row, vec![Value::Int(7)])).unwrap();
    /// }
    /// assert!(engine.halted());
    /// let hit = budget.hit().unwrap();
    /// assert_eq!((hit.holder.as_str(), hit.key), ("grow", Some(Value::Int(7))));
    /// assert!(engine.stats().state_bytes < 2 << 20);
    /// ```
    pub fn set_state_budget(&mut self, budget: Arc<StateBudget>) {
        self.meter = Meter::new(Some(budget));
        let bytes = self.state_bytes_now();
        self.meter.update(bytes);
    }

    /// Whether the engine stopped at the state bound (under
    /// [`OnLimit::Fail`]): it takes no more events and makes no more
    /// matches, and its budget says why.
    pub fn halted(&self) -> bool {
        self.halted
    }

    /// The bytes of a run or pending match with its registers.
    pub(super) fn run_bytes(&self) -> usize {
        std::mem::size_of::<Run>() + self.prog.regs * std::mem::size_of::<Value>()
    }

    /// The state's weight in bytes, in O(1): live runs and pending matches
    /// with their registers, buffer nodes and the event objects kept beside
    /// them (`EMIT x.*`), per-key records and rings.
    pub(super) fn state_bytes_now(&self) -> usize {
        self.live_total * self.run_bytes()
            + self.buffer.len() * Buffer::NODE_BYTES
            + self.buffer.object_bytes()
            + self.parts.len() * PER_PARTITION
            + self.ring.len() * std::mem::size_of::<Value>()
            + self.parked() * std::mem::size_of::<super::emit::Done>()
    }

    /// Sets partition `pid`'s live count (runs and pending matches), keeping
    /// the engine's sum.
    #[inline]
    pub(super) fn set_live(&mut self, pid: u32, live: usize) {
        let h = &mut self.hot[pid as usize];
        self.live_total = self.live_total - h.live as usize + live;
        h.live = live as u32;
    }

    /// The child runs one event may still add before the job's state
    /// passes the bound (`usize::MAX` without one).
    #[inline]
    pub(super) fn spawn_room(&self) -> usize {
        if !self.meter.is_bounded() {
            return usize::MAX;
        }
        self.meter.headroom(self.state_bytes_now()) / (self.run_bytes() + Buffer::NODE_BYTES)
    }

    /// After an event changed partition `pid`: publishes the state's
    /// weight and, past the bound, applies the policy. `refused` children
    /// were not made because they did not fit ([`spawn_room`](Self::spawn_room)).
    #[inline]
    pub(super) fn keep_bound(&mut self, refused: u64) {
        let bytes = self.state_bytes_now();
        if self.meter.update(bytes) || refused > 0 {
            self.at_bound(refused);
        }
    }

    #[cold]
    #[inline(never)]
    fn at_bound(&mut self, refused: u64) {
        let Some(budget) = self.meter.budget().cloned() else { return };
        if budget.policy() == OnLimit::DropOldest {
            self.stats.dropped += refused;
            budget.count_dropped(refused);
            let dropped = self.shed(budget.limit() / SHED_TO);
            self.stats.dropped += dropped;
            budget.count_dropped(dropped);
            let bytes = self.state_bytes_now();
            // Nothing left to drop (the weight is per-key history or
            // complete matches waiting for a quiet period): it fails.
            if !self.meter.update(bytes) {
                return;
            }
        }
        self.halt(&budget);
    }

    /// Drops the oldest runs of the largest partitions until the job's
    /// total leaves `free` bytes, or no run is left; returns how many.
    fn shed(&mut self, free: usize) -> u64 {
        let mut dropped = 0u64;
        loop {
            let bytes = self.state_bytes_now();
            self.meter.update(bytes);
            if self.meter.headroom(bytes) >= free {
                return dropped;
            }
            let Some(pid) = self.largest_by_runs() else { return dropped };
            let part = &mut self.parts[pid as usize];
            // Half of the largest key's runs, at least one.
            let n = part.runs.len().div_ceil(2);
            part.runs.drop_oldest(n, &mut self.buffer);
            if part.runs.runs.capacity() > 4 * part.runs.len().max(16) {
                part.runs.runs.shrink_to_fit();
                part.runs.regs.shrink_to_fit();
            }
            dropped += n as u64;
            let live = part.runs.len() + part.pending.len();
            self.set_live(pid, live);
            self.reschedule(pid);
        }
    }

    /// The partition with the most runs (pending matches cannot be
    /// dropped), if any has one.
    fn largest_by_runs(&self) -> Option<u32> {
        let (pid, part) = self.parts.iter().enumerate().max_by_key(|(_, p)| p.runs.len())?;
        (!part.runs.runs.is_empty()).then_some(pid as u32)
    }

    /// Stops at the bound: trips the budget with the largest key, and lets
    /// the state go (the run is over; its memory is not needed for it).
    fn halt(&mut self, budget: &StateBudget) {
        let bytes = self.state_bytes_now();
        let partials = |p: &Partition| p.runs.len() + p.pending.len();
        let largest = self.parts.iter().max_by_key(|p| partials(p)).map(|p| (p.key, partials(p)));
        budget.trip(LimitHit::of_query(&self.prog.name, self.prog.key.is_some(), largest, self.run_bytes(), bytes));
        self.halted = true;
        let regs = self.prog.regs;
        let fresh = || super::runs::RunSet::new(regs);
        for pid in 0..self.parts.len() {
            // Emptied with their capacity: the memory goes back.
            let part = &mut self.parts[pid];
            std::mem::replace(&mut part.runs, fresh()).clear(&mut self.buffer);
            std::mem::replace(&mut part.pending, fresh()).clear(&mut self.buffer);
            self.set_live(pid as u32, 0);
        }
        self.extra.clear(&mut self.buffer);
        self.drop_parked();
        // Neither the matches this event completed: it was not processed
        // whole.
        for r in &self.done_runs.runs {
            self.buffer.release(r.node);
        }
        self.done_runs.clear();
        for d in self.done.drain(..) {
            self.buffer.release(d.node);
        }
        self.meter.clear();
    }
}
