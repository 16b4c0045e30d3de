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
/// ```
#[derive(Debug)]
pub struct IterSource<I> {
    name: String,
    events: I,
    rows: u64,
}

impl<I: Iterator<Item = Event>> IterSource<I> {
    /// The events of `events`, named `name` in messages.
    pub fn new(name: impl Into<String>, events: impl IntoIterator<IntoIter = I>) -> IterSource<I> {
        IterSource { name: name.into(), events: events.into_iter(), rows: 0 }
    }
}

impl<I: Iterator<Item = Event>> EventSource for IterSource<I> {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        let Some(e) = self.events.next() else { return Ok(false) };
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
/// assert!(src.would_wait());
/// tx.send(Event::new(Sym::new("A"), 5, 0, Vec::new())).unwrap();
/// drop(tx);
/// let mut e = Event::default();
/// assert!(src.next_event(&mut e).unwrap());
/// assert_eq!(e.ts, 5);
/// assert!(!src.next_event(&mut e).unwrap());
/// ```
#[derive(Debug)]
pub struct ChannelSource {
    name: String,
    rx: Receiver<Event>,
    /// An event [`wait`](EventSource::wait) received.
    pending: Option<Event>,
    ended: bool,
    rows: u64,
}

impl ChannelSource {
    /// The events received on `rx`, named `name` in messages.
    pub fn new(name: impl Into<String>, rx: Receiver<Event>) -> ChannelSource {
        ChannelSource { name: name.into(), rx, pending: None, ended: false, rows: 0 }
    }
}

impl EventSource for ChannelSource {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        let e = match self.pending.take() {
            Some(e) => e,
            None if self.ended => return Ok(false),
            None => match self.rx.recv() {
                Ok(e) => e,
                Err(_) => {
                    self.ended = true;
                    return Ok(false);
                }
            },
        };
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
