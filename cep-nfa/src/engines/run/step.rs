//! One event against one partition: the frame, the live runs' bindings,
//! new partial matches and what becomes a match.
//!
//! This is where a Kleene element is matched. [`Engine::offer`] tries each
//! live run's candidate elements (`graph.cands`: its own element when that
//! is a Kleene loop, and the forward edges): [`bind`] makes the child run
//! (registers, negation regions, a buffer node) and [`settle`] keeps it,
//! as long as it is on a Kleene loop (`graph.kleene`) or has a forward
//! edge, and turns it into a match when its element accepts. The strategy
//! then decides whether the parent run survives the event.

use std::cmp::Ordering;

use cep_core::{Timestamp, Value};

use crate::buffer::{Buffer, NIL};
use crate::engines::api::StreamEvent;
use crate::program::{FrameSlot, Program, RegOp, RegUpdate, RemoteCond, Strategy};
use cep_core::remote::{RemoteLink, Verdict};

use super::Engine;
use super::lazy::{Owed, remote_step};
use super::negation::{NegLog, negated_in_region};
use super::runs::{Finals, Run, RunSet, deadlines, window_ok};

/// The event being processed.
#[derive(Clone, Copy)]
pub(super) struct Step<'a> {
    pub(super) frame: &'a [Value],
    pub(super) ts: Timestamp,
    pub(super) pos: u64,
    pub(super) row: u64,
}

impl<E: StreamEvent> Engine<E> {
    /// One event of partition `pid`: its frame, the partition's live runs
    /// (out of line: most events of most keys find none), new partial
    /// matches, the `PREV` history and the deadlines.
    #[inline(always)]
    pub(super) fn process(&mut self, pid: u32, e: &E, ts: Timestamp, row: u64, any: bool, trail_acc: bool) {
        let shape = self.shape;
        let h = &mut self.hot[pid as usize];
        let pos = h.next_pos;
        h.next_pos += 1;
        let live = h.live > 0;
        if any {
            let frame = &mut self.frame[..];
            // `PREV` values first: they are read before the event joins the
            // history.
            match self.prev1 {
                Some(p) => frame[p.prev] = if h.hist_len > 0 { h.ring[0] } else { Value::Null },
                None => {
                    let ring: &[Value] = if shape.inline() {
                        &h.ring[..shape.stride()]
                    } else {
                        &self.ring[pid as usize * shape.stride()..(pid as usize + 1) * shape.stride()]
                    };
                    for &(slot, col, n) in &self.plan.prevs {
                        frame[slot as usize] = shape.get(ring, h.hist_head, h.hist_len, n as usize, col as usize);
                    }
                }
            }
            for &(slot, i) in &self.plan.fields {
                frame[slot as usize] = e.field(i);
            }
            for &slot in &self.plan.computed {
                if let FrameSlot::Field(x) = &self.prog.frame[slot as usize] {
                    frame[slot as usize] = x(e);
                }
            }
            if let Some(p) = self.prev1 {
                // From the event, not from the frame: reloading a value just
                // stored would stall store forwarding.
                h.ring[0] = e.field(p.column);
                h.hist_len = 1;
            }
        }
        if live {
            self.offer(pid, e, ts, pos, row, any, trail_acc);
        }
        let mut started = false;
        if any {
            for s in 0..self.starts.len() {
                let t = &self.starts[s];
                let j = t.elem as usize;
                let (frame, regs) = (&self.frame[..], &self.null_regs[..]);
                if self.acc >> j & 1 == 1
                    && t.frame.iter().all(|p| p(frame, regs))
                    && t.event.iter().all(|&c| (self.prog.elements[j].conds[c].pred)(e, frame, regs))
                    && let Some(owed) = self.start_remote(j)
                {
                    self.start(pid, e, j, ts, pos, row, owed);
                    started = true;
                }
            }
        }
        if shape.depth > 0 && !(any && self.prev1.is_some()) {
            self.remember(pid, e);
        }
        if live || started {
            self.settle_partition(pid, pos);
        }
        self.emit_done();
    }

    /// Offers the event to the live runs of partition `pid`: a trailing
    /// negation kills pending matches whose quiet period it falls in; each
    /// run may bind it (children go to `extra`, matches to `done_runs`) and
    /// survives or not by the strategy; middle negations block edges.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn offer(&mut self, pid: u32, e: &E, ts: Timestamp, pos: u64, row: u64, any: bool, trail_acc: bool) {
        let room = self.spawn_room();
        let Engine {
            prog,
            parts,
            buffer,
            frame,
            acc,
            neg_acc,
            child_regs,
            extra,
            done_runs,
            refused,
            remote,
            lazy,
            ..
        } = self;
        let mut lazy = lazy.as_deref_mut();
        let (frame, acc, neg_acc) = (&frame[..], *acc, *neg_acc);
        let part = &mut parts[pid as usize];

        if trail_acc && let Some(t) = &prog.trailing {
            let mut w = 0;
            for i in 0..part.pending.len() {
                let r = part.pending.runs[i];
                let kill = ts <= r.expires && t.conds.iter().all(|c| c.test(e, frame, part.pending.regs(i)));
                if kill {
                    buffer.release(r.node);
                } else {
                    part.pending.move_to(i, w);
                    w += 1;
                }
            }
            part.pending.truncate(w);
        }

        let strategy = prog.strategy;
        let stride = prog.regs;
        let g = &prog.graph;
        let mut w = 0;
        for i in 0..part.runs.len() {
            let mut run = part.runs.runs[i];
            if run.expires < ts || run.expires_pos < pos {
                buffer.release(run.node);
                continue;
            }
            let k = run.elem as usize;
            let mut relevant = false;
            if any {
                let regs = &part.runs.regs[i * stride..(i + 1) * stride];
                let mut left_ok: Option<bool> = None;
                for &j in &g.cands[k] {
                    let j = j as usize;
                    if acc >> j & 1 == 0 || !window_ok(prog, &run, j, ts, pos) {
                        continue;
                    }
                    if j != k {
                        let ok = *left_ok.get_or_insert_with(|| completions_ok(prog, k, k + 1, regs));
                        if !ok || !completions_ok(prog, k + 1, j, regs) {
                            continue;
                        }
                    }
                    let count_before = if j == k { run.count } else { 0 };
                    if !conds_ok(prog, j, e, frame, regs, count_before) {
                        continue;
                    }
                    let Some(owed) = remote_step(remote.as_deref(), lazy.as_deref_mut(), prog, j, frame, regs) else {
                        continue;
                    };
                    relevant = true;
                    if (run.block_at as usize) < j {
                        continue;
                    }
                    if extra.len() >= room {
                        // Past the state bound: `keep_bound` applies the policy.
                        *refused += 1;
                        continue;
                    }
                    child_regs.copy_from_slice(regs);
                    let step = Step { frame, ts, pos, row };
                    if let Some(child) =
                        bind(prog, buffer, &part.log, step, e, child_regs, Some(&run), j, count_before, owed)
                    {
                        settle(prog, buffer, child, child_regs, &part.log, extra, &mut part.pending, done_runs);
                    }
                }
            }
            let keep = match strategy {
                Strategy::AnyMatch => true,
                Strategy::NextMatch => !relevant,
                Strategy::Strict => false,
            };
            if !keep {
                buffer.release(run.node);
                continue;
            }
            if any && neg_acc != 0 {
                let regs = &part.runs.regs[i * stride..(i + 1) * stride];
                for (gi, neg) in prog.negations.iter().enumerate() {
                    if neg_acc >> gi & 1 == 0
                        || neg.deferred.is_some()
                        || neg.after < k
                        || neg.after >= run.block_at as usize
                    {
                        continue;
                    }
                    if neg.early.iter().all(|c| c.test(e, frame, regs)) {
                        run.block_at = neg.after as u16;
                    }
                }
                // Not Kleene and every forward edge blocked: the run is dead.
                if !g.kleene[k] && g.next[k].first().is_some_and(|&j| (run.block_at as usize) < j as usize) {
                    buffer.release(run.node);
                    continue;
                }
            }
            part.runs.runs[i] = run;
            part.runs.move_to(i, w);
            w += 1;
        }
        part.runs.truncate(w);
    }

    /// Element `j`'s remote conditions on an event that would start a
    /// partial match: blocking, whether they hold (and one took the
    /// failure policy's value); lazy, the debts its binding owes.
    #[inline]
    fn start_remote(&mut self, j: usize) -> Option<Owed> {
        let (frame, regs) = (&self.frame[..], &self.null_regs[..]);
        remote_step(self.remote.as_deref(), self.lazy.as_deref_mut(), &self.prog, j, frame, regs)
    }

    /// The event starts a partial match at element `j` (its conditions
    /// hold).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn start(&mut self, pid: u32, e: &E, j: usize, ts: Timestamp, pos: u64, row: u64, owed: Owed) {
        let Engine { prog, parts, buffer, frame, null_regs, child_regs, extra, done_runs, .. } = self;
        let part = &mut parts[pid as usize];
        child_regs.copy_from_slice(null_regs);
        let step = Step { frame, ts, pos, row };
        if let Some(child) = bind(prog, buffer, &part.log, step, e, child_regs, None, j, 0, owed) {
            settle(prog, buffer, child, child_regs, &part.log, extra, &mut part.pending, done_runs);
        }
    }

    /// After an event changed partition `pid`'s partial matches: adds the
    /// new runs (within the key's cap), logs the event for deferred
    /// negations, queues the matches that became final, and reschedules
    /// the partition's timer.
    #[inline(never)]
    pub(super) fn settle_partition(&mut self, pid: u32, pos: u64) {
        let Engine { parts, buffer, frame, neg_acc, extra, deferred_mask, max_runs, stats, .. } = self;
        let part = &mut parts[pid as usize];
        if !extra.runs.is_empty() {
            part.runs.append(extra);
            // Only new runs can take a key past its cap.
            if part.runs.len() > *max_runs {
                stats.dropped += part.runs.drop_oldest(part.runs.len() - *max_runs, buffer) as u64;
            }
        }
        if *deferred_mask != 0 {
            let mask = *neg_acc & *deferred_mask;
            if mask != 0 && !part.runs.runs.is_empty() {
                part.log.push(pos, mask, frame);
            }
            let min_start = part.runs.runs.iter().map(|r| r.start_pos).min().unwrap_or(u64::MAX);
            part.log.prune(min_start, frame.len());
        }
        if !self.done_runs.is_empty() {
            let mut finished = std::mem::take(&mut self.done_runs);
            for (i, r) in finished.runs.iter().enumerate() {
                self.queue_done(pid, r, finished.regs(i));
            }
            finished.clear();
            self.done_runs = finished;
        }
        self.reschedule(pid);
        if self.meter.is_bounded() {
            let refused = std::mem::take(&mut self.refused);
            self.keep_bound(refused);
        }
    }
}

/// Completion conditions of the elements `lo..hi` hold.
pub(super) fn completions_ok<E>(prog: &Program<E>, lo: usize, hi: usize, regs: &[Value]) -> bool {
    prog.elements[lo..hi].iter().all(|el| el.completion.iter().all(|c| (c.pred)(regs)))
}

/// Element `j`'s remote conditions on the candidate (blocking: each call
/// waits for its answer), after its local ones held: `Some(unverified)`
/// when every one holds (`unverified`: one took the failure policy's
/// value), `None` when one does not, or its call failed and the policy
/// drops the run or stops the job. Without a link (no resolver was
/// given), a remote condition does not hold.
#[inline]
pub(super) fn ask_remote<E>(
    link: Option<&RemoteLink>,
    prog: &Program<E>,
    j: usize,
    frame: &[Value],
    regs: &[Value],
) -> Option<bool> {
    let conds = &prog.elements[j].remote;
    if conds.is_empty() {
        return Some(false);
    }
    ask_remote_calls(link?, conds.iter(), frame, regs)
}

/// The blocking calls of `conds`, one after another (see [`ask_remote`]).
#[inline(never)]
pub(super) fn ask_remote_calls<'c>(
    link: &RemoteLink,
    conds: impl Iterator<Item = &'c RemoteCond>,
    frame: &[Value],
    regs: &[Value],
) -> Option<bool> {
    let mut unverified = false;
    for c in conds {
        let args = c.args.iter().map(|f| f(frame, regs)).collect();
        let value = match link.call(c.func, args) {
            Verdict::Value(v) => v,
            Verdict::Unverified(v) => {
                unverified = true;
                v
            }
            Verdict::Drop | Verdict::Fail => return None,
        };
        if value == c.negated {
            return None;
        }
    }
    Some(unverified)
}

pub(super) fn conds_ok<E>(
    prog: &Program<E>,
    j: usize,
    e: &E,
    frame: &[Value],
    regs: &[Value],
    count_before: u32,
) -> bool {
    prog.elements[j].conds.iter().all(|c| (c.skip_first && count_before == 0) || c.test(e, frame, regs))
}

/// Binds the event to element `j` as a child of `from` (or as a new
/// partial match): sets negation regions, runs deferred negation checks,
/// updates the registers and adds a buffer node, which records what the
/// binding owes to remote conditions (`owed`). `None` when a deferred
/// negation rules the binding out.
#[allow(clippy::too_many_arguments)]
pub(super) fn bind<E>(
    prog: &Program<E>,
    buffer: &mut Buffer,
    log: &NegLog,
    step: Step<'_>,
    e: &E,
    regs: &mut [Value],
    from: Option<&Run>,
    j: usize,
    count_before: u32,
    owed: Owed,
) -> Option<Run> {
    if let Some(r) = from {
        let k = r.elem as usize;
        for neg in &prog.negations {
            if let Some(d) = neg.deferred
                && k <= neg.after
                && neg.after < j
            {
                regs[d.lo as usize] = Value::Int(r.last_pos as i64);
                regs[d.hi as usize] = Value::Int(step.pos as i64);
            }
        }
        for (gi, neg) in prog.negations.iter().enumerate() {
            if let Some(d) = neg.deferred
                && k <= d.check_after
                && d.check_after < j
                && negated_in_region(prog, gi, log, regs)
            {
                return None;
            }
        }
    }
    apply_updates(&prog.elements[j].updates, regs, step.frame, count_before);
    if count_before == 0 && prog.elements[j].completion.iter().any(|c| c.at_first && !(c.pred)(regs)) {
        // A condition fixed by the first event already fails: no match can follow.
        return None;
    }
    let node = buffer.push(from.map_or(NIL, |r| r.node), j as u16, step.row, step.pos);
    if prog.graph.objects >> j & 1 == 1
        && let Some(object) = &prog.object
    {
        // An `EMIT x.*` item names this element: keep the event's object.
        buffer.set_object(node, object(e));
    }
    if let Some(debts) = owed.debts {
        buffer.set_debts(node, debts);
    }
    let mut run = Run {
        elem: j as u16,
        block_at: u16::MAX,
        count: count_before + 1,
        start_ts: from.map_or(step.ts, |r| r.start_ts),
        last_ts: step.ts,
        start_pos: from.map_or(step.pos, |r| r.start_pos),
        last_pos: step.pos,
        expires: Timestamp::MAX,
        expires_pos: u64::MAX,
        node,
        unverified: owed.unverified || from.is_some_and(|r| r.unverified),
    };
    (run.expires, run.expires_pos) = deadlines(prog, &run);
    Some(run)
}

/// After a binding: a complete run becomes a match (or a pending one); a
/// run that can still grow is kept.
#[allow(clippy::too_many_arguments)]
pub(super) fn settle<E>(
    prog: &Program<E>,
    buffer: &mut Buffer,
    child: Run,
    regs: &[Value],
    log: &NegLog,
    keep: &mut RunSet,
    pending: &mut RunSet,
    done: &mut Finals,
) {
    let j = child.elem as usize;
    let g = &prog.graph;
    if g.accepting[j] && completions_ok(prog, j, prog.elements.len(), regs) {
        let negated = prog.negations.iter().enumerate().any(|(gi, neg)| {
            neg.deferred.is_some_and(|d| d.check_after >= j) && negated_in_region(prog, gi, log, regs)
        });
        if !negated {
            buffer.retain(child.node);
            match &prog.trailing {
                Some(t) => {
                    let mut p = child;
                    p.expires = child.last_ts.saturating_add(t.quiet);
                    p.expires_pos = u64::MAX;
                    pending.push(p, regs);
                }
                None => done.push(child, regs),
            }
        }
    }
    if g.kleene[j] || !g.next[j].is_empty() {
        keep.push(child, regs);
    } else {
        buffer.release(child.node);
    }
}

pub(crate) fn apply_updates(updates: &[RegUpdate], regs: &mut [Value], frame: &[Value], count_before: u32) {
    for u in updates {
        let r = u.reg as usize;
        match u.op {
            RegOp::Count => regs[r] = Value::Int(i64::from(count_before) + 1),
            RegOp::Last(s) => regs[r] = frame[s as usize],
            RegOp::First(s) => {
                if count_before == 0 {
                    regs[r] = frame[s as usize];
                }
            }
            RegOp::Nth(k, s) => {
                if count_before + 1 == k {
                    regs[r] = frame[s as usize];
                }
            }
            RegOp::Sum(s) => {
                if count_before == 0 {
                    regs[r] = Value::Null;
                    regs[r + 1] = Value::Null;
                }
                let (sum, n) = crate::compile::ops::sum_step(regs[r], regs[r + 1], frame[s as usize]);
                regs[r] = sum;
                regs[r + 1] = n;
            }
            RegOp::Avg(s) => {
                if count_before == 0 {
                    regs[r..r + 3].fill(Value::Null);
                }
                let (lo, hi, n) = crate::compile::ops::avg_step(regs[r], regs[r + 1], regs[r + 2], frame[s as usize]);
                regs[r] = lo;
                regs[r + 1] = hi;
                regs[r + 2] = n;
            }
            RegOp::Min(s) => regs[r] = crate::compile::ops::extreme_step(regs[r], frame[s as usize], Ordering::Less),
            RegOp::Max(s) => regs[r] = crate::compile::ops::extreme_step(regs[r], frame[s as usize], Ordering::Greater),
        }
    }
}
