//! The shard side of the HTTP resolver: the [`Resolver`] the engine calls.
//!
//! It owns the [`Ledger`] (cache, coalescing, ready answers) and two
//! channels to the client thread: jobs go over a tokio channel, because
//! the client's runtime must be woken by them; answers come back over a
//! crossbeam channel, because the shard blocks on them with a real
//! timeout (`wait`) and without one (`submit` at the bound).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use cep_core::remote::{Answer, Call, CallError, CallErrorKind, CallId, RemoteStats, Resolver};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use tokio::sync::mpsc;

use crate::client::{self, Counters, Done};
use crate::config::{RemoteConfig, RemoteError};
use crate::ledger::{Ledger, ToClient};

const CLIENT_GONE: &str = "the remote client thread stopped";

/// A [`Resolver`] that asks HTTP/1.1 services (LANGUAGE.md §8), one
/// endpoint per function, from a background thread of its own.
///
/// Identical calls in flight share one request entry (coalescing), answers
/// are cached by arguments, calls are batched (`max_batch`, `linger`),
/// each endpoint has `connections` keep-alive connections, and at most
/// `max_in_flight` distinct calls await the service: beyond that,
/// [`submit`](Resolver::submit) blocks until answers come back. A request
/// without a reply within `timeout`, or failing, is retried call by call up
/// to `retries` times; then the call is answered [`Answer::Failed`].
///
/// Dropping it stops its thread at once; requests in flight are abandoned.
#[derive(Debug)]
pub struct HttpResolver {
    ledger: Ledger,
    /// `None` once dropping has begun.
    jobs: Option<mpsc::UnboundedSender<ToClient>>,
    /// Calls sent since the shard last waited: a wait then flushes them.
    sent_since_wait: bool,
    done: Receiver<Done>,
    counters: Arc<Counters>,
    max_in_flight: usize,
    thread: Option<JoinHandle<()>>,
}

impl HttpResolver {
    /// Checks `config` (bounds, URLs) and starts the client thread.
    ///
    /// # Errors
    /// [`RemoteError`] for a bad URL, a scheme other than `http`, a zero
    /// bound, or a thread that could not be started.
    pub fn new(config: &RemoteConfig) -> Result<HttpResolver, RemoteError> {
        let targets = config.targets()?;
        let functions = targets.len();
        let (jobs, jobs_rx) = mpsc::unbounded_channel();
        // Unbounded in type only: the client sends at most one answer per
        // job, and jobs in flight are bounded by `max_in_flight`.
        let (done_tx, done) = crossbeam_channel::unbounded();
        let counters = Arc::new(Counters::new(functions));
        let thread = client::start(config, targets, jobs_rx, done_tx, counters.clone()).map_err(RemoteError::Start)?;
        Ok(HttpResolver {
            ledger: Ledger::new(functions, config.cache_entries),
            jobs: Some(jobs),
            sent_since_wait: false,
            done,
            counters,
            max_in_flight: config.max_in_flight,
            thread: Some(thread),
        })
    }

    /// Moves the answers already arrived into the ledger, without waiting.
    fn absorb(&mut self) {
        loop {
            match self.done.try_recv() {
                Ok((token, answer)) => self.ledger.settle(token, answer),
                Err(crossbeam_channel::TryRecvError::Empty) => return,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    self.ledger.fail_all(CLIENT_GONE);
                    return;
                }
            }
        }
    }
}

impl Resolver for HttpResolver {
    fn submit(&mut self, call: Call) {
        self.absorb();
        while self.ledger.outstanding() >= self.max_in_flight {
            // Blocks: the client answers every job within its timeouts
            // and retries, or hangs up.
            match self.done.recv() {
                Ok((token, answer)) => self.ledger.settle(token, answer),
                Err(_) => self.ledger.fail_all(CLIENT_GONE),
            }
        }
        let Some(job) = self.ledger.admit(call) else { return };
        let token = job.token;
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(ToClient::Call(job)).is_ok());
        self.sent_since_wait |= sent;
        if !sent {
            let error = CallError { kind: CallErrorKind::Connect, attempts: 0, detail: CLIENT_GONE.to_string() };
            self.ledger.settle(token, Answer::Failed(error));
        }
    }

    fn poll(&mut self, answers: &mut Vec<(CallId, Answer)>) {
        self.absorb();
        self.ledger.drain(answers);
    }

    fn wait(&mut self, answers: &mut Vec<(CallId, Answer)>, timeout: Duration) {
        self.absorb();
        if !self.ledger.has_ready() && self.ledger.outstanding() > 0 {
            if std::mem::take(&mut self.sent_since_wait)
                && let Some(jobs) = &self.jobs
            {
                let _ = jobs.send(ToClient::Flush);
            }
            match self.done.recv_timeout(timeout) {
                Ok((token, answer)) => self.ledger.settle(token, answer),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.ledger.fail_all(CLIENT_GONE),
            }
            self.absorb();
        }
        self.ledger.drain(answers);
    }

    fn in_flight(&self) -> usize {
        self.ledger.unanswered()
    }

    fn stats(&self) -> RemoteStats {
        RemoteStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            retries: self.counters.retries.load(Ordering::Relaxed),
            round_trip_ns: self.counters.round_trip.ns.load(Ordering::Relaxed),
            round_trips: self.counters.round_trip.count.load(Ordering::Relaxed),
            ..self.ledger.stats()
        }
    }

    fn round_trip_of(&self, func: u16) -> Option<Duration> {
        self.counters.per_function.get(usize::from(func))?.get()
    }
}

impl Drop for HttpResolver {
    fn drop(&mut self) {
        // Hanging up ends the client's job loop, and with it the runtime.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
