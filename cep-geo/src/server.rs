//! The HTTP/1.1 server: `POST` a request body to any path, get the reply
//! body (LANGUAGE.md §8). Keep-alive is on; each connection is a task on
//! one tokio runtime, so requests are served concurrently.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::service::Service;

/// The largest request body accepted (413 beyond): about a million calls.
pub const MAX_BODY: usize = 64 << 20;

/// How long a stop waits for requests in progress to be answered.
const DRAIN: Duration = Duration::from_secs(2);

/// Requests in progress, so that a stop can let them finish.
#[derive(Debug, Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// Counts one request in progress while alive.
#[derive(Debug)]
struct Guard(Arc<InFlight>);

impl Guard {
    fn new(f: &Arc<InFlight>) -> Guard {
        f.count.fetch_add(1, Ordering::SeqCst);
        Guard(Arc::clone(f))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Serves `service` on `listener` until `stop` completes; then accepts no
/// more connections, waits up to two seconds for the requests in progress,
/// and returns (idle keep-alive connections are dropped).
pub async fn serve(listener: TcpListener, service: Arc<Service>, stop: impl Future<Output = ()>) {
    let in_flight = Arc::new(InFlight::default());
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            a = listener.accept() => a,
        };
        // An accept error (a reset before accept, too many open files) is
        // the one connection's; the server goes on, after a pause, so that
        // an error that lasts (no file descriptor left) does not spin.
        let Ok((stream, _peer)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = Arc::clone(&service);
        let in_flight = Arc::clone(&in_flight);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req| {
                let service = Arc::clone(&service);
                let guard = Guard::new(&in_flight);
                async move {
                    let reply = respond(&service, req).await;
                    drop(guard);
                    Ok::<_, Infallible>(reply)
                }
            });
            // A connection error (the client went away, a malformed
            // request line) ends that connection only.
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
    let deadline = tokio::time::Instant::now() + DRAIN;
    loop {
        let idle = in_flight.idle.notified();
        if in_flight.count.load(Ordering::SeqCst) == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, idle).await.is_err() {
            break;
        }
    }
}

/// One request's reply.
async fn respond(service: &Service, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::POST {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "POST a JSON body of calls\n".into());
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.is::<http_body_util::LengthLimitError>() {
                return text(StatusCode::PAYLOAD_TOO_LARGE, format!("request body over {MAX_BODY} bytes\n"));
            }
            return text(StatusCode::BAD_REQUEST, format!("could not read the request body: {e}\n"));
        }
    };
    match service.handle(&body).await {
        Ok(reply) => {
            let mut r = Response::new(Full::new(Bytes::from(reply)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r
        }
        Err(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
    }
}

fn text(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(message)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}
