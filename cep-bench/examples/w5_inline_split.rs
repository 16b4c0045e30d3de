//! A prototype of a two-thread design for W5, not the runtime: the calling
//! thread runs the keys of hash buckets `0..k` (of 64) itself, event by
//! event, and hands the rest to one worker thread in batches of 4,096
//! events (copied into the events of a batch sent before, oldest first, as
//! `ShardedRunner` does). With `k` = 64 it is one thread; with `k` = 32 an
//! even split. It shows what an uneven split buys on two cores, where
//! `ShardedRunner`'s calling thread competes with its two shard threads:
//! the calling thread also fills, routes and copies, so it should run fewer
//! keys than the worker.
//!
//! `cargo run --release -p cep-bench --example w5_inline_split [K...]`
//! (default `64 16 20 24 32 s`, where `s` is `ShardedRunner` with two shard
//! threads; five rounds, each runs every `K` once).

use std::sync::mpsc::sync_channel;
use std::time::Instant;

use cep_bench::w1;
use cep_core::{Event, Sym, Value};
use cep_nfa::compile::{Options, compile};
use cep_runtime::{JsonLines, Runner};

/// Batches queued for the worker.
const IN_FLIGHT: usize = 16;
/// Events per batch.
const BATCH: usize = 4096;
/// Hash buckets.
const BUCKETS: u64 = 64;

fn runner() -> Runner {
    Runner::new(compile(w1::RISE_SPIKE, &mut w1::schema(), &Options::default()).expect("rise_spike").programs)
}

/// The bucket of an integer key (the runtime's multiply-and-fold hash).
fn bucket(key: &Value) -> u64 {
    let Value::Int(i) = *key else { return 0 };
    let m = u128::from(i as u64 ^ 0x243f_6a88_85a3_08d3) * 0x9e37_79b9_7f4a_7c15;
    ((m as u64) ^ (m >> 64) as u64) % BUCKETS
}

/// Copies `e` over `batch[len]` (in place when the widths agree).
fn copy_into(batch: &mut Vec<Event>, len: usize, e: &Event) {
    match batch.get_mut(len) {
        Some(slot) if slot.fields.len() == e.fields.len() => {
            (slot.ty, slot.ts, slot.row) = (e.ty, e.ts, e.row);
            slot.fields.iter_mut().zip(&e.fields).for_each(|(to, from)| *to = *from);
        }
        Some(slot) => slot.clone_from(e),
        None => batch.push(e.clone()),
    }
}

/// One pass: events per second and the matches (output lines).
fn pass(ticks: &[w1::Tick], k: u64) -> (f64, usize) {
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
    let (mut batch, mut len) = (Vec::new(), 0);
    for t in ticks {
        w1::fill(&mut e, t, tick);
        if bucket(&e.fields[0]) < k {
            mine.push(&e, &mut sink).expect("in order");
            continue;
        }
        copy_into(&mut batch, len, &e);
        len += 1;
        if len == BATCH {
            to_worker.send((std::mem::take(&mut batch), len)).expect("the worker runs");
            // The batch the worker gave back first (the oldest), if any.
            batch = given_back.try_recv().unwrap_or_default();
            len = 0;
        }
    }
    to_worker.send((batch, len)).expect("the worker runs");
    drop(to_worker);
    mine.finish(&mut sink).expect("no output to fail");
    let theirs = worker.join().expect("the worker");
    let lines = sink.into_inner().expect("a Vec").iter().chain(&theirs).filter(|&&b| b == b'\n').count();
    (ticks.len() as f64 / start.elapsed().as_secs_f64(), lines)
}

/// One pass through `ShardedRunner` with two shard threads, as W5 runs it.
fn sharded_pass(ticks: &[w1::Tick]) -> (f64, usize) {
    let start = Instant::now();
    let mut r = cep_runtime::shard::ShardedRunner::new(Runner::new(Vec::new()), vec![runner(), runner()]);
    let (mut e, tick, mut out) = (Event::default(), Sym::new("Tick"), Vec::new());
    for t in ticks {
        w1::fill(&mut e, t, tick);
        r.push(&e, &mut out).expect("in order");
    }
    r.finish(&mut out).expect("no output to fail");
    (ticks.len() as f64 / start.elapsed().as_secs_f64(), out.iter().filter(|&&b| b == b'\n').count())
}

fn main() {
    let mut ks: Vec<String> = std::env::args().skip(1).collect();
    if ks.is_empty() {
        ks = ["64", "16", "20", "24", "32", "s"].map(String::from).to_vec();
    }
    let ticks: Vec<w1::Tick> = w1::Ticks::new(w1::TICKS).collect();
    let mut rates = vec![Vec::new(); ks.len()];
    for _ in 0..5 {
        for (k, rates) in ks.iter().zip(&mut rates) {
            let (rate, lines) = match k.parse::<u64>() {
                Ok(k) => pass(&ticks, k.min(BUCKETS)),
                Err(_) => sharded_pass(&ticks),
            };
            assert_eq!(lines, 450, "k = {k}: the W1 matches");
            rates.push(rate);
        }
    }
    for (k, rates) in ks.iter().zip(&mut rates) {
        let name =
            if k.parse::<u64>().is_ok() { format!("k = {k:>2} of {BUCKETS}") } else { "ShardedRunner, 2".into() };
        println!("{name}: {}", cep_bench::median_line(rates));
    }
}
