//! Direct construction: an accepting entry's matches enumerated forwards in
//! row order from the link structure, touching only entries that lead to a
//! match, so the work per match is O(1) to O(k log w) and stops when the
//! consumer does.

use crate::program::Window;

use super::Build;
use super::cluster::QueryRef;
use super::emit::direct_emit;
use super::output::{MatchRef, Out};
use super::stacks::{Bound, Entry, NONE, Part, Stack};

/// The entries of each level that can be on a path ending at `x` within the
/// window: `(first, last)` absolute indices for levels `0..n - 1`, where
/// `first` is the oldest entry the window admits *and* that links down to a
/// usable entry of the level below (so every listed entry leads to a
/// match); `None` when no path exists. Links ascend with the entries, so
/// each bound is a binary search.
pub(super) fn usable_ranges(window: Option<Window>, part: &Part, x: &Entry) -> Option<[(u64, u64); 64]> {
    let n = part.stacks.len();
    let bound = Bound::of(window, x);
    let mut ranges = [(0u64, 0u64); 64];
    let mut upper = x.link;
    for k in (0..n - 1).rev() {
        let s = &part.stacks[k];
        if upper == NONE || upper < s.bottom() {
            return None;
        }
        let top = upper.min(s.end() - 1);
        let first = first_in(s, s.bottom(), top, |e| bound.admits(e))?;
        ranges[k] = (first, top);
        upper = if k > 0 { s.get(top).link } else { NONE };
    }
    for k in 1..n - 1 {
        let below = ranges[k - 1].0;
        let (first, top) = ranges[k];
        ranges[k].0 = first_in(&part.stacks[k], first, top, |e| e.link != NONE && e.link >= below)?;
    }
    Some(ranges)
}

/// The first entry of `s` in `lo..=hi` for which the monotone `ok` holds.
pub(super) fn first_in(s: &Stack, lo: u64, hi: u64, ok: impl Fn(&Entry) -> bool) -> Option<u64> {
    let (mut lo, mut end) = (lo, hi + 1);
    while lo < end {
        let mid = lo + (end - lo) / 2;
        if ok(s.get(mid)) { end = mid } else { lo = mid + 1 }
    }
    (lo <= hi).then_some(lo)
}

/// Hands every match ending at `x` to `visit` in row order, enumerating
/// forwards: each level's entries from the first that links down to the
/// entry chosen below, up to the range's end. Every step extends a path
/// that completes, so the work is O(k log w) per match. Returns the number
/// of matches. (Not inlined into the per-event code, as when it was not
/// generic: that keeps the enumeration loop's registers its own.)
#[inline(never)]
pub(super) fn enumerate_direct<E>(
    q: &QueryRef<'_, E>,
    part: &Part,
    x_abs: u64,
    b: &mut Build,
    out: &mut Out<'_>,
) -> u64 {
    let prog = q.prog;
    let n = part.stacks.len();
    // A copy: the visitor's calls would make the loop reload it otherwise.
    let x = *part.stacks[n - 1].get(x_abs);
    // Registers are needed only for `EMIT` (no condition links variables
    // here), so without it none are computed.
    let emits = !prog.emit.is_empty();
    b.rows.clear();
    if n == 1 {
        b.rows.push(x.row);
        if emits {
            direct_emit(prog, part, q.width, &[], x_abs, &mut b.regs, &mut b.emit);
        }
        out.send(&MatchRef { key: part.key, start: x.ts, end: x.ts, rows: &b.rows, emit: &b.emit });
        return 1;
    }
    let Some(ranges) = usable_ranges(prog.window, part, &x) else { return 0 };
    let last = n - 2;
    let cur = &mut b.path;
    cur[0] = ranges[0].0;
    let mut from = 1; // levels from here up are filled with their first choice
    let mut count = 0;
    loop {
        for k in from..=last {
            let (first, top) = ranges[k];
            let below = cur[k - 1];
            cur[k] =
                first_in(&part.stacks[k], first, top, |e| e.link >= below).expect("the range's top links at or above");
        }
        b.rows.clear();
        b.rows.extend((0..=last).map(|k| part.stacks[k].get(cur[k]).row));
        b.rows.push(x.row);
        let start = part.stacks[0].get(cur[0]).ts;
        if emits {
            direct_emit(prog, part, q.width, &cur[..=last], x_abs, &mut b.regs, &mut b.emit);
        }
        count += 1;
        if !out.send(&MatchRef { key: part.key, start, end: x.ts, rows: &b.rows, emit: &b.emit }) {
            break;
        }
        // The next path in row order: advance the deepest level that can.
        let Some(k) = (0..=last).rev().find(|&k| cur[k] < ranges[k].1) else { break };
        cur[k] += 1;
        from = k + 1;
    }
    count
}
