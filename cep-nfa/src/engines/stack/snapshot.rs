//! Checkpoints: the stacks and the batch clock as plain data, and their
//! restore, which checks what the engine relies on and never breaks itself.

use cep_core::Timestamp;
use cep_core::keys::KeyIndex;

use crate::engines::api::{Stats, StreamEvent};
use crate::engines::error::RestoreError;

use super::StackEngine;
use super::stacks::{NONE, Part, Stack};

impl Part {
    /// What the engine relies on and never breaks itself (a saved state that
    /// breaks it was made by hand, or by another program): each stack's
    /// popped entries are among its entries, the first stack's entries link
    /// nowhere, every other entry links nowhere or below the top of the
    /// previous stack, and the entries waiting for their batch are on the
    /// last stack.
    pub(super) fn consistent(&self) -> bool {
        let stacks_ok = self
            .stacks
            .iter()
            .all(|s| s.start <= s.entries.len() && s.offset.checked_add(s.entries.len() as u64).is_some());
        let links_ok = self.stacks.iter().enumerate().all(|(k, s)| {
            let below = if k == 0 { 0 } else { self.stacks[k - 1].end() };
            s.entries.iter().all(|e| e.link == NONE || e.link < below)
        });
        let pending_ok =
            self.stacks.last().is_none_or(|last| self.pending.iter().all(|&i| i >= last.bottom() && i < last.end()));
        stacks_ok && links_ok && pending_ok
    }
}

/// The counters as a [`StackSnapshot`] holds them: the fields, in their
/// order, of the stack engine's own statistics before both engines shared
/// [`Stats`], so that a checkpoint's bytes stay as they were (`entries` is
/// [`Stats::runs`]; the gauges are measured when asked).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SavedStats {
    pub(super) events: u64,
    pub(super) matches: u64,
    pub(super) entries: usize,
    pub(super) pending: usize,
    pub(super) partitions: usize,
    pub(super) clusters: u64,
    pub(super) prefixes: u64,
    pub(super) state_bytes: usize,
    pub(super) dropped: u64,
}

impl SavedStats {
    pub(super) fn of(s: Stats) -> SavedStats {
        let Stats { events, matches, runs, pending, partitions, clusters, prefixes, state_bytes, dropped, .. } = s;
        SavedStats { events, matches, entries: runs, pending, partitions, clusters, prefixes, state_bytes, dropped }
    }

    pub(super) fn stats(self) -> Stats {
        let SavedStats { events, matches, entries, pending, partitions, clusters, prefixes, state_bytes, dropped } =
            self;
        Stats {
            events,
            matches,
            runs: entries,
            pending,
            partitions,
            clusters,
            prefixes,
            state_bytes,
            dropped,
            ..Stats::default()
        }
    }
}

/// The saved state of a [`StackEngine`] (see [`StackEngine::snapshot`]):
/// plain data, serialisable with serde.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StackSnapshot {
    parts: Vec<Part>,
    watermark: Timestamp,
    seq: u64,
    due: Timestamp,
    events_since_batch: u64,
    dirty: Vec<u32>,
    stats: SavedStats,
}

impl<E: StreamEvent> StackEngine<E> {
    /// The engine's state, for a checkpoint: every partition's stacks
    /// (entries, links, frames and the event objects kept for `EMIT x.*`)
    /// and unbuilt batch entries, the watermark,
    /// the batch clock and the counters. Take it between events, after the
    /// matches emitted so far were taken.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::stack::{Construction, StackEngine};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 10";
    /// let prog = || compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
    /// let mut engine = StackEngine::new(prog(), Construction::Direct).unwrap();
    /// engine.push(&Event::new(Sym::new("A"), 1, 0, vec![])).unwrap();
    /// let saved = engine.snapshot();
    ///
    /// let mut resumed = StackEngine::new(prog(), Construction::Direct).unwrap();
    /// resumed.restore(saved).unwrap();
    /// resumed.push(&Event::new(Sym::new("B"), 5, 1, vec![])).unwrap();
    /// assert_eq!(resumed.pop().unwrap().rows, [0, 1]);
    /// ```
    pub fn snapshot(&self) -> StackSnapshot {
        debug_assert!(!self.out.has_matches(), "snapshot between events, matches taken");
        // Partitions given up are left out, the others renumbered in order
        // (only `dirty` refers to them by number).
        let mut renumbered = vec![u32::MAX; self.parts.len()];
        let mut parts = Vec::with_capacity(self.idle.in_use(self.parts.len()));
        for (pid, part) in self.parts.iter().enumerate().filter(|&(pid, _)| self.in_use(pid)) {
            renumbered[pid] = parts.len() as u32;
            parts.push(part.clone());
        }
        StackSnapshot {
            parts,
            watermark: self.watermark,
            seq: self.seq,
            due: self.due,
            events_since_batch: self.events_since_batch,
            dirty: self.dirty.iter().map(|&pid| renumbered[pid as usize]).collect(),
            stats: SavedStats::of(self.stats),
        }
    }

    /// Replaces this engine's state with a [`snapshot`](Self::snapshot) of
    /// an engine of the same program; an error when it does not fit.
    pub fn restore(&mut self, snap: StackSnapshot) -> Result<(), RestoreError> {
        let n = self.prog.elements.len();
        // A stack keeps one object per entry exactly when its element's
        // `x.*` is emitted.
        let objects =
            |k: usize, s: &Stack| s.objects.len() == if self.objects >> k & 1 == 1 { s.entries.len() } else { 0 };
        let fits = snap.parts.iter().all(|p| {
            p.stacks.len() == n
                && p.stacks
                    .iter()
                    .enumerate()
                    .all(|(k, s)| s.frames.len() == s.entries.len() * self.width && objects(k, s))
        }) && snap.dirty.iter().all(|&d| (d as usize) < snap.parts.len());
        if !fits {
            return Err(RestoreError::unfit(&self.prog.name));
        }
        let bad = |what: &str| RestoreError::inconsistent(&self.prog.name, what);
        let st = &snap.stats;
        let counts = [snap.seq, st.events, st.matches, st.clusters, st.prefixes, st.dropped];
        if !crate::engines::select::saved_counts_fit(counts.into_iter().chain(snap.parts.iter().map(|p| p.next_pos))) {
            return Err(bad("a count beyond 2^62"));
        }
        if !snap.parts.iter().all(Part::consistent) {
            return Err(bad("its stacks' links"));
        }
        let mut index = KeyIndex::default();
        for (pid, p) in snap.parts.iter().enumerate() {
            index.insert(p.key, pid as u32);
        }
        self.index = index;
        self.idle.restored(snap.parts.len());
        self.parts = snap.parts;
        self.parts.iter_mut().flat_map(|p| &mut p.stacks).for_each(Stack::recount_objects);
        self.watermark = snap.watermark;
        self.seq = snap.seq;
        self.due = snap.due;
        self.events_since_batch = snap.events_since_batch;
        self.dirty = snap.dirty;
        self.stats = snap.stats.stats();
        self.out.clear();
        Ok(())
    }
}
