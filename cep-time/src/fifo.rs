//! The FIFO fast path for event-time timers, beside the
//! [`TimerWheel`](crate::TimerWheel).
//!
//! With one window length, deadlines are armed in non-decreasing order;
//! [`FifoTimers`] keeps them in a `VecDeque` and cancels by marking the entry
//! empty (skipped when it reaches the front).

use std::collections::VecDeque;

use cep_core::Timestamp;

/// A handle to a timer in a [`FifoTimers`] (its insertion number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FifoId(u64);

#[derive(Debug)]
struct FifoEntry<T> {
    deadline: Timestamp,
    value: Option<T>,
}

/// Timers armed in non-decreasing deadline order (one window length): a
/// `VecDeque`, with the API of [`TimerWheel`](crate::TimerWheel). Cancelled entries are emptied
/// in place and skipped when they reach the front, so memory is the span from
/// the oldest armed-and-unfired entry to the newest.
///
/// # Examples
/// ```
/// use cep_time::wheel::FifoTimers;
/// let mut timers = FifoTimers::new();
/// let a = timers.insert(10, 'a');
/// timers.insert(10, 'b');
/// timers.insert(20, 'c');
/// assert_eq!(timers.cancel(a), Some('a'));
/// let mut out = Vec::new();
/// timers.advance_to(20, &mut out);
/// assert_eq!(out, [(10, 'b')]);
/// assert_eq!(timers.cancel(a), None);
/// ```
#[derive(Debug)]
pub struct FifoTimers<T> {
    queue: VecDeque<FifoEntry<T>>,
    /// The insertion number of `queue[0]`.
    front: u64,
    live: usize,
    last_deadline: Timestamp,
}

impl<T> Default for FifoTimers<T> {
    fn default() -> Self {
        FifoTimers::new()
    }
}

impl<T> FifoTimers<T> {
    /// No timers.
    pub fn new() -> FifoTimers<T> {
        FifoTimers { queue: VecDeque::new(), front: 0, live: 0, last_deadline: Timestamp::MIN }
    }

    /// The number of live timers.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The largest deadline armed so far (`i64::MIN` before any): the
    /// smallest deadline [`insert`](Self::insert) accepts.
    pub fn last_deadline(&self) -> Timestamp {
        self.last_deadline
    }

    /// Arms a timer; O(1) amortised.
    ///
    /// # Panics
    /// If `deadline` is before [`last_deadline`](Self::last_deadline) (use
    /// [`try_insert`](Self::try_insert) to check instead).
    pub fn insert(&mut self, deadline: Timestamp, value: T) -> FifoId {
        match self.try_insert(deadline, value) {
            Ok(id) => id,
            Err(_) => panic!("FifoTimers: deadline {deadline} before {}", self.last_deadline),
        }
    }

    /// Arms a timer, or gives the value back if `deadline` is before
    /// [`last_deadline`](Self::last_deadline).
    pub fn try_insert(&mut self, deadline: Timestamp, value: T) -> Result<FifoId, T> {
        if deadline < self.last_deadline {
            return Err(value);
        }
        self.last_deadline = deadline;
        let id = FifoId(self.front + self.queue.len() as u64);
        self.queue.push_back(FifoEntry { deadline, value: Some(value) });
        self.live += 1;
        Ok(id)
    }

    /// Disarms a timer and returns its value; O(1). `None` if it has already
    /// fired or been cancelled.
    pub fn cancel(&mut self, id: FifoId) -> Option<T> {
        let position = usize::try_from(id.0.checked_sub(self.front)?).ok()?;
        let value = self.queue.get_mut(position)?.value.take()?;
        self.live -= 1;
        self.pop_cancelled();
        Some(value)
    }

    /// Appends every timer with deadline strictly before `watermark` to
    /// `out`, in deadline order (ties in insertion order).
    pub fn advance_to(&mut self, watermark: Timestamp, out: &mut Vec<(Timestamp, T)>) {
        while let Some(entry) = self.queue.front() {
            if entry.deadline >= watermark {
                break;
            }
            let entry = self.queue.pop_front().expect("front exists");
            self.front += 1;
            if let Some(value) = entry.value {
                self.live -= 1;
                out.push((entry.deadline, value));
            }
        }
        self.pop_cancelled();
    }

    /// The end of the input: appends every live timer to `out`, in order.
    pub fn drain(&mut self, out: &mut Vec<(Timestamp, T)>) {
        self.front += self.queue.len() as u64;
        out.extend(self.queue.drain(..).filter_map(|e| Some((e.deadline, e.value?))));
        self.live = 0;
    }

    fn pop_cancelled(&mut self) {
        while self.queue.front().is_some_and(|e| e.value.is_none()) {
            self.queue.pop_front();
            self.front += 1;
        }
    }
}
