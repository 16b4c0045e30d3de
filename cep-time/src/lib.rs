#![doc = include_str!("../README.md")]

use cep_core::Timestamp;

mod fifo;
pub mod reorder;
pub mod wheel;

pub use reorder::{Late, ReorderBuffer};
pub use wheel::{FifoId, FifoTimers, TimerId, TimerWheel};

/// An event-time watermark that only moves forward.
///
/// With bounded out-of-orderness `max_delay`, the watermark is the largest
/// timestamp seen minus the delay; an event below it is *late*.
///
/// # Examples
/// ```
/// use cep_time::Watermark;
/// let mut wm = Watermark::new(0);
/// assert!(wm.observe(10).is_ok());
/// assert!(wm.observe(10).is_ok());      // ties are on time
/// assert_eq!(wm.observe(9), Err(10));    // late: behind the watermark
/// assert_eq!(wm.get(), 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Watermark {
    current: Timestamp,
    max_delay: i64,
}

impl Watermark {
    /// A watermark at −∞ with the given allowed delay.
    pub fn new(max_delay: i64) -> Watermark {
        Watermark { current: Timestamp::MIN, max_delay }
    }

    /// The current watermark.
    pub fn get(&self) -> Timestamp {
        self.current
    }

    /// Accounts for an event at `ts`: `Ok(new watermark)` if it is on time,
    /// `Err(watermark)` if it is late.
    pub fn observe(&mut self, ts: Timestamp) -> Result<Timestamp, Timestamp> {
        if ts < self.current {
            return Err(self.current);
        }
        self.advance(ts.saturating_sub(self.max_delay));
        Ok(self.current)
    }

    /// Moves to `to` if that is later; never moves back.
    pub fn advance(&mut self, to: Timestamp) {
        self.current = self.current.max(to);
    }
}

/// What to do with an event behind the watermark (LANGUAGE.md §1).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum LatePolicy {
    /// Drop and count it.
    #[default]
    Drop,
    /// Stop the run.
    Fail,
    /// Write it to this file as a JSON line, and count it.
    Side(String),
}

impl LatePolicy {
    /// Parses `drop`, `fail` or `side:FILE`.
    ///
    /// # Examples
    /// ```
    /// use cep_time::LatePolicy;
    /// assert_eq!(LatePolicy::parse("side:late.jsonl"), Some(LatePolicy::Side("late.jsonl".into())));
    /// assert_eq!(LatePolicy::parse("keep"), None);
    /// ```
    pub fn parse(s: &str) -> Option<LatePolicy> {
        match s {
            "drop" => Some(LatePolicy::Drop),
            "fail" => Some(LatePolicy::Fail),
            _ => s.strip_prefix("side:").filter(|f| !f.is_empty()).map(|f| LatePolicy::Side(f.to_owned())),
        }
    }
}
