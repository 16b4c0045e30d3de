//! W5's paced latency rows: events pushed at a set rate, each output
//! line's arrival stamped, and the latency of every match computed.

use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use cep_core::{Event, Sym};
use cep_runtime::runtime::{Output, Runtime};

use crate::suite::digest::measure;
use crate::suite::streams::Stream;
use crate::suite::{Contender, Latency, Pass};
use crate::w1::{self, Tick};

/// A writer that keeps the bytes and when each write reached it.
#[derive(Debug)]
pub(crate) struct Stamped {
    pub(crate) start: Instant,
    pub(crate) bytes: Vec<u8>,
    /// Per write: the length of `bytes` after it, and its time since `start`.
    pub(crate) writes: Vec<(usize, Duration)>,
}

impl Write for Stamped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        self.writes.push((self.bytes.len(), self.start.elapsed()));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// [`Stamped`] behind a lock, for an output that must be `'static`.
struct SharedStamped(std::sync::Arc<parking_lot::Mutex<Stamped>>);

impl Write for SharedStamped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What [`paced_run`] gives.
#[derive(Debug)]
pub struct PacedRun {
    /// The output: one JSON line per match.
    pub out: Vec<u8>,
    /// Wall-clock seconds from the first push to the end of `finish`.
    pub seconds: f64,
    /// Latency of the matches completed by an event of the stream.
    pub latency: Latency,
}

/// W5's latency run: rise_spike over `ticks` through the runtime on
/// `threads` threads (one: the runner; more: the balanced runtime, its
/// partial batches sent after `flush_after` if given), each tick pushed at
/// its due time — tick `i` at `i / rate` seconds, by busy-waiting on the
/// wall clock (`rate` infinite: as fast as it goes). A rise_spike match
/// ends with its quiet period (`end`, no event), so the event that
/// completes it is the first tick after `end`; its latency is the time from
/// that tick's push to the write of the match's line.
pub fn paced_run(threads: usize, ticks: &[Tick], rate: f64, flush_after: Option<Duration>) -> PacedRun {
    let tick = Sym::new("Tick");
    let mut e = Event::default();
    let mut pushed = Vec::with_capacity(ticks.len());
    let start = Instant::now();
    let stamped =
        std::sync::Arc::new(parking_lot::Mutex::new(Stamped { start, bytes: Vec::new(), writes: Vec::new() }));
    let pace = |i: usize| {
        let due = Duration::from_secs_f64(i as f64 / rate);
        while start.elapsed() < due {
            std::hint::spin_loop();
        }
        start.elapsed()
    };
    // Through the library's front door, as W5 runs: one thread, the runner
    // here; more, the keys shared with `threads - 1` workers.
    let mut builder = Runtime::builder().schema(w1::schema()).query(w1::RISE_SPIKE).threads(threads.max(1));
    if let Some(wait) = flush_after {
        builder = builder.flush_after(wait);
    }
    let mut rt = builder.build(Output::Writer(Box::new(SharedStamped(stamped.clone())))).expect("rise_spike compiles");
    for (i, t) in ticks.iter().enumerate() {
        w1::fill(&mut e, t, tick);
        pushed.push(pace(i));
        rt.push(&e).expect("events in order");
    }
    rt.finish().expect("no output to fail");
    let out = std::mem::replace(&mut *stamped.lock(), Stamped { start, bytes: Vec::new(), writes: Vec::new() });
    let seconds = start.elapsed().as_secs_f64();
    let latency = latency(&out, &pushed, ticks, rate);
    PacedRun { out: out.bytes, seconds, latency }
}

/// The latency of each match line of `out` (see [`paced_run`]), summarised.
pub(crate) fn latency(out: &Stamped, pushed: &[Duration], ticks: &[Tick], rate: f64) -> Latency {
    let mut lat = Vec::new();
    let mut at = 0;
    for line in out.bytes.split_inclusive(|&b| b == b'\n') {
        at += line.len();
        let written = out.writes[out.writes.partition_point(|w| w.0 < at)].1;
        let end = json_int(line, "\"end\":").expect("a match line has an end");
        let completing = ticks.partition_point(|t| t.ts <= end);
        if let Some(&pushed) = pushed.get(completing) {
            lat.push(written.saturating_sub(pushed).as_secs_f64());
        }
    }
    lat.sort_by(f64::total_cmp);
    let rank = |p: f64| lat.get(((p * lat.len() as f64).ceil() as usize).max(1) - 1).copied().unwrap_or(f64::NAN);
    Latency { rate, matches: lat.len() as u64, p50: rank(0.5), p99: rank(0.99), max: rank(1.0) }
}

/// The integer after `key` in a JSON line.
pub(crate) fn json_int(line: &[u8], key: &str) -> Option<i64> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = &text[text.find(key)? + key.len()..];
    let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

/// The rate W5's latency rows are paced at.
pub const W5_LATENCY_RATE: f64 = 1e6;

/// W5 latency: [`paced_run`] at [`W5_LATENCY_RATE`]; events/s is the rate
/// achieved, matches the output lines.
pub(crate) fn latency_contender(name: &'static str, threads: usize, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut paced = None;
            let pass = measure(n, check, |tally| {
                let run = paced_run(threads, &ticks[..n], W5_LATENCY_RATE, None);
                tally.add_output(&run.out);
                paced = Some((run.seconds, run.latency));
                None
            });
            let (seconds, latency) = paced.expect("the pass ran");
            Pass { seconds, latency: Some(latency), ..pass }
        })
    })
}
