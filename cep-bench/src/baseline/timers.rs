//! Timer baselines for W6 (DESIGN.md §3, §2.5): a binary heap with lazy
//! deletion and a `BTreeMap`, beside `cep-time`'s timing wheel. All three
//! fire deadlines strictly before the watermark, in deadline order (ties in
//! arming order), so they fire the same timers.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use cep_core::Timestamp;
use cep_time::wheel::{TimerId, TimerWheel};

/// The operations W6 measures. A handle is whatever the structure needs to
/// cancel (the arming sequence number for the baselines).
pub trait Timers {
    /// A cancellation handle.
    type Handle: Copy;
    /// Arms timer `value` at `deadline`.
    fn arm(&mut self, deadline: Timestamp, value: u32) -> Self::Handle;
    /// Disarms a timer; whether it was live.
    fn cancel(&mut self, h: Self::Handle) -> bool;
    /// Fires every timer with deadline before `wm`, in deadline order.
    fn advance(&mut self, wm: Timestamp, fire: &mut impl FnMut(Timestamp, u32));
}

/// A binary heap with lazy deletion: a cancel marks the timer dead; dead
/// timers are dropped when they reach the top.
#[derive(Debug, Default)]
pub struct LazyHeap {
    heap: BinaryHeap<Reverse<(Timestamp, u64, u32)>>,
    dead: Vec<bool>,
    seq: u64,
}

impl Timers for LazyHeap {
    type Handle = (Timestamp, u64);

    fn arm(&mut self, deadline: Timestamp, value: u32) -> (Timestamp, u64) {
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Reverse((deadline, seq, value)));
        self.dead.push(false);
        (deadline, seq)
    }

    fn cancel(&mut self, (_, seq): (Timestamp, u64)) -> bool {
        !std::mem::replace(&mut self.dead[seq as usize], true)
    }

    fn advance(&mut self, wm: Timestamp, fire: &mut impl FnMut(Timestamp, u32)) {
        while let Some(&Reverse((d, seq, v))) = self.heap.peek() {
            if d >= wm {
                break;
            }
            self.heap.pop();
            if !std::mem::replace(&mut self.dead[seq as usize], true) {
                fire(d, v);
            }
        }
    }
}

/// Timers in a `BTreeMap` keyed by (deadline, arming order).
#[derive(Debug, Default)]
pub struct Tree {
    map: BTreeMap<(Timestamp, u64), u32>,
    seq: u64,
}

impl Timers for Tree {
    type Handle = (Timestamp, u64);

    fn arm(&mut self, deadline: Timestamp, value: u32) -> (Timestamp, u64) {
        let key = (deadline, self.seq);
        self.seq += 1;
        self.map.insert(key, value);
        key
    }

    fn cancel(&mut self, key: (Timestamp, u64)) -> bool {
        self.map.remove(&key).is_some()
    }

    fn advance(&mut self, wm: Timestamp, fire: &mut impl FnMut(Timestamp, u32)) {
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 >= wm {
                break;
            }
            let ((d, _), v) = entry.remove_entry();
            fire(d, v);
        }
    }
}

/// `cep-time`'s timing wheel, with a reused output vector.
#[derive(Debug, Default)]
pub struct Wheel {
    wheel: TimerWheel<u32>,
    out: Vec<(Timestamp, u32)>,
}

impl Timers for Wheel {
    type Handle = TimerId;

    fn arm(&mut self, deadline: Timestamp, value: u32) -> TimerId {
        self.wheel.insert(deadline, value)
    }

    fn cancel(&mut self, id: TimerId) -> bool {
        self.wheel.cancel(id)
    }

    fn advance(&mut self, wm: Timestamp, fire: &mut impl FnMut(Timestamp, u32)) {
        self.wheel.advance_to(wm, &mut self.out);
        for (d, v) in self.out.drain(..) {
            fire(d, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fired<T: Timers>(mut t: T) -> Vec<(Timestamp, u32)> {
        let hs: Vec<_> = (0..200u32).map(|i| t.arm(i64::from(i * 7919 % 1000), i)).collect();
        for h in hs.iter().step_by(3) {
            assert!(t.cancel(*h));
        }
        let mut out = Vec::new();
        for wm in [0, 250, 500, 1001] {
            t.advance(wm, &mut |d, v| out.push((d, v)));
        }
        out
    }

    #[test]
    fn the_three_fire_alike() {
        let w = fired(Wheel::default());
        assert_eq!(w.len(), 200 - 67);
        assert_eq!(fired(LazyHeap::default()), w);
        assert_eq!(fired(Tree::default()), w);
    }
}
