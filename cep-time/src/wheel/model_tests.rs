//! The wheel and the FIFO timers checked against a model (a heap with lazy
//! deletion) on random operations.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use proptest::prelude::*;

use super::*;

/// The model: a heap of (deadline, insertion) with lazy deletion.
#[derive(Default)]
struct Model {
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    live: HashMap<u64, i64>,
}

impl Model {
    fn insert(&mut self, deadline: i64, seq: u64) {
        self.heap.push(Reverse((deadline, seq)));
        self.live.insert(seq, deadline);
    }
    fn cancel(&mut self, seq: u64) -> Option<u64> {
        self.live.remove(&seq).map(|_| seq)
    }
    /// The first live timer from the `n`-th of `armed` on, cyclically
    /// (one is live).
    fn first_live(&self, n: usize, armed: usize) -> usize {
        (0..armed).map(|k| (n + k) % armed).find(|&k| self.live.contains_key(&(k as u64))).expect("a live timer")
    }
    fn advance(&mut self, wm: Option<i64>, out: &mut Vec<(i64, u64)>) {
        while let Some(&Reverse((d, seq))) = self.heap.peek() {
            if wm.is_some_and(|wm| d >= wm) {
                break;
            }
            self.heap.pop();
            if self.live.remove(&seq).is_some() {
                out.push((d, seq));
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(i64),
    /// Cancel the n-th handle ever returned (modulo), live or stale.
    Cancel(usize),
    /// Cancel the first live timer from the n-th handle on (cyclically).
    CancelLive(usize),
    /// Discard the n-th handle ever returned (modulo), live or stale.
    Discard(usize),
    /// Discard the first live timer from the n-th handle on.
    DiscardLive(usize),
    Advance(i64),
}

fn timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -3000i64..3000,
        2 => 0i64..1 << 20,
        1 => -(1i64 << 42)..1 << 42,
        1 => any::<i64>(),
        1 => i64::MIN..i64::MIN + 100,
        1 => i64::MAX - 100..=i64::MAX,
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        5 => timestamp().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Discard),
        2 => timestamp().prop_map(Op::Advance),
    ];
    proptest::collection::vec(op, 0..300)
}

/// Runs `ops` against the wheel and the model; panics on a difference.
fn check_wheel(ops: &[Op]) {
    let mut wheel = TimerWheel::new();
    let mut model = Model::default();
    let mut ids = Vec::new();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for op in ops {
        match *op {
            Op::Insert(d) => {
                let seq = ids.len() as u64;
                ids.push(wheel.insert(d, seq));
                model.insert(d, seq);
            }
            Op::Cancel(n) if !ids.is_empty() => {
                let n = n % ids.len();
                let live = model.cancel(n as u64).is_some();
                assert_eq!(wheel.contains(ids[n]), live, "contains {n}");
                assert_eq!(wheel.cancel(ids[n]), live, "cancel {n}");
                assert!(!wheel.contains(ids[n]));
            }
            Op::CancelLive(n) if !model.live.is_empty() => {
                let n = model.first_live(n, ids.len());
                model.cancel(n as u64);
                assert!(wheel.cancel(ids[n]), "cancel live {n}");
            }
            Op::Discard(n) if !ids.is_empty() => {
                let n = n % ids.len();
                model.cancel(n as u64);
                wheel.discard(ids[n]);
                assert!(!wheel.contains(ids[n]));
            }
            Op::DiscardLive(n) if !model.live.is_empty() => {
                let n = model.first_live(n, ids.len());
                model.cancel(n as u64);
                wheel.discard(ids[n]);
            }
            Op::Cancel(_) | Op::CancelLive(_) | Op::Discard(_) | Op::DiscardLive(_) => {}
            Op::Advance(wm) => {
                wheel.advance_to(wm, &mut got);
                model.advance(Some(wm), &mut want);
                assert_eq!(got, want, "advance_to({wm})");
            }
        }
        assert_eq!(wheel.len(), model.live.len());
    }
    wheel.drain(&mut got);
    model.advance(None, &mut want);
    assert_eq!(got, want, "drain");
    assert!(wheel.is_empty());
    for id in ids {
        assert!(!wheel.cancel(id));
    }
}

/// Long lists: few distinct deadlines, many cancels (compaction of
/// lists spanning many blocks, tombstones met by cascades and firing).
fn dense_ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => prop_oneof![0i64..4, 60i64..64, 5000i64..5002].prop_map(Op::Insert),
        4 => any::<usize>().prop_map(Op::Cancel),
        2 => any::<usize>().prop_map(Op::Discard),
        1 => (0i64..6000).prop_map(Op::Advance),
    ];
    proptest::collection::vec(op, 0..1500)
}

/// Cancels of live timers outnumber arms and advances are rare, so the
/// tombstones reach the live count and every list is compacted, often
/// several times a run (lists of one block and of many, tombstones and
/// live timers interleaved at random).
fn cancel_heavy_ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => prop_oneof![timestamp(), 0i64..200].prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::CancelLive),
        2 => any::<usize>().prop_map(Op::DiscardLive),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Discard),
        1 => prop_oneof![
            20 => Just(Op::Insert(5)),
            1 => (0i64..3000).prop_map(Op::Advance),
        ],
    ];
    // Build up live timers first, so the compactions have some to keep.
    (0usize..400, proptest::collection::vec(op, 0..1500)).prop_map(|(warm, mut ops)| {
        let mut all: Vec<Op> = (0..warm).map(|i| Op::Insert((i as i64 * 7919) % 100_000 - 500)).collect();
        all.append(&mut ops);
        all
    })
}

proptest! {
    #[test]
    fn wheel_matches_heap(ops in ops()) {
        check_wheel(&ops);
    }

    #[test]
    fn wheel_matches_heap_cancel_heavy(ops in cancel_heavy_ops()) {
        check_wheel(&ops);
    }

    #[test]
    fn wheel_matches_heap_dense(ops in dense_ops()) {
        check_wheel(&ops);
    }

    /// The sort of a slot fired whole is std's stable sort by key, for
    /// few timers (insertion sort) and many (radix), with many ties.
    #[test]
    fn slot_sort_is_stable_sort(
        digits in 1usize..4,
        keys in proptest::collection::vec(prop_oneof![0u64..8, 0u64..1 << 18], 0..300),
        high in any::<u64>(),
    ) {
        let shared = high & !((1u64 << (BITS as usize * digits)) - 1);
        let mut timers: Vec<Slot<u32>> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| Slot { key: shared | (k & ((1 << (BITS as usize * digits)) - 1)), index: 0, value: i as u32 })
            .collect();
        let mut want = timers.clone();
        want.sort_by_key(|t| t.key);
        sort_by_low_digits(&mut timers, &mut Vec::new(), digits);
        let pairs = |ts: &[Slot<u32>]| ts.iter().map(|t| (t.key, t.value)).collect::<Vec<_>>();
        prop_assert_eq!(pairs(&timers), pairs(&want));
    }

    #[test]
    fn fifo_matches_heap(steps in proptest::collection::vec((0u8..3, 0i64..50, any::<usize>()), 0..300),
                         start in prop_oneof![Just(i64::MIN), -1000i64..1000, Just(i64::MAX - 5000)]) {
        let mut fifo = FifoTimers::new();
        let mut model = Model::default();
        let mut ids = Vec::new();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut last = start;
        for (kind, delta, n) in steps {
            match kind {
                0 => {
                    last = last.saturating_add(delta / 5); // many ties
                    let seq = ids.len() as u64;
                    ids.push(fifo.insert(last, seq));
                    model.insert(last, seq);
                }
                1 if !ids.is_empty() => {
                    let n = n % ids.len();
                    prop_assert_eq!(fifo.cancel(ids[n]), model.cancel(n as u64));
                }
                1 => {}
                _ => {
                    let wm = last.saturating_add(delta - 25);
                    fifo.advance_to(wm, &mut got);
                    model.advance(Some(wm), &mut want);
                    prop_assert_eq!(&got, &want);
                }
            }
            prop_assert_eq!(fifo.len(), model.live.len());
        }
        prop_assert!(fifo.last_deadline().checked_sub(1).is_none_or(|d| fifo.try_insert(d, 0).is_err()));
        fifo.drain(&mut got);
        model.advance(None, &mut want);
        prop_assert_eq!(&got, &want);
        prop_assert!(fifo.is_empty());
    }
}

/// A long deterministic run: many live timers, steady advances, cancels
/// of live and stale handles, and occasional jumps.
#[test]
fn wheel_matches_heap_long() {
    let mut next = cep_testkit::XorShift64::default().into_fn();
    let mut ops = Vec::new();
    let mut now = -50_000i64;
    for _ in 0..60_000 {
        let r = next();
        ops.push(match r % 10 {
            0..=5 => Op::Insert(now + (next() % 100_000) as i64 - 100),
            6..=7 => Op::Cancel(next() as usize),
            8 => {
                now += (next() % 500) as i64;
                Op::Advance(now)
            }
            _ if r % 1000 == 9 => {
                now += (next() % (1 << 30)) as i64;
                Op::Advance(now)
            }
            _ => Op::Advance(now),
        });
    }
    check_wheel(&ops);
}

#[test]
fn next_bound_never_exceeds_the_earliest_deadline() {
    let mut wheel = TimerWheel::new();
    let mut live: Vec<(TimerId, i64)> = Vec::new();
    let mut rnd = cep_testkit::XorShift64::default().into_fn();
    let mut wm = -1_000_000i64;
    let mut out = Vec::new();
    for _ in 0..20_000 {
        match rnd() % 4 {
            0 | 1 => {
                let d = wm + (rnd() % 5_000_000) as i64;
                live.push((wheel.insert(d, ()), d));
            }
            2 if !live.is_empty() => {
                let (id, _) = live.swap_remove((rnd() as usize) % live.len());
                assert!(wheel.cancel(id));
            }
            _ => {
                wm += (rnd() % 200_000) as i64;
                out.clear();
                wheel.advance_to(wm, &mut out);
                live.retain(|&(_, d)| d >= wm);
            }
        }
        let min = live.iter().map(|&(_, d)| d).min();
        match (wheel.next_bound(), min) {
            (None, None) => {}
            (Some(b), Some(m)) => assert!(b <= m, "bound {b} above the earliest deadline {m}"),
            other => panic!("bound and live timers disagree: {other:?}"),
        }
    }
}
