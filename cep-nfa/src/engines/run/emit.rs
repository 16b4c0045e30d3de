//! Final matches out: a run that is complete (and past any quiet period)
//! becomes a [`Done`], and the ones that become final at the same moment
//! go through selection (`SELECT EARLIEST/LATEST`), ordering and
//! after-match skip together, since each of these compares matches.

use std::cmp::Ordering;

use cep_core::{EmitValue, Match, Timestamp, Value};

use crate::buffer::{Node, NodeId};
use crate::engines::api::StreamEvent;
use crate::program::{Selection, SkipTo};

use super::Engine;
use super::runs::Run;

/// A match that became final, before selection and skipping.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Done {
    pub(super) part: u32,
    /// Its partition's key (a parked match may outlive the partition).
    pub(super) key: cep_core::Value,
    pub(super) node: NodeId,
    pub(super) start: Timestamp,
    pub(super) end: Timestamp,
    pub(super) start_pos: u64,
    pub(super) last_pos: u64,
    pub(super) rows: Vec<u64>,
    pub(super) ends: Vec<u32>,
    /// Start positions of the partial matches its emission discards
    /// (after-match skip), inclusive.
    pub(super) discard: Option<(u64, u64)>,
    pub(super) discarded: bool,
    /// The values of the query's `EMIT` items (empty without).
    pub(super) emit: Vec<EmitValue>,
    /// A remote call took the failure policy's value on its way.
    pub(super) unverified: bool,
}

impl<E: StreamEvent> Engine<E> {
    /// Turns a final run into a [`Done`] (taking over its node reference).
    /// `regs` are the run's registers (read only by `EMIT` items).
    pub(super) fn queue_done(&mut self, pid: u32, r: &Run, regs: &[Value]) {
        self.buffer.path(r.node, &mut self.path);
        let n = self.prog.elements.len();
        let (mut rows, mut ends, mut emit) = match self.out.take_spare() {
            Some(m) => (m.rows, m.ends, m.emit),
            None => (Vec::with_capacity(self.path.len()), Vec::with_capacity(n), Vec::new()),
        };
        rows.clear();
        ends.clear();
        emit.clear();
        if !self.prog.emit.is_empty() {
            self.emit_values(r, regs, &mut emit);
        }
        ends.resize(n, 0);
        for node in &self.path {
            rows.push(node.row);
            ends[node.elem as usize] += 1;
        }
        let discard = skip_range(self.prog.skip, &self.path);
        let mut acc = 0;
        for e in ends.iter_mut() {
            acc += *e;
            *e = acc;
        }
        let end = match &self.prog.trailing {
            Some(_) => r.expires,
            None => r.last_ts,
        };
        let d = Done {
            part: pid,
            key: self.parts[pid as usize].key,
            node: r.node,
            start: r.start_ts,
            end,
            start_pos: r.start_pos,
            last_pos: r.last_pos,
            rows,
            ends,
            discard,
            discarded: false,
            emit,
            unverified: r.unverified,
        };
        if self.lazy.is_some() {
            self.settle_done(d);
        } else {
            self.done.push(d);
        }
    }

    /// The values of the `EMIT` items on final run `r`: expressions from
    /// its registers, `x.*` from the objects kept beside its nodes.
    #[inline(never)]
    fn emit_values(&self, r: &Run, regs: &[Value], out: &mut Vec<EmitValue>) {
        self.prog.emit_values(
            regs,
            |elem, quant| {
                let mut objects = Vec::new();
                self.buffer.objects_of(r.node, elem as u16, &mut objects);
                if quant.is_kleene() {
                    EmitValue::Events(objects)
                } else {
                    objects.pop().map_or(EmitValue::Null, EmitValue::Event)
                }
            },
            out,
        );
    }

    /// Emits the queued final matches: selection, order, after-match skip.
    #[inline]
    pub(super) fn emit_done(&mut self) {
        if !self.done.is_empty() {
            self.emit_queued();
        }
    }

    #[inline(never)]
    pub(super) fn emit_queued(&mut self) {
        let mut done = std::mem::take(&mut self.done);
        if self.prog.select != Selection::All {
            let latest = self.prog.select == Selection::Latest;
            done.sort_by(|a, b| {
                (a.part, a.last_pos).cmp(&(b.part, b.last_pos)).then_with(|| {
                    let o = cmp_start_rows(a, b);
                    if latest { o.reverse() } else { o }
                })
            });
            let mut prev: Option<(u32, u64)> = None;
            for d in done.iter_mut() {
                let group = Some((d.part, d.last_pos));
                if group == prev {
                    d.discarded = true;
                }
                prev = group;
            }
        }
        done.sort_by(|a, b| a.end.cmp(&b.end).then_with(|| cmp_start_rows(a, b)));
        for i in 0..done.len() {
            if done[i].discarded {
                continue;
            }
            let d = &done[i];
            let key = d.key;
            let m = Match {
                query: 0,
                key,
                start: d.start,
                end: d.end,
                rows: std::mem::take(&mut done[i].rows),
                ends: std::mem::take(&mut done[i].ends),
                emit: std::mem::take(&mut done[i].emit),
                unverified: done[i].unverified,
            };
            self.out.emit(m);
            self.stats.matches += 1;
            let d = &done[i];
            if let Some((lo, hi)) = d.discard {
                let pid = d.part;
                let part = &mut self.parts[pid as usize];
                let hit = |s: u64| lo <= s && s <= hi;
                part.runs.retain(&mut self.buffer, |r| hit(r.start_pos));
                part.pending.retain(&mut self.buffer, |r| hit(r.start_pos));
                let live = part.runs.len() + part.pending.len();
                self.set_live(pid, live);
                for later in done[i + 1..].iter_mut() {
                    if later.part == pid && hit(later.start_pos) {
                        later.discarded = true;
                    }
                }
            }
        }
        for d in &done {
            self.buffer.release(d.node);
        }
        done.clear();
        self.done = done;
    }
}

/// Positions whose partial matches a skip discards after match `d`.
pub(super) fn skip_range(skip: SkipTo, path: &[Node]) -> Option<(u64, u64)> {
    let first = path.first()?.pos;
    let last = path.last()?.pos;
    let of = |x: usize| path.iter().filter(move |n| n.elem as usize == x).map(|n| n.pos);
    match skip {
        SkipTo::None => None,
        SkipTo::NextEvent => Some((first, first)),
        SkipTo::PastLastEvent => Some((first, last)),
        SkipTo::First(x) => of(x).next().filter(|&p| p > first).map(|p| (first, p - 1)),
        SkipTo::Last(x) => of(x).next_back().filter(|&p| p > first).map(|p| (first, p - 1)),
    }
}

pub(super) fn cmp_start_rows(a: &Done, b: &Done) -> Ordering {
    a.start.cmp(&b.start).then_with(|| cmp_vars(a, b))
}

/// Rows compared variable by variable, each as a sequence.
pub(super) fn cmp_vars(a: &Done, b: &Done) -> Ordering {
    cep_core::cmp_rows_by_var(&a.rows, &a.ends, &b.rows, &b.ends)
}
