//! An in-process stand-in for a remote service: answers `f(func, args)`
//! after a simulated communication delay and evaluation delay.
//!
//! Why: the W7 experiment (DESIGN.md §2.4) weighs blocking against lazy
//! evaluation as the two delays vary, which needs delays that are exact and
//! repeatable rather than a network's; and the engines' property tests need
//! "a deterministic service with random delays and reordered replies"
//! without sockets. It keeps the HTTP resolver's shard-side semantics
//! (cache, coalescing, batches of `max_batch` closed after `linger`, at
//! most `max_in_flight` distinct calls in flight) but runs on the caller's
//! thread: answers are computed when a batch leaves and handed back once
//! its delay has passed, and waiting is a real sleep.

use std::fmt;
use std::time::{Duration, Instant};

use cep_core::Value;
use cep_core::remote::{Answer, Call, CallId, RemoteStats, Resolver};

use crate::ledger::{Job, Ledger};

/// The settings of a [`DelayResolver`].
///
/// A batch of `n` calls is answered `comm + U[0, comm_jitter] + Σ (eval +
/// U[0, eval_jitter])` after it leaves; the service has no limit of its own
/// on concurrent batches. Each function's calls are batched apart, as if
/// each function had a service of its own (as with `HttpResolver`), and a
/// function may have delays of its own (`functions`). The draws, and the order of replies within a
/// batch when `reorder` is set, come from `seed` alone, so a run is
/// repeatable; which calls share a batch depends on `linger` and so on the
/// clock, unless `linger` is zero (no batch is held open) or `max_batch`
/// is 1.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayConfig {
    /// Communication delay of one batch (request and reply).
    pub comm: Duration,
    /// Upper bound of a uniform extra communication delay.
    pub comm_jitter: Duration,
    /// Evaluation delay of one call.
    pub eval: Duration,
    /// Upper bound of a uniform extra evaluation delay per call.
    pub eval_jitter: Duration,
    /// Calls in one batch at most.
    pub max_batch: usize,
    /// How long a batch is held open to fill (zero: sent at once).
    pub linger: Duration,
    /// Distinct calls in flight at most; `submit` sleeps while reached.
    pub max_in_flight: usize,
    /// Hands a batch's answers back in a random order.
    pub reorder: bool,
    /// Seed of the delays and orders.
    pub seed: u64,
    /// Answers cached (0: none).
    pub cache_entries: usize,
    /// Delays of some functions (communication, evaluation per call),
    /// in place of `comm` and `eval`; the jitters apply to all.
    pub functions: Vec<(u16, Duration, Duration)>,
}

impl Default for DelayConfig {
    /// No delay, batches of one, a bound of 1024, no reordering, no cache.
    fn default() -> DelayConfig {
        DelayConfig {
            comm: Duration::ZERO,
            comm_jitter: Duration::ZERO,
            eval: Duration::ZERO,
            eval_jitter: Duration::ZERO,
            max_batch: 1,
            linger: Duration::ZERO,
            max_in_flight: 1024,
            reorder: false,
            seed: 0,
            cache_entries: 0,
            functions: Vec::new(),
        }
    }
}

impl DelayConfig {
    /// Sets the communication delay and its jitter.
    pub fn with_comm(mut self, comm: Duration, jitter: Duration) -> DelayConfig {
        self.comm = comm;
        self.comm_jitter = jitter;
        self
    }

    /// Sets the evaluation delay per call and its jitter.
    pub fn with_eval(mut self, eval: Duration, jitter: Duration) -> DelayConfig {
        self.eval = eval;
        self.eval_jitter = jitter;
        self
    }

    /// Sets the batch size and linger.
    pub fn with_batching(mut self, max_batch: usize, linger: Duration) -> DelayConfig {
        self.max_batch = max_batch;
        self.linger = linger;
        self
    }

    /// Sets the bound on calls in flight.
    pub fn with_max_in_flight(mut self, max_in_flight: usize) -> DelayConfig {
        self.max_in_flight = max_in_flight;
        self
    }

    /// Turns reordering on with `seed`.
    pub fn with_reorder(mut self, seed: u64) -> DelayConfig {
        self.reorder = true;
        self.seed = seed;
        self
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> DelayConfig {
        self.seed = seed;
        self
    }

    /// Gives function `func` delays of its own: `comm` per batch, `eval`
    /// per call.
    pub fn with_function_delays(mut self, func: u16, comm: Duration, eval: Duration) -> DelayConfig {
        self.functions.retain(|f| f.0 != func);
        self.functions.push((func, comm, eval));
        self
    }

    /// The delays of `func`'s calls: its own, or the default ones.
    fn delays_of(&self, func: u16) -> (Duration, Duration) {
        self.functions.iter().find(|f| f.0 == func).map_or((self.comm, self.eval), |f| (f.1, f.2))
    }

    /// Sets the cache size.
    pub fn with_cache_entries(mut self, cache_entries: usize) -> DelayConfig {
        self.cache_entries = cache_entries;
        self
    }
}

/// A batch of one function's calls, filling.
#[derive(Debug)]
struct Open {
    func: u16,
    jobs: Vec<Job>,
    /// When its first call came.
    opened_at: Instant,
}

/// A batch sent to the simulated service.
#[derive(Debug)]
struct Sent {
    ready_at: Instant,
    answers: Vec<(u64, bool)>,
}

/// See the module doc.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use cep_core::remote::{Answer, Call, CallId, Resolver};
/// use cep_core::Value;
/// use cep_remote::{DelayConfig, DelayResolver};
///
/// let config = DelayConfig::default().with_comm(Duration::from_micros(200), Duration::ZERO);
/// let mut near = DelayResolver::new(config, |_func: u16, args: &[Value]| args[0] == Value::Int(7));
/// near.submit(Call { id: CallId(1), func: 0, args: vec![Value::Int(7)] });
/// let mut answers = Vec::new();
/// while answers.is_empty() {
///     near.wait(&mut answers, Duration::from_secs(1));
/// }
/// assert_eq!(answers, [(CallId(1), Answer::Value(true))]);
/// ```
pub struct DelayResolver<F> {
    f: F,
    config: DelayConfig,
    ledger: Ledger,
    /// The batches filling, one per function with calls waiting.
    open: Vec<Open>,
    sent: Vec<Sent>,
    rng: SplitMix64,
    batches: u64,
    /// Mean simulated round trip, nanoseconds, and how many were measured:
    /// over all calls, and per function.
    round_trip: (u64, u64),
    per_function: Vec<(u64, u64)>,
}

impl<F> fmt::Debug for DelayResolver<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayResolver")
            .field("config", &self.config)
            .field("open", &self.open.iter().map(|o| o.jobs.len()).sum::<usize>())
            .field("sent", &self.sent.len())
            .field("ledger", &self.ledger)
            .finish()
    }
}

impl<F: FnMut(u16, &[Value]) -> bool + Send> DelayResolver<F> {
    /// A resolver answering `f(func, args)` with `config`'s delays. A zero
    /// `max_batch` or `max_in_flight` is taken as 1.
    pub fn new(config: DelayConfig, f: F) -> DelayResolver<F> {
        let mut config = config;
        config.max_batch = config.max_batch.max(1);
        config.max_in_flight = config.max_in_flight.max(1);
        DelayResolver {
            f,
            ledger: Ledger::new(usize::from(u16::MAX) + 1, config.cache_entries),
            rng: SplitMix64(config.seed),
            config,
            open: Vec::new(),
            sent: Vec::new(),
            batches: 0,
            round_trip: (0, 0),
            per_function: Vec::new(),
        }
    }

    /// Sends the open batches that are full or whose linger has passed,
    /// and settles the batches whose delay has passed.
    fn advance(&mut self, now: Instant) {
        let mut b = 0;
        while b < self.open.len() {
            let o = &self.open[b];
            if o.jobs.len() >= self.config.max_batch || now >= later(o.opened_at, self.config.linger) {
                self.dispatch(b, now);
            } else {
                b += 1;
            }
        }
        let mut i = 0;
        while i < self.sent.len() {
            if self.sent[i].ready_at <= now {
                let batch = self.sent.swap_remove(i);
                for (token, value) in batch.answers {
                    self.ledger.settle(token, Answer::Value(value));
                }
            } else {
                i += 1;
            }
        }
    }

    /// Sends every open batch.
    fn dispatch_all(&mut self, now: Instant) {
        while !self.open.is_empty() {
            self.dispatch(0, now);
        }
    }

    /// Sends open batch `b`: evaluates it and draws its delay and order.
    fn dispatch(&mut self, b: usize, now: Instant) {
        let Open { func, jobs, .. } = self.open.swap_remove(b);
        let (comm, eval) = self.config.delays_of(func);
        let mut delay = comm.saturating_add(self.rng.upto(self.config.comm_jitter));
        let mut answers = Vec::with_capacity(jobs.len());
        for job in jobs {
            delay = delay.saturating_add(eval).saturating_add(self.rng.upto(self.config.eval_jitter));
            answers.push((job.token, (self.f)(job.func, &job.args)));
        }
        if self.config.reorder {
            for i in (1..answers.len()).rev() {
                let j = (self.rng.next() % (i as u64 + 1)) as usize;
                answers.swap(i, j);
            }
        }
        self.batches += 1;
        let took = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        let f = usize::from(func);
        if self.per_function.len() <= f {
            self.per_function.resize(f + 1, (0, 0));
        }
        for (mean, n) in [&mut self.round_trip, &mut self.per_function[f]] {
            *mean = cep_core::remote::mean_round_trip(*mean, took);
            *n += 1;
        }
        self.sent.push(Sent { ready_at: later(now, delay), answers });
    }

    /// When something next happens (a batch closes or is answered).
    fn next_event(&self) -> Option<Instant> {
        let close = self.open.iter().map(|o| later(o.opened_at, self.config.linger));
        self.sent.iter().map(|s| s.ready_at).chain(close).min()
    }
}

impl<F: FnMut(u16, &[Value]) -> bool + Send> Resolver for DelayResolver<F> {
    fn submit(&mut self, call: Call) {
        let mut now = Instant::now();
        self.advance(now);
        while self.ledger.outstanding() >= self.config.max_in_flight {
            // Nothing more can join the open batches while blocked here.
            self.dispatch_all(now);
            if let Some(at) = self.next_event() {
                std::thread::sleep(at.saturating_duration_since(now));
            }
            now = Instant::now();
            self.advance(now);
        }
        if let Some(job) = self.ledger.admit(call) {
            match self.open.iter_mut().find(|o| o.func == job.func) {
                Some(o) => o.jobs.push(job),
                None => self.open.push(Open { func: job.func, jobs: vec![job], opened_at: now }),
            }
            self.advance(now);
        }
    }

    fn poll(&mut self, answers: &mut Vec<(CallId, Answer)>) {
        self.advance(Instant::now());
        self.ledger.drain(answers);
    }

    fn wait(&mut self, answers: &mut Vec<(CallId, Answer)>, timeout: Duration) {
        let mut now = Instant::now();
        let deadline = now.checked_add(timeout);
        self.advance(now);
        // A shard that waits makes no more calls: the open batch leaves now
        // (as `HttpResolver` sends what it queued), not after the linger.
        if !self.ledger.has_ready() {
            self.dispatch_all(now);
        }
        loop {
            self.advance(now);
            if self.ledger.has_ready() || self.ledger.outstanding() == 0 {
                break;
            }
            let Some(mut until) = self.next_event() else { break };
            if let Some(deadline) = deadline {
                if now >= deadline {
                    break;
                }
                until = until.min(deadline);
            }
            std::thread::sleep(until.saturating_duration_since(now));
            now = Instant::now();
        }
        self.ledger.drain(answers);
    }

    fn in_flight(&self) -> usize {
        self.ledger.unanswered()
    }

    fn stats(&self) -> RemoteStats {
        RemoteStats {
            batches: self.batches,
            round_trip_ns: self.round_trip.0,
            round_trips: self.round_trip.1,
            ..self.ledger.stats()
        }
    }

    fn round_trip_of(&self, func: u16) -> Option<Duration> {
        let &(mean, n) = self.per_function.get(usize::from(func))?;
        (n > 0).then(|| Duration::from_nanos(mean))
    }
}

/// `t + d`, or a century on when that overflows: settings are not
/// checked for size, and no duration may panic.
fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).or_else(|| t.checked_add(Duration::from_secs(100 * 365 * 86_400))).unwrap_or(t)
}

/// splitmix64: a tiny, documented, seedable generator (no `rand` needed
/// for delays and shuffles).
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform duration in `[0, max]` (nanosecond grain).
    fn upto(&mut self, max: Duration) -> Duration {
        let n = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        if n == 0 { Duration::ZERO } else { Duration::from_nanos(self.next() % n.saturating_add(1)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(r: &mut impl Resolver, n: u64) {
        for i in 0..n {
            r.submit(Call { id: CallId(i), func: 0, args: vec![Value::Int(i as i64 % 7)] });
        }
    }

    fn drain_all(r: &mut impl Resolver) -> Vec<(CallId, Answer)> {
        let mut out = Vec::new();
        while r.in_flight() > 0 {
            r.wait(&mut out, Duration::from_secs(1));
        }
        out
    }

    #[test]
    fn is_repeatable_given_a_seed() {
        let run = |seed| {
            // Delays long enough that no batch is answered while looking.
            let config = DelayConfig::default()
                .with_comm(Duration::from_secs(100), Duration::from_secs(1))
                .with_batching(4, Duration::ZERO)
                .with_reorder(seed);
            let mut r = DelayResolver::new(config, |_: u16, a: &[Value]| a[0] == Value::Int(3));
            calls(&mut r, 20);
            let answers: Vec<_> = r.sent.iter().map(|s| s.answers.clone()).collect();
            let mut by_time: Vec<usize> = (0..r.sent.len()).collect();
            by_time.sort_by_key(|&i| r.sent[i].ready_at);
            (answers, by_time)
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        assert_eq!(run(5).0.len(), 7, "7 distinct calls, linger 0: batches of one");
    }

    #[test]
    fn huge_durations_do_not_panic() {
        let config = DelayConfig::default()
            .with_comm(Duration::MAX, Duration::MAX)
            .with_eval(Duration::MAX, Duration::MAX)
            .with_batching(2, Duration::MAX);
        let mut r = DelayResolver::new(config, |_: u16, _: &[Value]| true);
        calls(&mut r, 3);
        let mut out = Vec::new();
        r.wait(&mut out, Duration::from_millis(1));
        r.poll(&mut out);
        assert!(out.is_empty());
        assert_eq!(r.in_flight(), 3);
    }

    #[test]
    fn functions_have_batches_and_delays_of_their_own() {
        let config = DelayConfig::default()
            .with_comm(Duration::from_micros(10), Duration::ZERO)
            .with_function_delays(1, Duration::from_millis(3), Duration::from_micros(100))
            .with_batching(8, Duration::from_secs(100));
        let mut r = DelayResolver::new(config, |func: u16, a: &[Value]| (func == 1) == (a[0] == Value::Int(3)));
        for i in 0..6u64 {
            r.submit(Call { id: CallId(i), func: (i % 2) as u16, args: vec![Value::Int(i as i64)] });
        }
        assert_eq!(r.open.len(), 2, "one batch filling per function");
        let out = drain_all(&mut r);
        assert_eq!(out.len(), 6);
        for (id, a) in out {
            assert_eq!(a, Answer::Value((id.0 % 2 == 1) == (id.0 == 3)), "call {}", id.0);
        }
        assert_eq!(r.stats().batches, 2);
        assert_eq!(r.round_trip_of(0), Some(Duration::from_micros(10)));
        assert_eq!(r.round_trip_of(1), Some(Duration::from_millis(3) + 3 * Duration::from_micros(100)));
        assert_eq!(r.round_trip_of(2), None);
    }

    #[test]
    fn batches_coalesces_and_bounds() {
        let config = DelayConfig::default()
            .with_comm(Duration::from_micros(100), Duration::ZERO)
            .with_batching(3, Duration::from_millis(50))
            .with_max_in_flight(5)
            .with_cache_entries(100);
        let mut r = DelayResolver::new(config, |_: u16, a: &[Value]| a[0] == Value::Int(3));
        calls(&mut r, 14);
        assert!(r.ledger.outstanding() <= 5);
        let out = drain_all(&mut r);
        assert_eq!(out.len(), 14);
        let s = r.stats();
        assert_eq!((s.calls, s.coalesced + s.cache_hits), (14, 7));
        assert!(s.batches <= 4, "{s:?}");
        for (id, a) in out {
            assert_eq!(a, Answer::Value(id.0 % 7 == 3));
        }
    }
}
