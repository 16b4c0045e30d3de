//! A run (one partial match: its last element, start, last binding,
//! deadline and buffer node) and a partition's set of them with their
//! registers, kept flat so that offering an event to a partition walks two
//! vectors; and the windows that decide how long a run may still bind.

use cep_core::{Timestamp, Value};

use crate::buffer::{Buffer, NodeId};
use crate::program::{Program, Window};

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Run {
    /// Last bound element.
    pub(super) elem: u16,
    /// Smallest `after` of a negation triggered since the last binding:
    /// forward edges to elements beyond it are blocked.
    pub(super) block_at: u16,
    /// Events bound to `elem`.
    pub(super) count: u32,
    pub(super) start_ts: Timestamp,
    pub(super) last_ts: Timestamp,
    pub(super) start_pos: u64,
    pub(super) last_pos: u64,
    /// After this ts the run can bind nothing (for a pending match: `end`).
    pub(super) expires: Timestamp,
    /// After this position the run can bind nothing.
    pub(super) expires_pos: u64,
    pub(super) node: NodeId,
    /// A remote call on its way took the failure policy's value
    /// (`--remote-failure true|false`): its match is marked unverified.
    #[serde(default)]
    pub(super) unverified: bool,
}

/// Runs with their registers, `stride` values each.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct RunSet {
    pub(super) runs: Vec<Run>,
    pub(super) regs: Vec<Value>,
    pub(super) stride: usize,
}

impl RunSet {
    pub(super) fn new(stride: usize) -> RunSet {
        RunSet { runs: Vec::new(), regs: Vec::new(), stride }
    }

    pub(super) fn push(&mut self, run: Run, regs: &[Value]) {
        self.runs.push(run);
        self.regs.extend_from_slice(regs);
    }

    pub(super) fn regs(&self, i: usize) -> &[Value] {
        &self.regs[i * self.stride..(i + 1) * self.stride]
    }

    pub(super) fn len(&self) -> usize {
        self.runs.len()
    }

    /// Moves run `from` to slot `to` (`to <= from`).
    pub(super) fn move_to(&mut self, from: usize, to: usize) {
        if from != to {
            self.runs[to] = self.runs[from];
            let s = self.stride;
            self.regs.copy_within(from * s..(from + 1) * s, to * s);
        }
    }

    pub(super) fn truncate(&mut self, n: usize) {
        self.runs.truncate(n);
        self.regs.truncate(n * self.stride);
    }

    pub(super) fn append(&mut self, other: &mut RunSet) {
        self.runs.append(&mut other.runs);
        self.regs.append(&mut other.regs);
    }

    /// Removes the runs `drop` selects, releasing their nodes.
    pub(super) fn retain(&mut self, buffer: &mut Buffer, mut drop: impl FnMut(&Run) -> bool) {
        let mut w = 0;
        for i in 0..self.runs.len() {
            if drop(&self.runs[i]) {
                buffer.release(self.runs[i].node);
            } else {
                self.move_to(i, w);
                w += 1;
            }
        }
        self.truncate(w);
    }

    /// Removes the first `n` runs (the oldest created), releasing their
    /// nodes; returns `n`.
    pub(super) fn drop_oldest(&mut self, n: usize, buffer: &mut Buffer) -> usize {
        for r in &self.runs[..n] {
            buffer.release(r.node);
        }
        self.runs.drain(..n);
        self.regs.drain(..n * self.stride);
        n
    }

    pub(super) fn clear(&mut self, buffer: &mut Buffer) {
        for r in &self.runs {
            buffer.release(r.node);
        }
        self.runs.clear();
        self.regs.clear();
    }
}

/// Runs that became final in one step, with their registers when the
/// query has `EMIT` items (which read them); without items no register is
/// copied.
#[derive(Debug, Default)]
pub(super) struct Finals {
    pub(super) runs: Vec<Run>,
    regs: Vec<Value>,
    /// Registers per run kept: the query's register count with `EMIT`
    /// items, else 0.
    stride: usize,
}

impl Finals {
    pub(super) fn new(stride: usize) -> Finals {
        Finals { runs: Vec::new(), regs: Vec::new(), stride }
    }

    #[inline]
    pub(super) fn push(&mut self, run: Run, regs: &[Value]) {
        self.runs.push(run);
        if self.stride > 0 {
            self.regs.extend_from_slice(regs);
        }
    }

    /// The registers of run `i` (empty without `EMIT` items).
    pub(super) fn regs(&self, i: usize) -> &[Value] {
        &self.regs[i * self.stride..(i + 1) * self.stride]
    }

    pub(super) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.runs.clear();
        self.regs.clear();
    }
}

pub(super) fn window_ok<E>(prog: &Program<E>, run: &Run, j: usize, ts: Timestamp, pos: u64) -> bool {
    match prog.window {
        Some(Window::Time(w)) if beyond(ts, run.start_ts, w) => return false,
        Some(Window::Events(n)) if pos - run.start_pos > n => return false,
        _ => {}
    }
    if j != run.elem as usize {
        match prog.elements[j].within {
            Some(Window::Time(w)) if beyond(ts, run.last_ts, w) => return false,
            Some(Window::Events(n)) if pos - run.last_pos > n => return false,
            _ => {}
        }
    }
    true
}

/// Whether `ts` lies more than `w` after `from`. A gap too wide for a
/// timestamp is wider than any window: saturating it to `Timestamp::MAX`
/// would let it pass a window of exactly that width.
pub(super) fn beyond(ts: Timestamp, from: Timestamp, w: Timestamp) -> bool {
    ts.checked_sub(from).is_none_or(|gap| gap > w)
}

/// The latest ts and position at which a run can still bind an event.
pub(super) fn deadlines<E>(prog: &Program<E>, run: &Run) -> (Timestamp, u64) {
    let (st, sp) = match prog.window {
        Some(Window::Time(w)) => (run.start_ts.saturating_add(w), u64::MAX),
        Some(Window::Events(n)) => (Timestamp::MAX, run.start_pos.saturating_add(n)),
        None => (Timestamp::MAX, u64::MAX),
    };
    let j = run.elem as usize;
    let mut t = Timestamp::MIN;
    let mut p = 0u64;
    for &o in &prog.graph.cands[j] {
        let (mut ot, mut op) = (st, sp);
        if o as usize != j {
            match prog.elements[o as usize].within {
                Some(Window::Time(w)) => ot = ot.min(run.last_ts.saturating_add(w)),
                Some(Window::Events(n)) => op = op.min(run.last_pos.saturating_add(n)),
                None => {}
            }
        }
        t = t.max(ot);
        p = p.max(op);
    }
    (t, p)
}
