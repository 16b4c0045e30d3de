//! The `Runtime` builder: output to a writer, a callback or a channel on
//! one and several threads (the same lines); queries and alerts added and
//! removed while events flow; errors reach the caller.

use std::sync::{Arc, Mutex};

use cep_core::{Event, Sym, Value};
use cep_index::Alert;
use cep_runtime::PushError;
use cep_runtime::runtime::{Output, Runtime};
use cep_time::LatePolicy;

const PAIR: &str = "QUERY pair PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 10";

/// Events of types A/B over keys 0..5 (fields `k` and, if the schema has
/// it, `key`) with x rising and falling.
fn events(rt: &Runtime, n: usize) -> Vec<Event> {
    let (k, x) = (rt.schema().lookup("k").unwrap(), rt.schema().lookup("x").unwrap());
    (0..n)
        .map(|i| {
            let mut fields = vec![Value::Null; rt.schema().field_count()];
            fields[k as usize] = Value::Int((i * 7 % 5) as i64);
            if let Some(key) = rt.schema().lookup("key") {
                fields[key as usize] = Value::Int((i * 7 % 5) as i64); // the level alerts' key
            }
            fields[x as usize] = Value::Int((i * 13 % 17) as i64);
            let ty = if i % 3 == 0 { "B" } else { "A" };
            Event::new(Sym::new(ty), i as i64, i as u64, fields)
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn every_output_and_thread_count_gives_the_same_lines() {
    let mut results = Vec::new();
    for threads in [1, 2, 3] {
        // A writer.
        let buf = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut rt = Runtime::builder()
            .query(PAIR)
            .threads(threads)
            .build(Output::Writer(Box::new(Shared(buf.clone()))))
            .unwrap();
        let evs = events(&rt, 2000);
        rt.push_batch(&evs).unwrap();
        let summary = rt.finish().unwrap();
        let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        let written = sorted(text.lines().map(str::to_owned).collect());
        assert_eq!(summary.matches, [written.len() as u64]);

        // A callback.
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let mut rt = Runtime::builder()
            .query(PAIR)
            .threads(threads)
            .build(Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
            .unwrap();
        rt.push_batch(&evs).unwrap();
        rt.finish().unwrap();
        assert_eq!(sorted(got.lock().unwrap().clone()), written);

        // A bounded channel, drained by another thread (backpressure).
        let (tx, rx) = crossbeam_channel::bounded(4);
        let reader = std::thread::spawn(move || rx.iter().collect::<Vec<String>>());
        let mut rt = Runtime::builder().query(PAIR).threads(threads).build(Output::Channel(tx)).unwrap();
        rt.push_batch(&evs).unwrap();
        rt.finish().unwrap();
        assert_eq!(sorted(reader.join().unwrap()), written);
        results.push(written);
    }
    assert!(results[0].len() > 100, "{}", results[0].len());
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
}

/// With ordered output, several threads write one thread's lines in its
/// order, queries with and without a trailing `NOT` and level alerts alike.
#[test]
fn ordered_output_on_threads_is_one_threads_output() {
    let run = |threads: usize| {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let mut rt = Runtime::builder()
            .query(&format!("{PAIR};"))
            .query("QUERY quiet PATTERN SEQ(A a, NOT B b WITHIN 4) WHERE [k] AND a.x > 3")
            .alerts((0..5).map(|k| Alert::above(format!("hi{k}"), Value::Int(k), "x", 12.0, 2.0)))
            .threads(threads)
            .ordered_output(true)
            .build(Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
            .unwrap();
        let evs = events(&rt, 5000);
        rt.push_batch(&evs).unwrap();
        rt.finish().unwrap();
        got.lock().unwrap().clone()
    };
    let one = run(1);
    for prefix in [r#"{"query":"pair""#, r#"{"query":"quiet""#, r#"{"level""#] {
        assert!(one.iter().filter(|l| l.starts_with(prefix)).count() > 50, "{prefix}");
    }
    assert!(run(2) == one, "2 threads");
    assert!(run(4) == one, "4 threads");
}

#[test]
fn queries_and_alerts_come_and_go_while_events_flow() {
    let one = come_and_go(1);
    assert_eq!(sorted(come_and_go(2)), sorted(one.clone()));
    assert_eq!(sorted(come_and_go(3)), sorted(one));
}

/// Adds and removes queries and alerts between pushes on `threads`
/// threads, checks what each emitted, and returns the lines.
fn come_and_go(threads: usize) -> Vec<String> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let mut rt = Runtime::builder()
        .query(PAIR)
        .threads(threads)
        .alerts([Alert::above("hi", Value::Int(1), "x", 15.0, 0.0)])
        .build(Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
        .unwrap();
    let evs = events(&rt, 300);
    rt.push_batch(&evs[..100]).unwrap();
    rt.add_query("QUERY bb PATTERN SEQ(B a, B b) WHERE [k] WITHIN 20").unwrap();
    // On every key: some land on shards that had no alert at first.
    for key in 0..5 {
        rt.add_alert(Alert::below(format!("lo{key}"), Value::Int(key), "x", 2.0, 0.0)).unwrap();
    }
    assert!(rt.add_alert(Alert::below("y", Value::Int(2), "y", 2.0, 0.0)).is_err(), "an unwatched field");
    rt.push_batch(&evs[100..200]).unwrap();
    assert!(rt.remove_query("pair").unwrap());
    assert!(rt.remove_alert("hi").unwrap());
    assert!(!rt.remove_query("pair").unwrap());
    assert!(!rt.remove_alert("hi").unwrap());
    assert!(rt.add_alert(Alert::below("lo3", Value::Int(3), "x", 2.0, 0.0)).is_err(), "a taken id");
    rt.push_batch(&evs[200..]).unwrap();
    let summary = rt.finish().unwrap();
    let lines = got.lock().unwrap().clone();
    let end = |l: &str| -> i64 {
        let at = l.find("\"end\":").map(|i| i + 6).or_else(|| l.find("\"ts\":").map(|i| i + 5)).unwrap();
        l[at..].split([',', '}']).next().unwrap().parse().unwrap()
    };
    let of = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).map(|l| end(l)).collect::<Vec<i64>>();
    let (pair, bb, hi, lo) =
        (of(r#"{"query":"pair""#), of(r#"{"query":"bb""#), of(r#"{"level":"hi""#), of(r#"{"level":"lo"#));
    assert!(!pair.is_empty() && pair.iter().all(|&t| t < 200), "pair stops at its removal: {pair:?}");
    assert!(!bb.is_empty() && bb.iter().all(|&t| t >= 100), "bb sees nothing before it was added: {bb:?}");
    let starts = lines.iter().filter(|l| l.starts_with(r#"{"query":"bb""#)).map(|l| {
        let at = l.find("\"start\":").unwrap() + 8;
        l[at..].split(',').next().unwrap().parse::<i64>().unwrap()
    });
    assert!(starts.into_iter().all(|s| s >= 100), "bb binds no event from before it was added");
    assert!(!hi.is_empty() && hi.iter().all(|&t| t < 200), "{hi:?}");
    assert!(!lo.is_empty() && lo.iter().all(|&t| t >= 100), "{lo:?}");
    let keys: std::collections::BTreeSet<&str> =
        lines.iter().filter(|l| l.starts_with(r#"{"level":"lo"#)).map(|l| &l[10..13]).collect();
    assert_eq!(keys.len(), 5, "every key's new alert fires: {keys:?}");
    assert_eq!(summary.matches.len(), 1, "the removed query's count left the summary");
    assert_eq!(summary.matches[0], bb.len() as u64);
    lines
}

#[test]
fn errors_reach_the_caller() {
    // Late under `fail`, on one and two threads.
    for threads in [1, 2] {
        let mut rt = Runtime::builder()
            .query(PAIR)
            .threads(threads)
            .late(LatePolicy::Fail)
            .build(Output::Writer(Box::new(std::io::sink())))
            .unwrap();
        let evs = events(&rt, 10);
        rt.push(&evs[5]).unwrap();
        match rt.push(&evs[2]) {
            Err(PushError::Late { ts: 2, watermark: 5 }) => {}
            other => panic!("{threads} threads: {other:?}"),
        }
    }
    // A closed output channel is an error, not a panic or a hang.
    for threads in [1, 2] {
        let (tx, rx) = crossbeam_channel::unbounded();
        drop(rx);
        let mut rt = Runtime::builder().query(PAIR).threads(threads).build(Output::Channel(tx)).unwrap();
        let evs = events(&rt, 2000);
        let pushed = rt.push_batch(&evs);
        let finished = rt.finish();
        assert!(pushed.is_err() || finished.is_err(), "{threads} threads");
    }
    // Bad queries and options are refused with a message.
    let e =
        Runtime::builder().query("PATTERN SEQ(A a, B b) WHERE b.x >").build(Output::Writer(Box::new(std::io::sink())));
    let e = e.unwrap_err();
    assert!(e.to_string().contains("query:1:"), "{e}");
    assert!(matches!(e.kind(), cep_runtime::job::JobErrorKind::Compile { .. }), "the diagnostics kept: {e:?}");
    let e = Runtime::builder().threads(0).build(Output::Writer(Box::new(std::io::sink())));
    assert!(e.unwrap_err().to_string().contains("at least one thread"));
}

/// A trailing `NOT`'s quiet period that ended before an event is over
/// before any statement runs that event: its match comes out before the
/// matches the event completes, whatever the statements' order in the file,
/// on one thread and on several (no partition: one shard), and before the
/// level alerts the event fires.
#[test]
fn deadlines_before_an_event_fire_in_every_statement_first() {
    for threads in [1, 2] {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let mut rt = Runtime::builder()
            .query("QUERY now PATTERN C c; QUERY quiet PATTERN SEQ(A a, NOT B b WITHIN 1); QUERY later PATTERN C c")
            .threads(threads)
            .alerts([Alert::above("hi", Value::Null, "x", 5.0, 0.0)])
            .build(Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
            .unwrap();
        let x = rt.schema().lookup("x").unwrap() as usize;
        let ev = |ty: &str, ts: i64, v: i64| {
            let mut fields = vec![Value::Null; x + 1];
            fields[x] = Value::Int(v);
            Event::new(Sym::new(ty), ts, ts as u64, fields)
        };
        rt.push_batch(&[ev("A", 0, 1), ev("C", 10, 9)]).unwrap();
        rt.finish().unwrap();
        let lines = got.lock().unwrap().clone();
        let heads: Vec<&str> = lines.iter().map(|l| &l[..l.find(',').unwrap()]).collect();
        assert_eq!(
            heads,
            [r#"{"query":"quiet""#, r#"{"query":"now""#, r#"{"query":"later""#, r#"{"level":"hi""#],
            "{threads} threads: {lines:#?}"
        );
    }
}

/// Structured output: records with their `EMIT` values, by callback, by
/// channel and by stream, on 1, 2 and 3 threads: each the lines of one
/// thread, read back, in the same order (sorted across thread counts, as
/// the runtime's own threads share the keys with the caller's).
#[test]
fn records_carry_the_lines_on_every_output_and_thread_count() {
    use cep_runtime::record::Record;
    const EMITTING: &str = "QUERY pair PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 10 \
                            EMIT b.x - a.x AS rise, a.*";
    let run = |threads: usize, output: Output| {
        let mut rt = Runtime::builder().query(EMITTING).threads(threads).build(output).unwrap();
        let evs = events(&rt, 1500);
        rt.push_batch(&evs).unwrap();
        rt.finish().unwrap();
    };
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    run(1, Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))));
    let lines = sorted(lines.lock().unwrap().clone());
    assert!(lines.len() > 100 && lines[0].contains(r#""emit":{"rise":"#), "{:?}", lines.first());
    let want: Vec<Record> = lines.iter().map(|l| Record::parse(l).unwrap()).collect();
    // Written out again (an event object's keys come sorted, see `record`).
    let as_lines = |rs: Vec<Record>| sorted(rs.iter().map(|r| serde_json::to_string(r).unwrap()).collect());
    let lines = as_lines(want.clone());

    for threads in [1, 2, 3] {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        run(threads, Output::Records(Box::new(move |r| sink.lock().unwrap().push(r))));
        let got = std::mem::take(&mut *got.lock().unwrap());
        assert!(as_lines(got) == lines, "records, {threads} threads");

        let (tx, rx) = crossbeam_channel::unbounded();
        run(threads, Output::RecordChannel(tx));
        assert!(as_lines(rx.try_iter().collect()) == lines, "record channel, {threads} threads");

        // A stream with little room: the runtime waits for the consumer.
        let (output, stream) = Output::stream(4);
        let producer = std::thread::spawn(move || run(threads, output));
        let got = poll_all(stream);
        producer.join().unwrap();
        assert!(as_lines(got) == lines, "stream, {threads} threads");
    }
    let Record::Match(m) = &want[0] else { panic!("a match") };
    let a = m.emitted("a").and_then(|a| a.as_object()).expect("a.* is an object");
    assert_eq!(a["type"], "A");
    assert_eq!(m.emit.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["rise", "a"], "item order kept");
}

/// Polls a stream to its end on this thread, parking while it is empty.
fn poll_all(mut stream: cep_runtime::RecordStream) -> Vec<cep_runtime::Record> {
    use futures_core::Stream;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut got = Vec::new();
    loop {
        match std::pin::Pin::new(&mut stream).poll_next(&mut cx) {
            Poll::Ready(Some(r)) => got.push(r),
            Poll::Ready(None) => return got,
            Poll::Pending => std::thread::park_timeout(std::time::Duration::from_millis(100)),
        }
    }
}
