//! Building the matches of a cluster: accepting entries of one partition
//! that share a link, whose prefix paths are enumerated once and combined
//! with every member, checking conditions between variables as the paths
//! grow. Per-event construction builds clusters of one.

use cep_core::Value;

use crate::program::{Program, SharedFramePred};

use super::Build;
use super::count::count_paths;
use super::emit::built_emit;
use super::output::{MatchCount, MatchRef, Out};
use super::stacks::{Bound, NONE, Part};

/// What match construction reads of the query.
pub(super) struct QueryRef<'a, E> {
    pub(super) prog: &'a Program<E>,
    /// Cross conditions by the level they are checked at.
    pub(super) cross: &'a [Vec<(usize, SharedFramePred)>],
    /// Frame width.
    pub(super) width: usize,
    /// Some condition links variables (matches must be built to be checked).
    pub(super) linked: bool,
}

impl<E> Clone for QueryRef<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for QueryRef<'_, E> {}

/// Builds the matches of a cluster: accepting entries (absolute indices in
/// the last stack, oldest first) that share one link. The prefix paths are
/// enumerated once; each member is then checked against each. Hands the
/// matches to `visit`, per member in row order; returns the number of
/// prefixes enumerated and of matches.
pub(super) fn build_cluster<E>(
    q: &QueryRef<'_, E>,
    part: &Part,
    members: &[u64],
    b: &mut Build,
    out: &mut Out<'_>,
) -> (u64, u64) {
    let QueryRef { prog, cross, width, linked } = *q;
    let n = prog.elements.len();
    let last = &part.stacks[n - 1];
    if out.stopped {
        return (0, 0);
    }
    if out.is_counts() && !linked {
        // No condition between variables: count by dynamic programming.
        let mut total = 0;
        for &m in members {
            let x = *last.get(m);
            let count = count_paths(prog.window, part, &x, &mut b.counts, &mut b.counts_next);
            if count > 0 {
                out.count(&MatchCount { key: part.key, end: x.ts, row: x.row, count });
            }
            total += count;
        }
        return (0, u64::try_from(total).unwrap_or(u64::MAX));
    }
    let first = *last.get(members[0]);
    b.prefixes.clear();
    b.prefix_regs.clear();
    b.regs.fill(Value::Null);
    if n > 1 {
        // The loosest bound on the first event: the oldest member's.
        let bound = Bound::of(prog.window, &first);
        prefixes(prog, cross, part, n - 2, first.link, &bound, width, b);
    } else {
        b.prefix_regs.extend_from_slice(&b.regs);
    }
    let count = if n > 1 { b.prefixes.len() / (n - 1) } else { 1 };
    // Row order (indices ascend with rows in every stack), so each member's
    // matches come out in the run engine's order without sorting them.
    b.order.clear();
    b.order.extend(0..count as u32);
    if n > 1 {
        let (pre, w) = (&b.prefixes, n - 1);
        b.order.sort_unstable_by(|&p, &q| {
            pre[p as usize * w..(p as usize + 1) * w].cmp(&pre[q as usize * w..(q as usize + 1) * w])
        });
    }
    let el = &prog.elements[n - 1];
    let mut matches = 0;
    for &m in members {
        let x = *last.get(m);
        let frame = last.frame(m, width);
        let bound = Bound::of(prog.window, &x);
        let before = matches;
        // Prefixes are in row order, so by their first event: those this
        // member's window admits are a suffix. Every prefix visited below
        // is a match unless a condition fails.
        let first_event = |p: u32| *part.stacks[0].get(b.prefixes[p as usize * (n - 1)]);
        let skip = if n > 1 { b.order.partition_point(|&p| !bound.admits(&first_event(p))) } else { 0 };
        for &p in &b.order[skip..] {
            let p = p as usize;
            let path = &b.prefixes[p * (n - 1)..(p + 1) * (n - 1)];
            let e1 = if n > 1 { *part.stacks[0].get(path[0]) } else { x };
            b.regs.clear();
            b.regs.extend_from_slice(&b.prefix_regs[p * prog.regs..(p + 1) * prog.regs]);
            crate::engines::run::apply_updates(&el.updates, &mut b.regs, frame, 0);
            let cross_ok = (0..n)
                .all(|lvl| cross[lvl].iter().filter(|(owner, _)| *owner == n - 1).all(|(_, f)| f(frame, &b.regs)));
            let complete = prog.elements.iter().all(|e| e.completion.iter().all(|c| (c.pred)(&b.regs)));
            if !cross_ok || !complete {
                continue;
            }
            b.rows.clear();
            b.rows.extend(path.iter().enumerate().map(|(k, &a)| part.stacks[k].get(a).row));
            b.rows.push(x.row);
            if !prog.emit.is_empty() && !out.is_counts() {
                built_emit(prog, part, path, m, &b.regs, &mut b.emit);
            }
            matches += 1;
            if !out.send(&MatchRef { key: part.key, start: e1.ts, end: x.ts, rows: &b.rows, emit: &b.emit }) {
                return (count as u64, matches);
            }
        }
        if out.is_counts() && matches > before {
            out.count(&MatchCount { key: part.key, end: x.ts, row: x.row, count: u128::from(matches - before) });
        }
    }
    (count as u64, matches)
}

/// Enumerates prefix paths from stack `k` down to stack 0, taking entries
/// of stack `k` at or below `upper`, newest first; checks the cross
/// conditions of elements before the last at their earliest element.
#[allow(clippy::too_many_arguments)]
pub(super) fn prefixes<E>(
    prog: &Program<E>,
    cross: &[Vec<(usize, SharedFramePred)>],
    part: &Part,
    k: usize,
    upper: u64,
    bound: &Bound,
    width: usize,
    b: &mut Build,
) {
    let n = prog.elements.len();
    let stack = &part.stacks[k];
    if upper == NONE || upper < stack.bottom() {
        return;
    }
    let top = upper.min(stack.end() - 1);
    let mut abs = top + 1;
    while abs > stack.bottom() {
        abs -= 1;
        let c = stack.get(abs);
        // Entries below are older still: none can lead to a first event in
        // the window.
        if !bound.admits(c) {
            break;
        }
        b.path[k] = abs;
        let frame = stack.frame(abs, width);
        crate::engines::run::apply_updates(&prog.elements[k].updates, &mut b.regs, frame, 0);
        let ok = cross[k].iter().filter(|(owner, _)| *owner < n - 1).all(|&(owner, ref f)| {
            let of = part.stacks[owner].frame(b.path[owner], width);
            f(of, &b.regs)
        });
        if !ok {
            continue;
        }
        if k == 0 {
            b.prefixes.extend_from_slice(&b.path[..n - 1]);
            b.prefix_regs.extend_from_slice(&b.regs);
        } else {
            prefixes(prog, cross, part, k - 1, c.link, bound, width, b);
        }
    }
}
