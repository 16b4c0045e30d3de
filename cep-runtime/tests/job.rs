//! The job as a library caller drives it: events from memory, checkpoints,
//! a stop in the middle, a resume, and the output of an uninterrupted run.

use std::sync::atomic::Ordering;

use cep_core::{Event, Sym, Value};
use cep_io::memory::{ChannelSource, IterSource};
use cep_runtime::job::{CheckpointSpec, Job, JobErrorKind, JobInput, JobSpec, QueryText, RunEnd};

mod common;
use common::{QUERIES, dir, events, schema};

fn spec(threads: usize, checkpoint: Option<CheckpointSpec>) -> JobSpec {
    JobSpec {
        queries: vec![QueryText::new("q.cep", QUERIES)],
        threads: Some(threads),
        checkpoint,
        ..JobSpec::default()
    }
}

/// Runs `evs` through a job of `spec`, stopping once the source has handed
/// out `stop_after` events; the output, how the run ended, and where it
/// resumed (the output bytes its checkpoint covered).
fn run(spec: JobSpec, evs: &[Event], stop_after: Option<usize>) -> (Vec<u8>, RunEnd, Option<u64>) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let source = evs.iter().cloned().enumerate().map(move |(i, e)| {
        if Some(i) == stop_after {
            flag.store(true, Ordering::Relaxed);
        }
        e
    });
    let mut input = JobInput::events(IterSource::new("mem", source), schema());
    let mut job = Job::build(spec, &mut input, &mut |_| {}).expect("the job builds");
    job.set_stop_handle(stop);
    let mut out = Vec::new();
    let end = job.run(input, &mut out, None).expect("runs");
    (out, end, job.resumed().map(|r| r.output_bytes))
}

#[test]
fn a_job_stopped_and_resumed_writes_what_an_uninterrupted_one_writes() {
    let evs = events(3000);
    for threads in [1, 2, 3] {
        let (whole, end, _) = run(spec(threads, None), &evs, None);
        assert_eq!(end, RunEnd::Finished);
        assert!(whole.len() > 1000, "the stream has matches");
        if threads > 1 {
            let (one, _, _) = run(spec(1, None), &evs, None);
            assert_eq!(whole, one, "{threads} threads write one thread's lines");
        }
        for (stop_at, every) in [(1234, 100), (7, 1000), (2999, 500), (1500, 250)] {
            let d = dir(&format!("{threads}-{stop_at}-{every}"));
            let ckpt = |resume| Some(CheckpointSpec { dir: d.0.clone(), every, resume, by_committed_offsets: false });
            let (mut first, end, _) = run(spec(threads, ckpt(false)), &evs, Some(stop_at));
            assert_eq!(end, RunEnd::Stopped, "the run stopped at {stop_at}");
            let (rest, end, kept) = run(spec(threads, ckpt(true)), &evs, None);
            assert_eq!(end, RunEnd::Finished);
            let kept = kept.expect("a checkpoint was resumed") as usize;
            assert!(kept <= first.len());
            first.truncate(kept);
            first.extend(rest);
            assert_eq!(
                String::from_utf8(first).unwrap(),
                String::from_utf8(whole.clone()).unwrap(),
                "{threads} threads, stopped at {stop_at}, checkpoints every {every}"
            );
        }
    }
}

#[test]
fn a_checkpoint_of_another_job_is_refused_with_its_thread_count() {
    let evs = events(500);
    let d = dir("mismatch");
    let ckpt = |resume| Some(CheckpointSpec { dir: d.0.clone(), every: 100, resume, by_committed_offsets: false });
    let (_, end, _) = run(spec(2, ckpt(false)), &evs, Some(300));
    assert_eq!(end, RunEnd::Stopped);
    // The same job on one thread: the checkpoint names the two it needs.
    let mut input = JobInput::events(IterSource::new("mem", evs.clone()), schema());
    let e = Job::build(spec(1, ckpt(true)), &mut input, &mut |_| {}).unwrap_err();
    assert!(matches!(e.kind(), JobErrorKind::Mismatch { taken_with: Some(2), shards: 1, .. }), "{e:?}");
    assert!(e.is_bad_input());
    // Other queries: no thread count gives its fingerprint.
    let other = JobSpec { queries: vec![QueryText::new("q", "PATTERN SEQ(A a, B b)")], ..spec(2, ckpt(true)) };
    let e = Job::build(other, &mut input, &mut |_| {}).unwrap_err();
    assert!(matches!(e.kind(), JobErrorKind::Mismatch { taken_with: None, .. }), "{e:?}");
}

#[test]
fn compile_errors_keep_their_diagnostics() {
    let bad =
        JobSpec { queries: vec![QueryText::new("bad.cep", "PATTERN SEQ(A a, B b) WHERE b.x >")], ..spec(1, None) };
    let mut input = JobInput::events(IterSource::new("mem", Vec::new()), schema());
    let e = Job::build(bad, &mut input, &mut |_| {}).unwrap_err();
    match e.kind() {
        JobErrorKind::Compile { name, diagnostics, .. } => {
            assert_eq!(name, "bad.cep");
            assert!(diagnostics.0.iter().any(|d| d.is_error()), "{diagnostics:?}");
        }
        other => panic!("not a compile error: {other:?}"),
    }
    assert!(e.to_string().contains("bad.cep:1:"), "{e}");
}

/// A channel is a stream: the matches of the events sent so far are out
/// before the job waits for the next one.
#[test]
fn a_channel_source_sends_matches_out_before_it_waits() {
    for threads in [1, 2] {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let out = std::sync::Arc::new(parking_lot_free::Lines::default());
        let writer = out.clone();
        let runner = std::thread::spawn(move || {
            let mut input = JobInput::events(ChannelSource::new("chan", rx), schema());
            let mut job = Job::build(spec(threads, None), &mut input, &mut |_| {}).unwrap();
            job.run(input, parking_lot_free::Writer(writer), None).map(|_| ())
        });
        let key = |k: i64, x: i64| vec![Value::Int(k), Value::Int(x)];
        tx.send(Event::new(Sym::new("A"), 1, 0, key(1, 5))).unwrap();
        tx.send(Event::new(Sym::new("B"), 2, 0, key(1, 9))).unwrap();
        // The match of the two is out while the job waits for a third.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !out.text().contains(r#""query":"ab""#) {
            assert!(std::time::Instant::now() < deadline, "{threads} threads: no match while waiting");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(tx);
        runner.join().unwrap().unwrap();
        assert!(out.text().starts_with(r#"{"query":"ab","key":1,"start":1,"end":2"#), "{}", out.text());
    }
}

/// A line sink shared with the test thread, without a lock crate.
mod parking_lot_free {
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct Lines(Mutex<Vec<u8>>);

    impl Lines {
        pub fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    pub struct Writer(pub Arc<Lines>);

    impl Write for Writer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl cep_io::LineSink for Writer {
        fn written(&self) -> u64 {
            self.0.0.lock().unwrap().len() as u64
        }

        fn sync(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
