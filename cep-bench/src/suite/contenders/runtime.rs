//! Contenders that run `cep_runtime`: one runner with a delay, the
//! runtime on several threads, the split choice, and the functions the
//! examples and tests use to get the runtime's output bytes.

use std::io::{self, Write};
use std::rc::Rc;

use cep_core::{Event, Match, Sym};
use cep_nfa::compile::{Options, compile};
use cep_runtime::shard::ShardedRunner;

use crate::suite::Contender;
use crate::suite::digest::measure;
use crate::suite::streams::Stream;
use crate::w1::{self, Tick};

/// The order W1a-ooo feeds the ticks in: 5 % of them held back by up to
/// 499 ms (a stable sort by `ts + hold`), so none is behind a 500 ms delay.
pub(crate) fn displaced_order(ticks: &[Tick]) -> Vec<u32> {
    let mut rng = w1::XorShift64::default();
    let mut keyed: Vec<(i64, u32)> = ticks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let hold = if rng.next_u64() % 20 == 0 { (rng.next_u64() % 500) as i64 } else { 0 };
            (t.ts + hold, i as u32)
        })
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// `cep run`'s path without parsing: the runner with `--max-delay 500`
/// (reorder buffer, watermark, late policy) over the W1 ticks in the given
/// order (`None`: as generated), each filled into one reused `Event` row.
pub(crate) fn cep_runner(name: &'static str, displaced: bool, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let order: Vec<u32> = if displaced { displaced_order(&ticks[..n]) } else { (0..n as u32).collect() };
        Box::new(move |check| {
            let mut runner = rise_spike_runner();
            runner.set_max_delay(500);
            let tick = Sym::new("Tick");
            let mut e = Event::default();
            measure(n, check, |tally| {
                let mut sink = |_: &cep_runtime::QueryInfo, m: &Match| tally.add(m);
                for &i in &order {
                    w1::fill(&mut e, &ticks[i as usize], tick);
                    runner.push(&e, &mut sink).expect("no event is late");
                }
                runner.finish(&mut sink).expect("no output to fail");
                None
            })
        })
    })
}

/// W5: rise_spike through the runtime on `threads` threads (one: the
/// runner; more: the sharded runtime) over the W1 ticks filled into one
/// reused `Event` row (no parsing); matches are the JSON lines written.
pub(crate) fn runtime_contender(name: &'static str, threads: usize, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut out = Vec::new();
            measure(n, check, |tally| {
                runtime_output(&ticks[..n], threads, &mut out);
                tally.add_output(&out);
                None
            })
        })
    })
}

/// `ticks` through rise_spike on `threads` threads through the library's
/// front door, [`Runtime`](cep_runtime::runtime::Runtime) (a job the caller
/// pushes events to: one thread, the runner on this thread; more, the keys
/// shared between this thread and `threads - 1` workers), each tick filled
/// into one reused `Event` row (no parsing); its JSON lines appended to
/// `out`. What W5 times, and its examples too.
pub fn runtime_output(ticks: &[Tick], threads: usize, out: &mut Vec<u8>) {
    use cep_runtime::runtime::{Output, Runtime};
    let lines = std::sync::Arc::new(parking_lot::Mutex::new(std::mem::take(out)));
    let mut rt = Runtime::builder()
        .schema(w1::schema())
        .query(w1::RISE_SPIKE)
        .threads(threads.max(1))
        .build(Output::Writer(Box::new(SharedBytes(lines.clone()))))
        .expect("rise_spike compiles");
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    for t in ticks {
        w1::fill(&mut e, t, tick);
        rt.push(&e).expect("events in order");
    }
    rt.finish().expect("no output to fail");
    *out = std::mem::take(&mut *lines.lock());
}

/// Bytes written through a lock, for an output that must be `'static`.
pub(crate) struct SharedBytes(pub(crate) std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl Write for SharedBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `ticks` through rise_spike on `shards` shard threads, each with its
/// keys, the calling thread only ordering and routing
/// ([`ShardedRunner::new`]): the runtime's other split, for comparison.
pub fn sharded_output(ticks: &[Tick], shards: usize, out: &mut Vec<u8>) {
    let runners = (0..shards).map(|_| rise_spike_runner()).collect();
    sharded_pass(ShardedRunner::new(cep_runtime::Runner::new(Vec::new()), runners), ticks, out);
}

/// `ticks` through `r` (each filled into one reused `Event` row), its
/// output appended to `out`.
pub fn sharded_pass(mut r: ShardedRunner, ticks: &[Tick], out: &mut Vec<u8>) {
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    for t in ticks {
        w1::fill(&mut e, t, tick);
        r.push(&e, out).expect("events in order");
    }
    r.finish(out).expect("no output to fail");
}

/// A runner of W1's rise_spike query.
pub fn rise_spike_runner() -> cep_runtime::Runner {
    let progs = compile(w1::RISE_SPIKE, &mut w1::schema(), &Options::default()).expect("rise_spike compiles").programs;
    cep_runtime::Runner::new(progs)
}

/// What two threads could give here at best without parsing: the ticks
/// split by key in two, each half run by its own one-thread runner on its
/// own thread at the same time (no routing, no channel).
pub(crate) fn runtime_split_contender(name: &'static str, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let halves: [Vec<Tick>; 2] =
            [0, 1].map(|half| ticks[..n].iter().filter(|t| t.key.rem_euclid(2) == half).copied().collect());
        Box::new(move |check| {
            measure(n, check, |tally| {
                let outs = std::thread::scope(|scope| {
                    let run = |half: &[Tick]| {
                        let mut out = Vec::new();
                        runtime_output(half, 1, &mut out);
                        out
                    };
                    let threads: Vec<_> = halves.iter().map(|h| scope.spawn(move || run(h))).collect();
                    threads.into_iter().map(|t| t.join().expect("a runner thread")).collect::<Vec<_>>()
                });
                for out in &outs {
                    tally.add_output(out);
                }
                None
            })
        })
    })
}
