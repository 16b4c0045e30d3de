//! Where a runner's output goes: the [`Sink`] trait, the names a sink needs
//! ([`QueryInfo`]) and the JSON-lines sink [`JsonLines`]. Apart from the
//! runner so that the shards, the ordered merge and the job share one
//! output contract and one line format.

use std::io::{self, Write};

use cep_core::{Event, Match};
use cep_index::Fire;

/// Where matches and fired level alerts go.
pub trait Sink {
    /// Receives one match of query `query` (its name and variable names).
    fn on_match(&mut self, query: &QueryInfo, m: &Match) -> io::Result<()>;

    /// Receives one fired level alert. The default refuses it with an
    /// error, so that a sink written for matches only cannot lose alerts
    /// silently: a runner with level alerts needs a sink that takes them.
    fn on_fire(&mut self, fire: &Fire<'_>) -> io::Result<()> {
        Err(io::Error::other(format!("this sink takes no level alerts (alert `{}` fired)", fire.id)))
    }

    /// Receives an event a forwarding runner ([`Runner::forward_released`](crate::Runner::forward_released))
    /// releases, in event-time order. The default refuses it, as `on_fire`.
    fn on_released(&mut self, e: &Event) -> io::Result<()> {
        Err(io::Error::other(format!("this sink takes no released events (row {})", e.row)))
    }
}

/// Names a sink needs to format a match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryInfo {
    /// Query name.
    pub name: String,
    /// Positive variables in `SEQ` order.
    pub vars: Vec<String>,
    /// Whether its matches become final when the watermark passes their
    /// `end` (a trailing `NOT … WITHIN`), rather than at their last event.
    pub at_deadline: bool,
    /// The names of its `EMIT` items, in order (empty without `EMIT`).
    pub emit: Vec<String>,
}

/// Writes matches as JSON lines (LANGUAGE.md §5), reusing one line buffer.
#[derive(Debug)]
pub struct JsonLines<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> JsonLines<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines { out, line: Vec::with_capacity(256) }
    }

    /// Flushes and returns the writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// The writer, not flushed (what it buffers is left to it).
    pub(crate) fn into_unflushed(self) -> W {
        self.out
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer (e.g. to take the bytes written to a `Vec<u8>`).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The writer, to look at.
    pub fn get_ref(&self) -> &W {
        &self.out
    }
}

impl<W: Write> Sink for JsonLines<W> {
    fn on_match(&mut self, q: &QueryInfo, m: &Match) -> io::Result<()> {
        self.line.clear();
        match_line(&mut self.line, q, m);
        self.out.write_all(&self.line)
    }

    fn on_fire(&mut self, fire: &Fire<'_>) -> io::Result<()> {
        self.line.clear();
        fire_line(&mut self.line, fire);
        self.out.write_all(&self.line)
    }
}

/// Appends a match's output line, newline included.
pub(crate) fn match_line(out: &mut Vec<u8>, q: &QueryInfo, m: &Match) {
    m.write_json_emit(out, &q.name, &q.vars, &q.emit);
    out.push(b'\n');
}

/// Appends a level alert's output line, newline included.
pub(crate) fn fire_line(out: &mut Vec<u8>, fire: &Fire<'_>) {
    fire.write_json(out);
    out.push(b'\n');
}

impl<F: FnMut(&QueryInfo, &Match)> Sink for F {
    fn on_match(&mut self, q: &QueryInfo, m: &Match) -> io::Result<()> {
        self(q, m);
        Ok(())
    }
}
