//! What the server answers with: the proximity index or a true ratio, and
//! the simulated evaluation delay.

use std::time::Duration;

use crate::index::ProximityIndex;
use crate::protocol::{NearArgs, ProtocolError, parse_request, write_response};
use crate::ratio::ratio_answer;

/// How calls are answered.
#[derive(Debug)]
pub enum Answers {
    /// By the index: the real `near` (boxed: the index is large, the ratio a float).
    Distance(Box<ProximityIndex>),
    /// True for a stable fraction of the calls (`--true-ratio`).
    Ratio(f64),
}

/// Total delays at least this long are slept on the runtime's timer
/// (millisecond resolution); shorter ones on a blocking thread, whose
/// sleep has microsecond resolution.
const TIMER_MIN: Duration = Duration::from_millis(5);

/// The service behind the HTTP server (and usable in-process).
#[derive(Debug)]
pub struct Service {
    answers: Answers,
    eval_delay: Duration,
}

impl Service {
    /// A service answering with `answers`, each call taking `eval_delay`.
    pub fn new(answers: Answers, eval_delay: Duration) -> Service {
        Service { answers, eval_delay }
    }

    /// The answer to one call, at once (no delay).
    pub fn answer(&self, a: &NearArgs) -> bool {
        match &self.answers {
            // The protocol checked the coordinates; an error cannot happen
            // here, and would read as "not near".
            Answers::Distance(index) => index.near(a.mmsi, a.lat, a.lon, a.ts).unwrap_or(false),
            Answers::Ratio(p) => ratio_answer(*p, a.mmsi, a.lat, a.lon, a.ts),
        }
    }

    /// Answers a request body with a reply body, after the evaluation
    /// delay.
    ///
    /// The calls of one request are evaluated one after another, so the
    /// request takes `calls × eval_delay`; it is slept once, as one total,
    /// so that the timer's rounding is paid once per request. Requests on
    /// different connections are served concurrently: their delays
    /// overlap.
    pub async fn handle(&self, body: &[u8]) -> Result<Vec<u8>, ProtocolError> {
        let calls = parse_request(body)?;
        let n = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        pause(self.eval_delay.saturating_mul(n)).await;
        Ok(write_response(calls.iter().map(|c| (c.id, self.answer(&c.args)))))
    }
}

/// Sleeps `total` without holding the runtime's thread.
async fn pause(total: Duration) {
    if total.is_zero() {
        return;
    }
    if total >= TIMER_MIN {
        tokio::time::sleep(total).await;
    } else {
        // A join error means the sleeping thread panicked, which
        // `thread::sleep` does not; either way the delay is over.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(total)).await;
    }
}
