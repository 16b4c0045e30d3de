//! The async side of [`HttpResolver`](crate::HttpResolver): one thread
//! running a current-thread tokio runtime, with per endpoint a queue of
//! calls and `connections` workers, each owning one keep-alive HTTP/1.1
//! connection and sending one batch at a time.
//!
//! Why this shape: a worker per connection makes "at most `connections`
//! concurrent requests per endpoint" hold by construction, and lets a
//! connection be reused without a pool. Retries are per call, not per
//! request: a retried call goes back to the front of its queue and may
//! ride in a different batch, so a reply that misses one id costs a retry
//! of that call only.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cep_core::Value;
use cep_core::remote::{Answer, CallError, CallErrorKind};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::config::{RemoteConfig, Target};
use crate::ledger::ToClient;
use crate::wire::{WireCall, decode_reply, encode_request};

/// Counts kept on the client's side, read by the shard's `stats`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub batches: AtomicU64,
    pub retries: AtomicU64,
    /// Mean request round trip over all functions.
    pub round_trip: RoundTrip,
    /// Each function's own (its calls go to a service of their own).
    pub per_function: Vec<RoundTrip>,
    /// Jobs received and not yet answered (queued or in a request).
    open_jobs: AtomicUsize,
}

impl Counters {
    /// Counters for a client of `functions` functions.
    pub fn new(functions: usize) -> Counters {
        Counters { per_function: (0..functions).map(|_| RoundTrip::default()).collect(), ..Counters::default() }
    }
}

/// A mean request round trip (nanoseconds, [`mean_round_trip`]'s moving
/// mean) and how many were measured.
///
/// [`mean_round_trip`]: cep_core::remote::mean_round_trip
#[derive(Debug, Default)]
pub(crate) struct RoundTrip {
    pub ns: AtomicU64,
    pub count: AtomicU64,
}

impl RoundTrip {
    fn record(&self, took: u64) {
        let mean = self.ns.load(Ordering::Relaxed);
        self.ns.store(cep_core::remote::mean_round_trip(mean, took), Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The mean, once one was measured.
    pub fn get(&self) -> Option<Duration> {
        (self.count.load(Ordering::Relaxed) > 0).then(|| Duration::from_nanos(self.ns.load(Ordering::Relaxed)))
    }
}

/// An answer for the shard: the job's token and its answer.
pub(crate) type Done = (u64, Answer);

/// The settings the workers need.
#[derive(Clone, Copy, Debug)]
struct Settings {
    timeout: Duration,
    retries: u32,
    max_batch: usize,
    linger: Duration,
    max_in_flight: usize,
}

/// A call waiting for (another) attempt.
#[derive(Debug)]
struct Pending {
    token: u64,
    args: Vec<Value>,
    /// Attempts already made.
    attempts: u32,
    /// When it was first queued: its linger runs from then.
    since: Instant,
}

/// One endpoint's queue, shared by its workers (all on one thread; the
/// lock is never held across an await).
#[derive(Debug)]
struct Endpoint {
    target: Target,
    queue: Mutex<VecDeque<Pending>>,
    /// Wakes the workers when calls are queued.
    notify: Notify,
    /// The shard waits for answers: send what is queued now.
    flush: std::sync::atomic::AtomicBool,
}

impl Endpoint {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Pending>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts the client thread. It ends when `jobs`' sender is dropped.
pub(crate) fn start(
    config: &RemoteConfig,
    targets: Vec<Target>,
    jobs: mpsc::UnboundedReceiver<ToClient>,
    done: crossbeam_channel::Sender<Done>,
    counters: Arc<Counters>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    let settings = Settings {
        timeout: config.timeout,
        retries: config.retries,
        max_batch: config.max_batch,
        linger: config.linger,
        max_in_flight: config.max_in_flight,
    };
    let connections = config.connections;
    std::thread::Builder::new().name("cep-remote".to_string()).spawn(move || {
        runtime.block_on(run(targets, settings, connections, jobs, done, counters));
        // Workers still waiting on a slow service are dropped, not awaited:
        // nobody is left to read their answers.
        runtime.shutdown_background();
    })
}

/// Queues the jobs as they come; returns when the shard hangs up.
async fn run(
    targets: Vec<Target>,
    settings: Settings,
    connections: usize,
    mut jobs: mpsc::UnboundedReceiver<ToClient>,
    done: crossbeam_channel::Sender<Done>,
    counters: Arc<Counters>,
) {
    let endpoints: Vec<Arc<Endpoint>> = targets
        .into_iter()
        .map(|target| {
            Arc::new(Endpoint {
                target,
                queue: Mutex::new(VecDeque::new()),
                notify: Notify::new(),
                flush: std::sync::atomic::AtomicBool::new(false),
            })
        })
        .collect();
    for (func, endpoint) in endpoints.iter().enumerate() {
        for _ in 0..connections {
            let worker =
                Worker { endpoint: endpoint.clone(), func, settings, done: done.clone(), counters: counters.clone() };
            tokio::spawn(worker.run());
        }
    }
    while let Some(msg) = jobs.recv().await {
        let job = match msg {
            ToClient::Call(job) => job,
            ToClient::Flush => {
                for e in &endpoints {
                    e.flush.store(true, Ordering::Relaxed);
                    e.notify.notify_waiters();
                }
                continue;
            }
        };
        let Some(endpoint) = endpoints.get(usize::from(job.func)) else {
            // The ledger refuses unknown functions; answer anyway.
            let error = CallError { kind: CallErrorKind::Protocol, attempts: 0, detail: "unknown function".into() };
            let _ = done.send((job.token, Answer::Failed(error)));
            continue;
        };
        endpoint.queue().push_back(Pending { token: job.token, args: job.args, attempts: 0, since: Instant::now() });
        let open = counters.open_jobs.fetch_add(1, Ordering::Relaxed) + 1;
        if open >= settings.max_in_flight {
            // The shard is now blocked in `submit`: no call will come to
            // fill a batch, so every endpoint sends what it has at once.
            for e in &endpoints {
                e.notify.notify_waiters();
            }
        } else {
            endpoint.notify.notify_waiters();
        }
    }
}

/// `t + d`, or a century on when that overflows (a huge linger must not
/// panic).
fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).or_else(|| t.checked_add(Duration::from_secs(100 * 365 * 86_400))).unwrap_or(t)
}

/// Why an attempt failed.
#[derive(Debug)]
struct Failure {
    kind: CallErrorKind,
    detail: String,
}

/// One connection's sender of batches.
#[derive(Debug)]
struct Worker {
    endpoint: Arc<Endpoint>,
    /// The function its endpoint answers.
    func: usize,
    settings: Settings,
    done: crossbeam_channel::Sender<Done>,
    counters: Arc<Counters>,
}

impl Worker {
    async fn run(self) {
        let mut conn: Option<SendRequest<Full<Bytes>>> = None;
        loop {
            let batch = self.next_batch().await;
            self.counters.batches.fetch_add(1, Ordering::Relaxed);
            let sent = Instant::now();
            let outcome = match tokio::time::timeout(self.settings.timeout, self.attempt(&mut conn, &batch)).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    // The connection may still carry the late reply: drop it.
                    conn = None;
                    Err(self.failure(CallErrorKind::Timeout, format!("no reply within {:?}", self.settings.timeout)))
                }
            };
            // The service's round trip: replies only (a refused connection
            // takes no time, a timeout the timeout, neither says how long
            // the service takes to answer).
            let replied = match &outcome {
                Ok(_) => true,
                Err(f) => matches!(f.kind, CallErrorKind::Status(_) | CallErrorKind::Protocol),
            };
            if replied {
                let took = u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.counters.round_trip.record(took);
                if let Some(own) = self.counters.per_function.get(self.func) {
                    own.record(took);
                }
            }
            match outcome {
                Ok(values) => {
                    let mut retry = Vec::new();
                    for (wire_id, pending) in batch.into_iter().enumerate() {
                        match values.get(&(wire_id as u64)) {
                            Some(&v) => self.answer(pending.token, Answer::Value(v)),
                            None => {
                                let detail = format!("the reply has no result for id {wire_id}");
                                self.fail(pending, &self.failure(CallErrorKind::Protocol, detail), &mut retry);
                            }
                        }
                    }
                    self.requeue(retry);
                }
                Err(failure) => {
                    // `attempt` gave the connection back only if the reply
                    // was read whole (an error status, a bad body).
                    let mut retry = Vec::new();
                    for pending in batch {
                        self.fail(pending, &failure, &mut retry);
                    }
                    self.requeue(retry);
                }
            }
        }
    }

    /// Hands `answer` to the shard.
    fn answer(&self, token: u64, answer: Answer) {
        self.counters.open_jobs.fetch_sub(1, Ordering::Relaxed);
        let _ = self.done.send((token, answer));
    }

    /// Waits for calls, then up to the linger of the oldest for the batch
    /// to fill (unless the shard is blocked at its bound, when nothing
    /// more can come); takes up to `max_batch`.
    async fn next_batch(&self) -> Vec<Pending> {
        let Settings { max_batch, linger, max_in_flight, .. } = self.settings;
        loop {
            // No await between this check and `notified()`: on one thread
            // nothing can queue a call in between, so no wake is missed.
            let oldest = {
                let mut queue = self.endpoint.queue();
                match queue.front() {
                    Some(first)
                        if queue.len() >= max_batch
                            || later(first.since, linger) <= Instant::now()
                            || self.counters.open_jobs.load(Ordering::Relaxed) >= max_in_flight
                            || self.endpoint.flush.load(Ordering::Relaxed) =>
                    {
                        let n = queue.len().min(max_batch);
                        if n == queue.len() {
                            self.endpoint.flush.store(false, Ordering::Relaxed);
                        }
                        return queue.drain(..n).collect();
                    }
                    front => {
                        if front.is_none() {
                            // Nothing was queued when the shard waited.
                            self.endpoint.flush.store(false, Ordering::Relaxed);
                        }
                        front.map(|p| p.since)
                    }
                }
            };
            let notified = self.endpoint.notify.notified();
            match oldest {
                None => notified.await,
                Some(since) => {
                    // Woken by a new call or by the linger's end, whichever
                    // is first; both lead to the check above.
                    let _ = tokio::time::timeout_at(later(since, linger), notified).await;
                }
            }
        }
    }

    /// Sends `batch` and reads the reply's values by wire id (the index in
    /// the batch).
    async fn attempt(
        &self,
        conn: &mut Option<SendRequest<Full<Bytes>>>,
        batch: &[Pending],
    ) -> Result<HashMap<u64, bool>, Failure> {
        let target = &self.endpoint.target;
        let calls: Vec<WireCall<'_>> =
            batch.iter().enumerate().map(|(i, p)| WireCall { id: i as u64, args: &p.args }).collect();
        let body = encode_request(&calls);
        let request = Request::builder()
            .method(Method::POST)
            .uri(target.path.clone())
            .header(header::HOST, target.authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| self.failure(CallErrorKind::Protocol, format!("could not build the request: {e}")))?;

        let mut sender = match conn.take() {
            Some(s) if !s.is_closed() => s,
            _ => self.connect().await?,
        };
        if sender.ready().await.is_err() {
            // A kept-alive connection the service closed meanwhile: one
            // fresh connection, not counted as an attempt.
            sender = self.connect().await?;
            sender.ready().await.map_err(|e| self.hyper_failure(&e))?;
        }
        let response = sender.send_request(request).await.map_err(|e| self.hyper_failure(&e))?;
        let status = response.status();
        let limit = 64 * 1024 + 256 * batch.len();
        let body = Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| self.failure(CallErrorKind::Connect, format!("reading the reply: {e}")))?
            .to_bytes();
        // The whole reply is read: the connection can carry the next one.
        *conn = Some(sender);
        if status != StatusCode::OK {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return Err(self.failure(CallErrorKind::Status(status.as_u16()), format!("HTTP {status}: {text}")));
        }
        let values = decode_reply(&body).map_err(|e| self.failure(CallErrorKind::Protocol, e))?;
        Ok(values.into_iter().collect())
    }

    /// A fresh keep-alive connection to the endpoint.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, Failure> {
        let target = &self.endpoint.target;
        let stream = TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| self.failure(CallErrorKind::Connect, format!("connecting: {e}")))?;
        // Small requests and replies: send them at once.
        let _ = stream.set_nodelay(true);
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| self.hyper_failure(&e))?;
        tokio::spawn(async move {
            // Ends when the sender is dropped or the peer closes; its error
            // reaches the sender's next request.
            let _ = connection.await;
        });
        Ok(sender)
    }

    fn hyper_failure(&self, e: &hyper::Error) -> Failure {
        let kind = if e.is_parse() { CallErrorKind::Protocol } else { CallErrorKind::Connect };
        self.failure(kind, e.to_string())
    }

    /// A failure whose detail names the function and its URL.
    fn failure(&self, kind: CallErrorKind, detail: String) -> Failure {
        let target = &self.endpoint.target;
        Failure { kind, detail: format!("{} at {}: {detail}", target.name, target.url) }
    }

    /// Counts a failed attempt of `pending`: queues it for a retry, or
    /// answers it `Failed` when its retries are spent.
    fn fail(&self, mut pending: Pending, failure: &Failure, retry: &mut Vec<Pending>) {
        pending.attempts += 1;
        if pending.attempts > self.settings.retries {
            let error = CallError { kind: failure.kind, attempts: pending.attempts, detail: failure.detail.clone() };
            self.answer(pending.token, Answer::Failed(error));
        } else {
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
            retry.push(pending);
        }
    }

    /// Puts calls to retry at the front of the queue, in their order; their
    /// linger has passed, so they leave in the next batch.
    fn requeue(&self, retry: Vec<Pending>) {
        if retry.is_empty() {
            return;
        }
        {
            let mut queue = self.endpoint.queue();
            for pending in retry.into_iter().rev() {
                queue.push_front(pending);
            }
        }
        self.endpoint.notify.notify_waiters();
    }
}
