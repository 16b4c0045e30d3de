//! The event's frame and the per-key `PREV` history it reads: how a frame
//! is filled (by kind of slot, in simple loops), the history ring's shape,
//! and the common one-column `PREV(x)` kept beside the key's record.

use cep_core::Value;

use crate::engines::api::StreamEvent;
use crate::program::{FrameSlot, Program};

use super::Engine;

/// Shape of the per-partition `PREV` history: the last `depth` events'
/// `cols` values, a ring. A small ring lives inside the partition's [`Hot`]
/// record; a larger one in a flat vector shared by all partitions.
#[derive(Clone, Copy, Debug)]
pub(super) struct HistoryShape {
    pub(super) cols: usize,
    pub(super) depth: usize,
}

/// Ring values kept inside [`Hot`].
pub(super) const INLINE_RING: usize = 1;

impl HistoryShape {
    pub(super) fn stride(self) -> usize {
        self.cols * self.depth
    }

    pub(super) fn inline(self) -> bool {
        self.stride() <= INLINE_RING
    }

    /// Column `col` of the event `n` (≥ 1) positions back.
    #[inline(always)]
    pub(super) fn get(self, ring: &[Value], head: u16, len: u16, n: usize, col: usize) -> Value {
        if n == 0 || n > len as usize {
            return Value::Null;
        }
        if self.depth == 1 {
            // `PREV(x)`, the common case: the ring is the previous row.
            return ring[col];
        }
        // head + depth - n < 2 * depth: one conditional subtraction, no division.
        let mut row = head as usize + self.depth - n;
        if row >= self.depth {
            row -= self.depth;
        }
        ring[row * self.cols + col]
    }

    /// Makes room for the newest row: returns where its `cols` values go.
    #[inline(always)]
    pub(super) fn push(self, head: &mut u16, len: &mut u16) -> usize {
        if self.depth == 1 {
            *len = 1;
            return 0;
        }
        let base = *head as usize * self.cols;
        *head = if *head as usize + 1 == self.depth { 0 } else { *head + 1 };
        *len = (*len + 1).min(self.depth as u16);
        base
    }
}

/// A program's frame slots by kind, so that filling a frame runs three
/// simple loops rather than a `match` per slot (whose merged arms compile
/// to a piecewise copy through the stack).
#[derive(Clone, Debug, Default)]
pub(super) struct FramePlan {
    /// (slot, field index).
    pub(super) fields: Vec<(u16, u32)>,
    /// (slot, history column, events back).
    pub(super) prevs: Vec<(u16, u32, u32)>,
    /// Slots read by closures.
    pub(super) computed: Vec<u16>,
}

impl FramePlan {
    pub(super) fn of<E>(prog: &Program<E>) -> FramePlan {
        let mut plan = FramePlan::default();
        for (slot, f) in prog.frame.iter().enumerate() {
            let slot = slot as u16;
            match f {
                FrameSlot::At(i) => plan.fields.push((slot, *i)),
                FrameSlot::Prev { col, n } => plan.prevs.push((slot, *col as u32, *n as u32)),
                FrameSlot::Field(_) => plan.computed.push(slot),
            }
        }
        plan
    }
}

/// The common `PREV` shape: one history column, a field, one event back.
/// The history is then the field's last value, kept in [`Hot`] while the
/// frame is filled.
#[derive(Clone, Copy, Debug)]
pub(super) struct Prev1 {
    /// The frame slot of `PREV(x)`.
    pub(super) prev: usize,
    /// The event field `x`.
    pub(super) column: u32,
}

impl Prev1 {
    pub(super) fn of<E>(prog: &Program<E>) -> Option<Prev1> {
        let [FrameSlot::At(col_field)] = &prog.history[..] else { return None };
        let mut prevs = prog.frame.iter().enumerate().filter(|(_, f)| matches!(f, FrameSlot::Prev { .. }));
        let (prev, FrameSlot::Prev { col: 0, n: 1 }) = prevs.next()? else { return None };
        if prevs.next().is_some() || prog.history_depth != 1 {
            return None;
        }
        Some(Prev1 { prev, column: *col_field })
    }
}

impl<E: StreamEvent> Engine<E> {
    /// Pushes the event's `PREV` columns onto partition `pid`'s history.
    #[inline(always)]
    pub(super) fn remember(&mut self, pid: u32, e: &E) {
        let shape = self.shape;
        let h = &mut self.hot[pid as usize];
        let base = shape.push(&mut h.hist_head, &mut h.hist_len);
        let row = if shape.inline() {
            &mut h.ring[base..base + shape.cols]
        } else {
            let at = pid as usize * shape.stride() + base;
            &mut self.ring[at..at + shape.cols]
        };
        // From the event, not from the frame just filled: reloading values
        // just stored would stall store forwarding.
        for (v, f) in row.iter_mut().zip(&self.prog.history) {
            *v = match f {
                FrameSlot::At(i) => e.field(*i),
                FrameSlot::Field(x) => x(e),
                FrameSlot::Prev { .. } => Value::Null,
            };
        }
    }
}
