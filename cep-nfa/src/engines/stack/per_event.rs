//! One event onto the stacks: its partition, the elements that accept it
//! (pushed last element first, so an event is never its own predecessor),
//! and, when it lands on the last stack, its matches built at once (per
//! event, direct) or queued for its batch.

use cep_core::Value;

use crate::engines::api::{LateEvent, StreamEvent};
use crate::program::FrameSlot;

use super::cluster::{QueryRef, build_cluster};
use super::direct::enumerate_direct;
use super::output::Out;
use super::stacks::{Entry, NONE, cap_entries, expire};
use super::{Construction, StackEngine};

impl<E: StreamEvent> StackEngine<E> {
    pub(super) fn push_out(&mut self, e: &E, out: &mut Out<'_>) -> Result<(), LateEvent> {
        let ts = e.timestamp();
        if ts < self.watermark {
            return Err(LateEvent { ts, watermark: self.watermark });
        }
        if self.halted {
            return Ok(());
        }
        self.advance_out(ts, out);
        if self.idle.due(self.parts.len()) {
            self.drop_idle_partitions();
        }
        let row = e.row().unwrap_or(self.seq);
        self.seq += 1;
        self.stats.events += 1;
        let key = crate::engines::run::partition_key(&self.prog, e);
        let pid = match self.index.get(&key) {
            Some(p) => p,
            None => self.new_partition(key),
        };
        let prog = &self.prog;
        let n = prog.elements.len();
        let part = &mut self.parts[pid as usize];
        let pos = part.next_pos;
        part.next_pos += 1;
        self.events_since_batch += 1;
        let mut acc = 0u64;
        for (k, el) in prog.elements.iter().enumerate() {
            acc |= u64::from((el.accepts)(e)) << k;
        }
        if acc == 0 {
            return Ok(());
        }
        expire(part, prog.window, ts, pos, self.width);
        if self.max_entries < u64::MAX {
            self.stats.dropped += cap_entries(part, pos, self.max_entries, self.width);
        }
        let mut pushed = 0;
        let mut object_bytes = 0;
        for (slot, f) in self.frame.iter_mut().zip(&prog.frame) {
            *slot = match f {
                FrameSlot::At(i) => e.field(*i),
                FrameSlot::Field(x) => x(e),
                FrameSlot::Prev { .. } => Value::Null,
            };
        }
        // Last element first, so an event both elements k and k + 1 accept
        // does not become its own predecessor.
        for k in (0..n).rev() {
            if acc >> k & 1 == 0 {
                continue;
            }
            let el = &prog.elements[k];
            if !self.own[k].iter().all(|&i| (el.conds[i].pred)(e, &self.frame, &self.null_regs)) {
                continue;
            }
            let link = if k == 0 {
                NONE
            } else {
                let below = &part.stacks[k - 1];
                if below.live() == 0 {
                    continue; // no predecessor
                }
                below.end() - 1
            };
            let abs = part.stacks[k].push(Entry { ts, pos, row, link }, &self.frame);
            pushed += 1;
            if self.objects >> k & 1 == 1
                && let Some(object) = &prog.object
            {
                // An `EMIT x.*` item names this element: keep the event's object.
                let object = object(e);
                object_bytes += crate::buffer::object_size(&object);
                part.stacks[k].push_object(object);
            }
            if k == n - 1 {
                match self.construction {
                    Construction::Direct if !self.linked && !out.is_counts() => {
                        let q = QueryRef { prog, cross: &self.cross, width: self.width, linked: self.linked };
                        self.stats.matches += enumerate_direct(&q, part, abs, &mut self.build, out);
                        self.stats.clusters += 1;
                    }
                    Construction::PerEvent | Construction::Direct => {
                        let q = QueryRef { prog, cross: &self.cross, width: self.width, linked: self.linked };
                        let (p, m) = build_cluster(&q, part, &[abs], &mut self.build, out);
                        self.stats.clusters += 1;
                        self.stats.prefixes += p;
                        self.stats.matches += m;
                    }
                    Construction::Batch => {
                        if part.pending.is_empty() {
                            self.dirty.push(pid);
                        }
                        part.pending.push(abs);
                    }
                }
            }
        }
        if self.meter.is_bounded() && pushed > 0 {
            self.grew(pushed, object_bytes);
        }
        if self.construction == Construction::Batch && self.batch_due(ts) {
            self.build_batches(out);
        }
        Ok(())
    }
}
