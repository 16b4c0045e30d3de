//! Aggregated-link batches: when a batch is due (a window after it began,
//! a watermark past that, or the end of the input) and the building of its
//! clusters, partition by partition.

use cep_core::Timestamp;

use crate::engines::api::StreamEvent;
use crate::program::Window;

use super::cluster::{QueryRef, build_cluster};
use super::output::Out;
use super::{Construction, StackEngine};

/// Events between batches when the query has no window.
const UNWINDOWED_BATCH: u64 = 1024;

impl<E: StreamEvent> StackEngine<E> {
    /// Whether the batch that began earlier is due at watermark `wm`.
    pub(super) fn batch_due(&mut self, wm: Timestamp) -> bool {
        let due = match self.prog.window {
            Some(Window::Time(_)) => wm >= self.due,
            Some(Window::Events(n)) => self.events_since_batch >= n.max(1),
            None => self.events_since_batch >= UNWINDOWED_BATCH,
        };
        due && !self.dirty.is_empty()
    }

    pub(super) fn advance_out(&mut self, wm: Timestamp, out: &mut Out<'_>) {
        if wm <= self.watermark {
            return;
        }
        self.watermark = wm;
        if self.construction == Construction::Batch && self.dirty.is_empty() {
            // A new batch begins with the next accepting entry's time.
            self.due = match self.prog.window {
                Some(Window::Time(w)) => wm.saturating_add(w.max(1)),
                _ => Timestamp::MAX,
            };
            self.events_since_batch = 0;
        } else if self.construction == Construction::Batch && self.batch_due(wm) {
            self.build_batches(out);
        }
    }

    pub(super) fn finish_out(&mut self, out: &mut Out<'_>) {
        if !self.dirty.is_empty() {
            self.build_batches(out);
        }
        self.watermark = Timestamp::MAX;
    }

    /// Builds every pending cluster of every partition.
    pub(super) fn build_batches(&mut self, out: &mut Out<'_>) {
        let dirty = std::mem::take(&mut self.dirty);
        for &pid in &dirty {
            let part = &mut self.parts[pid as usize];
            let pending = std::mem::take(&mut part.pending);
            let last = &part.stacks[self.prog.elements.len() - 1];
            let mut i = 0;
            while i < pending.len() {
                let link = last.get(pending[i]).link;
                let j = i + pending[i..].iter().take_while(|&&a| last.get(a).link == link).count();
                let members = &pending[i..j];
                let q = QueryRef { prog: &self.prog, cross: &self.cross, width: self.width, linked: self.linked };
                let (p, m) = build_cluster(&q, part, members, &mut self.build, out);
                self.stats.clusters += 1;
                self.stats.prefixes += p;
                self.stats.matches += m;
                i = j;
            }
            let mut pending = pending;
            pending.clear();
            part.pending = pending;
        }
        self.dirty = dirty;
        self.dirty.clear();
        self.events_since_batch = 0;
        self.due = match self.prog.window {
            Some(Window::Time(w)) => self.watermark.saturating_add(w.max(1)),
            _ => Timestamp::MAX,
        };
    }
}
