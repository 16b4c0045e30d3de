//! Events already in memory as a source: an iterator
//! ([`IterSource`]), or a channel another thread fills ([`ChannelSource`]),
//! which is a stream: the job sends out every match before it waits for
//! the next event.
//!
//! Rows are numbered as the events come (0, 1, …), whatever row the events
//! carried: a match names its events by these rows, and a checkpoint
//! counts them, so a resumed job skips the rows it has already seen.

use std::time::Duration;

use cep_core::Event;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::read::{EventSource, InputPosition, ReadError};

/// Where a memory source's events come from, one at a time; a source that
/// may wait says so (the job then sends out the matches so far).
pub trait Feed {
    /// The next event, or `None` at the end.
    fn next_event(&mut self) -> Option<Event>;
    /// Whether it can wait at all (see [`EventSource::may_wait`]).
    fn may_wait(&self) -> bool {
        false
    }
    /// Whether [`next_event`](Self::next_event) would wait.
    fn would_wait(&self) -> bool {
        false
    }
    /// Waits up to `timeout` for an event; whether one came (or the end).
    fn wait(&mut self, _timeout: Duration) -> bool {
        true
    }
}

/// Events from a [`Feed`], numbered as they come.
#[derive(Debug)]
pub struct Memory<F> {
    name: String,
    feed: F,
    rows: u64,
}

impl<F: Feed> EventSource for Memory<F> {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        let Some(e) = self.feed.next_event() else { return Ok(false) };
        *event = e;
        event.row = self.rows;
        self.rows += 1;
        Ok(true)
    }

    fn last_line(&self) -> u64 {
        self.rows
    }

    fn position(&self) -> InputPosition {
        InputPosition { byte: 0, row: self.rows, line: self.rows }
    }

    fn rows(&self) -> u64 {
        self.rows
    }

    fn file(&self) -> &str {
        &self.name
    }

    fn may_wait(&self) -> bool {
        self.feed.may_wait()
    }

    fn would_wait(&self) -> bool {
        self.feed.would_wait()
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        self.feed.wait(timeout)
    }
}

/// An iterator's events (see [`IterSource`]).
#[derive(Debug)]
pub struct Iter<I>(I);

impl<I: Iterator<Item = Event>> Feed for Iter<I> {
    fn next_event(&mut self) -> Option<Event> {
        self.0.next()
    }
}

/// The events of an iterator, as a source.
///
/// # Examples
/// ```
/// use cep_core::{Event, Sym};
/// use cep_io::EventSource;
/// use cep_io::memory::IterSource;
///
/// let events = (0..3).map(|i| Event::new(Sym::new("A"), i * 10, 99, Vec::new()));
/// let mut src = IterSource::new("mem", events);
/// let mut e = Event::default();
/// let mut rows = Vec::new();
/// while src.next_event(&mut e).unwrap() {
///     rows.push((e.row, e.ts));
/// }
/// assert_eq!(rows, [(0, 0), (1, 10), (2, 20)]);
/// assert_eq!(src.rows(), 3);
/// assert!(!src.may_wait(), "an iterator never waits: a job takes it in batches");
/// ```
pub type IterSource<I> = Memory<Iter<I>>;

impl<I: Iterator<Item = Event>> IterSource<I> {
    /// The events of `events`, named `name` in messages.
    pub fn new(name: impl Into<String>, events: impl IntoIterator<IntoIter = I>) -> IterSource<I> {
        Memory { name: name.into(), feed: Iter(events.into_iter()), rows: 0 }
    }
}

/// A channel's events (see [`ChannelSource`]).
#[derive(Debug)]
pub struct Channel {
    rx: Receiver<Event>,
    /// An event [`wait`](Feed::wait) received.
    pending: Option<Event>,
    ended: bool,
}

/// The events sent on a channel, as a stream: it ends when every sender is
/// dropped.
///
/// # Examples
/// ```
/// use cep_core::{Event, Sym};
/// use cep_io::EventSource;
/// use cep_io::memory::ChannelSource;
///
/// let (tx, rx) = crossbeam_channel::bounded(16);
/// let mut src = ChannelSource::new("events", rx);
/// assert!(src.may_wait() && src.would_wait());
/// tx.send(Event::new(Sym::new("A"), 5, 0, Vec::new())).unwrap();
/// drop(tx);
/// let mut e = Event::default();
/// assert!(src.next_event(&mut e).unwrap());
/// assert_eq!(e.ts, 5);
/// assert!(!src.next_event(&mut e).unwrap());
/// ```
pub type ChannelSource = Memory<Channel>;

impl ChannelSource {
    /// The events received on `rx`, named `name` in messages.
    pub fn new(name: impl Into<String>, rx: Receiver<Event>) -> ChannelSource {
        Memory { name: name.into(), feed: Channel { rx, pending: None, ended: false }, rows: 0 }
    }
}

impl Feed for Channel {
    fn next_event(&mut self) -> Option<Event> {
        match self.pending.take() {
            Some(e) => Some(e),
            None if self.ended => None,
            None => {
                let e = self.rx.recv().ok();
                self.ended = e.is_none();
                e
            }
        }
    }

    fn may_wait(&self) -> bool {
        true
    }

    fn would_wait(&self) -> bool {
        !self.ended && self.pending.is_none() && self.rx.is_empty()
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        if !self.would_wait() {
            return true;
        }
        match self.rx.recv_timeout(timeout) {
            Ok(e) => {
                self.pending = Some(e);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                true
            }
        }
    }
}
