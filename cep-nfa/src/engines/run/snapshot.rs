//! Checkpoints: the engine's matching state as plain data, and its restore,
//! which checks what the engine relies on and no engine writes otherwise
//! (a state made by hand or by another program would make it panic later).

use cep_core::keys::KeyIndex;
use cep_core::{Timestamp, Value};
use cep_time::wheel::TimerWheel;

use crate::buffer::{Buffer, NIL, Node};
use crate::engines::api::{Stats, StreamEvent};
use crate::engines::error::RestoreError;

use super::Engine;
use super::kind_cache::{KIND_WAYS, NO_ANSWER};
use super::partitions::{Hot, Partition};
use super::timers::armed_at;

/// The saved state of an [`Engine`] (see [`Engine::snapshot`]): plain
/// data, serialisable with serde; strings are saved as text.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct EngineSnapshot {
    parts: Vec<Partition>,
    scheduled: Vec<Timestamp>,
    hot: Vec<Hot>,
    ring: Vec<Value>,
    nodes: Vec<(u32, Node)>,
    watermark: Timestamp,
    seq: u64,
    stats: SavedStats,
    /// The event objects kept beside nodes for `EMIT x.*` items, by saved
    /// node id (empty for every other query).
    objects: Vec<(u32, cep_core::EventObject)>,
    /// Lazy remote evaluation: debts, answers, parked matches and calls in
    /// flight (`None` for every other query).
    lazy: Option<super::lazy::SavedLazy>,
}

/// The counters as an [`EngineSnapshot`] holds them: the fields, in their
/// order, that [`Stats`] had before it gained the stack engine's, so that a
/// checkpoint's bytes stay as they were (the engine counts `events`,
/// `matches` and `dropped`; the gauges are measured when asked).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SavedStats {
    pub(super) events: u64,
    pub(super) matches: u64,
    pub(super) runs: usize,
    pub(super) pending: usize,
    pub(super) nodes: usize,
    pub(super) partitions: usize,
    pub(super) state_bytes: usize,
    pub(super) dropped: u64,
}

impl SavedStats {
    pub(super) fn of(s: Stats) -> SavedStats {
        let Stats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped, .. } = s;
        SavedStats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped }
    }

    pub(super) fn stats(self) -> Stats {
        let SavedStats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped } = self;
        Stats { events, matches, runs, pending, nodes, partitions, state_bytes, dropped, ..Stats::default() }
    }
}

impl<E: StreamEvent> Engine<E> {
    /// The engine's matching state, for a checkpoint: every partition's
    /// partial matches with their registers, `PREV` history and negation
    /// log, the match buffer, the watermark and the counters. Take it
    /// between events, after the matches emitted so far were taken (they are
    /// not part of it); timers and caches are rebuilt by
    /// [`restore`](Self::restore).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::engine::Engine;
    ///
    /// let q = "PATTERN SEQ(A a, B b) WITHIN 10";
    /// let prog = || compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = Engine::new(prog());
    /// engine.push(&Event::new(Sym::new("A"), 1, 0, vec![])).unwrap();
    /// let saved = engine.snapshot();
    ///
    /// let mut resumed = Engine::new(prog()); // e.g. in a new process
    /// resumed.restore(saved).unwrap();
    /// resumed.push(&Event::new(Sym::new("B"), 5, 1, vec![])).unwrap();
    /// assert_eq!(resumed.pop().unwrap().rows, [0, 1]);
    /// ```
    pub fn snapshot(&self) -> EngineSnapshot {
        debug_assert!(!self.out.has_matches() && self.done.is_empty(), "snapshot between events, matches taken");
        // Partitions given up are left out (nothing refers to them). Only a
        // query without history gives any up, so the ring is empty then.
        debug_assert!(self.idle.none_given_up() || self.ring.is_empty());
        let pids = || (0..self.parts.len()).filter(|&pid| self.in_use(pid));
        EngineSnapshot {
            parts: pids().map(|pid| self.parts[pid].clone()).collect(),
            scheduled: pids().map(|pid| armed_at(self.armed[pid])).collect(),
            hot: pids().map(|pid| self.hot[pid]).collect(),
            ring: self.ring.clone(),
            nodes: self.buffer.nodes(),
            watermark: self.watermark,
            seq: self.seq,
            stats: SavedStats::of(self.stats),
            objects: self.buffer.saved_objects(),
            lazy: self.saved_lazy(),
        }
    }

    /// Replaces this engine's state with a [`snapshot`](Self::snapshot) of
    /// an engine of the same program. An error (and the state left empty)
    /// when the snapshot does not fit the program.
    pub fn restore(&mut self, mut snap: EngineSnapshot) -> Result<(), RestoreError> {
        let fits = snap.parts.len() == snap.hot.len()
            && snap.parts.len() == snap.scheduled.len()
            && snap.parts.iter().all(|p| p.runs.stride == self.prog.regs && p.pending.stride == self.prog.regs)
            && (self.shape.inline() || snap.ring.len() == snap.parts.len() * self.shape.stride());
        if !fits {
            return Err(RestoreError::unfit(&self.prog.name));
        }
        let (buffer, ids) = self.checked_state(&mut snap)?;
        let mut index = KeyIndex::default();
        for (pid, p) in snap.parts.iter().enumerate() {
            index.insert(p.key, pid as u32);
        }
        let mut timers = TimerWheel::new();
        let mut none = Vec::new();
        if snap.watermark > Timestamp::MIN {
            timers.advance_to(snap.watermark, &mut none);
        }
        let armed = snap
            .scheduled
            .iter()
            .enumerate()
            .map(|(pid, &at)| (at < Timestamp::MAX).then(|| timers.insert(at, pid as u32)))
            .collect();
        self.next_due = timers.next_bound().unwrap_or(Timestamp::MAX);
        self.timers = timers;
        self.armed = armed;
        self.index = index;
        self.buffer = buffer;
        self.idle.restored(snap.parts.len());
        self.parts = snap.parts;
        self.hot = snap.hot;
        self.ring = snap.ring;
        self.watermark = snap.watermark;
        self.seq = snap.seq;
        self.stats = snap.stats.stats();
        self.kind_cache = [NO_ANSWER; KIND_WAYS];
        self.out.clear();
        // Live counts from the runs themselves, not from the saved records.
        self.live_total = 0;
        for (h, p) in self.hot.iter_mut().zip(&self.parts) {
            h.live = (p.runs.len() + p.pending.len()) as u32;
            self.live_total += h.live as usize;
        }
        self.halted = false;
        if let Some(saved) = snap.lazy.take() {
            self.restore_lazy(saved, &ids).map_err(|why| RestoreError::inconsistent(&self.prog.name, why))?;
        }
        let bytes = self.state_bytes_now();
        self.meter.update(bytes);
        Ok(())
    }

    /// The buffer of a saved state, after checking what the engine relies
    /// on and no engine writes otherwise: every run's element and node
    /// exist, registers and negation logs have their widths, `PREV` rings
    /// their shape, and each node's reference count is the number of runs
    /// and nodes that refer to it (recounted, not read). A state that fails
    /// (made by hand, or by another program) would make the engine panic
    /// later.
    pub(super) fn checked_state(
        &self,
        snap: &mut EngineSnapshot,
    ) -> Result<(Buffer, ahash::AHashMap<u32, u32>), RestoreError> {
        let bad = |what: &str| RestoreError::inconsistent(&self.prog.name, what);
        let elements = self.prog.elements.len();
        let (width, depth) = (self.frame.len(), self.shape.depth);
        let counts = [snap.seq, snap.stats.events, snap.stats.matches, snap.stats.dropped];
        if !crate::engines::select::saved_counts_fit(counts.into_iter().chain(snap.hot.iter().map(|h| h.next_pos))) {
            return Err(bad("a count beyond 2^62"));
        }
        let (mut buffer, ids) = Buffer::from_nodes(std::mem::take(&mut snap.nodes), elements).map_err(|e| bad(&e))?;
        for (id, object) in std::mem::take(&mut snap.objects) {
            let id = *ids.get(&id).ok_or_else(|| bad("an event object of a missing buffer node"))?;
            buffer.set_object(id, object);
        }
        for (p, hot) in snap.parts.iter_mut().zip(&snap.hot) {
            for set in [&mut p.runs, &mut p.pending] {
                if set.regs.len() != set.runs.len() * set.stride {
                    return Err(bad("registers of another width"));
                }
                for r in &mut set.runs {
                    if r.elem as usize >= elements {
                        return Err(bad("a run at an element the query lacks"));
                    }
                    if r.start_pos > r.last_pos || r.last_pos >= hot.next_pos || r.start_ts > r.last_ts {
                        return Err(bad("a run whose events are out of order"));
                    }
                    if r.node != NIL {
                        r.node = *ids.get(&r.node).ok_or_else(|| bad("a run whose buffer node is missing"))?;
                    }
                }
            }
            let log = &p.log;
            if log.start > log.pos.len() || log.frames.len() != log.pos.len() * width {
                return Err(bad("a negation log of another width"));
            }
        }
        let ring_ok = |h: &Hot| depth == 0 || (usize::from(h.hist_head) < depth && usize::from(h.hist_len) <= depth);
        if !snap.hot.iter().all(ring_ok) {
            return Err(bad("a `PREV` history of another depth"));
        }
        // Parked matches (lazy remote evaluation) hold their nodes too.
        if let Some(lazy) = &mut snap.lazy {
            for d in &mut lazy.parked {
                d.node = *ids.get(&d.node).ok_or_else(|| bad("a parked match whose buffer node is missing"))?;
            }
        }
        let parked = snap.lazy.iter().flat_map(|l| l.parked.iter().map(|d| d.node));
        let refs = snap.parts.iter().flat_map(|p| p.runs.runs.iter().chain(&p.pending.runs)).map(|r| r.node);
        buffer.count_refs(refs.chain(parked)).map_err(|e| bad(&e))?;
        Ok((buffer, ids))
    }
}
