//! A real HTTP/1.1 test service on 127.0.0.1 (port 0), speaking
//! LANGUAGE.md §8's protocol: it answers [`truth`] of each call's
//! arguments, after a delay, or misbehaves as its [`Mode`] function says,
//! and counts what it sees (requests, calls, connections, concurrency).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cep_core::Value;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// What the service does with one request (by its number, from 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Answers every call, results in reverse order, after the delay.
    Answer(Duration),
    /// Answers with this status and no results.
    Status(u16),
    /// Closes the connection without a reply.
    Drop,
    /// Answers 200 with a body that is not JSON.
    WrongJson,
    /// Answers all calls but the last.
    MissingLast,
}

/// The service's function: the parity of a hash of the arguments' JSON,
/// so that every kind of value matters.
pub fn truth(args: &[serde_json::Value]) -> bool {
    let text = serde_json::to_string(args).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h >> 63 == 1
}

/// [`truth`] of `Value`s, as the client sends them.
pub fn expected(args: &[Value]) -> bool {
    let json: Vec<serde_json::Value> = args
        .iter()
        .map(|v| match *v {
            Value::Null => serde_json::Value::Null,
            Value::Int(i) => i.into(),
            Value::Float(f) => f.into(),
            Value::Bool(b) => b.into(),
            Value::Str(s) => s.as_str().into(),
        })
        .collect();
    truth(&json)
}

/// What the service has seen.
#[derive(Debug, Default)]
pub struct Counts {
    pub requests: AtomicU64,
    pub calls: AtomicU64,
    pub connections: AtomicU64,
    /// Requests being handled now, and the most at once.
    pub active_requests: AtomicU64,
    pub max_active_requests: AtomicU64,
    /// Calls in the requests being handled now, and the most at once.
    pub active_calls: AtomicU64,
    pub max_active_calls: AtomicU64,
}

impl Counts {
    pub fn get(&self, c: &AtomicU64) -> u64 {
        c.load(Ordering::SeqCst)
    }
}

type ModeFn = dyn Fn(u64) -> Mode + Send + Sync;

struct State {
    counts: Arc<Counts>,
    mode: Box<ModeFn>,
}

/// A running service; dropping it stops it.
pub struct TestServer {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").field("addr", &self.addr).finish()
    }
}

impl TestServer {
    /// A service that answers every request after `delay`.
    pub fn answering(delay: Duration) -> TestServer {
        TestServer::start(move |_| Mode::Answer(delay))
    }

    /// A service whose request `n` is handled as `mode(n)`.
    pub fn start(mode: impl Fn(u64) -> Mode + Send + Sync + 'static) -> TestServer {
        let counts = Arc::new(Counts::default());
        let state = Arc::new(State { counts: counts.clone(), mode: Box::new(mode) });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.spawn(accept(listener, state));
            let _ = runtime.block_on(stopped);
            runtime.shutdown_background();
        });
        TestServer { addr, counts, stop: Some(stop), thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("http://{}/near", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        state.counts.connections.fetch_add(1, Ordering::SeqCst);
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(req, state.clone()));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Decrements the active counts when a request ends, however it ends.
struct Active(Arc<Counts>, u64);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active_requests.fetch_sub(1, Ordering::SeqCst);
        self.0.active_calls.fetch_sub(self.1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Response<Full<Bytes>>, Dropped> {
    let counts = &state.counts;
    let n = counts.requests.fetch_add(1, Ordering::SeqCst);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(Dropped),
    };
    let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let calls: Vec<serde_json::Value> = parsed["calls"].as_array().cloned().unwrap_or_default();
    let k = calls.len() as u64;
    counts.calls.fetch_add(k, Ordering::SeqCst);
    let now = counts.active_requests.fetch_add(1, Ordering::SeqCst) + 1;
    counts.max_active_requests.fetch_max(now, Ordering::SeqCst);
    let now = counts.active_calls.fetch_add(k, Ordering::SeqCst) + k;
    counts.max_active_calls.fetch_max(now, Ordering::SeqCst);
    let _active = Active(counts.clone(), k);

    let reply = |status: u16, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Ok(r)
    };
    match (state.mode)(n) {
        Mode::Answer(delay) => {
            tokio::time::sleep(delay).await;
            reply(200, results(&calls, false))
        }
        Mode::Status(s) => reply(s, "boom".to_string()),
        Mode::Drop => Err(Dropped),
        Mode::WrongJson => reply(200, "{\"results\": [".to_string()),
        Mode::MissingLast => reply(200, results(&calls, true)),
    }
}

/// The results for `calls`, reversed (the protocol allows any order).
fn results(calls: &[serde_json::Value], drop_last: bool) -> String {
    let take = if drop_last { calls.len().saturating_sub(1) } else { calls.len() };
    let results: Vec<serde_json::Value> = calls[..take]
        .iter()
        .rev()
        .map(|c| {
            let args = c["args"].as_array().cloned().unwrap_or_default();
            serde_json::json!({ "id": c["id"].clone(), "value": truth(&args) })
        })
        .collect();
    serde_json::json!({ "results": results }).to_string()
}

/// splitmix64, for seeded test choices.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A mixed argument list numbered `i` (repeats every `distinct`).
pub fn args(i: u64, distinct: u64) -> Vec<Value> {
    let k = i % distinct;
    vec![
        Value::Int(235_000_000 + k as i64),
        Value::Float(48.0 + k as f64 / 100.0),
        Value::Bool(k % 2 == 0),
        Value::Str(cep_core::Sym::new(&format!("v{}", k % 5))),
        Value::Null,
    ]
}
