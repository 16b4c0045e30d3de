//! Unit tests of the wheel's parts: keys, levels, slots, handles, discard,
//! reclaiming and ties.

use super::*;

/// A wheel that never armed a timer holds no lists (an engine has a
/// wheel per query), and works as an empty wheel.
#[test]
fn lists_come_with_the_first_timer() {
    let mut wheel = TimerWheel::<u32>::new();
    let mut out = Vec::new();
    let stale = TimerWheel::<u32>::new().insert(5, 0);
    assert!(!wheel.cancel(stale));
    assert!(!wheel.contains(stale));
    wheel.advance_to(100, &mut out);
    assert_eq!(wheel.next_bound(), None);
    wheel.drain(&mut out);
    assert!(out.is_empty() && wheel.lists.is_empty());
    assert_eq!(wheel.watermark(), i64::MAX);
    // The first timer (here behind the watermark: the past list).
    let mut wheel = TimerWheel::<u32>::new();
    wheel.advance_to(100, &mut out);
    wheel.insert(50, 1);
    wheel.insert(200, 2);
    assert_eq!(wheel.lists.len(), PAST + 1);
    wheel.advance_to(201, &mut out);
    assert_eq!(out, [(50, 1), (200, 2)]);
}

#[test]
fn keys_preserve_order_and_round_trip() {
    let ts = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    for w in ts.windows(2) {
        assert!(to_key(w[0]) < to_key(w[1]));
    }
    for t in ts {
        assert_eq!(from_key(to_key(t)), t);
    }
    assert_eq!(to_key(i64::MIN), 0);
    assert_eq!(to_key(i64::MAX), u64::MAX);
}

#[test]
fn levels() {
    assert_eq!(level_for(0, 0), 0);
    assert_eq!(level_for(0, 63), 0);
    assert_eq!(level_for(0, 64), 1);
    assert_eq!(level_for(64, 127), 0);
    assert_eq!(level_for(63, 64), 1); // differs in bit 6
    assert_eq!(level_for(0, 4095), 1);
    assert_eq!(level_for(0, 4096), 2);
    assert_eq!(level_for(0, 1 << 59), 9);
    assert_eq!(level_for(0, 1 << 60), 10);
    assert_eq!(level_for(0, u64::MAX), 10);
    assert_eq!(level_for(u64::MAX - 1, u64::MAX), 0);
}

#[test]
fn slots_and_starts() {
    assert_eq!(slot_for(0, 0), 0);
    assert_eq!(slot_for(63, 0), 63);
    assert_eq!(slot_for(64, 0), 0);
    assert_eq!(slot_for(64, 1), 1);
    assert_eq!(slot_for(5 << 12 | 7, 2), 5);
    assert_eq!(slot_for(u64::MAX, 10), 15); // the top level uses 16 slots
    // The start of a slot keeps elapsed's bits above the level.
    assert_eq!(slot_start(0, 0, 5), 5);
    assert_eq!(slot_start(130, 0, 5), 133);
    assert_eq!(slot_start(130, 1, 3), 3 << 6);
    assert_eq!(slot_start((7 << 12) | 130, 1, 3), (7 << 12) | (3 << 6));
    assert_eq!(slot_start(0, 10, 15), 15 << 60);
    assert_eq!(slot_start(u64::MAX, 0, 63), u64::MAX);
    // A key's slot on its level starts at or below the key.
    for (elapsed, key) in [(0u64, 1u64 << 40), (100, 4096 + 7), (u64::MAX - 70, u64::MAX), (5, 5)] {
        let level = level_for(elapsed, key);
        let start = slot_start(elapsed, level, slot_for(key, level));
        assert!(start <= key && u128::from(key - start) < 1u128 << (6 * level));
    }
}

#[test]
fn stale_handle_does_not_touch_reused_entry() {
    let mut w = TimerWheel::new();
    let a = w.insert(5, 'a');
    assert!(w.cancel(a));
    // Enough cancels to compact, which frees a's index.
    for _ in 1..MIN_COMPACT {
        let filler = w.insert(5, 'f');
        assert!(w.cancel(filler));
    }
    assert_eq!(w.len(), 0);
    let b = w.insert(6, 'b'); // reuses a's entry (the smallest free)
    assert_eq!(a.index, b.index);
    assert!(!w.contains(a) && w.contains(b));
    assert!(!w.cancel(a));
    assert_eq!(w.len(), 1);
    let mut out = Vec::new();
    w.advance_to(7, &mut out);
    assert_eq!(out, [(6, 'b')]);
    assert!(!w.cancel(b));
}

/// Discarded handles are checked in batches, stale ones and repeats
/// included: a stale handle whose index a new timer took leaves that
/// timer alone, a handle discarded twice counts once, and the timers
/// still noted when a batch fills or the wheel compacts go too.
#[test]
fn discarded_timers_go_in_batches() {
    let mut w = TimerWheel::new();
    let a = w.insert(5, 0);
    assert!(w.cancel(a));
    for _ in 1..MIN_COMPACT {
        let filler = w.insert(5, 0);
        assert!(w.cancel(filler));
    }
    let b = w.insert(6, 1); // a's index again
    assert_eq!(a.index, b.index);
    w.discard(a);
    w.discard(a);
    assert!(w.contains(b) && w.len() == 1);
    w.discard(b);
    w.discard(b);
    assert!(!w.contains(b) && w.is_empty());
    assert!(!w.cancel(b), "already discarded");
    // More than a batch: the first batch is settled when it fills.
    let ids: Vec<TimerId> = (0..3 * DISCARD_BATCH as u32).map(|i| w.insert(100 + i as i64, i)).collect();
    for &id in &ids[..2 * DISCARD_BATCH] {
        w.discard(id);
    }
    assert!(w.discarded.len() <= DISCARD_BATCH);
    assert_eq!(w.len(), DISCARD_BATCH);
    // An arm that compacts settles the rest first and reclaims them.
    while w.free.len() != 0 {
        w.insert(i64::MAX, u32::MAX);
    }
    let c = w.insert(1000, 7);
    assert!(w.discarded.is_empty() && w.tombstones == 0, "compacted");
    assert!((c.index as usize) < 3 * DISCARD_BATCH + MIN_COMPACT, "a reclaimed index");
    let mut out = Vec::new();
    w.advance_to(1001, &mut out);
    let fired: Vec<u32> = out.iter().map(|&(_, v)| v).collect();
    let mut want: Vec<u32> = (2 * DISCARD_BATCH as u32..3 * DISCARD_BATCH as u32).collect();
    want.push(7);
    assert_eq!(fired, want);
}

/// Cancelled timers that never come due do not pile up: compaction
/// reclaims their indexes and blocks, so indexes and blocks stay within
/// twice the live timers (plus a block per list), however many are
/// cancelled. (The model tests cannot see this: tombstones are skipped
/// either way.)
#[test]
fn cancelled_far_timers_are_reclaimed() {
    let mut w = TimerWheel::new();
    let live = 1000usize;
    let mut armed: Vec<(TimerId, usize)> =
        (0..live).map(|i| (w.insert(1 << 30 | (i as i64 * 7919 % 1000), i), i)).collect();
    assert_eq!(armed[3].0.deadline(), 1 << 30 | (3 * 7919 % 1000));
    for round in live..100_000 + live {
        let at = round * 31 % live;
        let (id, _) = armed[at];
        assert!(w.cancel(id));
        armed[at] = (w.insert(1 << 30 | (round as i64 % 1000), round), round);
    }
    assert_eq!(w.len(), live);
    assert!(w.generations.len() <= 2 * live + 2, "{} indexes for {live} live timers", w.generations.len());
    assert!(w.blocks.len() <= (2 * live).div_ceil(BLOCK) + 2, "{} blocks", w.blocks.len());
    let mut out = Vec::new();
    w.drain(&mut out);
    assert_eq!(out.len(), live);
}

/// Cancel only marks: its tombstones stay on their lists, however many,
/// until an arm that finds no free index reclaims them all at once
/// instead of growing the wheel.
#[test]
fn an_arm_reclaims_what_cancels_leave() {
    let mut w = TimerWheel::new();
    let ids: Vec<TimerId> = (0..1000).map(|i| w.insert(1 << 30 | i, i)).collect();
    for &id in &ids {
        assert!(w.cancel(id));
    }
    assert_eq!((w.len(), w.tombstones, w.generations.len()), (0, 1000, 1000));
    let id = w.insert(5, -1);
    assert_eq!((w.len(), w.tombstones), (1, 0));
    assert_eq!(w.generations.len(), 1000, "a reclaimed index, not a new one");
    assert!(w.contains(id) && ids.iter().all(|&old| !w.contains(old) && !w.cancel(old)));
    let mut out = Vec::new();
    w.drain(&mut out);
    assert_eq!(out, [(5, -1)]);
}

#[test]
fn past_and_extremes() {
    let mut w = TimerWheel::new();
    let mut out = Vec::new();
    w.advance_to(1000, &mut out);
    w.insert(i64::MAX, 'z');
    w.insert(999, 'b');
    w.insert(i64::MIN, 'a');
    w.insert(1000, 'c');
    w.advance_to(1000, &mut out);
    assert_eq!(out, [(i64::MIN, 'a'), (999, 'b')]);
    out.clear();
    w.advance_to(i64::MAX, &mut out);
    assert_eq!(out, [(1000, 'c')]);
    out.clear();
    w.drain(&mut out);
    assert_eq!(out, [(i64::MAX, 'z')]);
    assert!(w.is_empty());
}

#[test]
fn ties_survive_cascades() {
    let mut w = TimerWheel::new();
    let mut out = Vec::new();
    w.insert(10_000, 0); // level 2 from 0
    w.advance_to(8192, &mut out); // cascades into level 1
    w.insert(10_000, 1); // level 1
    w.advance_to(9990, &mut out);
    w.insert(10_000, 2); // level 0
    w.advance_to(10_001, &mut out);
    assert_eq!(out, [(10_000, 0), (10_000, 1), (10_000, 2)]);
}
