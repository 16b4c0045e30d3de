//! Remote predicates (LANGUAGE.md §8): the calls an engine makes to a
//! function answered outside it, and the [`Resolver`] that answers them.
//!
//! The engine makes [`Call`]s and reads [`Answer`]s; it never waits on a
//! socket itself, and the clients know nothing of runs or matches. The seam
//! lives here, in the event model, so that neither side names the other:
//! `cep-nfa` uses these types, `cep-remote` implements [`Resolver`] over
//! HTTP, and a library user may implement it for an in-process function
//! ([`FnResolver`] is the simplest such one).
//!
//! A resolver belongs to one shard (one engine thread): it is `Send`, not
//! shared. Its bound on calls in flight is the shard's backpressure:
//! [`Resolver::submit`] waits while the bound is reached, so a shard whose
//! service is slow stops taking input rather than queueing without end.

use std::time::Duration;

use crate::Value;

/// Names one call of an engine: unique among the calls of one resolver
/// (the engine numbers them), and kept in checkpoints, so that a resumed
/// run issues the calls it was waiting for again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct CallId(pub u64);

/// One call of a remote function: which function (its index among the
/// functions the resolver was built for, in declaration order) and its
/// arguments, already checked against the declaration's types.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// The engine's name for this call.
    pub id: CallId,
    /// The function's index.
    pub func: u16,
    /// The arguments, in the declaration's order.
    pub args: Vec<Value>,
}

/// What a call came back with.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The function's value for the call's arguments.
    Value(bool),
    /// No value after the resolver's retries: the engine applies the
    /// failure policy (`--remote-failure`).
    Failed(CallError),
}

/// Why a call has no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    /// What went wrong on the last attempt.
    pub kind: CallErrorKind,
    /// Attempts made (the first and the retries).
    pub attempts: u32,
    /// A sentence for the user (a status line, an I/O error).
    pub detail: String,
}

/// The kinds of [`CallError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallErrorKind {
    /// No answer within the timeout.
    Timeout,
    /// The service could not be reached, or the connection broke.
    Connect,
    /// The service answered with an HTTP error status.
    Status(u16),
    /// The reply was not the protocol's (bad JSON, a missing id, a value
    /// that is not a bool).
    Protocol,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            CallErrorKind::Timeout => "timed out".to_string(),
            CallErrorKind::Connect => "could not connect".to_string(),
            CallErrorKind::Status(s) => format!("answered HTTP {s}"),
            CallErrorKind::Protocol => "answered outside the protocol".to_string(),
        };
        let tries = if self.attempts == 1 { "1 attempt".to_string() } else { format!("{} attempts", self.attempts) };
        write!(f, "{what} after {tries}")?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// What a resolver has done, for the summary line and `--stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteStats {
    /// Calls submitted by the engine.
    pub calls: u64,
    /// Calls answered from the cache, without a request.
    pub cache_hits: u64,
    /// Calls that joined an identical call already in flight.
    pub coalesced: u64,
    /// Requests sent (each carrying a batch of calls).
    pub batches: u64,
    /// Attempts repeated after a timeout or an error.
    pub retries: u64,
    /// Calls answered [`Answer::Failed`].
    pub failures: u64,
    /// The mean time a request takes, from leaving to its reply
    /// (exponentially weighted), in nanoseconds; 0 before the first, and
    /// for a resolver that answers at once. What a blocking call would
    /// wait, without the time a call waits to fill a batch.
    pub round_trip_ns: u64,
    /// Round trips measured (0: `round_trip_ns` says nothing yet).
    pub round_trips: u64,
}

/// The exponentially weighted mean of [`RemoteStats::round_trip_ns`]:
/// `mean` moved a tenth of the way to `sample` (`sample` itself first).
pub fn mean_round_trip(mean: u64, sample: u64) -> u64 {
    if mean == 0 { sample } else { mean - mean / 10 + sample / 10 }
}

/// Answers remote calls for one shard.
///
/// The contract, which the engine relies on:
/// - every submitted call is answered exactly once, through
///   [`poll`](Self::poll) or [`wait`](Self::wait), in any order;
/// - `submit` does not wait for the answer; it waits only while the
///   resolver's bound on calls in flight is reached;
/// - answers depend on the call's function and arguments only (a remote
///   predicate is a read), so the resolver may cache and coalesce.
///
/// # Examples
/// ```
/// use cep_core::remote::{Answer, Call, CallId, FnResolver, Resolver};
/// use cep_core::Value;
/// let mut near = FnResolver::new(|_func: u16, args: &[Value]| args[0] == Value::Int(7));
/// near.submit(Call { id: CallId(1), func: 0, args: vec![Value::Int(7)] });
/// near.submit(Call { id: CallId(2), func: 0, args: vec![Value::Int(8)] });
/// let mut answers = Vec::new();
/// near.poll(&mut answers);
/// assert_eq!(answers, [(CallId(1), Answer::Value(true)), (CallId(2), Answer::Value(false))]);
/// assert_eq!(near.in_flight(), 0);
/// ```
pub trait Resolver: Send {
    /// Starts `call` (waits only while the bound on calls in flight is
    /// reached).
    fn submit(&mut self, call: Call);

    /// Appends the answers that arrived since the last `poll` or `wait`,
    /// without waiting.
    fn poll(&mut self, answers: &mut Vec<(CallId, Answer)>);

    /// Appends answers, waiting up to `timeout` for at least one when
    /// none has arrived and a call is in flight.
    fn wait(&mut self, answers: &mut Vec<(CallId, Answer)>, timeout: Duration);

    /// Calls submitted and not yet handed back.
    fn in_flight(&self) -> usize;

    /// Counts so far.
    fn stats(&self) -> RemoteStats;

    /// The mean request round trip of function `func`'s calls alone, for
    /// a resolver whose functions are answered by different services (each
    /// has its own delay, and `auto` chooses per function); `None` (the
    /// default) when it measures only the mean over all of its calls
    /// ([`RemoteStats::round_trip_ns`]), or none of `func`'s calls came back yet.
    fn round_trip_of(&self, _func: u16) -> Option<Duration> {
        None
    }
}

/// A [`Resolver`] that answers each call at once with a function of its
/// function index and arguments: an in-process predicate, and the
/// resolver of tests that need no service.
pub struct FnResolver<F> {
    f: F,
    ready: Vec<(CallId, Answer)>,
    stats: RemoteStats,
}

impl<F> std::fmt::Debug for FnResolver<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnResolver").field("ready", &self.ready.len()).field("stats", &self.stats).finish()
    }
}

impl<F: FnMut(u16, &[Value]) -> bool + Send> FnResolver<F> {
    /// A resolver answering with `f(func, args)`.
    pub fn new(f: F) -> FnResolver<F> {
        FnResolver { f, ready: Vec::new(), stats: RemoteStats::default() }
    }
}

impl<F: FnMut(u16, &[Value]) -> bool + Send> Resolver for FnResolver<F> {
    fn submit(&mut self, call: Call) {
        self.stats.calls += 1;
        // Answered at once: a round trip of no time.
        self.stats.round_trips += 1;
        let value = (self.f)(call.func, &call.args);
        self.ready.push((call.id, Answer::Value(value)));
    }

    fn poll(&mut self, answers: &mut Vec<(CallId, Answer)>) {
        answers.append(&mut self.ready);
    }

    fn wait(&mut self, answers: &mut Vec<(CallId, Answer)>, _timeout: Duration) {
        self.poll(answers);
    }

    fn in_flight(&self) -> usize {
        self.ready.len()
    }

    fn stats(&self) -> RemoteStats {
        self.stats
    }
}

/// What a call with no value counts as (`--remote-failure`, LANGUAGE.md §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OnFailure {
    /// The run stops with an error naming the function and its service.
    #[default]
    Fail,
    /// The runs that needed the answer are dropped (and counted).
    Drop,
    /// The call counts as true; the matches it lets through are marked
    /// unverified.
    True,
    /// The call counts as false (its runs are marked unverified where the
    /// negation of the call let them through).
    False,
}

impl OnFailure {
    /// The policy a word names (`fail`, `drop`, `true`, `false`).
    pub fn parse(word: &str) -> Option<OnFailure> {
        Some(match word {
            "fail" => OnFailure::Fail,
            "drop" => OnFailure::Drop,
            "true" => OnFailure::True,
            "false" => OnFailure::False,
            _ => return None,
        })
    }
}

/// How runs wait for remote answers (`--remote-mode`, LANGUAGE.md §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RemoteMode {
    /// A run that needs an answer waits for it.
    Blocking,
    /// A run goes on as if the answer were true, owing it; its match is
    /// settled when final.
    Lazy,
    /// The engine chooses, for each function: lazy while its measured
    /// answer delay is above a few microseconds, where lazy gives the same
    /// matches; blocking otherwise.
    #[default]
    Auto,
}

impl RemoteMode {
    /// The mode a word names (`blocking`, `lazy`, `auto`).
    pub fn parse(word: &str) -> Option<RemoteMode> {
        Some(match word {
            "blocking" => RemoteMode::Blocking,
            "lazy" => RemoteMode::Lazy,
            "auto" => RemoteMode::Auto,
            _ => return None,
        })
    }
}

/// What a remote condition's call decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Verdict {
    /// The service's value.
    Value(bool),
    /// No value: the failure policy's (`true` or `false`); the match is
    /// marked unverified.
    Unverified(bool),
    /// No value, and the policy drops the run.
    Drop,
    /// No value, and the policy stops the run ([`RemoteLink::failure`]
    /// says why).
    Fail,
}

/// A shard's way to its remote functions: the [`Resolver`], shared by the
/// engines of the shard's queries (one thread uses it at a time), the
/// failure policy, and what the engines did with the answers. Calls are
/// numbered here, so that ids are unique among all of the shard's engines.
pub struct RemoteLink {
    resolver: parking_lot::Mutex<Box<dyn Resolver>>,
    /// Answers of calls made by [`submit`](Self::submit), by owner (one
    /// engine each), until the owner drains them.
    inboxes: parking_lot::Mutex<Inboxes>,
    /// Per function (the resolver's index): its name and where it is
    /// answered, for messages.
    functions: Vec<(String, String)>,
    policy: OnFailure,
    next: std::sync::atomic::AtomicU64,
    failure: parking_lot::Mutex<Option<String>>,
    /// Set with `failure`: shared with whoever watches several links (a
    /// job checks it between events, so it must cost one load).
    failed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    dropped: std::sync::atomic::AtomicU64,
    unverified: std::sync::atomic::AtomicU64,
    /// Final matches whose debts were settled: paid, refused.
    settled: [std::sync::atomic::AtomicU64; 2],
    /// Partial matches dropped before they were final, for a debt answered
    /// against them.
    early: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RemoteLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteLink").field("functions", &self.functions).field("policy", &self.policy).finish()
    }
}

/// The answers of asynchronous calls, routed to the engine that made each.
#[derive(Default)]
struct Inboxes {
    /// The owner and the function of each call in flight.
    owner_of: std::collections::HashMap<CallId, (usize, u16)>,
    boxes: Vec<Vec<(CallId, u16, Answer)>>,
}

impl Inboxes {
    fn route(&mut self, answers: &mut Vec<(CallId, Answer)>) {
        for (id, a) in answers.drain(..) {
            // A call nobody owns (a blocking one answered here, which
            // cannot happen: it waits for its own) is dropped.
            if let Some((owner, func)) = self.owner_of.remove(&id) {
                self.boxes[owner].push((id, func, a));
            }
        }
    }
}

/// What a [`RemoteLink`] counts: its resolver's [`RemoteStats`] and the
/// calls the failure policy decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// The resolver's counts.
    pub resolver: RemoteStats,
    /// Runs dropped by `--remote-failure drop`.
    pub dropped: u64,
    /// Calls that took the policy's value (`true` or `false`).
    pub unverified: u64,
    /// Lazy evaluation: final matches whose debts were all paid.
    pub settled_true: u64,
    /// Lazy evaluation: final matches dropped for a debt answered against.
    pub settled_false: u64,
    /// Lazy evaluation: partial matches dropped early, for a debt answered
    /// against them.
    pub dropped_early: u64,
}

impl RemoteStats {
    /// Adds `other`'s counts (the round trip is not a count: the larger
    /// mean is kept).
    pub fn add(&mut self, other: &RemoteStats) {
        self.calls += other.calls;
        self.cache_hits += other.cache_hits;
        self.coalesced += other.coalesced;
        self.batches += other.batches;
        self.retries += other.retries;
        self.failures += other.failures;
        self.round_trip_ns = self.round_trip_ns.max(other.round_trip_ns);
        self.round_trips += other.round_trips;
    }
}

impl LinkStats {
    /// Adds `other`'s counts (the shards of a job, summed).
    pub fn add(&mut self, other: &LinkStats) {
        self.resolver.add(&other.resolver);
        self.dropped += other.dropped;
        self.unverified += other.unverified;
        self.settled_true += other.settled_true;
        self.settled_false += other.settled_false;
        self.dropped_early += other.dropped_early;
    }
}

impl RemoteLink {
    /// A link to `resolver`, whose function `i` is `functions[i]` (a name
    /// and where it is answered), failures handled by `policy`.
    ///
    /// # Examples
    /// ```
    /// use cep_core::remote::{FnResolver, OnFailure, RemoteLink, Verdict};
    /// use cep_core::Value;
    /// let near = FnResolver::new(|_f: u16, args: &[Value]| args[0] == Value::Int(1));
    /// let link = RemoteLink::new(Box::new(near), vec![("near".into(), "in-process".into())], OnFailure::Fail);
    /// assert_eq!(link.call(0, vec![Value::Int(1)]), Verdict::Value(true));
    /// assert_eq!(link.call(0, vec![Value::Int(2)]), Verdict::Value(false));
    /// assert_eq!(link.stats().resolver.calls, 2);
    /// ```
    pub fn new(resolver: Box<dyn Resolver>, functions: Vec<(String, String)>, policy: OnFailure) -> RemoteLink {
        RemoteLink {
            resolver: parking_lot::Mutex::new(resolver),
            inboxes: parking_lot::Mutex::new(Inboxes::default()),
            functions,
            policy,
            next: std::sync::atomic::AtomicU64::new(0),
            failure: parking_lot::Mutex::new(None),
            failed: Default::default(),
            dropped: std::sync::atomic::AtomicU64::new(0),
            unverified: std::sync::atomic::AtomicU64::new(0),
            settled: Default::default(),
            early: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Counts partial matches dropped early (lazy evaluation): they owed
    /// an answer that came back against them.
    pub fn count_dropped_early(&self, n: u64) {
        self.early.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// A fresh call id, for a call made before a restart whose answer a
    /// restored engine still holds (ids restart with the process).
    pub fn fresh_id(&self) -> CallId {
        CallId(self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// Counts a lazily evaluated match settled: paid (`true`) or refused.
    pub fn count_settled(&self, paid: bool) {
        self.settled[usize::from(!paid)].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The functions, by index: names and where they are answered.
    pub fn functions(&self) -> &[(String, String)] {
        &self.functions
    }

    /// Calls function `func` with `args` and waits for the answer (the
    /// blocking mode): the value, or what the failure policy makes of a
    /// failure.
    pub fn call(&self, func: u16, args: Vec<Value>) -> Verdict {
        use std::sync::atomic::Ordering::Relaxed;
        let id = CallId(self.next.fetch_add(1, Relaxed));
        let mut resolver = self.resolver.lock();
        resolver.submit(Call { id, func, args });
        let mut answers = Vec::new();
        let answer = loop {
            resolver.wait(&mut answers, Duration::from_millis(100));
            let mine = answers.iter().position(|(a, _)| *a == id).map(|i| answers.swap_remove(i).1);
            // Answers of other engines' asynchronous calls go to them.
            if !answers.is_empty() {
                self.inboxes.lock().route(&mut answers);
            }
            if let Some(a) = mine {
                break a;
            }
        };
        drop(resolver);
        match answer {
            Answer::Value(v) => Verdict::Value(v),
            Answer::Failed(e) => self.failed(func, &e),
        }
    }

    /// A new owner of asynchronous calls (an engine): its number for
    /// [`submit`](Self::submit) and [`drain`](Self::drain).
    pub fn register(&self) -> usize {
        let mut inboxes = self.inboxes.lock();
        inboxes.boxes.push(Vec::new());
        inboxes.boxes.len() - 1
    }

    /// Starts a call of `func` with `args` for `owner` and returns at once
    /// (unless the resolver's bound on calls in flight is reached): the
    /// lazy mode. Its answer comes through [`drain`](Self::drain).
    ///
    /// # Examples
    /// ```
    /// use cep_core::remote::{FnResolver, OnFailure, RemoteLink, Verdict};
    /// use cep_core::Value;
    /// let odd = FnResolver::new(|_f: u16, args: &[Value]| matches!(args[0], Value::Int(i) if i % 2 == 1));
    /// let link = RemoteLink::new(Box::new(odd), vec![("odd".into(), "in-process".into())], OnFailure::Fail);
    /// let me = link.register();
    /// let a = link.submit(me, 0, vec![Value::Int(3)]);
    /// let b = link.submit(me, 0, vec![Value::Int(4)]);
    /// let mut got = Vec::new();
    /// link.drain(me, &mut got, None);
    /// assert_eq!(got, [(a, Verdict::Value(true)), (b, Verdict::Value(false))]);
    /// ```
    pub fn submit(&self, owner: usize, func: u16, args: Vec<Value>) -> CallId {
        use std::sync::atomic::Ordering::Relaxed;
        let id = CallId(self.next.fetch_add(1, Relaxed));
        self.inboxes.lock().owner_of.insert(id, (owner, func));
        let mut resolver = self.resolver.lock();
        resolver.submit(Call { id, func, args });
        id
    }

    /// Appends to `out` the answers of `owner`'s calls that have come, as
    /// verdicts (the failure policy applied): at once, or after waiting up
    /// to `wait` for at least one when none has come.
    pub fn drain(&self, owner: usize, out: &mut Vec<(CallId, Verdict)>, wait: Option<Duration>) {
        let mut answers = Vec::new();
        {
            let mut resolver = self.resolver.lock();
            resolver.poll(&mut answers);
            let mut inboxes = self.inboxes.lock();
            inboxes.route(&mut answers);
            if let Some(timeout) = wait
                && inboxes.boxes[owner].is_empty()
                && inboxes.owner_of.values().any(|&(o, _)| o == owner)
            {
                drop(inboxes);
                resolver.wait(&mut answers, timeout);
                self.inboxes.lock().route(&mut answers);
            }
        }
        let mine = std::mem::take(&mut self.inboxes.lock().boxes[owner]);
        for (id, func, answer) in mine {
            let verdict = match answer {
                Answer::Value(v) => Verdict::Value(v),
                Answer::Failed(e) => self.failed(func, &e),
            };
            out.push((id, verdict));
        }
    }

    fn failed(&self, func: u16, e: &CallError) -> Verdict {
        use std::sync::atomic::Ordering::Relaxed;
        match self.policy {
            OnFailure::Fail => {
                let (name, url) = self.functions.get(func as usize).cloned().unwrap_or_default();
                let mut failure = self.failure.lock();
                if failure.is_none() {
                    *failure = Some(format!("remote function `{name}` at {url} {e}"));
                }
                self.failed.store(true, std::sync::atomic::Ordering::Release);
                Verdict::Fail
            }
            OnFailure::Drop => {
                self.dropped.fetch_add(1, Relaxed);
                Verdict::Drop
            }
            OnFailure::True | OnFailure::False => {
                self.unverified.fetch_add(1, Relaxed);
                Verdict::Unverified(self.policy == OnFailure::True)
            }
        }
    }

    /// This link, raising `flag` too when a call fails under
    /// [`OnFailure::Fail`] (a flag shared by the links of a job's shards).
    pub fn with_failure_flag(mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> RemoteLink {
        self.failed = flag;
        self
    }

    /// Why the run must stop, after a call failed under [`OnFailure::Fail`].
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }

    /// The resolver's mean request round trip (see
    /// [`RemoteStats::round_trip_ns`]), once one was measured.
    pub fn round_trip(&self) -> Option<Duration> {
        let s = self.resolver.lock().stats();
        (s.round_trips > 0).then(|| Duration::from_nanos(s.round_trip_ns))
    }

    /// The mean request round trip of each function in `funcs`, into `out`
    /// (one lock for all): the function's own where the resolver measures
    /// it ([`Resolver::round_trip_of`]), else the mean over all calls;
    /// `None` while nothing was measured.
    pub fn round_trips_of(&self, funcs: &[u16], out: &mut Vec<Option<Duration>>) {
        let resolver = self.resolver.lock();
        let s = resolver.stats();
        let overall = (s.round_trips > 0).then(|| Duration::from_nanos(s.round_trip_ns));
        out.clear();
        out.extend(funcs.iter().map(|&f| resolver.round_trip_of(f).or(overall)));
    }

    /// Counts so far.
    pub fn stats(&self) -> LinkStats {
        use std::sync::atomic::Ordering::Relaxed;
        LinkStats {
            resolver: self.resolver.lock().stats(),
            dropped: self.dropped.load(Relaxed),
            unverified: self.unverified.load(Relaxed),
            settled_true: self.settled[0].load(Relaxed),
            settled_false: self.settled[1].load(Relaxed),
            dropped_early: self.early.load(Relaxed),
        }
    }
}
