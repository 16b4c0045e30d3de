//! [`Runtime`]: the library's front door — queries from text, level
//! alerts, threads, watermark policy and an output, behind one builder;
//! events in with [`Runtime::push`], JSON lines (LANGUAGE.md §5) out.
//!
//! On one thread it drives a [`Runner`]; with more, a
//! [`ShardedRunner::balanced`](crate::shard::ShardedRunner::balanced) (the same lines, as a multiset), or with
//! [`RuntimeBuilder::ordered_output`] shard threads whose lines are merged
//! in one thread's order. The output is the
//! contract's lines in either case: to a writer, a callback, or a channel.
//! (For matches as typed values, drive a [`Runner`] with a [`Sink`](crate::Sink).)

use std::collections::HashMap;
use std::io::{self, Write};

use cep_core::{Event, Schema, TimeUnit, Timestamp, Value};
use cep_index::Alert;
use cep_io::LineSink;
use cep_io::output::LineSplitter;
use cep_nfa::builder::BuildError;
use cep_nfa::program::Program;
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_time::LatePolicy;
use crossbeam_channel::Sender;

use crate::job::{Driver, Job, JobError, JobErrorKind, JobSpec, QueryText};
use crate::shard::shard_of;
use cep_core::budget::{OnLimit, StateBudget};

use crate::record::{Record, RecordStream, StreamSender};
use crate::{EventBuilder, EventError, JsonLines, PushError, QueryInfo, Runner, RunnerError, Summary};

/// Where a [`Runtime`] writes its output lines.
pub enum Output {
    /// Bytes to a writer (a file, stdout, a `Vec<u8>`).
    Writer(Box<dyn Write + Send>),
    /// Each line, without its newline, to a callback.
    Lines(Box<dyn FnMut(&str) + Send>),
    /// Each line, without its newline, over a channel (a full bounded
    /// channel blocks the runtime: backpressure).
    Channel(Sender<String>),
    /// Each line as a [`Record`] (a match with its `EMIT` values, or a
    /// level alert), to a callback: the same records on every thread count
    /// (in one thread's order with [`RuntimeBuilder::ordered_output`]).
    Records(Box<dyn FnMut(Record) + Send>),
    /// Each line as a [`Record`], over a channel.
    RecordChannel(Sender<Record>),
    /// Each line as a [`Record`], to a [`RecordStream`]: made by
    /// [`Output::stream`].
    Stream(StreamSender),
}

impl Output {
    /// An output of records to an async [`Stream`](futures_core::Stream),
    /// which holds at most `capacity` records before the runtime waits
    /// (`0`: no bound), and the stream. It ends when the runtime is
    /// finished or dropped.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake, Waker};
    /// use cep_core::{Event, Sym, Value};
    /// use cep_runtime::{Output, Record, Runtime};
    /// use futures_core::Stream;
    ///
    /// let (output, mut stream) = Output::stream(0);
    /// let producer = std::thread::spawn(move || {
    ///     let mut rt = Runtime::builder().query("PATTERN SEQ(A a, B b) EMIT count(a) AS n").build(output).unwrap();
    ///     for (row, ty) in ["A", "B", "A", "B"].into_iter().enumerate() {
    ///         rt.push(&Event::new(Sym::new(ty), row as i64, row as u64, vec![])).unwrap();
    ///     }
    ///     rt.finish().unwrap();
    /// });
    /// // A tiny executor: poll, and park until woken.
    /// struct Unpark(std::thread::Thread);
    /// impl Wake for Unpark {
    ///     fn wake(self: Arc<Self>) { self.0.unpark() }
    /// }
    /// let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    /// let mut cx = Context::from_waker(&waker);
    /// let mut ends = Vec::new();
    /// loop {
    ///     match std::pin::Pin::new(&mut stream).poll_next(&mut cx) {
    ///         Poll::Ready(Some(Record::Match(m))) => ends.push(m.end),
    ///         Poll::Ready(Some(Record::Alert(_))) => unreachable!(),
    ///         Poll::Ready(None) => break,
    ///         Poll::Pending => std::thread::park(),
    ///     }
    /// }
    /// producer.join().unwrap();
    /// assert_eq!(ends, [1, 3]);
    /// ```
    pub fn stream(capacity: usize) -> (Output, RecordStream) {
        let (tx, stream) = RecordStream::new(capacity);
        (Output::Stream(tx), stream)
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Output::Writer(_) => "Output::Writer",
            Output::Lines(_) => "Output::Lines",
            Output::Channel(_) => "Output::Channel",
            Output::Records(_) => "Output::Records",
            Output::RecordChannel(_) => "Output::RecordChannel",
            Output::Stream(_) => "Output::Stream",
        })
    }
}

/// Turns written bytes into lines for [`Output::Lines`] and
/// [`Output::Channel`].
struct LineOut {
    output: Output,
    lines: LineSplitter,
    written: u64,
}

impl LineSink for LineOut {
    fn written(&self) -> u64 {
        self.written
    }

    fn sync(&mut self) -> io::Result<()> {
        self.flush()
    }
}

impl Write for LineOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let deliver: &mut dyn FnMut(&str) -> io::Result<()> = match &mut self.output {
            Output::Writer(w) => {
                let n = w.write(buf)?;
                self.written += n as u64;
                return Ok(n);
            }
            Output::Lines(f) => &mut |line| {
                f(line);
                Ok(())
            },
            Output::Channel(tx) => {
                &mut |line| tx.send(line.to_owned()).map_err(|_| io::Error::other("the output channel is closed"))
            }
            Output::Records(f) => &mut |line| {
                f(Record::parse(line).map_err(io::Error::other)?);
                Ok(())
            },
            Output::RecordChannel(tx) => &mut |line| {
                let r = Record::parse(line).map_err(io::Error::other)?;
                tx.send(r).map_err(|_| io::Error::other("the output channel is closed"))
            },
            Output::Stream(tx) => &mut |line| {
                let r = Record::parse(line).map_err(io::Error::other)?;
                if tx.send(r) { Ok(()) } else { Err(io::Error::other("the output stream was dropped")) }
            },
        };
        self.lines.split(buf, |line| {
            let text = std::str::from_utf8(&line[..line.len() - 1]).map_err(io::Error::other)?;
            deliver(text)
        })?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.output {
            Output::Writer(w) => w.flush(),
            _ => Ok(()),
        }
    }
}

/// Configures a [`Runtime`] (see [`Runtime::builder`]).
#[derive(Debug)]
pub struct RuntimeBuilder {
    queries: String,
    alerts: Vec<Alert>,
    schema: Schema,
    threads: usize,
    max_delay: i64,
    late: LatePolicy,
    engine: EngineChoice,
    construction: Construction,
    max_partials: Option<usize>,
    max_state: Option<(usize, OnLimit)>,
    remote: Option<crate::job::RemoteSpec>,
    time_unit: TimeUnit,
    ordered: bool,
    flush_after: Option<std::time::Duration>,
    programs: Programs,
}

/// Makes a program for [`RuntimeBuilder::program`] (one per runner).
type ProgramFactory = Box<dyn Fn() -> Result<Program<Event>, BuildError> + Send>;

/// The builder's programs (not `Debug` themselves).
#[derive(Default)]
struct Programs(Vec<ProgramFactory>);

impl std::fmt::Debug for Programs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} programs", self.0.len())
    }
}

impl RuntimeBuilder {
    /// Adds a pattern built in Rust with
    /// [`PatternBuilder`](cep_nfa::builder::PatternBuilder) over
    /// [`Event`]s, after the text queries (see [`Runtime::add_program`]:
    /// `make` is called once per runner).
    pub fn program(mut self, make: impl Fn() -> Result<Program<Event>, BuildError> + Send + 'static) -> Self {
        self.programs.0.push(Box::new(make));
        self
    }

    /// Adds query statements (LANGUAGE.md §2; several per text are fine).
    pub fn query(mut self, text: &str) -> Self {
        self.queries.push_str(text);
        self.queries.push('\n');
        self
    }

    /// Adds standing level alerts (LANGUAGE.md §4).
    pub fn alerts(mut self, alerts: impl IntoIterator<Item = Alert>) -> Self {
        self.alerts.extend(alerts);
        self
    }

    /// The schema the events are built with (default: empty and open, so
    /// queries register the fields they name; see [`Runtime::schema`]).
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = schema;
        self
    }

    /// Threads, the calling thread among them (default 1; at most 63
    /// queries above 1). Above 1, `n - 1` worker threads and the calling
    /// thread share the keys ([`ShardedRunner::balanced`](crate::shard::ShardedRunner::balanced)), the calling
    /// thread running a share that follows the load.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// With several threads, write the lines in the order one thread
    /// writes them, byte for byte (default: off, each shard's lines as
    /// they come: the same multiset). On, the runtime runs `threads` shard
    /// threads beside the calling thread, which orders and routes the
    /// events and merges each batch's lines once every shard has run it
    /// ([`ShardedRunner::set_ordered_output`](crate::shard::ShardedRunner::set_ordered_output)), instead of
    /// [`ShardedRunner::balanced`](crate::shard::ShardedRunner::balanced)'s share of the keys on the calling
    /// thread. No effect on one thread.
    ///
    /// # Examples
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use cep_core::{Event, Sym, Value};
    /// use cep_runtime::runtime::{Output, Runtime};
    ///
    /// let run = |threads: usize| {
    ///     let got = Arc::new(Mutex::new(Vec::new()));
    ///     let sink = got.clone();
    ///     let mut rt = Runtime::builder()
    ///         .query("PATTERN SEQ(A a, NOT B b WITHIN 3) WHERE [k]")
    ///         .threads(threads)
    ///         .ordered_output(true)
    ///         .build(Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
    ///         .unwrap();
    ///     let k = rt.schema().lookup("k").unwrap() as usize;
    ///     for i in 0..500u64 {
    ///         let mut fields = vec![Value::Null; k + 1];
    ///         fields[k] = Value::Int((i % 13) as i64);
    ///         rt.push(&Event::new(Sym::new(if i % 5 == 0 { "B" } else { "A" }), i as i64 / 3, i, fields)).unwrap();
    ///     }
    ///     rt.finish().unwrap();
    ///     got.lock().unwrap().clone()
    /// };
    /// assert_eq!(run(3), run(1));
    /// ```
    pub fn ordered_output(mut self, on: bool) -> Self {
        self.ordered = on;
        self
    }

    /// On several threads, how long a partial batch may wait before it is
    /// sent to its shard (default 250 µs; see
    /// [`ShardedRunner::set_flush_after`](crate::shard::ShardedRunner::set_flush_after)):
    /// shorter lowers the latency of a slow stream's matches, and costs
    /// more, smaller batches. No effect on one thread.
    pub fn flush_after(mut self, wait: std::time::Duration) -> Self {
        self.flush_after = Some(wait);
        self
    }

    /// Allowed out-of-orderness, in timestamp units (default 0).
    pub fn max_delay(mut self, ticks: i64) -> Self {
        self.max_delay = ticks;
        self
    }

    /// What to do with late events (default: drop).
    pub fn late(mut self, policy: LatePolicy) -> Self {
        self.late = policy;
        self
    }

    /// Which engine runs the queries and how the stack engine builds
    /// matches (default: auto, direct).
    pub fn engines(mut self, choice: EngineChoice, construction: Construction) -> Self {
        self.engine = choice;
        self.construction = construction;
        self
    }

    /// Bounds partial matches per key and query (see
    /// [`Runner::set_max_partials_per_key`]).
    pub fn max_partials_per_key(mut self, cap: usize) -> Self {
        self.max_partials = Some(cap);
        self
    }

    /// Bounds the bytes of state of all queries on all threads (partial
    /// matches, buffer nodes, per-key history, events held for
    /// reordering; LANGUAGE.md §6, `--max-state`), and says what happens
    /// at the bound. Default: unbounded.
    ///
    /// # Examples
    /// ```
    /// use cep_core::budget::OnLimit;
    /// use cep_core::{Event, Sym, Value};
    /// use cep_runtime::runtime::{Output, Runtime};
    /// use cep_runtime::PushError;
    ///
    /// let mut rt = Runtime::builder()
    ///     .query("QUERY grow PATTERN SEQ(A+ a[], B b) WHERE skip-till-any-match AND [k]")
    ///     .max_state(1 << 20, OnLimit::Fail)
    ///     .build(Output::Lines(Box::new(|_| {})))
    ///     .unwrap();
    /// let mut stopped = None;
    /// for row in 0..100u64 {
    ///     if let Err(e) = rt.push(&Event::new(Sym::new("A"), row as i64, row, vec![Value::Int(7)])) {
    ///         stopped = Some(e);
    ///         break;
    ///     }
    /// }
    /// let Some(PushError::StateLimit { hit, .. }) = stopped else { panic!("the bound stops it") };
    /// assert_eq!((hit.holder.as_str(), hit.key), ("grow", Some(Value::Int(7))));
    /// ```
    pub fn max_state(mut self, bytes: usize, policy: OnLimit) -> Self {
        self.max_state = Some((bytes, policy));
        self
    }

    /// Where the queries' remote functions are answered (LANGUAGE.md §8):
    /// each runner gets a resolver of its own from `remote`, in-process
    /// (any `cep_core::remote::Resolver`) or over HTTP (`cep-remote`).
    ///
    /// # Examples
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use cep_core::remote::{FnResolver, OnFailure, Resolver};
    /// use cep_core::Value;
    /// use cep_runtime::{Output, Runtime};
    /// use cep_runtime::job::RemoteSpec;
    ///
    /// // `odd(x)` answered in-process.
    /// let odd = Arc::new(|| {
    ///     let f = FnResolver::new(|_func: u16, a: &[Value]| matches!(a[0], Value::Int(i) if i % 2 == 1));
    ///     Ok(Box::new(f) as Box<dyn Resolver>)
    /// });
    /// let lines = Arc::new(Mutex::new(Vec::new()));
    /// let seen = lines.clone();
    /// let mut rt = Runtime::builder()
    ///     .query("REMOTE odd(x int); QUERY q PATTERN SEQ(A a, B b) WHERE odd(b.x)")
    ///     .remote(RemoteSpec::new(vec![("odd".into(), "in-process".into())], odd, OnFailure::Fail))
    ///     .build(Output::Lines(Box::new(move |l: &str| seen.lock().unwrap().push(l.to_owned()))))
    ///     .unwrap();
    /// for (row, (ty, x)) in [("A", 0), ("B", 2), ("B", 3)].into_iter().enumerate() {
    ///     let e = rt.event(ty, row as i64).set("x", x).unwrap().row(row as u64).build();
    ///     rt.push(&e).unwrap();
    /// }
    /// rt.finish().unwrap();
    /// let lines = lines.lock().unwrap();
    /// assert_eq!(lines.len(), 1);
    /// assert!(lines[0].contains(r#""vars":{"a":[0],"b":[2]}"#), "{}", lines[0]);
    /// ```
    pub fn remote(mut self, remote: crate::job::RemoteSpec) -> Self {
        self.remote = Some(remote);
        self
    }

    /// The unit of timestamps, for durations in queries (default ms).
    pub fn time_unit(mut self, unit: TimeUnit) -> Self {
        self.time_unit = unit;
        self
    }

    /// Compiles the queries and starts the runtime (and its threads): a
    /// [`Job`] fed by the caller's pushes.
    pub fn build(self, output: Output) -> Result<Runtime, JobError> {
        let watched = {
            let mut w: Vec<String> = self.alerts.iter().map(|a| a.field.clone()).collect();
            w.sort();
            w.dedup();
            w
        };
        let alert_keys = self.alerts.iter().map(|a| (a.id.clone(), a.key)).collect();
        let queries =
            if self.queries.trim().is_empty() { Vec::new() } else { vec![QueryText::new("query", self.queries)] };
        let spec = JobSpec {
            queries,
            alerts: self.alerts,
            threads: Some(self.threads),
            ordered: self.ordered,
            max_delay: self.max_delay,
            late: self.late,
            engine: self.engine,
            construction: self.construction,
            max_partials_per_key: self.max_partials,
            max_state: self.max_state.map(|(b, _)| b),
            on_state_limit: self.max_state.map_or(OnLimit::Fail, |(_, p)| p),
            time_unit: self.time_unit,
            remote: self.remote,
            ..JobSpec::default()
        };
        let (mut job, schema) = Job::for_pushing(spec.clone(), self.schema)?;
        if let (Some(wait), Driver::Sharded(r)) = (self.flush_after, &mut job.driver) {
            r.set_flush_after(wait);
        }
        let sink = JsonLines::new(LineOut { output, lines: LineSplitter::default(), written: 0 });
        let mut rt = Runtime { job, sink, schema, spec, alert_keys, watched, pushed: 0 };
        for make in self.programs.0 {
            rt.add_program(make)?;
        }
        Ok(rt)
    }
}

/// Queries and level alerts over an event stream, on one or more threads
/// (see the [module](self) docs).
///
/// # Examples
/// ```
/// use cep_core::{Event, Schema, Sym, Value};
/// use cep_runtime::runtime::{Output, Runtime};
///
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let mut rt = Runtime::builder()
///     .query("QUERY pair PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 10")
///     .threads(2)
///     .max_delay(5)
///     .build(Output::Channel(tx))
///     .unwrap();
/// let (k, x) = (rt.schema().lookup("k").unwrap(), rt.schema().lookup("x").unwrap());
/// let ev = |ty: &str, ts: i64, kv: i64, xv: i64| {
///     let mut fields = vec![Value::Null; 2];
///     fields[k as usize] = Value::Int(kv);
///     fields[x as usize] = Value::Int(xv);
///     Event::new(Sym::new(ty), ts, ts as u64, fields)
/// };
/// rt.push_batch(&[ev("A", 1, 7, 10), ev("A", 2, 8, 10), ev("B", 4, 7, 11), ev("B", 3, 8, 9)]).unwrap();
/// let summary = rt.finish().unwrap();
/// assert_eq!(summary.matches, [1]);
/// let lines: Vec<String> = rx.iter().collect();
/// assert_eq!(lines.len(), 1);
/// assert!(lines[0].starts_with(r#"{"query":"pair","key":7,"start":1,"end":4"#));
/// ```
pub struct Runtime {
    job: Job,
    sink: JsonLines<LineOut>,
    schema: Schema,
    spec: JobSpec,
    /// Every alert's key, by id (to route changes to its shard).
    alert_keys: HashMap<String, Value>,
    /// The fields alerts watched when the runtime was built.
    watched: Vec<String>,
    /// Events pushed so far: the row of the next [`event`](Runtime::event).
    pushed: u64,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("threads", &self.job.threads()).finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder: one thread, no delay, late events dropped, engines auto.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            queries: String::new(),
            alerts: Vec::new(),
            schema: Schema::new(),
            threads: 1,
            max_delay: 0,
            late: LatePolicy::Drop,
            engine: EngineChoice::Auto,
            construction: Construction::Direct,
            max_partials: None,
            max_state: None,
            remote: None,
            time_unit: TimeUnit::Millis,
            ordered: false,
            flush_after: None,
            programs: Programs::default(),
        }
    }

    /// The schema to build events with: field `i` of an event is the
    /// field with id `i` here (queries and alerts added the fields they
    /// name).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The queries' names and variables.
    pub fn queries(&self) -> &[QueryInfo] {
        self.job.queries()
    }

    /// Processes one event (see [`Runner::push`]); output so far goes out.
    /// Past the state bound ([`RuntimeBuilder::max_state`]) under the
    /// `fail` policy: [`PushError::StateLimit`], and every later push too.
    ///
    /// An event with more field values than [`schema`](Self::schema) has
    /// fields is refused: [`PushError::Event`], nothing processed.
    pub fn push(&mut self, e: &Event) -> Result<(), PushError> {
        crate::event::check_width(e, &self.schema)?;
        self.pushed += 1;
        self.job.driver.push(e, &mut self.sink)?;
        match &self.job.budget {
            Some(b) if b.tripped() => Err(state_limit(b)),
            _ => Ok(()),
        }
    }

    /// An event of type `ty` at `ts` with its fields set by name against
    /// [`schema`](Self::schema) ([`EventBuilder::set`]; fields not set are
    /// NULL). Its row is the number of events pushed so far, so that
    /// events built and pushed one at a time are numbered 0, 1, 2, …
    /// ([`EventBuilder::row`] sets another).
    ///
    /// # Examples
    /// ```
    /// use cep_runtime::runtime::{Output, Runtime};
    /// use cep_runtime::EventError;
    ///
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let mut rt = Runtime::builder()
    ///     .query("QUERY spike PATTERN SEQ(Tick a, Tick b) WHERE [sym] AND b.price > a.price AND b.vol >= 1000")
    ///     .build(Output::Channel(tx))
    ///     .unwrap();
    /// let a = rt.event("Tick", 1000).set("sym", "ACME")?.set("price", 10250)?.set("vol", 10)?.build();
    /// rt.push(&a)?;
    /// let b = rt.event("Tick", 2000).set("sym", "ACME")?.set("price", 10.5e3)?.set("vol", 5000)?.build();
    /// assert_eq!(b.row, 1);
    /// rt.push(&b)?;
    /// let Err(EventError::UnknownField { field, known }) = rt.event("Tick", 3000).set("volume", 1) else {
    ///     panic!("no such field")
    /// };
    /// assert_eq!((field.as_str(), known.len()), ("volume", 3));
    /// rt.finish()?;
    /// assert!(rx.recv().unwrap().starts_with(r#"{"query":"spike","key":"ACME","start":1000,"end":2000"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn event(&self, ty: &str, ts: Timestamp) -> EventBuilder<'_> {
        EventBuilder::new(&self.schema, ty, ts, self.pushed)
    }

    /// An event of type `ty` at `ts` from `(field, value)` pairs (see
    /// [`event`](Self::event)); an error names an unknown field.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_runtime::runtime::{Output, Runtime};
    ///
    /// let rt = Runtime::builder().query("PATTERN SEQ(A a) WHERE a.x > 1").build(Output::Lines(Box::new(|_| {}))).unwrap();
    /// let e = rt.event_from("A", 5, [("x", Value::from(2))]).unwrap();
    /// assert_eq!(e.fields, [Value::Int(2)]);
    /// assert!(rt.event_from("A", 5, [("y", Value::from(2))]).unwrap_err().to_string().contains("`y`"));
    /// ```
    pub fn event_from<'f>(
        &self,
        ty: &str,
        ts: Timestamp,
        fields: impl IntoIterator<Item = (&'f str, Value)>,
    ) -> Result<Event, EventError> {
        fields.into_iter().try_fold(self.event(ty, ts), |b, (name, v)| b.set(name, v)).map(EventBuilder::build)
    }

    /// Processes events in order.
    pub fn push_batch(&mut self, events: &[Event]) -> Result<(), PushError> {
        events.iter().try_for_each(|e| self.push(e))
    }

    /// Moves the watermark without an event (see
    /// [`Runner::advance_watermark`]).
    pub fn advance_watermark(&mut self, wm: Timestamp) -> Result<(), PushError> {
        self.job.driver.advance_watermark(wm, &mut self.sink)
    }

    /// Delivers the output of every event pushed so far: on several
    /// threads, the events held for a batch are run at once, and the call
    /// returns when every thread has run them and their lines are out (see
    /// [`ShardedRunner::sync`](crate::shard::ShardedRunner::sync)); a writer is flushed. Between pushes the
    /// runtime may hold a few events' matches, which the next push or this
    /// call delivers: call it when the input goes quiet. Events held for
    /// reordering (a [`max_delay`](RuntimeBuilder::max_delay)) stay held
    /// until the watermark passes them.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Sym, Value};
    /// use cep_runtime::runtime::{Output, Runtime};
    ///
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let mut rt = Runtime::builder()
    ///     .query("QUERY pair PATTERN SEQ(A a, B b) WHERE [k]")
    ///     .threads(2)
    ///     .ordered_output(true)
    ///     .build(Output::Channel(tx))
    ///     .unwrap();
    /// let k = rt.schema().lookup("k").unwrap() as usize;
    /// let ev = |ty: &str, ts: i64| {
    ///     let mut fields = vec![Value::Null; k + 1];
    ///     fields[k] = Value::Int(7);
    ///     Event::new(Sym::new(ty), ts, ts as u64, fields)
    /// };
    /// rt.push(&ev("A", 1)).unwrap();
    /// rt.push(&ev("B", 2)).unwrap();
    /// rt.flush().unwrap();
    /// assert!(rx.try_recv().unwrap().starts_with(r#"{"query":"pair","key":7,"start":1,"end":2"#));
    /// ```
    pub fn flush(&mut self) -> Result<(), PushError> {
        self.job.driver.sync(&mut self.sink)?;
        self.sink.flush().map_err(PushError::Io)
    }

    /// Adds queries while events flow: each starts at the current
    /// watermark (see [`Runner::add_query`]) — it sees the events pushed
    /// from now on, never an earlier one. The query may name new fields:
    /// they are added to [`schema`](Self::schema). On several threads the
    /// change travels in band, after every event pushed before it.
    pub fn add_query(&mut self, text: &str) -> Result<(), JobError> {
        let spec = JobSpec { queries: vec![QueryText::new("query", text)], ..self.spec.clone() };
        let compile = |schema: &mut Schema| crate::job::compiled(&spec, schema);
        let programs = compile(&mut self.schema)?;
        for p in &programs {
            cep_nfa::select::explain(p, self.spec.engine)
                .map_err(|e| JobError::from(JobErrorKind::Engine(e.to_string())))?;
        }
        let engine_error = |e: String| JobError::from(JobErrorKind::Engine(e));
        match &mut self.job.driver {
            Driver::One(r) => {
                for p in programs {
                    r.add_query(p).map_err(|e| engine_error(e.to_string()))?;
                }
            }
            Driver::Sharded(r) => {
                let n = r.slices();
                let mut per_shard = vec![programs];
                for _ in 1..n {
                    per_shard.push(compile(&mut self.schema.clone())?);
                }
                while !per_shard[0].is_empty() {
                    let programs = per_shard.iter_mut().map(|ps| ps.remove(0)).collect();
                    r.add_query(programs).map_err(|e| engine_error(e.to_string()))?;
                }
            }
        }
        Ok(())
    }

    /// Adds a pattern built in Rust with
    /// [`PatternBuilder`](cep_nfa::builder::PatternBuilder) over
    /// [`Event`]s, while events flow: like [`add_query`](Self::add_query),
    /// it starts at the current watermark (added through
    /// [`RuntimeBuilder::program`], it sees every event). Its conditions
    /// read the events' fields by their ids in [`schema`](Self::schema):
    /// name the fields in [`RuntimeBuilder::schema`] (or in a text query)
    /// first.
    ///
    /// A program is made of closures, which cannot be copied: `make` is
    /// called once per runner, once on one thread and once per slice of
    /// the keys on several, and must build the same pattern each time. On
    /// several threads, partition it with
    /// [`partition_by_field`](cep_nfa::builder::PatternBuilder::partition_by_field)
    /// so that its keys spread over the threads (a closure key, or none,
    /// runs it on one thread). A program is not part of the runtime's
    /// [`JobSpec`]: it is in no checkpoint. An invalid pattern is
    /// [`JobErrorKind::Pattern`].
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Value};
    /// use cep_nfa::builder::PatternBuilder;
    /// use cep_nfa::program::Window;
    /// use cep_runtime::runtime::{Output, Runtime};
    ///
    /// let mut schema = Schema::new();
    /// let (sym, price) = (schema.field("sym"), schema.field("price"));
    /// let rise = move || {
    ///     // A tick, then one at least 2 % above it, within 10 s.
    ///     let mut p = PatternBuilder::<Event>::new("rise");
    ///     p.partition_by_field("sym", sym).within(Window::Time(10_000));
    ///     let a = p.element("a", |_| true);
    ///     let a_price = p.capture(a, move |e| e.get(price));
    ///     let b = p.element("b", |_| true);
    ///     p.condition(b, move |e, ctx| {
    ///         let (now, then) = (e.get(price).as_i64(), ctx.captured(a_price).as_i64());
    ///         now.zip(then).is_some_and(|(now, then)| now * 100 >= then * 102)
    ///     });
    ///     p.build()
    /// };
    /// for threads in [1, 2] {
    ///     let (tx, rx) = crossbeam_channel::unbounded();
    ///     let mut rt = Runtime::builder()
    ///         .schema(schema.clone())
    ///         .threads(threads)
    ///         .program(rise)
    ///         .build(Output::Channel(tx))?;
    ///     for (ts, s, p) in [(0, "ACME", 100), (1000, "INIT", 50), (2000, "ACME", 103), (3000, "ACME", 104)] {
    ///         rt.push(&rt.event("Tick", ts).set("sym", s)?.set("price", p)?.build())?;
    ///     }
    ///     let summary = rt.finish()?;
    ///     assert_eq!(summary.by_query(), [("rise", 1)]);
    ///     let line = rx.recv()?;
    ///     assert!(line.starts_with(r#"{"query":"rise","key":"ACME","start":0,"end":2000"#), "{line}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_program(&mut self, make: impl Fn() -> Result<Program<Event>, BuildError>) -> Result<(), JobError> {
        let build = || make().map_err(|e| JobError::from(JobErrorKind::Pattern(e)));
        let engine_error = |e: String| JobError::from(JobErrorKind::Engine(e));
        let first = build()?;
        cep_nfa::select::explain(&first, self.spec.engine).map_err(|e| engine_error(e.to_string()))?;
        match &mut self.job.driver {
            Driver::One(r) => r.add_query(first).map(|_| ()).map_err(|e| engine_error(e.to_string())),
            Driver::Sharded(r) => {
                let mut programs = vec![first];
                for _ in 1..r.slices() {
                    programs.push(build()?);
                }
                r.add_query(programs).map_err(|e| engine_error(e.to_string()))
            }
        }
    }

    /// Removes the query named `name`: it emits nothing more (see
    /// [`Runner::remove_query`]). False if there is none.
    pub fn remove_query(&mut self, name: &str) -> Result<bool, PushError> {
        match &mut self.job.driver {
            Driver::One(r) => Ok(r.remove_query(name)),
            Driver::Sharded(r) => r.remove_query(name),
        }
    }

    /// Adds a level alert while events flow; its field must be one an alert
    /// watched when the runtime was built. It takes its key's last value
    /// as `prev` (see [`LevelIndex::add`](cep_index::LevelIndex::add)).
    pub fn add_alert(&mut self, alert: Alert) -> Result<(), JobError> {
        let invalid = |message: String| JobError::from(JobErrorKind::Alerts { name: "alert".into(), message });
        if !self.watched.contains(&alert.field) {
            return Err(invalid(format!("no alert watched field `{}` when the runtime was built", alert.field)));
        }
        alert.validate().map_err(|e| invalid(e.to_string()))?;
        if self.alert_keys.contains_key(&alert.id) {
            return Err(invalid(cep_index::AlertError::DuplicateId(alert.id).to_string()));
        }
        self.alert_keys.insert(alert.id.clone(), alert.key);
        match &mut self.job.driver {
            Driver::One(r) => match r.levels_mut() {
                Some(idx) => idx.add(alert).map_err(|e| invalid(e.to_string())),
                None => Err(invalid("this runtime has no level alerts".into())),
            },
            Driver::Sharded(r) => {
                let shard = shard_of(&alert.key, r.slices());
                let change = move |r: &mut Runner| match r.levels_mut() {
                    Some(idx) => idx.add(alert).map_err(|e| RunnerError::refused(e.to_string())),
                    None => Err(RunnerError::refused("this shard has no level alerts")),
                };
                r.control(shard, Box::new(change)).map_err(|e| invalid(e.to_string()))
            }
        }
    }

    /// Removes a level alert; false if there is none with this id.
    pub fn remove_alert(&mut self, id: &str) -> Result<bool, PushError> {
        let Some(key) = self.alert_keys.remove(id) else { return Ok(false) };
        match &mut self.job.driver {
            Driver::One(r) => Ok(r.levels_mut().is_some_and(|idx| idx.remove(id))),
            Driver::Sharded(r) => {
                let id = id.to_owned();
                let change = move |r: &mut Runner| {
                    r.levels_mut().map(|idx| idx.remove(&id));
                    Ok(())
                };
                r.control(shard_of(&key, r.slices()), Box::new(change))?;
                Ok(true)
            }
        }
    }

    /// The counts so far, matches by query name included
    /// ([`Summary::by_query`]). On several threads the matches are counted
    /// once the shards have finished: [`finish`](Self::finish)'s summary
    /// has them all.
    pub fn summary(&self) -> Summary {
        self.job.summary()
    }

    /// Ends the input: every pending match and deadline is settled, all
    /// output delivered, threads joined. Returns the counts, by query name
    /// too ([`Summary::by_query`]), removed queries' included.
    pub fn finish(mut self) -> io::Result<Summary> {
        self.job.driver.finish(&mut self.sink)?;
        self.sink.flush()?;
        Ok(self.job.summary())
    }
}

/// The error of a push past the state bound.
#[cold]
fn state_limit(b: &StateBudget) -> PushError {
    PushError::StateLimit { hit: b.hit_or_total(), limit: b.limit() }
}
