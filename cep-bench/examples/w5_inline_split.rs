//! A hand-written two-thread loop for W5, beside the runtime: the calling
//! thread runs the keys of hash buckets `0..k` (of 64) itself, event by
//! event, and hands the rest to one worker thread in batches of 4,096
//! events (copied into the events of a batch sent before, oldest first, as
//! `ShardedRunner` does). With `k` = 64 it is one thread; with `k` = 32 an
//! even split. It has no front, no watermarks and no moving of keys: what
//! a split of the keys between the calling thread and one worker gives at
//! best, against `ShardedRunner::balanced`, which does the same with those.
//!
//! `cargo run --release -p cep-bench --example w5_inline_split [ARG...]`,
//! each argument one contender: `K` the loop above; `s` `ShardedRunner::new`
//! with two shard threads; `b` `ShardedRunner::balanced` with one worker;
//! `S:H` `ShardedRunner::split` with `S` slices, the first `H` on the
//! calling thread, none moving; `A:K` the loop above without copies: the
//! calling thread fills every event into a batch shared with the worker,
//! and each thread runs its own keys from it; `P:K` the same over events
//! built before the clock starts (`P:64`: one runner over them); `O:K`
//! one runner over the keys of buckets `0..K` only, the rest skipped
//! (events/s of those run: how an event's cost depends on the share of
//! the keys a thread holds) (default
//! `64 16 20 24 32 s b`; five rounds, `ROUNDS=N` for N, each runs every
//! contender once).

use std::sync::mpsc::sync_channel;
use std::time::Instant;

use cep_bench::suite::{rise_spike_runner as runner, runtime_output, sharded_output, sharded_pass};
use cep_bench::w1;
use cep_core::{Event, Sym};
use cep_runtime::shard::{ShardedRunner, shard_of};
use cep_runtime::{JsonLines, Runner};

/// Batches queued for the worker.
const IN_FLIGHT: usize = 16;
/// Events per batch.
const BATCH: usize = 4096;
/// Hash buckets (the runtime's stable key hash, [`shard_of`], over 64).
const BUCKETS: usize = 64;

/// One pass: events per second and the matches (output lines).
fn pass(ticks: &[w1::Tick], k: usize) -> (f64, usize) {
    let (to_worker, batches) = sync_channel::<(Vec<Event>, usize)>(IN_FLIGHT);
    let (give_back, given_back) = sync_channel::<Vec<Event>>(IN_FLIGHT + 2);
    let worker = std::thread::spawn(move || {
        let (mut r, mut sink) = (runner(), JsonLines::new(Vec::new()));
        for (batch, len) in batches {
            r.push_batch_for(&batch[..len], 1, &mut sink).expect("in order");
            let _ = give_back.send(batch);
        }
        r.finish(&mut sink).expect("no output to fail");
        sink.into_inner().expect("a Vec")
    });
    let start = Instant::now();
    let (mut mine, mut sink) = (runner(), JsonLines::new(Vec::new()));
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    let (mut batch, mut len): (Vec<Event>, usize) = (Vec::new(), 0);
    for t in ticks {
        w1::fill(&mut e, t, tick);
        if shard_of(&e.fields[0], BUCKETS) < k {
            mine.push(&e, &mut sink).expect("in order");
            continue;
        }
        match batch.get_mut(len) {
            Some(slot) => slot.clone_from(&e),
            None => batch.push(e.clone()),
        }
        hand_over(&to_worker, &given_back, &mut batch, &mut len);
    }
    to_worker.send((batch, len)).expect("the worker runs");
    drop(to_worker);
    end_pass(mine, sink, worker, ticks.len(), start)
}

/// Counts an event added to `batch`; a full batch goes to the worker, and
/// the batch it gave back first (the oldest), if any, is filled next.
fn hand_over<B: Default>(
    to_worker: &std::sync::mpsc::SyncSender<(B, usize)>,
    given_back: &std::sync::mpsc::Receiver<B>,
    batch: &mut B,
    len: &mut usize,
) {
    *len += 1;
    if *len == BATCH {
        to_worker.send((std::mem::take(batch), *len)).expect("the worker runs");
        *batch = given_back.try_recv().unwrap_or_default();
        *len = 0;
    }
}

/// The end of a two-thread pass: finishes this thread's runner, waits for
/// the worker's output; events per second since `start`, and the lines.
fn end_pass(
    mut mine: Runner,
    mut sink: JsonLines<Vec<u8>>,
    worker: std::thread::JoinHandle<Vec<u8>>,
    events: usize,
    start: Instant,
) -> (f64, usize) {
    mine.finish(&mut sink).expect("no output to fail");
    let theirs = worker.join().expect("the worker");
    let lines = sink.into_inner().expect("a Vec").iter().chain(&theirs).filter(|&&b| b == b'\n').count();
    (events as f64 / start.elapsed().as_secs_f64(), lines)
}

/// Like [`pass`], but the calling thread fills every event into a shared
/// batch, runs its own keys from it, and hands the whole batch to the
/// worker, which runs the others: no copy, each thread hashes each event.
fn shared_pass(ticks: &[w1::Tick], k: usize) -> (f64, usize) {
    use std::sync::Arc;
    let (to_worker, batches) = sync_channel::<(Arc<Vec<Event>>, usize)>(IN_FLIGHT);
    let (give_back, given_back) = sync_channel::<Arc<Vec<Event>>>(IN_FLIGHT + 2);
    let worker = std::thread::spawn(move || {
        let (mut r, mut sink) = (runner(), JsonLines::new(Vec::new()));
        for (batch, len) in batches {
            for e in &batch[..len] {
                if shard_of(&e.fields[0], BUCKETS) >= k {
                    r.push(e, &mut sink).expect("in order");
                }
            }
            let _ = give_back.send(batch);
        }
        r.finish(&mut sink).expect("no output to fail");
        sink.into_inner().expect("a Vec")
    });
    let start = Instant::now();
    let (mut mine, mut sink) = (runner(), JsonLines::new(Vec::new()));
    let tick = Sym::new("Tick");
    let (mut batch, mut len): (Arc<Vec<Event>>, usize) = (Arc::new(Vec::new()), 0);
    for t in ticks {
        let b = Arc::get_mut(&mut batch).expect("not shared");
        if b.len() == len {
            b.push(Event::default());
        }
        let e = &mut b[len];
        w1::fill(e, t, tick);
        if shard_of(&e.fields[0], BUCKETS) < k {
            mine.push(e, &mut sink).expect("in order");
        }
        hand_over(&to_worker, &given_back, &mut batch, &mut len);
    }
    to_worker.send((batch, len)).expect("the worker runs");
    drop(to_worker);
    end_pass(mine, sink, worker, ticks.len(), start)
}

/// Events built before the clock starts: one runner over all of them
/// (`k` = 64), or the calling thread and one worker each scanning all of
/// them in batches and running their own keys (buckets `0..k` here).
fn prebuilt_pass(events: &std::sync::Arc<Vec<Event>>, k: usize) -> (f64, usize) {
    use std::sync::Arc;
    let start = Instant::now();
    let (mut mine, mut sink) = (runner(), JsonLines::new(Vec::new()));
    if k >= BUCKETS {
        for e in events.iter() {
            mine.push(e, &mut sink).expect("in order");
        }
        mine.finish(&mut sink).expect("no output to fail");
        let lines = sink.into_inner().expect("a Vec").iter().filter(|&&b| b == b'\n').count();
        return (events.len() as f64 / start.elapsed().as_secs_f64(), lines);
    }
    let (to_worker, batches) = sync_channel::<(usize, usize)>(IN_FLIGHT);
    let shared = Arc::clone(events);
    let worker = std::thread::spawn(move || {
        let (mut r, mut sink) = (runner(), JsonLines::new(Vec::new()));
        for (from, to) in batches {
            for e in &shared[from..to] {
                if shard_of(&e.fields[0], BUCKETS) >= k {
                    r.push(e, &mut sink).expect("in order");
                }
            }
        }
        r.finish(&mut sink).expect("no output to fail");
        sink.into_inner().expect("a Vec")
    });
    for (i, chunk) in events.chunks(BATCH).enumerate() {
        to_worker.send((i * BATCH, i * BATCH + chunk.len())).expect("the worker runs");
        for e in chunk {
            if shard_of(&e.fields[0], BUCKETS) < k {
                mine.push(e, &mut sink).expect("in order");
            }
        }
    }
    drop(to_worker);
    end_pass(mine, sink, worker, events.len(), start)
}

/// One runner over only the keys of buckets `0..k` (the other events are
/// skipped, not run anywhere): events/s of those run, to see how the cost
/// of an event depends on the share of keys one thread holds, and the
/// matches of those keys (all of W1's at `k` = 64).
fn only_pass(ticks: &[w1::Tick], k: usize) -> (f64, usize) {
    let start = Instant::now();
    let (mut mine, mut sink) = (runner(), JsonLines::new(Vec::new()));
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    let mut n = 0usize;
    for t in ticks {
        w1::fill(&mut e, t, tick);
        if shard_of(&e.fields[0], BUCKETS) < k {
            mine.push(&e, &mut sink).expect("in order");
            n += 1;
        }
    }
    mine.finish(&mut sink).expect("no output to fail");
    let lines = sink.into_inner().expect("a Vec").iter().filter(|&&b| b == b'\n').count();
    (n as f64 / start.elapsed().as_secs_f64(), lines)
}

/// One timed pass of `run` over `ticks` (which writes its output lines):
/// events per second and the lines.
fn timed(ticks: &[w1::Tick], run: impl FnOnce(&mut Vec<u8>)) -> (f64, usize) {
    let (start, mut out) = (Instant::now(), Vec::new());
    run(&mut out);
    (ticks.len() as f64 / start.elapsed().as_secs_f64(), out.iter().filter(|&&b| b == b'\n').count())
}

fn main() {
    let mut ks: Vec<String> = std::env::args().skip(1).collect();
    if ks.is_empty() {
        ks = ["64", "16", "20", "24", "32", "s", "b"].map(String::from).to_vec();
    }
    let ticks: Vec<w1::Tick> = w1::Ticks::new(w1::TICKS).collect();
    let mut rates = vec![Vec::new(); ks.len()];
    let prebuilt: std::sync::Arc<Vec<Event>> = std::sync::Arc::new(if ks.iter().any(|k| k.starts_with("P:")) {
        let tick = Sym::new("Tick");
        ticks
            .iter()
            .map(|t| {
                let mut e = Event::default();
                w1::fill(&mut e, t, tick);
                e
            })
            .collect()
    } else {
        Vec::new()
    });
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5).max(1);
    for _ in 0..rounds {
        for (k, rates) in ks.iter().zip(&mut rates) {
            let (rate, lines) = match (k.parse::<usize>(), k.split_once(':')) {
                (Ok(k), _) => pass(&ticks, k.min(BUCKETS)),
                (_, Some(("P", k))) => prebuilt_pass(&prebuilt, k.parse::<usize>().expect("k").min(BUCKETS)),
                (_, Some(("O", k))) => only_pass(&ticks, k.parse::<usize>().expect("k").min(BUCKETS)),
                (_, Some(("A", k))) => shared_pass(&ticks, k.parse::<usize>().expect("k").min(BUCKETS)),
                (_, Some((v, h))) => timed(&ticks, |out| {
                    let runners = (0..v.parse().expect("slices")).map(|_| runner()).collect();
                    let split =
                        ShardedRunner::split(Runner::new(Vec::new()), runners, 1, h.parse().expect("here"), false);
                    sharded_pass(split, &ticks, out)
                }),
                _ if k == "b" => timed(&ticks, |out| runtime_output(&ticks, 2, out)),
                _ => timed(&ticks, |out| sharded_output(&ticks, 2, out)),
            };
            // `O:K` below 64 runs some keys only, so it finds some matches.
            match k.strip_prefix("O:").map(|b| b.parse::<usize>().expect("k") < BUCKETS) {
                Some(true) => assert!(lines <= 450, "{k}: {lines} matches, more than W1 has"),
                _ => assert_eq!(lines, 450, "k = {k}: the W1 matches"),
            }
            rates.push(rate);
        }
    }
    for (k, rates) in ks.iter().zip(&mut rates) {
        let name = match (k.parse::<usize>().is_ok(), k == "b") {
            (true, _) => format!("k = {k:>2} of {BUCKETS}"),
            (false, true) => "ShardedRunner::balanced, 1 worker".into(),
            _ if k.starts_with("A:") => format!("shared batch, no copies, {k}"),
            _ if k.starts_with("P:") => format!("events built beforehand, {k}"),
            _ if k.starts_with("O:") => format!("one runner, a share of the keys only, {k} (events run/s)"),
            _ if k.contains(':') => format!("ShardedRunner::split {k} (slices:here), 1 worker"),
            (false, false) => "ShardedRunner, 2 shards".into(),
        };
        println!("{name}: {}", cep_bench::median_line(rates));
    }
}
