//! The watermark and the deadlines it fires: one timer per partition with
//! partial matches, at its earliest deadline (window expiry or the end of a
//! quiet period), on `cep-time`'s timing wheel, so that an event that
//! passes no deadline does not touch the wheel.

use cep_core::Timestamp;
use cep_time::wheel::TimerId;

use crate::engines::api::StreamEvent;

use super::Engine;

/// A partition's timer on the wheel, if it has one (the handle carries the
/// deadline).
pub(super) type Armed = Option<TimerId>;

/// The deadline of a partition's timer (`MAX`: none).
pub(super) fn armed_at(armed: Armed) -> Timestamp {
    armed.map_or(Timestamp::MAX, |id| id.deadline())
}

impl<E: StreamEvent> Engine<E> {
    /// Moves the watermark to `wm`: every deadline before it fires. The
    /// watermark never moves back.
    #[inline]
    pub fn advance(&mut self, wm: Timestamp) {
        if wm <= self.watermark {
            return;
        }
        if wm <= self.next_due {
            self.watermark = wm;
            return;
        }
        self.fire(wm);
    }

    /// Fires the deadlines before `wm` and moves the watermark there.
    #[inline(never)]
    pub(super) fn fire(&mut self, wm: Timestamp) {
        let mut fired = std::mem::take(&mut self.fired);
        self.timers.advance_to(wm, &mut fired);
        for &(_, pid) in &fired {
            self.armed[pid as usize] = None;
        }
        for &(_, pid) in &fired {
            self.sweep(pid, wm);
        }
        fired.clear();
        self.fired = fired;
        self.next_due = self.timers.next_bound().unwrap_or(Timestamp::MAX);
        self.watermark = wm;
        self.emit_done();
    }

    /// Drops expired runs and collects due pending matches of a partition.
    pub(super) fn sweep(&mut self, pid: u32, wm: Timestamp) {
        let part = &mut self.parts[pid as usize];
        part.runs.retain(&mut self.buffer, |r| r.expires < wm);
        let mut due = std::mem::take(&mut self.done_runs);
        let mut w = 0;
        for i in 0..part.pending.len() {
            let r = part.pending.runs[i];
            if r.expires < wm {
                due.push(r, part.pending.regs(i));
            } else {
                part.pending.move_to(i, w);
                w += 1;
            }
        }
        part.pending.truncate(w);
        for (i, r) in due.runs.iter().enumerate() {
            self.queue_done(pid, r, due.regs(i));
        }
        due.clear();
        self.done_runs = due;
        self.reschedule(pid);
    }

    /// Updates a partition's live count and its place in the deadline heap
    /// after its partial matches changed.
    pub(super) fn reschedule(&mut self, pid: u32) {
        let part = &self.parts[pid as usize];
        let live = part.runs.len() + part.pending.len();
        self.set_live(pid, live);
        let part = &self.parts[pid as usize];
        let d = part.runs.runs.iter().chain(&part.pending.runs).map(|r| r.expires).min().unwrap_or(Timestamp::MAX);
        let armed = &mut self.armed[pid as usize];
        if d < armed_at(*armed) {
            if let Some(old) = armed.take() {
                self.timers.discard(old);
            }
            *armed = Some(self.timers.insert(d, pid));
            self.next_due = self.next_due.min(d);
        }
    }
}
