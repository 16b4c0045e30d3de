//! W6 (DESIGN.md §3): arm, cancel and expire with 4 k, 64 k and 1 M live
//! timers, for the timing wheel (cancelling with `cancel`, and as
//! `wheel_discard` with `discard`, as the engine does), a `BinaryHeap` with
//! lazy deletion and a `BTreeMap<(i64, u64), T>`. One criterion iteration is one operation, so
//! the reported time is ns per arm / cancel / expired timer.
//!
//! Each structure holds `n` live timers with deadlines uniform over
//! `[now, now + SPAN)`. *arm* times arming a chunk of timers (then cancels as
//! many random ones, untimed, to get back to `n`); *cancel* times cancelling a
//! chunk of random live timers (then re-arms, untimed); *expire* advances the
//! watermark so that about a chunk of timers fire, timed per fired timer, then
//! re-arms as many beyond the horizon, untimed; *cancel_and_arm* times a
//! cancel of a random live timer followed by an arm, per pair. Values are
//! `u32`s, as in the engine.
//!
//! The wheel reclaims cancelled timers in the arm that finds no free index,
//! so that work is timed in *arm* here, not in *cancel* (each cancel costs
//! about two timers scanned there); the heap compacts in *cancel*.
//! *cancel_and_arm* holds both wherever they fall.
//!
//! `cargo bench -p cep-time --bench timers` (add `-- --quick` for a short run).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::hint::black_box;
use std::time::{Duration, Instant};

use cep_time::wheel::{TimerId, TimerWheel};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use slab::Slab;

/// A timer's value: a `u32`, as in the engine (the id of a partial match).
type Payload = u32;

/// The deadline spread (event-time units, e.g. ms: about 17 minutes).
const SPAN: i64 = 1 << 20;
/// Operations per timed chunk.
const CHUNK: usize = 1024;
const SIZES: [usize; 3] = [4 << 10, 64 << 10, 1 << 20];

/// The operations under test.
trait Timers {
    type Id: Copy;
    const NAME: &'static str;
    fn new() -> Self;
    fn arm(&mut self, deadline: i64, value: Payload) -> Self::Id;
    fn cancel(&mut self, id: Self::Id) -> bool;
    fn expire(&mut self, watermark: i64, out: &mut Vec<(i64, Payload)>);
}

impl Timers for TimerWheel<Payload> {
    type Id = TimerId;
    const NAME: &'static str = "wheel";
    fn new() -> Self {
        TimerWheel::new()
    }
    #[inline(always)]
    fn arm(&mut self, deadline: i64, value: Payload) -> TimerId {
        self.insert(deadline, value)
    }
    #[inline(always)]
    fn cancel(&mut self, id: TimerId) -> bool {
        TimerWheel::cancel(self, id)
    }
    #[inline(always)]
    fn expire(&mut self, watermark: i64, out: &mut Vec<(i64, Payload)>) {
        self.advance_to(watermark, out)
    }
}

/// The wheel cancelling with [`TimerWheel::discard`] (checked 64 at a time),
/// as the engine does.
struct Discarding(TimerWheel<Payload>);

impl Timers for Discarding {
    type Id = TimerId;
    const NAME: &'static str = "wheel_discard";
    fn new() -> Self {
        Discarding(TimerWheel::new())
    }
    #[inline(always)]
    fn arm(&mut self, deadline: i64, value: Payload) -> TimerId {
        self.0.insert(deadline, value)
    }
    #[inline(always)]
    fn cancel(&mut self, id: TimerId) -> bool {
        self.0.discard(id);
        true
    }
    #[inline(always)]
    fn expire(&mut self, watermark: i64, out: &mut Vec<(i64, Payload)>) {
        self.0.advance_to(watermark, out)
    }
}

/// A binary heap of (deadline, seq, slab index) with lazy deletion: cancel
/// removes the slab entry; stale heap entries are skipped when popped, and
/// the heap is compacted when more than half of it is stale.
struct LazyHeap {
    heap: BinaryHeap<Reverse<(i64, u64, u32)>>,
    live: Slab<(u64, Payload)>,
    seq: u64,
}

impl Timers for LazyHeap {
    type Id = (u32, u64);
    const NAME: &'static str = "binary_heap";
    fn new() -> Self {
        LazyHeap { heap: BinaryHeap::new(), live: Slab::new(), seq: 0 }
    }
    #[inline(always)]
    fn arm(&mut self, deadline: i64, value: Payload) -> (u32, u64) {
        let seq = self.seq;
        self.seq += 1;
        let index = self.live.insert((seq, value)) as u32;
        self.heap.push(Reverse((deadline, seq, index)));
        (index, seq)
    }
    #[inline(always)]
    fn cancel(&mut self, (index, seq): (u32, u64)) -> bool {
        if self.live.get(index as usize).is_none_or(|e| e.0 != seq) {
            return false;
        }
        self.live.remove(index as usize);
        if self.heap.len() > 2 * self.live.len() + 1024 {
            let live = &self.live;
            self.heap.retain(|Reverse((_, s, i))| live.get(*i as usize).is_some_and(|e| e.0 == *s));
        }
        true
    }
    #[inline(always)]
    fn expire(&mut self, watermark: i64, out: &mut Vec<(i64, Payload)>) {
        while let Some(&Reverse((deadline, seq, index))) = self.heap.peek() {
            if deadline >= watermark {
                break;
            }
            self.heap.pop();
            if self.live.get(index as usize).is_some_and(|e| e.0 == seq) {
                out.push((deadline, self.live.remove(index as usize).1));
            }
        }
    }
}

/// An ordered map keyed by (deadline, seq).
struct Tree {
    map: BTreeMap<(i64, u64), Payload>,
    seq: u64,
}

impl Timers for Tree {
    type Id = (i64, u64);
    const NAME: &'static str = "btree_map";
    fn new() -> Self {
        Tree { map: BTreeMap::new(), seq: 0 }
    }
    #[inline(always)]
    fn arm(&mut self, deadline: i64, value: Payload) -> (i64, u64) {
        let key = (deadline, self.seq);
        self.seq += 1;
        self.map.insert(key, value);
        key
    }
    #[inline(always)]
    fn cancel(&mut self, id: (i64, u64)) -> bool {
        self.map.remove(&id).is_some()
    }
    #[inline(always)]
    fn expire(&mut self, watermark: i64, out: &mut Vec<(i64, Payload)>) {
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 >= watermark {
                break;
            }
            let ((deadline, _), value) = entry.remove_entry();
            out.push((deadline, value));
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Moves `k` ids, picked at random, from `ids` into `victims` (emptied
/// first).
fn take_random<Id>(rng: &mut Rng, ids: &mut Vec<Id>, k: usize, victims: &mut Vec<Id>) {
    victims.clear();
    for _ in 0..k {
        let at = rng.below(ids.len() as u64) as usize;
        victims.push(ids.swap_remove(at));
    }
}

/// `k` deadlines uniform over `[now, now + SPAN)` in `deadlines` (emptied
/// first).
fn random_deadlines(rng: &mut Rng, now: i64, k: usize, deadlines: &mut Vec<i64>) {
    deadlines.clear();
    deadlines.extend((0..k).map(|_| now + rng.below(SPAN as u64) as i64));
}

/// The time of `iters` operations done `CHUNK` at a time: `chunk(k)` does
/// `k` of them (and whatever keeps the structure at its size) and returns
/// the time of the part timed.
fn in_chunks(iters: u64, mut chunk: impl FnMut(usize) -> Duration) -> Duration {
    let (mut total, mut left) = (Duration::ZERO, iters as usize);
    while left > 0 {
        let k = left.min(CHUNK);
        left -= k;
        total += chunk(k);
    }
    total
}

/// A structure with `n` live timers over `[now, now + SPAN)`, and their ids.
fn filled<S: Timers>(n: usize, now: i64, rng: &mut Rng) -> (S, Vec<S::Id>) {
    let mut s = S::new();
    let ids = (0..n).map(|i| s.arm(now + rng.below(SPAN as u64) as i64, i as Payload)).collect();
    (s, ids)
}

fn bench_structure<S: Timers>(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("timers/{}", S::NAME));
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1 ^ n as u64);
        let now = 1_000_000_000i64;

        let (mut s, mut ids) = filled::<S>(n, now, &mut rng);
        let (mut deadlines, mut victims) = (Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK));
        group.bench_function(BenchmarkId::new("arm", n), |b| {
            b.iter_custom(|iters| {
                in_chunks(iters, |k| {
                    random_deadlines(&mut rng, now, k, &mut deadlines);
                    let start = Instant::now();
                    for (i, &d) in deadlines.iter().enumerate() {
                        ids.push(s.arm(d, i as Payload));
                    }
                    let took = start.elapsed();
                    take_random(&mut rng, &mut ids, k, &mut victims);
                    for &id in &victims {
                        assert!(s.cancel(id));
                    }
                    took
                })
            })
        });

        group.bench_function(BenchmarkId::new("cancel", n), |b| {
            b.iter_custom(|iters| {
                in_chunks(iters, |k| {
                    take_random(&mut rng, &mut ids, k, &mut victims);
                    let start = Instant::now();
                    for &id in &victims {
                        black_box(s.cancel(id));
                    }
                    let took = start.elapsed();
                    for i in 0..k {
                        ids.push(s.arm(now + rng.below(SPAN as u64) as i64, i as Payload));
                    }
                    took
                })
            })
        });

        // Attribution-free: whichever operation pays for reclaiming
        // cancelled timers (the wheel's arm, the heap's cancel), it is in
        // here, so this is the figure to hold against the two targets'
        // sum (40 + 25 ns at 1 M).
        group.bench_function(BenchmarkId::new("cancel_and_arm", n), |b| {
            b.iter_custom(|iters| {
                in_chunks(iters, |k| {
                    take_random(&mut rng, &mut ids, k, &mut victims);
                    random_deadlines(&mut rng, now, k, &mut deadlines);
                    let start = Instant::now();
                    for (i, (&id, &d)) in victims.iter().zip(&deadlines).enumerate() {
                        black_box(s.cancel(id));
                        ids.push(s.arm(d, i as Payload));
                    }
                    start.elapsed()
                })
            })
        });
        drop((s, ids));

        let (mut s, _) = filled::<S>(n, now, &mut rng);
        let mut watermark = now;
        let step = ((SPAN as u128 * CHUNK as u128 / n as u128) as i64).max(1);
        let mut out = Vec::with_capacity(4 * CHUNK);
        group.bench_function(BenchmarkId::new("expire", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut fired = 0u64;
                while fired < iters {
                    out.clear();
                    let next = watermark + step;
                    let start = Instant::now();
                    s.expire(next, &mut out);
                    total += start.elapsed();
                    fired += out.len() as u64;
                    // Re-arm as many over [watermark + SPAN, next + SPAN):
                    // the density stays n per SPAN.
                    for i in 0..out.len() {
                        s.arm(watermark + SPAN + rng.below(step as u64) as i64, i as Payload);
                    }
                    watermark = next;
                }
                total.mul_f64(iters as f64 / fired.max(1) as f64)
            })
        });
    }
    group.finish();
}

fn timers(c: &mut Criterion) {
    bench_structure::<TimerWheel<Payload>>(c);
    bench_structure::<Discarding>(c);
    bench_structure::<LazyHeap>(c);
    bench_structure::<Tree>(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = timers
}
criterion_main!(benches);
