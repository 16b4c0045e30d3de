//! Deferred negations (`NOT` between elements whose condition needs later
//! events): the log of candidate events per partition, and the check of a
//! negation's region against it when a run binds past it.

use cep_core::Value;

use crate::program::Program;

/// Candidate events of deferred negations: (position, which negations'
/// types accept it) and its frame, oldest first. Entries before `start` are
/// dead; they are compacted away once they are the majority.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct NegLog {
    pub(super) pos: Vec<(u64, u64)>,
    pub(super) frames: Vec<Value>,
    pub(super) start: usize,
}

impl NegLog {
    pub(super) fn push(&mut self, pos: u64, mask: u64, frame: &[Value]) {
        self.pos.push((pos, mask));
        self.frames.extend_from_slice(frame);
    }

    /// Forgets entries before position `min`.
    pub(super) fn prune(&mut self, min: u64, width: usize) {
        while self.pos.get(self.start).is_some_and(|&(p, _)| p < min) {
            self.start += 1;
        }
        if self.start > 32 && self.start * 2 > self.pos.len() {
            self.pos.drain(..self.start);
            self.frames.drain(..self.start * width);
            self.start = 0;
        }
    }

    /// Whether no entry is live.
    pub(super) fn is_empty(&self) -> bool {
        self.start == self.pos.len()
    }

    /// Live entries: (position, mask, frame).
    pub(super) fn entries(&self, width: usize) -> impl Iterator<Item = (u64, u64, &[Value])> {
        self.pos[self.start..].iter().enumerate().map(move |(i, &(p, m))| {
            let at = (self.start + i) * width;
            (p, m, &self.frames[at..at + width])
        })
    }
}

/// Whether a deferred negation's region holds a matching candidate.
pub(super) fn negated_in_region<E>(prog: &Program<E>, gi: usize, log: &NegLog, regs: &[Value]) -> bool {
    let neg = &prog.negations[gi];
    let Some(d) = neg.deferred else { return false };
    let (Some(lo), Some(hi)) = (regs[d.lo as usize].as_i64(), regs[d.hi as usize].as_i64()) else {
        return false;
    };
    let width = prog.frame.len();
    log.entries(width).any(|(p, mask, frame)| {
        let p = p as i64;
        p > lo && p < hi && mask >> gi & 1 == 1 && neg.late.iter().all(|c| (c.pred)(frame, regs))
    })
}
