//! Waiting on one of rdkafka's futures from plain threads.
//!
//! rdkafka's admin calls return futures completed by librdkafka's own
//! background thread: they need no async runtime, only someone to wait. This
//! crate uses the polling clients and no runtime, so it waits here, parking
//! the thread until the future's waker unparks it, and gives up at a deadline
//! so that no call can hang.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Wakes the waiting thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread until it completes (`Some`) or `timeout`
/// has passed (`None`; the future is dropped, which for rdkafka's admin
/// futures abandons the wait, not the request).
pub fn wait_for<F: Future>(future: F, timeout: Duration) -> Option<F::Output> {
    let deadline = Instant::now() + timeout;
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // A spurious unpark only costs one more poll.
        thread::park_timeout(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_future_completes_and_a_pending_one_times_out() {
        assert_eq!(wait_for(std::future::ready(7), Duration::from_secs(1)), Some(7));
        let start = Instant::now();
        let never = std::future::pending::<()>();
        assert_eq!(wait_for(never, Duration::from_millis(50)), None);
        assert!(start.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn a_future_woken_from_another_thread_completes() {
        let (tx, rx) = std::sync::mpsc::channel::<u32>();
        let waiter = std::sync::Arc::new(std::sync::Mutex::new(None::<Waker>));
        let shared = waiter.clone();
        let future = std::future::poll_fn(move |cx| match rx.try_recv() {
            Ok(v) => Poll::Ready(v),
            Err(_) => {
                *shared.lock().unwrap() = Some(cx.waker().clone());
                Poll::Pending
            }
        });
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            tx.send(5).unwrap();
            if let Some(w) = waiter.lock().unwrap().take() {
                w.wake();
            }
        });
        assert_eq!(wait_for(future, Duration::from_secs(10)), Some(5));
        sender.join().unwrap();
    }
}
