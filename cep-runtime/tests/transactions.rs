//! Exactly-once output through a transactional sink (LANGUAGE.md §9, the
//! Kafka sink's protocol) at our own level: the test broker shows
//! aborted records to `read_committed` consumers (DESIGN.md §4), so the
//! abort path is checked here, with a source and a sink that keep
//! offsets and transactions the way a topic and a transactional producer
//! do. A run that dies between its two phases (the checkpoint file saved,
//! its output not committed) is resumed from the checkpoint whose offsets
//! are the committed ones, not from the newest; its epoch's lines are
//! written again, once; and the committed output is the uninterrupted
//! run's, line for line.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use cep_core::Event;
use cep_io::{EventSource, InputPosition, LineSink, Offsets, ReadError};
use cep_runtime::job::{CheckpointSpec, Job, JobErrorKind, JobInput, JobSpec, QueryText};

mod common;
use common::{Dir, QUERIES, events, schema};

/// What the "broker" keeps: committed lines, and the offset committed with
/// them (one partition, 0).
#[derive(Default)]
struct Broker {
    lines: Vec<String>,
    offset: Option<i64>,
    commits: usize,
}

/// A topic of one partition: offsets are event indices.
struct Topic {
    events: Vec<Event>,
    next: usize,
    row: u64,
    broker: Arc<Mutex<Broker>>,
}

impl EventSource for Topic {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        let Some(e) = self.events.get(self.next) else { return Ok(false) };
        event.clone_from(e);
        event.row = self.row;
        self.next += 1;
        self.row += 1;
        Ok(true)
    }
    fn last_line(&self) -> u64 {
        self.row
    }
    fn position(&self) -> InputPosition {
        InputPosition { byte: 0, row: self.row, line: self.row }
    }
    fn rows(&self) -> u64 {
        self.row
    }
    fn file(&self) -> &str {
        "topic"
    }
    fn offsets(&self) -> Option<Offsets> {
        Some(vec![(0, self.next as i64)])
    }
    fn resume_at(&mut self, offsets: &Offsets, row: u64) -> io::Result<bool> {
        self.next = offsets[0].1 as usize;
        self.row = row;
        Ok(true)
    }
    fn committed_offsets(&self) -> io::Result<Option<Offsets>> {
        Ok(Some(self.broker.lock().unwrap().offset.map(|o| vec![(0, o)]).unwrap_or_default()))
    }
}

/// A transactional producer: lines wait in the open transaction until a
/// commit; the commit numbered `die_at` fails, as a process killed between
/// saving its checkpoint and committing would (its transaction is then
/// aborted: its lines never show).
struct Producer {
    open: Vec<u8>,
    written: u64,
    broker: Arc<Mutex<Broker>>,
    die_at: Option<usize>,
}

impl Write for Producer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.open.extend_from_slice(buf);
        self.written += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LineSink for Producer {
    fn written(&self) -> u64 {
        self.written
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn transactional(&self) -> bool {
        true
    }
    fn commit(&mut self, offsets: Option<&Offsets>) -> io::Result<()> {
        let mut b = self.broker.lock().unwrap();
        b.commits += 1;
        if Some(b.commits) == self.die_at {
            self.open.clear();
            return Err(io::Error::other("killed before the commit"));
        }
        let text = String::from_utf8(std::mem::take(&mut self.open)).unwrap();
        b.lines.extend(text.lines().map(str::to_owned));
        if let Some(o) = offsets {
            b.offset = Some(o[0].1);
        }
        Ok(())
    }
}

fn spec(dir: &Dir, threads: usize, resume: bool) -> JobSpec {
    let checkpoint = CheckpointSpec { dir: dir.0.clone(), every: 150, resume, by_committed_offsets: true };
    JobSpec {
        queries: vec![QueryText::new("q.cep", QUERIES)],
        threads: Some(threads),
        checkpoint: Some(checkpoint),
        ..JobSpec::default()
    }
}

/// One run: from the committed offsets when `resume`, dying at commit
/// `die_at`; whether it ended, and its notes.
fn run(dir: &Dir, threads: usize, resume: bool, die_at: Option<usize>, broker: &Arc<Mutex<Broker>>) -> (bool, String) {
    let evs = events(2000);
    let topic = Topic { events: evs, next: 0, row: 0, broker: broker.clone() };
    let mut input = JobInput::events(topic, schema());
    let mut notes = String::new();
    let mut job = Job::build(spec(dir, threads, resume), &mut input, &mut |n| notes.push_str(n)).expect("builds");
    broker.lock().unwrap().commits = 0;
    let producer = Producer { open: Vec::new(), written: 0, broker: broker.clone(), die_at };
    (job.run(input, producer, None).is_ok(), notes)
}

#[test]
fn a_run_killed_between_its_checkpoint_and_its_commit_resumes_from_the_committed_one() {
    for threads in [1, 2] {
        let whole = Arc::new(Mutex::new(Broker::default()));
        let d = Dir(std::env::temp_dir().join(format!("cep-tx-whole-{threads}-{}", std::process::id())));
        assert!(run(&d, threads, false, None, &whole).0);
        let want = whole.lock().unwrap().lines.clone();
        assert!(want.len() > 100, "the stream has matches");
        assert_eq!(whole.lock().unwrap().offset, Some(2000), "the end is committed with the last lines");

        let broker = Arc::new(Mutex::new(Broker::default()));
        let d = Dir(std::env::temp_dir().join(format!("cep-tx-{threads}-{}", std::process::id())));
        // Dies at its 4th commit: checkpoint 4 (after row 600) is saved, its
        // lines are not committed; the broker has 3 epochs, offset 450.
        let (ended, _) = run(&d, threads, false, Some(4), &broker);
        assert!(!ended);
        assert_eq!(broker.lock().unwrap().offset, Some(450));
        // Dies again, at the first commit of the resumed run.
        let (ended, notes) = run(&d, threads, true, Some(1), &broker);
        assert!(!ended);
        assert!(notes.contains("resuming after row 450"), "the committed checkpoint, not the newest: {notes}");
        assert!(notes.contains("topic read on from offsets 0:450"), "{notes}");
        let (ended, notes) = run(&d, threads, true, None, &broker);
        assert!(ended);
        assert!(notes.contains("resuming after row 450"), "{notes}");
        assert_eq!(broker.lock().unwrap().lines, want, "{threads} thread(s): every line committed once, in order");
        // The run ended and committed its end: a resume says so.
        let topic = Topic { events: events(2000), next: 0, row: 0, broker: broker.clone() };
        let mut input = JobInput::events(topic, schema());
        let e = Job::build(spec(&d, threads, true), &mut input, &mut |_| {}).unwrap_err();
        assert!(matches!(e.kind(), JobErrorKind::Ended { .. }), "{e}");
        // Offsets that no checkpoint has (the directory of another run).
        broker.lock().unwrap().offset = Some(1234);
        let topic = Topic { events: events(2000), next: 0, row: 0, broker: broker.clone() };
        let mut input = JobInput::events(topic, schema());
        let e = Job::build(spec(&d, threads, true), &mut input, &mut |_| {}).unwrap_err();
        assert!(matches!(e.kind(), JobErrorKind::Uncommitted { .. }), "{e}");
        assert!(e.to_string().contains("offsets 0:1234"), "{e}");
    }
}

#[test]
fn a_run_killed_before_its_first_commit_starts_again_from_the_beginning() {
    let broker = Arc::new(Mutex::new(Broker::default()));
    let whole = Arc::new(Mutex::new(Broker::default()));
    let d0 = Dir(std::env::temp_dir().join(format!("cep-tx-first-whole-{}", std::process::id())));
    assert!(run(&d0, 1, false, None, &whole).0);
    let d = Dir(std::env::temp_dir().join(format!("cep-tx-first-{}", std::process::id())));
    let (ended, _) = run(&d, 1, false, Some(1), &broker);
    assert!(!ended);
    assert!(broker.lock().unwrap().lines.is_empty(), "nothing committed");
    let (ended, notes) = run(&d, 1, true, None, &broker);
    assert!(ended);
    assert!(notes.contains("no output committed"), "{notes}");
    assert_eq!(broker.lock().unwrap().lines, whole.lock().unwrap().lines);
}
